"""``import warp`` resolved to Treadle: a meta-path finder that hands out Treadle's own module objects.

With the alias installed, ``import warp`` returns :class:`WarpModule`, a view of the ``treadle`` module: every
attribute read, set or deleted on it is Treadle's own (``warp.launch is treadle.launch``), except ``__version__``,
which is the Warp API level Treadle implements (:data:`WARP_API_VERSION`), so that libraries comparing it with Warp
releases take the paths for the features Treadle has; ``treadle.__version__`` stays Treadle's version.
``import warp.X.Y`` returns ``treadle.X.Y`` (the same object, so ``warp.types.vector is treadle.types.vector``). Which submodules exist is looked
up in Treadle's package at import time, so a package added to Treadle later is served without a list to edit. A
``warp.*`` name with no Treadle counterpart fails at import with a :class:`ModuleNotFoundError` that names it; no
module is ever synthesised.

Processes started by an aliased program get the alias too: :func:`install_warp_alias` puts a small directory on
``PYTHONPATH`` whose only content is a ``warp`` package that installs the alias and replaces itself with Treadle,
and records in ``TREADLE_WARP_ALIAS`` which Treadle to load. That costs nothing until a child imports ``warp``
(unlike a ``sitecustomize`` module, which would run at every start-up and shadow the one a site may already have).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
import types
from collections.abc import Sequence

#: Environment variable holding the directory of the ``treadle`` package that aliased child processes load.
ALIAS_ENV = "TREADLE_WARP_ALIAS"

#: The directory put on ``PYTHONPATH``; it holds only the ``warp`` package of :mod:`.pathentry`.
PATH_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pathentry")

# Treadle packages that have no warp-lang counterpart.
_NOT_ALIASED = {
    "warp_compat": "it is Treadle's runner for Warp programs, not a warp-lang module",
}

#: Third-party libraries warp-lang ships a copy of under a private path, which Warp-based libraries import from
#: there (Newton: ``from warp._src.thirdparty.appdirs import user_cache_dir``). They resolve to the library itself,
#: installed on its own (``pip install appdirs``).
VENDORED = {"warp._src.thirdparty.appdirs": "appdirs"}
_VENDORED_PARENTS = {"warp._src.thirdparty"}

#: The private modules of warp-lang that Warp-based libraries reach (``from warp._src.types import Vector``,
#: ``wp._src.context.runtime.core.wp_builtin_...``, ``wp._src.utils.array_scan``), and the Treadle modules that
#: implement what they use. ``warp._src`` itself is ``treadle._src``, so that the attribute path a library writes
#: (``wp._src.X``, where ``wp`` is the ``treadle`` module) and the import path (``import warp._src.X``) agree. Every
#: other ``warp._src.*`` module fails at import as a private module of warp-lang.
PRIVATE = {
    "warp._src.types": "treadle._src.types",
    "warp._src.utils": "treadle._src.utils",
    "warp._src.context": "treadle._src.warp_compat.context",
}


#: The warp-lang release whose public API Treadle implements: ``warp.__version__`` under the alias.
WARP_API_VERSION = "1.19.0"

# Attributes the import system stamps on a module it creates: kept on the view so that Treadle's stay its own.
_OWN = frozenset({"__version__", "__spec__", "__loader__", "__name__", "__package__"})


class WarpModule(types.ModuleType):
    """``warp`` under the alias: Treadle's namespace (reads, writes and deletes go to ``treadle``), Warp's version."""

    def __init__(self, target: types.ModuleType) -> None:
        super().__init__("warp", target.__doc__)
        vars(self)["_treadle_target"] = target
        vars(self)["__version__"] = WARP_API_VERSION
        vars(self)["__package__"] = "warp"

    def __getattr__(self, name: str) -> object:
        return getattr(vars(self)["_treadle_target"], name)

    def __setattr__(self, name: str, value: object) -> None:
        if name in _OWN:
            vars(self)[name] = value
        else:
            setattr(vars(self)["_treadle_target"], name, value)

    def __delattr__(self, name: str) -> None:
        if name in _OWN:
            del vars(self)[name]
        else:
            delattr(vars(self)["_treadle_target"], name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(vars(self)["_treadle_target"])) | set(_OWN))

    def __repr__(self) -> str:
        return f"<module 'warp' (Treadle, Warp API {WARP_API_VERSION}) from {self.__file__!r}>"


_VIEWS: dict[int, WarpModule] = {}


def warp_module() -> WarpModule:
    """Return the ``warp`` module the alias serves (one per Treadle module, made on first use)."""
    target = _treadle()
    view = _VIEWS.get(id(target))
    if view is None or vars(view)["_treadle_target"] is not target:
        view = _VIEWS[id(target)] = WarpModule(target)
    return view


class _ViewLoader(importlib.abc.Loader):
    """Hands the import system the :class:`WarpModule` view for ``import warp``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return warp_module()

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _treadle() -> types.ModuleType:
    import treadle

    return treadle


