"""Tiles of @wp.struct values: field-wise +, -, tile_sum, tile_atomic_add, and gradients through them."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.struct
class Body:
    m: float
    v: wp.vec3
    alive: wp.bool  # no addition: keeps the first operand's value


@wp.struct
class Pair:
    body: Body
    w: float


@wp.func
def energy(b: Body) -> float:
    return b.m * wp.dot(b.v, b.v)


@wp.kernel
def struct_ops(a: wp.array(dtype=Body), pairs: wp.array(dtype=Pair), add_o: wp.array(dtype=Body),
               sub_o: wp.array(dtype=Body), sum_o: wp.array(dtype=Body), acc: wp.array(dtype=Body),
               psum: wp.array(dtype=Pair)):
    t = wp.tile_load(a, shape=5)
    wp.tile_store(add_o, t + t)
    wp.tile_store(sub_o, (t + t) - t)
    wp.tile_store(sum_o, wp.tile_sum(t))
    wp.tile_atomic_add(acc, t)
    wp.tile_store(psum, wp.tile_sum(wp.tile_load(pairs, shape=3)))


def _bodies(n: int, rng: np.random.Generator) -> list:
    out = []
    for _ in range(n):
        b = Body()
        b.m = float(rng.uniform(1, 2))
        b.v = wp.vec3(*rng.uniform(-1, 1, 3))
        b.alive = bool(rng.integers(0, 2))
        out.append(b)
    return out


def test_struct_tile_arithmetic_field_by_field():
    rng = np.random.default_rng(4)
    bodies = _bodies(5, rng)
    pairs = []
    for b in bodies[:3]:
        p = Pair()
        p.body = b
        p.w = 0.5
        pairs.append(p)
    a = wp.array(bodies, dtype=Body)
    outs = [wp.zeros(5, dtype=Body), wp.zeros(5, dtype=Body), wp.zeros(1, dtype=Body), wp.array(bodies, dtype=Body)]
    psum = wp.zeros(1, dtype=Pair)
    wp.launch_tiled(struct_ops, dim=1, inputs=[a, wp.array(pairs, dtype=Pair), *outs, psum], block_dim=8)
    A = a.numpy()
    add_o, sub_o, sum_o, acc = (o.numpy() for o in outs)
    for f in ("m", "v"):
        np.testing.assert_allclose(add_o[f], 2 * A[f], rtol=1e-6)
        np.testing.assert_allclose(sub_o[f], A[f], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(sum_o[f][0], A[f].sum(axis=0), rtol=1e-5)
        np.testing.assert_allclose(acc[f], 2 * A[f], rtol=1e-6)
    np.testing.assert_array_equal(add_o["alive"], A["alive"])  # bool fields are not added
    np.testing.assert_array_equal(acc["alive"], A["alive"])
    np.testing.assert_allclose(psum.numpy()["body"]["m"][0], A["m"][:3].sum(), rtol=1e-6)
    np.testing.assert_allclose(psum.numpy()["w"][0], 1.5, rtol=1e-6)


@wp.kernel
def struct_loss(a: wp.array(dtype=Body), loss: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=5)
    d = wp.tile_zeros(shape=5, dtype=Body)
    wp.tile_assign(d, t + t - t)
    wp.tile_store(loss, wp.tile_sum(wp.tile_map(energy, d)))


def test_struct_tile_gradients():
    rng = np.random.default_rng(6)
    bodies = _bodies(5, rng)
    a = wp.array(bodies, dtype=Body, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(struct_loss, dim=1, inputs=[a, loss], block_dim=8)
    A = a.numpy()
    np.testing.assert_allclose(loss.numpy()[0], np.sum(A["m"] * np.sum(A["v"] ** 2, axis=1)), rtol=1e-5)
    tape.backward(loss=loss)
    g = a.grad.numpy()
    np.testing.assert_allclose(g["m"], np.sum(A["v"] ** 2, axis=1), rtol=1e-5)  # d(m v.v)/dm = v.v
    np.testing.assert_allclose(g["v"], 2 * A["m"][:, None] * A["v"], rtol=1e-5)  # d/dv = 2 m v
