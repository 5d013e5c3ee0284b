"""What the type layer knows of arrays: the array protocol, and element-type (dtype) helpers.

Layers below the public front never import the array class (``lang/array.py``). An object is an array, or an array
annotation such as ``wp.array(dtype=float)``, when its class says so with ``_treadle_array_ = True``
(:func:`is_array_object`). The front end registers its class with :func:`register_array_class`, so that the layers
below can make array views (a struct's array field read back from memory, a NumPy argument wrapped for a launch)
through :func:`array_class` without importing it.

The dtype helpers describe element types: scalar classes (``scalars.py``), vector/matrix/quaternion/transform
classes (ctypes arrays with ``_shape_`` and ``_wp_scalar_type_``) and structs (objects with ``numpy_dtype()`` and
``ctype``). A composite element appears in NumPy as extra trailing dimensions; a struct element as one record.
"""

from __future__ import annotations

import ctypes
import math
import operator
import typing
from typing import Any

import numpy as np

from ..core.abi import MAX_DIMS
from . import scalars

# ---------------------------------------------------------------------------------------------------------------
# the array protocol
# ---------------------------------------------------------------------------------------------------------------

_ARRAY_CLASS: Any = None


def is_array_object(x: Any) -> bool:
    """True for arrays and array annotations: instances of a class marked ``_treadle_array_ = True``."""
    return getattr(type(x), "_treadle_array_", False) is True


def register_array_class(cls: type) -> None:
    """Make ``cls`` the class :func:`array_class` returns (the front end's ``array``, registered at its import)."""
    global _ARRAY_CLASS
    if getattr(cls, "_treadle_array_", False) is not True:
        raise TypeError(f"{cls.__name__} does not declare the array protocol (_treadle_array_ = True)")
    _ARRAY_CLASS = cls


def array_class() -> Any:
    """The registered array class (raises when the front end has not been imported)."""
    if _ARRAY_CLASS is None:
        raise RuntimeError("no array class is registered: import treadle first")
    return _ARRAY_CLASS


# ---------------------------------------------------------------------------------------------------------------
# dtype helpers
# ---------------------------------------------------------------------------------------------------------------


def is_composite_type(t: Any) -> bool:
    """True for vector, matrix, quaternion and transform types."""
    return isinstance(t, type) and getattr(t, "_shape_", None) is not None and hasattr(t, "_wp_scalar_type_")


def is_struct_type(t: Any) -> bool:
    """True for struct types (objects with ``numpy_dtype()`` and ``ctype``)."""
    return hasattr(t, "numpy_dtype") and hasattr(t, "ctype")


def _is_generic(t: Any) -> bool:
    # Placeholders that only make sense in annotations (typing.Any, TypeVars, Treadle's generic Float/Int ...).
    if t is Any or isinstance(t, typing.TypeVar):
        return True
    return str(getattr(t, "__module__", "")).startswith("treadle")


def normalize_dtype(dtype: Any, annotation: bool = False) -> Any:
    """The Treadle element type for ``dtype``: Python ``float``/``int``/``bool`` and NumPy dtypes map to scalars.

    Raises:
        TypeError: ``dtype`` is not an element type (generic placeholders are accepted for annotations only).
    """
    if dtype is Any or dtype is None:  # None: infer from the data, as Any does
        return Any
    dtype = scalars.scalar_from_python(dtype)
    if scalars.is_scalar_type(dtype) or is_composite_type(dtype) or is_struct_type(dtype):
        return dtype
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        found = scalars.scalar_from_numpy(dtype)
        if found is not None:
            return found
    if annotation and _is_generic(dtype):
        return dtype
    raise TypeError(
        f"Invalid data type: {dtype!r}. Use a scalar type (wp.float32, wp.int32, ..., or float/int/bool), "
        "a vector/matrix type (wp.vec3, wp.mat33, wp.quat, wp.transform, ...) or a @wp.struct class"
    )


def type_name(dtype: Any) -> str:
    """Short display name of an element type (``float32``, ``vec3f``, ``module.MyStruct``)."""
    if dtype is Any:
        return "Any"
    if is_struct_type(dtype):
        cls = getattr(dtype, "cls", None)
        if cls is not None:
            return f"{cls.__module__}.{cls.__qualname__}"
        return str(getattr(dtype, "key", None) or getattr(dtype, "__name__", None) or dtype)
    return str(getattr(dtype, "__name__", dtype))


def elem_size(dtype: Any) -> int:
    """Size in bytes of one element of ``dtype``."""
    if is_struct_type(dtype):
        return ctypes.sizeof(dtype.ctype)
    if is_composite_type(dtype):
        return math.prod(dtype._shape_) * ctypes.sizeof(dtype._wp_scalar_type_._type_)
    if scalars.is_scalar_type(dtype):
        return ctypes.sizeof(dtype._type_)
    raise TypeError(
        f"A concrete type is required, got dtype={type_name(dtype)}; pass dtype=wp.float32 (or another type)"
    )


