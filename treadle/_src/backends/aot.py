"""Ahead-of-time compilation of a module's kernels (reference API ``wp.compile_aot_module``).

``compile_aot_module(module, arch=[80, 90])`` needs no GPU: NVRTC produces one CUBIN (or PTX with ``use_ptx``) per
architecture holding the forward and backward passes of every kernel of the module. Next to each binary it writes
the CUDA source (``.cu``) and a ``.meta`` JSON file naming each kernel's entry points, block size and argument
struct size. ``device="cpu"`` (or the CPU as current device) builds the CPU shared library instead.

Artifacts are named ``<module>_<hash>.<target>`` (``strip_hash=True``: ``<module>.<target>``) where ``target`` is
``sm80.cubin``, ``compute80.ptx`` or ``cpu.so``. They go to ``module_dir`` (default: ``<kernel cache>/aot``).

``wp.compile_aot_module`` (``lang/module_api.py``) resolves the module and calls :func:`compile_module`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _targets(device: Any, arch: int | Iterable[int] | None) -> list[Any]:
    """CUDA architectures (ints) and/or ``"cpu"``, in order."""
    from ..runtime.device import get_device

    if arch is not None:
        return [int(arch)] if isinstance(arch, int) else [int(a) for a in arch]
    devices = device if isinstance(device, (list, tuple)) else [device]
    out: list[Any] = []
    for d in devices:
        dev = get_device(d)
        out.append("cpu" if dev.is_cpu else int(dev.arch))
    return out


def _instances(mod: Any) -> list[Any]:
    insts = []
    for k in mod.kernels:
        if k.is_generic:
            insts.extend(k.instances.values())
        else:
            insts.append(k.get_instance(None))
    return insts


def compile_module(mod: Any, device: Any = None, arch: int | Iterable[int] | None = None,
                   module_dir: str | os.PathLike[str] | None = None, use_ptx: bool | None = None,
                   strip_hash: bool | None = None) -> list[Path]:
    """Compile every kernel of the module ``mod`` ahead of time; returns the artifact paths in target order.

    ``wp.compile_aot_module`` (``lang/module_api.py``) resolves the module first.

    Args:
        mod: the module (``Module``: ``name``, ``kernels``, ``options``).
        device: device(s) to compile for when ``arch`` is not given (their exact architectures, or the CPU).
        arch: CUDA architecture(s) such as ``80`` or ``[80, 90]``; no GPU is needed.
        module_dir: output directory (default: ``<kernel cache>/aot``).
        use_ptx: PTX instead of CUBIN (``None``: CUBIN).
        strip_hash: leave the content hash out of file names (also stored as the module's ``strip_hash`` option).

    Raises:
        CompileError: a kernel failed to compile (the message leads with its Python line).
    """
    if strip_hash is not None:
        mod.options["strip_hash"] = bool(strip_hash)
    strip = bool(mod.options.get("strip_hash", False))
    targets = _targets(device, arch)
    insts = _instances(mod)
    if not insts:
        raise ValueError(f"module '{mod.name}' has no kernels to compile (generic kernels need wp.overload first)")
    if module_dir is None:
        from ..runtime.cache import get_cache

        out_dir = get_cache().root / "aot"
    else:
        out_dir = Path(module_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    base = mod.name.replace(".", "_").replace(os.sep, "_")
    paths = []
    for target in targets:
        if target == "cpu":
            paths.append(_compile_cpu(mod, insts, out_dir, base, strip))
        else:
            paths.append(_compile_cuda(mod, insts, int(target), out_dir, base, strip, bool(use_ptx)))
    return paths


def _name(base: str, digest: str, strip: bool) -> str:
    return base if strip else f"{base}_{digest[:7]}"


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _compile_cuda(mod: Any, insts: list[Any], arch: int, out_dir: Path, base: str, strip: bool,
                  use_ptx: bool) -> Path:
    from ..compiler.emit_cuda import cuda_source
    from .cuda import build as cuda_backend

    modes = sorted({inst.options.mode for inst in insts})
    if len(modes) > 1:
        raise ValueError(f"module '{mod.name}' mixes kernels compiled in modes {modes}; AOT compiles one mode per "
                         "module (set the 'mode' option on the module instead of on single kernels)")
    opts = cuda_backend.options_for(_Arch(arch), modes[0], mod.options)
    if use_ptx:
        opts.output = "ptx"
    builts, meta = [], []
    for inst in insts:
        k = inst.kernel
        entry = cuda_backend.entry_options(k.options, mod.options)
        fwd = cuda_backend.prepare_cuda(inst.ir, inst.deps, opts, k.key, entry=entry, args_type=inst.args_type)
        builts.append(fwd)
        item = {"kernel": k.key, "forward": fwd.entry, "block_dim": entry.block_dim, "grid_stride": entry.grid_stride,
                "args_size": _sizeof(inst.args_type), "types": [str(t) for t in inst.types]}
        if k.enable_backward:
            bwd = cuda_backend.prepare_cuda_adjoint(inst.ir, inst.deps, opts, k.key, entry=entry,
                                                    args_type=inst.args_type)
            builts.append(bwd)
            item["backward"] = bwd.entry
            item["ckpt_bytes"] = entry.ckpt_bytes if bwd.uses_ckpt else 0
        meta.append(item)
    unique = list({b.key: b for b in builts}.values())
    source = cuda_source([b.cblock for b in unique])
    target = opts.target_name()
    digest = hashlib.sha256((source + opts.key()).encode()).hexdigest()
    name = _name(base, digest, strip)
    src_path = out_dir / f"{name}.cu"
    _write_atomic(src_path, source.encode())
    binary = cuda_backend.compile_cuda_source(source, opts, str(src_path))
    path = out_dir / f"{name}.{target}"
    _write_atomic(path, binary)
    info = {"module": mod.name, "target": target, "arch": arch, "nvrtc": cuda_backend.get_nvrtc().identity(),
            "options": opts.key(), "kernels": meta}
    _write_atomic(out_dir / f"{name}.{target}.meta", json.dumps(info, indent=1).encode())
    return path


class _Arch:
    def __init__(self, arch: int) -> None:
        self.arch = arch


def _sizeof(t: Any) -> int:
    import ctypes

    return ctypes.sizeof(t) if t is not None else 0


def _compile_cpu(mod: Any, insts: list[Any], out_dir: Path, base: str, strip: bool) -> Path:
    from ..compiler.pipeline import PRELUDE
    from ..runtime.native import get_native_compiler

    blocks, seen = [], set()
    for inst in insts:
        inst.prepare()
        if inst.built.key not in seen:
            seen.add(inst.built.key)
            blocks.append(inst.built.block)
    options = insts[0].options
    source = PRELUDE + "\n".join(blocks)
    digest = hashlib.sha256((source + options.key()).encode()).hexdigest()
    name = _name(base, digest, strip)
    path = out_dir / f"{name}.cpu.so"
    tmp = out_dir / f".{name}.{os.getpid()}.so"
    get_native_compiler().compile(source, tmp, options)
    os.replace(tmp, path)
    src = tmp.with_suffix(".cpp")
    if src.exists():
        os.replace(src, out_dir / f"{name}.cpp")
    return path
