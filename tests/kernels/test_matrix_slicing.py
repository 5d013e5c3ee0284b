"""Matrix slicing in kernels: ``m[a:b]``, ``m[a:b, c]``, ``m[r, a:b]``, ``m[a:b, c:d]`` (constant bounds, any step)
read, assigned and updated in place (``+=``, ``-=``, ``*=``, ``/=``), with gradients.

References: the same slicing on NumPy float64 arrays; gradients are checked against the NumPy formulas.
"""

from __future__ import annotations

import numpy as np

import treadle as wp

mat23 = wp.types.matrix((2, 3), float)
mat00 = wp.types.matrix((0, 0), float)
vec1 = wp.types.vector(1, float)
mat11 = wp.types.matrix((1, 1), float)
mat12 = wp.types.matrix((1, 2), float)


@wp.kernel
def slice_reads(ms: wp.array(dtype=wp.mat44), o23: wp.array(dtype=mat23), o22: wp.array(dtype=wp.mat22),
                ov3: wp.array(dtype=wp.vec3), ov2: wp.array(dtype=wp.vec2), flags: wp.array(dtype=int)):
    m = ms[0]
    o23[0] = m[1:3, 1:]
    o23[1] = m[::-2, ::-1][:, 1:]
    o22[0] = m[:1:-1, 2::-1][:, :2]
    o22[1] = m[-2:, :2]
    ov3[0] = m[1:, 2]
    ov3[1] = m[-1, :3]
    ov2[0] = m[::2, -1]
    flags[0] = int(m[4:] == mat00())  # empty selections are the 0x0 matrix
    flags[1] = int(m[:-9, 1:] == mat00())
    flags[2] = int(m[:1, 1:2] == mat11(m[0, 1]))
    flags[3] = int(m[2, 1:2] == vec1(m[2, 1]))


def test_matrix_slice_reads(device):
    a = np.arange(16, dtype=np.float64).reshape(4, 4) * 1.5 - 3.0
    ms = wp.array(a[None], dtype=wp.mat44, device=device)
    o23 = wp.zeros(2, dtype=mat23, device=device)
    o22 = wp.zeros(2, dtype=wp.mat22, device=device)
    ov3 = wp.zeros(2, dtype=wp.vec3, device=device)
    ov2 = wp.zeros(1, dtype=wp.vec2, device=device)
    flags = wp.zeros(4, dtype=int, device=device)
    wp.launch(slice_reads, 1, inputs=[ms, o23, o22, ov3, ov2, flags], device=device)
    np.testing.assert_array_equal(o23.numpy()[0], a[1:3, 1:])
    np.testing.assert_array_equal(o23.numpy()[1], a[::-2, ::-1][:, 1:])
    np.testing.assert_array_equal(o22.numpy()[0], a[:1:-1, 2::-1][:, :2])
    np.testing.assert_array_equal(o22.numpy()[1], a[-2:, :2])
    np.testing.assert_array_equal(ov3.numpy()[0], a[1:, 2])
    np.testing.assert_array_equal(ov3.numpy()[1], a[-1, :3])
    np.testing.assert_array_equal(ov2.numpy()[0], a[::2, -1])
    np.testing.assert_array_equal(flags.numpy(), [1, 1, 1, 1])


@wp.kernel
def slice_writes(ms: wp.array(dtype=wp.mat44), out: wp.array(dtype=wp.mat44)):
    m = ms[0]
    m[:2] = wp.matrix_from_rows(wp.vec4(1.0, 2.0, 3.0, 4.0), wp.vec4(5.0, 6.0, 7.0, 8.0))
    m[::-2, 1] = wp.vec2(-1.0, -2.0)
    m[3, 1:] = wp.vec3(9.0, 10.0, 11.0)
    m[2:, 3] += wp.vec2(100.0, 200.0)
    m[1, :3] -= wp.vec3(1.0, 2.0, 3.0)
    m[:-2, 2:] *= 3.0
    m[1:3, 1:3] /= 2.0
    m[:1, ::3] = mat12(0.5, 0.25)
    out[0] = m


def test_matrix_slice_writes(device):
    a = np.arange(16, dtype=np.float64).reshape(4, 4)
    e = a.copy()
    e[:2] = [[1, 2, 3, 4], [5, 6, 7, 8]]
    e[::-2, 1] = [-1, -2]
    e[3, 1:] = [9, 10, 11]
    e[2:, 3] += [100, 200]
    e[1, :3] -= [1, 2, 3]
    e[:-2, 2:] *= 3
    e[1:3, 1:3] /= 2
    e[:1, ::3] = [[0.5, 0.25]]
    out = wp.zeros(1, dtype=wp.mat44, device=device)
    wp.launch(slice_writes, 1, inputs=[wp.array(a[None], dtype=wp.mat44, device=device), out], device=device)
    np.testing.assert_array_equal(out.numpy()[0], e)


