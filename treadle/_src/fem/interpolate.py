"""``fem.interpolate``: evaluating an integrand (or a field) at nodes, at quadrature points, or ``dim`` times.

- at the nodes of a discrete field's space (``dest`` a :class:`DiscreteField`, ``at`` optionally a domain or a
  space restriction): every element of the domain evaluates the integrand at each of its nodes, and each node's
  value is the weighted average (``reduction="weighted_average"``, weights the nodal quadrature weights times the
  element measure), the plain mean (``"mean"``) or the sum (``"sum"``) of what its elements computed;
- at the points of a quadrature (``at`` a :class:`Quadrature`): ``dest[point_index]`` receives each point's value
  (``dest`` an array, or ``None`` to run the integrand for its side effects);
- ``dim`` times (no ``at``, no field destination): the sample has ``qp_index`` ``0..dim-1`` and no element.
"""

from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .domain import Cells, GeometryDomain
from .field.discrete import DiscreteField
from .field.field import FieldLike
from .integrand_codegen import IntegrandError, ParamSpec, specialize
from .integrate import IntegrateError, _device_of, _launch, bind_arguments, build_params, check_integrand, kernel_value
from .operator import Field, Integrand, Sample
from .quadrature import Quadrature
from .types import NULL_NODE_INDEX

_FIELD_INTEGRANDS: dict[str, Integrand] = {}


def _field_integrand() -> Integrand:
    itg = _FIELD_INTEGRANDS.get("value")
    if itg is None:
        def field_value(s: Sample, field: Field):
            return field(s)

        itg = _FIELD_INTEGRANDS["value"] = Integrand(field_value)
    return itg


def interpolate(integrand: Any, dest: Any = None, at: Any = None, dest_space: Any = None, dim: int | None = None,
                fields: dict[str, Any] | None = None, values: dict[str, Any] | None = None,
                reduction: str = "weighted_average", device: Any = None, kernel_options: dict[str, Any] | None = None,
                temporary_store: Any = None, bsr_options: dict[str, Any] | None = None) -> Any:
    """Evaluate an integrand or a field at nodes or points (see the module documentation).

    Args:
        integrand: an ``@fem.integrand``, or a field (interpolated as it is).
        dest: a :class:`DiscreteField` (values at its nodes), an array (values at quadrature points or ``dim``
            indices), or ``None``.
        at: a domain (nodes of ``dest`` on it), a space restriction, or a quadrature (its points).
        dest_space: unused (accepted for compatibility).
        dim: number of evaluations when there is neither ``at`` nor a field destination.
        fields: fields of the integrand's ``fem.Field`` parameters.
        values: values of its other parameters.
        reduction: how nodes shared by elements combine: ``"weighted_average"``, ``"mean"``, ``"sum"``,
            ``"max"``, ``"min"`` (componentwise) or ``"first"`` (the value of the lowest-numbered element).
        device: device to run on.
        kernel_options: compile options of the generated kernel.
        temporary_store: pool of temporary arrays.
        bsr_options: unused (accepted for compatibility).

    Returns:
        ``dest``.

    """
    what = "fem.interpolate"
    fields = dict(fields or {})
    values = dict(values or {})
    if isinstance(integrand, FieldLike):
        fields = {"field": integrand}
        itg = _field_integrand()
    else:
        itg = check_integrand(integrand, what)
    bind_arguments(itg, fields, values, what)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{what}: reduction must be one of {', '.join(map(repr, _REDUCTIONS))}, got {reduction!r}")
    device = wp.get_device(device) if device is not None else (
        dest.dof_values.device if isinstance(dest, DiscreteField) else
        dest.device if isinstance(dest, wp.array) else _device_of(fields, values))
    opts = dict(itg.kernel_options)
    opts.update(kernel_options or {})
    from .restriction import FieldRestriction, SpaceRestriction

    if isinstance(dest, FieldRestriction):
        if at is None:
            at = dest.domain
        dest = dest.field
    if isinstance(dest, DiscreteField):
        if isinstance(at, SpaceRestriction):
            at = at.domain
        if at is None:
            at = Cells(dest.space_partition.geo_partition)
        if not isinstance(at, GeometryDomain):
            raise TypeError(f"{what}: with a DiscreteField destination, 'at' must be a domain or a space "
                            f"restriction, got {type(at).__name__}")
        if at.geometry is not dest.geometry:
            raise IntegrateError(f"{what}: the destination field is on geometry {dest.geometry.name}, 'at' on "
                                 f"{at.geometry.name}")
        _to_nodes(itg, dest, at, fields, values, reduction, device, opts)
        return dest
    if hasattr(dest, "nrow") and hasattr(dest, "values"):
        raise NotImplementedError(f"{what}: interpolating into a BsrMatrix is not supported; integrate the "
                                  "corresponding bilinear form with a nodal or explicit quadrature instead")
    if isinstance(at, GeometryDomain) and dim is not None:
        _at_indices(itg, dest, int(dim), fields, values, device, opts, domain=at)
        return dest
    if isinstance(at, GeometryDomain):
        # one evaluation per element, at its center; the sample's qp_index is the domain element number
        from .quadrature import RegularQuadrature

        at = RegularQuadrature(at, order=0)
    if isinstance(at, Quadrature):
        _at_points(itg, dest, at, fields, values, device, opts)
        return dest
    if at is not None:
        raise TypeError(f"{what}: 'at' must be a quadrature, a domain or a space restriction, got "
                        f"{type(at).__name__}")
    if dim is None:
        if dest is None:
            raise IntegrateError(f"{what}: give a destination field, 'at' points, or 'dim'")
        dim = dest.shape[0]
    _at_indices(itg, dest, int(dim), fields, values, device, opts)
    return dest


