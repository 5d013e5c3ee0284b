"""Matrix types: ``matrix(shape, dtype)`` and the aliases ``mat22`` ... ``mat44d``.

A matrix type is a ``ctypes.Array`` of ``rows * cols`` scalars in row-major order: the layout of
``treadle::mat_t<R, C, T>``. ``matrix(shape, dtype)`` is cached like :func:`~treadle._src.types.vector.vector`.

Class attributes: ``_shape_ = (rows, cols)``, ``_length_ = rows * cols``, ``_type_``, ``_wp_scalar_type_``,
``_wp_generic_type_str_ = "mat_t"``, ``_wp_type_params_ = [rows, cols, dtype]`` and ``_wp_row_type_`` (the vector
class of one row).

On the host, ``m[i]`` is a copy of row ``i`` (a vector), ``m[i, j]`` a component; ``len(m)`` and iteration go
over rows. ``*`` and ``@`` between matrices and vectors are matrix products (``v * m`` is ``v^T m``); ``*`` with a
scalar and ``+``/``-`` are component-wise.
"""

from __future__ import annotations

import builtins
import ctypes
import operator
from typing import Any

import numpy as np

from . import scalars
from .vector import (
    COMPOSITE_FACTORIES,
    SCALAR_SUFFIX,
    c_divide,
    cached_type,
    composite_base,
    flatten_values,
    is_number,
    make_composite_class,
    nested_to_numpy,
    normalize_scalar,
    scalar_operand,
    vec_base,
    vector,
)


def _is_index(k: Any) -> builtins.bool:
    return isinstance(k, (builtins.int, np.integer))


def _norm_index(k: Any, n: builtins.int, what: str) -> builtins.int:
    i = operator.index(k)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"matrix {what} index {k} out of range for {n} {what}s")
    return i


def _is_sequence(x: Any) -> builtins.bool:
    return isinstance(x, (composite_base, list, tuple, np.ndarray)) and not is_number(x)


