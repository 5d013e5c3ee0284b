"""torch_op: Treadle kernels as PyTorch custom ops (eager, autograd, torch.compile, opcheck); tensors passed to launch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp

torch = pytest.importorskip("torch")


@wp.kernel
def scale_sq(a: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i] * s


@wp.kernel
def rosenbrock(p: wp.array(dtype=wp.vec2), a: float, b: float, f: wp.array(dtype=float)):
    i = wp.tid()
    x = p[i][0]
    y = p[i][1]
    f[i] = (a - x) * (a - x) + b * (y - x * x) * (y - x * x)


@wp.kernel
def spring_energy(x: wp.array(dtype=wp.vec3), rest: float, k: wp.vec2, e: wp.array(dtype=float),
                  d: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    dx = x[i]
    n = wp.length(dx)
    e[i] = k[0] * (n - rest) * (n - rest) + k[1]
    d[i] = dx * 2.0


@wp.kernel
def add_inplace(a: wp.array(dtype=float), acc: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    acc[i] = acc[i] + a[i]
    out[i] = a[i] * 3.0


@wp.kernel
def sin_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel
def matvec(m: wp.array2d(dtype=float), v: wp.array(dtype=float), out: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(out, i, m[i, j] * v[j])


def close(a: Any, b: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(torch.as_tensor(a).detach()), np.asarray(torch.as_tensor(b).detach()),
                               rtol=tol, atol=tol)


def x8(requires_grad: bool = True) -> Any:
    return (torch.arange(1, 9, dtype=torch.float32) / 4.0).requires_grad_(requires_grad)


# ------------------------------------------------------------------------------------------------- eager + autograd


def test_forward_backward_matches_torch() -> None:
    op = wp.torch_op(scale_sq)
    x = x8()
    y = op(x, 1.5)
    close(y, x * x * 1.5)
    torch.sin(y).sum().backward()
    xr = x8()
    torch.sin(xr * xr * 1.5).sum().backward()
    close(x.grad, xr.grad)
    assert "torch.ops.treadle" in repr(op) and op.op is not None


def test_vectors_static_vector_and_two_outputs() -> None:
    op = wp.torch_op(spring_energy, num_outputs=2)
    x = torch.tensor([[1.0, 0.5, -0.2], [0.3, 2.0, 1.0], [0.0, 0.0, 3.0]], requires_grad=True)
    e, d = op(x, 0.75, [2.0, 0.1])
    xr = x.detach().clone().requires_grad_(True)
    er = 2.0 * (xr.norm(dim=1) - 0.75) ** 2 + 0.1
    close(e, er)
    close(d, 2.0 * xr)
    (e.sum() + (d * d).sum()).backward()
    (er.sum() + (2.0 * xr * 2.0 * xr).sum()).backward()
    close(x.grad, xr.grad, 1e-4)


def test_non_contiguous_input() -> None:
    op = wp.torch_op(scale_sq)
    base = torch.arange(16, dtype=torch.float32).requires_grad_(True)
    x = base[::2]
    y = op(x, 2.0)
    close(y, x * x * 2.0)
    y.sum().backward()
    expect = torch.zeros(16)
    expect[::2] = 4.0 * torch.arange(0, 16, 2, dtype=torch.float32)
    close(base.grad, expect)


def test_2d_input_atomic_output() -> None:
    op = wp.torch_op(matvec, launch_dims=(3, 4), output_dims=3)
    m = torch.arange(12, dtype=torch.float32).reshape(3, 4).requires_grad_(True)
    v = torch.tensor([1.0, -1.0, 0.5, 2.0], requires_grad=True)
    out = op(m, v)
    close(out, m @ v)
    (out * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    mr, vr = m.detach().clone().requires_grad_(True), v.detach().clone().requires_grad_(True)
    ((mr @ vr) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(m.grad, mr.grad)
    close(v.grad, vr.grad)


def test_in_out_is_functional() -> None:
    op = wp.torch_op(add_inplace, num_outputs=2, in_out_argnames=["acc"])
    x = x8(False)
    acc = torch.ones(8)
    acc_new, out = op(x, acc)
    close(acc_new, 1.0 + x)
    close(acc, torch.ones(8))  # the input tensor is not mutated: the op returns an updated copy
    close(out, 3.0 * x)
    assert op.backward_op is None


def test_function_with_two_kernels() -> None:
    def chain(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
        tmp = wp.zeros(x.shape, dtype=float, requires_grad=True)
        wp.launch(sin_kernel, x.shape, inputs=[x], outputs=[tmp])
        wp.launch(scale_sq, x.shape, inputs=[tmp, s], outputs=[y])

    op = wp.torch_op(chain)
    x = x8()
    y = op(x, 2.0)
    close(y, 2.0 * torch.sin(x) ** 2)
    y.sum().backward()
    close(x.grad, 4.0 * torch.sin(x) * torch.cos(x))


def test_names_and_errors() -> None:
    op = wp.torch_op(scale_sq, name="scale_sq_named_for_test")
    assert op.qualname == "treadle::scale_sq_named_for_test"
    close(torch.ops.treadle.scale_sq_named_for_test(x8(False), 2.0), 2.0 * x8(False) ** 2)
    with pytest.raises(wp.TreadleError, match="num_outputs"):
        wp.torch_op(scale_sq, num_outputs=5)
    with pytest.raises(Exception, match="float32"):
        wp.torch_op(scale_sq)(torch.ones(3, dtype=torch.float64), 1.0)


# ------------------------------------------------------------------------------------------------- compile + opcheck


def test_torch_compile_fullgraph_forward_and_backward() -> None:
    op = wp.torch_op(scale_sq)

    def f(x: Any) -> Any:
        return torch.sin(op(x, 3.0)).sum()

    cf = torch.compile(f, fullgraph=True)
    x = x8()
    loss = cf(x)
    loss.backward()
    xr = x8()
    f_ref = torch.sin(xr * xr * 3.0).sum()
    f_ref.backward()
    close(loss, f_ref)
    close(x.grad, xr.grad)
    x2 = (x8() * 2.0).detach().requires_grad_(True)  # a second call reuses the compiled graph
    cf(x2).backward()
    assert x2.grad is not None


def test_torch_compile_two_outputs() -> None:
    op = wp.torch_op(spring_energy, num_outputs=2)

    @torch.compile(fullgraph=True)
    def f(x: Any) -> Any:
        e, d = op(x, 1.0, [1.0, 0.0])
        return e.sum() + d.sum()

    x = torch.randn(5, 3, requires_grad=True)
    f(x).backward()
    xr = x.detach().clone().requires_grad_(True)
    ((xr.norm(dim=1) - 1.0) ** 2).sum().add((2.0 * xr).sum()).backward()
    close(x.grad, xr.grad, 1e-4)


def test_opcheck() -> None:
    op = wp.torch_op(scale_sq)
    torch.library.opcheck(op.op, (torch.randn(7, requires_grad=True), 2.0))
    torch.library.opcheck(op.op, (torch.randn(7), 0.5))
    op2 = wp.torch_op(spring_energy, num_outputs=2)
    torch.library.opcheck(op2.op, (torch.randn(4, 3, requires_grad=True), 1.0, [1.0, 0.5]))
    x = torch.randn(4, 3)
    e, d = op2(x, 1.0, [1.0, 0.5])
    torch.library.opcheck(op2.backward_op, (x, 1.0, [1.0, 0.5], e, d, torch.randn(4), torch.randn(4, 3)))
    op3 = wp.torch_op(add_inplace, num_outputs=2, in_out_argnames=["acc"])
    torch.library.opcheck(op3.op, (torch.randn(5), torch.randn(5)))


# ------------------------------------------------------------------------------------------------- optimisation


def test_adam_on_rosenbrock() -> None:
    """torch.optim.Adam drives 2-d points through the gradient of a Treadle kernel, step for step like PyTorch."""
    op = wp.torch_op(rosenbrock)
    torch.manual_seed(0)
    start = torch.rand(16, 2) * 2.0 - 1.0
    p = start.clone().requires_grad_(True)
    q = start.clone().requires_grad_(True)  # the same optimisation written in PyTorch
    opt, opt_ref = torch.optim.Adam([p], lr=0.02), torch.optim.Adam([q], lr=0.02)
    losses = []
    for _ in range(400):
        opt.zero_grad()
        loss = op(p, 1.0, 100.0).sum()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        opt_ref.zero_grad()
        x, y = q[:, 0], q[:, 1]
        ((1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2).sum().backward()
        opt_ref.step()
    assert losses[-1] < 0.02 * losses[0]
    close(p.detach(), q.detach(), 1e-3)


def test_from_torch_gradients_with_tape_and_adam() -> None:
    """The from_torch route: the kernel's adjoint writes straight into p.grad, which Adam reads."""
    p = torch.tensor([[-1.0, 1.0], [0.5, -0.5]], requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.05)
    f = torch.zeros(2, requires_grad=True)
    for _ in range(600):
        opt.zero_grad()
        f.grad = None
        wp_p = wp.from_torch(p, dtype=wp.vec2)
        wp_f = wp.from_torch(f)
        tape = wp.Tape()
        with tape:
            wp.launch(rosenbrock, 2, inputs=[wp_p, 1.0, 10.0], outputs=[wp_f])
        tape.backward(grads={wp_f: wp.ones(2, dtype=float)})
        opt.step()
    close(p.detach(), torch.ones(2, 2), 0.1)


