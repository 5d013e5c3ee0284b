"""Arrays made from addresses in kernel code: ``arr.ptr`` and ``wp.array(ptr=..., shape=..., dtype=...)``.

The view is contiguous (C order) over memory the kernel does not own and has no gradient; compiled and interpreted
kernels agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenTypeError


@wp.kernel
def _rewrite(src: wp.array2d(dtype=wp.float32), out: wp.array(dtype=wp.uint64)):
    view = wp.array(ptr=src.ptr, shape=(2, 3), dtype=wp.float32)
    view[0, 1] = 2.0
    view[1, 2] = 3.0
    out[0] = src.ptr
    out[1] = view.ptr


@wp.struct
class _Pair:
    a: wp.float32
    b: wp.int32


@wp.kernel
def _fill_structs(src: wp.array(dtype=_Pair)):
    view = wp.array(ptr=src.ptr, shape=(3,), dtype=_Pair)
    view[2].a = 4.5
    view[2].b = 7


@wp.kernel
def _variable_shape(ptr: wp.uint64, rows: int, cols: int, out: wp.array(dtype=int)):
    view = wp.array(ptr=ptr, shape=(rows, cols), dtype=wp.vec2)
    view[rows - 1, cols - 1] = wp.vec2(7.0, 8.0)
    flat = wp.array(ptr=ptr, shape=rows * cols, dtype=wp.vec2)
    flat[0] = wp.vec2(1.0, float(flat.shape[0]))
    out[0] = view.ndim * 100 + view.shape[0] * 10 + view.shape[1]


@pytest.mark.parametrize("mode", ["release", "interpret"])
def test_views_of_addresses(mode):
    with wp.config.override(mode=mode):
        a = wp.zeros((2, 3), dtype=wp.float32)
        ptrs = wp.zeros(2, dtype=wp.uint64)
        wp.launch(_rewrite, 1, inputs=[a, ptrs])
        np.testing.assert_array_equal(a.numpy(), [[0, 2, 0], [0, 0, 3]])
        assert ptrs.numpy().tolist() == [a.ptr, a.ptr]

        s = wp.zeros(3, dtype=_Pair)
        wp.launch(_fill_structs, 1, inputs=[s])
        assert s.numpy()[2].tolist() == (4.5, 7) and s.numpy()[1].tolist() == (0.0, 0)

        v = wp.zeros((3, 4), dtype=wp.vec2)
        out = wp.zeros(1, dtype=int)
        wp.launch(_variable_shape, 1, inputs=[v.ptr, 2, 3, out])  # a 2x3 view of the first 6 elements
        flat = v.numpy().reshape(-1, 2)
        np.testing.assert_array_equal(flat[5], [7.0, 8.0])
        np.testing.assert_array_equal(flat[0], [1.0, 6.0])
        assert not flat[6:].any() and out.numpy()[0] == 223


@wp.kernel
def _no_dtype(src: wp.array(dtype=float)):
    view = wp.array(ptr=src.ptr, shape=(2,))
    view[0] = 1.0


@wp.kernel
def _float_ptr(src: wp.array(dtype=float)):
    view = wp.array(ptr=1.5, shape=(2,), dtype=float)
    view[0] = 1.0


@wp.kernel
def _five_dims(src: wp.array(dtype=float)):
    view = wp.array(ptr=src.ptr, shape=(1, 1, 1, 1, 1), dtype=float)


@pytest.mark.parametrize("kernel, text", [(_no_dtype, "exactly ptr=, shape= and dtype="),
                                          (_float_ptr, "integer address"), (_five_dims, "1 to 4 extents")])
def test_bad_array_constructions_are_compile_errors(kernel, text):
    with pytest.raises(CodegenTypeError, match=text):
        wp.launch(kernel, 1, inputs=[wp.zeros(2, dtype=float)])
