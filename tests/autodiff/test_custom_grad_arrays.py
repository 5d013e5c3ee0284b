"""@wp.func_grad bodies that accumulate into array gradients (``wp.adjoint[arr][i]``) and struct fields
(``wp.adjoint[s.field]``), per-overload custom gradients, and functions whose only differentiable inputs are arrays.

Each custom gradient here is the true derivative, so the results are checked against central finite differences
of the forward kernel (float64 sums of float32 launches) and against NumPy formulas.
"""

from __future__ import annotations

import numpy as np

import treadle as wp


def _fd_grad(run, x: np.ndarray, eps: float = 1e-2) -> np.ndarray:
    """Central differences of the scalar ``run(x)`` with respect to every element of ``x``."""
    g = np.zeros(x.shape, dtype=np.float64)
    flat = x.reshape(-1)
    for k in range(flat.size):
        up, dn = flat.copy(), flat.copy()
        up[k] += eps
        dn[k] -= eps
        g.reshape(-1)[k] = (run(up.reshape(x.shape)) - run(dn.reshape(x.shape))) / (2 * eps)
    return g


# --- wp.adjoint[arr][i] in a function without a return value ------------------------------------------------------
@wp.func
def softplus_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    ys[i] = wp.log(1.0 + wp.exp(xs[i]))


@wp.func_grad(softplus_into)
def adj_softplus_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    # d/dx log(1 + e^x) = sigmoid(x), times the gradient arriving at ys[i]
    wp.adjoint[xs][i] += wp.adjoint[ys][i] / (1.0 + wp.exp(-xs[i]))


@wp.kernel
def softplus_kernel(xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    i = wp.tid()
    softplus_into(i, xs, ys)


def test_adjoint_of_array_element_matches_finite_differences():
    x0 = np.array([-2.0, -0.5, 0.0, 0.7, 3.0], dtype=np.float32)
    w = np.array([1.0, 2.0, -1.0, 0.5, 3.0], dtype=np.float32)
    xs = wp.array(x0, requires_grad=True)
    ys = wp.zeros_like(xs)
    with wp.Tape() as tape:
        wp.launch(softplus_kernel, dim=len(x0), inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: wp.array(w)})

    def run(x: np.ndarray) -> float:
        y = wp.zeros(len(x), dtype=float)
        wp.launch(softplus_kernel, dim=len(x), inputs=[wp.array(x.astype(np.float32))], outputs=[y])
        return float(np.dot(y.numpy().astype(np.float64), w))

    expected = w / (1.0 + np.exp(-x0.astype(np.float64)))
    np.testing.assert_allclose(xs.grad.numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(xs.grad.numpy(), _fd_grad(run, x0.astype(np.float64)), rtol=1e-3, atol=1e-4)


def test_adjoint_of_array_without_gradient_is_skipped():
    xs = wp.array(np.array([1.0, 2.0], dtype=np.float32))  # no gradient buffer: the custom adjoint must not crash
    ys = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(softplus_kernel, dim=2, inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: wp.ones(2, dtype=float)})
    assert xs.grad is None


