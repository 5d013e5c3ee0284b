"""``fem.integrate``: integrals of constant, linear and bilinear forms into scalars, arrays and BSR matrices.

Each call specialises the integrand for its fields (``integrand_codegen``) and generates one kernel for the
combination of integrand, domain, quadrature and form (cached on the integrand):

- a constant form: one thread per domain element sums its quadrature points into one accumulator;
- a linear form: one thread per (element, test node) sums ``integrand * weight * measure`` over the element's
  points for each dof component and adds it to the test node's entry;
- a bilinear form: one thread per (element, test node, trial node) computes a block and writes it as a triplet;
  :func:`treadle.sparse.bsr_set_from_triplets` sums the triplets into the matrix.

With ``assembly="nodal"``, the integrand is evaluated at the test space's nodes only, with nodal quadrature weights
(a diagonal result for bilinear forms of one space).
"""

from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .cache import TemporaryStore
from .domain import GeometryDomain
from .field.field import FieldLike
from .field.virtual import TestField, TrialField
from .integrand_codegen import IntegrandError, ParamSpec, param_spec, remap_error, specialize
from .operator import Integrand
from .quadrature import Quadrature, RegularQuadrature
from .space.dof_mapper import is_matrix_type, is_vector_type
from .types import NULL_NODE_INDEX, ElementKind


class IntegrateError(ValueError):
    """``fem.integrate`` / ``fem.interpolate`` was called with inconsistent arguments."""


def _scalar_of(t: Any) -> Any:
    return getattr(t, "_wp_scalar_type_", t)


def check_integrand(integrand: Any, what: str) -> Integrand:
    """``integrand`` as an :class:`Integrand`, or a clear error."""
    if not isinstance(integrand, Integrand):
        name = getattr(integrand, "__name__", type(integrand).__name__)
        raise TypeError(f"{what}: '{name}' is not an integrand; decorate it with @fem.integrand")
    return integrand


def bind_arguments(integrand: Integrand, fields: dict[str, Any], values: dict[str, Any], what: str) -> None:
    """Check that ``fields`` and ``values`` name parameters of the integrand of the right kinds."""
    kinds = dict(integrand.params())
    qual = integrand.func.__qualname__
    for name, f in fields.items():
        if name not in kinds:
            raise IntegrandError(f"{what}: integrand '{qual}' has no parameter '{name}' (fields=); its parameters "
                                 f"are {', '.join(kinds)}")
        if kinds[name] != "field":
            raise IntegrandError(f"{what}: parameter '{name}' of integrand '{qual}' is not annotated fem.Field but "
                                 f"was given in fields= ({_kind_name(f)}); annotate it `{name}: fem.Field` or pass "
                                 "it in values=")
        if not isinstance(f, FieldLike):
            raise IntegrandError(f"{what}: fields['{name}'] of integrand '{qual}' must be a field (DiscreteField, "
                                 f"make_test(), make_trial(), ImplicitField...), got {_kind_name(f)}")
    for name in values:
        if name not in kinds:
            raise IntegrandError(f"{what}: integrand '{qual}' has no parameter '{name}' (values=); its parameters "
                                 f"are {', '.join(kinds)}")
        if kinds[name] in ("field", "domain", "sample"):
            raise IntegrandError(f"{what}: parameter '{name}' of integrand '{qual}' is a fem.{kinds[name].title()} "
                                 f"and cannot be given in values=")
    for name, kind in kinds.items():
        if kind == "field" and name not in fields:
            raise IntegrandError(f"{what}: integrand '{qual}' needs a field for parameter '{name}' (fields=)")


def _kind_name(x: Any) -> str:
    return "None" if x is None else f"a {type(x).__name__}"


def build_params(integrand: Integrand, domain: GeometryDomain, fields: dict[str, Any],
                 values: dict[str, Any]) -> dict[str, ParamSpec]:
    """The :class:`ParamSpec` of every parameter of the integrand."""
    out: dict[str, ParamSpec] = {}
    defaults = _defaults(integrand)
    for name, kind in integrand.params():
        if kind == "value" and name not in values:
            if name not in defaults:
                raise IntegrandError(f"integrand '{integrand.func.__qualname__}' needs a value for parameter "
                                     f"'{name}' (values=)")
            values[name] = defaults[name]
        arg = fields.get(name) if kind == "field" else values.get(name)
        out[name] = param_spec(integrand, name, kind, arg, domain)
    return out