# ------------------------------------------------------------------------------------------------- direct passing


def test_launch_with_tensors_descriptors_and_dlpack() -> None:
    x = torch.arange(6, dtype=torch.float32)
    y = torch.zeros(6)
    wp.launch(scale_sq, 6, inputs=[x, 2.0], outputs=[y])
    close(y, 2.0 * x * x)
    wp.launch(scale_sq, 6, inputs=[wp.from_torch(x, return_ctype=True), 1.0], outputs=[wp.from_torch(y)])
    close(y, x * x)
    pts = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    f = torch.full((2,), -1.0)
    wp.launch(rosenbrock, 2, inputs=[pts, 1.0, 100.0], outputs=[f])  # (N, 2) tensor as an array of vec2
    close(f, [1.0, 0.0])
    cmd = wp.launch(scale_sq, 6, inputs=[x, 3.0], outputs=[y], record_cmd=True)
    cmd.launch()
    close(y, 3.0 * x * x)

    class DLPackOnly:  # any object with __dlpack__ (CuPy, JAX, ...) is accepted
        def __init__(self, t: Any) -> None:
            self.t = t

        def __dlpack__(self, **kwargs: Any) -> Any:
            return self.t.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> Any:
            return self.t.__dlpack_device__()

    out = torch.zeros(6)
    wp.launch(scale_sq, 6, inputs=[DLPackOnly(x), 1.0], outputs=[DLPackOnly(out)])
    close(out, x * x)


def test_launch_with_tensors_errors() -> None:
    y = torch.zeros(4)
    with pytest.raises(wp.LaunchError, match="float64"):
        wp.launch(scale_sq, 4, inputs=[torch.zeros(4, dtype=torch.float64), 1.0], outputs=[y])
    with pytest.raises(wp.LaunchError, match="1-d"):
        wp.launch(scale_sq, 4, inputs=[torch.zeros(4, 2), 1.0], outputs=[y])
    with pytest.raises(wp.LaunchError, match="expects an array, got str"):
        wp.launch(scale_sq, 4, inputs=["nope", 1.0], outputs=[y])
