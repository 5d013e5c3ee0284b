"""Element-wise kernels of linear and bilinear forms over cells.

The generic kernels (:mod:`.integrate_kernels`) run one thread per (element, test node[, trial node]) and evaluate
the test and trial basis functions inside every integrand call. Over cells, for test and trial functions of nodal
spaces, ``fem.integrate`` uses the kernels here instead: one thread per element and, at each quadrature point,

1. the weights and world-space weight gradients of every node of the element are evaluated once into a
   per-point cache (:class:`QPCachedBasis`, the integrand's view of a test or trial field), then
2. the integrand is evaluated for every (test dof[, trial dof]) pair, reading the basis values and gradients from
   the cache, and accumulated into the element's rows of an accumulator array (in the accumulation type),

which is written out once per element (linear forms add it to the nodes' entries; bilinear forms write it as the
element's triplets for :func:`treadle.sparse.bsr_set_from_triplets`). The sums are the generic kernels' sums
(the same terms, in the same quadrature order).

Integrands using an operator the cache does not provide (a node-wise operator, a reference gradient...) keep the
generic kernels, as do side domains, nodal assembly and differentiated linear forms. The caches and accumulators
are arrays, not kernel-local vectors: local aggregates are values, copied whole when passed or updated.
"""

from typing import Any

import treadle as wp

from . import codegen
from .field.algebra import unit_dof_func, value_funcs
from .field.field import FieldLike, Resolved
from .field.nodal_funcs import basis_domain_funcs
from .field.virtual import TestField, TrialField, _BasisField
from .integrand_codegen import ParamSpec, Specialization, specialize
from .integrate_kernels import GeneratedKernel, _cache, _qp_loop_head, _Source, _with_scalar
from .space.dof_mapper import is_vector_type
from .types import ElementKind

#: whether ``fem.integrate`` uses these kernels where they apply (the generic kernels compute the same sums)
ENABLED = True


class NeedsGeneric(Exception):  # noqa: N818 - a signal, not an error shown to users
    """The integrand uses something the per-point basis cache does not provide."""


class QPCachedBasis(FieldLike):
    """A test or trial field whose basis values and gradients are read from a per-quadrature-point cache.

    The kernel keeps the weights and world-space weight gradients of the element's nodes at the current point in
    arrays (one row of nodes per thread); the integrand argument is ``{w, g}``, the weight and gradient of the node
    of the dof being evaluated (the component comes from the sample's dof index, as for the field itself).
    """

    def __init__(self, field: _BasisField, domain: Any) -> None:
        self.field = field
        self.dtype = field.dtype
        space = field.space
        self.space = space
        geo = space.geometry
        self.N = space.topology.MAX_NODES_PER_ELEMENT
        self.S = geo.scalar_type
        self.V = wp.types.vector(geo.dimension, self.S)
        base = field.field_arg_type(domain)
        # only the current node's weight and gradient: the integrand receives its field arguments by value
        self.Arg = codegen.struct("QPCachedFieldArg", {"w": self.S, "g": self.V}, base.key)
        self.dof_attr = field._dof_attr
        self._funcs = _cached_funcs(self)

    @property
    def name(self) -> str:
        """The field's name, marked as cached."""
        return f"{self.field.name}_qpcache"

    @property
    def geometry(self) -> Any:
        """The space's geometry."""
        return self.field.geometry

    @property
    def degree(self) -> int:
        """The space's degree."""
        return self.field.degree

    @property
    def gradient_dtype(self) -> Any:
        """The space's gradient type."""
        return self.field.gradient_dtype

    @property
    def divergence_dtype(self) -> Any:
        """The space's divergence type."""
        return self.field.divergence_dtype

    def field_arg_type(self, domain: Any) -> Any:
        """The cached argument struct."""
        return self.Arg

    def resolve(self, op: str, domain: Any, nargs: int) -> Resolved:
        """Values, gradients and divergences from the cache; anything else makes the integral generic."""
        if op in ("degree", "scalar_type"):
            return self.field.resolve(op, domain, nargs)
        fn = self._funcs.get(op)
        if fn is None or nargs > 2:
            raise NeedsGeneric(op)
        return Resolved(fn)