def _treadle_src() -> types.ModuleType:
    """The ``treadle._src`` package (imported by ``import treadle``)."""
    return sys.modules[f"{_treadle().__name__}._src"]


def _is_treadle_module(module: object) -> bool:
    if isinstance(module, WarpModule):
        return True
    name = getattr(module, "__name__", "")
    return isinstance(name, str) and (name == "treadle" or name.startswith("treadle."))


def provided_submodules() -> list[str]:
    """Return the ``warp.*`` top-level submodules the alias serves, looked up in Treadle's package now.

    Returns:
        Sorted names such as ``["warp.autograd", "warp.config", ...]``.

    """
    names = []
    for info in pkgutil.iter_modules(_treadle().__path__):
        if info.name.startswith("_") or info.name in _NOT_ALIASED:
            continue
        if _treadle_spec(f"treadle.{info.name}") is not None:
            names.append(f"warp.{info.name}")
    return sorted(names)


def _treadle_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """Spec of a real Treadle module (a directory of headers without ``__init__`` is not one)."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    if spec is None or spec.origin is None or spec.loader is None:
        return None
    return spec


#: The ``examples`` directory of a Warp source tree the running program lies in (``.../warp/examples``), if any:
#: example programs import their sibling examples as ``warp.examples.<dir>.<name>``.
_examples_root: list[str] = []


def set_examples_root(script: str) -> None:
    """Note the ``.../warp/examples`` directory above ``script``, if the script lies in one.

    Example programs of a Warp tree reuse each other's functions (``from warp.examples.fem.example_apic_fluid
    import divergence_form``). Under the alias, a ``warp.examples.*`` module Treadle does not provide is the
    program's sibling file, run with ``import warp`` resolved to Treadle like the program itself.
    """
    d = os.path.dirname(os.path.realpath(script))
    while True:
        parent, name = os.path.split(d)
        if name == "examples" and os.path.basename(parent) == "warp":
            _examples_root[:] = [d]
            return
        if not name or parent == d:
            return
        d = parent


def _example_sibling(parts: list[str]) -> str | None:
    """The file of module ``warp.<parts>`` in the running program's examples tree (``None`` if none)."""
    if not _examples_root or parts[0] != "examples" or len(parts) < 2:
        return None
    path = os.path.join(_examples_root[0], *parts[1:]) + ".py"
    return path if os.path.isfile(path) else None


def _missing(fullname: str, why: str = "") -> ModuleNotFoundError:
    detail = f" ({why})" if why else ""
    provided = ", ".join(provided_submodules())
    msg = (
        f"No module named {fullname!r}: Treadle does not provide {fullname}{detail}. "
        f"`warp` resolves to Treadle here; the warp.* submodules Treadle provides are: {provided}."
    )
    return ModuleNotFoundError(msg, name=fullname)


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an already-imported Treadle module instead of executing anything."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system stamped the alias's spec on the module; give it back its own so that it still reports
        # (and reloads as) the Treadle module it is.
        module.__spec__ = self._spec