def _defaults(integrand: Integrand) -> dict[str, Any]:
    spec = integrand.argspec
    if not spec.defaults:
        return {}
    names = spec.args[-len(spec.defaults):]
    return dict(zip(names, spec.defaults))


def kernel_value(spec: ParamSpec, value: Any) -> Any:
    """Convert a Python value for a value parameter of kernel type ``spec.type``."""
    t = spec.type
    if isinstance(value, wp.array) or hasattr(value, "_struct_") or hasattr(t, "ctype"):
        return value
    try:
        return t(value)
    except Exception:  # noqa: BLE001 - the launch reports the mismatch
        return value


def _default_order(fields: dict[str, Any]) -> int:
    return int(sum(max(0, int(getattr(f, "degree", 0))) for f in fields.values()))


def _find_domain(domain: Any, quadrature: Any, test: Any, trial: Any, fields: dict[str, Any], what: str) -> Any:
    if quadrature is not None:
        if not isinstance(quadrature, Quadrature):
            raise TypeError(f"{what}: quadrature must be a fem quadrature, got {type(quadrature).__name__}")
        if domain is not None and domain != quadrature.domain:
            raise IntegrateError(f"{what}: the quadrature is defined on another domain than the one given")
        domain = quadrature.domain
    if domain is None and test is not None:
        domain = test.domain
    if domain is None and trial is not None:
        domain = trial.domain
    if domain is None:
        raise IntegrateError(f"{what}: give a domain, a quadrature, or a test field (whose domain is used)")
    if not isinstance(domain, GeometryDomain):
        raise TypeError(f"{what}: domain must be a fem domain (fem.Cells, fem.Sides...), got {type(domain).__name__}")
    for f in (test, trial):
        if f is not None and f.domain != domain:
            raise IntegrateError(f"{what}: the {'test' if isinstance(f, TestField) else 'trial'} field is defined on "
                                 f"domain {f.domain.name}, the integral on {domain.name}")
    return domain


