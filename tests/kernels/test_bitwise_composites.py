"""Bitwise operators on integer vectors and matrices, their atomics, and bfloat16 atomics.

``&``, ``|``, ``^``, ``<<``, ``>>`` and ``~`` work componentwise on integer vectors and matrices;
``arr[i] &= v`` (``|=``, ``^=``) on 32/64-bit integer elements is atomic, as ``arr[i] += v`` is, so many threads
may update one element. Results are compared with NumPy's bitwise operators.
"""

from __future__ import annotations

import numpy as np

import treadle as wp

mat33ui = wp.types.matrix(shape=(3, 3), dtype=wp.uint32)


@wp.kernel
def vec_bit_ops(a: wp.array(dtype=wp.vec3i), b: wp.array(dtype=wp.vec3i), s: wp.array(dtype=wp.vec3i),
                out: wp.array2d(dtype=wp.vec3i)):
    i = wp.tid()
    out[i, 0] = a[i] & b[i]
    out[i, 1] = a[i] | b[i]
    out[i, 2] = a[i] ^ b[i]
    out[i, 3] = a[i] << s[i]
    out[i, 4] = a[i] >> s[i]
    out[i, 5] = ~a[i]
    out[i, 6] = wp.bit_and(a[i], wp.bit_or(b[i], s[i]))


@wp.kernel
def mat_bit_ops(a: wp.array(dtype=mat33ui), b: wp.array(dtype=mat33ui), out: wp.array2d(dtype=mat33ui)):
    i = wp.tid()
    sh = mat33ui(wp.uint32(3))
    out[i, 0] = a[i] & b[i]
    out[i, 1] = a[i] | b[i]
    out[i, 2] = a[i] ^ b[i]
    out[i, 3] = a[i] << sh
    out[i, 4] = a[i] >> sh
    out[i, 5] = ~a[i]


def test_vector_bitwise_operators(device):
    rng = np.random.default_rng(3)
    a = rng.integers(-(2**31), 2**31 - 1, size=(16, 3), dtype=np.int32)
    b = rng.integers(-(2**31), 2**31 - 1, size=(16, 3), dtype=np.int32)
    s = rng.integers(0, 31, size=(16, 3), dtype=np.int32)
    out = wp.zeros((16, 7), dtype=wp.vec3i, device=device)
    wp.launch(vec_bit_ops, 16, inputs=[wp.array(a, dtype=wp.vec3i, device=device),
                                       wp.array(b, dtype=wp.vec3i, device=device),
                                       wp.array(s, dtype=wp.vec3i, device=device), out], device=device)
    got = out.numpy()
    expected = [a & b, a | b, a ^ b, np.left_shift(a, s), np.right_shift(a, s), ~a, a & (b | s)]
    for k, e in enumerate(expected):
        np.testing.assert_array_equal(got[:, k], e, err_msg=f"op {k}")


def test_matrix_bitwise_operators(device):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2**32 - 1, size=(8, 3, 3), dtype=np.uint32)
    b = rng.integers(0, 2**32 - 1, size=(8, 3, 3), dtype=np.uint32)
    out = wp.zeros((8, 6), dtype=mat33ui, device=device)
    wp.launch(mat_bit_ops, 8, inputs=[wp.array(a, dtype=mat33ui, device=device),
                                      wp.array(b, dtype=mat33ui, device=device), out], device=device)
    got = out.numpy()
    expected = [a & b, a | b, a ^ b, a << np.uint32(3), a >> np.uint32(3), ~a]
    for k, e in enumerate(expected):
        np.testing.assert_array_equal(got[:, k], e, err_msg=f"op {k}")


@wp.kernel
def vec_bit_update(a: wp.array(dtype=wp.vec3ui), b: wp.array(dtype=wp.vec3ui), op: int):
    # 32 threads update each element, one bit each: only correct if the updates are atomic
    i = wp.tid()
    w = i // 32
    mask = wp.vec3ui(wp.uint32(1)) << wp.vec3ui(wp.uint32(i % 32))
    if op == 0:
        a[w] &= (b[w] & mask) | ~mask
    elif op == 1:
        a[w] |= b[w] & mask
    elif op == 2:
        a[w] ^= b[w] & mask
    elif op == 3:
        wp.atomic_and(a, w, (b[w] & mask) | ~mask)
    elif op == 4:
        wp.atomic_or(a, w, b[w] & mask)
    else:
        wp.atomic_xor(a, w, b[w] & mask)


