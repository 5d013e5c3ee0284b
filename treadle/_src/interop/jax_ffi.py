"""The generic XLA FFI dispatcher: build, load, register, and launch plans.

One C handler (``treadle/native/ffi/treadle_ffi.c``) serves every ``jax_kernel`` and ``jax_callable``. It is
compiled on first use with the system C++ compiler against the XLA FFI C API header shipped in jaxlib, cached in the
Treadle kernel cache directory (``ffi/treadle_ffi_<hash>.so``, keyed by the source, the header and the compiler),
and registered with JAX as the CPU target ``"treadle_ffi"``.

A :class:`Plan` is the C ``treadle_ffi_plan``: everything about one launch that is fixed at trace time (entry
point, ``Args`` byte template with static scalars and array shapes filled in, which XLA buffer feeds each array's
data / grad pointer, launch bounds, thread count). Its address travels to the handler as the ``plan`` attribute of
the FFI call, together with a per-process ``token`` (so an executable restored in another process fails cleanly).
Plans are kept alive for the whole process: compiled executables may outlive the Python objects that traced them.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import TreadleError

#: The FFI target name registered with JAX.
TARGET = "treadle_ffi"

_SOURCE = Path(__file__).resolve().parent.parent.parent / "native" / "ffi" / "treadle_ffi.c"
_MAGIC = 0x5452454144464649

_entry_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
#: ``int32 callback(int64 ctx, int64 nbufs, void** data, char* err, int64 errlen)``
CALLBACK_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.c_void_p, ctypes.c_int64)


class _Slot(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_int64), ("data_buf", ctypes.c_int32), ("grad_buf", ctypes.c_int32)]


class _Buffer(ctypes.Structure):
    _fields_ = [("base_bytes", ctypes.c_int64), ("base_rank", ctypes.c_int32), ("zero_fill", ctypes.c_int32)]


class _Plan(ctypes.Structure):
    _fields_ = [
        ("magic", ctypes.c_int64),
        ("kind", ctypes.c_int32),
        ("nargs", ctypes.c_int32),
        ("nrets", ctypes.c_int32),
        ("nslots", ctypes.c_int32),
        ("slots", ctypes.c_void_p),
        ("buffers", ctypes.c_void_p),
        ("args_template", ctypes.c_void_p),
        ("args_size", ctypes.c_int64),
        ("bounds", ctypes.c_void_p),
        ("launch_size", ctypes.c_int64),
        ("nthreads", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("entry", ctypes.c_void_p),
        ("callback", ctypes.c_void_p),
        ("callback_ctx", ctypes.c_int64),
    ]


class BufferSpec:
    """One XLA buffer of an FFI call, unbatched: its size in bytes, rank, and whether to zero it first."""

    __slots__ = ("nbytes", "rank", "zero")

    def __init__(self, nbytes: int, rank: int, zero: bool = False) -> None:
        self.nbytes = int(nbytes)
        self.rank = int(rank)
        self.zero = bool(zero)


class Plan:
    """A launch plan owned by Python; ``address`` is what the FFI call passes as its ``plan`` attribute."""

    def __init__(self, kind: int, buffers: list[BufferSpec], nargs: int, *, entry: Any = None,
                 template: bytes = b"", slots: Sequence[tuple[int, int, int]] = (), bounds: Any = None,
                 nthreads: int = 1, callback: Any = None, callback_ctx: int = 0) -> None:
        nbufs = len(buffers)
        if nbufs > 256:
            raise TreadleError(f"an FFI call has at most 256 array arguments and results, got {nbufs}")
        self._buffers = (_Buffer * max(nbufs, 1))()
        for i, b in enumerate(buffers):
            self._buffers[i].base_bytes = b.nbytes
            self._buffers[i].base_rank = b.rank
            self._buffers[i].zero_fill = int(b.zero)
        self._slots = (_Slot * max(len(slots), 1))()
        for i, (off, d, g) in enumerate(slots):
            self._slots[i].offset = off
            self._slots[i].data_buf = d
            self._slots[i].grad_buf = g
        self._template = ctypes.create_string_buffer(bytes(template), max(len(template), 1))
        self._bounds = bounds
        self._entry = entry  # keeps the ctypes function object (and its library) alive
        self._callback = callback
        p = _Plan()
        p.magic = _MAGIC
        p.kind = kind
        p.nargs = nargs
        p.nrets = nbufs - nargs
        p.nslots = len(slots)
        p.slots = ctypes.addressof(self._slots)
        p.buffers = ctypes.addressof(self._buffers)
        p.args_template = ctypes.addressof(self._template)
        p.args_size = len(template)
        p.bounds = ctypes.addressof(bounds) if bounds is not None else None
        p.launch_size = int(bounds.size) if bounds is not None else 0
        p.nthreads = int(nthreads)
        p.entry = ctypes.cast(entry, ctypes.c_void_p).value if entry is not None else None
        p.callback = ctypes.cast(callback, ctypes.c_void_p).value if callback is not None else None
        p.callback_ctx = int(callback_ctx)
        self._plan = p
        self.address = ctypes.addressof(p)
        _live_plans.append(self)


_live_plans: list[Plan] = []


class _Dispatcher:
    """The loaded handler library, registered with JAX."""

    def __init__(self, lib: Any, path: Path) -> None:
        self.lib = lib
        self.path = path
        self.token = secrets.randbits(62) + 1
        lib.treadle_ffi_set_token.argtypes = [ctypes.c_int64]
        lib.treadle_ffi_set_token.restype = None
        lib.treadle_ffi_set_token(self.token)
        lib.treadle_ffi_plan_size.restype = ctypes.c_int64
        if lib.treadle_ffi_plan_size() != ctypes.sizeof(_Plan):
            raise TreadleError("the FFI dispatcher's plan layout does not match the Python mirror (stale build?)")
        import jax

        self.handler = lib.treadle_ffi_handler
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(self.handler), platform="cpu")


_dispatcher: _Dispatcher | None = None
_lock = threading.Lock()


def _build(cache_root: Path) -> Path:
    """Compile the handler into the cache (once per source/header/compiler) and return the library path."""
    import jax

    from ..backends.cpu import get_cpu_backend
    from ..runtime.cache import get_cache

    include = Path(jax.ffi.include_dir())
    header = include / "xla" / "ffi" / "api" / "c_api.h"
    source = _SOURCE.read_bytes()
    tc = get_cpu_backend().toolchain()
    flags = ["-x", "c++", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-w"]
    h = hashlib.sha256()
    h.update(source)
    h.update(header.read_bytes() if header.exists() else b"")
    h.update(tc.identity.encode())
    h.update(" ".join(flags).encode())
    key = h.hexdigest()[:32]
    out_dir = cache_root / "ffi"
    out = out_dir / f"treadle_ffi_{key}.so"
    if out.exists():
        return out
    cache = get_cache()
    with cache.lock(f"ffi_{key}"):
        if out.exists():
            return out
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache.tmp_dir()
        built = tmp / "treadle_ffi.so"
        import subprocess

        cmd = [tc.path, *flags, "-I", str(include), "-o", str(built), str(_SOURCE)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            raise TreadleError(f"could not build the JAX FFI dispatcher: {e}") from None
        if proc.returncode != 0 or not built.exists():
            raise TreadleError("could not build the JAX FFI dispatcher with " + " ".join(cmd) + "\n"
                               + (proc.stderr or proc.stdout or ""))
        os.replace(built, out)
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return out


def get_dispatcher() -> _Dispatcher:
    """The registered FFI dispatcher (built, loaded and registered on first use)."""
    global _dispatcher
    d = _dispatcher
    if d is not None:
        return d
    with _lock:
        if _dispatcher is None:
            from ..runtime.cache import get_cache

            path = _build(get_cache().root)
            lib = ctypes.CDLL(str(path), mode=getattr(ctypes, "RTLD_LOCAL", 0))
            _dispatcher = _Dispatcher(lib, path)
        return _dispatcher


# ------------------------------------------------------------------ shard_map: varying manual axes
#
# Inside ``jax.shard_map`` (with its default ``check_vma=True``) every value carries the set of mesh axes it varies
# over. ``ffi_call`` requires all operands to agree, and its results must say how they vary: a result computed from
# per-shard data varies over every axis an operand varies over. JAX spells this set ``aval.mat.varying`` and
# ``ShapeDtypeStruct(manual_axis_type=...)`` in recent releases and ``aval.vma`` / ``ShapeDtypeStruct(vma=...)``
# before that; both are handled. Outside ``shard_map`` the set is empty and nothing changes.


def varying_axes(x: Any) -> frozenset:
    """The mesh axes a (traced) JAX value varies over inside ``shard_map`` (empty elsewhere)."""
    import jax

    try:
        aval = jax.typeof(x)
    except Exception:  # noqa: BLE001 - not a JAX value
        return frozenset()
    mat = getattr(aval, "mat", None)
    if mat is not None and hasattr(mat, "varying"):
        return frozenset(mat.varying)
    return frozenset(getattr(aval, "vma", None) or ())


def make_varying(x: Any, axes: frozenset) -> Any:
    """``x`` marked as varying over ``axes`` too (``lax.pcast(..., to="varying")``; its transpose is a psum)."""
    import jax

    missing = tuple(sorted(axes - varying_axes(x), key=str))
    if not missing:
        return x
    pcast = getattr(jax.lax, "pcast", None)
    if pcast is not None:
        return pcast(x, missing, to="varying")
    return jax.lax.pvary(x, missing)  # type: ignore[attr-defined]  # JAX releases before pcast


def match_varying(args: Sequence[Any]) -> tuple[list[Any], frozenset]:
    """Mark every argument as varying over the union of their varying axes; returns the arguments and the union."""
    vma: frozenset = frozenset()
    for a in args:
        vma |= varying_axes(a)
    if not vma:
        return list(args), vma
    return [make_varying(a, vma) for a in args], vma


def with_varying(sds: Any, vma: frozenset) -> Any:
    """A ``jax.ShapeDtypeStruct`` like ``sds`` that varies over the mesh axes ``vma``."""
    import jax

    mat_cls = getattr(jax.sharding, "ManualAxisType", None)
    if mat_cls is not None:
        # The manual axis type belongs to a sharding over the (abstract) mesh shard_map is running on.
        sharding = jax.sharding.NamedSharding(jax.sharding.get_abstract_mesh(), jax.sharding.PartitionSpec())
        return jax.ShapeDtypeStruct(sds.shape, sds.dtype, sharding=sharding, manual_axis_type=mat_cls(varying=vma))
    return jax.ShapeDtypeStruct(sds.shape, sds.dtype, vma=vma)  # type: ignore[call-arg]


def ffi_call(plan: Plan, args: list[Any], results: list[Any], *, aliases: dict[int, int] | None = None,
             vmap_method: str | None = "broadcast_all", has_side_effect: bool = False) -> list[Any]:
    """Call the dispatcher with ``plan`` on JAX ``args``; ``results`` are ``jax.ShapeDtypeStruct``s.

    ``aliases`` maps argument indices to result indices (in-out buffers). Returns the list of results.
    """
    import jax
    import numpy as np

    d = get_dispatcher()
    args, vma = match_varying(args)
    if vma:
        results = [with_varying(r, vma) for r in results]
    if aliases and vmap_method == "expand_dims":
        # XLA requires an aliased operand and its result to have the same shape, which "expand_dims" breaks for an
        # unbatched in-out argument (size-1 batch dim in, full batch out): broadcast instead.
        vmap_method = "broadcast_all"
    call = jax.ffi.ffi_call(TARGET, results, input_output_aliases=aliases or None, vmap_method=vmap_method,
                            has_side_effect=has_side_effect)
    out = call(*args, plan=np.int64(plan.address), token=np.int64(d.token))
    return list(out)


__all__ = ["CALLBACK_FN", "TARGET", "BufferSpec", "Plan", "ffi_call", "get_dispatcher", "match_varying",
           "varying_axes"]