def integrate(integrand: Any, domain: GeometryDomain | None = None, quadrature: Quadrature | None = None,
              fields: dict[str, Any] | None = None, values: dict[str, Any] | None = None,
              accumulate_dtype: Any = wp.float64, output_dtype: Any = None, output: Any = None, device: Any = None,
              temporary_store: TemporaryStore | None = None, kernel_options: dict[str, Any] | None = None,
              assembly: str | None = None, add: bool = False, bsr_options: dict[str, Any] | None = None) -> Any:
    """Integrate a constant, linear or bilinear form over a domain.

    Args:
        integrand: the form (``@fem.integrand``).
        domain: the integration domain (by default the test field's, or the quadrature's).
        quadrature: the quadrature (by default a regular one exact for the fields' total degree).
        fields: fields passed to the integrand's ``fem.Field`` parameters, by name; a test field makes a linear
            form, a test and a trial field a bilinear form.
        values: values of the integrand's other parameters, by name.
        accumulate_dtype: scalar type of the sums.
        output_dtype: scalar type of the result (by default the accumulation type for scalars, the geometry's
            scalar type for arrays and matrices).
        output: array (constant and linear forms) or ``BsrMatrix`` (bilinear forms) to write the result into.
        device: device to run on (the fields' device by default).
        temporary_store: pool of temporary arrays.
        kernel_options: compile options of the generated kernel.
        assembly: ``"generic"`` (default: quadrature points of elements) or ``"nodal"`` (nodes of the test space,
            with nodal weights); ``"dispatch"`` is accepted as ``"generic"``.
        add: add to ``output`` instead of overwriting it.
        bsr_options: options of the matrix assembly (``prune_numerical_zeros``).

    Returns:
        A scalar (constant forms; ``output`` when given), an array with one entry per test node (linear forms) or a
        ``BsrMatrix`` of test nodes by trial nodes (bilinear forms).

    """
    what = "fem.integrate"
    itg = check_integrand(integrand, what)
    fields = dict(fields or {})
    values = dict(values or {})
    bind_arguments(itg, fields, values, what)
    tests = [(n, f) for n, f in fields.items() if isinstance(f, TestField)]
    trials = [(n, f) for n, f in fields.items() if isinstance(f, TrialField)]
    if len(tests) > 1 or len(trials) > 1:
        raise IntegrateError(f"{what}: at most one test and one trial field, got {len(tests)} and {len(trials)}")
    if trials and not tests:
        raise IntegrateError(f"{what}: a trial field needs a test field (bilinear forms have both)")
    test_name, test = tests[0] if tests else (None, None)
    trial_name, trial = trials[0] if trials else (None, None)
    if assembly not in (None, "generic", "nodal", "dispatch"):
        raise ValueError(f"{what}: assembly must be 'generic', 'nodal' or 'dispatch', got {assembly!r}")
    nodal = assembly == "nodal"
    domain = _find_domain(domain, quadrature, test, trial, fields, what)
    if nodal:
        if test is None:
            raise IntegrateError(f"{what}: nodal assembly needs a test field")
        if trial is not None and trial.space.basis is not test.space.basis:
            raise IntegrateError(f"{what}: nodal assembly of a bilinear form needs test and trial fields of the "
                                 "same basis")
        if quadrature is not None:
            raise IntegrateError(f"{what}: nodal assembly uses the test space's nodes; do not pass a quadrature")
    elif quadrature is None:
        quadrature = RegularQuadrature(domain, order=_default_order(fields))
    device = wp.get_device(device) if device is not None else _device_of(fields, values)
    params = build_params(itg, domain, fields, values)
    spec = specialize(itg, params, domain)
    rtype = spec.return_type()
    if test is not None and (is_vector_type(rtype) or is_matrix_type(rtype)):
        raise IntegrateError(f"{what}: integrand '{itg.func.__qualname__}' returns {codegen.type_key(rtype)}; a "
                             "linear or bilinear form must return a scalar (the product with the test function)")
    acc = accumulate_dtype
    if acc not in (wp.float32, wp.float64):
        raise TypeError(f"{what}: accumulate_dtype must be wp.float32 or wp.float64, got {acc!r}")
    from .integrate_cells import eligible, linear_cells_kernel
    from .integrate_kernels import constant_kernel, linear_kernel

    opts = dict(itg.kernel_options)
    opts.update(kernel_options or {})
    args_head, args_fields, args_values = _launch_args(spec, params, fields, values, domain, quadrature, device,
                                                       nodal, test)
    if test is None:
        out_scalar = _normalize_dtype(output_dtype) or (output.dtype if output is not None else None)
        k = constant_kernel(itg, spec, domain, quadrature, rtype, acc, opts)
        acc_t = k.acc_type
        grad = _requires_grad(fields, values) or (output is not None and output.requires_grad)
        result = wp.zeros(1, dtype=acc_t, device=device, requires_grad=grad)
        _launch(k, domain.element_count(), args_head + args_fields + args_values + [result], device)
        if output is not None:
            _cast_into(result, output, add)
            return output
        value = result.numpy()[0]
        if out_scalar is not None:
            return _host_cast(value, out_scalar)
        return value if np.ndim(value) else float(value) if acc is wp.float64 else value
    out_s = _scalar_of(_normalize_dtype(output_dtype)) if output_dtype is not None else None
    if out_s is None and output is not None and not hasattr(output, "nrow"):
        out_s = _scalar_of(output.dtype)
    if out_s is None:
        out_s = domain.geometry.scalar_type
    if trial is None:
        k = None
        grad = _requires_grad(fields, values) or (output is not None and output.requires_grad)
        if not grad and eligible(domain, nodal, test):
            k = linear_cells_kernel(itg, spec, domain, quadrature, test_name, test, acc, out_s, opts)
        per_element = k is not None
        if k is None:
            k = linear_kernel(itg, spec, domain, quadrature, test_name, test, acc, out_s, nodal, opts)
        n_rows = test.space_partition.node_count()
        if output is not None:
            if output.shape[0] != n_rows:
                raise IntegrateError(f"{what}: output has {output.shape[0]} entries, the test space partition "
                                     f"{n_rows} nodes")
            result = output
            if not add:
                result.zero_()
        else:
            want = _normalize_dtype(output_dtype)
            # a composite output type of the same scalars as the form's values (vec4 for mat22) holds them as is
            if not (getattr(want, "_shape_", None) is not None and _same_layout(want, k.out_type)):
                want = k.out_type
            result = wp.zeros(n_rows, dtype=want, device=device, requires_grad=_requires_grad(fields, values))
        target = result
        if result.dtype != k.out_type:
            if not _same_layout(result.dtype, k.out_type):
                raise IntegrateError(f"{what}: output has dtype {result.dtype.__name__}, the linear form produces "
                                     f"{k.out_type.__name__}")
            target = result.view(k.out_type)
        dim: Any = domain.element_count()
        if not per_element:
            dim = (dim, test.space.topology.MAX_NODES_PER_ELEMENT * (2 if _sides(domain) else 1))
        extra = k.scratch(domain.element_count(), device) if per_element else []
        _launch(k, dim, args_head + args_fields + args_values + extra + [target], device)
        return result
    return _assemble_bilinear(itg, spec, domain, quadrature, test_name, test, trial_name, trial, acc, out_s, nodal,
                              opts, args_head + args_fields + args_values, output, add, bsr_options, device,
                              temporary_store)