def _domain_for_dim(fields: dict[str, Any]) -> Any:
    for f in fields.values():
        dom = getattr(f, "domain", None)
        if isinstance(dom, GeometryDomain):
            return dom
        geo = getattr(f, "geometry", None)
        if geo is not None:
            return Cells(geo)
    return None


def _head(src_ns: dict[str, Any], spec: Any, domain: Any, lines: list[str]) -> tuple[list[str], list[str]]:
    params: list[str] = []
    call: list[str] = []
    for name, p in spec.params:
        if p.kind == "sample":
            call.append("s")
        elif p.kind == "domain" and p.obj.partitioned:
            src_ns[f"D_{name}"] = p.type
            params.append(f"d_{name}: D_{name}")
            call.append(f"d_{name}")
        elif p.kind == "domain":
            call.append("dom_arg")
        elif p.kind == "field":
            src_ns[f"F_{name}"] = p.type
            params.append(f"f_{name}: F_{name}")
            call.append(f"f_{name}")
        else:
            src_ns[f"V_{name}"] = p.type
            params.append(f"v_{name}: V_{name}")
            call.append(f"v_{name}")
    return params, call


def _build(ns: dict[str, Any], lines: list[str], name: str, key: Any, opts: dict[str, Any]) -> Any:
    text = "\n".join(lines) + "\n"
    tag = codegen.digest(name, key)
    ns["__name__"] = codegen.GEN_MODULE
    ns["wp"] = wp
    codegen.exec_source(text, f"kernel {name} {tag}", ns)
    k = codegen.kernel(ns[name], key=f"{name}_{tag}", enable_backward=opts.get("enable_backward"))
    for opt, v in opts.items():
        if opt != "enable_backward":
            k.module.options[opt] = v
    return k


def _inputs(spec: Any, fields: dict[str, Any], values: dict[str, Any], domain: Any, device: Any) -> list[Any]:
    out = []
    for n, p in spec.params:
        if p.kind == "field":
            out.append(fields[n].field_arg_value(domain, device))
        elif p.kind == "value":
            out.append(kernel_value(p, values[n]))
        elif p.kind == "domain" and p.obj.partitioned:
            out.append(p.obj.integrand_arg_value(device))
    return out


def _sample_lines(ind: str) -> list[str]:
    return [f"{ind}s = SampleT()", f"{ind}s.element_index = element_index", f"{ind}s.element_coords = coords",
            f"{ind}s.qp_index = qp_index", f"{ind}s.qp_weight = qp_weight", f"{ind}s.test_dof = -1",
            f"{ind}s.trial_dof = -1"]


