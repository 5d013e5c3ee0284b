"""Indexed arrays: an array seen through per-dimension index tables (``wp.indexedarray``).

``indexedarray(data, [idx0, None, idx2])`` selects, along each dimension, the elements listed in an ``int32`` index
array (``None`` keeps the whole dimension). No data is copied: kernels read and write the underlying array through
the tables (``native/indexedarray.h``), and gradients flow into the underlying array's ``grad``.

``indexedarray(dtype=..., ndim=...)`` (no data) and ``indexedarray[float, Literal[2]]`` are kernel parameter
annotations, like the ones of :class:`~treadle._src.lang.array.array`.

The class derives from :class:`array` so that launches pack it like any array argument (its ``__ctype__`` is the
larger :class:`~treadle._src.core.abi.IndexedArrayDesc`); it overrides every operation that would read its memory
as a strided block.
"""

from __future__ import annotations

import ctypes
import math
import typing
from typing import Any

import numpy as np

from ..core import abi
from ..types import scalars
from .array import array, inner_shape, normalize_dtype, numpy_scalar_dtype, type_name, value_bytes

MAX_DIMS = abi.MAX_DIMS


def _as_index_array(idx: Any, data: array, dim: int) -> array:
    """An ``int32`` 1-d contiguous array on ``data``'s device holding the indices of one dimension."""
    if isinstance(idx, array):
        if idx._is_annotation or idx.ndim != 1:
            raise ValueError(f"indexedarray: the indices of dimension {dim} must be a 1-d array")
        if idx.dtype is scalars.int32 and idx.is_contiguous and idx.device == data.device:
            return idx
        values = idx.numpy()
    else:
        values = np.asarray(idx)
        if values.ndim != 1:
            raise ValueError(f"indexedarray: the indices of dimension {dim} must be one-dimensional")
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"indexedarray: the indices of dimension {dim} must be integers, got {values.dtype}")
    return array(np.ascontiguousarray(values, dtype=np.int32), dtype=scalars.int32, device=data.device)