# --- 2-d arrays, views and vector elements -----------------------------------------------------------------------
@wp.func
def row_energy(i: int, a: wp.array2d(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    s = 0.0
    for j in range(a.shape[1]):
        s += a[i, j] * a[i, j] * wp.dot(v[i], v[i])
    out[i] = s


@wp.func_grad(row_energy)
def adj_row_energy(i: int, a: wp.array2d(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    g = wp.adjoint[out][i]
    vv = wp.dot(v[i], v[i])
    sa = 0.0
    for j in range(a.shape[1]):
        if j % 2 == 0:
            wp.adjoint[a][i, j] += 2.0 * a[i, j] * vv * g  # full index
        else:
            wp.adjoint[a][i][j] += 2.0 * a[i, j] * vv * g  # through a row view
        sa += a[i, j] * a[i, j]
    wp.adjoint[v][i] += 2.0 * sa * g * v[i]


@wp.kernel
def row_energy_kernel(a: wp.array2d(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    row_energy(i, a, v, out)


def test_adjoint_of_2d_and_vector_arrays():
    rng = np.random.default_rng(3)
    a0 = rng.uniform(-1.0, 1.0, (3, 4)).astype(np.float32)
    v0 = rng.uniform(-1.0, 1.0, (3, 3)).astype(np.float32)
    a = wp.array(a0, requires_grad=True)
    v = wp.array(v0, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(row_energy_kernel, dim=3, inputs=[a, v], outputs=[out])
    tape.backward(grads={out: wp.ones(3, dtype=float)})
    a64, v64 = a0.astype(np.float64), v0.astype(np.float64)
    vv = (v64 * v64).sum(axis=1)
    sa = (a64 * a64).sum(axis=1)
    np.testing.assert_allclose(out.numpy(), sa * vv, rtol=1e-5)
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * a64 * vv[:, None], rtol=1e-5)
    np.testing.assert_allclose(v.grad.numpy(), 2.0 * sa[:, None] * v64, rtol=1e-5)

    def run_a(x: np.ndarray) -> float:
        o = wp.zeros(3, dtype=float)
        wp.launch(row_energy_kernel, dim=3, inputs=[wp.array(x.astype(np.float32)), wp.array(v0, dtype=wp.vec3)],
                  outputs=[o])
        return float(o.numpy().astype(np.float64).sum())

    np.testing.assert_allclose(a.grad.numpy(), _fd_grad(run_a, a64), rtol=2e-3, atol=2e-3)


# --- struct fields, and one custom gradient per overload ----------------------------------------------------------
@wp.struct
class Body:
    mass: float
    pos: wp.vec3
    forces: wp.array(dtype=float)


@wp.func
def energy(x: float, y: float):
    return x * y, y * y


@wp.func_grad(energy)
def adj_energy_scalars(x: float, y: float, adj_ret0: float, adj_ret1: float):
    wp.adjoint[x] += y * adj_ret0
    wp.adjoint[y] += x * adj_ret0 + 2.0 * y * adj_ret1


@wp.func
def energy(b: Body, i: int):
    return b.mass * b.pos[0] * b.pos[1] + b.forces[i] * b.forces[i] * b.pos[2]


@wp.func_grad(energy)
def adj_energy_body(b: Body, i: int, adj_ret: float):
    wp.adjoint[b.mass] += b.pos[0] * b.pos[1] * adj_ret
    wp.adjoint[b.pos][0] += b.mass * b.pos[1] * adj_ret
    wp.adjoint[b.pos][1] += b.mass * b.pos[0] * adj_ret
    wp.adjoint[b.pos][2] += b.forces[i] * b.forces[i] * adj_ret
    wp.adjoint[b.forces][i] += 2.0 * b.forces[i] * b.pos[2] * adj_ret


@wp.kernel
def scalar_energy_kernel(xs: wp.array(dtype=float), ys: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    e0, e1 = energy(xs[i], ys[i])
    out[i] = e0 + e1


@wp.kernel
def body_energy_kernel(bodies: wp.array(dtype=Body), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = energy(bodies[i], i)


def test_custom_gradient_per_overload_and_struct_fields():
    xs = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    ys = wp.array(np.array([3.0, -4.0], dtype=np.float32), requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(scalar_energy_kernel, dim=2, inputs=[xs, ys], outputs=[out])
    tape.backward(grads={out: wp.ones(2, dtype=float)})
    np.testing.assert_allclose(xs.grad.numpy(), [3.0, -4.0])
    np.testing.assert_allclose(ys.grad.numpy(), [1.0 + 6.0, 2.0 - 8.0])

    forces = wp.array(np.array([0.5, -1.5], dtype=np.float32), requires_grad=True)
    bodies_np = []
    for mass, pos in ((2.0, (1.0, 2.0, 3.0)), (-1.0, (0.5, -2.0, 4.0))):
        b = Body()
        b.mass = mass
        b.pos = wp.vec3(*pos)
        b.forces = forces
        bodies_np.append(b)
    bodies = wp.array(bodies_np, dtype=Body, requires_grad=True)
    e = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(body_energy_kernel, dim=2, inputs=[bodies], outputs=[e])
    tape.backward(grads={e: wp.ones(2, dtype=float)})
    g = bodies.grad.numpy()
    f = np.array([0.5, -1.5])
    np.testing.assert_allclose(e.numpy(), [2.0 * 1.0 * 2.0 + 0.25 * 3.0, -1.0 * 0.5 * -2.0 + 2.25 * 4.0], rtol=1e-6)
    np.testing.assert_allclose(g["mass"], [2.0, -1.0])
    np.testing.assert_allclose(g["pos"], [[4.0, 2.0, 0.25], [2.0, -0.5, 2.25]])
    np.testing.assert_allclose(forces.grad.numpy(), 2.0 * f * np.array([3.0, 4.0]))


# --- a function whose only differentiable inputs are arrays (no custom gradient) ----------------------------------
@wp.func
def sin_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    ys[i] = wp.sin(xs[i])


@wp.kernel
def sin_into_kernel(xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    i = wp.tid()
    sin_into(i, xs, ys)


def test_function_with_only_array_inputs_is_differentiated():
    x0 = np.linspace(-2.0, 2.0, 7).astype(np.float32)
    xs = wp.array(x0, requires_grad=True)
    ys = wp.zeros_like(xs)
    with wp.Tape() as tape:
        wp.launch(sin_into_kernel, dim=len(x0), inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: wp.ones_like(ys)})
    np.testing.assert_allclose(xs.grad.numpy(), np.cos(x0.astype(np.float64)), rtol=1e-5)


# --- indexed arrays -----------------------------------------------------------------------------------------------
@wp.func
def square_into(i: int, xs: wp.indexedarray(dtype=float), ys: wp.array(dtype=float)):
    ys[i] = xs[i] * xs[i]


@wp.func_grad(square_into)
def adj_square_into(i: int, xs: wp.indexedarray(dtype=float), ys: wp.array(dtype=float)):
    wp.adjoint[xs][i] += 2.0 * xs[i] * wp.adjoint[ys][i]


@wp.kernel
def square_into_kernel(xs: wp.indexedarray(dtype=float), ys: wp.array(dtype=float)):
    i = wp.tid()
    square_into(i, xs, ys)


def test_adjoint_of_indexed_array_reaches_the_underlying_gradient():
    base = wp.array(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32), requires_grad=True)
    xs = wp.indexedarray(base, [wp.array(np.array([3, 1], dtype=np.int32))])
    ys = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square_into_kernel, dim=2, inputs=[xs], outputs=[ys])
    tape.backward(grads={ys: wp.array(np.array([1.0, 10.0], dtype=np.float32))})
    np.testing.assert_allclose(ys.numpy(), [16.0, 4.0])
    np.testing.assert_allclose(base.grad.numpy(), [0.0, 40.0, 0.0, 8.0])