_REDUCTIONS = ("weighted_average", "mean", "sum", "max", "min", "first")


def _to_nodes(itg: Integrand, dest: DiscreteField, domain: GeometryDomain, fields: dict[str, Any],
              values: dict[str, Any], reduction: str, device: Any, opts: dict[str, Any]) -> None:
    from .field.nodal_funcs import basis_domain_funcs
    from .field.virtual import TestField
    from .nodal import nodal_funcs

    params = build_params(itg, domain, fields, values)
    spec = specialize(itg, params, domain)
    rtype = spec.return_type()
    space = dest.space
    test = TestField(space, dest.space_partition, domain)
    tf = basis_domain_funcs(test._cell, domain, "test_dof", space)
    v2d = getattr(tf, "value_to_dof", None)
    # vector-valued bases: each cell pulls the value back to its node's scalar dof before accumulating
    T = space.dof_dtype if v2d is not None else space.dtype
    nf = nodal_funcs(test, domain)
    S = domain.geometry.scalar_type
    key = ("nodes", spec.filename, domain.name, space.name, dest.space_partition.name, reduction,
           codegen.type_key(rtype), tuple(opts.items()))

    def make() -> Any:
        ns: dict[str, Any] = {"_integrand": spec.func, "SampleT": domain.geometry.sample_type, "DArg": domain.ElementArg,
                              "DIArg": domain.ElementIndexArg, "_dom_index": domain.funcs.element_index,
                              "_measure": domain.funcs.element_measure, "TArg": tf.FieldArg,
                              "_t_count": tf.element_node_count, "_t_node": tf.element_partition_node,
                              "_n_coords": nf.node_coords, "_n_weight": nf.node_weight, "T": T, "S": S,
                              "NULL_NODE_INDEX": NULL_NODE_INDEX}
        params_txt, call = _head(ns, spec, domain, [])
        weight = "_n_weight(test_arg, element_index, i) * _measure(dom_arg, s)" if reduction == "weighted_average" \
            else "S(1.0)"
        tail = ['acc: wp.array(dtype=T)', 'wsum: wp.array(dtype=S)', 'owner: wp.array(dtype=int)', 'phase: int']
        lines = [f"def interpolate_nodes({', '.join(['test_arg: TArg', 'dom_arg: DArg', 'dom_index_arg: DIArg'] + params_txt + tail)}):",
                 "    d, i = wp.tid()",
                 "    element_index = _dom_index(dom_index_arg, d)",
                 "    if element_index < 0:",
                 "        return",
                 "    if i >= _t_count(test_arg, element_index):",
                 "        return",
                 "    node = _t_node(test_arg, element_index, i)",
                 "    if node == NULL_NODE_INDEX or node < 0:",
                 "        return",
                 "    coords = _n_coords(test_arg, element_index, i)",
                 "    if coords[0] <= type(coords[0])(-1.0e7):",
                 "        return",
                 "    qp_index = node",
                 "    qp_weight = _n_weight(test_arg, element_index, i)"]
        value = f"T({'_integrand(' + ', '.join(call) + ')'})"
        if v2d is not None:
            ns.update(_v2d=v2d, VT=space.dtype)
            value = f"_v2d(test_arg, s, i, VT({'_integrand(' + ', '.join(call) + ')'}))"
        if reduction == "first":
            # phase 0 elects each node's lowest-numbered element, phase 1 lets only that element write
            lines += ["    if phase == 0:",
                      "        wp.atomic_min(owner, node, d)",
                      "        return",
                      "    if owner[node] != d:",
                      "        return"]
        lines += _sample_lines("    ")
        if reduction in ("max", "min", "first"):
            op = {"max": "wp.atomic_max", "min": "wp.atomic_min", "first": "wp.atomic_add"}[reduction]
            lines += [f"    {op}(acc, node, {value})",
                      "    wsum[node] = S(1.0)"]
        else:
            lines += [f"    w = S({weight})",
                      f"    wp.atomic_add(acc, node, {value} * w)",
                      "    wp.atomic_add(wsum, node, w)"]
        return _build(ns, lines, "interpolate_nodes", key, opts)

    k = itg.cached_kernels.get(key)
    if k is None:
        k = itg.cached_kernels[key] = make()
    n = dest.space_partition.node_count()
    grad = _needs_grad(fields, values) or dest.dof_values.requires_grad
    acc = wp.zeros(n, dtype=T, device=device, requires_grad=grad)
    if reduction in ("max", "min"):
        # start from the identity of the reduction
        big = np.finfo(wp.dtype_to_numpy(S)).max
        start = np.full((n, *np.shape(acc.numpy())[1:]), -big if reduction == "max" else big)
        acc.assign(start.astype(wp.dtype_to_numpy(S)))
    wsum = wp.zeros(n, dtype=S, device=device, requires_grad=grad)
    owner = wp.full(n if reduction == "first" else 1, 2**31 - 1, dtype=int, device=device)
    head = [test.field_arg_value(domain, device), domain.element_arg_value(device),
            domain.element_index_arg_value(device)] + _inputs(spec, fields, values, domain, device) + [acc, wsum, owner]
    dim = (domain.element_count(), space.topology.MAX_NODES_PER_ELEMENT * (2 if domain.element_kind.value else 1))
    if reduction == "first":
        _launch(_K(k), dim, head + [0], device)
    _launch(_K(k), dim, head + [1], device)
    fin = _finish_kernel(T, space.dof_dtype, space.dof_mapper.funcs.value_to_dof, S,
                         reduction in ("sum", "max", "min", "first"))
    wp.launch(fin, dim=n, inputs=[acc, wsum, dest.dof_values], device=device)