class indexedarray(array):  # noqa: N801 (the reference API's name)
    """An array viewed through index arrays, one per dimension (``None``: the whole dimension).

    ``wp.indexedarray(arr, [rows, None])`` is the 2-d array ``arr[rows[i], j]``; without data it is a kernel
    parameter annotation (``wp.indexedarray(dtype=float, ndim=2)`` or ``wp.indexedarray[float, Literal[2]]``).
    Kernels index, assign, update atomically and take ``len``/``shape`` of it like an array.
    """

    _indexed_ = True
    _default_ndim = 1

    def __init__(self, data: Any = None, indices: Any = None, dtype: Any = Any, ndim: int | None = None) -> None:
        self._reset_fields()
        self.data: array | None = None
        self.indices: list[array | None] = []
        self._idesc: abi.IndexedArrayDesc | None = None
        if data is None:
            self._init_annotation(normalize_dtype(dtype, annotation=True), ndim)
            return
        if not isinstance(data, array) or data._is_annotation or isinstance(data, indexedarray):
            raise TypeError(f"indexedarray: data must be a concrete array, got {type(data).__name__}")
        if ndim is not None and int(ndim) != data.ndim:
            raise ValueError(f"indexedarray: ndim={ndim} does not match the data's {data.ndim} dimension(s)")
        if dtype is not Any and normalize_dtype(dtype) != data.dtype:
            raise TypeError(f"indexedarray: dtype {type_name(dtype)} does not match the data's "
                            f"{type_name(data.dtype)}")
        if indices is None:
            indices = []
        elif isinstance(indices, array) or not isinstance(indices, (list, tuple)):
            indices = [indices]
        if len(indices) > data.ndim:
            raise ValueError(f"indexedarray: {len(indices)} index arrays for a {data.ndim}-d array")
        tables: list[array | None] = [None if ix is None else _as_index_array(ix, data, d)
                                      for d, ix in enumerate(indices)]
        tables += [None] * (data.ndim - len(tables))
        self.data = data
        self.indices = tables
        self.dtype = data.dtype
        self.ndim = data.ndim
        self.shape = tuple(t.shape[0] if t is not None else n for t, n in zip(tables, data.shape))
        self.size = math.prod(self.shape)
        self.device = data.device
        self.pinned = data.pinned
        self.ptr = data.ptr
        self._owner = data

    def __class_getitem__(cls, params: Any) -> indexedarray:  # type: ignore[override]
        """``wp.indexedarray[float]`` / ``wp.indexedarray[float, Literal[2]]``: a kernel parameter annotation."""
        if not isinstance(params, tuple):
            params = (params,)
        ndim = cls._default_ndim
        if len(params) > 1:
            lit = typing.get_args(params[1])
            ndim = int(lit[0]) if lit else int(params[1])
        return indexedarray(dtype=params[0], ndim=ndim)

    # -- native descriptor --------------------------------------------------------------------------------------

    def __ctype__(self) -> abi.IndexedArrayDesc:  # type: ignore[override]
        """The native ``indexedarray_t`` descriptor (rebuilt when the data's gradient changes)."""
        if self._is_annotation or self.data is None:
            raise TypeError("An indexedarray annotation has no storage; pass a concrete indexedarray")
        inner = self.data.__ctype__()
        desc = self._idesc
        if desc is None or desc.arr.grad != inner.grad:
            desc = abi.IndexedArrayDesc()
            ctypes.memmove(ctypes.addressof(desc.arr), ctypes.addressof(inner), ctypes.sizeof(inner))
            for d in range(self.ndim):
                t = self.indices[d]
                desc.indices[d] = (t.ptr or 0) if t is not None else 0
                desc.shape[d] = self.shape[d]
            self._idesc = desc
        return desc

    # -- properties ---------------------------------------------------------------------------------------------

    @property
    def is_contiguous(self) -> bool:
        """Always ``False``: the selected elements are scattered in the underlying array."""
        return False

    @property
    def requires_grad(self) -> bool:
        """Whether the underlying array has a gradient (kernel adjoints accumulate into it)."""
        return bool(self.data is not None and self.data.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.data is not None:
            self.data.requires_grad = value
            self._idesc = None

    @property
    def grad(self) -> array | None:
        """The underlying array's gradient seen through the same index tables, or ``None``."""
        if self.data is None or self.data.grad is None:
            return None
        return indexedarray(self.data.grad, list(self.indices))

    @grad.setter
    def grad(self, value: Any) -> None:
        raise AttributeError("indexedarray.grad is read-only: set the gradient of the underlying array")

    # -- host access --------------------------------------------------------------------------------------------

    def _selector(self) -> tuple[Any, ...]:
        """The NumPy advanced index selecting this array's elements from the data's NumPy view."""
        assert self.data is not None
        ranges = [t.numpy().astype(np.intp) if t is not None else np.arange(n, dtype=np.intp)
                  for t, n in zip(self.indices, self.data.shape)]
        return np.ix_(*ranges)

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the selected elements (shape ``self.shape`` plus the element's inner shape)."""
        if self._is_annotation or self.data is None:
            return super().numpy()
        if self.size == 0:
            return np.empty(self.shape + inner_shape(self.dtype), dtype=numpy_scalar_dtype(self.dtype))
        return np.array(self.data.numpy()[self._selector()], copy=True)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    @property
    def __array_interface__(self) -> dict[str, Any]:  # type: ignore[override]
        raise AttributeError("indexedarray has no array interface: use .numpy() for a copy")

    def _write(self, values: np.ndarray) -> None:
        """Store ``values`` (broadcast to the selection) into the selected elements of the data."""
        assert self.data is not None
        if self.size == 0:
            return
        if self.data.device.allocator.host_accessible:
            self.data.numpy()[self._selector()] = values
            return
        host = self.data.numpy()
        host[self._selector()] = values
        self.data.assign(host)

    def zero_(self) -> None:
        """Set the selected elements to zero."""
        self._check_concrete("zero_()")
        npdt = numpy_scalar_dtype(self.dtype)
        self._write(np.zeros(inner_shape(self.dtype), dtype=npdt))

    def fill_(self, value: Any) -> None:
        """Set every selected element to ``value``."""
        self._check_concrete("fill_()")
        elem = value_bytes(value, self.dtype)
        if self.size == 0:
            return
        npdt = numpy_scalar_dtype(self.dtype)
        self._write(np.frombuffer(elem.tobytes(), dtype=npdt).reshape(inner_shape(self.dtype)))

    def assign(self, src: Any) -> None:
        """Copy ``src`` (an array, indexed array, NumPy array or list) into the selected elements."""
        self._check_concrete("assign()")
        if isinstance(src, array):
            values = src.numpy()
        else:
            values = np.asarray(array(src, dtype=self.dtype, device="cpu").numpy())
        want = self.shape + inner_shape(self.dtype)
        if values.shape != want:
            if values.size != math.prod(want):
                raise ValueError(f"assign(): shape mismatch: destination shape {self.shape}, source shape "
                                 f"{values.shape[:self.ndim]}")
            values = values.reshape(want)
        self._write(values)

    def contiguous(self) -> array:
        """A new contiguous array holding a copy of the selected elements."""
        self._check_concrete("contiguous()")
        out = array(shape=self.shape, dtype=self.dtype, device=self.device)
        if self.size:
            out.assign(self.numpy())
        return out

    def __getitem__(self, key: Any) -> Any:
        raise TypeError("indexedarray does not support indexing in Python scope; use .numpy() or index the data")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("indexedarray does not support item assignment in Python scope; use assign() or fill_()")

    def _no_view(self, *args: Any, **kwargs: Any) -> Any:
        """Not available on an indexed array (no strided views); take ``contiguous()`` first."""
        raise TypeError("indexedarray has no strided views (reshape/view/transpose/flatten); call .contiguous()")

    reshape = flatten = view = transpose = _no_view  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._is_annotation:
            return f"indexedarray(ndim={self.ndim}, dtype={type_name(self.dtype)})"
        return f"indexedarray(shape={self.shape}, dtype={type_name(self.dtype)})"


def _fixed_ndim(n: int) -> type:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> indexedarray:  # noqa: N807
        if len(args) < 4 and "ndim" not in kwargs:
            kwargs["ndim"] = n
        return indexedarray(*args, **kwargs)

    doc = f"A {n}-D indexed array: ``indexedarray{n}d(data, [indices...])`` or an annotation without data."
    return type(f"indexedarray{n}d", (indexedarray,), {"__new__": __new__, "_default_ndim": n, "__doc__": doc})


indexedarray1d = _fixed_ndim(1)
indexedarray2d = _fixed_ndim(2)
indexedarray3d = _fixed_ndim(3)
indexedarray4d = _fixed_ndim(4)


def index_with_arrays(data: array, key: tuple[Any, ...]) -> array:
    """``data[key]`` where some entries of ``key`` are index arrays: an :class:`indexedarray`.

    Slices are applied to the data first; integers drop their dimension.
    """
    sliced: list[Any] = []
    tables: list[Any] = []
    for k in key:
        if isinstance(k, array):
            sliced.append(slice(None))
            tables.append(k)
        elif isinstance(k, slice):
            sliced.append(k)
            tables.append(None)
        else:
            sliced.append(k)
    base = data[tuple(sliced)] if any(s != slice(None) for s in sliced) else data
    return indexedarray(base, tables)