_FUNCS: dict[tuple[Any, ...], dict[str, Any]] = {}


def _cached_funcs(cf: QPCachedBasis) -> dict[str, Any]:
    # one set of functions per kind of cache: functions of the same name must be the same function
    space = cf.space
    memo = (cf.dof_attr, cf.Arg.key, codegen.type_key(space.dtype), codegen.type_key(space.dof_dtype),
            space.dof_mapper.DOF_SIZE, id(space.dof_mapper.funcs), space.geometry.cell_dimension,
            space.geometry.dimension)
    out = _FUNCS.get(memo)
    if out is None:
        out = _FUNCS[memo] = _make_cached_funcs(cf, memo)
    return out


def _make_cached_funcs(cf: QPCachedBasis, memo: tuple[Any, ...]) -> dict[str, Any]:
    space = cf.space
    alg = value_funcs(space.dtype, space.geometry.cell_dimension, space.geometry.dimension)
    DS = space.dof_mapper.DOF_SIZE
    dof_to_value = space.dof_mapper.funcs.dof_to_value
    unit = unit_dof_func(space.dof_dtype)
    Arg = cf.Arg
    T = space.dtype
    key = ("qpcache", *memo)
    if cf.dof_attr == "test_dof":
        def dof_of(s: Any) -> int:
            return s.test_dof
    else:
        def dof_of(s: Any) -> int:
            return s.trial_dof
    dof_of = codegen.func(dof_of, *key)

    def cached_value(fa: Arg, s: Any) -> T:
        dof = dof_of(s)
        k = dof // DS
        return dof_to_value(unit(dof - k * DS)) * fa.w

    value = codegen.func(cached_value, *key)
    out = {"inner": value, "outer": value}
    if alg.G is not None:
        # the cache holds grad(weight) @ inv(F): (v (x) grad w) @ inv(F) is v (x) (grad w @ inv(F)), a world-space
        # gradient (of the world dimension, also on cells embedded in a higher-dimensional space)
        if is_vector_type(T):
            def grad_term(v: T, g: Any):
                return wp.outer(v, g)
        else:
            def grad_term(v: T, g: Any):
                return v * g
        grad_term = codegen.func(grad_term, "grad_term", *key)

        def cached_grad(fa: Arg, s: Any):
            dof = dof_of(s)
            k = dof // DS
            return grad_term(dof_to_value(unit(dof - k * DS)), fa.g)

        grad = codegen.func(cached_grad, *key)
        out.update(grad=grad, grad_outer=grad)
    if alg.Div is not None:
        div_term = alg.div_term

        def cached_div(fa: Arg, s: Any):
            dof = dof_of(s)
            k = dof // DS
            return div_term(dof_to_value(unit(dof - k * DS)), fa.g)

        div = codegen.func(cached_div, *key)
        out.update(div=div, div_outer=div)
    return out


def eligible(domain: Any, nodal: bool, *fields: Any) -> bool:
    """Whether the element-wise kernels apply: cells, quadrature assembly, test/trial fields of nodal spaces."""
    if not ENABLED or nodal or domain.element_kind != ElementKind.CELL:
        return False
    for f in fields:
        if not isinstance(f, (TestField, TrialField)) or type(f).domain_funcs is not _BasisField.domain_funcs:
            return False
        cell = f._cell
        if not hasattr(cell, "cell_node_weight_gradient") or not hasattr(cell, "cell_node_weight"):
            return False
    return True


