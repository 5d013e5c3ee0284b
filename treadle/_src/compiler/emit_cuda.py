"""CUDA translation units from the same kernel IR and the same shared emission as the CPU backend.

A kernel's CUDA block is its :class:`~treadle._src.compiler.pipeline.KernelBlock` (types, functions, ``Args``, the
per-thread bodies, and the CPU entry points inside a host-only preprocessor fence: ``emit_entry.py``), followed by
the kernel's namespace opened again for a ``__global__`` entry ``<symbol>_cuda_forward`` (or ``_cuda_backward``)::

      extern "C" __global__ void __launch_bounds__(B[, M]) <symbol>_cuda_forward(
          treadle::launch_bounds_t bounds, const __grid_constant__ Args args)

The entry is written from data the shared emission hands out, never from its text: the per-thread body's name,
parameters and template parameters (``emit_entry.EntryPoint``, ``BODY_PARAMS_DECL``, ``BODY_TEMPLATE``), the ``Args``
members (``KernelBlock.args``) and the checkpoint sites (``KernelBlock.ckpt_sites``). It runs a grid-stride loop over
``bounds.size`` (or, with ``grid_stride=False``, one thread index per CUDA thread, bounds-checked), computes the
per-dimension thread index only when the body reads it, and calls the body (its general, runtime-stride
instantiation). Parameters are the launch bounds (48 bytes) and the ``Args`` struct, laid out exactly as the ctypes
mirror the launcher packs (checked by ``static_assert`` when the caller passes the ctypes layout).

Backward passes of loops keep a per-thread checkpoint stack. On the host it grows on the heap; under CUDA it is a
fixed buffer of ``ckpt_bytes`` bytes in each thread's local memory (``native/cuda_kernel.h``). A thread whose loops
need more records the size it needed; :func:`treadle._src.runtime.cuda_driver.CudaModule.check_errors` turns that
into an error naming the kernel and the capacity to ask for (module option ``cuda_ckpt_bytes``). Kernels whose
backward pass has no checkpoint site get no buffer at all.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from . import emit_entry, ir
from .emit_cpp import EmitError
from .pipeline import KernelBlock, adjoint_block, kernel_block

#: The includes of every CUDA translation unit (``launch.h`` is host-only; ``cuda_kernel.h`` is its device side).
CUDA_PRELUDE = '#include "treadle.h"\n#include "kernel_support.h"\n#include "cuda_kernel.h"\n'

#: Default checkpoint capacity per thread (bytes of local memory) for backward passes with loops.
DEFAULT_CKPT_BYTES = 2048

@dataclasses.dataclass(frozen=True)
class CudaEntryOptions:
    """What shapes a CUDA entry point (all of it ends up in the block text, hence in the cache key).

    Attributes:
        block_dim: the most threads per block the entry is compiled for (``__launch_bounds__`` first argument);
            launches must use at most this many.
        min_blocks: minimum resident blocks per SM asked of the compiler (second ``__launch_bounds__`` argument,
            0 to omit).
        grid_stride: a grid-stride loop (any grid size works) or one thread index per CUDA thread.
        ckpt_bytes: per-thread checkpoint capacity of backward passes that differentiate loops.
        prefetch: in the grid-stride loop of a 1-d kernel, prefetch into L2 the next iteration's element of each
            1-d array parameter the kernel accesses only at its own thread index (see :func:`prefetch_lines`).
    """

    block_dim: int = 256
    min_blocks: int = 0
    grid_stride: bool = True
    ckpt_bytes: int = DEFAULT_CKPT_BYTES
    prefetch: bool = True

    @staticmethod
    def from_launch_bounds(launch_bounds: Any, block_dim: int | None = None, **kw: Any) -> CudaEntryOptions:
        """From the reference's ``launch_bounds`` kernel option (an int, or ``(max_threads, min_blocks)``)."""
        max_threads, min_blocks = int(block_dim or 256), 0
        if isinstance(launch_bounds, int):
            max_threads = launch_bounds
        elif isinstance(launch_bounds, (tuple, list)) and launch_bounds:
            max_threads = int(launch_bounds[0])
            min_blocks = int(launch_bounds[1]) if len(launch_bounds) > 1 else 0
        elif launch_bounds is not None:
            raise ValueError(f"launch_bounds must be an int or a (max_threads, min_blocks) tuple, got {launch_bounds!r}")
        if not 1 <= max_threads <= 1024:
            raise ValueError(f"CUDA blocks hold 1 to 1024 threads, got launch bounds / block_dim {max_threads}")
        return CudaEntryOptions(block_dim=max_threads, min_blocks=max(0, min_blocks), **kw)


