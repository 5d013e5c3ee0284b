"""Operators on tiles beyond arithmetic (bitwise, ``a @ b``), element updates, and tiles that @funcs update."""

from __future__ import annotations

import numpy as np
import pytest
from tile_error_check import assert_error_at_line

import treadle as wp


@wp.kernel
def bitwise_u32(a: wp.array2d(dtype=wp.uint32), b: wp.array2d(dtype=wp.uint32), out: wp.array3d(dtype=wp.uint32)):
    x = wp.tile_load(a, shape=(3, 5))
    y = wp.tile_load(b, shape=(3, 5))
    wp.tile_store(out[0], x & y)
    wp.tile_store(out[1], x | y)
    wp.tile_store(out[2], x ^ y)
    wp.tile_store(out[3], x << wp.uint32(3))
    wp.tile_store(out[4], x >> wp.uint32(2))
    wp.tile_store(out[5], ~x)
    wp.tile_store(out[6], wp.uint32(0xF0F0F0F0) & x)
    z = x
    z &= y
    z |= wp.uint32(1)
    z ^= x
    z <<= wp.uint32(1)
    wp.tile_store(out[7], z)
    z >>= wp.uint32(1)
    z[1, 2] &= wp.uint32(0xFF)
    wp.tile_store(out[8], z)


def test_bitwise_operators_on_uint32_tiles():
    rng = np.random.default_rng(0)
    A = rng.integers(0, 2**32, size=(3, 5), dtype=np.uint32)
    B = rng.integers(0, 2**32, size=(3, 5), dtype=np.uint32)
    out = wp.zeros((9, 3, 5), dtype=wp.uint32)
    wp.launch_tiled(bitwise_u32, dim=1, inputs=[wp.array(A), wp.array(B), out], block_dim=8)
    z = ((((A & B) | np.uint32(1)) ^ A) << np.uint32(1)).astype(np.uint32)
    z2 = z >> np.uint32(1)
    z2[1, 2] &= np.uint32(0xFF)
    want = [A & B, A | B, A ^ B, (A << np.uint32(3)).astype(np.uint32), A >> np.uint32(2), ~A,
            np.uint32(0xF0F0F0F0) & A, z, z2]
    for got, w in zip(out.numpy(), want):
        np.testing.assert_array_equal(got, w)


@wp.kernel
def bitwise_i32(a: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
    x = wp.tile_load(a, shape=7)
    wp.tile_store(out[0], x & 3)
    wp.tile_store(out[1], 1 << (x & 7))
    x >>= 1  # arithmetic shift: negative values stay negative
    wp.tile_store(out[2], x)


def test_bitwise_operators_on_int32_tiles_with_literals():
    A = np.array([-7, -1, 0, 1, 2, 5, 13], dtype=np.int32)
    out = wp.zeros((3, 7), dtype=wp.int32)
    wp.launch_tiled(bitwise_i32, dim=1, inputs=[wp.array(A), out], block_dim=8)
    np.testing.assert_array_equal(out.numpy(), [A & 3, np.left_shift(1, A & 7), A >> 1])


@wp.kernel
def matmul_operator(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(3, 7))
    y = wp.tile_load(b, shape=(7, 5))
    wp.tile_store(c, x @ y + wp.tile_ones(shape=(3, 5), dtype=float))


def test_matmul_operator_values_and_gradients():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3, 7)).astype(np.float32)
    Y = rng.standard_normal((7, 5)).astype(np.float32)
    G = rng.standard_normal((3, 5)).astype(np.float32)
    a, b = wp.array(X, requires_grad=True), wp.array(Y, requires_grad=True)
    c = wp.zeros((3, 5), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(matmul_operator, dim=1, inputs=[a, b, c], block_dim=8)
    np.testing.assert_allclose(c.numpy(), X @ Y + 1, rtol=1e-5, atol=1e-5)
    tape.backward(grads={c: wp.array(G)})
    np.testing.assert_allclose(a.grad.numpy(), G @ Y.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), X.T @ G, rtol=1e-5, atol=1e-5)


def float_bitwise(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4)
    wp.tile_store(a, t & t)


def matmul_mismatch(a: wp.array(dtype=float)):
    x = wp.tile_zeros(shape=(2, 3), dtype=float)
    y = wp.tile_zeros(shape=(2, 3), dtype=float)
    z = x @ y
    wp.tile_store(a, z[0])


@pytest.mark.parametrize("fn, message, line_text", [
    (float_bitwise, r"bitwise operators take tiles of integers, got a tile of float32", "t & t"),
    (matmul_mismatch, r"inner extents differ", "x @ y"),
])
def test_operator_errors_point_at_the_user_line(fn, message, line_text):
    assert_error_at_line(fn, message, line_text, [wp.zeros(4, dtype=float)], "tile_ops_err")


@wp.func
def add_five(t: wp.tile[float, 2, 3]):
    t += wp.tile_ones(dtype=float, shape=(2, 3)) * 5.0


@wp.func
def poke(t: wp.tile[float, 2, 3], u: wp.tile[float, 2, 3]) -> float:
    t[0, 1] = 7.0
    wp.tile_assign(u, wp.tile_ones(dtype=float, shape=(1, 3)), offset=(1, 0))
    return 2.0


@wp.func
def rebinds(t: wp.tile[float, 2, 3]):
    t = t * 2.0
    t += t


@wp.kernel
def func_updates(a: wp.array2d(dtype=float), out: wp.array3d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 3))
    add_five(t)
    wp.tile_store(out[0], t)
    u = wp.tile_zeros(dtype=float, shape=(2, 3))
    x = poke(t, u)
    wp.tile_store(out[1], t * x)
    wp.tile_store(out[2], u)
    rebinds(u)  # rebinding its parameter leaves the caller's tile alone
    add_five(u + u)  # an expression: the update reaches a temporary only
    wp.tile_store(out[3], u)


def test_funcs_update_the_callers_tiles_with_gradients():
    A = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = wp.array(A, requires_grad=True)
    out = wp.zeros((4, 2, 3), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(func_updates, dim=1, inputs=[a, out], block_dim=8)
    t1 = A + 5
    t2 = t1.copy()
    t2[0, 1] = 7
    u = np.zeros((2, 3), np.float32)
    u[1] = 1
    np.testing.assert_array_equal(out.numpy(), [t1, 2 * t2, u, u])
    tape.backward(grads={out: wp.ones((4, 2, 3), dtype=float)})
    want = np.full((2, 3), 3.0, np.float32)
    want[0, 1] = 1.0  # overwritten in poke: only the first store sees a's element
    np.testing.assert_array_equal(a.grad.numpy(), want)


@wp.kernel
def negative_components(out: wp.array(dtype=wp.mat33), vout: wp.array(dtype=wp.vec3)):
    t = wp.tile_zeros(dtype=wp.mat33, shape=(3,))
    t[1][-1] = wp.vec3(10.0, 20.0, 30.0)  # the last row of element 1
    t[2][0, -2] = 5.0
    v = wp.tile_zeros(dtype=wp.vec3, shape=(2,))
    v[1][-3] = 4.0
    wp.tile_store(out, t)
    wp.tile_store(vout, v)


def test_negative_component_indices_in_element_updates():
    out = wp.zeros(3, dtype=wp.mat33)
    vout = wp.zeros(2, dtype=wp.vec3)
    wp.launch_tiled(negative_components, dim=1, inputs=[out, vout], block_dim=8)
    want = np.zeros((3, 3, 3), np.float32)
    want[1, 2] = [10, 20, 30]
    want[2, 0, 1] = 5
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(vout.numpy(), [[0, 0, 0], [4, 0, 0]])
