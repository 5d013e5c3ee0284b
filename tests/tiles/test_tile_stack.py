"""Tile stacks against a Python list model: push/pop/count/clear, overflow, dtypes, stacks passed to @funcs, errors."""

from __future__ import annotations

import numpy as np
import pytest
from tile_error_check import assert_error_at_line

import treadle as wp

CAP = wp.constant(5)


@wp.func
def push_twice(s: wp.tile_stack(capacity=CAP, dtype=int), v: int) -> int:
    wp.tile_stack_push(s, v, True)
    return wp.tile_stack_push(s, v + 1, v % 3 != 0)


@wp.kernel
def script(ops: wp.array2d(dtype=int), slots: wp.array2d(dtype=int), vals: wp.array2d(dtype=int),
           counts: wp.array2d(dtype=int)):
    """Replays a per-block script: op 0 push(arg), 1 push_twice(arg) through a @func, 2 pop, 3 clear."""
    b, _ = wp.tid()
    s = wp.tile_stack(capacity=CAP, dtype=int)
    for k in range(ops.shape[1]):
        op = ops[b, k]
        arg = k * 7 + b
        slot = -2
        val = -2
        if op == 0:
            slot = wp.tile_stack_push(s, arg, arg % 4 != 1)
        elif op == 1:
            slot = push_twice(s, arg)
        elif op == 2:
            val, slot = wp.tile_stack_pop(s)
        else:
            wp.tile_stack_clear(s)
        slots[b, k] = slot
        vals[b, k] = val
        counts[b, k] = wp.tile_stack_count(s)


def _model(ops: np.ndarray, b: int, cap: int) -> tuple[list[int], list[int], list[int]]:
    stack: list[int] = []
    slots, vals, counts = [], [], []

    def push(v: int, has: bool) -> int:
        if not has or len(stack) >= cap:
            return -1
        stack.append(v)
        return len(stack) - 1

    for k, op in enumerate(ops):
        arg = k * 7 + b
        slot, val = -2, -2
        if op == 0:
            slot = push(arg, arg % 4 != 1)
        elif op == 1:
            push(arg, True)
            slot = push(arg + 1, arg % 3 != 0)
        elif op == 2:
            if stack:
                val, slot = stack.pop(), len(stack)
            else:
                val, slot = 0, -1
        else:
            stack.clear()
        slots.append(slot)
        vals.append(val)
        counts.append(len(stack))
    return slots, vals, counts


def test_stack_script_matches_a_list_model():
    rng = np.random.default_rng(7)
    blocks, steps = 3, 41
    ops = rng.choice(4, size=(blocks, steps), p=[0.4, 0.2, 0.3, 0.1]).astype(np.int32)
    slots, vals, counts = (wp.zeros((blocks, steps), dtype=int) for _ in range(3))
    wp.launch_tiled(script, dim=blocks, inputs=[wp.array(ops), slots, vals, counts], block_dim=64)
    for b in range(blocks):
        want = _model(ops[b], b, 5)
        np.testing.assert_array_equal(slots.numpy()[b], want[0])
        np.testing.assert_array_equal(vals.numpy()[b], want[1])
        np.testing.assert_array_equal(counts.numpy()[b], want[2])


@wp.kernel
def vec_and_half(out_v: wp.array(dtype=wp.vec3), out_h: wp.array(dtype=wp.float16), out_slot: wp.array(dtype=int)):
    b, _ = wp.tid()
    sv = wp.tile_stack(capacity=1, dtype=wp.vec3)
    sh = wp.tile_stack(capacity=3, dtype=wp.float16)
    wp.tile_stack_push(sv, wp.vec3(float(b), 2.0, 3.0), True)
    out_slot[b] = wp.tile_stack_push(sv, wp.vec3(9.0), True)  # full: dropped
    wp.tile_stack_push(sh, wp.float16(1.5), True)
    wp.tile_stack_push(sh, wp.float16(float(b) + 0.25), True)
    v, _s = wp.tile_stack_pop(sv)
    h, _t = wp.tile_stack_pop(sh)
    out_v[b] = v
    out_h[b] = h


def test_vector_and_half_stacks():
    out_v = wp.zeros(2, dtype=wp.vec3)
    out_h = wp.zeros(2, dtype=wp.float16)
    out_slot = wp.zeros(2, dtype=int)
    wp.launch_tiled(vec_and_half, dim=2, inputs=[out_v, out_h, out_slot], block_dim=8)
    np.testing.assert_array_equal(out_v.numpy(), [[0, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(out_h.numpy(), np.array([0.25, 1.25], dtype=np.float16))
    np.testing.assert_array_equal(out_slot.numpy(), [-1, -1])


def test_stack_annotation():
    t = wp.tile_stack(capacity=4, dtype=float)
    assert t == wp.tile_stack(capacity=4, dtype=wp.float32) and t != wp.tile_stack(capacity=5, dtype=float)
    with pytest.raises(ValueError, match="positive integer"):
        wp.tile_stack(capacity=0, dtype=int)
    with pytest.raises(TypeError, match="'dtype'"):
        wp.tile_stack(capacity=3)


def bool_capacity(a: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=True, dtype=int)
    a[0] = wp.tile_stack_count(s)


def zero_capacity(a: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=0, dtype=int)
    a[0] = wp.tile_stack_count(s)


def wrong_value(a: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=2, dtype=int)
    a[0] = wp.tile_stack_push(s, 1.0, True)


def not_a_stack(a: wp.array(dtype=int)):
    a[0] = wp.tile_stack_count(a)


def pushed_expression(a: wp.array(dtype=int)):
    a[0] = wp.tile_stack_push(wp.tile_stack(capacity=2, dtype=int), 1, True)


@pytest.mark.parametrize("fn, message, line_text", [
    (bool_capacity, r"capacity must be a compile-time int, got True", "capacity=True"),
    (zero_capacity, r"capacity to be a positive integer, got 0", "capacity=0"),
    (wrong_value, r"value type float32 does not match the stack's dtype int32", "1.0, True"),
    (not_a_stack, r"tile_stack_count\(\) takes a tile_stack, got array", "tile_stack_count(a)"),
    (pushed_expression, r"must be a variable \(it is updated in place\)", "tile_stack_push("),
])
def test_stack_errors_point_at_the_user_line(fn, message, line_text):
    assert_error_at_line(fn, message, line_text, [wp.zeros(1, dtype=int)], "tile_stack_err")
