"""``@struct``: user-defined value types with a C layout.

::

    @wp.struct
    class Particle:
        pos: wp.vec3
        mass: float = 1.0
        neighbors: wp.array(dtype=int)

``struct(cls)`` returns a :class:`Struct` (the type). Fields come from the class annotations, in order: scalars
(``float`` is float32, ``int`` int32, ``bool``), vectors/matrices/quaternions/transforms, nested structs and arrays.
The layout is a ``ctypes.Structure`` (:attr:`Struct.ctype`) that matches the C++ struct the emitter writes, and
:meth:`Struct.numpy_dtype` describes the same bytes to NumPy so that arrays of structs can be read and written.

Calling the type makes an instance (:class:`StructInstance`): fields start at zero, or at the class-level default
values. Instances keep their values in the ctypes structure (the single source of truth), convert on assignment,
and keep references to assigned arrays so that :meth:`StructInstance.__ctype__` can refresh their descriptors
(pointers, ``grad``) before a launch. Methods defined on the user's class work on instances.
"""

from __future__ import annotations

import builtins
import ctypes
import hashlib
import importlib
import operator
import pickle
import re
import sys
import typing
from typing import Any

import numpy as np

from ..core import abi
from . import scalars
from .arrays import array_class, is_array_object
from .typesys import ArrayT
from .vector import composite_base, decode_half, encode_half, is_number


def is_array_like(t: Any) -> builtins.bool:
    """True for array annotations and arrays (the array protocol of ``arrays.py``, or objects shaped like one).

    The compiler's :class:`~.typesys.ArrayT` is an array annotation too: layers that cannot import the array class
    declare array fields with it.
    """
    if isinstance(t, type):
        return False
    if is_array_object(t) or isinstance(t, ArrayT):
        return True
    return hasattr(t, "ndim") and hasattr(t, "dtype") and hasattr(t, "__ctype__")


def _indexed(t: Any) -> builtins.bool:
    """Whether an array annotation (or array) is an indexed array."""
    return bool(t.indexed) if isinstance(t, ArrayT) else bool(getattr(t, "_indexed_", False))


def _field_kind(t: Any) -> str | None:
    if scalars.is_scalar_type(t):
        return "scalar"
    if isinstance(t, type) and issubclass(t, composite_base):
        return "composite"
    if isinstance(t, Struct):
        return "struct"
    if is_array_like(t):
        return "array"
    return None


def _type_signature(t: Any) -> str:
    """A stable text description of a field type (hashed into :attr:`Struct.hash`)."""
    if scalars.is_scalar_type(t):
        return str(t.__name__)
    if isinstance(t, type) and issubclass(t, composite_base):
        params = ",".join(p.__name__ if isinstance(p, type) else str(p) for p in t._wp_type_params_)
        return f"{t._wp_generic_type_str_}({params})"
    if isinstance(t, Struct):
        return f"struct {t.key} {t.hash}"
    if is_array_like(t):
        kind = "indexedarray" if _indexed(t) else "array"
        return f"{kind}(ndim={t.ndim}, dtype={_type_signature(scalars.scalar_from_python(t.dtype))})"
    return repr(t)


def _array_desc_type(t: Any) -> Any:
    """The ctypes descriptor of an array field (indexed arrays have the larger one)."""
    return abi.IndexedArrayDesc if _indexed(t) else abi.ArrayDesc


def _type_name(t: Any) -> str:
    if isinstance(t, Struct):
        return t.key
    if is_array_like(t):
        dt = scalars.scalar_from_python(t.dtype)
        kind = "indexedarray" if _indexed(t) else "array"
        return f"{kind}(ndim={t.ndim}, dtype={_type_name(dt)})"
    return str(getattr(t, "__name__", t))


def _resolve_annotation(cls: type, name: str, ann: Any, scope: dict[str, Any] | None) -> Any:
    if isinstance(ann, str):  # ``from __future__ import annotations``
        module = sys.modules.get(cls.__module__)
        namespace = dict(vars(module)) if module is not None else {}
        namespace.update(scope or {})  # globals and locals where the decorator ran
        namespace.update(vars(cls))
        try:
            ann = eval(ann, namespace)  # noqa: S307 - evaluating the user's own annotation, as typing does
        except Exception as e:
            raise TypeError(
                f"Struct '{cls.__qualname__}' field '{name}': cannot resolve annotation {ann!r} ({e})"
            ) from None
    return scalars.scalar_from_python(ann)