def _cached_spec(itg: Any, spec: Specialization, domain: Any, names: list[str]) -> tuple[Specialization,
                                                                                         dict[str, QPCachedBasis]]:
    cached = {n: QPCachedBasis(p.obj, domain) for n, p in spec.params if n in names}
    params = {n: (ParamSpec("field", cached[n], cached[n].Arg) if n in cached else p) for n, p in spec.params}
    return specialize(itg, params, domain), cached


def _prepare(src: _Source, name: str, field: Any, cached: QPCachedBasis, stride: int) -> None:
    """Names of the cache of field ``name``: its types, its fill functions, its kernel parameters."""
    cell = field._cell
    src.ns.update({f"S_{name}": cached.S, f"V_{name}": cached.V, f"C_{name}": cached.Arg,
                   f"_w_{name}": cell.cell_node_weight, f"_g_{name}": cell.cell_node_weight_gradient})
    src.params += [f"cw_{name}: wp.array(dtype=S_{name})", f"cg_{name}: wp.array(dtype=V_{name})"]
    src.call_args = [f"c_{name}" if a == f"f_{name}" else a for a in src.call_args]
    src.cache_lines += [f"    c_{name} = C_{name}()"]
    src.fill_lines += [f"        for k_ in range(n_{name}):",
                       f"            cw_{name}[d * {stride} + k_] = _w_{name}(f_{name}.elt_arg, f_{name}.eval_arg, s, k_)",
                       f"            cg_{name}[d * {stride} + k_] = _g_{name}(f_{name}.elt_arg, f_{name}.eval_arg, s, k_)"]
    src.caches.append((cached.S, cached.V, stride))


def _source(spec: Specialization, cspec: Specialization, domain: Any, quadrature: Any) -> _Source:
    """The kernel takes the fields' own arguments (``spec``) and calls the cached specialisation (``cspec``)."""
    src = _Source(spec, domain, quadrature)
    src.ns["_integrand"] = cspec.func
    src.cache_lines = []  # type: ignore[attr-defined]
    src.fill_lines = []  # type: ignore[attr-defined]
    src.caches = []  # type: ignore[attr-defined]
    return src


def _scratch(caches: list[tuple[Any, Any, int]], acc: Any, acc_per_element: int) -> Any:
    """``(element count, device) -> [cache arrays..., accumulator]``: the per-thread rows the kernel works in."""

    def make(n: int, device: Any) -> list[Any]:
        out = []
        for S, V, stride in caches:
            out += [wp.empty(n * stride, dtype=S, device=device), wp.empty(n * stride, dtype=V, device=device)]
        out.append(wp.empty(n * acc_per_element, dtype=acc, device=device))
        return out

    return make


def _cached(itg: Any, key: tuple[Any, ...], make: Any) -> GeneratedKernel | None:
    """``_cache`` that also remembers that an integrand needs the generic kernel."""
    k = _cache(itg, key, lambda: make() or False)
    return k or None


