"""Indexed arrays (``wp.indexedarray``): host views, kernel reads/writes/atomics/len/shape/views, gradients.

Every result is compared with NumPy fancy indexing (``np.ix_``) on the underlying data.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def ia_scale_1d(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float), n: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = a[i] * 2.0
    a[i] = a[i] + 1.0
    n[0] = len(a)


@wp.kernel
def ia_copy_2d(a: wp.indexedarray[float, Literal[2]], out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    row = a[i]  # a 1-d indexed view
    out[i, j] = row[j] + float(a.shape[0] * 100 + a.shape[1] * 0)


@wp.kernel
def ia_copy_3d(a: wp.indexedarray3d(dtype=wp.vec2), out: wp.array3d(dtype=wp.vec2)):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k]


@wp.kernel
def ia_write_4d(a: wp.indexedarray4d(dtype=int)):
    i, j, k, l = wp.tid()
    a[i, j, k, l] = i * 1000 + j * 100 + k * 10 + l


@wp.kernel
def ia_atomic(a: wp.indexedarray(dtype=float), vals: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(a, i % 2, vals[i])
    a[2] += vals[i]


@wp.kernel
def ia_square_sum(a: wp.indexedarray(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a[i] * a[i])


@wp.kernel
def ia_generic_inc(a: Any):
    i = wp.tid()
    a[i] = a[i] + 1


def _sel(data: np.ndarray, idx: list[Any]) -> np.ndarray:
    ranges = [np.asarray(ix) if ix is not None else np.arange(n) for ix, n in zip(idx, data.shape)]
    ranges += [np.arange(n) for n in data.shape[len(ranges):]]
    return data[np.ix_(*ranges)]


def test_host_view_matches_numpy(device):
    rng = np.random.default_rng(1)
    values = rng.random((5, 6, 7)).astype(np.float32)
    data = wp.array(values, device=device)
    rows = [4, 0, 2]
    cols = [6, 1]
    for idx in ([rows], [None, [5, 1]], [rows, None, cols], [None, [0, 3], cols], [rows, [1], cols]):
        tables = [wp.array(ix, dtype=int, device=device) if ix is not None else None for ix in idx]
        ia = wp.indexedarray(data, tables)
        expected = _sel(values, idx)
        assert ia.shape == expected.shape
        assert ia.size == expected.size
        assert ia.ndim == 3 and ia.dtype == wp.float32
        np.testing.assert_array_equal(ia.numpy(), expected)
    # arr[index_array, ...] builds the same view
    ia = data[wp.array(rows, dtype=int, device=device), 1:4]
    assert isinstance(ia, wp.indexedarray)
    np.testing.assert_array_equal(ia.numpy(), values[rows][:, 1:4])


def test_host_fill_assign_zero(device):
    data = wp.zeros((4, 3), dtype=wp.vec3, device=device)
    ia = wp.indexedarray(data, [wp.array([3, 1], dtype=int, device=device)])
    ia.fill_(wp.vec3(1.0, 2.0, 3.0))
    expected = np.zeros((4, 3, 3), dtype=np.float32)
    expected[[3, 1]] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(data.numpy(), expected)
    ia.assign(np.arange(18, dtype=np.float32).reshape(2, 3, 3))
    expected[[3, 1]] = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    np.testing.assert_array_equal(data.numpy(), expected)
    ia.zero_()
    expected[[3, 1]] = 0.0
    np.testing.assert_array_equal(data.numpy(), expected)
    c = ia.contiguous()
    assert type(c) is wp.array and c.shape == (2, 3)


def test_empty_indexedarray(device):
    data = wp.zeros((3, 2), dtype=float, device=device)
    ia = data[wp.empty(0, dtype=int, device=device)]
    assert ia.shape == (0, 2) and ia.size == 0
    ia.zero_()
    ia.fill_(1.0)
    assert ia.numpy().shape == (0, 2)
    assert ia.list() == []


def test_kernel_1d_read_write_len(device):
    values = np.arange(10, dtype=np.float32)
    data = wp.array(values, device=device)
    idx = [7, 2, 5]
    ia = wp.indexedarray1d(data, [wp.array(idx, dtype=int, device=device)])
    out = wp.zeros(3, dtype=float, device=device)
    n = wp.zeros(1, dtype=int, device=device)
    wp.launch(ia_scale_1d, dim=ia.shape, inputs=[ia, out, n], device=device)
    np.testing.assert_allclose(out.numpy(), values[idx] * 2.0)
    expected = values.copy()
    expected[idx] += 1.0
    np.testing.assert_allclose(data.numpy(), expected)
    assert n.numpy()[0] == 3


def test_kernel_2d_views_and_shape(device):
    values = np.arange(30, dtype=np.float32).reshape(5, 6)
    data = wp.array(values, device=device)
    for idx in ([[4, 1], None], [None, [5, 0, 3]], [[2], [1, 1]]):
        tables = [wp.array(ix, dtype=int, device=device) if ix is not None else None for ix in idx]
        ia = wp.indexedarray(data, tables)
        out = wp.zeros(ia.shape, dtype=float, device=device)
        wp.launch(ia_copy_2d, dim=ia.shape, inputs=[ia, out], device=device)
        np.testing.assert_allclose(out.numpy(), _sel(values, idx) + ia.shape[0] * 100)


def test_kernel_3d_vectors_and_4d_writes(device):
    rng = np.random.default_rng(2)
    values = rng.random((4, 3, 5, 2)).astype(np.float32)
    data = wp.array(values, dtype=wp.vec2, device=device)
    idx = [[3, 0], None, [4, 2, 0]]
    ia = wp.indexedarray(data, [wp.array(ix, dtype=int, device=device) if ix is not None else None for ix in idx])
    out = wp.zeros(ia.shape, dtype=wp.vec2, device=device)
    wp.launch(ia_copy_3d, dim=ia.shape, inputs=[ia, out], device=device)
    np.testing.assert_array_equal(out.numpy(), _sel(values, idx))

    d4 = wp.zeros((3, 3, 3, 3), dtype=int, device=device)
    t = wp.array([2, 0], dtype=int, device=device)
    ia4 = wp.indexedarray(d4, [t, None, t, None])
    wp.launch(ia_write_4d, dim=ia4.shape, inputs=[ia4], device=device)
    expected = np.zeros((3, 3, 3, 3), dtype=np.int32)
    for i, ii in enumerate([2, 0]):
        for k, kk in enumerate([2, 0]):
            for j in range(3):
                for l in range(3):  # noqa: E741
                    expected[ii, j, kk, l] = i * 1000 + j * 100 + k * 10 + l
    np.testing.assert_array_equal(d4.numpy(), expected)


def test_kernel_atomics(device):
    data = wp.zeros(6, dtype=float, device=device)
    ia = wp.indexedarray(data, [wp.array([5, 3, 1], dtype=int, device=device)])
    vals_np = np.arange(1, 9, dtype=np.float32)
    wp.launch(ia_atomic, dim=8, inputs=[ia, wp.array(vals_np, device=device)], device=device)
    expected = np.zeros(6, dtype=np.float32)
    expected[5] = vals_np[0::2].sum()
    expected[3] = vals_np[1::2].sum()
    expected[1] = vals_np.sum()
    np.testing.assert_allclose(data.numpy(), expected)


def test_gradient_flows_to_underlying_array(device):
    values = np.array([0.5, -1.0, 2.0, 3.0, -0.25], dtype=np.float32)
    data = wp.array(values, device=device, requires_grad=True)
    idx = [4, 1, 3]
    ia = wp.indexedarray(data, [wp.array(idx, dtype=int, device=device)])
    assert ia.requires_grad
    loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(ia_square_sum, dim=3, inputs=[ia, loss], device=device)
    tape.backward(loss)
    expected = np.zeros(5, dtype=np.float32)
    expected[idx] = 2.0 * values[idx]
    np.testing.assert_allclose(data.grad.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(loss.numpy()[0], float(np.sum(values[idx] ** 2)), rtol=1e-6)


def test_generic_kernel_accepts_indexed_and_plain(device):
    data = wp.zeros(5, dtype=int, device=device)
    ia = wp.indexedarray(data, [wp.array([0, 4], dtype=int, device=device)])
    wp.launch(ia_generic_inc, dim=ia.shape, inputs=[ia], device=device)
    wp.launch(ia_generic_inc, dim=data.shape, inputs=[data], device=device)
    np.testing.assert_array_equal(data.numpy(), [2, 1, 1, 1, 2])


def test_annotation_forms_and_errors(device):
    ann = wp.indexedarray[float, Literal[3]]
    assert ann.ndim == 3 and ann.dtype == wp.float32
    assert wp.indexedarray2d(dtype=int).ndim == 2
    data = wp.zeros((2, 2), dtype=float, device=device)
    with pytest.raises(ValueError):
        wp.indexedarray(data, [None, None, None])
    with pytest.raises(TypeError):
        wp.indexedarray([1.0, 2.0], [None])
    ia = wp.indexedarray(data, [wp.array([1], dtype=int, device=device)])
    out = wp.zeros((1, 2), dtype=float, device=device)
    with pytest.raises(Exception, match="indexedarray|IndexedArrayDesc|expects"):
        wp.launch(ia_copy_3d, dim=(1, 2, 1), inputs=[ia, out], device=device)


@wp.struct
class IaHolder:
    iarr: wp.indexedarray(dtype=float)
    k: float


@wp.struct
class IaOuter:
    inner: IaHolder


@wp.kernel
def ia_struct_kernel(s: IaHolder, o: IaOuter, arrs: wp.array(dtype=IaHolder), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[0, i] = s.iarr[i] * s.k
    out[1, i] = o.inner.iarr[i]
    out[2, i] = arrs[0].iarr[i]


def test_indexedarray_struct_fields(device):
    values = np.arange(6, dtype=np.float32)
    data = wp.array(values, device=device)
    idx = [5, 1, 3]
    s = IaHolder()
    s.iarr = wp.indexedarray(data, [wp.array(idx, dtype=int, device=device)])
    s.k = 2.0
    o = IaOuter()
    o.inner = s
    arrs = wp.array([s], dtype=IaHolder, device=device)
    out = wp.zeros((3, 3), dtype=float, device=device)
    wp.launch(ia_struct_kernel, dim=3, inputs=[s, o, arrs, out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.stack([values[idx] * 2.0, values[idx], values[idx]]))
    with pytest.raises(TypeError, match="indexedarray"):
        s.iarr = data


@wp.kernel
def ia_truth(a: wp.indexedarray(dtype=float), out: wp.array(dtype=int)):
    if a:
        out[0] = 1


def test_indexedarray_truth_value(device):
    data = wp.array(np.arange(3, dtype=np.float32), device=device)
    out = wp.zeros(1, dtype=int, device=device)
    wp.launch(ia_truth, dim=1, inputs=[wp.indexedarray(data, [wp.array([1], dtype=int, device=device)]), out],
              device=device)
    assert out.numpy()[0] == 1


def test_clone_and_copy_with_gradients(device):
    values = np.arange(6, dtype=np.float32)
    data = wp.array(values, device=device, requires_grad=True)
    ia = wp.indexedarray(data, [wp.array([5, 1, 3], dtype=int, device=device)])
    tape = wp.Tape()
    with tape:
        c = wp.clone(ia, requires_grad=True)
    assert type(c) is wp.array
    np.testing.assert_array_equal(c.numpy(), values[[5, 1, 3]])
    c.grad = wp.array([1.0, 2.0, 3.0], dtype=float, device=device)
    tape.backward()
    np.testing.assert_array_equal(data.grad.numpy(), [0.0, 2.0, 0.0, 3.0, 0.0, 1.0])

    dest = wp.indexedarray(wp.zeros(6, dtype=float, device=device), [wp.array([0, 2, 4], dtype=int, device=device)])
    wp.copy(dest, c)
    np.testing.assert_array_equal(dest.data.numpy(), [5.0, 0.0, 1.0, 0.0, 3.0, 0.0])
    plain = wp.zeros(3, dtype=float, device=device)
    wp.copy(plain, ia)
    np.testing.assert_array_equal(plain.numpy(), values[[5, 1, 3]])
    with pytest.raises(ValueError):
        wp.copy(wp.zeros(4, dtype=float, device=device), ia)
