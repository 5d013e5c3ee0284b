"""PTX -> CUBIN with nvJitLink (``cuda.bindings.nvjitlink``), without a GPU.

NVRTC's front end and optimizer produce PTX for a virtual architecture; nvJitLink runs ``ptxas`` on that PTX for a
real one. Building the same translation unit for several architectures then costs one front-end pass and one
``ptxas`` per architecture instead of a whole NVRTC compile per architecture (about a third less CPU for two
architectures of the tile kernels). Needs the ``nvidia-nvjitlink-cu12`` wheel (part of ``pip install
'treadle[cuda]'``); without it :func:`jitlink_available` is false and callers compile with NVRTC per architecture.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import CompileError

_module: Any = None
_checked = False


def _jitlink() -> Any:
    global _module, _checked
    if not _checked:
        _checked = True
        try:
            import cuda.bindings.nvjitlink as jl

            jl.version()  # loads libnvJitLink: raises when the library is not installed
            _module = jl
        except Exception:  # noqa: BLE001 - a missing wheel or library means "not available", nothing more
            _module = None
    return _module


def jitlink_available() -> bool:
    """True if nvJitLink can assemble PTX into CUBINs here."""
    return _jitlink() is not None


def ptx_to_cubin(ptx: bytes, arch: int, name: str, lineinfo: bool = False, debug: bool = False) -> bytes:
    """Assemble ``ptx`` (for a virtual architecture not newer than ``arch``) into a CUBIN for ``sm_<arch>``.

    Raises:
        CompileError: ``ptxas`` rejected the PTX (the message carries nvJitLink's error log).
    """
    jl = _jitlink()
    if jl is None:
        raise CompileError("nvJitLink is not installed (pip install nvidia-nvjitlink-cu12)")
    opts = [f"-arch=sm_{arch}"] + (["-lineinfo"] if lineinfo else []) + (["-g"] if debug else [])
    handle = jl.create(len(opts), opts)
    try:
        try:
            jl.add_data(handle, jl.InputType.PTX, ptx, len(ptx), name)
            jl.complete(handle)
        except Exception as e:  # noqa: BLE001 - nvJitLinkError: the log says what ptxas rejected
            raise CompileError(f"ptxas (nvJitLink) rejected the PTX of {name} for sm_{arch}: {e}",
                               _error_log(jl, handle)) from None
        size = jl.get_linked_cubin_size(handle)
        buf = bytearray(size)
        jl.get_linked_cubin(handle, buf)
        return bytes(buf)
    finally:
        jl.destroy(handle)


def _error_log(jl: Any, handle: Any) -> str:
    try:
        size = jl.get_error_log_size(handle)
        buf = bytearray(size)
        jl.get_error_log(handle, buf)
        return bytes(buf).rstrip(b"\0 ").decode(errors="replace")
    except Exception:  # noqa: BLE001
        return ""


__all__ = ["jitlink_available", "ptx_to_cubin"]
