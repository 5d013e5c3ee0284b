"""The kernels ``fem.integrate`` generates, as Python source executed once per specialisation.

Every kernel takes ``(qp_arg, dom_arg, dom_index_arg, <field args>, <value args>, <outputs>)``: the quadrature's
argument (the test field's for nodal assembly), the domain's element and element-index arguments, one struct per
field parameter of the integrand, one argument per value parameter, then the outputs.
"""

from dataclasses import dataclass
from typing import Any

import treadle as wp

from . import codegen
from .field.nodal_funcs import basis_domain_funcs
from .integrand_codegen import Specialization
from .nodal import nodal_funcs
from .space.dof_mapper import is_vector_type
from .types import NULL_NODE_INDEX


@dataclass
class GeneratedKernel:
    """A generated kernel and the types of what it produces."""

    kernel: Any
    acc_type: Any = None
    out_type: Any = None
    block_type: Any = None
    #: per-element kernels: ``(element count, device) -> arrays`` passed between the inputs and the outputs
    scratch: Any = None


def _scalar_of(t: Any) -> Any:
    return getattr(t, "_wp_scalar_type_", t)


def _with_scalar(t: Any, S: Any) -> Any:
    shape = getattr(t, "_shape_", None)
    if shape is None:
        return S
    if len(shape) == 1:
        return wp.types.vector(shape[0], S)
    return wp.types.matrix(shape=tuple(shape), dtype=S)


class _Source:
    """Builds the text and namespace of one generated kernel."""

    def __init__(self, spec: Specialization, domain: Any, quadrature: Any, nodal_test: Any = None) -> None:
        self.ns: dict[str, Any] = {"wp": wp, "NULL_NODE_INDEX": NULL_NODE_INDEX}
        self.spec = spec
        self.domain = domain
        self.lines: list[str] = []
        self.ns["_integrand"] = spec.func
        self.ns["SampleT"] = domain.geometry.sample_type
        self.ns["DArg"] = domain.ElementArg
        self.ns["DIArg"] = domain.ElementIndexArg
        self.ns["_dom_index"] = domain.funcs.element_index
        self.ns["_measure"] = domain.funcs.element_measure
        if nodal_test is None:
            q = quadrature.funcs
            self.ns.update(QArg=q.Arg, _q_count=q.point_count, _q_coords=q.point_coords, _q_weight=q.point_weight,
                           _q_index=q.point_index)
        else:
            self.ns["QArg"] = nodal_test.EvalArg
        self.params: list[str] = ["qp_arg: QArg", "dom_arg: DArg", "dom_index_arg: DIArg"]
        self.call_args: list[str] = []
        for name, p in spec.params:
            if p.kind == "sample":
                self.call_args.append("s")
            elif p.kind == "domain" and p.obj.partitioned:
                # partitioned domains: element and partition arguments, passed as a parameter of their own
                self.ns[f"D_{name}"] = p.type
                self.params.append(f"d_{name}: D_{name}")
                self.call_args.append(f"d_{name}")
            elif p.kind == "domain":
                self.call_args.append("dom_arg")
            elif p.kind == "field":
                self.ns[f"F_{name}"] = p.type
                self.params.append(f"f_{name}: F_{name}")
                self.call_args.append(f"f_{name}")
            else:
                self.ns[f"V_{name}"] = p.type
                self.params.append(f"v_{name}: V_{name}")
                self.call_args.append(f"v_{name}")

    def call(self) -> str:
        return f"_integrand({', '.join(self.call_args)})"

    def sample_lines(self, indent: str, test_dof: str, trial_dof: str) -> list[str]:
        return [f"{indent}s = SampleT()",
                f"{indent}s.element_index = element_index",
                f"{indent}s.element_coords = coords",
                f"{indent}s.qp_index = qp_index",
                f"{indent}s.qp_weight = qp_weight",
                f"{indent}s.test_dof = {test_dof}",
                f"{indent}s.trial_dof = {trial_dof}"]

    def build(self, name: str, key: Any, opts: dict[str, Any]) -> Any:
        text = "\n".join(self.lines) + "\n"
        tag = codegen.digest(name, key)
        self.ns["__name__"] = codegen.GEN_MODULE
        codegen.exec_source(text, f"kernel {name} {tag}", self.ns)
        fn = self.ns[name]
        k = codegen.kernel(fn, key=f"{name}_{tag}", enable_backward=opts.get("enable_backward"))
        for opt, v in opts.items():
            if opt != "enable_backward":
                k.module.options[opt] = v
        return k


