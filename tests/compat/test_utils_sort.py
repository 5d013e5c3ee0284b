"""``wp.utils.radix_sort_pairs`` and ``segmented_sort_pairs`` against NumPy's stable argsort."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp

KEY_TYPES = [np.int32, np.uint32, np.float32, np.int64, np.uint64, np.float64]


def ordered(keys: np.ndarray) -> np.ndarray:
    """Unsigned integers whose order is the reference's key order (floats: -NaN < -inf < -0 < +0 < +inf < +NaN)."""
    u = keys.view(np.uint32 if keys.itemsize == 4 else np.uint64)
    sign = u.dtype.type(1) << u.dtype.type(8 * keys.itemsize - 1)
    if keys.dtype.kind == "f":
        return np.where(u & sign, ~u, u ^ sign)
    if keys.dtype.kind == "i":
        return u ^ sign
    return u


def random_keys(rng: np.random.Generator, dt: type, n: int, adversarial: bool) -> np.ndarray:
    if np.dtype(dt).kind == "f":
        k = rng.standard_normal(n).astype(dt)
        if adversarial and n:
            specials = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0], dtype=dt)
            k[rng.integers(0, n, n // 2)] = specials[rng.integers(0, len(specials), n // 2)]
        return k
    info = np.iinfo(dt)
    if adversarial:  # few distinct values, extremes included: many equal keys, stability matters
        return rng.choice(np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dt), n)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def sort_pairs(keys: np.ndarray, values: np.ndarray, device: str, **kw: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(keys)
    k = wp.array(np.concatenate([keys, keys]), dtype=wp.dtype_from_numpy(keys.dtype), device=device)
    v = wp.array(np.concatenate([values, values]), dtype=wp.dtype_from_numpy(values.dtype), device=device)
    wp.utils.radix_sort_pairs(k, v, n, **kw)
    return k.numpy()[:n], v.numpy()[:n]


@pytest.mark.parametrize("dt", KEY_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 5000, 200_000])
@pytest.mark.parametrize("adversarial", [False, True])
def test_radix_sort_pairs_matches_stable_argsort(dt: type, n: int, adversarial: bool, device: str) -> None:
    rng = np.random.default_rng(n + 17 * adversarial)
    keys = random_keys(rng, dt, n, adversarial)
    values = np.arange(n, dtype=np.int32)
    k, v = sort_pairs(keys, values, device)
    expected = np.argsort(ordered(keys), kind="stable")
    np.testing.assert_array_equal(v, expected)
    np.testing.assert_array_equal(k.view(np.uint8), keys[expected].view(np.uint8))  # bits: -0.0 and NaN signs too


def test_float_special_values_order(device: str) -> None:
    keys = np.array([3.0, np.nan, -0.0, 0.0, -np.nan, -np.inf, np.inf, 1.0, -1.0, 0.0, -0.0], dtype=np.float32)
    _, v = sort_pairs(keys, np.arange(len(keys), dtype=np.int32), device)
    assert v.tolist() == [4, 5, 8, 2, 10, 3, 9, 7, 0, 6, 1]


def test_all_equal_keys_keep_order(device: str) -> None:
    keys = np.full(70_000, 5, dtype=np.int32)
    values = np.arange(70_000, dtype=np.int32)[::-1].copy()
    _, v = sort_pairs(keys, values, device)
    np.testing.assert_array_equal(v, values)


@pytest.mark.parametrize("vdt", [np.float32, np.uint64, np.int64, np.float64])
def test_value_types_of_4_and_8_bytes(vdt: type, device: str) -> None:
    rng = np.random.default_rng(3)
    keys = rng.integers(-50, 50, 3000).astype(np.int32)
    values = rng.standard_normal(3000).astype(vdt) if np.dtype(vdt).kind == "f" else rng.integers(0, 2**40, 3000).astype(vdt)
    _, v = sort_pairs(keys, values, device)
    np.testing.assert_array_equal(v, values[np.argsort(keys, kind="stable")])


def test_vector_values(device: str) -> None:
    keys = np.array([3, 1, 2, 0, 0, 0], dtype=np.int32)
    k = wp.array(keys, device=device)
    v = wp.array(np.arange(12, dtype=np.float16).reshape(6, 2), dtype=wp.vec2h, device=device)
    wp.utils.radix_sort_pairs(k, v, 3)
    assert k.numpy()[:3].tolist() == [1, 2, 3]
    assert v.numpy()[:3].tolist() == [[2, 3], [4, 5], [0, 1]]


def test_bit_range(device: str) -> None:
    keys = np.array([0x10, 0x01, 0x11, 0x00], dtype=np.uint32)
    _, v = sort_pairs(keys, np.arange(4, dtype=np.int32), device, begin_bit=4)
    assert v.tolist() == [1, 3, 0, 2]
    _, v = sort_pairs(keys, np.arange(4, dtype=np.int32), device, end_bit=4)
    assert v.tolist() == [0, 3, 1, 2]
    signed = np.array([-1, 1, -2, 2], dtype=np.int32)  # the low byte, as unsigned: 0xFF, 0x01, 0xFE, 0x02
    k, _ = sort_pairs(signed, np.arange(4, dtype=np.int32), device, end_bit=8)
    assert k.tolist() == [1, 2, -2, -1]
    rng = np.random.default_rng(5)
    big = rng.integers(0, 2**31, 100_000).astype(np.int32)
    _, v = sort_pairs(big, np.arange(len(big), dtype=np.int32), device, begin_bit=12, end_bit=20)
    np.testing.assert_array_equal(v, np.argsort((big >> 12) & 0xFF, kind="stable"))


def test_sorts_only_the_first_count(device: str) -> None:
    k = wp.array(np.array([5, 4, 3, 2, 1, 0, 9, 9, 9, 9], np.int32), device=device)
    v = wp.array(np.arange(10, dtype=np.int32), device=device)
    wp.utils.radix_sort_pairs(k, v, 3)
    assert k.numpy()[:3].tolist() == [3, 4, 5] and v.numpy()[:3].tolist() == [2, 1, 0]
    assert k.numpy()[6:].tolist() == [9, 9, 9, 9]  # beyond 2 * count: untouched


def test_bad_inputs(device: str) -> None:
    k = wp.zeros(8, dtype=wp.int32, device=device)
    v = wp.zeros(8, dtype=wp.int32, device=device)
    with pytest.raises(RuntimeError, match="2\\*count"):
        wp.utils.radix_sort_pairs(k, v, 5)
    with pytest.raises(TypeError, match="int16"):
        wp.utils.radix_sort_pairs(wp.zeros(8, dtype=wp.int16, device=device), v, 2)
    with pytest.raises(TypeError, match="4 or 8 bytes"):
        wp.utils.radix_sort_pairs(k, wp.zeros(8, dtype=wp.int8, device=device), 2)
    with pytest.raises(ValueError, match="non-negative"):
        wp.utils.radix_sort_pairs(k, v, -1)
    with pytest.raises(TypeError, match="integer"):
        wp.utils.radix_sort_pairs(k, v, 2.0)
    with pytest.raises(ValueError, match="end_bit"):
        wp.utils.radix_sort_pairs(k, v, 2, begin_bit=8, end_bit=4)
    with pytest.raises(ValueError, match="end_bit"):
        wp.utils.radix_sort_pairs(k, v, 2, end_bit=33)
    with pytest.raises(TypeError, match="treadle array"):
        wp.utils.radix_sort_pairs(np.zeros(8, np.int32), v, 2)


def test_error_points_at_caller_and_writes_nothing() -> None:
    keys = wp.array(np.array([3, 2, 1, 0, 0], np.int32))
    vals = wp.array(np.arange(6, dtype=np.int32))
    try:
        wp.utils.radix_sort_pairs(keys, vals, 3)
    except RuntimeError as e:
        frames = [f for f in __import__("traceback").extract_tb(e.__traceback__)]
        assert frames[0].filename == __file__ and "radix_sort_pairs(keys, vals, 3)" in frames[0].line
    else:
        raise AssertionError("expected an error")
    assert keys.numpy().tolist() == [3, 2, 1, 0, 0]


def test_mismatched_devices() -> None:
    if not wp.is_cuda_available():
        pytest.skip("needs a CUDA device to put the arrays on two devices")
    k = wp.zeros(8, dtype=wp.int32, device="cpu")
    v = wp.zeros(8, dtype=wp.int32, device="cuda:0")
    with pytest.raises(RuntimeError, match="same device"):
        wp.utils.radix_sort_pairs(k, v, 4)


def _segments_reference(keys: np.ndarray, values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    out = values.copy()
    for s, e in zip(starts, ends):
        order = np.argsort(ordered(keys[s:e]), kind="stable")
        out[s:e] = values[s:e][order]
    return out


@pytest.mark.parametrize("dt", [np.int32, np.float32], ids=["int32", "float32"])
def test_segmented_sort_pairs_consecutive_segments(dt: type, device: str) -> None:
    rng = np.random.default_rng(11)
    n = 120_000
    keys = random_keys(rng, dt, n, adversarial=True)
    values = np.arange(n, dtype=np.int32)
    cuts = np.sort(rng.choice(np.arange(1, n), 300, replace=False))
    starts = np.concatenate([[0], cuts[:50], [cuts[50]], cuts[50:], [n]]).astype(np.int32)  # an empty segment too
    starts = np.sort(starts)
    big = np.array([0, 10, 80_000, n], dtype=np.int32)  # one segment longer than the parallel-sort threshold
    for st in (starts, big):
        k = wp.array(np.concatenate([keys, keys]), device=device)
        v = wp.array(np.concatenate([values, values]), device=device)
        wp.utils.segmented_sort_pairs(k, v, n, wp.array(st, device=device))
        np.testing.assert_array_equal(v.numpy()[:n], _segments_reference(keys, values, st[:-1], st[1:]))


def test_segmented_sort_pairs_explicit_ends_leave_gaps(device: str) -> None:
    keys = np.array([3.0, np.nan, -0.0, 0.0, -np.nan, -np.inf, np.inf, 1.0, -1.0, 0.0, -0.0], dtype=np.float32)
    n = len(keys)
    k = wp.array(np.concatenate([keys, keys]), device=device)
    v = wp.array(np.arange(2 * n, dtype=np.int32), device=device)
    wp.utils.segmented_sort_pairs(k, v, n, wp.array([0, 3, 9], dtype=wp.int32, device=device),
                                  wp.array([2, 8, 11], dtype=wp.int32, device=device))
    assert v.numpy()[:n].tolist() == [0, 1, 2, 4, 5, 3, 7, 6, 8, 10, 9]


def test_segmented_sort_docstring_example(device: str) -> None:
    keys = wp.array([3, 1, 4, 2, 0, 0, 0, 0], dtype=wp.int32, device=device)
    values = wp.array([30, 10, 40, 20, 0, 0, 0, 0], dtype=wp.int32, device=device)
    wp.utils.segmented_sort_pairs(keys, values, 4, wp.array([0, 2, 4], dtype=wp.int32, device=device))
    assert keys.numpy()[:4].tolist() == [1, 3, 2, 4] and values.numpy()[:4].tolist() == [10, 30, 20, 40]


def test_segmented_sort_bad_inputs() -> None:
    k = wp.zeros(8, dtype=wp.int32)
    v = wp.zeros(8, dtype=wp.int32)
    with pytest.raises(ValueError, match="index 0: \\[0, 5\\)"):
        wp.utils.segmented_sort_pairs(k, v, 4, wp.array([0, 5], dtype=wp.int32))
    with pytest.raises(ValueError, match="\\[3, 1\\)"):
        wp.utils.segmented_sort_pairs(k, v, 4, wp.array([3, 1], dtype=wp.int32))
    with pytest.raises(RuntimeError, match="same length"):
        wp.utils.segmented_sort_pairs(k, v, 4, wp.array([0, 2], dtype=wp.int32), wp.array([1], dtype=wp.int32))
    with pytest.raises(RuntimeError, match="2\\*count"):
        wp.utils.segmented_sort_pairs(k, v, 5, wp.array([0, 2], dtype=wp.int32))
    with pytest.raises(TypeError, match="integer"):
        wp.utils.segmented_sort_pairs(k, v, 2.0, wp.array([0, 2], dtype=wp.int32))
    with pytest.raises(TypeError, match="int32"):
        wp.utils.segmented_sort_pairs(k, wp.zeros(8, dtype=float), 4, wp.array([0, 2], dtype=wp.int32))
    with pytest.raises(TypeError, match="int64"):
        wp.utils.segmented_sort_pairs(wp.zeros(8, dtype=wp.int64), v, 4, wp.array([0, 2], dtype=wp.int32))
    with pytest.raises(TypeError, match="int32"):
        wp.utils.segmented_sort_pairs(k, v, 4, wp.array([0, 2], dtype=wp.int64))
    with pytest.raises(RuntimeError, match="one-dimensional"):
        wp.utils.segmented_sort_pairs(k, v, 4, wp.array([[0, 2]], dtype=wp.int32))
    with pytest.raises(RuntimeError, match="contiguous"):
        wp.utils.segmented_sort_pairs(k[::2], v[::2], 2, wp.array([0, 2], dtype=wp.int32))
    wp.utils.segmented_sort_pairs(k, v, 4, wp.array([0], dtype=wp.int32))  # no segments: nothing to do
    assert k.numpy().tolist() == [0] * 8
