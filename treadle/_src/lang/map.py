"""``wp.map``: apply a ``@func`` or a builtin elementwise over arrays, through a generated kernel.

``wp.map(f, a, b, 2.0)`` broadcasts its array arguments with NumPy's rules, passes non-array arguments unchanged to
every element, and writes ``f``'s result(s) into new arrays (or into ``out``). The kernel is generated once per
function and argument pattern (which arguments are arrays, their broadcast index expressions, the number of
results) as a small Python module in the kernel cache, so it goes through the normal compiler and cache; its
parameters are generic (``Any``), so one module serves every dtype.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import TupleT, contains_any, is_composite, type_str, types_match
from .array import array

_lock = threading.Lock()
_kernels: dict[tuple[Any, ...], Any] = {}


def _value_type(v: Any) -> Any:
    if isinstance(v, array):
        return v.dtype
    if isinstance(v, bool):
        return scalars.bool
    if isinstance(v, int):
        return scalars.int32
    if isinstance(v, float):
        return scalars.float32
    if isinstance(v, scalars.scalar_base) or is_composite(type(v)):
        return type(v)
    st = getattr(v, "_struct_type_", None)
    if st is not None:
        return st
    raise TypeError(f"wp.map(): unsupported argument of type {type(v).__name__}")


def _return_type(func: Any, types: list[Any]) -> Any:
    """The result type of ``func`` for these argument types (a :class:`TupleT` for several results)."""
    b = getattr(func, "_treadle_builtin_", None) or (func if type(func).__name__ == "Builtin" else None)
    if b is not None:
        from ..builtins.registry import NoMatch

        try:
            return b.resolve(types).ret
        except NoMatch as e:
            sig = ", ".join(type_str(t) for t in types)
            raise TypeError(f"wp.map(): {b.name}({sig}): {e}") from None
    if not getattr(func, "_treadle_function_", False):
        raise TypeError("wp.map() takes a @wp.func or a builtin such as wp.sin; decorate Python functions with "
                        "@wp.func (lambdas are not supported)")
    for fdef in func.defs():
        pts = fdef.param_types
        if len(pts) != len(types):
            continue
        if all(types_match(p, t) if contains_any(p) else p == t for p, t in zip(pts, types)):
            return fdef.instance(tuple(types)).return_type
    sig = ", ".join(type_str(t) for t in types)
    raise TypeError(f"wp.map(): no overload of '{func.key}' accepts ({sig})")


def _broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"wp.map(): array shapes {shapes} cannot be broadcast together") from None


def _index_expr(shape: tuple[int, ...], out_ndim: int) -> str:
    """Index of one broadcast input at thread (t0, t1, ...): size-1 and missing leading dimensions read index 0."""
    lead = out_ndim - len(shape)
    parts = ["0" if n == 1 else f"t{lead + d}" for d, n in enumerate(shape)]
    return ", ".join(parts)


def _module_source(n_args: int, arrays: dict[int, str], ndim: int, n_out: int, name: str) -> str:
    params = [f"a{i}: Any" for i in range(n_args)] + [f"out{k}: Any" for k in range(n_out)]
    tids = ", ".join(f"t{d}" for d in range(ndim))
    call_args = ", ".join(f"a{i}[{arrays[i]}]" if i in arrays else f"a{i}" for i in range(n_args))
    lines = [
        "from typing import Any",
        "",
        "import treadle as wp",
        "",
        "F: Any = None  # the mapped function, set by treadle._src.lang.map",
        "",
        "",
        f"@wp.kernel(module={name!r})",
        f"def map_kernel({', '.join(params)}):",
        f"    {tids} = wp.tid()",
        f"    r = F({call_args})",
    ]
    if n_out == 1:
        lines.append(f"    out0[{tids}] = r")
    else:
        lines += [f"    out{k}[{tids}] = r[{k}]" for k in range(n_out)]
    return "\n".join(lines) + "\n"


def _kernel_for(func: Any, n_args: int, arrays: dict[int, str], ndim: int, n_out: int) -> Any:
    key = (id(func), n_args, tuple(sorted(arrays.items())), ndim, n_out)
    with _lock:
        k = _kernels.get(key)
        if k is not None:
            return k
        from ..runtime.cache import get_cache

        fname = getattr(func, "key", None) or getattr(func, "name", None) or getattr(func, "__name__", "f")
        fmod = getattr(func, "module", "") if getattr(func, "_treadle_function_", False) else "builtin"
        digest = hashlib.sha256(repr((fmod, fname, key[1:])).encode()).hexdigest()[:16]
        name = f"treadle_map_{digest}"
        src = _module_source(n_args, arrays, ndim, n_out, name)
        root = get_cache().root / "map"
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"{name}.py"
        if not path.exists() or path.read_text() != src:
            tmp = path.with_name(f"{path.name}.{id(src)}.tmp")
            tmp.write_text(src)
            tmp.replace(path)
        spec = importlib.util.spec_from_file_location(f"{name}_{id(func):x}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mod.__dict__["F"] = func
        k = mod.map_kernel
        _kernels[key] = k
        return k


def map(  # noqa: A001 - the reference API's name
    func: Callable[..., Any],
    *inputs: Any,
    out: Any = None,
    return_kernel: bool = False,
    block_dim: int = 256,
    device: Any = None,
) -> Any:
    """Apply ``func`` (a ``@wp.func`` or a builtin) elementwise over the array arguments.

    Array arguments (including indexed arrays) are broadcast together with NumPy's rules; other arguments are
    passed unchanged to every call. Results go to ``out`` (an array, or a list of arrays for functions that return
    a tuple) or to new arrays of the broadcast shape, which are returned. With ``return_kernel=True`` the generated
    kernel is returned instead (launch it with the inputs followed by the outputs).
    """
    arr_pos = [i for i, v in enumerate(inputs) if isinstance(v, array)]
    if not arr_pos:
        raise TypeError("wp.map() needs at least one array argument")
    dev = device if device is not None else inputs[arr_pos[0]].device
    shapes = [tuple(inputs[i].shape) for i in arr_pos]
    shape = _broadcast_shape(shapes)
    ndim = max(1, len(shape))
    if len(shape) == 0:
        shape = (1,)
    types = [_value_type(v) for v in inputs]
    ret = _return_type(func, types)
    if ret is None:
        raise TypeError("wp.map(): the function returns no value")
    rets = list(ret.types) if isinstance(ret, TupleT) else [ret]
    arrays = {i: _index_expr(tuple(inputs[i].shape), ndim) for i in arr_pos}
    kernel = _kernel_for(func, len(inputs), arrays, ndim, len(rets))
    if return_kernel:
        return kernel
    if out is None:
        outs = [array(shape=shape, dtype=t, device=dev) for t in rets]
    else:
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(outs) != len(rets):
            raise ValueError(f"wp.map(): the function returns {len(rets)} value(s) but {len(outs)} output(s) given")
        for o, t in zip(outs, rets):
            if tuple(o.shape) != shape or o.dtype != t:
                raise ValueError(f"wp.map(): out must be an array of shape {shape} and dtype {type_str(t)}, got "
                                 f"shape {tuple(o.shape)} and dtype {type_str(o.dtype)}")
    from .launch import launch

    launch(kernel, dim=shape, inputs=list(inputs), outputs=outs, device=dev, block_dim=block_dim)
    return outs[0] if len(outs) == 1 else outs


__all__: Sequence[str] = ["map"]