def _needs_grad(fields: dict[str, Any], values: dict[str, Any]) -> bool:
    for f in fields.values():
        dv = getattr(f, "_dof_values", None)
        if dv is not None and dv.requires_grad:
            return True
    return any(isinstance(v, wp.array) and v.requires_grad for v in values.values())


class _K:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel


_FINISH: dict[tuple[Any, ...], Any] = {}


def _finish_kernel(T: Any, D: Any, to_dof: Any, S: Any, is_sum: bool) -> Any:
    key = (T, D, id(to_dof), S, is_sum)
    k = _FINISH.get(key)
    if k is None:
        ValT = T
        DofT = D
        W = S
        SUM = is_sum

        def finish_nodes(acc: wp.array(dtype=ValT), wsum: wp.array(dtype=W), dofs: wp.array(dtype=DofT)):
            i = wp.tid()
            w = wsum[i]
            if w != W(0.0):
                if wp.static(SUM):
                    dofs[i] = to_dof(acc[i])
                else:
                    dofs[i] = to_dof(acc[i] / w)

        tag = codegen.digest(*(codegen.type_key(t) for t in (T, D, S)), id(to_dof), is_sum)
        k = _FINISH[key] = codegen.kernel(finish_nodes, key=f"finish_nodes_{tag}")
    return k


