"""Gradients of ``atomic_min`` / ``atomic_max``: the element's gradient flows to the value that ended there.

Reference: NumPy argmin/argmax of the same values (componentwise for vectors and matrices).
"""

import numpy as np
import pytest

import treadle as wp


def _kernel(dtype):
    @wp.kernel(module="unique")
    def minmax(out_min: wp.array(dtype=dtype), out_max: wp.array(dtype=dtype), val: wp.array(dtype=dtype)):
        tid = wp.tid()
        wp.atomic_min(out_min, 0, val[tid])
        wp.atomic_max(out_max, 0, val[tid])

    return minmax


@pytest.mark.parametrize("dtype", [wp.float32, wp.float64, wp.vec3, wp.mat22d])
def test_atomic_min_max_gradients(device, dtype):
    n = 257
    rng = np.random.default_rng(11)
    shape = tuple(getattr(dtype, "_shape_", ()))
    npdt = np.float64 if getattr(dtype, "_wp_scalar_type_", dtype) is wp.float64 else np.float32
    vals = rng.random((n, *shape)).astype(npdt)
    val = wp.array(vals, dtype=dtype, device=device, requires_grad=True)
    out_min = wp.array(np.full((1, *shape), 10.0, dtype=npdt), dtype=dtype, device=device, requires_grad=True)
    out_max = wp.array(np.full((1, *shape), -10.0, dtype=npdt), dtype=dtype, device=device, requires_grad=True)
    kernel = _kernel(dtype)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=n, inputs=[out_min, out_max, val], device=device)
    np.testing.assert_array_equal(out_min.numpy()[0], vals.min(axis=0))
    np.testing.assert_array_equal(out_max.numpy()[0], vals.max(axis=0))
    for out, pick in ((out_min, np.argmin), (out_max, np.argmax)):
        out.grad.fill_(1.0)
        tape.backward()
        expected = np.zeros_like(vals)
        flat = vals.reshape(n, -1)
        idx = pick(flat, axis=0)
        expected.reshape(n, -1)[idx, np.arange(flat.shape[1])] = 1.0
        np.testing.assert_array_equal(val.grad.numpy(), expected)
        tape.zero()
