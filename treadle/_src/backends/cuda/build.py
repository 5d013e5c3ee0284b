"""The CUDA backend: CUDA C++ -> NVRTC (``cuda.bindings.nvrtc``) -> CUBIN for one exact ``sm_XY``, cached.

NVRTC runs without a GPU, so everything up to the binary is checked on any machine with the
``cuda-bindings`` and ``nvidia-cuda-nvrtc-cu12`` wheels (``pip install treadle[cuda]``).

Targets: CUBIN for the device's exact architecture whenever NVRTC can target it. PTX is produced only when asked
(``config.cuda_output = "ptx"``, ``config.ptx_target_arch``) or when the device is newer than every architecture
this NVRTC knows; then the PTX targets the newest architecture NVRTC knows that is not newer than the device. (An
NVRTC newer than the driver writes PTX the driver rejects, which CUBIN avoids.)

Caching: a kernel's key hashes the Treadle version, the native headers, the NVRTC version, the target, the compile
options and the block text. Binaries are published into the kernel cache (``runtime/cache.py``) under
``lib/b_<batch>.<target>.cubin`` with the same atomic rename and checksummed references as CPU libraries, so
``KernelCache.lookup(key)`` finds them.

The pieces the launcher uses: :func:`prepare_cuda` / :func:`prepare_cuda_adjoint` (emit and hash one kernel),
:func:`compile_cuda_batch` (find or build binaries for several kernels in one translation unit),
:func:`compile_cuda_batch_archs` (the same for several architectures, the front end run once) and
:func:`load_cuda_kernel` (all of it plus loading the module on a device, memoised per device).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any

from .... import config
from ...core.errors import CompileError, SourceLoc, ToolchainError
from ...runtime.native import NATIVE_DIR
from ..batch import BuildItem, batch_key, build_batch

_ERROR_RE = re.compile(r"^(?P<file>[^\n(]+\.py)\((?P<line>\d+)\): (?:catastrophic )?error:\s*(?P<msg>.*)$", re.M)


class NvrtcUnavailableError(ToolchainError):
    """NVRTC (the CUDA runtime compiler) cannot be used on this machine."""


# ---------------------------------------------------------------------------------------------------------------
# NVRTC
# ---------------------------------------------------------------------------------------------------------------


class Nvrtc:
    """Lazy access to ``cuda.bindings.nvrtc`` (imported on first use; never at ``import treadle``)."""

    def __init__(self) -> None:
        self._mod: Any = None
        self._error: str | None = None
        self._version: tuple[int, int] | None = None
        self._archs: list[int] | None = None
        self._identity: str | None = None
        self.compile_count = 0
        self.last_compile_seconds = 0.0

    def module(self) -> Any:
        if self._mod is None and self._error is None:
            try:
                from cuda.bindings import nvrtc

                err, major, minor = nvrtc.nvrtcVersion()
                if int(err) != 0:
                    raise RuntimeError(f"nvrtcVersion failed ({err})")
                self._version = (int(major), int(minor))
                self._mod = nvrtc
            except Exception as e:  # noqa: BLE001 - missing package, missing libnvrtc, broken install
                self._error = f"{type(e).__name__}: {e}"
        if self._mod is None:
            raise NvrtcUnavailableError(
                "CUDA kernels cannot be compiled: NVRTC is not available "
                f"({self._error}). Install it with: pip install 'treadle[cuda]' "
                "(cuda-bindings and nvidia-cuda-nvrtc-cu12)"
            )
        return self._mod

    def available(self) -> bool:
        try:
            self.module()
        except NvrtcUnavailableError:
            return False
        return True

    def version(self) -> tuple[int, int]:
        """``(major, minor)`` of NVRTC."""
        self.module()
        assert self._version is not None
        return self._version

    def supported_archs(self) -> list[int]:
        """Architectures NVRTC can emit CUBIN for (e.g. ``[75, 80, 86, 89, 90, 100, 120]``)."""
        if self._archs is None:
            nv = self.module()
            try:
                err, archs = nv.nvrtcGetSupportedArchs()
                self._archs = sorted(int(a) for a in archs) if int(err) == 0 else []
            except AttributeError:  # pragma: no cover - NVRTC < 11.2
                self._archs = []
        return list(self._archs)

    def identity(self) -> str:
        """What identifies this compiler in cache keys: NVRTC version plus the wheel's exact version."""
        if self._identity is None:
            major, minor = self.version()
            extra = ""
            try:
                from importlib import metadata

                for dist in ("nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc", "cuda-bindings"):
                    try:
                        extra += f"|{dist}={metadata.version(dist)}"
                    except metadata.PackageNotFoundError:
                        continue
            except ImportError:  # pragma: no cover
                pass
            self._identity = f"nvrtc{major}.{minor}{extra}"
        return self._identity

    def compile(self, source: str, name: str, flags: list[str], output: str) -> tuple[bytes, str]:
        """Compile ``source``; returns ``(binary, log)`` (``output``: ``"cubin"`` or ``"ptx"``).

        Raises:
            CompileError: NVRTC rejected the program (the message leads with the Python line when known).
        """
        import time

        nv = self.module()
        err, prog = nv.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
        _nvrtc_check(nv, err, "nvrtcCreateProgram")
        try:
            t0 = time.perf_counter()
            opts = [f.encode() for f in flags]
            (cerr,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
            self.last_compile_seconds = time.perf_counter() - t0
            self.compile_count += 1
            log = _program_log(nv, prog)
            if int(cerr) != 0:
                raise compile_error_from_log(log, name, _error_string(nv, cerr))
            if output == "cubin":
                err, size = nv.nvrtcGetCUBINSize(prog)
                _nvrtc_check(nv, err, "nvrtcGetCUBINSize")
                buf = bytearray(size)
                (err,) = nv.nvrtcGetCUBIN(prog, buf)
                _nvrtc_check(nv, err, "nvrtcGetCUBIN")
            else:
                err, size = nv.nvrtcGetPTXSize(prog)
                _nvrtc_check(nv, err, "nvrtcGetPTXSize")
                buf = bytearray(size)
                (err,) = nv.nvrtcGetPTX(prog, buf)
                _nvrtc_check(nv, err, "nvrtcGetPTX")
            return bytes(buf), log
        finally:
            nv.nvrtcDestroyProgram(prog)


def _error_string(nv: Any, err: Any) -> str:
    try:
        res = nv.nvrtcGetErrorString(err)
        text = res[1] if isinstance(res, tuple) else res
        return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001
        return str(err)


def _nvrtc_check(nv: Any, err: Any, what: str) -> None:
    if int(err) != 0:
        raise CompileError(f"{what} failed: {_error_string(nv, err)}")


def _program_log(nv: Any, prog: Any) -> str:
    err, size = nv.nvrtcGetProgramLogSize(prog)
    if int(err) != 0 or size <= 1:
        return ""
    buf = bytearray(size)
    nv.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0 ").decode(errors="replace")


def compile_error_from_log(log: str, name: str, what: str = "") -> CompileError:
    """A :class:`CompileError` that leads with the Python line recovered from ``#line`` directives."""
    m = _ERROR_RE.search(log)
    if m is not None:
        loc = SourceLoc(m.group("file"), int(m.group("line")), 0)
        return CompileError(f"NVRTC rejected the CUDA code generated for this line: {m.group('msg')}\n"
                            f"(this is a Treadle bug for valid kernels; translation unit: {name})", log, loc)
    return CompileError(f"NVRTC failed on generated CUDA code ({what or 'compilation error'}; translation unit: "
                        f"{name})", log)


_nvrtc: Nvrtc | None = None


def get_nvrtc() -> Nvrtc:
    """The process-wide NVRTC wrapper."""
    global _nvrtc
    if _nvrtc is None:
        _nvrtc = Nvrtc()
    return _nvrtc


def nvrtc_available() -> bool:
    """True if CUDA code can be compiled here (``cuda-bindings`` and NVRTC are installed)."""
    return get_nvrtc().available()


# ---------------------------------------------------------------------------------------------------------------
# Options and targets
# ---------------------------------------------------------------------------------------------------------------


class CudaCompileOptions:
    """Options that change a CUDA binary (all of them are part of the cache key).

    Args:
        arch: the device architecture as ``10 * major + minor`` (``90`` for ``sm_90``).
        mode: ``"release"`` or ``"debug"`` (checked mode: bounds checks reported at the user's line, line info).
        fast_math: ``--use_fast_math`` (approximate division, square root and transcendentals; flush to zero).
        lineinfo: source line information for profilers (``config.lineinfo`` when ``None``).
        debug: device debug information (``-G``; disables optimisation).
        output: ``"cubin"``, ``"ptx"`` or ``None`` (``config.cuda_output``; automatic: CUBIN when possible).
        ptx_arch: PTX target architecture (``config.ptx_target_arch``); asking for one implies PTX output.
        extra: more NVRTC flags.
    """

    def __init__(self, arch: int, mode: str = "release", fast_math: bool = False, lineinfo: bool | None = None,
                 debug: bool = False, output: str | None = None, ptx_arch: int | None = None,
                 extra: list[str] | None = None) -> None:
        self.arch = int(arch)
        self.mode = mode
        self.fast_math = bool(fast_math)
        self.lineinfo = bool(config.lineinfo if lineinfo is None else lineinfo)
        self.debug = bool(debug)
        self.output = output if output is not None else config.cuda_output
        if self.output not in (None, "cubin", "ptx"):
            raise ValueError(f"cuda output must be 'cubin', 'ptx' or None, got {self.output!r}")
        self.ptx_arch = ptx_arch if ptx_arch is not None else config.ptx_target_arch
        self.extra = list(extra or [])

    def target(self, supported: list[int] | None = None) -> tuple[str, int]:
        """``("cubin", arch)`` or ``("ptx", arch)`` for this device architecture (see the module docstring)."""
        if supported is None:
            supported = get_nvrtc().supported_archs()
        if self.output == "ptx" or self.ptx_arch is not None:
            want = int(self.ptx_arch) if self.ptx_arch is not None else self.arch
            fits = [a for a in supported if a <= min(want, self.arch)]
            if not fits:
                raise NvrtcUnavailableError(f"NVRTC cannot target compute_{want} (it supports {supported})")
            return "ptx", max(fits)
        if self.arch in supported:
            return "cubin", self.arch
        if self.output == "cubin" or not supported:
            raise NvrtcUnavailableError(
                f"NVRTC {'.'.join(map(str, get_nvrtc().version()))} cannot produce a CUBIN for sm_{self.arch} "
                f"(supported: {supported}); install a newer nvidia-cuda-nvrtc or set config.cuda_output = 'ptx'")
        older = [a for a in supported if a < self.arch]
        if not older:
            raise NvrtcUnavailableError(f"NVRTC no longer supports sm_{self.arch} (it supports {supported})")
        return "ptx", max(older)

    def target_name(self, supported: list[int] | None = None) -> str:
        kind, arch = self.target(supported)
        return f"sm{arch}.cubin" if kind == "cubin" else f"compute{arch}.ptx"

    def flags(self, supported: list[int] | None = None) -> list[str]:
        kind, arch = self.target(supported)
        flags = ["--std=c++17", f"-arch={'sm' if kind == 'cubin' else 'compute'}_{arch}", f"-I{NATIVE_DIR}",
                 "--diag-suppress=177,550"]  # unused variables in generated code
        if self.fast_math:
            flags.append("--use_fast_math")
        if self.mode == "debug":
            flags.append("-DTREADLE_CHECKED")
        if self.lineinfo or self.mode == "debug":
            flags.append("--generate-line-info")
        if self.debug:
            flags.append("-G")
        return flags + self.extra

    def key(self) -> str:
        return " ".join(self.flags())

    def __repr__(self) -> str:
        return f"CudaCompileOptions({self.key()})"


# ---------------------------------------------------------------------------------------------------------------
# Kernels: emit, hash, compile in batches, publish
# ---------------------------------------------------------------------------------------------------------------


class CudaBuilt(BuildItem):
    """A kernel pass ready to compile for CUDA: its block, entry name, cache key, and once built, its binary."""

    def __init__(self, cblock: Any, key: str) -> None:
        super().__init__(key)
        self.cblock = cblock
        self.block: str = cblock.block
        self.symbol: str = cblock.symbol
        self.entry: str = cblock.entry
        self.kind: str = cblock.kind
        self.locs: list[Any] = cblock.locs
        self.uses_ckpt: bool = cblock.uses_ckpt

    @property
    def binary_path(self) -> Path | None:
        """The built CUBIN or PTX (``None`` until built or found)."""
        return self.path

    @binary_path.setter
    def binary_path(self, value: Path | None) -> None:
        self.path = value


def _key(block: str, options: CudaCompileOptions) -> str:
    from ...runtime.native import header_hash

    src = "\n".join([config.version, header_hash(), get_nvrtc().identity(), options.target_name(), options.key(),
                     block])
    return hashlib.sha256(src.encode()).hexdigest()


def prepare_cuda(kernel_ir: Any, deps: list[Any], options: CudaCompileOptions, name: str,
                 entry: Any = None, args_type: Any = None) -> CudaBuilt:
    """Emit and hash the CUDA forward pass of one kernel instance.

    Args:
        kernel_ir: the kernel's IR (``KernelInstance.ir``).
        deps: its function instances.
        options: the compile options (architecture, mode, ...).
        name: the kernel's name (for dumps).
        entry: :class:`~treadle._src.compiler.emit_cuda.CudaEntryOptions` (block size, launch bounds).
        args_type: the ctypes ``Args`` mirror, checked against the C++ layout at compile time.
    """
    from ...compiler import emit_cuda
    from ...compiler.pipeline import dump, ordered_deps

    cb = emit_cuda.cuda_kernel_block(kernel_ir, ordered_deps(deps), checked=options.mode == "debug",
                                     options=entry, args_layout=emit_cuda.args_layout_of(args_type))
    dump("cu", name, emit_cuda.CUDA_PRELUDE + cb.block)
    return CudaBuilt(cb, _key(cb.block, options))


def prepare_cuda_adjoint(kernel_ir: Any, deps: list[Any], options: CudaCompileOptions, name: str,
                         entry: Any = None, args_type: Any = None) -> CudaBuilt:
    """Emit and hash the CUDA backward pass of one kernel instance."""
    from ...compiler import emit_cuda
    from ...compiler.pipeline import dump, ordered_deps

    cb = emit_cuda.cuda_adjoint_block(kernel_ir, ordered_deps(deps), options=entry,
                                      args_layout=emit_cuda.args_layout_of(args_type))
    dump("adj.cu", name, emit_cuda.CUDA_PRELUDE + cb.block)
    return CudaBuilt(cb, _key(cb.block, options))


def compile_cuda_source(source: str, options: CudaCompileOptions, name: str = "treadle_module.cu") -> bytes:
    """Compile a whole CUDA translation unit to this options' target (no cache)."""
    kind, _ = options.target()
    binary, _log = get_nvrtc().compile(source, name, options.flags(), kind)
    return binary


def compile_cuda_source_archs(source: str, options: list[CudaCompileOptions],
                              name: str = "treadle_module.cu") -> list[bytes]:
    """CUBINs of one translation unit for several architectures (no cache), the front end run once.

    ``options`` differ only in ``arch`` (the first one's other settings apply). NVRTC compiles ``source`` to PTX for
    the oldest architecture and nvJitLink assembles it for each; without nvJitLink, NVRTC compiles per architecture.
    """
    from .jitlink import jitlink_available, ptx_to_cubin

    lead = options[0]
    if len(options) == 1 or not jitlink_available():
        return [compile_cuda_source(source, o, name) for o in options]
    ptx_opts = CudaCompileOptions(arch=min(o.arch for o in options), mode=lead.mode, fast_math=lead.fast_math,
                                  lineinfo=lead.lineinfo, debug=lead.debug, output="ptx", extra=lead.extra)
    ptx = compile_cuda_source(source, ptx_opts, name)
    return [ptx_to_cubin(ptx, o.arch, Path(name).name, lineinfo=lead.lineinfo, debug=lead.debug) for o in options]


_fast_flags: dict[int, list[str]] = {}


def fast_compile_flags(arch: int) -> list[str]:
    """NVRTC flags that trade the binary's speed for build time: ``["--Ofast-compile=max"]``, or ``[]`` without it.

    NVRTC 12.8 and later accept the option (older ones reject it, found once per architecture by compiling an empty
    kernel). The code still goes through the front end and ``ptxas`` for ``arch``, so a build that checks generated
    code compiles (``CudaCompileOptions(extra=...)``) sees every error the optimizing build would, in about a fifth
    of the time; kernels that run keep the optimizing flags.
    """
    flags = _fast_flags.get(arch)
    if flags is None:
        flags = ["--Ofast-compile=max"]
        try:
            compile_cuda_source('extern "C" __global__ void treadle_probe() {}\n',
                                CudaCompileOptions(arch=arch, extra=flags))
        except (CompileError, NvrtcUnavailableError):
            flags = []
        _fast_flags[arch] = flags
    return list(flags)


def publish_artifact(cache: Any, built: Path, final_name: str, kernel_keys: list[str]) -> Path:
    """Move a built binary into ``<cache>/lib/final_name`` and point each kernel key at it (atomic renames)."""
    cache._dirs()
    final = cache.root / "lib" / final_name
    digest = hashlib.sha256(built.read_bytes()).hexdigest()
    os.replace(built, final)
    for key in kernel_keys:
        ref = cache.root / "ref" / f"k_{key}.ref"
        tmp = ref.with_name(f"{ref.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(f"{final.name} {digest}\n")
        os.replace(tmp, ref)
    return final


def compile_cuda_batch(items: list[CudaBuilt], options: CudaCompileOptions) -> None:
    """Give every item a binary: cache hits are found, misses are compiled together in one translation unit.

    An item whose code fails to compile gets ``error`` set; its siblings still build.
    """
    build_batch(items, lambda missing: _build_isolated(missing, options))


def compile_cuda_batch_archs(batches: list[tuple[list[CudaBuilt], CudaCompileOptions]]) -> None:
    """:func:`compile_cuda_batch` for the same kernels on several architectures, sharing the front end.

    ``batches`` pairs item lists with their options; the lists hold the same kernel passes in the same order
    (prepared with each architecture's options, so each has its own cache keys). Kernels missing from the cache
    for the first architecture go through NVRTC once, to PTX for the oldest architecture, and nvJitLink assembles
    that PTX for every architecture (:mod:`.jitlink`); each architecture's CUBIN is published under its own keys.
    Whatever is still missing afterwards (nvJitLink absent, PTX rejected, a cache entry present for one
    architecture only) is built by :func:`compile_cuda_batch`, so the results are those of one build per
    architecture.
    """
    from .jitlink import jitlink_available

    if any(len(items) != len(batches[0][0]) or [it.entry for it in items] != [it.entry for it in batches[0][0]]
           for items, _ in batches):
        raise ValueError("compile_cuda_batch_archs: every architecture needs the same kernel passes, in one order")
    if len(batches) > 1 and jitlink_available() and all(o.target()[0] == "cubin" for _, o in batches):
        lead_items, _ = batches[0]
        position = {id(it): i for i, it in enumerate(lead_items)}

        def build(missing: list[CudaBuilt]) -> None:
            idx = [position[id(it)] for it in missing]
            try:
                _build_publish_archs([([items[i] for i in idx], opts) for items, opts in batches])
            except CompileError:
                pass  # rebuilt below, one architecture (and if need be one kernel) at a time: errors per item

        build_batch(lead_items, build)
    for items, opts in batches:
        compile_cuda_batch(items, opts)


def _build_publish_archs(batches: list[tuple[list[CudaBuilt], CudaCompileOptions]]) -> None:
    import shutil

    from ...compiler.emit_cuda import cuda_source
    from ...runtime.cache import get_cache

    lead_items, _ = batches[0]
    cache = get_cache()
    tmp = cache.tmp_dir()
    source = cuda_source([it.cblock for it in lead_items])
    src_path = tmp / f"b_{batch_key(lead_items)}.cu"
    src_path.write_text(source)
    cubins = compile_cuda_source_archs(source, [opts for _, opts in batches], str(src_path))
    for (items, opts), cubin in zip(batches, cubins):
        name = f"b_{batch_key(items)}.{opts.target_name()}"
        out = tmp / name
        out.write_bytes(cubin)
        final = publish_artifact(cache, out, name, [it.key for it in items])
        for it in items:
            it.binary_path = final
    shutil.rmtree(tmp, ignore_errors=True)


def _build_isolated(items: list[CudaBuilt], options: CudaCompileOptions) -> None:
    """Build ``items`` in one translation unit; when that fails, each on its own.

    One bad kernel must not take its siblings down.
    """
    try:
        _build_publish(items, batch_key(items), options)
    except CompileError as e:
        if len(items) == 1:
            items[0].error = e
            return
        for it in items:
            try:
                _build_publish([it], it.key, options)
            except CompileError as e1:
                it.error = e1


def _build_publish(items: list[CudaBuilt], name: str, options: CudaCompileOptions) -> None:
    import shutil

    from ...compiler.emit_cuda import cuda_source
    from ...runtime.cache import get_cache

    cache = get_cache()
    tmp = cache.tmp_dir()
    source = cuda_source([it.cblock for it in items])
    suffix = options.target_name()
    src_path = tmp / f"b_{name}.cu"
    src_path.write_text(source)
    binary = compile_cuda_source(source, options, str(src_path))  # on failure the source stays for the report
    out = tmp / f"b_{name}.{suffix}"
    out.write_bytes(binary)
    final = publish_artifact(cache, out, f"b_{name}.{suffix}", [it.key for it in items])
    shutil.rmtree(tmp, ignore_errors=True)
    for it in items:
        it.binary_path = final


# ---------------------------------------------------------------------------------------------------------------
# One-call path for the launcher
# ---------------------------------------------------------------------------------------------------------------


def options_for(device: Any, mode: str = "release", module_options: Any = None) -> CudaCompileOptions:
    """Compile options for a device (its exact ``arch``) and a module's options (``fast_math``, ``lineinfo``)."""
    mo = module_options if module_options is not None else {}
    return CudaCompileOptions(arch=device.arch, mode=mode, fast_math=bool(mo.get("fast_math", False)),
                              lineinfo=mo.get("lineinfo", None), output=mo.get("cuda_output", None))


def entry_options(kernel_options: dict[str, Any] | None = None, module_options: Any = None) -> Any:
    """The CUDA entry options of a kernel.

    From the kernel's options (``@wp.kernel(launch_bounds=...)``, ``grid_stride``) and its module's
    (``launch_bounds``, ``block_dim``, ``cuda_ckpt_bytes``, ``cuda_prefetch``); the kernel's win.
    """
    from ...compiler.emit_cuda import DEFAULT_CKPT_BYTES, CudaEntryOptions

    ko = kernel_options or {}
    mo = module_options if module_options is not None else {}
    return CudaEntryOptions.from_launch_bounds(
        ko.get("launch_bounds", mo.get("launch_bounds")), block_dim=ko.get("block_dim", mo.get("block_dim", 256)),
        grid_stride=bool(ko.get("grid_stride", True)),
        ckpt_bytes=int(ko.get("cuda_ckpt_bytes", mo.get("cuda_ckpt_bytes", DEFAULT_CKPT_BYTES))),
        prefetch=bool(ko.get("cuda_prefetch", mo.get("cuda_prefetch", True))))


def _module_siblings(inst: Any, device: Any, opts: CudaCompileOptions) -> list[CudaBuilt]:
    """The forward passes of the other non-generic kernels of ``inst``'s module not yet loaded on ``device``.

    They are compiled in the same translation unit (one NVRTC run per module, as the CPU backend builds one
    library per module); a sibling that does not lower or compile is left for its own launch to report.
    """
    out = []
    kernel = inst.kernel
    for k in list(kernel.module.kernels):
        if k is kernel or k.is_generic:
            continue
        try:
            si = k.get_instance(None)
            if si.options.mode != inst.options.mode or (device.alias, False) in si.__dict__.get("_cuda_functions", {}):
                continue
            out.append(prepare_cuda(si.ir, si.deps, opts, k.key, entry=entry_options(k.options, k.module.options),
                                    args_type=si.args_type))
        except Exception:  # noqa: BLE001 - reported when that kernel itself is launched
            continue
    return out


def load_cuda_kernel(inst: Any, device: Any, adjoint: bool = False) -> Any:
    """The loaded CUDA function of a kernel instance's forward (or backward) pass on ``device``.

    ``inst`` is a ``KernelInstance`` (``ir``, ``deps``, ``kernel``, ``options.mode``, ``args_type``). The result
    (a :class:`~treadle._src.runtime.cuda_driver.CudaFunction`) is memoised on the instance per device.
    """
    from ...runtime import cuda_driver

    memo = inst.__dict__.setdefault("_cuda_functions", {})
    mkey = (device.alias, adjoint)
    fn = memo.get(mkey)
    if fn is not None and fn.device is device:
        return fn
    kernel = inst.kernel
    if adjoint and not kernel.enable_backward:
        raise CompileError(f"kernel '{kernel.key}' was defined with enable_backward=False, so it has no adjoint")
    opts = options_for(device, inst.options.mode, kernel.module.options)
    entry = entry_options(kernel.options, kernel.module.options)
    prep = prepare_cuda_adjoint if adjoint else prepare_cuda
    built = prep(inst.ir, inst.deps, opts, kernel.key, entry=entry, args_type=inst.args_type)
    compile_cuda_batch([built, *([] if adjoint else _module_siblings(inst, device, opts))], opts)
    if built.error is not None:
        raise built.error
    assert built.binary_path is not None
    module = cuda_driver.load_module(device, built.binary_path)
    fn = module.function(built.entry, block_dim=entry.block_dim, grid_stride=entry.grid_stride,
                         name=kernel.key, locs=built.locs, ckpt_bytes=entry.ckpt_bytes if built.uses_ckpt else 0)
    memo[mkey] = fn
    return fn
