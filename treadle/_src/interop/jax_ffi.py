"""The generic XLA FFI dispatcher: build, load, register, and launch plans.

One C handler (``treadle/native/ffi/treadle_ffi.c``) serves every ``jax_kernel`` and ``jax_callable``. It is
compiled on first use with the system C++ compiler against the XLA FFI C API header shipped in jaxlib, cached in the
Treadle kernel cache directory (``ffi/treadle_ffi_<hash>.so``, keyed by the source, the header and the compiler),
and registered with JAX as the target ``"treadle_ffi"`` for the ``cpu`` platform (``treadle_ffi_handler``) and the
``CUDA`` platform (``treadle_ffi_cuda_handler``).

A :class:`Plan` is the C ``treadle_ffi_plan``: everything about one launch that is fixed at trace time (entry
point, ``Args`` byte template with static scalars and array shapes filled in, which XLA buffer feeds each array's
data / grad pointer, launch bounds, thread count). Its address travels to the handler as the ``plan`` attribute of
the FFI call, together with a per-process ``token`` (so an executable restored in another process fails cleanly).
Plans are kept alive for the whole process: compiled executables may outlive the Python objects that traced them.

CUDA plans (kind 2) carry no CPU entry point: the CUDA handler takes XLA's stream and device ordinal from the call's
execution context, fills the same ``Args`` bytes with device pointers and calls :data:`CUDA_FN` (one process-wide
ctypes trampoline) with the plan's :class:`CudaTarget` id; the target launches through Treadle's CUDA launch path
(``backends/cuda/launch.py``: the kernel's module loaded for ``cuda:<ordinal>``, ``cuLaunchKernel`` on XLA's stream).
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

from ..core.errors import TreadleError

#: The FFI target name registered with JAX.
TARGET = "treadle_ffi"

_SOURCE = Path(__file__).resolve().parent.parent.parent / "native" / "ffi" / "treadle_ffi.c"
_MAGIC = 0x5452454144464649

_entry_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
#: ``int32 callback(int64 ctx, int64 nbufs, void** data, char* err, int64 errlen)``
CALLBACK_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.c_void_p, ctypes.c_int64)
#: ``int32 cuda(int64 ctx, int64 stream, int64 ordinal, int64 phase, void* data, int64* sizes, int64 nbufs,
#: char* err, int64 errlen)``: phase 0 zeroes ``sizes[i]`` bytes at ``((void**)data)[i]``; phase 1 launches with
#: ``data`` = the filled ``Args`` struct.
CUDA_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                           ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64, ctypes.c_void_p,
                           ctypes.c_int64)

#: Plan kinds (``treadle_ffi_plan.kind``).
KIND_CPU, KIND_CALLBACK, KIND_CUDA = 0, 1, 2


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
        ("cuda_launch", ctypes.c_void_p),
        ("cuda_ctx", ctypes.c_int64),
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
                 nthreads: int = 1, callback: Any = None, callback_ctx: int = 0,
                 cuda_target: CudaTarget | None = None) -> None:
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
        self.cuda_target = cuda_target
        if cuda_target is not None:
            p.cuda_launch = ctypes.cast(_cuda_trampoline, ctypes.c_void_p).value
            p.cuda_ctx = cuda_target.ident
        self._plan = p
        self.address = ctypes.addressof(p)
        _live_plans.append(self)


_live_plans: list[Plan] = []


# ------------------------------------------------------------------ CUDA: launches on XLA's stream


class XlaStream:
    """XLA's ``CUstream`` in the shape the CUDA launch path expects of a stream (``cuda_stream``)."""

    __slots__ = ("cuda_stream",)
    #: The handler is not command-buffer compatible (its traits are 0), so XLA never captures the call.
    is_capturing = False

    def __init__(self, handle: int) -> None:
        self.cuda_stream = int(handle)


class CudaTarget:
    """One kernel pass (forward or adjoint) launched by the CUDA handler: instance, bounds, block size."""

    _next = 1

    def __init__(self, inst: Any, bounds: Any, adjoint: bool = False, block_dim: int | None = None) -> None:
        self.inst = inst
        self.bounds = bounds
        self.adjoint = bool(adjoint)
        self.block_dim = int(block_dim) if block_dim else None
        with _lock:
            self.ident = CudaTarget._next
            CudaTarget._next += 1
            _cuda_targets[self.ident] = self

    @staticmethod
    def device(ordinal: int) -> Any:
        """The Treadle device of XLA's device ordinal (``cuda:N``; the current CUDA device when XLA gave none)."""
        from ..runtime.device import get_device

        return get_device(f"cuda:{ordinal}" if ordinal >= 0 else "cuda")

    @classmethod
    def preload_instance(cls, inst: Any, ordinal: int = -1, adjoint: bool = False) -> None:
        """Load a kernel instance's module on the device now (at trace time) rather than inside the XLA call."""
        from ..backends.cuda.launch import plan_for

        plan_for(inst, cls.device(ordinal), adjoint=adjoint)

    def zero(self, ordinal: int, stream: int, ptrs: Sequence[int], sizes: Sequence[int]) -> None:
        from ..runtime.cuda_driver import call

        dev = self.device(ordinal)
        with dev.guard():
            for p, n in zip(ptrs, sizes):
                if n > 0 and p:
                    call("cuMemsetD8Async", int(p), 0, int(n), int(stream))

    def launch(self, ordinal: int, stream: int, args_addr: int) -> None:
        from ..backends.cuda.launch import plan_for

        plan = plan_for(self.inst, self.device(ordinal), adjoint=self.adjoint)
        packed = self.inst.args_type.from_address(args_addr)
        plan.run(self.bounds, packed, XlaStream(stream), self.block_dim)