def _same_layout(a: Any, b: Any) -> bool:
    """Whether two composite types hold the same number of the same scalars (``vec4`` and ``mat22``)."""
    sa, sb = getattr(a, "_shape_", None), getattr(b, "_shape_", None)
    if sa is None or sb is None:
        return False
    return _scalar_of(a) == _scalar_of(b) and int(np.prod(sa)) == int(np.prod(sb))


def _normalize_dtype(t: Any) -> Any:
    """``float`` and ``int`` as the kernel scalar types they stand for."""
    if t is float:
        return wp.float32
    if t is int:
        return wp.int32
    return t


def _sides(domain: GeometryDomain) -> bool:
    return domain.element_kind == ElementKind.SIDE


def _requires_grad(fields: dict[str, Any], values: dict[str, Any]) -> bool:
    for f in fields.values():
        dv = getattr(f, "_dof_values", None)
        if dv is not None and dv.requires_grad:
            return True
    return any(isinstance(v, wp.array) and v.requires_grad for v in values.values())


def _device_of(fields: dict[str, Any], values: dict[str, Any]) -> Any:
    for f in fields.values():
        dv = getattr(f, "_dof_values", None)
        if dv is not None:
            return dv.device
    for v in values.values():
        if isinstance(v, wp.array):
            return v.device
    return wp.get_device()


def _launch_args(spec: Any, params: dict[str, ParamSpec], fields: dict[str, Any], values: dict[str, Any],
                 domain: GeometryDomain, quadrature: Any, device: Any, nodal: bool, test: Any) -> tuple[list[Any],
                                                                                                      list[Any],
                                                                                                      list[Any]]:
    head = [quadrature.arg_value(device) if not nodal else test.eval_arg_value(device),
            domain.element_arg_value(device), domain.element_index_arg_value(device)]
    # in the integrand's parameter order, as the generated kernel declares them
    args = [fields[n].field_arg_value(domain, device) if p.kind == "field" else
            p.obj.integrand_arg_value(device) if p.kind == "domain" else kernel_value(p, values[n])
            for n, p in spec.params if p.kind in ("field", "value") or (p.kind == "domain" and p.obj.partitioned)]
    return head, args, []


def _launch(k: Any, dim: Any, inputs: list[Any], device: Any) -> None:
    try:
        wp.launch(k.kernel, dim=dim, inputs=inputs, device=device)
    except Exception as e:  # noqa: BLE001 - errors in generated integrands point at the user's code
        err = remap_error(e)
        if err is e:
            raise
        raise err from None


def _cast_into(src: Any, dst: Any, add: bool) -> None:
    from .integrate_kernels import cast_kernel

    if dst.shape[0] < 1:
        raise IntegrateError("fem.integrate: output must have at least one entry")
    wp.launch(cast_kernel(src.dtype, dst.dtype), dim=1, inputs=[src, dst, 1 if add else 0], device=dst.device)