@wp.kernel
def slice_grad(xs: wp.array(dtype=wp.vec2), ys: wp.array(dtype=mat23), zs: wp.array(dtype=wp.mat44)):
    i = wp.tid()
    z = zs[i]
    z[0, :2] = xs[i]
    z[:2, 1:] = 2.0 * ys[i]
    z[:2, 3] += xs[i][:2]
    z[1:-1, :2] += ys[i][::-1, :-1]
    z[2:, 3] -= xs[i][0:] * xs[i][1]
    z[3:, -1:] -= ys[i][:1, :1]
    zs[i] = z


def test_matrix_slice_gradients(device):
    x_np = np.array([[0.5, -1.5]])
    y_np = np.array([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]])
    x = wp.array(x_np, dtype=wp.vec2, device=device, requires_grad=True)
    y = wp.array(y_np, dtype=mat23, device=device, requires_grad=True)
    z = wp.zeros(1, dtype=wp.mat44, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(slice_grad, 1, inputs=[x, y, z], device=device)
    w = np.arange(16, dtype=np.float64).reshape(4, 4) + 1.0  # a weight per output component
    z.grad = wp.array(w[None], dtype=wp.mat44, device=device)
    tape.backward()

    def forward(xv: np.ndarray, yv: np.ndarray) -> np.ndarray:
        zz = np.zeros((4, 4))
        zz[0, :2] = xv
        zz[:2, 1:] = 2.0 * yv
        zz[:2, 3] += xv[:2]
        zz[1:-1, :2] += yv[::-1, :-1]
        zz[2:, 3] -= xv[0:] * xv[1]
        zz[3:, -1:] -= yv[:1, :1]
        return zz

    np.testing.assert_allclose(z.numpy()[0], forward(x_np[0], y_np[0]), rtol=1e-6)
    # finite differences of sum(w * z) (the function is linear in y and quadratic in x: central differences are exact)
    h = 1e-3
    gx = np.zeros(2)
    for k in range(2):
        d = np.zeros(2)
        d[k] = h
        gx[k] = (np.sum(w * forward(x_np[0] + d, y_np[0])) - np.sum(w * forward(x_np[0] - d, y_np[0]))) / (2 * h)
    gy = np.zeros((2, 3))
    for r in range(2):
        for c in range(3):
            d = np.zeros((2, 3))
            d[r, c] = h
            gy[r, c] = (np.sum(w * forward(x_np[0], y_np[0] + d)) - np.sum(w * forward(x_np[0], y_np[0] - d))) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy()[0], gx, rtol=1e-5)
    np.testing.assert_allclose(y.grad.numpy()[0], gy, rtol=1e-5)


def _grid(m: object) -> np.ndarray:
    rows, cols = m._shape_  # type: ignore[attr-defined]
    return np.array([[m[i, j] for j in range(cols)] for i in range(rows)])  # type: ignore[index]


def test_matrix_slices_in_python_scope_match_kernels():
    a = np.arange(16, dtype=np.float64).reshape(4, 4)
    m = wp.mat44(*a.reshape(-1))
    assert m[4:] == mat00() and m[:, 9:] == mat00()
    np.testing.assert_array_equal(_grid(m[1:3, 1:]), a[1:3, 1:])
    np.testing.assert_array_equal(list(m[::-2, 1]), a[::-2, 1])
    m[2:, 1] += wp.vec2(10.0, 20.0)
    a[2:, 1] += [10.0, 20.0]
    np.testing.assert_array_equal(_grid(m), a)


@wp.kernel
def single_vector_matrices(v: wp.array(dtype=wp.vec4), out: wp.array(dtype=float)):
    r = wp.matrix_from_rows(v[0])  # 1x4
    c = wp.matrix_from_cols(v[0])  # 4x1
    out[0] = r[0, 1] * 2.0 + c[3, 0] * 3.0 + wp.ddot(r, wp.transpose(c))


def test_matrix_from_a_single_vector(device):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    v = wp.array(x[None], dtype=wp.vec4, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(single_vector_matrices, 1, inputs=[v, out], device=device)
    tape.backward(loss=out)
    assert out.numpy()[0] == 2.0 * x[1] + 3.0 * x[3] + x @ x
    np.testing.assert_allclose(v.grad.numpy()[0], np.array([0.0, 2.0, 0.0, 3.0]) + 2.0 * x)
    assert wp.matrix_from_rows(wp.vec3(1.0, 2.0, 3.0))._shape_ == (1, 3)
    assert wp.matrix_from_cols(wp.vec2(1.0, 2.0))._shape_ == (2, 1)
