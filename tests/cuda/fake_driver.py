"""A stand-in for ``cuda.bindings.driver`` that records calls, for testing the CUDA runtime layer without a GPU.

Functions return tuples ``(CUresult, outputs...)`` as the real bindings do. "Device memory" is host memory owned by
the fake, so copies through the runtime really move bytes and arrays round-trip. Every call is appended to
``calls`` as ``(name, args)``; ``fail[name] = code`` makes the next call of ``name`` fail with that code.
"""

from __future__ import annotations

import contextlib
import ctypes
import warnings
from collections.abc import Iterator
from typing import Any

from treadle import DroppedGradientWarning


class _Result(int):
    def __repr__(self) -> str:
        return f"CUresult({int(self)})"


class _Names:
    """An enum namespace whose members are their own names."""

    def __getattr__(self, name: str) -> str:
        if name.startswith("CU_"):
            return name
        raise AttributeError(name)


class _U64:
    def __init__(self, value: int) -> None:
        self.value = int(value)


class _Uuid:
    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


ERROR_NAMES = {0: "CUDA_SUCCESS", 2: "CUDA_ERROR_OUT_OF_MEMORY", 100: "CUDA_ERROR_NO_DEVICE",
               600: "CUDA_ERROR_NOT_READY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS"}

ATTRS = {
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132, "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING": 1,
    "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED": 1, "CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED": 1,
    "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024, "CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID": 0,
    "CU_DEVICE_ATTRIBUTE_PCI_BUS_ID": 0x3B, "CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID": 0,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK": 49152,
}