_cuda_targets: dict[int, CudaTarget] = {}


def _cuda_entry(ctx: int, stream: int, ordinal: int, phase: int, data: int, sizes: Any, nbufs: int, err: int,
                errlen: int) -> int:
    try:
        target = _cuda_targets[int(ctx)]
        if phase == 0:
            ptrs = (ctypes.c_void_p * nbufs).from_address(data)
            target.zero(ordinal, stream, [p or 0 for p in ptrs], [sizes[i] for i in range(nbufs)])
        else:
            target.launch(ordinal, stream, data)
        return 0
    except BaseException as e:  # noqa: BLE001 - reported to XLA as the call's error
        msg = f"{type(e).__name__}: {e}".encode()[: max(int(errlen) - 1, 0)]
        ctypes.memmove(err, msg + b"\0", len(msg) + 1)
        return 1


_cuda_trampoline = CUDA_FN(_cuda_entry)


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
        self.cuda_handler = lib.treadle_ffi_cuda_handler
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(self.handler), platform="cpu")
        # Registering for CUDA works on CPU-only jaxlib builds too (the target is only looked up when a CUDA
        # computation is compiled); a jaxlib that refuses it simply cannot run CUDA plans.
        try:
            jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(self.cuda_handler), platform="CUDA")
            self.cuda_registered = True
        except Exception:  # noqa: BLE001
            self.cuda_registered = False
        lib.treadle_ffi_selftest.restype = ctypes.c_int32
        lib.treadle_ffi_selftest.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                             ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p,
                                             ctypes.c_int64]


_dispatcher: _Dispatcher | None = None
_lock = threading.Lock()


def _build(cache_root: Path) -> Path:
    """Compile the handler into the cache (once per source/header/compiler) and return the library path."""
    import jax

    from ..runtime.cache import get_cache
    from ..runtime.native import get_native_compiler

    include = Path(jax.ffi.include_dir())
    header = include / "xla" / "ffi" / "api" / "c_api.h"
    source = _SOURCE.read_bytes()
    tc = get_native_compiler().toolchain()
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


def jax_platform(arrays: Sequence[Any]) -> tuple[str, int]:
    """``("cuda", ordinal)`` or ``("cpu", 0)``: where a call on ``arrays`` runs.

    Concrete inputs name their device; traced ones (inside ``jit``) run on JAX's default device, which is what
    ``jit`` compiles for unless told otherwise.
    """
    import jax

    for a in arrays:
        devs = getattr(a, "devices", None)
        if devs is None or isinstance(a, jax.core.Tracer):
            continue
        try:
            found = list(devs())
        except Exception:  # noqa: BLE001 - e.g. a deleted array
            continue
        if found:
            return _platform_of(found[0])
    return _platform_of(getattr(jax.config, "jax_default_device", None) or jax.devices()[0])


def _platform_of(dev: Any) -> tuple[str, int]:
    if isinstance(dev, str):  # jax_default_device given as a platform name
        import jax

        dev = jax.devices(dev)[0]
    plat = str(getattr(dev, "platform", "cpu")).lower()
    if plat in ("gpu", "cuda"):
        hw = getattr(dev, "local_hardware_id", None)
        return "cuda", int(hw if hw is not None else getattr(dev, "id", 0))
    return "cpu", 0


def selftest_call(plan: Plan, buffers: Sequence[tuple[int, Sequence[int]]], nargs: int, *, cuda: bool,
                  stream: int = 0, ordinal: int = 0, with_ordinal: bool = True) -> tuple[int, str]:
    """Run the dispatcher's handler on a call frame built in C (tests): ``buffers`` are ``(data pointer, dims)``.

    The stand-in XLA API returns ``stream`` and ``ordinal`` (or has no ordinal query when ``with_ordinal`` is false).
    Returns ``(error code, message)``; ``(0, "")`` on success.
    """
    d = get_dispatcher()
    n = len(buffers)
    data = (ctypes.c_void_p * max(n, 1))(*[p for p, _ in buffers])
    ranks = (ctypes.c_int64 * max(n, 1))(*[len(dims) for _, dims in buffers])
    dims = (ctypes.c_int64 * (8 * max(n, 1)))()
    for i, (_, ds) in enumerate(buffers):
        for k, v in enumerate(ds):
            dims[8 * i + k] = int(v)
    err = ctypes.create_string_buffer(2048)
    code = d.lib.treadle_ffi_selftest(int(cuda), plan.address, d.token, nargs, n - nargs, data, ranks, dims,
                                      int(stream), int(ordinal), int(with_ordinal), err, len(err))
    return int(code), err.value.decode(errors="replace")


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


__all__ = ["CALLBACK_FN", "CUDA_FN", "KIND_CALLBACK", "KIND_CPU", "KIND_CUDA", "TARGET", "CudaTarget", "XlaStream",
           "jax_platform", "selftest_call", "BufferSpec", "Plan", "ffi_call", "get_dispatcher", "match_varying",
           "varying_axes"]
