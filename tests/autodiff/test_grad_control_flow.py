"""Gradients through control flow, checked against central finite differences in float64.

These are the cases the reference gets silently wrong: loop-carried values in dynamic loops, break/continue,
while loops and early returns.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


def grad_of(kernel, xs: np.ndarray, extra: list, n_out: int = 1, dtype=wp.float64) -> np.ndarray:
    """d(sum of loss)/dx via the tape."""
    x = wp.array(xs, dtype=dtype, requires_grad=True)
    loss = wp.zeros(n_out, dtype=dtype, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(kernel, dim=len(xs), inputs=[x, *extra], outputs=[loss])
    tape.backward(grads={loss: np.ones(n_out)})
    return x.grad.numpy()


def fd(f, xs: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return np.array([(f(v + h) - f(v - h)) / (2 * h) for v in xs])


@wp.kernel
def dyn_loop(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    acc = v * wp.float64(0.5)  # defined before the loop, carried through it
    for _k in range(n):
        acc = acc * v + wp.sin(acc)
    wp.atomic_add(loss, 0, acc)


def dyn_loop_ref(v: float, n: int = 6) -> float:
    acc = v * 0.5
    for _ in range(n):
        acc = acc * v + np.sin(acc)
    return acc


@wp.kernel
def nested(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    s = wp.float64(0.0)
    for a in range(n):
        t = v
        for _b in range(a):
            t = t * wp.cos(t) + v
        s = s + t * t
    wp.atomic_add(loss, 0, s)


def nested_ref(v: float, n: int = 4) -> float:
    s = 0.0
    for a in range(n):
        t = v
        for _ in range(a):
            t = t * np.cos(t) + v
        s += t * t
    return s


@wp.kernel
def brk_cont(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    acc = wp.float64(1.0)
    for k in range(n):
        if k % 3 == 1:
            continue
        acc = acc * v + wp.float64(k)
        if acc > wp.float64(40.0):
            break
    wp.atomic_add(loss, 0, acc)


def brk_cont_ref(v: float, n: int = 10) -> float:
    acc = 1.0
    for k in range(n):
        if k % 3 == 1:
            continue
        acc = acc * v + k
        if acc > 40.0:
            break
    return acc


@wp.kernel
def while_loop(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    y = v
    k = 0
    while k < n:
        y = wp.sqrt(y * y + v)
        k += 1
    wp.atomic_add(loss, 0, y)


def while_ref(v: float, n: int = 5) -> float:
    y = v
    for _ in range(n):
        y = np.sqrt(y * y + v)
    return y


@wp.func
def early_return(v: wp.float64, n: int) -> wp.float64:
    acc = v
    for k in range(n):
        acc = acc * acc * wp.float64(0.5) + v
        if acc > wp.float64(3.0):
            return acc * wp.float64(2.0)
    return acc


@wp.kernel
def calls_early_return(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if x[i] < wp.float64(0.0):
        return
    wp.atomic_add(loss, 0, early_return(x[i], n))


def early_ref(v: float, n: int = 6) -> float:
    if v < 0:
        return 0.0
    acc = v
    for _ in range(n):
        acc = acc * acc * 0.5 + v
        if acc > 3.0:
            return acc * 2.0
    return acc


CASES = [
    (dyn_loop, dyn_loop_ref, 6),
    (nested, nested_ref, 4),
    (brk_cont, brk_cont_ref, 10),
    (while_loop, while_ref, 5),
    (calls_early_return, early_ref, 6),
]


# Loops whose checkpoints leave locals out (compiler/checkpoints.py): each kernel breaks one of the rules if the rule
# were applied too widely, so a wrong pruning shows up as a wrong gradient.
@wp.kernel
def read_then_reassigned(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = v * wp.float64(2.0)  # read in the loop, reassigned after it: the iterations must see the old value
    acc = v
    for _k in range(n):
        acc = acc * wp.float64(0.5) + wp.sin(acc * c)
    c = c * c * wp.float64(3.0)
    wp.atomic_add(loss, 0, acc + c)


def read_then_reassigned_ref(v: float, n: int = 5) -> float:
    c = v * 2.0
    acc = v
    for _ in range(n):
        acc = acc * 0.5 + np.sin(acc * c)
    return acc + c * c * 3.0


@wp.kernel
def written_after_inner(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    t = v
    s = wp.float64(0.0)
    for _a in range(n):
        for _b in range(n - 1):  # dynamic: a static range would be unrolled
            s = s * wp.float64(0.5) + wp.sin(t * s) * wp.float64(0.3) + t * wp.float64(0.1)
        t = t * wp.float64(0.9) + v * wp.float64(0.2)  # after the inner loop, inside the outer one
    wp.atomic_add(loss, 0, s)


def written_after_inner_ref(v: float, n: int = 4) -> float:
    t, s = v, 0.0
    for _ in range(n):
        for _ in range(n - 1):
            s = s * 0.5 + np.sin(t * s) * 0.3 + t * 0.1
        t = t * 0.9 + v * 0.2
    return s


@wp.kernel
def temporaries(x: wp.array(dtype=wp.float64), n: int, loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    acc = v
    d = wp.float64(0.0)
    e = wp.float64(1.0)
    for k in range(n):
        d = acc * v  # assigned first in every iteration: not saved
        if k % 2 == 0:
            e = acc * wp.float64(0.7)  # assigned on some iterations only: saved
        acc = acc * wp.float64(0.8) + wp.sin(d) * e
    wp.atomic_add(loss, 0, acc + d * e)


def temporaries_ref(v: float, n: int = 7) -> float:
    acc, d, e = v, 0.0, 1.0
    for k in range(n):
        d = acc * v
        if k % 2 == 0:
            e = acc * 0.7
        acc = acc * 0.8 + np.sin(d) * e
    return acc + d * e


CASES += [
    (read_then_reassigned, read_then_reassigned_ref, 5),
    (written_after_inner, written_after_inner_ref, 4),
    (temporaries, temporaries_ref, 7),
]


@pytest.mark.parametrize("kernel,ref,n", CASES, ids=[c[0].key for c in CASES])
def test_control_flow_gradients(kernel, ref, n):
    xs = np.array([-0.7, 0.2, 0.55, 0.9, 1.3, 1.7])
    if kernel is while_loop:
        xs = np.abs(xs) + 0.1  # keep sqrt real
    g = grad_of(kernel, xs, [n])
    expected = fd(lambda v: ref(v, n), xs)
    assert np.all(np.isfinite(expected))
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)


@wp.kernel
def components(x: wp.array(dtype=wp.vec3d), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    w = wp.vec3d()
    w[0] = v[1] * v[2]
    w.y = wp.length(v)
    w[2] = w[0] + v.x
    m = wp.mat33d()
    m[1, 2] = w.z
    m[0] = w
    wp.atomic_add(loss, 0, wp.dot(w, v) + wp.trace(m) + m[1, 2] * m[0, 0])


def test_component_writes():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((5, 3))
    x = wp.array(xs, dtype=wp.vec3d, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(components, dim=5, inputs=[x], outputs=[loss])
    tape.backward(loss)

    def f(v):
        w0 = v[1] * v[2]
        w1 = np.linalg.norm(v)
        w2 = w0 + v[0]
        w = np.array([w0, w1, w2])
        return w @ v + w0 + w2 * w0

    num = np.zeros_like(xs)
    for i in range(5):
        for c in range(3):
            e = np.zeros(3)
            e[c] = 1e-6
            num[i, c] = (f(xs[i] + e) - f(xs[i] - e)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


@wp.kernel
def local_array_grad(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    buf = wp.zeros(shape=(3,), dtype=wp.float64)
    for k in range(3):
        buf[k] = x[i] * wp.float64(k + 1)
    s = wp.float64(0.0)
    for k in range(3):
        s = s + buf[k] * buf[k]
    wp.atomic_add(loss, 0, s)


def test_gradients_through_kernel_local_arrays():
    xs = np.array([0.5, -1.25, 2.0])
    g = grad_of(local_array_grad, xs, [])
    np.testing.assert_allclose(g, 2.0 * xs * (1 + 4 + 9), rtol=1e-10)