def annotation_union(a: Any, b: Any) -> Any:
    """``a | b`` for Treadle type objects that are instances rather than classes (structs, array annotations).

    Python's ``X | None`` works only on classes; these give ``typing.Union[a, b]``, which annotations of Python
    functions and dataclasses (``def f(x: wp.array(dtype=float) | None = None)``) evaluate to.
    """
    return typing.Union[a, b]


class Struct:
    """A ``@struct`` type: field types, the ctypes layout, and the instance factory.

    Attributes:
        key: the qualified class name.
        cls: the user's class.
        module: the ``module=`` argument of :func:`struct` (the class's module name when not given).
        vars: field name -> type, in declaration order (Python ``int``/``float``/``bool`` mapped to scalars).
        ctype: the ``ctypes.Structure`` subclass with the same layout as the generated C++ struct.
        hash: hex digest of the field names and types (stable across processes).
        native_name: C++-safe unique identifier of the struct (``S_Name_1a2b3c4d``).
        instance_type: the class of instances (derives from the user's class and :class:`StructInstance`).
    """

    def __init__(self, cls: type, module: Any = None, _scope: dict[str, Any] | None = None) -> None:
        if not isinstance(cls, type):
            raise RuntimeError(f"'{cls}' derives from a @wp.struct: structs cannot inherit from one another; "
                               "they must be defined as base classes (list the fields again, or nest the struct "
                               "as a field)")
        if any(b is not object for b in cls.__bases__):
            raise RuntimeError(f"@wp.struct '{cls.__qualname__}' derives from another class: structs must be "
                               "defined as base classes (nest the other struct as a field instead)")
        self.cls = cls
        self.key = cls.__qualname__
        self.module = module if module is not None else cls.__module__
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__module__ = cls.__module__
        self.__doc__ = cls.__doc__

        self.vars: dict[str, Any] = {}
        self._kinds: dict[str, str] = {}
        for name, ann in cls.__dict__.get("__annotations__", {}).items():
            t = _resolve_annotation(cls, name, ann, _scope)
            if t is typing.Any or isinstance(t, typing.TypeVar):
                raise TypeError(
                    f"Struct '{self.key}' field '{name}' is generic ({t!r}); struct fields need concrete types"
                )
            kind = _field_kind(t)
            if kind is None:
                raise TypeError(
                    f"Struct '{self.key}' field '{name}' has unsupported type {ann!r}; use a scalar (float, int, "
                    "bool, wp.float32, ...), a vector/matrix/quat/transform type, a @wp.struct or a wp.array(...)"
                )
            if kind == "array" and (t.dtype is typing.Any or t.dtype is None):
                raise TypeError(f"Struct '{self.key}' field '{name}': array fields need a concrete dtype")
            self.vars[name] = t
            self._kinds[name] = kind

        text = "\n".join(f"{name}:{_type_signature(t)}" for name, t in self.vars.items())
        self.hash = hashlib.sha256(text.encode()).hexdigest()
        ident = re.sub(r"_+", "_", re.sub(r"\W", "_", self.key)).strip("_") or "struct"
        self.native_name = f"S_{ident}_{self.hash[:8]}"

        fields = [(name, self._field_ctype(name, t)) for name, t in self.vars.items()]
        if not fields:  # an empty C++ struct still takes one byte (so structs holding it keep the C++ layout)
            fields = [("_treadle_empty_", ctypes.c_uint8)]
        self.ctype: Any = type(self.native_name, (ctypes.Structure,), {"_fields_": fields})
        self._numpy_dtype: np.dtype | None = None

        ns: dict[str, Any] = {
            "_struct_type_": self,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        for name in self.vars:
            ns[name] = _field_property(self, name)
        self.instance_type: type = type(cls.__name__, (cls, StructInstance), ns)

        # Class-level defaults are applied once to a template; new instances copy it.
        self._template = self._wrap(self.ctype())
        for name in self.vars:
            default = cls.__dict__.get(name, None)
            if default is not None and not callable(default) and not hasattr(default, "__get__"):
                setattr(self._template, name, default)

    def _field_ctype(self, name: str, t: Any) -> Any:
        kind = self._kinds[name]
        if kind == "scalar":
            return t._type_
        if kind == "composite":
            return t
        if kind == "struct":
            return t.ctype
        return _array_desc_type(t)

    # -- instances ------------------------------------------------------------------------------------------
    def _wrap(self, c: Any) -> Any:
        """An instance using the ctypes structure ``c`` as its storage (no copy)."""
        inst: Any = object.__new__(self.instance_type)
        inst._setup(c)
        return inst

    def __or__(self, other: Any) -> Any:
        """``S | None`` in an annotation: ``typing.Optional[S]``."""
        return annotation_union(self, other)

    def __ror__(self, other: Any) -> Any:
        """``None | S`` in an annotation."""
        return annotation_union(other, self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Create an instance: zero or default fields, then the given field values (positional in field order)."""
        inst = self._wrap(self.ctype.from_buffer_copy(self._template._ctype))
        inst._adopt_refs(self._template)
        if len(args) > len(self.vars):
            raise TypeError(f"{self.key}() takes at most {len(self.vars)} field values, got {len(args)}")
        names = list(self.vars)
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"{self.key}() got multiple values for field '{name}'")
            setattr(inst, name, value)
        for name, value in kwargs.items():
            if name not in self.vars:
                raise TypeError(f"{self.key}() got an unexpected field '{name}'")
            setattr(inst, name, value)
        return inst

    def from_ctype(self, c: Any) -> Any:
        """An instance holding a copy of ``c`` (a ``self.ctype`` structure or its raw bytes).

        Array fields keep their descriptors but have no Python array object (they read as ``None``).
        """
        return self._wrap(self.ctype.from_buffer_copy(c))

    def from_numpy_value(self, value: Any, device: Any = None) -> Any:
        """An instance from one element of a NumPy array of :meth:`numpy_dtype` (a ``numpy.void`` record).

        Array fields read back as views of the arrays their descriptors point to, on ``device`` (default: the CPU).
        """
        data = value.tobytes() if hasattr(value, "tobytes") else bytes(value)
        if len(data) != ctypes.sizeof(self.ctype):
            raise ValueError(f"expected {ctypes.sizeof(self.ctype)} bytes for struct {self.key}, got {len(data)}")
        inst = self._wrap(self.ctype.from_buffer_copy(data))
        object.__setattr__(inst, "_device", device)
        return inst

    def numpy_dtype(self) -> np.dtype:
        """The structured NumPy dtype with the layout of :attr:`ctype` (vectors/matrices as subarrays)."""
        if self._numpy_dtype is None:
            formats: list[Any] = []
            for name, t in self.vars.items():
                kind = self._kinds[name]
                if kind == "scalar":
                    formats.append(t._np_)
                elif kind == "composite":
                    formats.append((t._wp_scalar_type_._np_, tuple(t._shape_)))
                elif kind == "struct":
                    formats.append(t.numpy_dtype())
                else:
                    formats.append(np.dtype(_array_desc_type(t)))
            self._numpy_dtype = np.dtype(
                {
                    "names": list(self.vars),
                    "formats": formats,
                    "offsets": [getattr(self.ctype, name).offset for name in self.vars],
                    "itemsize": ctypes.sizeof(self.ctype),
                }
            )
        return self._numpy_dtype

    # -- type behaviour -----------------------------------------------------------------------------------------
    def __instancecheck__(self, obj: Any) -> builtins.bool:
        return isinstance(obj, StructInstance) and obj._struct_type_ is self

    def __getattr__(self, name: str) -> Any:
        # Class attributes and methods of the user's class (``Particle.helper``) stay reachable on the type.
        if name.startswith("__") or name in ("cls", "vars", "_kinds", "_template"):
            raise AttributeError(name)
        return getattr(self.cls, name)

    def __repr__(self) -> str:
        return f"<Struct {self.__module__}.{self.key}>"

    def __reduce__(self) -> Any:
        try:
            found = _lookup_struct(self.__module__, self.key)
        except (ImportError, AttributeError, TypeError):
            found = None
        if found is not self:
            raise pickle.PicklingError(
                f"cannot pickle struct {self.key}: it is not importable as {self.__module__}.{self.key} "
                "(define it at module level)"
            )
        return (_lookup_struct, (self.__module__, self.key))


def _lookup_struct(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, Struct):
        raise TypeError(f"{module}.{qualname} is not a @struct type")
    return obj


def _unpickle_instance(st: Struct, data: bytes) -> Any:
    return st.from_ctype(data)


def _check_scalar(st: Any, value: Any, where: str) -> Any:
    """Convert ``value`` for storage in a scalar field of type ``st`` (TypeError naming the field otherwise)."""
    if isinstance(value, scalars.scalar_base):
        is_float_value = type(value)._is_float_
        value = value.value
    else:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        is_float_value = isinstance(value, (builtins.float, np.floating))
    if not is_number(value):
        raise TypeError(f"{where} expects a value of type {st.__name__}, got {type(value).__name__}")
    if st is scalars.bool:
        return builtins.bool(value)
    if st._is_float_:
        if st is scalars.float16 or st is scalars.bfloat16:  # stored as 16-bit patterns
            return encode_half([value], st)[0]
        return builtins.float(value)
    if is_float_value:
        raise TypeError(f"{where} expects a value of type {st.__name__}, got a float ({value!r})")
    return operator.index(value)


def _field_property(st: Struct, name: str) -> property:
    t = st.vars[name]
    kind = st._kinds[name]
    where = f"Struct field '{st.key}.{name}'"
    st_key = st.key

    if kind == "scalar":
        half = t is scalars.float16 or t is scalars.bfloat16

        def fget(self: Any) -> Any:
            raw = getattr(self._ctype, name)
            value = decode_half(raw, t) if half else raw
            # a field keeps the kind of value last assigned: Python numbers stay Python numbers, otherwise (also
            # when never assigned) the field's scalar type
            return value if name in self._py_values else t(value)

        def fset(self: Any, value: Any) -> None:
            setattr(self._ctype, name, _check_scalar(t, value, where))
            if isinstance(value, (builtins.bool, builtins.int, builtins.float)) and not isinstance(value, np.generic):
                self._py_values.add(name)
            else:
                self._py_values.discard(name)

    elif kind == "composite":

        def fget(self: Any) -> Any:
            return getattr(self._ctype, name)  # a live view into the struct's memory

        def fset(self: Any, value: Any) -> None:
            if value is None:  # zero-initialise, as for a new struct
                setattr(self._ctype, name, t())
                return
            if is_number(value):
                raise TypeError(
                    f"Struct field '{name}' expects {t.__name__} but got a single value of type "
                    f"{type(value).__name__} ({st_key}.{name}); construct the value explicitly, e.g. "
                    f"{t.__name__}(...)"
                )
            if type(value) is not t:
                try:
                    value = t(value)
                except (TypeError, ValueError) as e:
                    raise type(e)(f"{where} expects {t.__name__}: {e}") from None
            setattr(self._ctype, name, value)

    elif kind == "struct":

        def fget(self: Any) -> Any:
            child = self._children.get(name)
            if child is None:
                child = t._wrap(getattr(self._ctype, name))  # a live view into the parent's memory
                object.__setattr__(child, "_device", self._device)
                self._children[name] = child
            return child

        def fset(self: Any, value: Any) -> None:
            if not (isinstance(value, StructInstance) and value._struct_type_ is t):
                raise TypeError(f"{where} expects an instance of struct {t.key}, got {type(value).__name__}")
            child = fget(self)
            if value is child:
                return
            setattr(self._ctype, name, value.__ctype__())
            child._adopt_refs(value)

    else:

        def fget(self: Any) -> Any:
            arr = self._refs.get(name)
            if arr is None and kind == "array":
                arr = _array_from_desc(getattr(self._ctype, name), t, self._device)
                if arr is not None:
                    self._refs[name] = arr
            return arr

        def fset(self: Any, value: Any) -> None:
            if value is None:
                self._refs.pop(name, None)
                setattr(self._ctype, name, _array_desc_type(t)())
                return
            indexed = bool(_indexed(t))
            if not is_array_like(value) or bool(getattr(value, "_indexed_", False)) != indexed:
                want = "a Warp indexed array" if indexed else "a Warp array"
                raise TypeError(f"Struct field '{name}' expects {want}, got {type(value).__name__} "
                                f"({st_key}.{name}: {_type_name(t)})")
            if int(value.ndim) != int(t.ndim):
                raise TypeError(f"Struct field '{name}' expects an array with {t.ndim} dimension(s), got "
                                f"{value.ndim} dimension(s) ({st_key}.{name})")
            if not _dtypes_match(t.dtype, value.dtype):
                raise TypeError(
                    f"Struct field '{name}' expects dtype {_type_name(scalars.scalar_from_python(t.dtype))}, "
                    f"got {_type_name(scalars.scalar_from_python(value.dtype))} ({st_key}.{name})"
                )
            setattr(self._ctype, name, value.__ctype__())
            self._refs[name] = value

    return property(fget, fset, doc=f"Field '{name}' ({_type_name(t)}).")


def _array_from_desc(desc: Any, t: Any, device: Any) -> Any:
    """A view of the array an array field's descriptor points to (``None`` for a null descriptor).

    An instance read back from memory (an element of an array of structs, ``array.list()``) holds descriptors
    only; the view does not own the memory, which belongs to the array that was assigned when the value was stored.
    """
    if not desc.data or t.dtype is typing.Any:
        return None
    array = array_class()
    ndim = int(t.ndim)
    grad = None
    if desc.grad:
        grad = array(ptr=int(desc.grad), dtype=t.dtype, shape=tuple(desc.shape[:ndim]),
                     strides=tuple(desc.strides[:ndim]), device=device)
    return array(ptr=int(desc.data), dtype=t.dtype, shape=tuple(desc.shape[:ndim]),
                 strides=tuple(desc.strides[:ndim]), device=device, grad=grad)


def _dtypes_match(a: Any, b: Any) -> builtins.bool:
    from .typeutil import types_equal

    return types_equal(a, b)


class StructInstance:
    """Base class of ``@struct`` instances (the instance class also derives from the user's class)."""

    _struct_type_: Struct
    _ctype: Any
    _refs: dict[str, Any]
    _children: dict[str, StructInstance]
    _py_values: set[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Reached only when the instance class is called directly; mirror Struct.__call__.
        other = self._struct_type_(*args, **kwargs)
        self._setup(other._ctype)
        self._adopt_refs(other)

    def _setup(self, c: Any) -> None:
        object.__setattr__(self, "_ctype", c)
        object.__setattr__(self, "_refs", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_py_values", set())  # scalar fields last assigned a Python number
        object.__setattr__(self, "_device", None)  # where arrays read back from descriptors live (None: the CPU)

    def _adopt_refs(self, other: StructInstance) -> None:
        """Take over the array references of ``other`` (whose bytes were just copied into this instance)."""
        self._refs.clear()
        self._refs.update(other._refs)
        self._py_values.clear()
        self._py_values.update(other._py_values)
        for name, kind in self._struct_type_._kinds.items():
            if kind == "struct":
                mine = getattr(self, name)
                theirs = other._children.get(name)
                if theirs is not None:
                    mine._adopt_refs(theirs)
                else:
                    mine._refs.clear()

    def __ctype__(self) -> Any:
        """The ctypes structure, with the descriptors of assigned arrays refreshed."""
        for name, arr in self._refs.items():
            setattr(self._ctype, name, arr.__ctype__())
        for child in self._children.values():
            child.__ctype__()
        return self._ctype

    def numpy_value(self) -> Any:
        """This value as a ``numpy.void`` record of the struct's :meth:`~Struct.numpy_dtype`."""
        data = bytes(self.__ctype__())
        # A record viewing its own writable buffer (NumPy's structured copies do not keep padding bytes).
        return np.frombuffer(bytearray(data), dtype=self._struct_type_.numpy_dtype())[0]

    def assign(self, value: Any) -> None:
        """Copy all fields of another instance of the same struct type into this one."""
        st = self._struct_type_
        if not (isinstance(value, StructInstance) and value._struct_type_ is st):
            raise TypeError(f"assign() expects an instance of struct {st.key}, got {type(value).__name__}")
        ctypes.memmove(ctypes.addressof(self._ctype), ctypes.addressof(value.__ctype__()), ctypes.sizeof(st.ctype))
        self._adopt_refs(value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._struct_type_.vars or name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        attr = getattr(type(self), name, None)
        if hasattr(attr, "__set__"):  # a property of the user's class
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"struct '{self._struct_type_.key}' has no field '{name}'")

    def __repr__(self) -> str:
        st = self._struct_type_
        def shown(name: str) -> str:
            v = getattr(self, name)
            return repr(v.value if isinstance(v, scalars.scalar_base) else v)

        return f"{st.key}(" + ", ".join(f"{name}={shown(name)}" for name in st.vars) + ")"

    def __reduce__(self) -> Any:
        st = self._struct_type_
        c = st.ctype.from_buffer_copy(self.__ctype__())
        _clear_arrays(c, st)  # raw pointers must not travel
        return (_unpickle_instance, (st, bytes(c)))


def _clear_arrays(c: Any, st: Struct) -> None:
    for name, kind in st._kinds.items():
        if kind == "array":
            setattr(c, name, _array_desc_type(st.vars[name])())
        elif kind == "struct":
            _clear_arrays(getattr(c, name), st.vars[name])


def struct(cls: type | None = None, *, module: Any = None) -> Any:
    """Turn an annotated class into a :class:`Struct` type.

    Usable as ``@struct``, ``@struct(module=...)`` or ``struct(cls, module=...)``.
    """
    frame = sys._getframe(1)
    scope = {**frame.f_globals, **frame.f_locals}  # resolves string annotations of locally defined structs
    del frame
    if cls is None:
        return lambda c: Struct(c, module=module, _scope=scope)
    return Struct(cls, module=module, _scope=scope)
