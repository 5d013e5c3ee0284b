"""``wp.capture_if`` / ``wp.capture_while``: eager, and as conditional nodes of CPU graphs read at replay time."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def add(a: wp.array(dtype=float), i: int, v: float):
    a[i] = a[i] + v


@wp.kernel
def count_down(c: wp.array(dtype=wp.int32), a: wp.array(dtype=float)):
    c[0] = c[0] - 1
    a[1] = a[1] + 1.0


def _cond(v: int) -> wp.array:
    return wp.array(np.array([v], dtype=np.int32), device="cpu")


def test_eager_if_and_while_run_at_once():
    a = wp.zeros(2, dtype=float, device="cpu")
    wp.capture_if(_cond(1), on_true=lambda: wp.launch(add, 1, [a, 0, 1.0]),
                  on_false=lambda: wp.launch(add, 1, [a, 0, 100.0]))
    wp.capture_if(_cond(0), on_true=lambda: wp.launch(add, 1, [a, 0, 1.0]),
                  on_false=lambda: wp.launch(add, 1, [a, 0, 100.0]))
    wp.capture_if(_cond(-3), on_true=lambda: wp.launch(add, 1, [a, 0, 1000.0]))  # non-zero is true
    wp.capture_if(_cond(0), on_true=lambda: wp.launch(add, 1, [a, 0, 1.0e6]))  # no else branch: nothing runs
    n = _cond(4)
    wp.capture_while(n, lambda: wp.launch(count_down, 1, [n, a]))
    np.testing.assert_array_equal(a.numpy(), [1101.0, 4.0])
    assert n.numpy()[0] == 0


def test_first_element_is_the_condition_and_kwargs_reach_the_callback():
    seen = []
    wp.capture_if(wp.array(np.array([1, 0], dtype=np.int32)), on_true=lambda x, y: seen.append((x, y)), x=1, y=2)
    wp.capture_if(wp.array(np.array([0, 1], dtype=np.int32)), on_true=lambda x, y: seen.append((x, y)), x=3, y=4)
    assert seen == [(1, 2)]


def test_captured_branch_is_chosen_at_replay_time():
    a = wp.zeros(2, dtype=float, device="cpu")
    c, n = _cond(1), _cond(3)
    with wp.ScopedCapture("cpu") as cap:
        wp.capture_if(c, on_true=lambda: wp.launch(add, 1, [a, 0, 1.0]),
                      on_false=lambda: wp.launch(add, 1, [a, 0, 100.0]))
        wp.capture_while(n, lambda: wp.launch(count_down, 1, [n, a]))
    # nothing ran while capturing
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.0])
    assert n.numpy()[0] == 3
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(a.numpy(), [1.0, 3.0])
    c.assign(np.array([0], dtype=np.int32))
    n.assign(np.array([2], dtype=np.int32))
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(a.numpy(), [101.0, 5.0])
    wp.capture_launch(cap.graph)  # n stays 0: the loop body does not run
    np.testing.assert_array_equal(a.numpy(), [201.0, 5.0])


def test_nested_conditionals_and_recorded_array_operations():
    a = wp.zeros(2, dtype=float, device="cpu")
    b = wp.zeros(2, dtype=float, device="cpu")
    c, n = _cond(1), _cond(0)

    def body():
        wp.capture_if(c, on_true=lambda: wp.launch(add, 1, [a, 0, 10.0]))
        wp.launch(count_down, 1, [n, a])

    with wp.ScopedCapture("cpu") as cap:
        wp.capture_while(n, body)
        wp.copy(b, a)  # an array operation recorded after the loop node
    for c0, n0 in [(1, 2), (0, 3), (1, 0)]:
        c.assign(np.array([c0], dtype=np.int32))
        n.assign(np.array([n0], dtype=np.int32))
        before = a.numpy().copy()
        wp.capture_launch(cap.graph)
        expect = before + [10.0 * n0 * c0, float(n0)]
        np.testing.assert_array_equal(a.numpy(), expect)
        np.testing.assert_array_equal(b.numpy(), expect)


def test_a_captured_graph_as_branch():
    a = wp.zeros(2, dtype=float, device="cpu")
    with wp.ScopedCapture("cpu") as inner:
        wp.launch(add, 1, [a, 1, 5.0])
    c = _cond(0)
    with wp.ScopedCapture("cpu") as outer:
        wp.capture_if(c, on_true=inner.graph, on_false=lambda: wp.launch(add, 1, [a, 0, 1.0]))
    wp.capture_launch(outer.graph)
    c.assign(np.array([1], dtype=np.int32))
    wp.capture_launch(outer.graph)
    wp.capture_if(c, on_true=inner.graph)  # eager with a graph: replays it now
    np.testing.assert_array_equal(a.numpy(), [1.0, 10.0])


def test_bad_condition_and_body_are_refused():
    with pytest.raises(TypeError, match="array of int32"):
        wp.capture_if(wp.array(np.array([1.0], dtype=np.float32)), on_true=lambda: None)
    with pytest.raises(TypeError, match="array of int32"):
        wp.capture_if([1], on_true=lambda: None)
    with pytest.raises(TypeError, match="array of int32"):
        wp.capture_while(wp.zeros(0, dtype=wp.int32), lambda: None)
    with pytest.raises(TypeError, match="while_body must be a callable or a Graph"):
        wp.capture_while(_cond(1), None)
    with pytest.raises(TypeError, match="on_false must be a callable or a Graph"):
        wp.capture_if(_cond(1), on_true=lambda: None, on_false=3)


def test_a_failing_callback_leaves_the_capture_usable():
    a = wp.zeros(2, dtype=float, device="cpu")

    def broken():
        raise ValueError("in the branch")

    with wp.ScopedCapture("cpu") as cap:
        with pytest.raises(ValueError, match="in the branch"):
            wp.capture_if(_cond(1), on_true=broken)
        wp.launch(add, 1, [a, 0, 2.0])  # recorded in the outer graph again
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(a.numpy(), [2.0, 0.0])


def test_is_conditional_graph_supported_matches_the_captures_available():
    assert wp.is_conditional_graph_supported() is (wp.get_cuda_device_count() == 0)


@pytest.mark.skipif(wp.get_cuda_device_count() == 0, reason="needs a CUDA device")
def test_cuda_capture_refuses_conditional_nodes():
    c = wp.zeros(1, dtype=wp.int32, device="cuda:0")
    wp.capture_begin("cuda:0")
    try:
        with pytest.raises(RuntimeError, match="CUDA graph capture"):
            wp.capture_if(c, on_true=lambda: None)
    finally:
        wp.capture_end("cuda:0")