@dataclasses.dataclass
class CudaBlock:
    """One kernel's CUDA code: the namespace block, its entry symbol and what the runtime needs to know."""

    block: str
    symbol: str
    entry: str
    kind: str
    locs: list[Any]
    uses_ckpt: bool
    options: CudaEntryOptions


#: What the CUDA entry passes for each per-thread body parameter (by the parameter's name).
_BODY_ARGS = {"bounds": "bounds", "_flat": "_i", "args": "args", "_t0": "_t[0]", "_t1": "_t[1]", "_t2": "_t[2]",
              "_t3": "_t[3]"}


def body_call_args() -> list[str]:
    """The arguments the CUDA entry passes to the per-thread body, in the order of ``emit_entry.BODY_PARAMS_DECL``."""
    out = []
    for _, name in emit_entry.BODY_PARAMS_DECL:
        if name not in _BODY_ARGS:
            raise EmitError(f"the per-thread body has a parameter '{name}' the CUDA entry does not know how to pass "
                            "(emit_entry.BODY_PARAMS_DECL changed: update emit_cuda._BODY_ARGS)")
        out.append(_BODY_ARGS[name])
    return out


def _template_args() -> str:
    """The template arguments of the body's general instantiation (only parameters without a default are named)."""
    needed = [t for t in emit_entry.BODY_TEMPLATE if "=" not in t]
    return f"<{', '.join('false' for _ in needed)}>" if emit_entry.BODY_TEMPLATE else ""


def cuda_entry(symbol: str, ep: emit_entry.EntryPoint, f: ir.FuncIR, opts: CudaEntryOptions, uses_ckpt: bool,
               args_layout: tuple[int, list[tuple[str, int]]] | None = None, members: list[str] | None = None) -> str:
    """The ``extern "C" __global__`` entry running the per-thread body ``ep`` over a launch."""
    kind = ep.kind
    name = f"{symbol}_cuda_{kind}"
    bounds = f"__launch_bounds__({opts.block_dim}{f', {opts.min_blocks}' if opts.min_blocks else ''})"
    call = f"{ep.body}{_template_args()}({', '.join(body_call_args())});"
    lines: list[str] = []
    if args_layout is not None:
        size, fields = args_layout
        lines.append(f'static_assert(sizeof(Args) == {size}, "Args layout differs from the launcher\'s ctypes mirror");')
        # NVRTC has no offsetof: the sizes of the members (paired by position) and of the whole struct
        if members is not None and len(members) == len(fields):
            for member, (field, fsize) in zip(members, fields):
                lines.append(f'static_assert(sizeof(Args::{member}) == {fsize}, "Args.{field} differs in size");')
    lines += [
        f'extern "C" __global__ void {bounds} {name}(treadle::launch_bounds_t bounds, '
        "const TREADLE_GRID_CONSTANT Args args)",
        "{",
    ]
    if uses_ckpt:
        lines += [
            f"    __align__(16) unsigned char _ckpt_buf[{max(16, opts.ckpt_bytes)}];",
            "    treadle::cuda_ckpt_t _ckpt;",
            f"    treadle::cuda_ckpt_bind(_ckpt, _ckpt_buf, {max(16, opts.ckpt_bytes)}ull);",
        ]
    tid = "        treadle::cuda_tid(bounds, _i, _t);" if ep.tid_dims else None
    per_thread = ["        treadle::int32 _t[4] = {0, 0, 0, 0};", *([tid] if tid else []), f"        {call}"]
    if uses_ckpt:
        per_thread.append("        treadle::cuda_ckpt_check(_ckpt);")
    first = "(treadle::int64)blockIdx.x * (treadle::int64)blockDim.x + (treadle::int64)threadIdx.x"
    if opts.grid_stride:
        lines += [
            "    const treadle::int64 _step = (treadle::int64)blockDim.x * (treadle::int64)gridDim.x;",
            # not unrolled: unrolling needs the trip count, a 64-bit division per thread (measured on an H200:
            # 20% of a saxpy's bandwidth when each thread runs one iteration)
            "#pragma unroll 1",
            f"    for (treadle::int64 _i = {first}; _i < bounds.size; _i += _step) {{",
            *(prefetch_lines(f, kind, ep.launch_ndim) if opts.prefetch else []),
            *per_thread,
            "    }",
        ]
    else:
        lines += [f"    const treadle::int64 _i = {first};", "    if (_i < bounds.size) {", *per_thread, "    }"]
    if uses_ckpt:
        lines.append("    treadle::cuda_ckpt_report(_ckpt);")
    lines.append("}")
    return "\n".join(lines)