@wp.kernel
def mat_bit_update(a: wp.array(dtype=mat33ui), b: wp.array(dtype=mat33ui), op: int):
    i = wp.tid()
    w = i // 32
    mask = mat33ui(wp.uint32(1)) << mat33ui(wp.uint32(i % 32))
    if op == 0:
        a[w] &= (b[w] & mask) | ~mask
    elif op == 1:
        a[w] |= b[w] & mask
    elif op == 2:
        a[w] ^= b[w] & mask
    elif op == 3:
        wp.atomic_and(a, w, (b[w] & mask) | ~mask)
    elif op == 4:
        wp.atomic_or(a, w, b[w] & mask)
    else:
        wp.atomic_xor(a, w, b[w] & mask)


@wp.kernel
def scalar_bit_update(a: wp.array(dtype=wp.int64), b: wp.array(dtype=wp.int64), op: int):
    i = wp.tid()
    w = i // 64
    mask = wp.int64(1) << wp.int64(i % 64)
    if op == 0:
        a[w] &= (b[w] & mask) | ~mask
    elif op == 1:
        a[w] |= b[w] & mask
    else:
        a[w] ^= b[w] & mask


def test_vector_and_matrix_bitwise_atomics(device):
    rng = np.random.default_rng(5)
    n = 64
    for dtype, kernel, shape in ((wp.vec3ui, vec_bit_update, (n, 3)), (mat33ui, mat_bit_update, (n, 3, 3))):
        a = rng.integers(0, 2**32 - 1, size=shape, dtype=np.uint32)
        b = rng.integers(0, 2**32 - 1, size=shape, dtype=np.uint32)
        for op, expected in enumerate([a & b, a | b, a ^ b] * 2):
            arr = wp.array(a, dtype=dtype, device=device)
            wp.launch(kernel, n * 32, inputs=[arr, wp.array(b, dtype=dtype, device=device), op], device=device)
            np.testing.assert_array_equal(arr.numpy(), expected, err_msg=f"{dtype.__name__} op {op}")


def test_scalar_bitwise_augmented_assignment_is_atomic(device):
    rng = np.random.default_rng(6)
    n = 256
    a = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    b = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    for op, expected in enumerate([a & b, a | b, a ^ b]):
        arr = wp.array(a, dtype=wp.int64, device=device)
        wp.launch(scalar_bit_update, n * 64, inputs=[arr, wp.array(b, dtype=wp.int64, device=device), op],
                  device=device)
        np.testing.assert_array_equal(arr.numpy(), expected, err_msg=f"op {op}")


@wp.kernel
def bf16_atomics(a: wp.array(dtype=wp.bfloat16), old: wp.array(dtype=wp.float32)):
    i = wp.tid()
    old[i] = float(wp.atomic_add(a, 0, wp.bfloat16(1.0)))
    wp.atomic_sub(a, 1, wp.bfloat16(0.5))
    wp.atomic_min(a, 2, wp.bfloat16(float(i) - 10.0))
    wp.atomic_max(a, 3, wp.bfloat16(float(i)))
    wp.atomic_cas(a, 4, wp.bfloat16(0.0), wp.bfloat16(2.5))
    wp.atomic_exch(a, 5, wp.bfloat16(-3.0))


def _bf16_to_f32(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.uint16:  # without ml_dtypes arrays show the raw bit patterns
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float32)


def test_bfloat16_atomics(device):
    n = 64  # every partial sum 0..64 (and -0.5 * k) is exact in bfloat16
    a = wp.zeros(6, dtype=wp.bfloat16, device=device)
    old = wp.zeros(n, dtype=wp.float32, device=device)
    wp.launch(bf16_atomics, n, inputs=[a, old], device=device)
    np.testing.assert_array_equal(_bf16_to_f32(a.numpy()), np.array([n, -0.5 * n, -10, n - 1, 2.5, -3.0],
                                                                    dtype=np.float32))
    # atomic_add returns the old values: each of 0 .. n-1 exactly once
    np.testing.assert_array_equal(np.sort(old.numpy()), np.arange(n, dtype=np.float32))