def _cache(itg: Any, key: tuple[Any, ...], make: Any) -> Any:
    k = itg.cached_kernels.get(key)
    if k is None:
        k = itg.cached_kernels[key] = make()
    return k


def _qp_loop_head(src: _Source, indent: str) -> None:
    src.lines += [f"{indent}qp_count = _q_count(dom_arg, qp_arg, d, element_index)",
                  f"{indent}for k in range(qp_count):",
                  f"{indent}    coords = _q_coords(dom_arg, qp_arg, d, element_index, k)",
                  f"{indent}    qp_weight = _q_weight(dom_arg, qp_arg, d, element_index, k)",
                  f"{indent}    qp_index = _q_index(dom_arg, qp_arg, d, element_index, k)"]


def constant_kernel(itg: Any, spec: Specialization, domain: Any, quadrature: Any, rtype: Any, acc: Any,
                    opts: dict[str, Any]) -> GeneratedKernel:
    """One thread per element, summing the integrand over the element's quadrature points."""
    acc_t = _with_scalar(rtype, acc)
    key = ("constant", spec.filename, domain.name, quadrature.name, codegen.type_key(acc_t), tuple(opts.items()))

    def make() -> GeneratedKernel:
        src = _Source(spec, domain, quadrature)
        src.ns["AccT"] = acc_t
        src.ns["AccS"] = acc
        zero = "AccT(0.0)" if getattr(acc_t, "_shape_", None) is None else "AccT()"
        src.lines += [f"def integrate_constant({', '.join(src.params + ['result: wp.array(dtype=AccT)'])}):",
                      "    d = wp.tid()",
                      "    element_index = _dom_index(dom_index_arg, d)",
                      "    if element_index < 0:",
                      "        return",
                      f"    val = {zero}"]
        _qp_loop_head(src, "    ")
        src.lines += src.sample_lines("        ", "-1", "-1")
        src.lines += ["        vol = AccS(_measure(dom_arg, s) * qp_weight)",
                      f"        val += AccT({src.call()}) * vol",
                      "    wp.atomic_add(result, 0, val)"]
        return GeneratedKernel(src.build("integrate_constant", key, opts), acc_type=acc_t)

    return _cache(itg, key, make)


