"""Tape recording beyond kernel launches: copies (``wp.copy``/``clone``/``assign``), struct arguments, scopes,
``visualize`` and seeding gradients of arrays created without a gradient buffer."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def scale2(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])


@wp.kernel
def total2d(x: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(out, 0, x[i, j] * float(i + 1))


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.struct
class Pair:
    a: wp.array(dtype=float)
    b: wp.array(dtype=float)
    w: float


@wp.kernel
def pair_dot(p: Pair, out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, p.a[i] * p.b[i] * p.w)


def _arr(values, **kw):
    return wp.array(np.asarray(values, dtype=np.float32), dtype=float, requires_grad=True, **kw)


def test_copy_adjoint_adds_into_source():
    x = _arr([1.0, 2.0, 3.0, 4.0])
    c = wp.zeros(4, dtype=float, requires_grad=True)
    d = wp.zeros(4, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(c, x)
        wp.launch(scale2, 4, inputs=[x, d])  # x is also used directly
        wp.launch(total, 4, inputs=[d, loss])
        wp.launch(square, 4, inputs=[c], outputs=[d2 := wp.zeros(4, dtype=float, requires_grad=True)])
        wp.launch(total, 4, inputs=[d2, loss])
    tape.backward(loss=loss)
    xn = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), 2.0 + 2.0 * xn)


@pytest.mark.parametrize("how", ["clone", "assign"])
def test_clone_and_assign_are_recorded(how):
    x = _arr([1.0, -2.0, 0.5])
    y = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        if how == "clone":
            c = wp.clone(x)
        else:
            c = wp.zeros(3, dtype=float, requires_grad=True)
            c.assign(x)
        wp.launch(square, 3, inputs=[c], outputs=[y])
    tape.backward(grads={y: np.ones(3, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 1.0])


def test_copy_consumes_the_destination_gradient():
    # y's first value (written by scale2) is dead: the copy overwrites it, so nothing reaches x
    x, s = _arr(np.ones(4)), _arr(np.full(4, 5.0))
    y = wp.zeros(4, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(scale2, 4, inputs=[x, y])
        wp.copy(y, s)
        wp.launch(total, 4, inputs=[y, loss])
    tape.backward(loss=loss)
    np.testing.assert_array_equal(s.grad.numpy(), np.ones(4))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))


def test_two_copies_into_one_destination():
    a, b = _arr(np.ones(3)), _arr(np.full(3, 2.0))
    dst = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(dst, a)
        wp.copy(dst, b)
        wp.launch(total, 3, inputs=[dst, loss])
    tape.backward(loss=loss)
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(3))


def test_copy_window_with_offsets():
    x = _arr([1.0, 2.0, 3.0, 4.0])
    win = wp.zeros(2, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(win, x, dest_offset=0, src_offset=1, count=2)
        wp.launch(square, 2, inputs=[win], outputs=[sq := wp.zeros(2, dtype=float, requires_grad=True)])
        wp.launch(total, 2, inputs=[sq, loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 4.0, 6.0, 0.0])


def test_copy_from_strided_column_with_offsets():
    base = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float, requires_grad=True)
    col = base[:, 2]
    dst = wp.zeros(2, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(dst, col, src_offset=1, count=2)
        wp.launch(total, 2, inputs=[dst, loss])
    np.testing.assert_array_equal(dst.numpy(), [6.0, 10.0])
    tape.backward(loss=loss)
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[1:, 2] = 1.0
    np.testing.assert_array_equal(base.grad.numpy(), expected)


def test_copy_into_strided_column():
    base = wp.array(np.ones((3, 4), dtype=np.float32), dtype=float, requires_grad=True)
    src = _arr([1.0, 2.0, 3.0])
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(base[:, 2], src)
        wp.launch(total2d, (3, 4), inputs=[base, loss])
    tape.backward(loss=loss)
    np.testing.assert_array_equal(src.grad.numpy(), [1.0, 2.0, 3.0])
    expected = np.repeat(np.array([[1.0], [2.0], [3.0]], dtype=np.float32), 4, axis=1)
    expected[:, 2] = 0.0  # overwritten by the copy: consumed
    np.testing.assert_array_equal(base.grad.numpy(), expected)


def test_overlapping_self_copy_is_exact():
    # y[1:4] = y[0:3], then loss = sum(y): y0 reaches loss twice, y1 and y2 once, y3 not at all
    y = _arr([1.0, 2.0, 3.0, 4.0])
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(y, y, dest_offset=1, src_offset=0, count=3)
        wp.launch(total, 4, inputs=[y, loss], record_tape=True)
    with wp.config.override(verify_autograd_array_access=False):
        tape.backward(loss=loss)
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 1.0, 1.0, 0.0])


def test_retain_grad_keeps_the_destination_gradient():
    s = _arr(np.full(3, 5.0))
    y = wp.zeros(3, dtype=float, requires_grad=True, retain_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(y, s)
        wp.launch(total, 3, inputs=[y, loss])
    tape.backward(loss=loss)
    np.testing.assert_array_equal(s.grad.numpy(), np.ones(3))
    np.testing.assert_array_equal(y.grad.numpy(), np.ones(3))


def test_copy_without_gradients_is_not_recorded():
    x = wp.array(np.ones(3, dtype=np.float32), dtype=float)
    c = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.copy(c, x)
    assert tape.launches == []


def test_copy_overwriting_an_input_is_reported():
    x = _arr([1.0, 2.0])
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square, 2, inputs=[x], outputs=[y])
        wp.copy(x, _arr([0.0, 0.0]))  # square's backward needs the old x
    with pytest.raises(wp.OverwriteError, match="copy"):
        tape.backward(grads={y: np.ones(2, dtype=np.float32)})


def test_struct_gradients():
    p = Pair()
    p.a = _arr([1.0, 2.0, 3.0])
    p.b = _arr([4.0, 5.0, 6.0])
    p.w = 2.0
    out = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(pair_dot, 3, inputs=[p, out])
    tape.backward(loss=out)
    g = tape.gradients[p]
    np.testing.assert_allclose(g.a.numpy(), [8.0, 10.0, 12.0])
    np.testing.assert_allclose(g.b.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(tape.get_adjoint(p).a.numpy(), [8.0, 10.0, 12.0])
    assert tape.gradients[p.a] is p.a.grad
    tape.backward(loss=out)  # accumulates
    np.testing.assert_allclose(tape.gradients[p].a.numpy(), [16.0, 20.0, 24.0])
    tape.reset()
    np.testing.assert_array_equal(tape.gradients[p].a.numpy(), np.zeros(3))
    assert tape.launches == []


def test_grads_seed_an_array_without_gradient_buffer():
    x = _arr([1.0, 3.0])
    y = wp.zeros(2, dtype=float)  # no requires_grad
    with wp.Tape() as tape:
        wp.launch(square, 2, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.array(np.array([1.0, 0.5], dtype=np.float32), dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 3.0])


def test_visualize_writes_dot(tmp_path):
    x = _arr(np.ones(4))
    z = wp.zeros(1, dtype=float, requires_grad=True)
    c = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(c, x)
        tape.record_scope_begin("my loop")
        for _ in range(5):
            wp.launch(total, 4, inputs=[c, z])
        tape.record_scope_end()
    path = tmp_path / "tape.dot"
    text = tape.visualize(str(path), array_labels={x: "initial x"})
    assert path.read_text() == text
    assert text.startswith("digraph") and text.rstrip().endswith("}")
    assert "repeated 5x" in text and text.count('label="total') == 1
    assert 'label="my loop"' in text and "initial x" in text and "array: dtype=" in text
    assert 'label="copy"' in text
    full = tape.visualize(simplify_graph=False)
    assert full.count('label="total') == 5
    assert text.count("{") == text.count("}")


def test_scope_end_without_begin():
    tape = wp.Tape()
    with pytest.raises(RuntimeError, match="scope not present"):
        tape.record_scope_end()


@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


@wp.kernel
def scale_by(x: wp.array(dtype=float), w: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * w[i]


@wp.kernel
def weighted(x: wp.array(dtype=float), aux: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i] * aux[i]


def test_in_place_update_of_an_array_without_gradient_is_allowed():
    # bump's backward does not need aux's values and aux has no gradient: nothing can go wrong
    x = _arr([1.0, 2.0])
    aux = wp.array(np.array([2.0, 3.0], dtype=np.float32), dtype=float)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(bump, 2, inputs=[aux])
        wp.launch(weighted, 2, inputs=[x, aux], outputs=[y])
    tape.backward(grads={y: np.ones(2, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.array([1.0, 2.0]) * np.array([3.0, 4.0]))


def test_in_place_updates_that_matter_are_reported():
    # scale_by's backward needs x's old values (w's gradient is x * adj): overwriting them is an error even though
    # x has no gradient of its own
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), dtype=float)
    w = _arr([3.0, 4.0])
    with wp.Tape() as tape:
        wp.launch(scale_by, 2, inputs=[x, w])
    with pytest.raises(wp.OverwriteError, match="scale_by"):
        tape.backward(grads={x: np.ones(2, dtype=np.float32)})
    # an array with a gradient updated in place whose old values the backward pass does not need is exact: the
    # store consumes the new value's gradient and the load passes it back to the old value (d(a + 1)/da = 1)
    a = _arr([1.0, 2.0])
    with wp.Tape() as tape:
        wp.launch(bump, 2, inputs=[a])
    tape.backward(grads={a: np.array([3.0, 5.0], dtype=np.float32)})
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 5.0])
    np.testing.assert_allclose(a.numpy(), [2.0, 3.0])


def test_kernel_overwriting_a_copy_is_exact():
    # out = clone(q), then a kernel assigns out = 2 q: the kernel's stores consume out's gradient, so the clone
    # (whose values were overwritten) passes nothing on: d out / d q = 2, not 3
    q = _arr([1.0, 2.0])
    with wp.Tape() as tape:
        out = wp.clone(q)
        wp.launch(scale2, 2, inputs=[q, out])
    tape.backward(grads={out: np.ones(2, dtype=np.float32)})
    np.testing.assert_allclose(q.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(out.grad.numpy(), [0.0, 0.0])
    # iterated: q -> clone -> 2 q, three times: only the kernels' path counts (2^3)
    x = _arr([1.0, 2.0])
    with wp.Tape() as tape:
        cur = x
        for _ in range(3):
            nxt = wp.clone(cur)
            wp.launch(scale2, 2, inputs=[cur, nxt])
            cur = nxt
    tape.backward(grads={cur: np.ones(2, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 8.0])