def inner_shape(dtype: Any) -> tuple[int, ...]:
    """Extra trailing NumPy dimensions of one element: ``_shape_`` for vectors/matrices, ``()`` otherwise."""
    return tuple(dtype._shape_) if is_composite_type(dtype) else ()


def numpy_scalar_dtype(dtype: Any) -> np.dtype:
    """NumPy dtype of the stored values: the scalar dtype (composites), or the structured dtype (structs)."""
    if is_struct_type(dtype):
        return np.dtype(dtype.numpy_dtype())
    if is_composite_type(dtype):
        return np.dtype(dtype._wp_scalar_type_._np_)
    return np.dtype(dtype._np_)


def types_equal(a: Any, b: Any) -> bool:
    """True if two element types have the same layout and meaning."""
    if a is b:
        return True
    if is_composite_type(a) and is_composite_type(b):
        return (
            tuple(a._shape_) == tuple(b._shape_)
            and a._wp_scalar_type_ is b._wp_scalar_type_
            and getattr(a, "_wp_generic_type_str_", None) == getattr(b, "_wp_generic_type_str_", None)
        )
    return False


def dtype_from_numpy(numpy_dtype: Any) -> Any:
    """The scalar type for a NumPy dtype (``np.float32`` -> ``wp.float32``)."""
    found = scalars.scalar_from_numpy(numpy_dtype)
    if found is None:
        raise TypeError(
            f"Cannot convert {numpy_dtype} to a Treadle type: supported are bool, (u)int8..64, float16/32/64"
        )
    return found


def dtype_to_numpy(dtype: Any) -> Any:
    """The NumPy scalar type for a scalar type (``wp.float16`` -> ``np.float16``)."""
    t = scalars.scalar_from_python(dtype)
    if not scalars.is_scalar_type(t):
        raise TypeError(f"Cannot convert {type_name(dtype)} to a NumPy type: only scalar types have one")
    return t._np_.type


# ---------------------------------------------------------------------------------------------------------------
# value conversion
# ---------------------------------------------------------------------------------------------------------------


def _composite_numpy(value: Any) -> np.ndarray:
    t = type(value)
    return np.frombuffer(bytes(value), dtype=t._wp_scalar_type_._np_).reshape(t._shape_).copy()


def _first_leaf(value: Any) -> Any:
    while isinstance(value, (list, tuple)) and len(value) > 0:
        value = value[0]
    return value


def to_numpy(data: Any) -> np.ndarray:
    """Convert arrays, lists (also of vectors/matrices/scalar objects) and buffers to a NumPy array."""
    if isinstance(data, np.ndarray):
        return data
    if is_array_object(data):
        return data.numpy()
    if is_composite_type(type(data)):
        return _composite_numpy(data)
    if isinstance(data, scalars.scalar_base):
        return np.asarray(data.value, dtype=type(data)._np_)
    if isinstance(data, (list, tuple)):
        leaf = _first_leaf(data)
        if (is_composite_type(type(leaf)) or isinstance(leaf, (scalars.scalar_base, np.ndarray))
                or is_array_object(leaf)):
            try:
                return np.stack([to_numpy(v) for v in data]) if len(data) else np.zeros(0)
            except ValueError as e:
                raise ValueError(f"Failed to convert the input data to an array: {e}") from None
    try:
        result = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"Failed to convert the input data to an array (ragged nested lists?): {e}") from None
    if result.dtype == object:
        raise TypeError(f"Unsupported input data: cannot convert {type(data).__name__} of mixed objects to an array")
    return result


def _struct_records(data: Any, dtype: Any) -> np.ndarray:
    """Structured NumPy array from (nested lists of) struct instances or a structured NumPy array."""
    npdt = numpy_scalar_dtype(dtype)
    if isinstance(data, np.ndarray):
        if data.dtype.itemsize != npdt.itemsize or data.dtype.kind != "V":
            raise TypeError(f"Cannot make an array of struct {type_name(dtype)} from NumPy data of dtype {data.dtype}")
        return data.view(npdt)
    if is_array_object(data):
        return _struct_records(data.numpy(), dtype)
    shape: list[int] = []
    level = data
    while isinstance(level, (list, tuple)):
        shape.append(len(level))
        level = level[0] if len(level) else None
    flat: list[Any] = []

    def walk(x: Any, depth: int) -> None:
        if depth == len(shape):
            flat.append(struct_value_bytes(x, dtype))
            return
        if not isinstance(x, (list, tuple)) or len(x) != shape[depth]:
            raise ValueError("Ragged nested lists cannot be converted to an array of structs")
        for y in x:
            walk(y, depth + 1)

    walk(data, 0)
    if not shape:
        raise TypeError(f"Data must be a sequence or array of {type_name(dtype)} instances")
    return np.frombuffer(b"".join(flat), dtype=npdt).reshape(shape)