def linear_kernel(itg: Any, spec: Specialization, domain: Any, quadrature: Any, test_name: str, test: Any,
                  acc: Any, out_s: Any, nodal: bool, opts: dict[str, Any]) -> GeneratedKernel:
    """One thread per (element, test node): the node's dof components' sums over the element's points."""
    DS = test.space.dof_mapper.DOF_SIZE
    out_t = _with_scalar(test.space.dof_dtype, out_s)
    acc_t = _with_scalar(test.space.dof_dtype, acc)
    key = ("linear", spec.filename, domain.name, None if nodal else quadrature.name, nodal, codegen.type_key(out_t),
           codegen.type_key(acc), tuple(opts.items()))

    def make() -> GeneratedKernel:
        src = _Source(spec, domain, quadrature, nodal_test=test if nodal else None)
        tf = basis_domain_funcs(test._cell, domain, "test_dof", test.space)
        src.ns.update(AccT=acc_t, AccS=acc, OutT=out_t, _t_count=tf.element_node_count,
                      _t_node=tf.element_partition_node)
        vec = is_vector_type(acc_t)
        mat = getattr(acc_t, "_shape_", None) is not None and len(acc_t._shape_) == 2
        zero = "AccT()" if (vec or mat) else "AccT(0.0)"
        src.lines += [f"def integrate_linear({', '.join(src.params + ['result: wp.array(dtype=OutT)'])}):",
                      "    d, i = wp.tid()",
                      "    element_index = _dom_index(dom_index_arg, d)",
                      "    if element_index < 0:",
                      "        return",
                      f"    if i >= _t_count(f_{test_name}, element_index):",
                      "        return",
                      f"    node = _t_node(f_{test_name}, element_index, i)",
                      "    if node == NULL_NODE_INDEX or node < 0:",
                      "        return",
                      f"    val = {zero}"]
        if nodal:
            nf = nodal_funcs(test, domain)
            src.ns.update(_n_coords=nf.node_coords, _n_weight=nf.node_weight)
            src.lines += [f"    coords = _n_coords(f_{test_name}, element_index, i)",
                          "    if coords[0] <= type(coords[0])(-1.0e7):",
                          "        return",
                          f"    qp_weight = _n_weight(f_{test_name}, element_index, i)",
                          "    qp_index = node"]
            ind = "    "
        else:
            _qp_loop_head(src, "    ")
            ind = "        "
        src.lines += src.sample_lines(ind, "0", "-1")
        src.lines += [f"{ind}vol = AccS(_measure(dom_arg, s) * qp_weight)"]
        if vec:
            src.lines += [f"{ind}for c in range({DS}):",
                          f"{ind}    s.test_dof = i * {DS} + c",
                          f"{ind}    val[c] += AccS({src.call()}) * vol"]
        elif mat:
            cols = acc_t._shape_[1]
            src.lines += [f"{ind}for c in range({DS}):",
                          f"{ind}    s.test_dof = i * {DS} + c",
                          f"{ind}    val[c // {cols}, c % {cols}] += AccS({src.call()}) * vol"]
        else:
            src.lines += [f"{ind}s.test_dof = i",
                          f"{ind}val += AccS({src.call()}) * vol"]
        src.lines += ["    wp.atomic_add(result, node, OutT(val))"]
        return GeneratedKernel(src.build("integrate_linear", key, opts), acc_type=acc_t, out_type=out_t)

    return _cache(itg, key, make)