def linear_cells_kernel(itg: Any, spec: Specialization, domain: Any, quadrature: Any, test_name: str, test: Any,
                        acc: Any, out_s: Any, opts: dict[str, Any]) -> GeneratedKernel | None:
    """One thread per cell: the element vector of a linear form.

    Returns ``None`` when the integrand needs the generic kernel.
    """
    DS = test.space.dof_mapper.DOF_SIZE
    MT = test.space.topology.MAX_NODES_PER_ELEMENT
    out_t = _with_scalar(test.space.dof_dtype, out_s)
    acc_t = _with_scalar(test.space.dof_dtype, acc)
    key = ("linear_cells", spec.filename, domain.name, quadrature.name, codegen.type_key(out_t),
           codegen.type_key(acc), tuple(opts.items()))

    def make() -> GeneratedKernel | None:
        try:
            cspec, cached = _cached_spec(itg, spec, domain, [test_name])
        except NeedsGeneric:
            return None
        src = _source(spec, cspec, domain, quadrature)
        tf = basis_domain_funcs(test._cell, domain, "test_dof", test.space)
        t = test_name
        _prepare(src, t, test, cached[t], MT)
        vec = is_vector_type(acc_t)
        mat = getattr(acc_t, "_shape_", None) is not None and len(acc_t._shape_) == 2
        src.ns.update(AccT=acc_t, AccS=acc, OutT=out_t, _t_count=tf.element_node_count,
                      _t_node=tf.element_partition_node)
        outs = ["accv: wp.array(dtype=AccS)", "result: wp.array(dtype=OutT)"]
        src.lines += [f"def integrate_linear_cells({', '.join(src.params + outs)}):",
                      "    d = wp.tid()",
                      "    element_index = _dom_index(dom_index_arg, d)",
                      "    if element_index < 0:",
                      "        return",
                      f"    n_{t} = _t_count(f_{t}, element_index)",
                      f"    abase = d * {MT * DS}",
                      f"    for a in range(abase, abase + {MT * DS}):",
                      "        accv[a] = AccS(0.0)"]
        src.lines += src.cache_lines
        _qp_loop_head(src, "    ")
        src.lines += src.sample_lines("        ", "0", "-1")
        src.lines += src.fill_lines
        src.lines += ["        vol = AccS(_measure(dom_arg, s) * qp_weight)",
                      f"        for i in range(n_{t} * {DS}):",
                      "            s.test_dof = i",
                      f"            it = i // {DS}",
                      f"            c_{t}.w = cw_{t}[d * {MT} + it]",
                      f"            c_{t}.g = cg_{t}[d * {MT} + it]",
                      f"            accv[abase + i] = accv[abase + i] + AccS({src.call()}) * vol",
                      f"    for i in range(n_{t}):",
                      f"        node = _t_node(f_{t}, element_index, i)",
                      "        if node != NULL_NODE_INDEX and node >= 0:"]
        if vec:
            src.lines += ["            val = AccT()",
                          f"            for c in range({DS}):",
                          f"                val[c] = accv[abase + i * {DS} + c]"]
        elif mat:
            cols = acc_t._shape_[1]
            src.lines += ["            val = AccT()",
                          f"            for c in range({DS}):",
                          f"                val[c // {cols}, c % {cols}] = accv[abase + i * {DS} + c]"]
        else:
            src.lines += ["            val = accv[abase + i]"]
        src.lines += ["            wp.atomic_add(result, node, OutT(val))"]
        return GeneratedKernel(src.build("integrate_linear_cells", key, opts), acc_type=acc_t, out_type=out_t,
                               scratch=_scratch(src.caches, acc, MT * DS))

    return _cached(itg, key, make)