def struct_value_bytes(value: Any, dtype: Any) -> bytes:
    """The raw bytes of struct instance ``value`` (checked to be of type ``dtype``)."""
    get = getattr(value, "__ctype__", None)
    c = get() if get is not None else None
    if c is None or type(c) is not dtype.ctype:
        raise ValueError(
            f"Failed to convert the value to the array data type: expected an instance of struct "
            f"{type_name(dtype)}, got {type(value).__name__}"
        )
    return bytes(c)


def _fit_inner(arr: np.ndarray, dtype: Any) -> np.ndarray:
    """Reshape ``arr`` so that its trailing dimensions are the element shape of a composite ``dtype``."""
    ishape = inner_shape(dtype)
    if not ishape:
        return arr
    k = len(ishape)
    s = arr.shape
    if len(s) >= k and s[len(s) - k :] == ishape:
        return arr if len(s) > k else arr.reshape((1, *ishape))
    while len(s) > 1 and s[-1] == 1:  # tolerate trailing unit dimensions, e.g. (N, 3, 1)
        s = s[:-1]
    if len(s) >= k and s[len(s) - k :] == ishape:
        return arr.reshape(s if len(s) > k else (1, *s))
    n = math.prod(ishape)
    if len(s) >= 1 and s[-1] % n == 0:
        count = s[-1] // n  # a last dimension of exactly one element's values is consumed, e.g. (N, 4) -> N mat22
        outer = (*s[:-1], count) if count != 1 or len(s) == 1 else s[:-1]
        return arr.reshape((*outer, *ishape))
    kind = "matrix" if k == 2 else "vector"
    raise ValueError(
        f"The inner dimensions of the input data (shape {arr.shape}) are not compatible with the requested {kind} "
        f"type {type_name(dtype)}: expected trailing dimensions {ishape} or a last dimension that is a multiple of {n}"
    )


def value_bytes(value: Any, dtype: Any) -> np.ndarray:
    """One element of type ``dtype`` made from ``value``, as a NumPy array of the stored values.

    Scalars give a 0-d array, composites an array of shape ``_shape_``, structs a 1-element structured array.
    """
    name = type_name(dtype)
    if is_struct_type(dtype):
        return np.frombuffer(struct_value_bytes(value, dtype), dtype=numpy_scalar_dtype(dtype))
    npdt = numpy_scalar_dtype(dtype)
    if isinstance(value, scalars.scalar_base):
        value = value.value
    if scalars.is_scalar_type(dtype):
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.reshape(()).item()
        ok_int = isinstance(value, (int, np.integer, np.bool_))
        ok = ok_int or (isinstance(value, (float, np.floating)) and not dtype._is_int_ and dtype is not scalars.bool)
        if not ok:
            raise ValueError(
                f"Failed to convert the value to the array data type {name}: expected "
                f"{'an integer' if dtype._is_int_ else 'a number'}, got {type(value).__name__}"
            )
        return np.asarray(np.array(value).astype(npdt))
    ishape = inner_shape(dtype)
    if isinstance(value, (int, float, np.number, np.bool_)):
        return np.full(ishape, value).astype(npdt)
    try:
        arr = to_numpy(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"Failed to convert the value to the array data type {name}: {e}") from None
    if (arr.dtype.kind not in "biuf" and arr.dtype != scalars.bfloat16._np_) or arr.size != math.prod(ishape):
        raise ValueError(
            f"Failed to convert the value to the array data type {name}: expected {math.prod(ishape)} numbers "
            f"(shape {ishape}), got {arr.dtype} data of shape {arr.shape}"
        )
    return arr.reshape(ishape).astype(npdt)


def normalize_shape(shape: Any, allow_infer: bool = False) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, checked (1 to 4 dimensions, non-negative; ``-1`` if ``allow_infer``)."""
    if isinstance(shape, (int, np.integer)):
        dims: tuple[int, ...] = (operator.index(shape),)
    else:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if len(dims) > MAX_DIMS:
        raise ValueError(f"Failed to create array with shape {dims}: the maximum number of dimensions is {MAX_DIMS}")
    if len(dims) == 0:
        raise ValueError("Arrays need at least one dimension; use shape=(1,) for a single element")
    for i, d in enumerate(dims):
        if d < 0 and not (allow_infer and d == -1):
            raise ValueError(f"Array shapes must be non-negative, got {d} in dimension {i}")
    return dims


def contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """C-order byte strides for ``shape``."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 0:
            return True
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    if math.prod(shape) == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + itemsize
