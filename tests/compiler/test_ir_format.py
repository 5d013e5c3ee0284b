"""The printed IR (``TREADLE_DUMP=ir``, golden IR tests) names what each statement calls."""

from __future__ import annotations

import treadle as wp
from treadle._src.compiler import ir


@wp.func
def _square(x: float) -> float:
    return x * x


@wp.kernel
def _grads(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.grad(wp.sin)(x[i]) + wp.grad(_square)(x[i])


def test_grad_of_a_builtin_and_of_a_function_print_their_names() -> None:
    text = ir.format_func(_grads.get_instance(None).ir)
    assert "grad sin(" in text
    assert "grad _square(" in text
    assert "Overload(" not in text and "0x" not in text  # no object reprs (addresses differ run to run)


def test_struct_accumulators_follow_definition_order() -> None:
    """The backward block's text (its cache key) must not depend on hash order: structs of equal nesting depth
    get their ``adj_accum`` overloads in the order their definitions were emitted."""
    from treadle._src.compiler.emit_adjoint import AdjointEmitter
    from treadle._src.compiler.emit_cpp import Emitter

    structs = []
    for n in range(12):
        structs.append(wp.struct(type(f"S{n}", (), {"__annotations__": {"x": float}, "__module__": __name__})))
    for order in (structs, structs[::-1]):
        em = Emitter(line_directives=False)
        for t in order:
            em.need_type(t)
        text = "\n".join(AdjointEmitter(em).struct_accumulators())
        positions = [text.index(f"adj_accum({t.native_name}&") for t in order]
        assert positions == sorted(positions)