def bilinear_cells_kernel(itg: Any, spec: Specialization, domain: Any, quadrature: Any, test_name: str, test: Any,
                          trial_name: str, trial: Any, acc: Any, out_s: Any,
                          opts: dict[str, Any]) -> GeneratedKernel | None:
    """One thread per cell: the element matrix of a bilinear form, for :func:`.assemble_rows.assemble_rows`.

    Returns ``None`` when the integrand needs the generic kernel.
    """
    TS = test.space.dof_mapper.DOF_SIZE
    RS = trial.space.dof_mapper.DOF_SIZE
    MT = test.space.topology.MAX_NODES_PER_ELEMENT
    MR = trial.space.topology.MAX_NODES_PER_ELEMENT
    scalar_block = TS == 1 and RS == 1
    block_t = out_s if scalar_block else wp.types.matrix(shape=(TS, RS), dtype=out_s)
    key = ("bilinear_cells", spec.filename, domain.name, quadrature.name, codegen.type_key(block_t),
           codegen.type_key(acc), tuple(opts.items()))

    def make() -> GeneratedKernel | None:
        try:
            cspec, cached = _cached_spec(itg, spec, domain, [test_name, trial_name])
        except NeedsGeneric:
            return None
        src = _source(spec, cspec, domain, quadrature)
        tf = basis_domain_funcs(test._cell, domain, "test_dof", test.space)
        rf = basis_domain_funcs(trial._cell, domain, "trial_dof", trial.space)
        t, r = test_name, trial_name
        _prepare(src, t, test, cached[t], MT)
        _prepare(src, r, trial, cached[r], MR)
        src.ns.update(AccS=acc, OutS=out_s, BlockT=block_t, _t_count=tf.element_node_count,
                      _t_node=tf.element_partition_node, _r_count=rf.element_node_count,
                      _r_node=rf.element_partition_node)
        block = TS * RS
        outs = ["accv: wp.array(dtype=AccS)", "tnodes: wp.array(dtype=int)", "rnodes: wp.array(dtype=int)",
                "vals: wp.array(dtype=BlockT)"]
        src.lines += [f"def integrate_bilinear_cells({', '.join(src.params + outs)}):",
                      "    d = wp.tid()",
                      f"    for i in range({MT}):",
                      f"        tnodes[d * {MT} + i] = -1",
                      f"    for j in range({MR}):",
                      f"        rnodes[d * {MR} + j] = -1",
                      "    element_index = _dom_index(dom_index_arg, d)",
                      "    if element_index < 0:",
                      "        return",
                      f"    n_{t} = _t_count(f_{t}, element_index)",
                      f"    n_{r} = _r_count(f_{r}, element_index)",
                      f"    base = d * {MT * MR}",
                      f"    abase = base * {block}",
                      f"    for a in range(abase, abase + {MT * MR * block}):",
                      "        accv[a] = AccS(0.0)"]
        src.lines += src.cache_lines
        _qp_loop_head(src, "    ")
        src.lines += src.sample_lines("        ", "0", "0")
        src.lines += src.fill_lines
        src.lines += ["        vol = AccS(_measure(dom_arg, s) * qp_weight)",
                      f"        for i in range(n_{t} * {TS}):",
                      "            s.test_dof = i",
                      f"            it = i // {TS}",
                      f"            c_{t}.w = cw_{t}[d * {MT} + it]",
                      f"            c_{t}.g = cg_{t}[d * {MT} + it]",
                      f"            row = abase + it * {MR * block} + (i - it * {TS}) * {RS}",
                      f"            for j in range(n_{r} * {RS}):",
                      "                s.trial_dof = j",
                      f"                jt = j // {RS}",
                      f"                c_{r}.w = cw_{r}[d * {MR} + jt]",
                      f"                c_{r}.g = cg_{r}[d * {MR} + jt]",
                      f"                a = row + jt * {block} + j - jt * {RS}",
                      f"                accv[a] = accv[a] + AccS({src.call()}) * vol",
                      f"    for i in range(n_{t}):",
                      f"        tnode = _t_node(f_{t}, element_index, i)",
                      "        if tnode != NULL_NODE_INDEX and tnode >= 0:",
                      f"            tnodes[d * {MT} + i] = tnode",
                      f"    for j in range(n_{r}):",
                      f"        rnode = _r_node(f_{r}, element_index, j)",
                      "        if rnode != NULL_NODE_INDEX and rnode >= 0:",
                      f"            rnodes[d * {MR} + j] = rnode",
                      f"    for i in range(n_{t}):",
                      f"        for j in range(n_{r}):",
                      f"            off = base + i * {MR} + j"]
        if scalar_block:
            src.lines += ["            vals[off] = BlockT(accv[off])"]
        else:
            src.lines += ["            b = BlockT()",
                          f"            for ci in range({TS}):",
                          f"                for cj in range({RS}):",
                          f"                    b[ci, cj] = OutS(accv[off * {block} + ci * {RS} + cj])",
                          "            vals[off] = b"]
        return GeneratedKernel(src.build("integrate_bilinear_cells", key, opts), block_type=block_t,
                               scratch=_scratch(src.caches, acc, MT * MR * block))

    return _cached(itg, key, make)
