"""jax_kernel / jax_callable: the XLA FFI dispatcher under jit, vmap and grad, checked against jax.numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treadle as wp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
if not hasattr(jax, "ffi"):
    pytest.skip("this JAX has no jax.ffi", allow_module_level=True)


@wp.kernel
def scale_sq(a: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i] * s


@wp.kernel
def add_kernel(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + b[i]


@wp.kernel
def multi(a: wp.array(dtype=float), acc: wp.array(dtype=float), s: float, pair: wp.array(dtype=wp.vec2),
          filled: wp.array(dtype=float)):
    i = wp.tid()
    acc[i] = acc[i] + a[i]
    pair[i] = wp.vec2(a[i] * s, 1.0)
    filled[i] = s


@wp.kernel
def gather_dot(idx: wp.array(dtype=int), v: wp.array(dtype=wp.vec3), w: wp.vec3, dots: wp.array(dtype=float),
               lens: wp.array(dtype=float)):
    i = wp.tid()
    p = v[idx[i]]
    dots[i] = wp.dot(p, w)
    lens[i] = wp.length(p)


@wp.kernel
def rowsum(m: wp.array2d(dtype=float), sums: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(sums, i, m[i, j])


@wp.kernel
def outer2d(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = x[i] * y[j]


@wp.kernel
def double_any(a: wp.array(dtype=Any), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = float(a[i]) * 2.0


@wp.kernel
def sin_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


X = jnp.arange(1, 9, dtype=jnp.float32) / 4.0


def close(a: Any, b: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ------------------------------------------------------------------------------------------------- jax_kernel


def test_eager_and_jit_static_scalar() -> None:
    f = wp.jax_kernel(scale_sq)
    (y,) = f(X, 2.0)
    close(y, X * X * 2.0)
    g = jax.jit(lambda x: f(x, 3.0)[0])
    close(g(X), X * X * 3.0)
    close(g(X + 1.0), (X + 1.0) ** 2 * 3.0)  # same executable, new buffers
    h = jax.jit(lambda x, s: f(x, s)[0], static_argnames="s")
    close(h(X, s=0.5), X * X * 0.5)
    close(h(X, s=1.5), X * X * 1.5)


def test_two_inputs_and_result_is_a_list() -> None:
    f = wp.jax_kernel(add_kernel)
    r = jax.jit(f)(X, 2.0 * X)
    assert isinstance(r, (list, tuple)) and len(r) == 1
    close(r[0], 3.0 * X)


def test_traced_scalar_is_a_clear_error() -> None:
    f = wp.jax_kernel(scale_sq)
    with pytest.raises(wp.TreadleError, match="static"):
        jax.jit(lambda x, s: f(x, s))(X, 2.0)


def test_num_outputs_in_out_and_vector_outputs() -> None:
    f = wp.jax_kernel(multi, num_outputs=3, in_out_argnames=["acc"])
    acc = jnp.ones(8, jnp.float32)
    acc_new, pair, filled = jax.jit(lambda a, acc: f(a, acc, 2.0))(X, acc)
    close(acc_new, 1.0 + X)
    assert pair.shape == (8, 2)
    close(pair, jnp.stack([2.0 * X, jnp.ones(8)], axis=1))
    close(filled, jnp.full(8, 2.0))
    close(acc, jnp.ones(8))  # JAX arrays are immutable: the input is untouched


def test_launch_dims_and_output_dims_per_call() -> None:
    f = wp.jax_kernel(multi, num_outputs=3, in_out_argnames=["acc"])
    acc = jnp.zeros(8, jnp.float32)
    acc_new, pair, filled = f(X, acc, 2.0, launch_dims=3, output_dims={"pair": 3, "filled": (5,)})
    close(acc_new, jnp.concatenate([X[:3], jnp.zeros(5)]))
    assert pair.shape == (3, 2) and filled.shape == (5,)
    close(filled, [2.0, 2.0, 2.0, 0.0, 0.0])  # outputs start zeroed: the unlaunched tail is 0


def test_2d_launch_and_atomic_accumulation_into_zeroed_output() -> None:
    m = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    f = wp.jax_kernel(rowsum, output_dims=3)
    (sums,) = jax.jit(f)(m)
    close(sums, m.sum(axis=1))
    (sums2,) = jax.jit(f)(m)  # a second execution starts from zero again
    close(sums2, m.sum(axis=1))
    g = wp.jax_kernel(outer2d, launch_dims=(8, 3))
    (o,) = g(X, X[:3])
    close(o, jnp.outer(X, X[:3]))


def test_generic_kernel() -> None:
    f = wp.jax_kernel(double_any)
    close(f(jnp.arange(4, dtype=jnp.int32))[0], [0.0, 2.0, 4.0, 6.0])
    close(f(jnp.arange(4, dtype=jnp.float32))[0], [0.0, 2.0, 4.0, 6.0])


def test_wrong_dtype_and_shape_errors() -> None:
    f = wp.jax_kernel(scale_sq)
    with pytest.raises(wp.TreadleError, match="float32"):
        f(jnp.arange(4, dtype=jnp.int32), 1.0)
    with pytest.raises(wp.TreadleError, match="1 dim"):
        f(jnp.ones((2, 2), jnp.float32), 1.0)
    with pytest.raises(wp.TreadleError, match="num_outputs"):
        wp.jax_kernel(scale_sq, num_outputs=0)
    with pytest.raises(wp.TreadleError, match="in_out_argnames"):
        wp.jax_kernel(multi, num_outputs=3, in_out_argnames=["acc"], enable_backward=True)


@pytest.mark.parametrize("method", ["broadcast_all", "expand_dims", "sequential"])
def test_vmap(method: str) -> None:
    f = wp.jax_kernel(add_kernel, vmap_method=method)
    a = jnp.arange(24, dtype=jnp.float32).reshape(3, 8)
    (r,) = jax.vmap(f)(a, a * 2.0)
    close(r, 3.0 * a)
    (r,) = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, X)  # one unbatched argument
    close(r, a + X)
    (r,) = jax.vmap(f, in_axes=(1, None))(a.T, X)  # batch axis not leading
    close(r, a + X)


def test_nested_vmap_and_vmap_with_in_out() -> None:
    f = wp.jax_kernel(add_kernel)
    a = jnp.arange(2 * 3 * 8, dtype=jnp.float32).reshape(2, 3, 8)
    (r,) = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None)))(a, X)
    close(r, a + X)
    g = wp.jax_kernel(rowsum, in_out_argnames=["sums"], num_outputs=1)
    mats = jnp.arange(2 * 3 * 4, dtype=jnp.float32).reshape(2, 3, 4)
    (s,) = jax.vmap(g)(mats, jnp.ones((2, 3), jnp.float32))
    close(s, mats.sum(axis=2) + 1.0)
    (s,) = jax.vmap(g, in_axes=(0, None), )(mats, jnp.ones(3, jnp.float32))
    close(s, mats.sum(axis=2) + 1.0)


def test_grad_matches_jax_numpy() -> None:
    f = wp.jax_kernel(scale_sq, enable_backward=True)

    def loss(x: Any) -> Any:
        return jnp.sum(jnp.sin(f(x, 1.5)[0]))

    def ref(x: Any) -> Any:
        return jnp.sum(jnp.sin(x * x * 1.5))

    close(loss(X), ref(X))
    close(jax.grad(loss)(X), jax.grad(ref)(X))
    close(jax.jit(jax.grad(loss))(X), jax.grad(ref)(X))
    xs = jnp.stack([X, X + 1.0, 2.0 * X])
    close(jax.vmap(jax.grad(loss))(xs), jax.vmap(jax.grad(ref))(xs))
    close(jax.jit(jax.vmap(jax.grad(loss)))(xs), jax.vmap(jax.grad(ref))(xs))
    y, vjp = jax.vjp(lambda x: f(x, 1.5)[0], X)
    close(vjp(jnp.ones(8))[0], 3.0 * X)


def test_grad_two_outputs_vectors_int_indices_static_vector() -> None:
    f = wp.jax_kernel(gather_dot, num_outputs=2, enable_backward=True)
    idx = jnp.array([2, 0, 1, 2, 2], jnp.int32)
    v = jnp.arange(9, dtype=jnp.float32).reshape(3, 3) / 3.0 + 0.5
    w = wp.vec3(1.0, -2.0, 0.5)
    wj = jnp.array([1.0, -2.0, 0.5])

    def loss(v: Any) -> Any:
        d, n = f(idx, v, w)
        return jnp.sum(d * d) + jnp.sum(n)

    def ref(v: Any) -> Any:
        p = v[idx]
        return jnp.sum((p @ wj) ** 2) + jnp.sum(jnp.linalg.norm(p, axis=1))

    close(loss(v), ref(v), 1e-4)
    close(jax.grad(loss)(v), jax.grad(ref)(v), 1e-4)
    close(jax.jit(jax.grad(loss))(v), jax.grad(ref)(v), 1e-4)


def test_grad_through_a_chain_of_kernels() -> None:
    s = wp.jax_kernel(sin_kernel, enable_backward=True)
    q = wp.jax_kernel(scale_sq, enable_backward=True)

    @jax.jit
    def loss(x: Any) -> Any:
        return jnp.sum(q(s(x)[0], 2.0)[0])

    close(jax.grad(loss)(X), jax.grad(lambda x: jnp.sum(2.0 * jnp.sin(x) ** 2))(X))


def test_stale_plan_token_is_refused() -> None:
    from treadle._src.interop import jax_ffi

    f = wp.jax_kernel(add_kernel)
    g = jax.jit(f)
    close(g(X, X)[0], 2.0 * X)
    d = jax_ffi.get_dispatcher()
    d.lib.treadle_ffi_set_token(d.token + 1)  # as if the executable came from another process
    try:
        with pytest.raises(Exception, match="another process"):
            jax.block_until_ready(g(X, X + 1.0))
    finally:
        d.lib.treadle_ffi_set_token(d.token)
    close(g(X, X)[0], 2.0 * X)


def test_dispatcher_is_cached_with_kernels() -> None:
    from treadle._src.interop import jax_ffi
    from treadle._src.runtime.cache import get_cache

    d = jax_ffi.get_dispatcher()
    assert d.path.exists() and d.path.parent == get_cache().root / "ffi"


# ------------------------------------------------------------------------------------------------- jax_callable


def two_kernels(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float), z: wp.array(dtype=float)):
    wp.launch(sin_kernel, x.shape, inputs=[x], outputs=[y])
    wp.launch(scale_sq, x.shape, inputs=[y, s], outputs=[z])


def test_jax_callable_two_kernels() -> None:
    c = wp.jax_callable(two_kernels, num_outputs=2)
    y, z = c(X, 2.0)
    close(y, jnp.sin(X))
    close(z, 2.0 * jnp.sin(X) ** 2)
    y, z = jax.jit(lambda x: c(x, 0.5))(X)
    close(z, 0.5 * jnp.sin(X) ** 2)
    xs = jnp.stack([X, 2.0 * X])
    y, z = jax.jit(jax.vmap(lambda x: c(x, 1.0)))(xs)
    close(z, jnp.sin(xs) ** 2)


def accumulate(x: wp.array(dtype=float), acc: wp.array(dtype=float)):
    wp.launch(add_kernel, x.shape, inputs=[x, acc], outputs=[acc])


def test_jax_callable_in_out_and_output_dims() -> None:
    c = wp.jax_callable(accumulate, num_outputs=1, in_out_argnames=["acc"])
    (acc,) = jax.jit(c)(X, jnp.ones(8, jnp.float32))
    close(acc, X + 1.0)

    def head(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        wp.launch(sin_kernel, y.shape, inputs=[x], outputs=[y])

    c2 = wp.jax_callable(head, output_dims=3)
    close(c2(X)[0], jnp.sin(X[:3]))


def test_jax_callable_errors_reach_jax() -> None:
    def broken(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        raise ValueError("boom from user code")

    c = wp.jax_callable(broken)
    with pytest.raises(Exception, match="boom from user code"):
        jax.block_until_ready(jax.jit(c)(X))

    def unannotated(x, y):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(wp.TreadleError, match="annotation"):
        wp.jax_callable(unannotated)


def test_graph_modes_and_cache_clearing() -> None:
    assert [m.name for m in wp.JaxCallableGraphMode] == ["NONE", "JAX", "WARP", "WARP_STAGED", "WARP_STAGED_EX"]
    assert [m.name for m in wp.JaxModulePreloadMode] == ["NONE", "CURRENT_DEVICE", "ALL_DEVICES"]
    c = wp.jax_callable(two_kernels, num_outputs=2, graph_mode=wp.JaxCallableGraphMode.NONE,
                        module_preload_mode=wp.JaxModulePreloadMode.NONE)
    close(c(X, 1.0)[1], jnp.sin(X) ** 2)
    w = wp.jax_callable(two_kernels, num_outputs=2, graph_mode=wp.JaxCallableGraphMode.WARP)
    with pytest.raises(wp.TreadleError, match="CUDA"):
        w(X, 1.0)
    wp.clear_jax_callable_graph_cache(c)
    wp.clear_jax_callable_graph_cache()


# ------------------------------------------------------------------------------------------------- wrappers, shapes


def test_wrappers_are_cached_per_function_and_options() -> None:
    f = wp.jax_kernel(add_kernel)
    assert wp.jax_kernel(add_kernel) is f
    assert wp.jax_kernel(add_kernel, in_out_argnames=[]) is f
    assert wp.jax_kernel(add_kernel, num_outputs=1, in_out_argnames=["out"]) is not f
    assert wp.jax_kernel(add_kernel, launch_dims=4) is not f
    assert wp.jax_kernel(multi, num_outputs=3, in_out_argnames=["acc"], output_dims={"pair": 3}) is \
        wp.jax_kernel(multi, num_outputs=3, in_out_argnames=("acc",), output_dims={"pair": (3,)})
    c = wp.jax_callable(two_kernels, num_outputs=2)
    assert wp.jax_callable(two_kernels, num_outputs=2) is c
    s1 = wp.jax_callable(two_kernels, num_outputs=2, stage_in_argnames=["x"])
    assert wp.jax_callable(two_kernels, num_outputs=2, stage_in_argnames=("x",)) is s1
    assert s1 is not c and s1.stage_in_argnames == {"x"} and c.stage_in_argnames == set()
    # an in-out wrapper takes the buffer as an input and returns its new value
    (r,) = jax.jit(wp.jax_kernel(add_kernel, num_outputs=1, in_out_argnames=["out"]))(X, X, jnp.full(8, -1.0))
    close(r, 2.0 * X)


def test_signature_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="must not contain duplicate names"):
        wp.jax_kernel(add_kernel, in_out_argnames=["out", "out"], num_outputs=2)
    with pytest.raises(AssertionError):
        wp.jax_callable(two_kernels, in_out_argnames=["y", "y"], num_outputs=2)
    with pytest.raises(ValueError, match="'missing' did not match any function argument names"):
        wp.jax_kernel(add_kernel, in_out_argnames=["missing"])


@wp.kernel
def triple_any(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = a.dtype(3) * a[i]


def test_explicit_overload_instances() -> None:
    for t in (wp.int8, wp.int32, wp.uint16, wp.float32):
        inst = triple_any.add_overload([wp.array(dtype=t), wp.array(dtype=t)])
        f = wp.jax_kernel(inst)
        dt = wp.dtype_to_jax(t)
        (r,) = jax.jit(f)(jnp.arange(10, dtype=dt))
        assert r.dtype == dt
        np.testing.assert_array_equal(np.asarray(r), 3 * np.arange(10, dtype=np.dtype(dt)))
    with pytest.raises(wp.TreadleError, match="float32"):
        wp.jax_kernel(triple_any.add_overload([wp.array(dtype=wp.float32), wp.array(dtype=wp.float32)]))(
            jnp.arange(3, dtype=jnp.int32))


@wp.kernel
def halve_vec2(v: wp.array(dtype=wp.vec2), s: float, w: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    w[i] = v[i] * s


def halve_fn(v: wp.array(dtype=wp.vec2), s: float, w: wp.array(dtype=wp.vec2)):
    wp.launch(halve_vec2, v.shape, inputs=[v, s], outputs=[w])


def test_output_dims_may_include_element_dims() -> None:
    b = jnp.arange(12, dtype=jnp.float32).reshape(6, 2)
    for f in (wp.jax_kernel(halve_vec2), wp.jax_callable(halve_fn)):
        (w,) = jax.jit(lambda b, f=f: f(b, 0.5, output_dims={"w": b.shape}))(b)
        assert w.shape == (6, 2)
        close(w, 0.5 * b)
        (w,) = f(b, 2.0, output_dims=(6, 2))
        close(w, 2.0 * b)


@wp.kernel
def scale_stack(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float)):
    # a 2-d launch over 3-d arrays: the leading axis is looped inside the kernel
    i, j = wp.tid()
    for m in range(a.shape[0]):
        b[m, i, j] = a[m, i, j] * a[m, i, j] * 2.0


def test_outputs_take_the_first_input_shape_when_launch_dims_do_not_fit() -> None:
    f = wp.jax_kernel(scale_stack, launch_dims=(4, 5), enable_backward=True)
    a = jnp.arange(3 * 4 * 5, dtype=jnp.float32).reshape(3, 4, 5) / 10.0
    (b,) = jax.jit(f)(a)
    assert b.shape == (3, 4, 5)
    close(b, 2.0 * a * a)
    g = jax.jit(jax.grad(lambda a: jnp.sum(jnp.sin(f(a)[0]))))(a)
    close(g, jax.grad(lambda a: jnp.sum(jnp.sin(2.0 * a * a)))(a), 1e-4)
