"""A ``@wp.func`` annotated ``-> Any`` returns the type its body returns, inferred per instance."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp


@wp.func
def safe_div(x: Any, y: Any) -> Any:
    if y == type(y)(0):
        return type(x)(0)
    return x / y


@wp.kernel
def halve_f32(a: wp.array(dtype=wp.float32)):
    i = wp.tid()
    a[i] = safe_div(a[i], wp.float32(2.0))


@wp.kernel
def halve_vec3d(a: wp.array(dtype=wp.vec3d), s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a[i] = safe_div(a[i], s[i])


def test_any_return_float32() -> None:
    a = wp.array(np.array([1.0, 4.0, -3.0], dtype=np.float32))
    wp.launch(halve_f32, 3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [0.5, 2.0, -1.5])


def test_any_return_follows_the_instance_types() -> None:
    a = wp.array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), dtype=wp.vec3d)
    s = wp.array(np.array([2.0, 0.0]), dtype=wp.float64)
    wp.launch(halve_vec3d, 2, inputs=[a, s])
    np.testing.assert_array_equal(a.numpy(), [[0.5, 1.0, 1.5], [0.0, 0.0, 0.0]])


def test_any_return_still_needs_one_type_on_every_path() -> None:
    @wp.func
    def mixed(x: Any) -> Any:
        if x > 0.0:
            return x
        return int(x)

    @wp.kernel
    def k(a: wp.array(dtype=wp.float64)):
        i = wp.tid()
        a[i] = mixed(a[i])

    with pytest.raises(wp.CodegenError, match="returned a"):
        wp.launch(k, 1, inputs=[wp.zeros(1, dtype=wp.float64)])
