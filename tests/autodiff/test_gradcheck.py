"""treadle.autograd: jacobian / jacobian_fd against analytic Jacobians, gradcheck, gradcheck_tape, jacobian_plot."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import treadle as wp
import treadle.autograd
from treadle.autograd import gradcheck, gradcheck_tape, jacobian, jacobian_fd, jacobian_plot

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None


@wp.kernel
def scale_mix(a: wp.array(dtype=float), b: wp.array(dtype=wp.vec3), s: float, out: wp.array(dtype=wp.vec3),
              o2: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = b[i] * a[i] * s
    o2[i] = a[i] * a[i] + wp.dot(b[i], b[i])


@wp.kernel
def neighbour_product(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    n = a.shape[0]
    out[i] = a[i] * a[(i + 1) % n] + wp.sin(a[i])


@wp.kernel
def sum_squares(a: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(loss, 0, a[i, j] * a[i, j])


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def product(x: wp.array(dtype=float), c: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * c[i]


@wp.kernel
def quantize(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # The int round trip has zero derivative for autodiff, but finite differences with eps > 1e-3 see slope 1.
    i = wp.tid()
    y[i] = float(int(x[i] * 1000.0)) / 1000.0


@wp.kernel
def naive_length(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v = a[i]
    out[i] = wp.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


@wp.kernel
def widen(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.float64(x[i]) * wp.float64(x[i])


@wp.kernel(enable_backward=False)
def no_backward(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]


HAVE_FUNC_GRAD = hasattr(wp, "func_grad")

if HAVE_FUNC_GRAD:

    @wp.func
    def wrong_square(x: float):
        return x * x

    @wp.func_grad(wrong_square)
    def adj_wrong_square(x: float, adj: float):
        wp.adjoint[x] -= 2.0 * x * adj  # deliberately the wrong sign

    @wp.kernel
    def wrong_grad(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wrong_square(x[i])


def _arr(values, dtype=float, grad=True):
    return wp.array(np.asarray(values), dtype=dtype, requires_grad=grad)


def _mix_args():
    a = _arr([1.0, -2.0, 0.5])
    b = _arr([[0.0, 1.0, 2.0], [3.0, -4.0, 5.0], [0.5, 0.25, -1.0]], dtype=wp.vec3)
    out = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
    o2 = wp.zeros(3, dtype=float, requires_grad=True)
    return a, b, out, o2


def _mix_analytic(a, b, s):
    """Analytic Jacobians of scale_mix, flattened over components: {(input, output): (rows, input comps)}."""
    a, b = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    n = len(a)
    j_a_out = np.zeros((3 * n, n))
    j_b_out = np.zeros((3 * n, 3 * n))
    j_a_o2 = np.diag(2.0 * a)
    j_b_o2 = np.zeros((n, 3 * n))
    for i in range(n):
        j_a_out[3 * i:3 * i + 3, i] = b[i] * s
        j_b_out[3 * i:3 * i + 3, 3 * i:3 * i + 3] = np.eye(3) * a[i] * s
        j_b_o2[i, 3 * i:3 * i + 3] = 2.0 * b[i]
    return {(0, 0): j_a_out, (0, 1): j_a_o2, (1, 0): j_b_out, (1, 1): j_b_o2}


def _flat(j):
    m = j.numpy()
    return m.reshape(m.shape[0], -1).astype(np.float64)


# Jacobians -----------------------------------------------------------------------------------------------------------


def test_public_module():
    assert wp.autograd is treadle.autograd
    assert wp.autograd.gradcheck is gradcheck
    for name in ("gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd", "jacobian_plot"):
        assert callable(getattr(wp.autograd, name))


def test_jacobians_match_analytic_scalar_and_vec3():
    a, b, out, o2 = _mix_args()
    s = 2.0
    expected = _mix_analytic(a, b, s)
    jad = jacobian(scale_mix, dim=3, inputs=[a, b, s], outputs=[out, o2])
    jfd = jacobian_fd(scale_mix, dim=3, inputs=[a, b, s], outputs=[out, o2], eps=1e-3)
    assert sorted(jad) == sorted(jfd) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # shape (output components, input elements) with the input's dtype
    assert jad[(1, 0)].shape == (9, 3) and jad[(1, 0)].dtype == wp.vec3
    assert jad[(0, 0)].shape == (9, 3) and jad[(0, 0)].dtype == wp.float32
    assert jad[(1, 1)].numpy().shape == (3, 3, 3)
    for key, ref in expected.items():
        np.testing.assert_allclose(_flat(jad[key]), ref, atol=1e-5, err_msg=f"autodiff {key}")
        np.testing.assert_allclose(_flat(jfd[key]), ref, atol=5e-3, rtol=1e-3, err_msg=f"finite difference {key}")


def test_jacobian_float64_off_diagonal():
    x = np.array([0.3, -1.2, 2.0, 0.7])
    a = _arr(x, dtype=wp.float64)
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    n = len(x)
    ref = np.zeros((n, n))
    for i in range(n):
        ref[i, i] += x[(i + 1) % n] + np.cos(x[i])
        ref[i, (i + 1) % n] += x[i]
    jad = jacobian(neighbour_product, 4, [a], [out])[(0, 0)]
    jfd = jacobian_fd(neighbour_product, 4, [a], [out], eps=1e-6)[(0, 0)]
    assert jad.dtype == wp.float64
    np.testing.assert_allclose(jad.numpy(), ref, atol=1e-12)
    np.testing.assert_allclose(jfd.numpy(), ref, atol=1e-8)
    assert gradcheck(neighbour_product, 4, [a], [out], eps=1e-6, atol=1e-7, rtol=1e-7, show_summary=False)


def test_masks_by_name_and_index():
    a, b, out, o2 = _mix_args()
    args = dict(dim=3, inputs=[a, b, 2.0], outputs=[out, o2])
    assert sorted(jacobian(scale_mix, input_output_mask=[("a", "out"), ("b", "o2")], **args)) == [(0, 0), (1, 1)]
    assert sorted(jacobian_fd(scale_mix, input_output_mask=[(1, 0)], **args)) == [(1, 0)]
    assert sorted(jacobian(scale_mix, input_output_mask=[("b", 1), (0, "out")], **args)) == [(0, 0), (1, 1)]
    # out-of-range indices and non-differentiable arguments (the scalar s) are skipped
    assert jacobian(scale_mix, input_output_mask=[(0, 5), (2, 0)], **args) == {}
    with pytest.raises(ValueError, match="'c' is not an input"):
        jacobian(scale_mix, input_output_mask=[("c", "out")], **args)
    with pytest.raises(ValueError, match="'nope' is not an output"):
        jacobian_fd(scale_mix, input_output_mask=[("a", "nope")], **args)


def test_requires_grad_selects_arrays():
    a, b, out, o2 = _mix_args()
    b.requires_grad = False
    o2.requires_grad = False
    assert sorted(jacobian(scale_mix, 3, [a, b, 2.0], [out, o2])) == [(0, 0)]
    assert sorted(jacobian_fd(scale_mix, 3, [a, b, 2.0], [out, o2])) == [(0, 0)]


def test_max_per_var_limits_leave_nan():
    a = _arr(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.25)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    jad = jacobian(sum_squares, a.shape, [a], [loss], max_outputs_per_var=1)[(0, 0)]
    np.testing.assert_allclose(jad.numpy(), (2.0 * a.numpy()).reshape(1, 6), atol=1e-6)
    a, b, out, o2 = _mix_args()
    jad = jacobian(scale_mix, 3, [a, b, 2.0], [out, o2], max_outputs_per_var=4)
    jfd = jacobian_fd(scale_mix, 3, [a, b, 2.0], [out, o2], max_inputs_per_var=4)
    assert np.all(np.isnan(_flat(jad[(1, 0)])[4:])) and not np.any(np.isnan(_flat(jad[(1, 0)])[:4]))
    assert np.all(np.isnan(_flat(jfd[(1, 0)])[:, 4:])) and not np.any(np.isnan(_flat(jfd[(1, 0)])[:, :4]))
    assert gradcheck(scale_mix, 3, [a, b, 2.0], [out, o2], max_inputs_per_var=4, max_outputs_per_var=4,
                     eps=1e-3, show_summary=False)


def test_arguments_and_gradients_restored():
    a = _arr(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    loss.fill_(7.0)
    a.grad.fill_(3.0)
    a0 = a.numpy().copy()
    # the kernel accumulates into loss: each evaluation must start from the original loss value
    jfd = jacobian_fd(sum_squares, a.shape, [a], [loss], eps=1e-3)[(0, 0)]
    np.testing.assert_allclose(jfd.numpy(), (2.0 * a0).reshape(1, 6), atol=5e-3)
    assert gradcheck(sum_squares, a.shape, [a], [loss], eps=1e-3, show_summary=False)
    np.testing.assert_array_equal(a.numpy(), a0)
    np.testing.assert_array_equal(loss.numpy(), [7.0])
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(loss.grad.numpy(), [0.0])


def test_mixed_precision():
    x = _arr([1.5, -2.0], dtype=wp.float32)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    j = jacobian_fd(widen, 2, [x], [y], eps=1e-3)[(0, 0)]
    assert j.dtype == wp.float32
    np.testing.assert_allclose(j.numpy(), np.diag([3.0, -4.0]), atol=1e-3)
    assert gradcheck(widen, 2, [x], [y], show_summary=False)


# gradcheck -----------------------------------------------------------------------------------------------------------


def test_gradcheck_passes_and_prints_summary(capsys):
    a, b, out, o2 = _mix_args()
    assert gradcheck(scale_mix, 3, [a, b, 2.0], [out, o2], eps=1e-3)
    text = capsys.readouterr().out
    assert "Max Abs Error" in text and "AD at MAE" in text and "FD at MAE" in text
    for row in ("a     | out", "a     | o2", "b     | out", "b     | o2"):
        assert row in text
    assert "PASS" in text and "FAIL" not in text
    assert "Gradient check for kernel scale_mix passed" in text
    assert gradcheck(scale_mix, 3, [a, b, 2.0], [out, o2], eps=1e-3, show_summary=False)
    assert capsys.readouterr().out == ""


def test_gradcheck_detects_gradient_invisible_to_autodiff(capsys):
    x = _arr([0.25, 1.5, -0.75])
    y = wp.zeros(3, dtype=float, requires_grad=True)
    assert not gradcheck(quantize, 3, [x], [y], eps=1e-2, raise_exception=False)
    assert "FAIL" in capsys.readouterr().out
    with pytest.raises(ValueError, match="input 'x' -> output 'y'"):
        gradcheck(quantize, 3, [x], [y], eps=1e-2, show_summary=False)


@pytest.mark.skipif(not HAVE_FUNC_GRAD, reason="wp.func_grad is not available")
def test_gradcheck_detects_wrong_custom_adjoint():
    x = _arr([1.0, 2.0, 3.0])
    y = wp.zeros(3, dtype=float, requires_grad=True)
    jad = jacobian(wrong_grad, 3, [x], [y])[(0, 0)]
    np.testing.assert_allclose(jad.numpy(), np.diag([-2.0, -4.0, -6.0]))
    assert not gradcheck(wrong_grad, 3, [x], [y], raise_exception=False, show_summary=False)
    with pytest.raises(ValueError, match="wrong_grad"):
        gradcheck(wrong_grad, 3, [x], [y], show_summary=False)


def test_gradcheck_fails_on_nan_adjoint():
    a = _arr([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=wp.vec3)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    assert not gradcheck(naive_length, 2, [a], [out], raise_exception=False, show_summary=False)
    with pytest.raises(ValueError, match="autodiff nan"):
        gradcheck(naive_length, 2, [a], [out], show_summary=False)
    a = _arr([[1.0, 2.0, 3.0], [0.0, 3.0, -4.0]], dtype=wp.vec3)
    assert gradcheck(naive_length, 2, [a], [out], show_summary=False)


def test_backward_disabled_kernel():
    x = _arr([1.0, 2.0])
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with pytest.raises(ValueError, match="backward pass enabled"):
        jacobian(no_backward, 2, [x], [y])
    np.testing.assert_allclose(jacobian_fd(no_backward, 2, [x], [y], eps=1e-3)[(0, 0)].numpy(),
                               np.eye(2) * 3.0, atol=1e-3)

    def pipeline(x):
        y = wp.zeros_like(x, requires_grad=True)
        wp.launch(no_backward, 2, inputs=[x], outputs=[y])
        return y

    with pytest.raises(ValueError, match="backward pass enabled"):
        jacobian(pipeline, inputs=[x])


def test_kernel_needs_dim_and_inputs():
    x = _arr([1.0])
    with pytest.raises(ValueError, match="dim"):
        jacobian(square, inputs=[x], outputs=[wp.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="inputs"):
        jacobian_fd(square, 1)


# Python functions ----------------------------------------------------------------------------------------------------


def pipeline(x, c):
    """y0 = x^2, y1 = x^2 * c (two launches chained through an intermediate array)."""
    y0 = wp.zeros_like(x, requires_grad=True)
    wp.launch(square, len(x), inputs=[x], outputs=[y0])
    y1 = wp.zeros_like(x, requires_grad=True)
    wp.launch(product, len(x), inputs=[y0, c], outputs=[y1])
    return y0, y1


def test_function_jacobians_match_analytic():
    xv, cv = np.array([1.0, -2.0, 0.5]), np.array([3.0, 0.5, -1.0])
    x, c = _arr(xv), _arr(cv)
    expected = {(0, 0): np.diag(2 * xv), (0, 1): np.diag(2 * xv * cv), (1, 0): np.zeros((3, 3)),
                (1, 1): np.diag(xv * xv)}
    jad = jacobian(pipeline, inputs=[x, c])
    jfd = jacobian_fd(pipeline, inputs=[x, c], eps=1e-3)
    assert sorted(jad) == sorted(jfd) == sorted(expected)
    for key, ref in expected.items():
        np.testing.assert_allclose(jad[key].numpy(), ref, atol=1e-5, err_msg=f"autodiff {key}")
        np.testing.assert_allclose(jfd[key].numpy(), ref, atol=5e-3, err_msg=f"finite difference {key}")
    # masks use the function's parameter names and output_<j> for its results
    assert sorted(jacobian(pipeline, inputs=[x, c], input_output_mask=[("c", "output_1")])) == [(1, 1)]
    np.testing.assert_array_equal(x.numpy(), xv.astype(np.float32))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_function_gradcheck(capsys):
    x, c = _arr([1.0, -2.0, 0.5]), _arr([3.0, 0.5, -1.0])
    assert gradcheck(pipeline, inputs=[x, c], eps=1e-3)
    text = capsys.readouterr().out
    assert "c     | output_1" in text and "Gradient check for function pipeline passed" in text

    def broken(x):
        y = wp.zeros_like(x, requires_grad=True)
        wp.launch(quantize, len(x), inputs=[x], outputs=[y])
        return [y]

    assert not gradcheck(broken, inputs=[x], eps=1e-2, raise_exception=False, show_summary=False)
    with pytest.raises(ValueError, match="must return a Warp array"):
        jacobian(lambda x: 1.0, inputs=[x])


def test_function_restore_inputs():
    def mutating(x):
        x.numpy()[...] += 1.0  # changes its input in place, outside any kernel
        y = wp.zeros_like(x, requires_grad=True)
        wp.launch(square, len(x), inputs=[x], outputs=[y])
        return y

    x = _arr([1.0, 2.0, 3.0])
    x0 = x.numpy().copy()
    assert gradcheck(mutating, inputs=[x], eps=1e-3, show_summary=False)
    np.testing.assert_array_equal(x.numpy(), x0)
    np.testing.assert_allclose(jacobian(mutating, inputs=[x])[(0, 0)].numpy(), np.diag(2 * (x0 + 1)))
    # without restoration every evaluation starts from drifted values
    assert not gradcheck(mutating, inputs=[x], eps=1e-3, restore_inputs=False, raise_exception=False,
                         show_summary=False)
    assert not np.array_equal(x.numpy(), x0)


def test_inputs_restored_when_function_raises():
    x = _arr([1.0, 2.0])
    x0 = x.numpy().copy()

    def raising(x):
        x.numpy()[...] += 1.0
        raise RuntimeError("boom")

    for fn in (jacobian, jacobian_fd):
        with pytest.raises(RuntimeError, match="boom"):
            fn(raising, inputs=[x])
        np.testing.assert_array_equal(x.numpy(), x0)
        with pytest.raises(ValueError, match="bogus"):
            fn(lambda x: pipeline(x, x), inputs=[x], input_output_mask=[("bogus", 0)])
        np.testing.assert_array_equal(x.numpy(), x0)


def test_gradcheck_ignores_outer_tape():
    x, c = _arr([1.0, 2.0]), _arr([0.5, -1.0])
    with wp.Tape() as tape:
        assert gradcheck(pipeline, inputs=[x, c], eps=1e-3, show_summary=False)
        y = wp.zeros(2, dtype=float, requires_grad=True)
        assert gradcheck(square, 2, [x], [y], eps=1e-3, show_summary=False)
    assert tape.launches == []


# gradcheck_tape ------------------------------------------------------------------------------------------------------


def _record(broken: bool):
    x, c = _arr([1.0, -0.5, 2.0]), _arr([0.25, 2.0, -1.0])
    y0 = wp.zeros(3, dtype=float, requires_grad=True)
    y1 = wp.zeros(3, dtype=float, requires_grad=True)
    y2 = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(square, 3, inputs=[x], outputs=[y0])
        wp.launch(product, 3, inputs=[y0, c], outputs=[y1])
        wp.launch(quantize if broken else square, 3, inputs=[y1], outputs=[y2])
        tape.record_func(lambda: None, [y2])
    return tape


def test_gradcheck_tape_passes(capsys):
    tape = _record(broken=False)
    assert gradcheck_tape(tape, eps=1e-3)
    text = capsys.readouterr().out
    assert text.count("Gradient check for kernel") == 3
    assert "kernel product passed" in text


def test_gradcheck_tape_detects_broken_launch():
    tape = _record(broken=True)
    assert not gradcheck_tape(tape, eps=1e-2, raise_exception=False, show_summary=False)
    with pytest.raises(ValueError, match="'quantize'"):
        gradcheck_tape(tape, eps=1e-2, show_summary=False)
    kw = dict(eps=1e-2, raise_exception=False, show_summary=False)
    assert gradcheck_tape(tape, blacklist_kernels=[quantize.key], **kw)
    assert gradcheck_tape(tape, whitelist_kernels=[square.key, product.key], **kw)
    assert not gradcheck_tape(tape, whitelist_kernels=[quantize.key], **kw)
    assert gradcheck_tape(tape, input_output_masks={quantize.key: []}, **kw)
    assert gradcheck_tape(tape, reverse_launches=True, skip_to_launch_index=1, **kw)
    assert not gradcheck_tape(tape, skip_to_launch_index=2, **kw)


def test_gradcheck_tape_skips_backward_disabled():
    x = _arr([1.0, 2.0])
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(no_backward, 2, inputs=[x], outputs=[y])
    assert gradcheck_tape(tape, show_summary=False)


# jacobian_plot -------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(HAVE_MPL, reason="matplotlib is installed")
def test_jacobian_plot_needs_matplotlib():
    x = _arr([1.0])
    with pytest.raises(ImportError, match="pip install matplotlib"):
        jacobian_plot({}, square, [x])
    with pytest.raises(ImportError, match="matplotlib"):
        gradcheck(square, 1, [x], [wp.zeros(1, requires_grad=True)], plot_absolute_error=True, show_summary=False)


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib is not installed")
def test_jacobian_plot_figure():
    import matplotlib

    matplotlib.use("Agg")
    a, b, out, o2 = _mix_args()
    jacs = jacobian(scale_mix, 3, [a, b, 2.0], [out, o2])
    fig = jacobian_plot(jacs, scale_mix, [a, b, 2.0], show_plot=False, title="J")
    assert len(fig.axes) >= 4
    fig = jacobian_plot(jacs, scale_mix, [a, b, 2.0], show_plot=False, scale_colors_per_submatrix=True,
                        log_scale=True)
    assert fig is not None