class mat_base(composite_base):
    """Base class of all matrix types."""

    _type_ = ctypes.c_float
    _length_ = 0
    _shape_: tuple[builtins.int, builtins.int] = (0, 0)
    _wp_generic_type_str_ = "mat_t"
    _wp_row_type_: Any = None

    def __init__(self, *args: Any) -> None:
        rows, cols = self._shape_
        n = rows * cols
        if not args:
            return  # ctypes zero-initialises
        if len(args) == 1:
            a = args[0]
            values = [a] * n if is_number(a) else flatten_values(a)
        elif builtins.all(is_number(a) for a in args):
            values = list(args)
        elif len(args) == rows and builtins.all(_is_sequence(a) for a in args):
            values = []
            for row in args:
                row_values = flatten_values(row)
                if len(row_values) != cols:
                    raise TypeError(
                        f"Invalid argument in matrix constructor, expected row of length {cols}, got {row_values}"
                    )
                values.extend(row_values)
        else:
            values = flatten_values(args)
        if len(values) != n:
            raise ValueError(
                f"Invalid number of arguments in matrix constructor, expected {n} elements, got {len(values)}"
            )
        self._store(values)

    # -- indexing ---------------------------------------------------------------------------------------------
    def __len__(self) -> builtins.int:
        return self._shape_[0]

    def __iter__(self) -> Any:
        return iter([self._row(i) for i in range(self._shape_[0])])

    def _row(self, i: builtins.int) -> Any:
        row_t = self._wp_row_type_
        return row_t.from_buffer_copy(self, i * ctypes.sizeof(row_t))

    def _grid(self) -> np.ndarray:
        return self._to_numpy().reshape(self._shape_)

    def __getitem__(self, key: Any) -> Any:
        rows, cols = self._shape_
        if _is_index(key):
            return self._row(_norm_index(key, rows, "row"))
        if isinstance(key, tuple) and len(key) == 2 and _is_index(key[0]) and _is_index(key[1]):
            return self._get(_norm_index(key[0], rows, "row") * cols + _norm_index(key[1], cols, "column"))
        if not isinstance(key, (slice, tuple)):
            raise TypeError(f"matrix indices must be integers, slices or pairs of them, not {type(key).__name__}")
        part = self._grid()[key]
        st = self._wp_scalar_type_
        if part.ndim == 0:
            return part.item()
        if part.ndim == 1:
            return vector(part.shape[0], st)._from_numpy(part)
        if part.size == 0:  # an empty selection is the 0x0 matrix (in kernels too), as in the reference
            return matrix((0, 0), st)()
        return matrix(part.shape, st)._from_numpy(part)

    def __setitem__(self, key: Any, value: Any) -> None:
        rows, cols = self._shape_
        if isinstance(key, tuple) and len(key) == 2 and _is_index(key[0]) and _is_index(key[1]):
            self._set(_norm_index(key[0], rows, "row") * cols + _norm_index(key[1], cols, "column"), value)
            return
        if _is_index(key):
            i = _norm_index(key, rows, "row")
            values = [value] * cols if is_number(value) else flatten_values(value)
            if len(values) != cols:
                raise ValueError("Can only assign sequence of same size")
            for j, v in enumerate(values):
                self._set(i * cols + j, v)
            return
        if not isinstance(key, (slice, tuple)):
            raise TypeError(f"matrix indices must be integers, slices or pairs of them, not {type(key).__name__}")
        st = self._wp_scalar_type_
        src = nested_to_numpy(value)
        if not st._is_float_ and src.dtype.kind == "f":
            raise TypeError(f"Expected to assign `{st.__name__}` values but got floats instead")
        grid = self._grid()
        grid[key] = src
        data = np.ascontiguousarray(grid, dtype=st._np_)
        ctypes.memmove(ctypes.addressof(self), data.ctypes.data, data.nbytes)

    # -- rows and columns -------------------------------------------------------------------------------------
    def get_row(self, r: builtins.int) -> Any:
        """Row ``r`` as a vector (a copy)."""
        return self[r]

    def set_row(self, r: builtins.int, v: Any) -> None:
        """Overwrite row ``r`` with the components of ``v``."""
        self[r] = v

    def get_col(self, c: builtins.int) -> Any:
        """Column ``c`` as a vector (a copy)."""
        rows, cols = self._shape_
        c = _norm_index(c, cols, "column")
        return vector(rows, self._wp_scalar_type_)(*(self._get(i * cols + c) for i in range(rows)))

    def set_col(self, c: builtins.int, v: Any) -> None:
        """Overwrite column ``c`` with the components of ``v`` (or fill it with the number ``v``)."""
        rows, cols = self._shape_
        c = _norm_index(c, cols, "column")
        values = [v] * rows if is_number(v) else flatten_values(v)
        if len(values) != rows:
            raise ValueError(f"expected {rows} values for a column of {type(self).__name__}, got {len(values)}")
        for i, x in enumerate(values):
            self._set(i * cols + c, x)

    # -- printing -------------------------------------------------------------------------------------------------
    def _rows_text(self, fmt: Any) -> list[str]:
        rows, cols = self._shape_
        values = self._values()
        return ["[" + ", ".join(fmt(v) for v in values[i * cols : (i + 1) * cols]) + "]" for i in range(rows)]

    def __str__(self) -> str:
        return "[" + ",\n ".join(self._rows_text(str)) + "]"

    def __repr__(self) -> str:
        return f"{type(self).__name__}([" + ", ".join(self._rows_text(repr)) + "])"

    # -- comparison -------------------------------------------------------------------------------------------
    def __eq__(self, other: object) -> Any:
        if isinstance(other, mat_base):
            return other._shape_ == self._shape_ and self._values() == other._values()
        if isinstance(other, composite_base):
            return False
        if isinstance(other, (list, tuple, np.ndarray)):
            try:
                arr = nested_to_numpy(other)
            except (ValueError, TypeError):
                return False
            return arr.shape == self._shape_ and builtins.bool(np.all(arr == self._grid()))
        return NotImplemented

    # -- arithmetic -------------------------------------------------------------------------------------------
    def _check_same_scalar(self, other: Any, op: str) -> None:
        if other._wp_scalar_type_ is not self._wp_scalar_type_:
            raise TypeError(f"unsupported operand types for {op}: '{type(self).__name__}' and '{type(other).__name__}'")

    def _elementwise(self, other: Any, op: str, reflected: builtins.bool) -> Any:
        if isinstance(other, mat_base):
            self._check_same_scalar(other, op)
            if other._shape_ != self._shape_:
                raise TypeError(
                    f"unsupported operand types for {op}: '{type(self).__name__}' and '{type(other).__name__}'"
                )
            b = other._grid()
        elif is_number(other):
            b = scalar_operand(other, self._wp_scalar_type_, op, type(self).__name__)
        else:
            return NotImplemented
        a = self._grid()
        fn = operator.add if op == "+" else operator.sub
        with np.errstate(all="ignore"):
            return type(self)._from_numpy(fn(b, a) if reflected else fn(a, b))

    def __add__(self, other: Any) -> Any:
        return self._elementwise(other, "+", False)

    def __radd__(self, other: Any) -> Any:
        return self._elementwise(other, "+", True)

    def __sub__(self, other: Any) -> Any:
        return self._elementwise(other, "-", False)

    def __rsub__(self, other: Any) -> Any:
        return self._elementwise(other, "-", True)

    def _product(self, other: Any, op: str, reflected: builtins.bool) -> Any:
        """Matrix-matrix and matrix-vector products (``reflected``: ``other`` is on the left)."""
        st = self._wp_scalar_type_
        rows, cols = self._shape_
        if isinstance(other, mat_base):
            self._check_same_scalar(other, op)
            left, right = (other, self) if reflected else (self, other)
            if left._shape_[1] != right._shape_[0]:
                raise ValueError(
                    f"matrix shapes do not match for {op}: {left._shape_} and {right._shape_} "
                    f"({type(left).__name__} {op} {type(right).__name__})"
                )
            with np.errstate(all="ignore"):
                res = left._grid() @ right._grid()
            return matrix(res.shape, st)._from_numpy(res)
        if isinstance(other, vec_base):
            self._check_same_scalar(other, op)
            v = other._to_numpy()
            need = rows if reflected else cols
            if other._length_ != need:
                side = "left" if reflected else "right"
                raise ValueError(
                    f"cannot multiply {type(self).__name__} by a vector of length {other._length_} on the {side} "
                    f"(expected length {need})"
                )
            with np.errstate(all="ignore"):
                res = v @ self._grid() if reflected else self._grid() @ v
            return vector(res.shape[0], st)._from_numpy(res)
        return None

    def _scale(self, other: Any, op: str, reflected: builtins.bool) -> Any:
        if not is_number(other):
            return NotImplemented
        st = self._wp_scalar_type_
        b = scalar_operand(other, st, op, type(self).__name__)
        a = self._grid()
        if op == "*":
            with np.errstate(all="ignore"):
                return type(self)._from_numpy(a * b)
        is_int = not st._is_float_
        return type(self)._from_numpy(c_divide(b, a, is_int) if reflected else c_divide(a, b, is_int))

    def __mul__(self, other: Any) -> Any:
        res = self._product(other, "*", False)
        return self._scale(other, "*", False) if res is None else res

    def __rmul__(self, other: Any) -> Any:
        res = self._product(other, "*", True)
        return self._scale(other, "*", True) if res is None else res

    def __matmul__(self, other: Any) -> Any:
        res = self._product(other, "@", False)
        return NotImplemented if res is None else res

    def __rmatmul__(self, other: Any) -> Any:
        res = self._product(other, "@", True)
        return NotImplemented if res is None else res

    def __truediv__(self, other: Any) -> Any:
        return self._scale(other, "/", False)

    def __rtruediv__(self, other: Any) -> Any:
        return self._scale(other, "/", True)

    def __neg__(self) -> Any:
        with np.errstate(all="ignore"):
            return type(self)._from_numpy(-self._grid())

    def __pos__(self) -> Any:
        return type(self).from_buffer_copy(self)