def _host_cast(value: Any, scalar: Any) -> Any:
    if np.ndim(value) == 0:
        return scalar(value) if scalar not in (float,) else float(value)
    return value.astype(wp.dtype_to_numpy(scalar))


def _assemble_bilinear(itg: Integrand, spec: Any, domain: GeometryDomain, quadrature: Any, test_name: str,
                       test: Any, trial_name: str, trial: Any, acc: Any, out_s: Any, nodal: bool,
                       opts: dict[str, Any], inputs: list[Any], output: Any, add: bool,
                       bsr_options: dict[str, Any] | None, device: Any, temporary_store: Any) -> Any:
    import treadle.sparse as sp

    from .assemble_rows import assemble_rows
    from .integrate_cells import bilinear_cells_kernel, eligible
    from .integrate_kernels import bilinear_kernel

    if output is not None and hasattr(output, "nrow"):
        out_s = output.scalar_type
    k = None
    if eligible(domain, nodal, test, trial):
        k = bilinear_cells_kernel(itg, spec, domain, quadrature, test_name, test, trial_name, trial, acc, out_s,
                                  opts)
    per_element = k is not None
    if k is None:
        k = bilinear_kernel(itg, spec, domain, quadrature, test_name, test, trial_name, trial, acc, out_s, nodal,
                            opts)
    sides = 2 if _sides(domain) else 1
    mt = test.space.topology.MAX_NODES_PER_ELEMENT * sides
    mr = 1 if nodal else trial.space.topology.MAX_NODES_PER_ELEMENT * sides
    n_elem = domain.element_count()
    count = n_elem * mt * mr
    n_rows = test.space_partition.node_count()
    n_cols = trial.space_partition.node_count()
    prune = (bsr_options or {}).get("prune_numerical_zeros", True)
    vals = wp.empty(count, dtype=k.block_type, device=device, requires_grad=_requires_grad_inputs(inputs))
    if per_element:
        tnodes = wp.empty(n_elem * mt, dtype=int, device=device)
        rnodes = wp.empty(n_elem * mr, dtype=int, device=device)
        _launch(k, n_elem, inputs + k.scratch(n_elem, device) + [tnodes, rnodes, vals], device)
    else:
        rows = wp.empty(count, dtype=int, device=device)
        cols = wp.empty(count, dtype=int, device=device)
        _launch(k, (n_elem, mt, mr), inputs + [rows, cols, vals], device)

    def fill(m: Any) -> None:
        if per_element:
            assemble_rows(m, n_rows, tnodes, rnodes, vals, mt, mr, prune)
        else:
            sp.bsr_set_from_triplets(m, rows, cols, vals, prune_numerical_zeros=prune)

    if output is None or not add:
        fresh = output is None
        if fresh:
            output = sp.bsr_zeros(n_rows, n_cols, block_type=k.block_type, device=device)
        else:
            _check_matrix(output, n_rows, n_cols, k.block_type)
        fill(output)
        if fresh and nodal:
            # one block per node: programs read ``values`` as the per-node diagonal, so store exactly ``nnz`` blocks
            output.nnz_sync()
            output = sp.bsr_copy(output)
        return output
    _check_matrix(output, n_rows, n_cols, k.block_type)
    tmp = sp.bsr_zeros(n_rows, n_cols, block_type=k.block_type, device=device)
    fill(tmp)
    sp.bsr_axpy(tmp, output, alpha=1.0, beta=1.0)
    return output


def _requires_grad_inputs(inputs: list[Any]) -> bool:
    return False


def _check_matrix(m: Any, rows: int, cols: int, block_type: Any) -> None:
    if m.nrow != rows or m.ncol != cols:
        raise IntegrateError(f"fem.integrate: output matrix is {m.nrow}x{m.ncol} blocks, the form is {rows}x{cols}")
    if tuple(m.block_shape) != _block_shape(block_type):
        raise IntegrateError(f"fem.integrate: output matrix has blocks of shape {tuple(m.block_shape)}, the form "
                             f"{_block_shape(block_type)}")


def _block_shape(t: Any) -> tuple[int, int]:
    shape = getattr(t, "_shape_", None)
    if shape is None:
        return (1, 1)
    return tuple(shape)  # type: ignore[return-value]


__all__ = ["NULL_NODE_INDEX", "IntegrateError", "integrate"]