def prefetch_lines(f: ir.FuncIR, kind: str, launch_ndim: int = 1) -> list[str]:
    """L2 prefetches of the next grid-stride iteration's elements (1-d kernels; empty when nothing qualifies).

    Only 1-d array parameters that every access indexes with the thread's own index (``x[i]``: see
    ``emit_adjoint.own_index_arrays``) are prefetched, so the lines fetched are the ones the next iteration reads;
    arrays the kernel only stores to are not (a full-sector store needs no read), and backward passes prefetch the
    gradient elements, which they accumulate into or consume. Each thread then has its next elements on the way while it
    computes the current one, which a streaming kernel cannot otherwise do (its loads may not pass the store before
    them: the arrays may alias).
    """
    from .emit_adjoint import own_index_arrays

    if launch_ndim != 1:
        return []
    found = own_index_arrays(f)
    own = {p.id: p for p in found.values() if p.type.ndim == 1 and not p.type.indexed}
    loaded = {found[s.array.id].id for s in ir.walk(f.body)
              if isinstance(s, ir.ArrayLoad) and isinstance(s.array, ir.Value) and s.array.id in found}
    backward = kind == "backward"
    calls = [f"treadle::cuda_prefetch<{str(p.id in loaded).lower()}, {str(backward).lower()}>(args.p_{p.name}, _n);"
             for p in own.values() if p.id in loaded or backward]  # a store-only array's lines need no read
    if not calls:
        return []
    return [f"        if (const treadle::int64 _n = _i + _step; _n < bounds.size) {{ {' '.join(calls)} }}"]


def _finish(kb: KernelBlock, kind: str, f: ir.FuncIR, opts: CudaEntryOptions, args_layout: Any) -> CudaBlock:
    """The CUDA block of ``kb``: the shared block, then its namespace again with the ``__global__`` entry."""
    uses_ckpt = kind == "backward" and kb.ckpt_sites > 0
    entry = cuda_entry(kb.symbol, kb.entry(kind), f, opts, uses_ckpt, args_layout, [m for m, _ in kb.args])
    ns = f"{kb.symbol}_ns"
    block = f"{kb.block}namespace {ns} {{\n\n{entry}\n\n}} // namespace {ns}\n"
    return CudaBlock(block, kb.symbol, f"{kb.symbol}_cuda_{kind}", kind, kb.locs, uses_ckpt, opts)


def cuda_kernel_block(kernel_ir: ir.FuncIR, funcs: list[Any], *, checked: bool = False,
                      options: CudaEntryOptions | None = None, args_layout: Any = None) -> CudaBlock:
    """The CUDA block of a kernel's forward pass (``funcs``: its function instances, callees first)."""
    kb = kernel_block(kernel_ir, funcs, checked=checked)
    return _finish(kb, "forward", kernel_ir, options or CudaEntryOptions(), args_layout)


def cuda_adjoint_block(kernel_ir: ir.FuncIR, funcs: list[Any], *, options: CudaEntryOptions | None = None,
                       args_layout: Any = None) -> CudaBlock:
    """The CUDA block of a kernel's backward pass."""
    kb = adjoint_block(kernel_ir, funcs)
    return _finish(kb, "backward", kernel_ir, options or CudaEntryOptions(), args_layout)


def args_layout_of(args_type: Any) -> tuple[int, list[tuple[str, int]]] | None:
    """``(sizeof, [(field, size)])`` of a ctypes ``Args`` mirror, for the entry's layout ``static_assert`` s."""
    if args_type is None:
        return None
    import ctypes

    fields = [(name, getattr(args_type, name).size) for name, *_ in args_type._fields_]
    return ctypes.sizeof(args_type), fields


def cuda_source(blocks: list[CudaBlock]) -> str:
    """One CUDA translation unit holding ``blocks``."""
    return CUDA_PRELUDE + "\n".join(b.block for b in blocks)


def block_digest(block: CudaBlock) -> str:
    """SHA-256 of a block's text (with the emitter's inputs it determines the code)."""
    return hashlib.sha256(block.block.encode()).hexdigest()