class _VendoredParentLoader(importlib.abc.Loader):
    """Makes the empty parent packages of :data:`VENDORED` aliases (``warp._src``, ``warp._src.thirdparty``).

    They hold nothing but those aliases: every other ``warp._src.*`` import fails as a private module of warp-lang.
    """

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name, "Parent of Treadle's aliases of libraries warp-lang ships a copy of.")
        module.__path__ = []
        module.__treadle_alias_parent__ = True  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class WarpAliasFinder(importlib.abc.MetaPathFinder):
    """Meta-path finder resolving ``warp`` and ``warp.*`` to Treadle's module objects."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "warp":
            return importlib.util.spec_from_loader(fullname, _ViewLoader(), is_package=True)
        if not fullname.startswith("warp."):
            return None
        parent_name = fullname.rpartition(".")[0]
        parent = sys.modules.get(parent_name)
        if parent is not None and not _is_treadle_module(parent) and not hasattr(parent, "__treadle_alias_parent__"):
            # Something other than Treadle was placed at the parent's name on purpose; its own finders apply.
            return None
        if fullname == "warp._src":
            return self._spec_for(fullname, _treadle_src())
        if fullname in PRIVATE:
            return self._spec_for(fullname, importlib.import_module(PRIVATE[fullname]))
        if fullname in _VENDORED_PARENTS:
            return importlib.util.spec_from_loader(fullname, _VendoredParentLoader(), is_package=True)
        if fullname in VENDORED:
            return self._vendored(fullname)
        parts = fullname.split(".")[1:]
        if any(part.startswith("_") for part in parts):
            raise _missing(fullname, "a private module of warp-lang")
        if parts[0] in _NOT_ALIASED:
            raise _missing(fullname, _NOT_ALIASED[parts[0]])
        treadle_name = "treadle." + ".".join(parts)
        if _treadle_spec(treadle_name) is None:
            sibling = _example_sibling(parts)
            if sibling is not None:
                return importlib.util.spec_from_file_location(fullname, sibling)
            raise _missing(fullname)
        return self._spec_for(fullname, importlib.import_module(treadle_name))

    def _vendored(self, fullname: str) -> importlib.machinery.ModuleSpec:
        target = VENDORED[fullname]
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError:
            raise _missing(fullname, f"warp-lang's private copy of the {target} library; install {target} "
                                     f"(pip install {target}) and the alias resolves it to that") from None
        return self._spec_for(fullname, module)

    @staticmethod
    def _spec_for(fullname: str, module: types.ModuleType) -> importlib.machinery.ModuleSpec:
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(module), is_package=hasattr(module, "__path__")
        )  # type: ignore[return-value]


def _finder() -> WarpAliasFinder | None:
    for finder in sys.meta_path:
        if isinstance(finder, WarpAliasFinder):
            return finder
    return None


def is_warp_alias_installed() -> bool:
    """Return whether ``import warp`` resolves to Treadle in this process."""
    return _finder() is not None


def install_warp_alias(subprocesses: bool = True) -> None:
    """Make ``import warp`` (and the ``warp.*`` submodules Treadle provides) resolve to Treadle.

    After this call, ``import warp`` returns a view of the ``treadle`` module (:class:`WarpModule`: Treadle's
    attributes, and ``__version__`` the Warp API level Treadle implements) and ``import warp.types`` returns
    ``treadle.types`` (the same object). A ``warp.*`` submodule Treadle does not provide raises
    :class:`ModuleNotFoundError` naming it when imported. Calling it again does nothing.

    Args:
        subprocesses: also alias ``warp`` in Python processes this process starts from now on, by setting
            ``TREADLE_WARP_ALIAS`` and putting a small path entry first on ``PYTHONPATH`` (children started with
            ``python -E`` or ``-I``, which ignore the environment, are not aliased).

    Raises:
        RuntimeError: warp-lang (or anything else that is not Treadle) was already imported as ``warp``; the alias
            must be installed before the first ``import warp``.

    """
    current = sys.modules.get("warp")
    if current is not None and not _is_treadle_module(current) and not getattr(current, "__treadle_warp_shim__", 0):
        where = getattr(current, "__file__", None) or repr(current)
        raise RuntimeError(
            f"`warp` was already imported from {where} before install_warp_alias(); call "
            "treadle.install_warp_alias() (or run the program with `python -m treadle.warp_compat`) before anything "
            "imports warp."
        )
    if _finder() is None:
        sys.meta_path.insert(0, WarpAliasFinder())
    _serve_private_attributes()
    if subprocesses:
        _export_to_subprocesses()


def _private_attribute(name: str) -> types.ModuleType:
    """``treadle._src.<name>`` for the names of :data:`PRIVATE` (imported on first access)."""
    if f"warp._src.{name}" in PRIVATE and _finder() is not None:
        return importlib.import_module(f"warp._src.{name}")
    raise AttributeError(f"module 'treadle._src' has no attribute {name!r}")


def _serve_private_attributes() -> None:
    # warp-lang imports its private modules with `import warp`, so libraries read them as attributes without an
    # import (`wp._src.context.runtime`); a module `__getattr__` gives the same on first access, lazily.
    src = _treadle_src()
    src.__getattr__ = _private_attribute  # type: ignore[attr-defined]


def uninstall_warp_alias() -> None:
    """Undo :func:`install_warp_alias`: ``warp`` is no longer resolved to Treadle, here or in new subprocesses.

    Modules that already did ``import warp`` keep the Treadle objects they hold.
    """
    finder = _finder()
    if finder is not None:
        sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n == "warp" or n.startswith("warp.")]:
        if _is_treadle_module(sys.modules[name]) or name in _VENDORED_PARENTS or name in VENDORED:
            del sys.modules[name]
    src = sys.modules.get("treadle._src")
    if src is not None:
        vars(src).pop("__getattr__", None)
        for name in ("context", "thirdparty"):  # set on the package by imports through the alias
            vars(src).pop(name, None)
    os.environ.pop(ALIAS_ENV, None)
    while PATH_ENTRY in sys.path:
        sys.path.remove(PATH_ENTRY)
    entries = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != PATH_ENTRY]
    if entries:
        os.environ["PYTHONPATH"] = os.pathsep.join(entries)
    else:
        os.environ.pop("PYTHONPATH", None)


def _export_to_subprocesses() -> None:
    os.environ[ALIAS_ENV] = os.path.dirname(os.path.abspath(_treadle().__file__ or ""))
    entries = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != PATH_ENTRY]
    os.environ["PYTHONPATH"] = os.pathsep.join([PATH_ENTRY, *entries])
    # multiprocessing's spawn start method gives workers this process's sys.path instead of the one PYTHONPATH
    # would make; after the script's directory, so that sys.path[0] stays what the program expects. The finder
    # above answers `import warp` here before the path entry is ever looked at.
    if PATH_ENTRY not in sys.path:
        sys.path.insert(1 if sys.path else 0, PATH_ENTRY)