def bilinear_kernel(itg: Any, spec: Specialization, domain: Any, quadrature: Any, test_name: str, test: Any,
                    trial_name: str, trial: Any, acc: Any, out_s: Any, nodal: bool,
                    opts: dict[str, Any]) -> GeneratedKernel:
    """One thread per (element, test node, trial node): a block written as a triplet."""
    TS = test.space.dof_mapper.DOF_SIZE
    RS = trial.space.dof_mapper.DOF_SIZE
    scalar_block = TS == 1 and RS == 1
    block_t = out_s if scalar_block else wp.types.matrix(shape=(TS, RS), dtype=out_s)
    acc_block = acc if scalar_block else wp.types.matrix(shape=(TS, RS), dtype=acc)
    key = ("bilinear", spec.filename, domain.name, None if nodal else quadrature.name, nodal,
           codegen.type_key(block_t), codegen.type_key(acc), tuple(opts.items()))

    def make() -> GeneratedKernel:
        src = _Source(spec, domain, quadrature, nodal_test=test if nodal else None)
        tf = basis_domain_funcs(test._cell, domain, "test_dof", test.space)
        rf = basis_domain_funcs(trial._cell, domain, "trial_dof", trial.space)
        src.ns.update(AccB=acc_block, AccS=acc, BlockT=block_t, _t_count=tf.element_node_count,
                      _t_node=tf.element_partition_node, _r_count=rf.element_node_count,
                      _r_node=rf.element_partition_node)
        mt = test.space.topology.MAX_NODES_PER_ELEMENT * (2 if domain.element_kind.value == 1 else 1)
        mr = 1 if nodal else trial.space.topology.MAX_NODES_PER_ELEMENT * (2 if domain.element_kind.value == 1 else 1)
        zero = "AccB(0.0)" if scalar_block else "AccB()"
        outs = ["rows: wp.array(dtype=int)", "cols: wp.array(dtype=int)", "vals: wp.array(dtype=BlockT)"]
        src.lines += [f"def integrate_bilinear({', '.join(src.params + outs)}):",
                      "    d, i, jj = wp.tid()",
                      f"    off = (d * {mt} + i) * {mr} + jj",
                      "    rows[off] = -1",
                      "    cols[off] = -1",
                      "    element_index = _dom_index(dom_index_arg, d)",
                      "    if element_index < 0:",
                      "        return",
                      f"    if i >= _t_count(f_{test_name}, element_index):",
                      "        return"]
        if nodal:
            src.lines += ["    j = i"]
        else:
            src.lines += ["    j = jj",
                          f"    if j >= _r_count(f_{trial_name}, element_index):",
                          "        return"]
        src.lines += [f"    tnode = _t_node(f_{test_name}, element_index, i)",
                      f"    rnode = _r_node(f_{trial_name}, element_index, j)",
                      "    if tnode == NULL_NODE_INDEX or rnode == NULL_NODE_INDEX or tnode < 0 or rnode < 0:",
                      "        return",
                      f"    val = {zero}"]
        if nodal:
            nf = nodal_funcs(test, domain)
            src.ns.update(_n_coords=nf.node_coords, _n_weight=nf.node_weight)
            src.lines += [f"    coords = _n_coords(f_{test_name}, element_index, i)",
                          "    if coords[0] <= type(coords[0])(-1.0e7):",
                          "        return",
                          f"    qp_weight = _n_weight(f_{test_name}, element_index, i)",
                          "    qp_index = tnode"]
            ind = "    "
        else:
            _qp_loop_head(src, "    ")
            ind = "        "
        src.lines += src.sample_lines(ind, "0", "0")
        src.lines += [f"{ind}vol = AccS(_measure(dom_arg, s) * qp_weight)"]
        if scalar_block:
            src.lines += [f"{ind}s.test_dof = i",
                          f"{ind}s.trial_dof = j",
                          f"{ind}val += AccS({src.call()}) * vol"]
        else:
            src.lines += [f"{ind}for ci in range({TS}):",
                          f"{ind}    s.test_dof = i * {TS} + ci",
                          f"{ind}    for cj in range({RS}):",
                          f"{ind}        s.trial_dof = j * {RS} + cj",
                          f"{ind}        val[ci, cj] += AccS({src.call()}) * vol"]
        src.lines += ["    rows[off] = tnode",
                      "    cols[off] = rnode",
                      "    vals[off] = BlockT(val)"]
        return GeneratedKernel(src.build("integrate_bilinear", key, opts), block_type=block_t)

    return _cache(itg, key, make)


_CASTS: dict[tuple[Any, Any], Any] = {}


def cast_kernel(src_t: Any, dst_t: Any) -> Any:
    """``dst[0] = dst[0] * add + dst_t(src[0])`` (differentiable)."""
    key = (src_t, dst_t)
    k = _CASTS.get(key)
    if k is None:
        Src = src_t
        Dst = dst_t

        def cast_value(src: wp.array(dtype=Src), dst: wp.array(dtype=Dst), add: int):
            if add != 0:
                dst[0] = dst[0] + Dst(src[0])
            else:
                dst[0] = Dst(src[0])

        tag = codegen.digest(codegen.type_key(src_t), codegen.type_key(dst_t))
        k = _CASTS[key] = codegen.kernel(cast_value, key=f"cast_{tag}")
    return k
