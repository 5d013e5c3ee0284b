"""``wp.utils.array_scan``, ``array_sum`` and ``array_inner`` against NumPy (float64 references)."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

SCAN_TYPES = [np.int32, np.int64, np.float32, np.float64]


@pytest.mark.parametrize("dt", SCAN_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("n", [1, 2, 1000, 300_000])
@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_matches_cumsum(dt: type, n: int, inclusive: bool, device: str) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(-100, 100, n).astype(dt)  # integer-valued: float sums are exact, any order
    out = wp.empty(n, dtype=wp.dtype_from_numpy(np.dtype(dt)), device=device)
    wp.utils.array_scan(wp.array(x, device=device), out, inclusive=inclusive)
    ref = np.cumsum(x.astype(np.float64))
    if not inclusive:
        ref = ref - x
    np.testing.assert_array_equal(out.numpy(), ref.astype(dt))


def test_scan_random_floats_close_to_float64(device: str) -> None:
    x = np.random.default_rng(2).random(1 << 20).astype(np.float32)
    out = wp.empty(len(x), dtype=float, device=device)
    wp.utils.array_scan(wp.array(x, device=device), out)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x.astype(np.float64)), rtol=2e-4)


def test_scan_adversarial(device: str) -> None:
    out = wp.empty(1, dtype=float, device=device)
    wp.utils.array_scan(wp.array(np.array([-0.0], np.float32), device=device), out)
    assert np.signbit(out.numpy()[0])  # a lone -0.0 stays -0.0, as in NumPy
    wp.utils.array_scan(wp.array(np.array([-0.0], np.float32), device=device), out, inclusive=False)
    assert out.numpy()[0] == 0.0 and not np.signbit(out.numpy()[0])
    eq = np.full(100_000, 3, np.int32)
    o = wp.empty(len(eq), dtype=wp.int32, device=device)
    wp.utils.array_scan(wp.array(eq, device=device), o)
    np.testing.assert_array_equal(o.numpy(), np.arange(1, len(eq) + 1) * 3)
    nan = np.array([1.0, np.nan, 2.0], np.float32)
    o = wp.empty(3, dtype=float, device=device)
    wp.utils.array_scan(wp.array(nan, device=device), o)
    assert o.numpy()[0] == 1.0 and np.isnan(o.numpy()[1:]).all()
    wp.utils.array_scan(wp.empty(0, dtype=int, device=device), wp.empty(0, dtype=int, device=device))


def test_scan_vectors_in_place_and_strided(device: str) -> None:
    v = wp.array(np.arange(300_000, dtype=np.float64).reshape(100_000, 3), dtype=wp.vec3d, device=device)
    ref = np.cumsum(v.numpy(), axis=0)
    wp.utils.array_scan(v, v)
    np.testing.assert_array_equal(v.numpy(), ref)
    a = wp.array(np.arange(10, dtype=np.int32), device=device)[::2]
    o = wp.empty(5, dtype=wp.int32, device=device)
    wp.utils.array_scan(a, o, inclusive=False)
    assert o.numpy().tolist() == [0, 0, 2, 6, 12]
    m = wp.array(np.arange(6, dtype=np.int64).reshape(2, 3), device=device)
    mo = wp.empty((2, 3), dtype=wp.int64, device=device)
    wp.utils.array_scan(m, mo)
    assert mo.numpy().ravel().tolist() == [0, 1, 3, 6, 10, 15]


def test_scan_bad_inputs() -> None:
    a = wp.array(np.arange(5, dtype=np.float32))
    with pytest.raises(RuntimeError, match="sizes do not match \\(5 vs 4\\)"):
        wp.utils.array_scan(a, wp.empty(4, dtype=float))
    with pytest.raises(TypeError, match="float32 vs float64"):
        wp.utils.array_scan(a, wp.empty(5, dtype=wp.float64))
    with pytest.raises(TypeError, match="uint32"):
        wp.utils.array_scan(wp.array([1, 2], dtype=wp.uint32), wp.empty(2, dtype=wp.uint32))
    with pytest.raises(TypeError, match="mat22"):
        wp.utils.array_scan(wp.zeros(2, dtype=wp.mat22), wp.zeros(2, dtype=wp.mat22))
    with pytest.raises(ValueError, match="strided"):
        wp.utils.array_scan(wp.zeros((4, 4), dtype=float)[:, ::2], wp.zeros(8, dtype=float))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
def test_sum_and_inner_whole_array(dt: type, device: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, 401)).astype(dt)
    y = rng.standard_normal((300, 401)).astype(dt)
    a, b = wp.array(x, device=device), wp.array(y, device=device)
    s = wp.utils.array_sum(a)
    assert isinstance(s, np.floating) and s.dtype == dt
    tol = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(s, x.astype(np.float64).sum(), rtol=tol, atol=tol)
    np.testing.assert_allclose(wp.utils.array_inner(a, b), (x.astype(np.float64) * y).sum(), rtol=tol, atol=tol)
    out = wp.empty(1, dtype=a.dtype, device=device)
    assert wp.utils.array_sum(a, out=out) is out
    np.testing.assert_allclose(out.numpy()[0], x.astype(np.float64).sum(), rtol=tol, atol=tol)
    np.testing.assert_allclose(wp.utils.array_sum(a, value_count=1000), x.ravel()[:1000].astype(np.float64).sum(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_sum_and_inner_along_axis(axis: int, device: str) -> None:
    rng = np.random.default_rng(axis + 10)
    x = rng.standard_normal((7, 33, 5)).astype(np.float32)
    y = rng.standard_normal((7, 33, 5)).astype(np.float32)
    a, b = wp.array(x, device=device), wp.array(y, device=device)
    s = wp.utils.array_sum(a, axis=axis)
    assert s.shape == x.sum(axis=axis, keepdims=True).shape
    np.testing.assert_allclose(s.numpy(), x.astype(np.float64).sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-5)
    p = wp.utils.array_inner(a, b, axis=axis)
    np.testing.assert_allclose(p.numpy(), (x.astype(np.float64) * y).sum(axis=axis, keepdims=True), rtol=1e-5,
                               atol=1e-5)
    t = wp.array(x, device=device).transpose((2, 0, 1))  # a strided view: copied before reducing
    np.testing.assert_allclose(wp.utils.array_sum(t, axis=1).numpy(),
                               x.transpose(2, 0, 1).sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_vector_and_matrix_reductions(device: str) -> None:
    rng = np.random.default_rng(8)
    v = rng.standard_normal((1000, 4, 3)).astype(np.float32)
    V = wp.array(v, dtype=wp.vec3, device=device)
    np.testing.assert_allclose(wp.utils.array_sum(V), v.reshape(-1, 3).astype(np.float64).sum(0), rtol=1e-5)
    np.testing.assert_allclose(wp.utils.array_sum(V, axis=1).numpy(), v.sum(axis=1, keepdims=True), atol=1e-4)
    np.testing.assert_allclose(wp.utils.array_inner(V, V), (v.astype(np.float64) ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(wp.utils.array_inner(V, V, axis=0).numpy(), (v * v).sum(axis=(0, 2))[None, :],
                               rtol=1e-4)
    assert wp.utils.array_inner(V, V, axis=0).dtype == wp.float32
    m = rng.standard_normal((50, 3, 3))
    M = wp.array(m, dtype=wp.mat33d, device=device)
    np.testing.assert_allclose(wp.utils.array_sum(M), m.sum(0), rtol=1e-12)
    np.testing.assert_allclose(wp.utils.array_inner(M, M), (m * m).sum(), rtol=1e-12)
    out = wp.empty(1, dtype=wp.vec3, device=device)
    wp.utils.array_sum(V, out=out)
    np.testing.assert_allclose(out.numpy()[0], v.reshape(-1, 3).sum(0), rtol=1e-4)


def test_reduction_adversarial(device: str) -> None:
    assert wp.utils.array_sum(wp.empty(0, dtype=float, device=device)) == 0.0
    assert wp.utils.array_inner(wp.empty(0, dtype=float, device=device), wp.empty(0, dtype=float, device=device)) == 0
    assert wp.utils.array_sum(wp.array([2.5], dtype=float, device=device)) == 2.5
    strided = wp.array(np.arange(1, 6, dtype=np.float32), device=device)[::2]
    assert wp.utils.array_sum(strided) == 9.0
    assert np.isnan(wp.utils.array_sum(wp.array([1.0, np.nan], dtype=float, device=device)))
    assert wp.utils.array_sum(wp.array([np.inf, 1.0], dtype=float, device=device)) == np.inf
    big = wp.array(np.full(1 << 20, 0.1, np.float32), device=device)  # float64 accumulation: no drift
    np.testing.assert_allclose(wp.utils.array_sum(big), (1 << 20) * np.float64(np.float32(0.1)), rtol=1e-7)


def test_reduction_bad_inputs() -> None:
    a = wp.array(np.ones(5, np.float32))
    m = wp.array(np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        wp.utils.array_sum(wp.array([1, 2], dtype=int))
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        wp.utils.array_sum(m, axis=2)
    with pytest.raises(TypeError, match="float32"):
        wp.utils.array_sum(a, out=wp.empty(1, dtype=wp.float64))
    with pytest.raises(ValueError, match="shape \\(1,\\)"):
        wp.utils.array_sum(a, out=wp.empty(3, dtype=float))
    with pytest.raises(ValueError, match="shape \\(1, 4\\)"):
        wp.utils.array_sum(m, axis=0, out=wp.empty((4,), dtype=float))
    with pytest.raises(ValueError, match="exceeds"):
        wp.utils.array_sum(a, value_count=9)
    with pytest.raises(TypeError, match="float32 vs float64"):
        wp.utils.array_inner(a, wp.array(np.ones(5), dtype=wp.float64))
    with pytest.raises(ValueError, match="same shape"):
        wp.utils.array_inner(a, wp.array(np.ones(4, np.float32)))