class FakeDriver:
    """``cuda.bindings.driver`` for ``ndev`` H200-like devices."""

    def __init__(self, ndev: int = 2) -> None:
        self.ndev = ndev
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.fail: dict[str, int] = {}
        self.CUdevice_attribute = _Names()
        self.CUmemPool_attribute = _Names()
        self.CUpointer_attribute = _Names()
        self.CUstreamCaptureMode = _Names()
        #: stream handle -> launches recorded while that stream is captured; graph handle -> launches
        self.capturing: dict[int, list[tuple[int, bytes, bytes]]] = {}
        self.graphs: dict[int, list[tuple[int, bytes, bytes]]] = {}
        #: ``pointer -> device ordinal`` for ``cuPointerGetAttribute`` (unknown pointers: device 0)
        self.pointer_device: dict[int, int] = {}
        self.memory: dict[int, ctypes.Array[Any]] = {}
        self.current_ctx = 0
        self.ctx_stack: list[int] = []
        self.next_handle = 0x1000
        self.pool_attrs: dict[str, int] = {"CU_MEMPOOL_ATTR_RELEASE_THRESHOLD": 0,
                                           "CU_MEMPOOL_ATTR_USED_MEM_CURRENT": 0, "CU_MEMPOOL_ATTR_USED_MEM_HIGH": 0}
        self.globals: dict[tuple[int, str], int] = {}
        self.launches: list[dict[str, Any]] = []
        self.functions: dict[int, str] = {}
        #: ``executor(entry_name, bounds_address, args_address)`` runs launches (e.g. on the CPU build), if set.
        self.executor: Any = None
        self.elapsed = 1.25

    # plumbing -------------------------------------------------------------------------------------------------
    def CUresult(self, code: int) -> _Result:  # noqa: N802 - mirrors the bindings
        return _Result(code)

    def cuuint64_t(self, v: int) -> _U64:
        return _U64(v)

    def _new(self) -> int:
        self.next_handle += 0x10
        return self.next_handle

    def _mem(self, n: int) -> int:
        buf = (ctypes.c_ubyte * max(n, 1))()
        addr = ctypes.addressof(buf)
        self.memory[addr] = buf
        return addr

    def __getattr__(self, name: str) -> Any:
        impl = getattr(type(self), "_" + name, None)
        if impl is None or not name.startswith("cu"):
            raise AttributeError(name)

        def fn(*args: Any) -> tuple[Any, ...]:
            self.calls.append((name, args))
            code = self.fail.pop(name, 0)
            if code:
                return (_Result(code),)
            out = impl(self, *args)
            if out is None:
                return (_Result(0),)
            return (_Result(0), *out) if isinstance(out, tuple) else (_Result(0), out)

        return fn

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    # errors, init, devices --------------------------------------------------------------------------------------
    def _cuGetErrorName(self, err: Any) -> bytes:
        return ERROR_NAMES.get(int(err), f"CUDA_ERROR_{int(err)}").encode()

    def _cuGetErrorString(self, err: Any) -> bytes:
        return b"fake driver error"

    def _cuInit(self, flags: int) -> None:
        return None

    def _cuDriverGetVersion(self) -> int:
        return 12080

    def _cuDeviceGetCount(self) -> int:
        return self.ndev

    def _cuDeviceGet(self, ordinal: int) -> int:
        return ordinal

    def _cuDeviceGetName(self, n: int, dev: int) -> bytes:
        return b"NVIDIA H200".ljust(n, b"\0")

    def _cuDeviceGetAttribute(self, attr: str, dev: int) -> int:
        return ATTRS[attr]

    def _cuDeviceGetUuid(self, dev: int) -> _Uuid:
        return _Uuid(bytes(range(16)))

    def _cuDeviceTotalMem(self, dev: int) -> int:
        return 141 * 2**30

    def _cuDeviceCanAccessPeer(self, a: int, b: int) -> int:
        return 1

    def _cuDevicePrimaryCtxRetain(self, dev: int) -> int:
        return 0xC0 + dev

    def _cuCtxGetCurrent(self) -> int:
        return self.current_ctx

    def _cuCtxSetCurrent(self, ctx: int) -> None:
        self.current_ctx = int(ctx)

    def _cuCtxPushCurrent(self, ctx: int) -> None:
        self.ctx_stack.append(self.current_ctx)
        self.current_ctx = int(ctx)

    def _cuCtxPopCurrent(self) -> int:
        old = self.current_ctx
        self.current_ctx = self.ctx_stack.pop()
        return old

    def _cuCtxGetDevice(self) -> int:
        return self.current_ctx - 0xC0

    def _cuCtxSynchronize(self) -> None:
        return None

    def _cuMemGetInfo(self) -> tuple[int, int]:
        return (100 * 2**30, 141 * 2**30)

    # memory -------------------------------------------------------------------------------------------------------
    def _cuMemAlloc(self, n: int) -> int:
        return self._mem(n)

    def _cuMemAllocAsync(self, n: int, stream: int) -> int:
        self.pool_attrs["CU_MEMPOOL_ATTR_USED_MEM_CURRENT"] += n
        return self._mem(n)

    def _cuMemFree(self, ptr: int) -> None:
        self.memory.pop(int(ptr))

    def _cuMemFreeAsync(self, ptr: int, stream: int) -> None:
        self.memory.pop(int(ptr))

    def _cuMemHostAlloc(self, n: int, flags: int) -> int:
        return self._mem(n)

    def _cuMemFreeHost(self, ptr: int) -> None:
        self.memory.pop(int(ptr))

    def _cuMemsetD8Async(self, ptr: int, value: int, n: int, stream: int) -> None:
        ctypes.memset(ptr, value, n)

    def _cuMemsetD32Async(self, ptr: int, value: int, n: int, stream: int) -> None:
        (ctypes.c_uint32 * n).from_address(ptr)[:] = [value] * n

    def _cuMemcpyAsync(self, dst: int, src: int, n: int, stream: int) -> None:
        ctypes.memmove(dst, src, n)

    def _cuMemcpyPeerAsync(self, dst: int, dctx: int, src: int, sctx: int, n: int, stream: int) -> None:
        ctypes.memmove(dst, src, n)

    _cuMemcpyHtoDAsync = _cuMemcpyAsync
    _cuMemcpyDtoHAsync = _cuMemcpyAsync

    def _cuMemcpyDtoH(self, dst: int, src: int, n: int) -> None:
        ctypes.memmove(dst, src, n)

    def _cuPointerGetAttribute(self, attr: str, ptr: int) -> int:
        assert attr == "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL", attr
        return self.pointer_device.get(int(ptr), 0)

    def _cuDeviceGetDefaultMemPool(self, dev: int) -> int:
        return 0x900 + dev

    def _cuMemPoolGetAttribute(self, pool: int, attr: str) -> _U64:
        return _U64(self.pool_attrs[attr])

    def _cuMemPoolSetAttribute(self, pool: int, attr: str, value: _U64) -> None:
        self.pool_attrs[attr] = value.value

    # streams and events -----------------------------------------------------------------------------------------
    def _cuCtxGetStreamPriorityRange(self) -> tuple[int, int]:
        return (0, -5)

    def _cuStreamCreateWithPriority(self, flags: int, priority: int) -> int:
        h = self._new()
        self.stream_priority = getattr(self, "stream_priority", {})
        self.stream_priority[h] = priority
        return h

    def _cuStreamGetPriority(self, h: int) -> int:
        return self.stream_priority.get(h, 0)

    def _cuStreamGetFlags(self, h: int) -> int:
        return 0

    def _cuStreamQuery(self, h: int) -> None:
        return None

    def _cuStreamIsCapturing(self, h: int) -> int:
        return 1 if int(h) in self.capturing else 0

    def _cuStreamBeginCapture(self, h: int, mode: str) -> None:
        assert int(h) not in self.capturing
        self.capturing[int(h)] = []

    def _cuStreamEndCapture(self, h: int) -> int:
        g = self._new()
        self.graphs[g] = self.capturing.pop(int(h))
        return g

    def _cuGraphInstantiate(self, g: int, flags: int) -> int:
        e = self._new()
        self.graphs[e] = self.graphs[int(g)]
        return e

    def _cuGraphLaunch(self, e: int, stream: int) -> None:
        for f, bounds, args in self.graphs[int(e)]:
            b = ctypes.create_string_buffer(bounds, len(bounds))
            a = ctypes.create_string_buffer(args, len(args))
            if self.executor is not None:
                self.executor(self.functions.get(f, ""), ctypes.addressof(b), ctypes.addressof(a))

    def _cuGraphExecDestroy(self, e: int) -> None:
        return None

    def _cuGraphDestroy(self, g: int) -> None:
        return None

    def _cuStreamWaitEvent(self, s: int, e: int, flags: int) -> None:
        return None

    def _cuStreamSynchronize(self, h: int) -> None:
        return None

    def _cuStreamDestroy(self, h: int) -> None:
        return None

    def _cuEventCreate(self, flags: int) -> int:
        return self._new()

    def _cuEventRecord(self, e: int, s: int) -> None:
        return None

    def _cuEventQuery(self, e: int) -> None:
        return None

    def _cuEventSynchronize(self, e: int) -> None:
        return None

    def _cuEventElapsedTime(self, a: int, b: int) -> float:
        return self.elapsed

    def _cuEventDestroy(self, e: int) -> None:
        return None

    # modules and launches ---------------------------------------------------------------------------------------
    def _cuModuleLoadData(self, image: bytes) -> int:
        assert isinstance(image, bytes) and image
        return self._new()

    def _cuModuleGetFunction(self, mod: int, name: bytes) -> int:
        h = self._new()
        self.functions[h] = name.decode()
        return h

    def _cuOccupancyMaxActiveBlocksPerMultiprocessor(self, f: int, block: int, smem: int) -> int:
        return 2048 // int(block)  # an H200's 2048 resident threads per multiprocessor

    def _cuModuleGetGlobal(self, mod: int, name: bytes) -> tuple[int, int]:
        key = (int(mod), name.decode())
        if key not in self.globals:
            self.globals[key] = self._mem(64)
        return (self.globals[key], 48 if name == b"treadle_cuda_checked_error" else 8)

    def _cuLaunchKernel(self, f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shmem: int, stream: int,
                        params: int, extra: int) -> None:
        from treadle._src.core.abi import LaunchBounds

        ptrs = (ctypes.c_void_p * 2).from_address(params)
        bounds = LaunchBounds.from_address(ptrs[0])
        self.launches.append({"f": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "stream": stream,
                              "size": bounds.size, "ndim": bounds.ndim, "args": ptrs[1], "ctx": self.current_ctx})
        if int(stream) in self.capturing:  # recorded into the graph: parameters are copied now, nothing runs
            size = getattr(self.executor, "args_size", lambda name: 1024)(self.functions.get(int(f), ""))
            self.capturing[int(stream)].append((int(f), ctypes.string_at(ptrs[0], ctypes.sizeof(LaunchBounds)),
                                                ctypes.string_at(ptrs[1], size)))
            return
        if self.executor is not None:
            self.executor(self.functions.get(int(f), ""), ptrs[0], ptrs[1])


