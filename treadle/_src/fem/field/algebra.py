"""Value algebra of fields, chosen per value type when kernels are generated.

A field's values may be scalars, vectors or matrices; its gradient accumulates ``value (x) grad(weight)`` terms and
its divergence ``value . grad(weight)`` terms. These helpers return the types and small kernel functions each case
needs.
"""

import functools
from types import SimpleNamespace
from typing import Any

import treadle as wp

from .. import codegen
from ..space.dof_mapper import is_matrix_type, is_vector_type


def scalar_of(t: Any) -> Any:
    """Scalar type of a scalar, vector or matrix type."""
    return getattr(t, "_wp_scalar_type_", t)


def gradient_type(value: Any, dim: int) -> Any:
    """Type of the gradient (in ``dim`` coordinates) of values of type ``value`` (``None`` for matrices)."""
    S = scalar_of(value)
    if is_matrix_type(value):
        return None
    if is_vector_type(value):
        return wp.types.matrix(shape=(value._length_, dim), dtype=S)
    return wp.types.vector(dim, S)


def divergence_type(value: Any) -> Any:
    """Type of the divergence of values of type ``value`` (``None`` for scalars)."""
    S = scalar_of(value)
    if is_matrix_type(value):
        # the divergence contracts the first index: div(tau)_j = sum_i d tau_ij / dx_i
        return wp.types.vector(value._shape_[1], S)
    if is_vector_type(value):
        return S
    return None


@functools.cache
def value_funcs(value: Any, ref_dim: int, world_dim: int) -> SimpleNamespace:
    """Kernel helpers for fields of value type ``value`` on cells of dimension ``ref_dim`` in ``world_dim``.

    - ``zero() -> value``;
    - ``ref_grad_zero() -> RG`` and ``ref_grad_term(v, g) -> RG`` (``v (x) g`` for a reference gradient ``g``);
    - ``to_world_grad(RG, inv_F) -> G`` (``RG @ inv_F``);
    - ``div_term(v, gw) -> Div`` for a world gradient ``gw`` of a weight;
    - types ``RG`` (reference gradient), ``G`` (world gradient), ``Div``.
    """
    S = scalar_of(value)
    T = value
    key = ("algebra", codegen.type_key(value), ref_dim, world_dim)
    RG = gradient_type(value, ref_dim)
    G = gradient_type(value, world_dim)
    Div = divergence_type(value)
    out: dict[str, Any] = {"RG": RG, "G": G, "Div": Div, "T": T, "S": S}
    is_scalar = not is_vector_type(value) and not is_matrix_type(value)

    if is_scalar:
        def zero() -> T:
            return T(0.0)
    else:
        def zero() -> T:
            return T()
    out["zero"] = codegen.func(zero, *key)

    if RG is not None:
        if is_scalar:
            def ref_grad_term(v: T, g: Any) -> RG:
                return v * g
        else:
            def ref_grad_term(v: T, g: Any) -> RG:
                return wp.outer(v, g)

        def ref_grad_zero() -> RG:
            return RG()

        def to_world_grad(rg: RG, inv_f: Any) -> G:
            return rg * inv_f

        out["ref_grad_term"] = codegen.func(ref_grad_term, *key)
        out["ref_grad_zero"] = codegen.func(ref_grad_zero, *key)
        out["to_world_grad"] = codegen.func(to_world_grad, *key)

    if Div is not None:
        if is_matrix_type(value):
            def div_term(v: T, gw: Any) -> Div:
                return gw * v

            def div_zero() -> Div:
                return Div()
        else:
            def div_term(v: T, gw: Any) -> Div:
                return wp.dot(v, gw)

            def div_zero() -> Div:
                return Div(0.0)
        out["div_term"] = codegen.func(div_term, *key)
        out["div_zero"] = codegen.func(div_zero, *key)
    return SimpleNamespace(**out)


@functools.cache
def unit_dof_func(dof_type: Any) -> Any:
    """Kernel function ``(component) -> dof`` with a one in that component (one for scalar dofs)."""
    D = dof_type
    if is_vector_type(dof_type):
        S = scalar_of(dof_type)

        def unit_dof(c: int) -> D:
            v = D()
            v[c] = S(1.0)
            return v
    elif is_matrix_type(dof_type):
        S = scalar_of(dof_type)
        COLS = dof_type._shape_[1]

        def unit_dof(c: int) -> D:
            v = D()
            v[c // COLS, c % COLS] = S(1.0)
            return v
    else:
        def unit_dof(c: int) -> D:
            return D(1.0)
    return codegen.func(unit_dof, "unit", codegen.type_key(dof_type))
