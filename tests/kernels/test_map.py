"""``wp.map``: a ``@func`` or builtin applied elementwise over arrays (broadcasting, constants, ``out=``, tuples,
indexed arrays). References: the same expressions in NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.func
def map_axpy(x: float, y: float, a: float):
    return a * x + y


@wp.func
def map_pair(x: float):
    return x * 2.0, x * x


def test_map_user_function_with_constant(device):
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    r = wp.map(map_axpy, wp.array(a, device=device), wp.array(b, device=device), 2.0)
    assert isinstance(r, wp.array) and r.dtype == wp.float32
    np.testing.assert_allclose(r.numpy(), 2.0 * a + b)


def test_map_builtin_in_place_and_broadcast(device):
    xs = wp.array([-1.0, 0.0, 1.0], dtype=float, device=device)
    wp.map(wp.clamp, xs, -0.5, 0.5, out=xs)
    np.testing.assert_array_equal(xs.numpy(), [-0.5, 0.0, 0.5])
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    row = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    col = np.array([[1.0], [2.0]], dtype=np.float32)
    r = wp.map(wp.add, wp.array(m, device=device), wp.array(row, device=device))
    np.testing.assert_array_equal(r.numpy(), m + row)
    r = wp.map(wp.mul, wp.array(col, device=device), wp.array(row, device=device))
    np.testing.assert_array_equal(r.numpy(), col * row)
    with pytest.raises(ValueError, match="broadcast"):
        wp.map(wp.add, wp.array(m, device=device), wp.zeros(4, dtype=float, device=device))


def test_map_vectors_tuples_and_indexed(device):
    tf = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), 0.5))
    pts = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    r = wp.map(wp.transform_point, tf, wp.array(pts, dtype=wp.vec3, device=device))
    c, s = np.cos(0.5), np.sin(0.5)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(r.numpy(), pts @ rot.T + [1.0, 2.0, 3.0], rtol=1e-6)

    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    twice, sq = wp.map(map_pair, wp.array(x, device=device))
    np.testing.assert_array_equal(twice.numpy(), 2 * x)
    np.testing.assert_array_equal(sq.numpy(), x * x)

    data = wp.array(np.arange(10, dtype=np.float32), device=device)
    ia = wp.indexedarray1d(data, [wp.array([1, 3, 5, 7, 9], dtype=int, device=device)])
    np.testing.assert_allclose(wp.map(wp.sin, ia).numpy(), np.sin([1.0, 3.0, 5.0, 7.0, 9.0]), rtol=1e-6)


def test_map_errors_and_return_kernel(device):
    a = wp.zeros(3, dtype=float, device=device)
    with pytest.raises(TypeError, match="@wp.func"):
        wp.map(lambda x: x, a)
    with pytest.raises(TypeError, match="array"):
        wp.map(wp.sin, 1.0)
    k = wp.map(wp.sin, a, return_kernel=True)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(k, dim=3, inputs=[wp.array([0.0, 1.0, 2.0], dtype=float, device=device)], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), np.sin([0.0, 1.0, 2.0]), rtol=1e-6)