def _prepared(inst: Any) -> bool:
    """Prepare a kernel instance; False for the kernels other tests define to be rejected (they never build)."""
    try:
        inst.prepare()
    except Exception:  # noqa: BLE001 - any build error: not the kernel the fake is looking for
        return False
    return True


def cpu_executor() -> Any:
    """An ``executor`` that runs each fake CUDA launch with the CPU build of the same kernel.

    The fake's "device memory" is host memory and a CUDA ``Args`` struct is byte for byte the CPU one, so running
    the CPU entry point of the kernel whose symbol the CUDA entry names (``<symbol>_cuda_forward`` /
    ``<symbol>_cuda_backward``) computes what the GPU would: launches through the fake give real results.
    """
    from treadle._src.lang.kernel import modules

    def find(sym: str, kind: str) -> Any:
        with warnings.catch_warnings():  # emitting other kernels' backward passes to compare symbols is not a use
            warnings.simplefilter("ignore", DroppedGradientWarning)
            return _find(sym, kind)

    def _find(sym: str, kind: str) -> Any:
        for mod in list(modules().modules.values()):
            for k in mod.kernels:
                for inst in list(k.instances.values()):
                    if not _prepared(inst):
                        continue
                    if kind == "forward":
                        if inst.built.symbol == sym:
                            inst.ensure_loaded()
                            return inst.entry
                    elif k.enable_backward and inst.backward_built().symbol == sym:
                        return inst.ensure_backward()
        raise RuntimeError(f"fake driver: no CPU build for {sym} ({kind})")

    cache: dict[str, Any] = {}

    class Execute:
        def __call__(self, entry: str, bounds: int, args: int) -> None:
            fn = cache.get(entry)
            if fn is None:
                sym, kind = entry.rsplit("_cuda_", 1)
                fn = cache[entry] = find(sym, kind)
            fn(ctypes.c_void_p(bounds), ctypes.c_void_p(args), 1)

        def args_size(self, entry: str) -> int:
            """Bytes of the ``Args`` struct of the kernel behind ``entry`` (what a graph copies)."""
            sym = entry.rsplit("_cuda_", 1)[0]
            for mod in list(modules().modules.values()):
                for k in mod.kernels:
                    for inst in list(k.instances.values()):
                        if not _prepared(inst):
                            continue
                        if inst.built.symbol == sym:
                            return ctypes.sizeof(inst.args_type)
            return 1024

    return Execute()


@contextlib.contextmanager
def cpu_backed_driver(tmp_path: Any, monkeypatch: Any, ndev: int = 2) -> Iterator[FakeDriver]:
    """Install a fake driver of ``ndev`` devices whose launches run the CPU build of each kernel.

    CUDA binaries are stand-in files (no NVRTC); the real driver is restored on exit.
    """
    from treadle._src.backends.cuda import build as cb
    from treadle._src.runtime import cuda_driver as cd

    def stub_compile(items: Any, options: Any) -> None:
        for it in items:
            p = tmp_path / f"{it.key}.cubin"
            p.write_bytes(b"\x7fELF stand-in " + it.entry.encode())
            it.binary_path = p

    monkeypatch.setattr(cb, "compile_cuda_batch", stub_compile)
    drv = FakeDriver(ndev=ndev)
    drv.executor = cpu_executor()
    cd.use_driver(drv)
    try:
        yield drv
    finally:
        cd.use_driver(None)
