"""PyTorch interop: zero-copy both ways, dtype/device maps, vector dtypes, gradients, lifetimes, kernels on tensors."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import treadle as wp
from treadle._src.interop import dlpack as dl

torch = pytest.importorskip("torch")


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


@wp.kernel
def shift_points(p: wp.array(dtype=wp.vec3), d: wp.vec3):
    i = wp.tid()
    p[i] = p[i] + d


@wp.kernel
def square_grad(x: wp.array(dtype=float), g: wp.array(dtype=float)):
    # Hand-written gradient of sum(x^2), written into the gradient buffer shared with PyTorch.
    i = wp.tid()
    g[i] = 2.0 * x[i]


def collect() -> None:
    gc.collect()
    gc.collect()


PAIRS = [
    (wp.bool, torch.bool),
    (wp.int8, torch.int8),
    (wp.uint8, torch.uint8),
    (wp.int16, torch.int16),
    (wp.int32, torch.int32),
    (wp.int64, torch.int64),
    (wp.float16, torch.float16),
    (wp.float32, torch.float32),
    (wp.float64, torch.float64),
]


# ------------------------------------------------------------------------------------------------------------------
# maps
# ------------------------------------------------------------------------------------------------------------------


def test_dtype_maps() -> None:
    for w, t in PAIRS:
        assert wp.dtype_to_torch(w) == t
        assert wp.dtype_from_torch(t) is w
    # unsigned types wider than 8 bits map to the signed type of the same width (as the reference)
    assert wp.dtype_to_torch(wp.uint16) == torch.int16
    assert wp.dtype_to_torch(wp.uint32) == torch.int32
    assert wp.dtype_to_torch(wp.uint64) == torch.int64
    assert wp.dtype_to_torch(float) == torch.float32
    if hasattr(torch, "uint32"):
        assert wp.dtype_from_torch(torch.uint32) is wp.uint32


def test_dtype_map_errors() -> None:
    for bad in (torch.complex64, torch.float8_e4m3fn):
        with pytest.raises(TypeError, match="Cannot convert PyTorch type"):
            wp.dtype_from_torch(bad)
    with pytest.raises(TypeError, match="vec3f"):
        wp.dtype_to_torch(wp.vec3)
    with pytest.raises(RuntimeError, match="torch.complex64 to a Treadle type"):
        wp.from_torch(torch.zeros(3, dtype=torch.complex64))


def test_device_maps() -> None:
    assert wp.device_from_torch("cpu") == "cpu"
    assert wp.device_from_torch(torch.device("cpu")) == "cpu"
    assert wp.device_to_torch("cpu") == "cpu"
    assert wp.device_to_torch(wp.get_device("cpu")) == "cpu"
    if not wp.is_cuda_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            wp.device_from_torch("cuda:0")
        with pytest.raises(RuntimeError):
            wp.device_to_torch("cuda:0")
    with pytest.raises(RuntimeError, match="Unsupported Torch device meta"):
        wp.device_from_torch("meta")


def test_streams_need_cuda() -> None:
    with pytest.raises(RuntimeError, match="not a CUDA device"):
        wp.stream_to_torch("cpu")
    with pytest.raises(RuntimeError, match="not a CUDA device"):
        wp.stream_from_torch("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            wp.stream_from_torch()


# ------------------------------------------------------------------------------------------------------------------
# from_torch
# ------------------------------------------------------------------------------------------------------------------


def test_from_torch_is_zero_copy() -> None:
    t = torch.arange(6, dtype=torch.float32)
    a = wp.from_torch(t)
    assert a.ptr == t.data_ptr() and a.shape == (6,) and a.dtype is wp.float32 and a.device == "cpu"
    a.fill_(4.0)
    assert bool((t == 4.0).all())
    t[2] = -1.0
    assert a.numpy()[2] == -1.0


def test_from_torch_every_dtype() -> None:
    for w, dt in PAIRS:
        t = (torch.arange(5) % 2).to(dt)
        a = wp.from_torch(t)
        assert a.dtype is w and a.ptr == t.data_ptr(), dt
        np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_from_torch_keeps_strides() -> None:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for t in (base[:, ::2], base.t(), base[1:, 2:]):
        a = wp.from_torch(t)
        assert a.strides == tuple(s * 4 for s in t.stride())
        assert a.ptr == t.data_ptr()
        np.testing.assert_array_equal(a.numpy(), t.numpy())
    z = wp.from_torch(torch.tensor(2.5))
    assert z.shape == (1,) and z.numpy()[0] == 2.5


def test_from_torch_vector_and_matrix_dtypes() -> None:
    t = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    a = wp.from_torch(t, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype is wp.vec3 and a.strides == (12,)
    assert a.list()[2] == wp.vec3(6.0, 7.0, 8.0)
    m = wp.from_torch(torch.zeros(5, 2, 2, dtype=torch.float64), dtype=wp.mat22d)
    assert m.shape == (5,)
    with pytest.raises(RuntimeError, match=r"trailing dimensions must be \(3,\)"):
        wp.from_torch(torch.zeros(2, 6), dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="must be contiguous"):
        wp.from_torch(torch.zeros(3, 4).t(), dtype=wp.vec3)
    with pytest.raises(TypeError, match="scalar types differ"):
        wp.from_torch(torch.zeros(4, 3, dtype=torch.float64), dtype=wp.vec3)
    with pytest.raises(TypeError, match="scalar types differ"):
        wp.from_torch(torch.zeros(4, dtype=torch.int32), dtype=wp.float32)


def test_kernel_changes_torch_tensor() -> None:
    t = torch.arange(8, dtype=torch.float32)
    wp.launch(scale, dim=8, inputs=[wp.from_torch(t), 2.0], device="cpu")
    assert torch.equal(t, torch.arange(8, dtype=torch.float32) * 2.0)
    pts = torch.zeros(5, 3)
    wp.launch(shift_points, dim=5, inputs=[wp.from_torch(pts, dtype=wp.vec3), wp.vec3(1.0, 2.0, 3.0)], device="cpu")
    assert torch.equal(pts, torch.tensor([[1.0, 2.0, 3.0]]).expand(5, 3))


def test_from_torch_return_ctype() -> None:
    t = torch.zeros(3, 4, requires_grad=True)
    desc = wp.from_torch(t, return_ctype=True)
    assert desc.data == t.data_ptr() and desc.grad == t.grad.data_ptr()
    assert desc.ndim == 2 and tuple(desc.shape[:2]) == (3, 4) and tuple(desc.strides[:2]) == (16, 4)


# ------------------------------------------------------------------------------------------------------------------
# gradients
# ------------------------------------------------------------------------------------------------------------------


def test_from_torch_maps_existing_grad() -> None:
    t = torch.zeros(4, requires_grad=True)
    t.grad = torch.ones(4)
    a = wp.from_torch(t)
    assert a.requires_grad and a.grad.ptr == t.grad.data_ptr()
    a.grad.fill_(5.0)
    assert bool((t.grad == 5.0).all())


def test_from_torch_allocates_missing_grad() -> None:
    t = torch.zeros(3, 2, requires_grad=True)
    assert t.grad is None
    a = wp.from_torch(t)
    assert t.grad is not None and a.grad.ptr == t.grad.data_ptr()
    assert bool((t.grad == 0).all())
    plain = torch.zeros(4)
    b = wp.from_torch(plain, requires_grad=True)
    assert b.requires_grad and plain.grad is not None and b.grad.ptr == plain.grad.data_ptr()
    # a strided leaf gets a gradient with the same strides
    s = torch.zeros(4, 6)[:, ::2].requires_grad_()
    c = wp.from_torch(s)
    assert c.grad.strides == c.strides and s.grad.stride() == s.stride()


def test_from_torch_requires_grad_false_and_explicit_grad() -> None:
    t = torch.zeros(4, requires_grad=True)
    a = wp.from_torch(t, requires_grad=False)
    assert not a.requires_grad and a.grad is None and t.grad is None
    g = torch.full((4,), 3.0)
    b = wp.from_torch(torch.zeros(4), grad=g)
    assert b.grad.ptr == g.data_ptr()
    gw = wp.zeros(4, device="cpu")
    c = wp.from_torch(torch.zeros(4), grad=gw)
    assert c.grad is gw


def test_non_leaf_tensor_grad() -> None:
    x = torch.ones(3, requires_grad=True)
    y = x * 2.0
    a = wp.from_torch(y)
    assert a.requires_grad and a.grad.ptr == y.grad.data_ptr()


def test_vector_grad_mapping() -> None:
    t = torch.zeros(6, 3, requires_grad=True)
    a = wp.from_torch(t, dtype=wp.vec3)
    assert a.grad.dtype is wp.vec3 and a.grad.shape == (6,) and a.grad.ptr == t.grad.data_ptr()


def test_treadle_gradient_drives_torch_optimizer() -> None:
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = torch.optim.SGD([x], lr=0.25)
    xa = wp.from_torch(x)
    for _ in range(3):
        opt.zero_grad(set_to_none=False)
        wp.launch(square_grad, dim=3, inputs=[xa, xa.grad], device="cpu")
        opt.step()
    # x <- x - 0.25 * 2x = x / 2 each step
    np.testing.assert_allclose(x.detach().numpy(), np.array([1.0, -2.0, 3.0]) / 8.0)


# ------------------------------------------------------------------------------------------------------------------
# to_torch
# ------------------------------------------------------------------------------------------------------------------


def test_to_torch_is_zero_copy() -> None:
    a = wp.array(np.arange(5, dtype=np.float32), device="cpu")
    t = wp.to_torch(a)
    assert t.data_ptr() == a.ptr and t.dtype == torch.float32 and not t.requires_grad
    t[0] = 9.0
    assert a.numpy()[0] == 9.0
    a.fill_(1.0)
    assert bool((t == 1.0).all())


def test_to_torch_vector_matrix_and_strided() -> None:
    v = wp.zeros(4, dtype=wp.vec3, device="cpu")
    assert wp.to_torch(v).shape == (4, 3)
    m = wp.zeros(2, dtype=wp.mat33d, device="cpu")
    tm = wp.to_torch(m)
    assert tm.shape == (2, 3, 3) and tm.dtype == torch.float64
    base = wp.array(np.arange(24, dtype=np.float32).reshape(4, 6), device="cpu")
    view = base[:, ::2]
    tv = wp.to_torch(view)
    assert tv.stride() == (6, 2) and tv.data_ptr() == view.ptr
    np.testing.assert_array_equal(tv.numpy(), view.numpy())


def test_to_torch_every_dtype() -> None:
    for w, dt in PAIRS:
        a = wp.array((np.arange(4) % 2).astype(wp.dtype_to_numpy(w)), dtype=w, device="cpu")
        t = wp.to_torch(a)
        assert t.dtype == dt and t.data_ptr() == a.ptr, w
    u = wp.to_torch(wp.array(np.arange(3, dtype=np.uint32), device="cpu"))
    assert u.dtype in (torch.int32, getattr(torch, "uint32", torch.int32))


def test_to_torch_maps_grad() -> None:
    a = wp.zeros(5, dtype=wp.vec3, requires_grad=True, device="cpu")
    t = wp.to_torch(a)
    assert t.requires_grad and t.grad.data_ptr() == a.grad.ptr and t.grad.shape == (5, 3)
    t2 = wp.to_torch(a, requires_grad=False)
    assert not t2.requires_grad and t2.grad is None
    b = wp.zeros(3, device="cpu")
    t3 = wp.to_torch(b, requires_grad=True)
    assert t3.requires_grad and t3.grad is None
    with pytest.raises(RuntimeError, match="floating point"):
        wp.to_torch(wp.zeros(3, dtype=wp.int32, device="cpu"), requires_grad=True)


def test_to_torch_refuses_structs(struct_dtype: object) -> None:
    with pytest.raises(RuntimeError, match="struct"):
        wp.to_torch(wp.zeros(2, dtype=struct_dtype, device="cpu"))


def test_round_trips() -> None:
    t = torch.arange(6, dtype=torch.float64)
    assert wp.to_torch(wp.from_torch(t)).data_ptr() == t.data_ptr()
    a = wp.zeros(3, dtype=wp.vec3, device="cpu")
    assert wp.from_torch(wp.to_torch(a), dtype=wp.vec3).ptr == a.ptr
    # DLPack directly, both directions, and torch's legacy capsules
    assert torch.from_dlpack(a).data_ptr() == a.ptr
    assert wp.from_dlpack(t).ptr == t.data_ptr()
    cap = torch.utils.dlpack.to_dlpack(t)
    assert wp.from_dlpack(cap).ptr == t.data_ptr()


# ------------------------------------------------------------------------------------------------------------------
# lifetimes
# ------------------------------------------------------------------------------------------------------------------


def test_from_torch_keeps_tensor_alive() -> None:
    t = torch.arange(1000, dtype=torch.float32)
    alive = weakref.ref(t)
    a = wp.from_torch(t)
    del t
    collect()
    assert alive() is not None
    _churn = [torch.ones(1000) for _ in range(20)]
    np.testing.assert_array_equal(a.numpy(), np.arange(1000, dtype=np.float32))
    del a
    collect()
    assert alive() is None


def test_to_torch_keeps_array_alive_and_releases_once() -> None:
    start = dl.export_stats()
    a = wp.array(np.arange(1000, dtype=np.float32), device="cpu")
    alive = weakref.ref(a)
    t = wp.to_torch(a)
    del a
    collect()
    assert alive() is not None
    _churn = [wp.ones(1000, device="cpu") for _ in range(20)]
    np.testing.assert_array_equal(t.numpy(), np.arange(1000, dtype=np.float32))
    del t
    collect()
    assert alive() is None
    now = dl.export_stats()
    assert now["released"] - start["released"] == now["exported"] - start["exported"] == 1
    assert now["unknown_releases"] == start["unknown_releases"]


def test_from_dlpack_torch_source_lifetime() -> None:
    t = torch.arange(100, dtype=torch.int32)
    a = wp.from_dlpack(t)
    del t
    collect()
    _churn = [torch.ones(100, dtype=torch.int32) for _ in range(20)]
    np.testing.assert_array_equal(a.numpy(), np.arange(100, dtype=np.int32))


@wp.kernel
def affine(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 0.5 - 3.0 * x[i]


class _AffineFn(torch.autograd.Function):
    """A torch autograd op whose backward runs the kernel's adjoint with explicit adjoint arrays."""

    @staticmethod
    def forward(ctx, x):  # noqa: ANN001, ANN205 - torch's signature
        y = torch.empty_like(x)
        ctx.x, ctx.y = x.detach(), y
        wp.launch(affine, len(x), inputs=[wp.from_torch(ctx.x)], outputs=[wp.from_torch(y)])
        return y

    @staticmethod
    def backward(ctx, adj_y):  # noqa: ANN001, ANN205
        adj_x = torch.zeros_like(ctx.x)
        wp.launch(affine, len(ctx.x), inputs=[wp.from_torch(ctx.x)], outputs=[wp.from_torch(ctx.y)],
                  adj_inputs=[wp.from_torch(adj_x)], adj_outputs=[wp.from_torch(adj_y)], adjoint=True)
        return adj_x


