"""``wp.utils.runlength_encode``, ``array_cast`` and ``create_warp_function``."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


def rle_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(x) == 0:
        return x, x
    heads = np.flatnonzero(np.concatenate([[True], x[1:] != x[:-1]]))
    return x[heads], np.diff(np.append(heads, len(x)))


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 500_000])
def test_runlength_encode_matches_numpy(n: int, device: str) -> None:
    x = np.random.default_rng(n).integers(0, 3, n).astype(np.int32)
    rv = wp.zeros(max(n, 1), dtype=int, device=device)
    rl = wp.zeros(max(n, 1), dtype=int, device=device)
    count = wp.utils.runlength_encode(wp.array(x, dtype=int, device=device), rv, rl)
    values, lengths = rle_reference(x)
    assert count == len(values)
    np.testing.assert_array_equal(rv.numpy()[:count], values)
    np.testing.assert_array_equal(rl.numpy()[:count], lengths)


def test_runlength_encode_options(device: str) -> None:
    v = wp.array([1, 1, 2, 2, 2, 3, 1], dtype=int, device=device)
    rv, rl = wp.zeros(7, dtype=int, device=device), wp.zeros(7, dtype=int, device=device)
    rc = wp.zeros(1, dtype=int, device=device)
    assert wp.utils.runlength_encode(v, rv, rl, run_count=rc) is rc
    assert rc.numpy()[0] == 4 and rv.numpy()[:4].tolist() == [1, 2, 3, 1] and rl.numpy()[:4].tolist() == [2, 3, 1, 1]
    assert wp.utils.runlength_encode(v, rv, rl, value_count=3) == 2
    assert rl.numpy()[:2].tolist() == [2, 1]
    assert wp.utils.runlength_encode(v[::2], rv, rl) == 3  # [1, 2, 2, 1]: strided views are read as views
    assert rl.numpy()[:3].tolist() == [1, 2, 1]
    same = wp.full(70_000, 9, dtype=int, device=device)
    big_v, big_l = wp.zeros(70_000, dtype=int, device=device), wp.zeros(70_000, dtype=int, device=device)
    assert wp.utils.runlength_encode(same, big_v, big_l) == 1 and big_l.numpy()[0] == 70_000
    rc.fill_(5)
    wp.utils.runlength_encode(wp.empty(0, dtype=int, device=device), rv, rl, run_count=rc)
    assert rc.numpy()[0] == 0


def test_runlength_encode_bad_inputs() -> None:
    v = wp.array([1, 1, 2], dtype=int)
    rv, rl = wp.zeros(3, dtype=int), wp.zeros(3, dtype=int)
    with pytest.raises(RuntimeError, match="at least value_count"):
        wp.utils.runlength_encode(v, wp.zeros(2, dtype=int), rl)
    with pytest.raises(TypeError, match="int32"):
        wp.utils.runlength_encode(wp.array([1.0]), wp.zeros(3, dtype=float), rl)
    with pytest.raises(TypeError, match="run_lengths"):
        wp.utils.runlength_encode(v, rv, wp.zeros(3, dtype=wp.uint32))
    with pytest.raises(TypeError, match="run_count"):
        wp.utils.runlength_encode(v, rv, rl, run_count=wp.zeros(1, dtype=float))
    with pytest.raises(RuntimeError, match="non-negative"):
        wp.utils.runlength_encode(v, rv, rl, value_count=-1)
    with pytest.raises(RuntimeError, match="exceeds"):
        wp.utils.runlength_encode(v, rv, rl, value_count=4)


def test_array_cast_conversions(device: str) -> None:
    a = wp.array(np.array([1.7, -2.5, 3.2], np.float32), device=device)
    o = wp.zeros(3, dtype=int, device=device)
    wp.utils.array_cast(a, o)
    assert o.numpy().tolist() == [1, -2, 3]  # truncation toward zero, as a C cast
    h = wp.zeros(3, dtype=wp.float16, device=device)
    wp.utils.array_cast(a, h)
    np.testing.assert_array_equal(h.numpy(), np.array([1.7, -2.5, 3.2], np.float16))
    b = wp.zeros(2, dtype=wp.bool, device=device)
    wp.utils.array_cast(wp.array([0.0, 0.5], dtype=float, device=device), b)
    assert b.numpy().tolist() == [False, True]
    v3 = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=wp.vec3, device=device)
    vd = wp.zeros(2, dtype=wp.vec3d, device=device)
    wp.utils.array_cast(v3, vd)
    np.testing.assert_array_equal(vd.numpy(), np.arange(6).reshape(2, 3))
    v2 = wp.zeros(3, dtype=wp.vec2d, device=device)  # other element shape: cast component by component
    wp.utils.array_cast(v3, v2)
    np.testing.assert_array_equal(v2.numpy(), np.arange(6).reshape(3, 2))
    part = wp.zeros(5, dtype=int, device=device)
    wp.utils.array_cast(a, part, count=2)
    assert part.numpy().tolist() == [1, -2, 0, 0, 0]
    m = wp.array(np.ones((2, 3), np.float32), device=device)
    mi = wp.zeros((2, 3), dtype=int, device=device)
    wp.utils.array_cast(m, mi)
    assert mi.numpy().tolist() == [[1] * 3] * 2
    flat = wp.zeros(6, dtype=wp.float64, device=device)
    wp.utils.array_cast(m, flat)
    assert flat.numpy().tolist() == [1.0] * 6
    same = wp.zeros(3, dtype=float, device=device)
    wp.utils.array_cast(a, same)
    np.testing.assert_array_equal(same.numpy(), a.numpy())
    wp.utils.array_cast(a[::2], wp.zeros(2, dtype=int, device=device))


def test_array_cast_bad_inputs() -> None:
    a = wp.array(np.ones(3, np.float32))
    v3 = wp.array(np.ones((2, 3), np.float32), dtype=wp.vec3)
    m = wp.array(np.ones((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="Cast count \\(6\\) exceeds"):
        wp.utils.array_cast(v3, wp.zeros(2, dtype=wp.float64))
    with pytest.raises(RuntimeError, match="exceeds"):
        wp.utils.array_cast(a, wp.zeros(2, dtype=int))
    with pytest.raises(RuntimeError, match="shapes do not match"):
        wp.utils.array_cast(m, wp.zeros((3, 2), dtype=int))
    with pytest.raises(RuntimeError, match="Partial cast"):
        wp.utils.array_cast(m, wp.zeros((2, 3), dtype=int), count=2)
    out = wp.zeros(2, dtype=int)
    with pytest.raises(RuntimeError):
        wp.utils.array_cast(a, out)
    assert out.numpy().tolist() == [0, 0]  # nothing half-written


def _fma(x: float, y: float):
    return x * y + 1.0


def _generic(x):
    return x + x


def test_create_warp_function() -> None:
    fn, module = wp.utils.create_warp_function(_fma)
    assert isinstance(fn, wp.Function) and isinstance(module, wp.Module)
    assert fn.key == "_fma" and module.name == "map__fma"
    assert fn(2.0, 3.0) == 7.0
    g, _ = wp.utils.create_warp_function(_generic)

    @wp.kernel
    def use(out: wp.array(dtype=float), iout: wp.array(dtype=int)):
        out[0] = fn(2.0, 3.0)
        iout[0] = g(21)

    out, iout = wp.zeros(1), wp.zeros(1, dtype=int)
    wp.launch(use, 1, inputs=[out, iout])
    assert out.numpy()[0] == 7.0 and iout.numpy()[0] == 42
    with pytest.raises(TypeError, match="Python function"):
        wp.utils.create_warp_function(print)


def test_utils_in_a_captured_graph() -> None:
    rng = np.random.default_rng(0)
    n = 50_000
    keys = rng.integers(-1000, 1000, n).astype(np.int32)
    k = wp.array(np.concatenate([keys, keys]))
    v = wp.array(np.arange(2 * n, dtype=np.int32))
    x = wp.array(rng.integers(0, 9, n).astype(np.int32))
    scanned = wp.empty_like(x)
    total = wp.empty(1, dtype=float)
    ones = wp.ones(n, dtype=float)
    rv, rl, rc = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int), wp.zeros(1, dtype=int)
    with wp.ScopedCapture() as cap:
        wp.utils.radix_sort_pairs(k, v, n)
        wp.utils.array_scan(x, scanned)
        wp.utils.array_sum(ones, out=total)
        wp.utils.runlength_encode(k, rv, rl, run_count=rc, value_count=n)
        with pytest.raises(NotImplementedError, match="out="):
            wp.utils.array_sum(ones)
        with pytest.raises(NotImplementedError, match="run_count="):
            wp.utils.runlength_encode(x, rv, rl)
    assert not np.array_equal(k.numpy()[:n], np.sort(keys))  # recorded, not run
    for data in (keys, keys[::-1].copy()):
        k.assign(np.concatenate([data, data]))
        v.assign(np.arange(2 * n, dtype=np.int32))
        wp.capture_launch(cap.graph)
        np.testing.assert_array_equal(k.numpy()[:n], np.sort(keys))
        np.testing.assert_array_equal(v.numpy()[:n], np.argsort(data, kind="stable"))
        assert rc.numpy()[0] == len(np.unique(keys))
    np.testing.assert_array_equal(scanned.numpy(), np.cumsum(x.numpy()))
    assert total.numpy()[0] == n


def test_array_cast_of_indexed_arrays() -> None:
    # whole indexed arrays are cast element by element through their indices
    data = wp.array(np.arange(6, dtype=np.float32), dtype=float)
    idx = wp.array(np.array([4, 1, 3], dtype=np.int32))
    out = wp.zeros(3, dtype=wp.float64)
    wp.utils.array_cast(in_array=wp.indexedarray(data, [idx]), out_array=out)
    np.testing.assert_array_equal(out.numpy(), [4.0, 1.0, 3.0])
    dest = wp.zeros(6, dtype=float)
    wp.utils.array_cast(in_array=wp.array(np.array([7.0, 8.0, 9.0])), out_array=wp.indexedarray(dest, [idx]))
    np.testing.assert_array_equal(dest.numpy(), [0.0, 8.0, 0.0, 9.0, 7.0, 0.0])
