"""float16 atomics and gradients of half-precision arrays (CAS loops on 16-bit words).

Regression: an unqualified ``bit_cast`` in the CAS loop became ambiguous once a second ``treadle::bit_cast``
existed, which broke every half-precision atomic (and so every backward pass over half arrays).
"""

from __future__ import annotations

import numpy as np

import treadle as wp

vec3h = wp.types.vector(3, wp.float16)


@wp.kernel
def half_accumulate(out: wp.array(dtype=wp.float16), vout: wp.array(dtype=vec3h)):
    wp.atomic_add(out, 0, wp.float16(1.0))
    wp.atomic_add(vout, 0, vec3h(wp.float16(1.0), wp.float16(2.0), wp.float16(0.5)))


@wp.kernel
def half_length(v: wp.array(dtype=vec3h), out: wp.array(dtype=wp.float16)):
    out[0] = wp.float16(2.0) * wp.length(v[0])


def test_half_atomic_add(device):
    out = wp.zeros(1, dtype=wp.float16, device=device)
    vout = wp.zeros(1, dtype=vec3h, device=device)
    wp.launch(half_accumulate, dim=64, inputs=[out, vout], device=device)
    assert out.numpy()[0] == np.float16(64)
    np.testing.assert_array_equal(vout.numpy()[0], np.array([64, 128, 32], dtype=np.float16))


def test_half_vector_gradient(device):
    x = np.array([[0.5, -1.0, 2.0]], dtype=np.float16)
    v = wp.array(x, dtype=vec3h, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float16, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(half_length, dim=1, inputs=[v, out], device=device)
    tape.backward(loss=out)
    xd = x.astype(np.float64)[0]
    np.testing.assert_allclose(out.numpy()[0], 2.0 * np.linalg.norm(xd), rtol=5e-3)
    np.testing.assert_allclose(v.grad.numpy()[0], 2.0 * xd / np.linalg.norm(xd), rtol=1e-2)


HALF_VEC = wp.constant(wp.types.vector(2, wp.float16)(1.0, 2.5))
HALF_MAT = wp.constant(wp.mat22h(1.0, 2.0, 3.0, 4.0))


@wp.kernel
def half_constants(out: wp.array(dtype=float)):
    out[0] = float(HALF_VEC[1])
    out[1] = float(HALF_MAT[1, 0])


def test_half_composite_constants(device):
    # Regression: float16 composites were emitted from their raw storage bits (1.0 became 15360).
    out = wp.zeros(2, dtype=float, device=device)
    wp.launch(half_constants, dim=1, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [2.5, 3.0])