def test_autograd_function_with_explicit_adjoint_arrays() -> None:
    x = torch.linspace(-1.0, 1.0, 16, requires_grad=True)
    y = _AffineFn.apply(x)
    torch.testing.assert_close(y, 0.5 - 3.0 * x.detach())
    w = torch.linspace(0.0, 2.0, 16)
    (g,) = torch.autograd.grad(y, (x,), grad_outputs=w.clone())
    torch.testing.assert_close(g, -3.0 * w)


def test_autograd_function_with_expanded_and_strided_adjoints() -> None:
    x = torch.ones(16, requires_grad=True)
    _AffineFn.apply(x).sum().backward()  # the incoming gradient is an expanded tensor with stride 0
    torch.testing.assert_close(x.grad, torch.full((16,), -3.0))
    x2 = torch.ones(16, requires_grad=True)
    grad_out = torch.arange(32, dtype=torch.float32)[::2]  # non-contiguous
    (g,) = torch.autograd.grad(_AffineFn.apply(x2), (x2,), grad_outputs=grad_out)
    torch.testing.assert_close(g, -3.0 * grad_out)
    torch.testing.assert_close(grad_out, torch.arange(32, dtype=torch.float32)[::2])  # left untouched


def test_vector_and_matrix_values_from_tensors() -> None:
    assert wp.vec3(torch.tensor([1.0, 2.0, 3.0])) == wp.vec3(1.0, 2.0, 3.0)
    assert wp.mat22(torch.eye(2)) == wp.mat22(1.0, 0.0, 0.0, 1.0)
    assert wp.vec2(torch.tensor(4.0), torch.tensor(5.0)) == wp.vec2(4.0, 5.0)
