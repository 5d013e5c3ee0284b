"""``import warp`` in a process started by an aliased program: load Treadle, install the alias, become its view.

This directory is put first on ``PYTHONPATH`` by ``treadle.install_warp_alias()``; nothing here runs unless the
process imports ``warp``. ``TREADLE_WARP_ALIAS`` names the ``treadle`` package directory of the parent process, so
the child uses the same Treadle even when that one is not installed (a source checkout). This file reads the
environment itself because it runs before Treadle (and its config object) can be imported.
"""

import importlib.util as _util
import os as _os
import sys as _sys

__treadle_warp_shim__ = 1


def _load_treadle():  # noqa: ANN202 - runs before typing helpers matter
    if "treadle" in _sys.modules:
        return _sys.modules["treadle"]
    home = _os.environ.get("TREADLE_WARP_ALIAS", "")
    init = _os.path.join(home, "__init__.py") if home else ""
    if not init or not _os.path.isfile(init):
        import treadle

        return treadle
    spec = _util.spec_from_file_location("treadle", init, submodule_search_locations=[home])
    module = _util.module_from_spec(spec)
    _sys.modules["treadle"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del _sys.modules["treadle"]
        raise
    return module


_treadle = _load_treadle()
_treadle.install_warp_alias()
# The import system returns whatever sits in sys.modules under the name once this file has run.
_sys.modules[__name__] = _sys.modules[_treadle.__name__ + "._src.warp_compat.alias"].warp_module()
