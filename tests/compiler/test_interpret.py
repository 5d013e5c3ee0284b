"""Interpret mode (``wp.config.mode = "interpret"``): the IR interpreter gives the compiled kernel's results.

Kernels of the end-to-end kernel tests run both ways on the same inputs; printing matches the native output
byte for byte; failures raise at the user's line with the thread index, from a traceback frame at that line.
"""

from __future__ import annotations

import importlib.util
import inspect
import pathlib
import sys

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends.interpret import interpreter as interpret

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "kernels"


def _load(name: str):
    """Import one of the kernel test modules under a private name (its kernels get a module of their own)."""
    spec = importlib.util.spec_from_file_location(f"interp_{name}", KERNELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


lang = _load("test_language")
vm = _load("test_vec_mat")
st = _load("test_structs")
gen = _load("test_generics")
ap = _load("test_atomics_print")
rnd = _load("test_random")


def _snapshot(args: list) -> list:
    return [a.numpy().copy() if isinstance(a, wp.array) else None for a in args]


def _assert_same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    if a.dtype.names:
        for name in a.dtype.names:
            _assert_same(a[name], b[name], f"{what}.{name}")
    elif a.dtype.kind in "iub":
        np.testing.assert_array_equal(b, a, err_msg=what)
    else:  # the native compiler may fuse multiply-adds: allow last-bit differences
        np.testing.assert_allclose(b, a, rtol=2e-6, atol=1e-6, err_msg=what)


def run_both(kernel, dim, make_args) -> list:
    """Launch compiled and interpreted on fresh arguments from ``make_args()``; assert every array ends equal."""
    results = []
    for mode in ("release", "interpret"):
        args = make_args()
        with wp.config.override(mode=mode):
            wp.launch(kernel, dim=dim, inputs=args)
        results.append(_snapshot(args))
    for i, (c, p) in enumerate(zip(*results)):
        if c is not None:
            _assert_same(c, p, f"{kernel.key} argument {i}")
    return results[1]


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _params():
    p = st.Params()
    p.inner.scale = 2.0
    p.inner.offset = wp.vec3(1.0, 0.0, -1.0)
    p.count = 3
    p.weights = wp.array(np.arange(4, dtype=np.float32))
    p.m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    return p


def _particles():
    host = np.zeros(4, dtype=st.Particle.numpy_dtype())
    host["pos"] = _f32(4, 3, seed=3)
    host["vel"] = _f32(4, 3, seed=4)
    host["mass"] = [1.0, 2.0, 3.0, 4.0]
    host["alive"] = [1, 0, 1, 1]
    return wp.array(host, dtype=st.Particle)


CASES = {
    "saxpy": (lang.saxpy, 100, lambda: [wp.array(_f32(100)), wp.array(_f32(100, seed=1)), 2.5]),
    "funcs_defaults_overloads_tuples": (lang.funcs_kernel, 8, lambda: [wp.zeros(8, dtype=float),
                                                                      wp.zeros(8, dtype=int)]),
    "control_flow": (lang.control, 12, lambda: [wp.zeros(12, dtype=int)]),
    "c_division": (lang.c_semantics, 6, lambda: [wp.array(np.array([7, -7, 7, -7, 0, 5], dtype=np.int32)),
                                                 wp.array(np.array([2, 2, -2, -2, 3, 5], dtype=np.int32)),
                                                 wp.zeros(6, dtype=int), wp.zeros(6, dtype=int),
                                                 wp.zeros(6, dtype=float)]),
    "grid2d": (lang.grid2d, (3, 4), lambda: [wp.zeros((3, 4), dtype=float)]),
    "grid4d": (lang.grid4d, (2, 3, 4, 5), lambda: [wp.zeros((2, 3, 4, 5), dtype=int)]),
    "short_circuit": (lang.bool_ops, 7, lambda: [wp.array(np.array([1, 5, 3, 7, 2, 9, 4], dtype=np.int32)),
                                                 wp.zeros(7, dtype=int)]),
    "bitwise": (lang.bitwise, 5, lambda: [wp.array(np.array([0, 1, 5, -3, 1234567], dtype=np.int32)),
                                          wp.zeros(5, dtype=int)]),
    "slicing": (lang.slicing, 1, lambda: [wp.array(np.arange(12, dtype=np.float32).reshape(3, 4)),
                                          wp.zeros(3, dtype=float)]),
    "null_array": (lang.null_array, 1, lambda: [None, wp.zeros(1, dtype=int)]),
    "vec_ops": (vm.vec_ops, 16, lambda: [wp.array(_f32(16, 3, seed=1), dtype=wp.vec3),
                                         wp.array(_f32(16, 3, seed=2), dtype=wp.vec3), wp.zeros(16, dtype=wp.vec3),
                                         wp.zeros(16, dtype=float)]),
    "mat_ops": (vm.mat_ops, 8, lambda: [wp.array(_f32(8, 3, 3, seed=3), dtype=wp.mat33),
                                        wp.array(_f32(8, 3, seed=4), dtype=wp.vec3), wp.zeros(8, dtype=wp.mat33),
                                        wp.zeros(8, dtype=wp.vec3), wp.zeros(8, dtype=float)]),
    "inverse_float64": (vm.inv_kernel, 4, lambda: [wp.array(np.random.default_rng(5).standard_normal((4, 4, 4)),
                                                            dtype=wp.mat44d), wp.zeros(4, dtype=wp.mat44d)]),
    "constructors": (vm.construct, 4, lambda: [wp.zeros(4, dtype=wp.vec4), wp.zeros(4, dtype=wp.mat22),
                                               wp.zeros(4, dtype=wp.vec2i)]),
    "component_loops": (vm.component_loops, 5, lambda: [wp.array(_f32(5, 3, seed=7), dtype=wp.vec3),
                                                        wp.zeros(5, dtype=float)]),
    "struct_argument": (st.use_params, 4, lambda: [_params(), wp.zeros(4, dtype=wp.vec3), wp.zeros(4, dtype=float)]),
    "array_of_structs": (st.step_particles, 4, lambda: [_particles(), 0.1]),
    "structs_built_in_kernel": (st.construct_in_kernel, 3, lambda: [wp.zeros(3, dtype=st.Inner),
                                                                    wp.zeros(3, dtype=st.Particle)]),
    "assignment_targets_once": (st.aug_assign_once, 1, lambda: [wp.zeros(1, dtype=int),
                                                                wp.zeros(1, dtype=st.Counter)]),
    "generic_float": (gen.generic_scale, 5, lambda: [wp.array(_f32(5)), 3.0]),
    "generic_vec3": (gen.generic_scale, 5, lambda: [wp.array(_f32(5, 3), dtype=wp.vec3), 2.0]),
    "constants": (gen.uses_constants, 4, lambda: [wp.zeros(4, dtype=float), wp.zeros(4, dtype=wp.vec3)]),
    "static_unrolled": (gen.static_kernel, 1, lambda: [wp.zeros(3, dtype=float)]),
    "atomic_old_values": (ap.atomic_hist, 64, lambda: [wp.array(np.arange(64, dtype=np.int32)),
                                                       wp.zeros(4, dtype=int), wp.zeros(64, dtype=int)]),
    "atomic_min_max": (ap.atomic_minmax, 50, lambda: [wp.array(_f32(50, seed=9)), wp.full(1, 1e30, dtype=float),
                                                      wp.full(1, -1e30, dtype=float)]),
    "inplace_add_is_atomic": (ap.inplace_add, 20, lambda: [wp.full(20, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3),
                                                           wp.zeros((1, 2), dtype=wp.vec3)]),
    "random_uniform": (rnd.uniform_draws, 6, lambda: [42, wp.zeros((6, 5), dtype=float)]),
    "random_ints": (rnd.int_draws, 6, lambda: [7, -5, 20, wp.zeros((6, 2), dtype=int),
                                               wp.zeros((6, 2), dtype=wp.uint32)]),
    "random_float_poisson": (rnd.float_draws, 8, lambda: [3, 12.5, wp.zeros((8, 2), dtype=float),
                                                          wp.zeros(8, dtype=wp.uint32)]),
    "random_cdf": (rnd.cdf_draws, 8, lambda: [5, wp.array(np.array([0.1, 0.5, 0.7, 1.0], dtype=np.float32)),
                                              wp.zeros(8, dtype=int)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_interpreter_matches_compiled(case):
    kernel, dim, make_args = CASES[case]
    run_both(kernel, dim, make_args)


def test_enum_arguments_and_branches():
    for mode_value in (gen.Mode.ADD, int(gen.Mode.MUL)):
        run_both(gen.enum_kernel, 1, lambda mode_value=mode_value: [mode_value, wp.zeros(2, dtype=int)])


def test_numpy_arrays_are_written_in_place():
    xs = np.arange(5, dtype=np.float32)
    ys = np.ones(5, dtype=np.float32)
    with wp.config.override(mode="interpret"):
        wp.launch(lang.saxpy, dim=5, inputs=[xs, ys, 3.0])
    np.testing.assert_allclose(ys, 3.0 * xs + 1.0)


@wp.kernel(module="unique")
def never_compiled(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i * i


def test_interpret_mode_does_not_compile(monkeypatch):
    from treadle._src.backends.cpu import build

    def refuse(*args, **kwargs):
        raise AssertionError("interpret mode must not call the native compiler")

    monkeypatch.setattr(build, "compile_batch", refuse)
    monkeypatch.setattr(build, "compile_batches", refuse)
    out = wp.zeros(6, dtype=int)
    with wp.config.override(mode="interpret"):
        wp.launch(never_compiled, dim=6, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.arange(6) ** 2)


def test_launch_arguments_are_checked_as_when_compiled():
    with wp.config.override(mode="interpret"), pytest.raises(wp.LaunchError, match="expects an array of float32"):
        wp.launch(lang.saxpy, dim=2, inputs=[wp.zeros(2, dtype=int), wp.zeros(2, dtype=float), 1.0])


def test_recorded_launch_replays_in_the_interpreter():
    x = wp.array(np.arange(4, dtype=np.float32))
    y = wp.zeros(4, dtype=float)
    with wp.config.override(mode="interpret"):
        cmd = wp.launch(lang.saxpy, dim=4, inputs=[x, y, 1.0], record_cmd=True)
        np.testing.assert_array_equal(y.numpy(), 0.0)  # recorded, not run
        cmd.launch()
        cmd.set_param_at_index(2, 10.0)
        cmd.launch()
    np.testing.assert_allclose(y.numpy(), 11.0 * np.arange(4))


@wp.kernel
def square_sum(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


def test_tape_in_interpret_mode_uses_the_compiled_backward_pass():
    x = wp.array(np.array([1.0, 2.0, 3.0]), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with wp.config.override(mode="interpret"):
        with wp.Tape() as tape:
            wp.launch(square_sum, dim=3, inputs=[x], outputs=[loss])
        tape.backward(loss)
    assert loss.numpy()[0] == 14.0
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


# Printing -------------------------------------------------------------------------------------------------------


@wp.kernel
def printing(x: float, i: int, u: wp.uint32, v: wp.vec3, m: wp.mat22):
    print(x)
    print(i)
    print(v)
    print(m)
    print("value", i, x)
    wp.printf("i=%d f=%f g=%g e=%.3e u=%u x=%x pct=%%\n", i, x, x, x, u, i)
    wp.printf("neg %u %lld\n", -1, wp.int64(-5))
    print(x > 1.0)
    wp.expect_eq(i, 3)
    wp.expect_neq(v, v)
    wp.expect_near(x, 1.0, 0.1)
    wp.expect_near(v, wp.vec3(0.0), 0.5)


def test_printing_matches_native_output(capfd):
    args = [2.5, 4, wp.uint32(4000000000), wp.vec3(1.0, -2.5, 1e-7), wp.mat22(1.0, 2.0, 3.0, 4.0)]
    wp.launch(printing, dim=1, inputs=args)
    compiled = capfd.readouterr().out
    with wp.config.override(mode="interpret"):
        wp.launch(printing, dim=1, inputs=args)
    interpreted = capfd.readouterr().out
    assert "expect_eq" in compiled and "Max absolute difference" in compiled
    assert interpreted == compiled


# Errors ---------------------------------------------------------------------------------------------------------


@wp.kernel(module="unique")
def oob_read(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i + 1]  # <- oob_read


@wp.func
def read_at(a: wp.array(dtype=float), k: int) -> float:
    return a[k]  # <- read_at


@wp.kernel(module="unique")
def oob_in_func(a: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = read_at(a, i * 10 + j)


@wp.kernel(module="unique")
def int_div(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = a[i] / b[i]  # <- int_div


@wp.kernel(module="unique")
def bad_component(v: wp.array(dtype=wp.vec3), k: int, out: wp.array(dtype=float)):
    out[0] = v[0][k]  # <- bad_component


def _line(tag: str) -> int:
    lines = pathlib.Path(__file__).read_text().splitlines()
    return next(i + 1 for i, t in enumerate(lines) if t.rstrip().endswith(f"# <- {tag}"))


def _launch_interpreted(kernel, dim, inputs):
    with wp.config.override(mode="interpret"):
        wp.launch(kernel, dim=dim, inputs=inputs)


def test_out_of_bounds_raises_at_the_users_line():
    a = wp.zeros(8, dtype=float)
    out = wp.zeros(8, dtype=float)
    with pytest.raises(wp.CheckedModeError) as info:
        _launch_interpreted(oob_read, 8, [a, out])
    assert isinstance(info.value, IndexError)
    text = str(info.value)
    assert f"{__file__}:{_line('oob_read')}" in text
    assert "kernel 'oob_read', thread 7" in text
    assert "index 8 is out of bounds for dimension 0 of extent 8 (array 'a'" in text
    assert "out[i] = a[i + 1]" in text and "^" in text
    # The traceback ends in a frame at the kernel line, whose globals are the failing thread's variables.
    last = info.traceback[-1]
    assert pathlib.Path(str(last.path)) == pathlib.Path(__file__) and last.lineno + 1 == _line("oob_read")
    assert int(last.frame.f_globals["i"]) == 7
    # Threads before the failing one ran; nothing was written out of bounds.
    np.testing.assert_array_equal(out.numpy(), 0.0)


def test_out_of_bounds_inside_a_function_reports_the_function_line_and_2d_thread():
    a = wp.zeros(12, dtype=float)
    out = wp.zeros((2, 3), dtype=float)
    with pytest.raises(IndexError) as info:
        _launch_interpreted(oob_in_func, (2, 3), [a, out])
    text = str(info.value)
    assert f"{__file__}:{_line('read_at')}" in text
    assert "thread 5 (1, 2)" in text and "index 12 is out of bounds" in text


def test_integer_division_by_zero_raises():
    a = wp.array(np.array([4, 5, 6], dtype=np.int32))
    b = wp.array(np.array([2, 0, 3], dtype=np.int32))
    out = wp.zeros(3, dtype=int)
    with pytest.raises(ZeroDivisionError, match=r"thread 1: integer division or modulo by zero \(5 / 0\)") as info:
        _launch_interpreted(int_div, 3, [a, b, out])
    assert isinstance(info.value, wp.CheckedModeError)
    assert f"{__file__}:{_line('int_div')}" in str(info.value)
    assert list(out.numpy()) == [2, 0, 0]


def test_component_index_out_of_range_raises():
    v = wp.zeros(1, dtype=wp.vec3)
    out = wp.zeros(1, dtype=float)
    with pytest.raises(IndexError, match="component index 3 is out of range for 3 components"):
        _launch_interpreted(bad_component, 1, [v, 3, out])


# Stepping -------------------------------------------------------------------------------------------------------


@wp.kernel(module="unique")
def stepped(x: wp.array(dtype=float)):
    i = wp.tid()
    y = x[i] * 2.0  # step 1
    x[i] = y + 1.0  # step 2


def test_statements_execute_one_by_one_at_user_lines(monkeypatch):
    """What pdb sees when stepping through Interpreter.exec_stmt: the user's lines, in order, with named variables."""
    seen = []
    original = interpret.Interpreter.exec_stmt

    def spy(self, stmt, frame):
        r = original(self, stmt, frame)
        if stmt.loc is not None:
            seen.append((self.tid, stmt.loc.line, dict(self.variables())))
        return r

    monkeypatch.setattr(interpret.Interpreter, "exec_stmt", spy)
    x = wp.array(np.array([1.0, 5.0], dtype=np.float32))
    _launch_interpreted(stepped, 2, [x])
    np.testing.assert_allclose(x.numpy(), [3.0, 11.0])
    first_line = inspect.getsourcelines(stepped.func)[1]
    lines = [line - first_line for tid, line, _ in seen if tid == 0]
    assert lines == sorted(lines) and {2, 3, 4} <= set(lines)
    last = [v for tid, line, v in seen if tid == 1][-1]
    assert float(last["y"]) == 10.0 and int(last["i"]) == 1
