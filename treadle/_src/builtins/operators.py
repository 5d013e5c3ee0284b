"""Operators: ``+ - * / // % **``, unary ``- + ~``, bitwise ops and comparisons.

Integer ``/`` truncates toward zero and ``%`` takes the sign of the dividend, as in C; ``//`` floors (the reference
behaves the same). ``**`` is for floats only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import is_composite, is_float, is_int, is_matrix, is_struct, is_vector, scalar_of, type_str
from .registry import Interp, NoMatch, Op, arity, builtin, need, same
from .tile_common import elementwise_rule, int_tile_rule

GROUP = "Operators"


def _numeric(t: Any) -> bool:
    return is_float(t) or is_int(t)


def _add_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    tile = elementwise_rule("add", types)
    if tile is not None:
        return tile
    a, b = types
    need(a == b and (_numeric(a) or is_composite(a)), f"cannot combine {type_str(a)} and {type_str(b)}")
    return a


def _mul_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    tile = elementwise_rule("mul", types, _mul_rule)
    if tile is not None:
        return tile
    a, b = types
    if _numeric(a) and a == b:
        return a
    if is_composite(a) and _numeric(b) and scalar_of(a) == b:
        return a
    if _numeric(a) and is_composite(b) and scalar_of(b) == a:
        return b
    if is_matrix(a) and scalar_of(a) == scalar_of(b):
        rows, cols = a._shape_
        if getattr(b, "_wp_generic_type_str_", None) == "vec_t" and b._length_ == cols:
            from ..types.vector import vector

            return vector(rows, scalar_of(a))
        if is_matrix(b) and b._shape_[0] == cols:
            from ..types.matrix import matrix

            return matrix((rows, b._shape_[1]), scalar_of(a))
    if is_matrix(b) and getattr(a, "_wp_generic_type_str_", None) == "vec_t" and scalar_of(a) == scalar_of(b):
        rows, cols = b._shape_
        if a._length_ == rows:
            from ..types.vector import vector

            return vector(cols, scalar_of(b))
    if a == b and getattr(a, "_wp_generic_type_str_", None) in ("quat_t", "transform_t"):
        return a
    raise NoMatch(f"cannot multiply {type_str(a)} by {type_str(b)}")


def _div_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    tile = elementwise_rule("div", types, _div_rule)
    if tile is not None:
        return tile
    a, b = types
    if _numeric(a) and a == b:
        return a
    if is_composite(a) and _numeric(b) and scalar_of(a) == b:
        return a
    if _numeric(a) and is_composite(b) and scalar_of(b) == a:
        return b
    raise NoMatch(f"cannot divide {type_str(a)} by {type_str(b)}")


def _scalar_binary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    need(_numeric(types[0]), f"expected numbers, got {type_str(types[0])}")
    return same(types)


def _mod_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    t = types[0]
    need(_numeric(t) or (is_vector(t) and _numeric(scalar_of(t))), f"expected numbers or vectors, got {type_str(t)}")
    return same(types)


def _int_like(t: Any) -> bool:
    """Integers, and vectors or matrices of integers (bitwise operators work componentwise on those)."""
    return is_int(t) or ((is_vector(t) or is_matrix(t)) and is_int(scalar_of(t)))


def _int_binary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    tile = int_tile_rule(types)
    if tile is not None:
        return tile
    need(not is_struct(types[0]), "bitwise inplace and binary operators do not support Warp struct (@wp.struct) "
         f"values, got {type_str(types[0])}")
    need(_int_like(types[0]) or types[0] is scalars.bool, f"expected integers, got {type_str(types[0])}")
    return same(types)


def _float_binary(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    need(is_float(types[0]), f"'**' and pow() need float operands, got {type_str(types[0])}")
    return same(types)


def _unary_numeric(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    tile = elementwise_rule("neg", types)
    if tile is not None:
        return tile
    t = types[0]
    need(_numeric(t) or is_composite(t), f"expected a number, vector or matrix, got {type_str(t)}")
    return t


def _unary_int(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    tile = int_tile_rule(types)
    if tile is not None:
        return tile
    need(_int_like(types[0]), f"'~' needs an integer (or an integer vector/matrix), got {type_str(types[0])}")
    return types[0]


def _mixed_float_compare(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are a float32/float64 scalar and an integer or the other float width.

    Such pairs compare as C++ does, in the float type (the wider one for two floats). float16 and integer pairs of
    different types stay refused (their C++ promotions are surprising: signed against unsigned, half against int).
    """
    wide = (scalars.float32, scalars.float64)
    return (a in wide and (is_int(b) or b in wide)) or (b in wide and is_int(a))