def matrix_type_name(rows: builtins.int, cols: builtins.int, dtype: Any) -> str:
    """The class name of ``matrix((rows, cols), dtype)``: ``mat33f``, ``spatial_matrixd``, ``matrix(shape=...)``."""
    suffix = SCALAR_SUFFIX.get(dtype)
    if suffix is not None and rows <= 4 and cols <= 4:
        return f"mat{rows}{cols}{suffix}"
    if rows == 6 and cols == 6 and dtype in scalars.float_types:
        return f"spatial_matrix{suffix}"
    return f"matrix(shape=({rows}, {cols}), dtype={dtype.__name__})"


def matrix(shape: Any, dtype: Any) -> type[mat_base]:
    """The matrix type of ``shape = (rows, cols)`` and scalar type ``dtype`` (cached: same arguments, same class)."""
    from .typesys import GenericComposite, scalar_category

    if dtype is Any or scalar_category(dtype) is not None or (isinstance(shape, (tuple, list))
                                                              and any(d is Any for d in shape)):
        dt = normalize_scalar(dtype) if dtype is not Any and scalar_category(dtype) is None else dtype
        return GenericComposite("mat_t", tuple(shape), dt)  # type: ignore[return-value]
    try:
        rows, cols = (operator.index(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"matrix shape must be a pair (rows, cols) of integers, got {shape!r}") from None
    if rows < 0 or cols < 0:
        raise ValueError(f"matrix dimensions must not be negative, got {(rows, cols)}")
    dtype = normalize_scalar(dtype)

    def make() -> type:
        return make_composite_class(
            matrix_type_name(rows, cols, dtype),
            mat_base,
            rows * cols,
            dtype,
            {
                "_shape_": (rows, cols),
                "_wp_type_params_": [rows, cols, dtype],
                "_wp_row_type_": vector(cols, dtype),
            },
        )

    return cached_type(("mat", rows, cols, dtype), make)


def _vectors_dtype(vecs: tuple[Any, ...], what: str) -> tuple[Any, builtins.int]:
    if not vecs:
        raise ValueError(f"{what} needs at least one vector")
    first = vecs[0]
    st = first._wp_scalar_type_ if isinstance(first, vec_base) else scalars.float32
    length = len(first)
    for v in vecs:
        if isinstance(v, vec_base) and v._wp_scalar_type_ is not st:
            raise TypeError(f"{what}: all vectors must have the same scalar type")
        if len(v) != length:
            raise ValueError(f"{what}: all vectors must have the same length")
    return st, length


def matrix_from_rows(*rows: Any) -> Any:
    """A matrix whose rows are the given vectors (all of the same length and scalar type)."""
    st, length = _vectors_dtype(rows, "matrix_from_rows")
    data = np.array([flatten_values(r) for r in rows], dtype=st._np_)
    return matrix((len(rows), length), st)._from_numpy(data)


def matrix_from_cols(*cols: Any) -> Any:
    """A matrix whose columns are the given vectors (all of the same length and scalar type)."""
    st, length = _vectors_dtype(cols, "matrix_from_cols")
    data = np.array([flatten_values(c) for c in cols], dtype=st._np_).T
    return matrix((length, len(cols)), st)._from_numpy(data)


def identity(n: builtins.int, dtype: Any) -> Any:
    """The ``n x n`` identity matrix of scalar type ``dtype``."""
    st = normalize_scalar(dtype)
    n = operator.index(n)
    return matrix((n, n), st)._from_numpy(np.eye(n, dtype=st._np_))


mat22h = matrix((2, 2), scalars.float16)
mat33h = matrix((3, 3), scalars.float16)
mat44h = matrix((4, 4), scalars.float16)
mat22f = matrix((2, 2), scalars.float32)
mat33f = matrix((3, 3), scalars.float32)
mat44f = matrix((4, 4), scalars.float32)
mat22d = matrix((2, 2), scalars.float64)
mat33d = matrix((3, 3), scalars.float64)
mat44d = matrix((4, 4), scalars.float64)
mat22 = mat22f
mat33 = mat33f
mat44 = mat44f


matrix._treadle_type_factory_ = "matrix"  # type: ignore[attr-defined]  # callable in kernels (lower_call.py)
COMPOSITE_FACTORIES["mat"] = lambda rows, cols, dtype: matrix((rows, cols), dtype)  # unpickling (class_from_key)
