"""The native launch fast path: a small CPython extension built from ``native/fastlaunch.cpp`` at first use.

``wp.launch`` of a kernel launched before, ``LaunchPlan.run`` and recorded ``Launch.launch()`` then cost one C call
instead of Python bookkeeping and a ctypes call (see ``backends/cpu/launch.py``; figures in ``docs/cpu_backend.md``).
The process-wide state it reads is a C struct the Python side keeps current (``state.LAUNCH``).

The extension is compiled with Treadle's own toolchain against this interpreter's headers
(``sysconfig.get_paths()["include"]``) into the shared cache (``backends.cpu.shared_cache()``), next to the thread-pool
runtime library and with the same safety rules: a content-addressed file name (source, Python ABI, compiler and
flags), a private directory, an atomic rename, a lock against concurrent builds, and a file that another user could
have replaced is rebuilt rather than loaded. It is loaded with ``importlib.machinery.ExtensionFileLoader``.

When it cannot be built (no ``Python.h``, no compiler, no runtime library) or ``wp.config.native_launch`` is off,
everything works the same through the Python paths, only slower; :func:`status` says why it is not in use.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

from ... import config

MODULE_NAME = "_treadle_fastlaunch"
#: Launches with at least this many threads release the GIL while they run (other Python threads run meanwhile);
#: smaller ones keep it, because releasing and taking it back costs more than the launch itself.
GIL_THRESHOLD = 4096


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.module: Any = None
        self.tried = False
        self.error: str | None = None
        self.path: Path | None = None


_STATE = _State()


def _source_path() -> Path:
    from .native import NATIVE_DIR

    return NATIVE_DIR / "fastlaunch.cpp"


_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti", "-w"]


def _flags() -> list[str]:
    """The extension's flags, with the sanitizers of ``config.sanitize`` (an instrumented build is another library)."""
    from .native import sanitizer_flags

    return _FLAGS + sanitizer_flags()


def _abi() -> str:
    """This interpreter's extension ABI, from values that cost nothing to read (``sysconfig`` takes milliseconds).

    Together with the source and the toolchain it names the cached library, so the warm path of a process never
    loads ``sysconfig``; its include directory is looked up only when the extension has to be built.
    """
    return (f"{sys.implementation.cache_tag} {importlib.machinery.EXTENSION_SUFFIXES[0]} {sys.hexversion} "
            f"{sys.abiflags} {sys.base_prefix}")


def _sources() -> tuple[Path, ...]:
    from .native import NATIVE_DIR

    return (_source_path(), NATIVE_DIR / "threads.h")


def build_extension() -> Path:
    """Compile the extension (once per source, Python ABI and toolchain) and return the path of the library."""
    from .native import get_native_compiler
    from .threadpool import shared_library

    def build(out: Path) -> None:
        import sysconfig

        include = Path(sysconfig.get_paths()["include"])
        if not (include / "Python.h").exists():
            raise RuntimeError(f"Python.h not found in {include} (install the Python development headers)")
        get_native_compiler().compile_raw(_source_path().read_text(), out, [*flags, "-I", str(include)])

    flags = _flags()
    return shared_library("treadle_fastlaunch", [" ".join(flags), _abi()], build, _sources())


def known_extension() -> Path | None:
    """The built extension's path when the environment memo knows it (nothing built or hashed), else ``None``."""
    from .threadpool import known_library

    return known_library("treadle_fastlaunch", [" ".join(_flags()), _abi()], _sources())


def use_path(path: Path) -> None:
    """Load the extension from ``path`` (a trusted, already built library) when it is first needed."""
    with _STATE.lock:
        if not _STATE.tried:
            _STATE.path = path


def _load(path: Path) -> Any:
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, str(path), loader=loader)
    if spec is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def prebuild() -> None:
    """Build the extension now if it is missing (the runtime prefetch thread calls this; errors wait for load)."""
    if not config.native_launch:
        return
    try:
        _STATE.path = build_extension()
    except Exception:  # noqa: BLE001 - reported when the module is loaded
        pass


def load(run1_address: int) -> Any:
    """The initialised extension module, or ``None`` when it is unavailable (then :func:`status` says why).

    ``run1_address`` is the address of the runtime library's ``treadle_rt_run1``.
    """
    with _STATE.lock:
        if _STATE.tried:
            return _STATE.module
        _STATE.tried = True
        if not config.native_launch:
            _STATE.error = "wp.config.native_launch is off"
            return None
        try:
            path = _STATE.path or build_extension()
            module = _load(path)
            import ctypes

            from ..core.abi import ArrayDesc
            from ..types.arrays import array_class
            from . import state, threadpool

            # the launch state the extension reads (a C struct), and the front end's array class, registered with
            # the type layer: the arrays the extension packs itself
            module.init(run1_address, threadpool._CPUS, GIL_THRESHOLD, ctypes.addressof(state.LAUNCH), array_class(),
                        ArrayDesc)
            _STATE.module = module
            _STATE.path = path
        except Exception as e:  # noqa: BLE001 - any failure leaves the Python paths in charge
            _STATE.error = f"{type(e).__name__}: {e}"
            _STATE.module = None
        return _STATE.module


def module() -> Any:
    """The loaded extension, or ``None`` (not loaded yet, unavailable, or turned off)."""
    return _STATE.module


def status() -> str:
    """Whether the native launch path is in use, and if not, why."""
    if _STATE.module is not None:
        return f"in use ({_STATE.path})"
    if _STATE.error:
        return f"not in use: {_STATE.error}"
    return "not loaded yet (loads with the CPU runtime at the first launch)"