def _compare_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    a, b = types
    need((a == b and (_numeric(a) or a is scalars.bool)) or _mixed_float_compare(a, b),
         f"cannot compare {type_str(a)} with {type_str(b)}")
    return scalars.bool


def _equal_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    a, b = types
    need(a == b, f"cannot compare {type_str(a)} with {type_str(b)}")
    return scalars.bool


def _c_div(a: Any, b: Any) -> Any:
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        q = np.abs(a) // np.abs(b)
        return (q * np.sign(a) * np.sign(b)).astype(np.asarray(a).dtype)
    return a / b


def _c_mod(a: Any, b: Any) -> Any:
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        return (a - _c_div(a, b) * b).astype(np.asarray(a).dtype)
    return np.fmod(a, b)


def _floordiv(a: Any, b: Any) -> Any:
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        return np.floor_divide(a, b)
    return np.floor(a / b)


def _host_mul(types: Any, a: Any, b: Any) -> Any:
    kinds = [getattr(t, "_wp_generic_type_str_", None) for t in types]
    if kinds == ["quat_t", "quat_t"]:
        from .quat import np_qmul

        return np_qmul(a, b)
    if kinds == ["transform_t", "transform_t"]:
        from .transform import np_tf_mul

        return np_tf_mul(a, b)
    if np.ndim(a) == 2 or np.ndim(b) == 2:
        if np.ndim(a) > 0 and np.ndim(b) > 0:
            return a @ b
    return a * b


_host_mul._treadle_typed_ = True  # type: ignore[attr-defined]

add = builtin("add", group=GROUP, rule=_add_rule, host=np.add, pass_through=True, infix="+", atomic="add",
              signature="add(a: T, b: T) -> T",
              doc="Add two scalars, vectors or matrices of the same type.")
sub = builtin("sub", group=GROUP, rule=_add_rule, host=np.subtract, pass_through=True, infix="-", atomic="sub",
              signature="sub(a: T, b: T) -> T",
              doc="Subtract two scalars, vectors or matrices of the same type.")
mul = builtin("mul", group=GROUP, rule=_mul_rule, host=_host_mul, infix="*",
              signature="mul(a: Scalar, b: Scalar) -> Scalar | mul(a: Composite, b: Scalar) -> Composite | "
                        "mul(a: Scalar, b: Composite) -> Composite | mul(a: Matrix, b: Vector) -> Vector | "
                        "mul(a: Vector, b: Matrix) -> Vector | mul(a: Matrix, b: Matrix) -> Matrix",
              doc="Multiply: scalar product, scaling, or matrix product.")
div = builtin("div", group=GROUP, rule=_div_rule, host=_c_div, singular=True, interpret=Interp.INT_DIVISION,
              signature="div(a, b)",
              doc="Divide (integers truncate toward zero, as in C).")
floordiv = builtin("floordiv", group=GROUP, rule=_scalar_binary, host=_floordiv, singular=True,
                   interpret=Interp.INT_DIVISION,
                   signature="floordiv(a: Scalar, b: Scalar) -> Scalar",
                   doc="Floor division (rounds toward negative infinity, for integers too, as the reference does).")
mod = builtin("mod", group=GROUP, rule=_mod_rule, host=_c_mod, singular=True, interpret=Interp.INT_DIVISION,
              signature="mod(a: Scalar, b: Scalar) -> Scalar | mod(a: Vector, b: Vector) -> Vector",
              doc="Remainder with the sign of the dividend (C semantics; fmod for floats); componentwise for "
                  "vectors.")