def _at_points(itg: Integrand, dest: Any, quadrature: Quadrature, fields: dict[str, Any], values: dict[str, Any],
               device: Any, opts: dict[str, Any]) -> None:
    domain = quadrature.domain
    params = build_params(itg, domain, fields, values)
    spec = specialize(itg, params, domain)
    rtype = spec.return_type()
    if dest is not None:
        if not isinstance(dest, wp.array):
            raise TypeError(f"fem.interpolate: at quadrature points, dest must be an array or None, got "
                            f"{type(dest).__name__}")
        if dest.shape[0] < quadrature.total_point_count():
            raise IntegrateError(f"fem.interpolate: dest has {dest.shape[0]} entries for "
                                 f"{quadrature.total_point_count()} quadrature points")
    write = dest is not None and rtype is not None
    DT = dest.dtype if dest is not None else None
    key = ("points", spec.filename, domain.name, quadrature.name, write, codegen.type_key(DT), tuple(opts.items()))

    def make() -> Any:
        q = quadrature.funcs
        ns: dict[str, Any] = {"_integrand": spec.func, "SampleT": domain.geometry.sample_type, "DArg": domain.ElementArg,
                              "DIArg": domain.ElementIndexArg, "QArg": q.Arg, "_dom_index": domain.funcs.element_index,
                              "_q_count": q.point_count, "_q_coords": q.point_coords, "_q_weight": q.point_weight,
                              "_q_index": q.point_index, "DT": DT}
        params_txt, call = _head(ns, spec, domain, [])
        outs = ["dest: wp.array(dtype=DT)"] if write else []
        lines = [f"def interpolate_points({', '.join(['qp_arg: QArg', 'dom_arg: DArg', 'dom_index_arg: DIArg'] + params_txt + outs)}):",
                 "    d = wp.tid()",
                 "    element_index = _dom_index(dom_index_arg, d)",
                 "    if element_index < 0:",
                 "        return",
                 "    for k in range(_q_count(dom_arg, qp_arg, d, element_index)):",
                 "        coords = _q_coords(dom_arg, qp_arg, d, element_index, k)",
                 "        qp_weight = _q_weight(dom_arg, qp_arg, d, element_index, k)",
                 "        qp_index = _q_index(dom_arg, qp_arg, d, element_index, k)"]
        lines += _sample_lines("        ")
        call_txt = f"_integrand({', '.join(call)})"
        lines += [f"        dest[qp_index] = DT({call_txt})" if write else f"        {call_txt}"]
        return _build(ns, lines, "interpolate_points", key, opts)

    k = itg.cached_kernels.get(key)
    if k is None:
        k = itg.cached_kernels[key] = make()
    inputs = [quadrature.arg_value(device), domain.element_arg_value(device), domain.element_index_arg_value(device)]
    inputs += _inputs(spec, fields, values, domain, device)
    if write:
        inputs.append(dest)
    _launch(_K(k), domain.element_count(), inputs, device)


def _at_indices(itg: Integrand, dest: Any, dim: int, fields: dict[str, Any], values: dict[str, Any], device: Any,
                opts: dict[str, Any], domain: Any = None) -> None:
    if domain is None:
        domain = _domain_for_dim(fields)
    if domain is None:
        for name, kind in itg.params():
            if kind in ("field", "domain"):
                raise IntegrandError(f"fem.interpolate(dim=...): cannot tell the domain of '{name}'")
        raise IntegrandError("fem.interpolate(dim=...) needs a field to tell the geometry (or use 'at')")
    params = build_params(itg, domain, fields, values)
    spec = specialize(itg, params, domain)
    rtype = spec.return_type()
    write = dest is not None and rtype is not None
    DT = dest.dtype if dest is not None else None
    key = ("indices", spec.filename, domain.name, write, codegen.type_key(DT), tuple(opts.items()))

    def make() -> Any:
        ns: dict[str, Any] = {"_integrand": spec.func, "SampleT": domain.geometry.sample_type,
                              "DArg": domain.ElementArg, "DT": DT, "Coords": domain.geometry.coords_type,
                              "W": domain.geometry.scalar_type}
        params_txt, call = _head(ns, spec, domain, [])
        outs = ["dest: wp.array(dtype=DT)"] if write else []
        lines = [f"def interpolate_indices({', '.join(['dom_arg: DArg'] + params_txt + outs)}):",
                 "    qp_index = wp.tid()",
                 "    element_index = -1",
                 "    coords = Coords()",
                 "    qp_weight = W(0.0)"]
        lines += _sample_lines("    ")
        call_txt = f"_integrand({', '.join(call)})"
        lines += [f"    dest[qp_index] = DT({call_txt})" if write else f"    {call_txt}"]
        return _build(ns, lines, "interpolate_indices", key, opts)

    k = itg.cached_kernels.get(key)
    if k is None:
        k = itg.cached_kernels[key] = make()
    inputs = [domain.element_arg_value(device)] + _inputs(spec, fields, values, domain, device)
    if write:
        inputs.append(dest)
    _launch(_K(k), dim, inputs, device)


__all__ = ["ParamSpec", "interpolate"]
