"""Wrong programs get an error at the user's line: file:line:col, the source line with a caret, and a fix.

Each kernel below marks the line the error must point at with ``# <-``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenError


def _marked_line(k) -> int:
    lines, first = inspect.getsourcelines(MARKED_IN.get(k, k).func)
    for i, text in enumerate(lines):
        if "# <-" in text:
            return first + i
    raise AssertionError("no marker")


def check(k, inputs, dim=1, contains="", fix=True):
    with pytest.raises(CodegenError) as info:
        wp.launch(k, dim=dim, inputs=inputs)
    e = info.value
    assert e.loc is not None, str(e)
    assert e.loc.file == __file__
    assert e.loc.line == _marked_line(k), str(e)
    text = str(e)
    assert f"{__file__}:{e.loc.line}:" in text
    assert "^" in text  # caret under the source line
    assert contains in text, text
    if fix:
        assert "fix:" in text, text
    return e


def _arr():
    return wp.zeros(4, dtype=float)


@wp.kernel
def k_lambda(a: wp.array(dtype=float)):
    f = lambda x: x  # noqa: E731  # <-
    a[0] = 1.0


@wp.kernel
def k_listcomp(a: wp.array(dtype=float)):
    v = [x for x in range(3)]  # <-
    a[0] = 1.0


@wp.kernel
def k_try(a: wp.array(dtype=float)):
    try:  # <-
        a[0] = 1.0
    except Exception:
        pass


@wp.kernel
def k_raise(a: wp.array(dtype=float)):
    raise ValueError("no")  # <-


@wp.kernel
def k_undefined(a: wp.array(dtype=float)):
    a[0] = undefined_name_xyz  # noqa: F821  # <-


@wp.kernel
def k_type_change(a: wp.array(dtype=float)):
    x = 1.0
    if a[0] > 0.0:
        x = wp.vec3(1.0, 2.0, 3.0)  # <- (in straight-line code a new type makes a new variable; not in a branch)
    a[0] = 1.0


@wp.kernel
def k_bad_add(a: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    a[0] = v + 1.0  # <-


@wp.func
def two_args(x: float, y: float) -> float:
    return x + y


@wp.kernel
def k_arity(a: wp.array(dtype=float)):
    a[0] = two_args(1.0)  # <-


@wp.kernel
def k_arg_type(a: wp.array(dtype=float)):
    a[0] = two_args(1.0, wp.vec3(0.0))  # <-


@wp.kernel
def k_string_var(a: wp.array(dtype=float)):
    s = "hello"  # <-
    a[0] = 1.0


@wp.kernel
def k_unassigned(a: wp.array(dtype=float), flag: int):
    if flag > 0:
        y = a[1]
    else:
        y = wp.vec3(1.0)  # <-
    a[0] = y


@wp.kernel
def k_float_index(a: wp.array(dtype=float)):
    a[1.5] = 1.0  # <-


@wp.kernel
def k_too_many_idx(a: wp.array(dtype=float)):
    a[0, 1] = 1.0  # <-


@wp.kernel
def k_return_value(a: wp.array(dtype=float)):
    return 1.0  # <-


@wp.func
def mixed_returns(x: float):
    if x > 0.0:
        return 1.0
    return wp.vec3(0.0)  # <-


@wp.kernel
def k_mixed_returns(a: wp.array(dtype=float)):
    a[0] = mixed_returns(1.0)


def py_helper(x):
    return x


@wp.kernel
def k_python_call(a: wp.array(dtype=float)):
    a[0] = py_helper(1.0)  # <-


@wp.kernel
def k_store_wrong_type(a: wp.array(dtype=float)):
    a[0] = wp.vec2(1.0, 2.0)  # <-


@wp.kernel
def k_vec_index_oob(a: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    a[0] = v[3]  # <-


@wp.kernel
def k_bad_attr(a: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    a[0] = v.q  # <-


@wp.func
def recursive(x: int) -> int:
    return recursive(x - 1)  # <-


@wp.kernel
def k_recursive(a: wp.array(dtype=int)):
    a[0] = recursive(3)


@wp.kernel
def k_tid_in_func_caller(a: wp.array(dtype=int)):
    a[0] = tid_in_func()


@wp.func
def tid_in_func() -> int:
    return wp.tid()  # <-


@wp.kernel
def k_with(a: wp.array(dtype=float)):
    with open("x"):  # <-
        pass


@wp.kernel
def k_generator(a: wp.array(dtype=float)):
    a[0] = sum(x for x in range(3))  # <-


@wp.kernel
def k_dict(a: wp.array(dtype=float)):
    d = {1: 2}  # <-


@wp.kernel
def k_is(a: wp.array(dtype=float)):
    if a is None:  # <-
        a[0] = 1.0


@wp.kernel
def k_bad_range(a: wp.array(dtype=float)):
    for i in range(1.5):  # <-
        a[0] = 1.0


@wp.kernel
def k_pow_int(a: wp.array(dtype=int)):
    a[0] = 2**a[0]  # <-


@wp.kernel
def k_assert(a: wp.array(dtype=float)):
    assert a[0] > 0.0  # <-


@wp.kernel
def k_fstring(a: wp.array(dtype=float)):
    wp.printf(f"{a[0]}")  # <-


@wp.kernel
def k_atomic_wrong_index(a: wp.array2d(dtype=float)):
    wp.atomic_add(a, 0, 1.0)  # <-


@wp.kernel
def k_kernel_call(a: wp.array(dtype=float)):
    k_assert(a)  # <-


@wp.kernel
def k_star(a: wp.array(dtype=float)):
    v = wp.vec2(1.0, 2.0)
    x = (*v, 3.0)  # <- (starred call arguments are supported; a starred tuple item is not)


@wp.kernel
def k_walrus(a: wp.array(dtype=float)):
    if (y := a[0]) > 0.0:  # <-
        a[0] = y


@wp.kernel
def k_cond_vec(a: wp.array(dtype=float)):
    v = wp.vec3(1.0)
    if v:  # <-
        a[0] = 1.0


@wp.kernel
def k_global_stmt(a: wp.array(dtype=float)):
    global G  # <-
    a[0] = 1.0


@wp.kernel
def k_match_int_float(a: wp.array(dtype=float), i: int):
    a[0] = a[0] * i  # <-


@wp.kernel
def k_chained(a: wp.array(dtype=float)):
    x = y = 1.0  # <-


# More wrong programs: closures over mutable objects, comprehensions, nested definitions, read-only targets, return
# type conflicts, literals of the wrong type, strings, arity and operand mismatches.
SCALES = [1.0, 2.0]
TABLE = {"gain": 2.0}
CV = wp.constant(wp.vec3(1.0, 2.0, 3.0))


def _closure_kernel():
    buf = [1.0, 2.0]

    @wp.kernel
    def k_closure_list(a: wp.array(dtype=float)):
        a[0] = buf[1]  # <-

    return k_closure_list


k_closure_list = _closure_kernel()


@wp.kernel
def k_global_list(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * SCALES[0]  # <-


@wp.kernel
def k_global_dict(a: wp.array(dtype=float)):
    a[0] = TABLE["gain"]  # <-


GLOBAL_ARR = wp.array(np.arange(3, dtype=np.float32))


@wp.kernel
def k_global_array_item(a: wp.array(dtype=float)):
    a[0] = GLOBAL_ARR[1]  # <-


@wp.kernel
def k_global_array_value(a: wp.array(dtype=float)):
    b = GLOBAL_ARR  # <-
    a[0] = b[0]


@wp.kernel
def k_setcomp(a: wp.array(dtype=float)):
    s = {x for x in range(3)}  # <-


@wp.kernel
def k_dictcomp(a: wp.array(dtype=float)):
    d = {x: x for x in range(3)}  # <-


@wp.kernel
def k_nested_def(a: wp.array(dtype=float)):
    def inner(x):  # <-
        return x

    a[0] = 1.0


@wp.kernel
def k_class_def(a: wp.array(dtype=float)):
    class Local:  # <-
        pass


@wp.kernel
def k_del(a: wp.array(dtype=float)):
    x = 1.0
    del x  # <-


@wp.func
def gen_values(x: float):
    yield x  # <-


@wp.kernel
def k_generator_func(a: wp.array(dtype=float)):
    a[0] = gen_values(1.0)


@wp.kernel
def k_builtin_arity(a: wp.array(dtype=float)):
    a[0] = wp.sin(1.0, 2.0)  # <-


@wp.kernel
def k_unknown_kwarg(a: wp.array(dtype=float)):
    a[0] = two_args(x=1.0, z=2.0)  # <-


@wp.kernel
def k_ifexp_types(a: wp.array(dtype=float), n: int):
    x = 1.0 if n > 0 else wp.vec3(1.0)  # <-


@wp.func
def int_result() -> int:
    return 1.5  # <-


@wp.kernel
def k_return_literal_conflict(a: wp.array(dtype=int)):
    a[0] = int_result()


@wp.kernel
def k_assign_shape(a: wp.array(dtype=float)):
    a.shape[0] = 3  # <-


@wp.kernel
def k_assign_temporary(a: wp.array(dtype=float)):
    wp.vec3(1.0).x = 2.0  # <-


@wp.kernel
def k_assign_constant(a: wp.array(dtype=float)):
    CV.x = 1.0  # <-


@wp.kernel
def k_loop_var_float(a: wp.array(dtype=float)):
    for i in range(3):
        i = 1.5  # <-


@wp.kernel
def k_str_method(a: wp.array(dtype=float)):
    a[0] = float("1.0".upper())  # <-


@wp.kernel
def k_store_scalar_in_vec(a: wp.array(dtype=wp.vec3)):
    a[0] = 1.0  # <-


@wp.kernel
def k_mat_vec_mismatch(a: wp.array(dtype=float)):
    m = wp.mat22(1.0, 0.0, 0.0, 1.0)
    v = m * wp.vec3(1.0)  # <-


@wp.kernel
def k_bitand_float(a: wp.array(dtype=float)):
    a[0] = a[0] & 1.0  # <-


@wp.kernel
def k_unassigned_after_loop(a: wp.array(dtype=float), n: int):
    for i in range(n):
        a[i] = z  # noqa: F821  # <-
        z = float(i)


MARKED_IN = {}  # kernels whose error is inside a called @func

CASES = [
    (k_lambda, "lambda"),
    (k_listcomp, "list comprehension"),
    (k_try, "try/except"),
    (k_raise, "raise"),
    (k_undefined, "undefined_name_xyz"),
    (k_type_change, "has type float32"),
    (k_bad_add, "add"),
    (k_arity, "two_args"),
    (k_arg_type, "two_args"),
    (k_string_var, "str"),
    (k_unassigned, "has type float32 but is assigned a vec3f"),
    (k_float_index, "integers"),
    (k_too_many_idx, "too many or too few indices"),
    (k_return_value, "cannot return values"),
    (k_mixed_returns, "returned a vec3f"),
    (k_python_call, "not a @wp.func"),
    (k_store_wrong_type, "must be float32"),
    (k_vec_index_oob, "out of range"),
    (k_bad_attr, "has no attribute 'q'"),
    (k_recursive, "recursion"),
    (k_tid_in_func_caller, "wp.tid() can only be called in a @wp.kernel"),
    (k_with, "with"),
    (k_generator, "generator expression"),
    (k_dict, "dict literal"),
    (k_is, "comparisons are not supported"),
    (k_bad_range, "integers"),
    (k_pow_int, "float"),
    (k_assert, "assert"),
    (k_fstring, "f-string"),
    (k_atomic_wrong_index, "index argument"),
    (k_kernel_call, "cannot be called from kernel code"),
    (k_star, "starred"),
    (k_walrus, "walrus"),
    (k_cond_vec, "condition"),
    (k_global_stmt, "global"),
    (k_match_int_float, "mul"),
    (k_chained, "chained assignment"),
]


MARKED_IN.update({k_mixed_returns: mixed_returns, k_recursive: recursive, k_tid_in_func_caller: tid_in_func,
                  k_generator_func: gen_values, k_return_literal_conflict: int_result})

MUTABLE_FIX = "pass the data as a kernel argument (a wp.array or a scalar), or make it a tuple or wp.constant(...)"

# (kernel, part of the message, part of the fix)
MORE_CASES = [
    (k_closure_list, "out of a Python list, a mutable object", MUTABLE_FIX),
    (k_global_list, "out of a Python list, a mutable object", MUTABLE_FIX),
    (k_global_dict, "out of a Python dict, a mutable object", MUTABLE_FIX),
    (k_global_array_item, "out of a Python array, a mutable object", MUTABLE_FIX),
    (k_global_array_value, "uses an array from Python scope", "add a kernel parameter for it"),
    (k_setcomp, "set comprehension is not supported", "write an explicit for loop"),
    (k_dictcomp, "dict comprehension is not supported", "write an explicit for loop"),
    (k_nested_def, "nested function definition is not supported", "define it at module level with @wp.func"),
    (k_class_def, "class definition is not supported", "define structs at module level with @wp.struct"),
    (k_del, "del is not supported", "kernel variables cannot be deleted"),
    (k_generator_func, "yield is not supported", "kernels cannot be generators"),
    (k_builtin_arity, "expected 1 argument(s), got 2", "valid forms: sin(x: Float) -> Float"),
    (k_unknown_kwarg, "has no parameter named 'z'", "check the argument types"),
    (k_ifexp_types, "must have the same type, got float32 and vec3f", "convert one branch explicitly"),
    (k_return_literal_conflict, "the constant 1.5 is used where int32 is needed", "convert explicitly with int"),
    (k_assign_shape, "'shape' of an array is read-only", "allocate an array of the right shape"),
    (k_assign_temporary, "temporary, read-only value", "store the value in a variable first"),
    (k_assign_constant, "cannot assign to a component of 'CV'", "assign the value to a variable first"),
    (k_loop_var_float, "the constant 1.5 is used where int32 is needed", "write a value of the expected type"),
    (k_str_method, "'upper' is a Python function", "@wp.func"),
    (k_store_scalar_in_vec, "the assigned value must be vec3f, got float32", "convert it explicitly"),
    (k_mat_vec_mismatch, "cannot multiply mat22f by vec3f", "mul(a: Matrix, b: Vector) -> Vector"),
    (k_bitand_float, "expected integers, got float32", "bit_and(a: Int, b: Int)"),
    (k_unassigned_after_loop, "name 'z' is not defined", "a local assigned earlier in the kernel"),
]


@pytest.mark.parametrize("k,contains,fix", MORE_CASES, ids=[k.key.split(".")[-1] for k, _, _ in MORE_CASES])
def test_more_errors_point_at_user_line_with_fix(k, contains, fix):
    first = k.param_types[0]
    a = wp.zeros(4, dtype=first.dtype)
    e = check(k, [a] + [1] * (len(k.param_types) - 1), contains=contains)
    assert e.fix and fix in e.fix, str(e)
    # the caret sits under the reported column of the marked line
    shown = e.loc.render().splitlines()
    assert len(shown) == 2 and shown[1].strip().startswith("^")


def test_catalogue_size():
    assert len(CASES) + len(MORE_CASES) >= 40


@pytest.mark.parametrize("k,contains", CASES, ids=[k.key for k, _ in CASES])
def test_error_points_at_user_line(k, contains):
    first = k.param_types[0]
    a = wp.zeros((2, 2) if first.ndim == 2 else 4, dtype=first.dtype)
    inputs = [a] + [1] * (len(k.param_types) - 1)
    check(k, inputs, contains=contains, fix=k not in (k_bad_attr, k_vec_index_oob))


# Launch-time errors (wrong arguments): clear messages naming the kernel and parameter.
@wp.kernel
def k_ok(a: wp.array(dtype=float), s: float, n: int):
    a[0] = s + float(n)


def test_launch_wrong_count():
    with pytest.raises(wp.LaunchError, match=r"takes 3 argument\(s\) \(a, s, n\)"):
        wp.launch(k_ok, dim=1, inputs=[_arr(), 1.0])


def test_launch_wrong_dtype():
    with pytest.raises(wp.LaunchError, match="argument 'a' expects an array of float32, got an array of int32"):
        wp.launch(k_ok, dim=1, inputs=[wp.zeros(4, dtype=int), 1.0, 2])


def test_launch_wrong_ndim():
    with pytest.raises(wp.LaunchError, match="expects a 1-d array, got a 2-d array"):
        wp.launch(k_ok, dim=1, inputs=[wp.zeros((2, 2), dtype=float), 1.0, 2])


def test_launch_float_for_int():
    with pytest.raises(wp.LaunchError, match="argument 'n' expects int32"):
        wp.launch(k_ok, dim=1, inputs=[_arr(), 1.0, 2.5])


def test_launch_bad_dim():
    with pytest.raises(wp.LaunchError, match="1 to 4 dimensions"):
        wp.launch(k_ok, dim=(1, 1, 1, 1, 1), inputs=[_arr(), 1.0, 2])
    with pytest.raises(wp.LaunchError, match="must not be negative"):
        wp.launch(k_ok, dim=-3, inputs=[_arr(), 1.0, 2])


def test_launch_unknown_device():
    with pytest.raises(ValueError, match="cuda"):
        wp.launch(k_ok, dim=1, inputs=[_arr(), 1.0, 2], device="cuda:0")


def test_launch_dim_must_be_integers():
    for bad in ("8", (2.5, 2), [1, "x"]):
        with pytest.raises(wp.LaunchError, match="launch dim must be an int or a tuple of ints"):
            wp.launch(k_ok, dim=bad, inputs=[_arr(), 1.0, 2])


def test_launch_not_a_kernel():
    with pytest.raises(wp.LaunchError, match="expects a @wp.kernel"):
        wp.launch(np.sum, dim=1, inputs=[])


def test_missing_annotation_reported_at_definition():
    with pytest.raises(CodegenError, match="has no type annotation") as info:

        @wp.kernel
        def k_no_ann(a):
            pass

    assert "fix:" in str(info.value)