pow_ = builtin("pow", group="Scalar Math", rule=_float_binary, host=np.power, singular=True,
               signature="pow(x: Float, y: Float) -> Float",
               doc="x raised to the power y.")
neg = builtin("neg", group=GROUP, rule=_unary_numeric, host=np.negative, pass_through=True, signature="neg(x: T) -> T",
             doc="Negate.")
pos = builtin("pos", group=GROUP, rule=_unary_numeric, host=np.positive, pass_through=True, signature="pos(x: T) -> T",
             doc="Unary plus.")
invert = builtin("invert", group=GROUP, rule=_unary_int, host=np.invert, differentiable=False,
                 signature="invert(x: Int) -> Int", doc="Bitwise not (componentwise on integer vectors and matrices).")
bit_and = builtin("bit_and", group=GROUP, rule=_int_binary, host=np.bitwise_and, differentiable=False, atomic="and",
                  signature="bit_and(a: Int, b: Int) -> Int",
                  doc="Bitwise and (componentwise on integer vectors and matrices).")
bit_or = builtin("bit_or", group=GROUP, rule=_int_binary, host=np.bitwise_or, differentiable=False, atomic="or",
                 signature="bit_or(a: Int, b: Int) -> Int",
                 doc="Bitwise or (componentwise on integer vectors and matrices).")
bit_xor = builtin("bit_xor", group=GROUP, rule=_int_binary, host=np.bitwise_xor, differentiable=False, atomic="xor",
                  signature="bit_xor(a: Int, b: Int) -> Int",
                  doc="Bitwise exclusive or (componentwise on integer vectors and matrices).")
lshift = builtin("lshift", group=GROUP, rule=_int_binary, host=np.left_shift, differentiable=False,
                 signature="lshift(a: Int, b: Int) -> Int",
                 doc="Shift left (componentwise on integer vectors and matrices).")
rshift = builtin("rshift", group=GROUP, rule=_int_binary, host=np.right_shift, differentiable=False,
                 signature="rshift(a: Int, b: Int) -> Int",
                 doc="Shift right (arithmetic for signed types; componentwise on integer vectors and matrices).")

for _name, _cmp in (("lt", Op.LT), ("le", Op.LE), ("gt", Op.GT), ("ge", Op.GE)):
    builtin(f"_cmp_{_name}", group=GROUP, rule=_compare_rule, op=_cmp, differentiable=False, interpret=Interp.COMPARE,
            kernel_only=True, signature=f"a {_cmp.value} b", doc=f"Comparison '{_cmp.value}'.")
builtin("_cmp_eq", group=GROUP, rule=_equal_rule, op=Op.EQ, differentiable=False, kernel_only=True,
        interpret=Interp.COMPARE, signature="a == b", doc="Equality of scalars, vectors or matrices.")
builtin("_cmp_ne", group=GROUP, rule=_equal_rule, op=Op.NE, differentiable=False, kernel_only=True,
        interpret=Interp.COMPARE, signature="a != b", doc="Inequality of scalars, vectors or matrices.")


def _not_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1)
    return scalars.bool


builtin("_not", group=GROUP, rule=_not_rule, op=Op.NOT, differentiable=False, kernel_only=True,
        interpret=Interp.NOT,
        signature="not x", doc="Logical not.")

#: Python AST operator class name -> builtin name.
BINOP_NAMES = {
    "Add": "add", "Sub": "sub", "Mult": "mul", "Div": "div", "FloorDiv": "floordiv", "Mod": "mod", "Pow": "pow",
    "BitAnd": "bit_and", "BitOr": "bit_or", "BitXor": "bit_xor", "LShift": "lshift", "RShift": "rshift",
    "MatMult": "mul",
}
UNARYOP_NAMES = {"USub": "neg", "UAdd": "pos", "Invert": "invert", "Not": "_not"}
CMPOP_NAMES = {"Lt": "_cmp_lt", "LtE": "_cmp_le", "Gt": "_cmp_gt", "GtE": "_cmp_ge", "Eq": "_cmp_eq",
               "NotEq": "_cmp_ne"}
