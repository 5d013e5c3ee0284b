"""The IR is closed (no attributes bolted onto nodes) and verified for structure and types after every pass."""

from __future__ import annotations

import os

import pytest

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.compiler import ir
from treadle._src.compiler.structurize import structurize
from treadle._src.types import scalars
from treadle._src.types.typesys import ArrayT


def _func(stmts: list[ir.Stmt], params: list[ir.Local] = (), locals_: list[ir.Local] = (),
          kernel: bool = True, ret: object = None) -> ir.FuncIR:
    return ir.FuncIR("f", list(params), ret, ir.Block(list(stmts)), list(locals_), kernel)


def test_the_test_suite_verifies_every_pass() -> None:
    assert os.environ.get("TREADLE_VERIFY_IR") == "1"
    assert ir.verify_enabled()


def test_nodes_take_no_undeclared_attributes() -> None:
    loop = ir.ForRange(None, ir.Local(1, "i", scalars.int32), ir.Const(0, scalars.int32), ir.Const(1, scalars.int32),
                       ir.Const(1, scalars.int32), ir.Block())
    with pytest.raises(AttributeError):
        loop.exits = None  # type: ignore[attr-defined]  # a typo of the declared field ``exit``
    f = _func([loop], locals_=[loop.var])
    with pytest.raises(AttributeError):
        f.ret_val = None  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        f.body.adjoint_local = []  # type: ignore[attr-defined]


def test_verify_catches_structural_errors() -> None:
    x = ir.Local(1, "x", scalars.float32)
    v = ir.Value(2, scalars.float32)
    with pytest.raises(ir.IRError, match="used before definition"):
        ir.verify(_func([ir.StoreLocal(None, x, v)], locals_=[x]))
    with pytest.raises(ir.IRError, match="defined twice"):
        ir.verify(_func([ir.LoadLocal(None, v, x), ir.LoadLocal(None, v, x)], locals_=[x]))
    with pytest.raises(ir.IRError, match="not a local"):
        ir.verify(_func([ir.LoadLocal(None, v, x)]))
    with pytest.raises(ir.IRError, match="outside a loop"):
        ir.verify(_func([ir.Break(None)]))


def test_verify_catches_type_errors() -> None:
    x = ir.Local(1, "x", scalars.float32)
    i = ir.Local(2, "i", scalars.int32)
    a = ir.Local(3, "a", ArrayT(scalars.float32, 1))
    v = ir.Value(4, scalars.float64)
    ok = _func([ir.LoadLocal(None, ir.Value(4, scalars.float32), x)], locals_=[x])
    ir.verify(ok)
    with pytest.raises(ir.IRError, match="loaded value has type float64, expected float32"):
        ir.verify(_func([ir.LoadLocal(None, v, x)], locals_=[x]))
    with pytest.raises(ir.IRError, match="stored value"):
        ir.verify(_func([ir.StoreLocal(None, i, ir.Const(1.0, scalars.float32))], locals_=[i]))
    arr = ir.Value(5, a.type)
    with pytest.raises(ir.IRError, match="an index of type float32"):
        ir.verify(_func([ir.LoadLocal(None, arr, a), ir.ArrayStore(None, arr, [ir.Const(0.5, scalars.float32)],
                                                                   ir.Const(1.0, scalars.float32))], params=[a]))
    with pytest.raises(ir.IRError, match="an array operand"):
        ir.verify(_func([ir.LoadLocal(None, ir.Value(6, scalars.float32), x),
                         ir.ArrayLoad(None, ir.Value(7, scalars.float32), ir.Value(6, scalars.float32),
                                      [ir.Const(0, scalars.int32)])], locals_=[x]))
    ov = REGISTRY.builtins["sin"].resolve([scalars.float32])
    with pytest.raises(ir.IRError, match="result has type float64"):
        ir.verify(_func([ir.Call(None, ir.Value(8, scalars.float64), ov, [ir.Const(1.0, scalars.float32)])]))
    with pytest.raises(ir.IRError, match="condition of type float32"):
        ir.verify(_func([ir.If(None, ir.Const(1.0, scalars.float32), ir.Block(), ir.Block())]))
    with pytest.raises(ir.IRError, match="kernel returning a value"):
        ir.verify(_func([ir.Return(None, ir.Const(1, scalars.int32))]))
    # structure-only verification (what lowering runs outside the tests) lets type errors through
    ir.verify(_func([ir.LoadLocal(None, v, x)], locals_=[x]), types=False)


@wp.func
def _first_positive(a: wp.array(dtype=float)) -> int:
    for i in range(a.shape[0]):
        if a[i] > 0.0:
            return i
    return -1


@wp.kernel
def _uses_first_positive(a: wp.array(dtype=float), out: wp.array(dtype=int)):
    out[0] = _first_positive(a)


def test_structurize_fills_in_declared_fields_and_verifies() -> None:
    inst = _uses_first_positive.get_instance(None)
    fi = next(d for d in inst.deps if d.ir.name.endswith("_first_positive"))
    g = structurize(fi.ir)
    assert g.retval is not None and g.retval in g.locals
    loops = [s for s in ir.walk(g.body) if isinstance(s, ir.ForRange)]
    assert loops and all(s.exit is not None for s in loops)
    assert fi.ir.retval is None  # the input is not modified
    ir.verify(g)


def test_a_pass_that_breaks_the_types_is_reported_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    x = ir.Local(1, "x", scalars.float32)
    bad = _func([ir.LoadLocal(None, ir.Value(2, scalars.int32), x)], locals_=[x])
    with pytest.raises(ir.IRError, match="after structurize: "):
        ir.verify_pass(bad, "structurize")
    monkeypatch.setenv("TREADLE_VERIFY_IR", "0")
    ir.verify_pass(bad, "structurize")  # off: only the structural check of lowering runs outside the tests
    ir.verify_pass(bad, "lowering", structure_only=True)
