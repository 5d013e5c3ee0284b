"""The reverse sweep replays ``sin``/``cos`` together with their partner (``treadle::sin_cos``, one ``sincos`` call).

The fused replay must give bit-for-bit the values of the separate ``sin`` and ``cos`` calls of the forward kernel
(so the backward pass sees exactly the values the forward pass computed, and the gradients are those of separate
calls), in float32 and float64, over ordinary, large and special arguments.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treadle as wp


@wp.kernel
def trig32(x: wp.array(dtype=wp.float32), s: wp.array(dtype=wp.float32), c: wp.array(dtype=wp.float32)):
    i = wp.tid()
    s[i] = wp.sin(x[i])
    c[i] = wp.cos(x[i])


@wp.kernel
def mix32(x: wp.array(dtype=wp.float32), w: wp.array(dtype=wp.float32), v: wp.array(dtype=wp.float32),
          out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.sin(x[i]) * w[i] + wp.cos(x[i]) * v[i]


@wp.kernel
def trig64(x: wp.array(dtype=wp.float64), s: wp.array(dtype=wp.float64), c: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s[i] = wp.sin(x[i])
    c[i] = wp.cos(x[i])


@wp.kernel
def mix64(x: wp.array(dtype=wp.float64), w: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.float64),
          out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.sin(x[i]) * w[i] + wp.cos(x[i]) * v[i]


KERNELS = {np.float32: (trig32, mix32), np.float64: (trig64, mix64)}


def _inputs(np_dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    fi = np.finfo(np_dtype)
    special = [0.0, -0.0, fi.tiny, -fi.tiny, fi.smallest_subnormal, 1e-30, np.pi, -np.pi, np.pi / 2, 2 * np.pi,
               100 * np.pi, 1e4, 1e5, 123456.7, 1e7, 1e10, 1e20, 1e30, -1e30, float(fi.max), -float(fi.max),
               np.inf, -np.inf, np.nan]
    parts = [rng.uniform(-10, 10, 20000), rng.uniform(-1e4, 1e4, 5000), rng.uniform(-1e8, 1e8, 2000),
             np.exp(rng.uniform(-40, 60, 2000)) * rng.choice([-1, 1], 2000), np.array(special)]
    with np.errstate(over="ignore"):
        return np.concatenate(parts).astype(np_dtype)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
def test_fused_replay_matches_separate_calls(np_dtype, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(wp.config, "dump", ["cpp"])
    monkeypatch.setattr(wp.config, "dump_dir", str(tmp_path))
    trig, mix = KERNELS[np_dtype]
    xs = _inputs(np_dtype)
    n = len(xs)
    x = wp.array(xs, dtype=np_dtype, requires_grad=True)
    s = wp.zeros(n, dtype=np_dtype)
    c = wp.zeros(n, dtype=np_dtype)
    wp.launch(trig, n, inputs=[x, s, c])
    s_np, c_np = s.numpy(), c.numpy()
    with np.errstate(invalid="ignore"):  # the forward values are libm's: close to float64 NumPy
        finite = np.abs(xs.astype(np.float64)) < 1e4
        tol = 2e-7 if np_dtype == np.float32 else 1e-15
        np.testing.assert_allclose(s_np[finite], np.sin(xs[finite].astype(np.float64)), rtol=0, atol=tol)
        np.testing.assert_allclose(c_np[finite], np.cos(xs[finite].astype(np.float64)), rtol=0, atol=tol)

    for wv, vv in ((1.0, 0.0), (0.0, 1.0)):
        x.grad.zero_()
        w = wp.array(np.full(n, wv, np_dtype), dtype=np_dtype, requires_grad=True)
        v = wp.array(np.full(n, vv, np_dtype), dtype=np_dtype, requires_grad=True)
        out = wp.zeros(n, dtype=np_dtype, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(mix, n, inputs=[x, w, v, out])
        tape.backward(grads={out: wp.array(np.ones(n, np_dtype), dtype=np_dtype)})
        # d out / d w = sin(x), d out / d v = cos(x): the values of the replay, bit for bit those of the forward
        np.testing.assert_array_equal(w.grad.numpy(), s_np)
        np.testing.assert_array_equal(v.grad.numpy(), c_np)
        # d out / d x = w cos(x) - v sin(x): the adjoints use the partner values
        expect = c_np if wv == 1.0 else -s_np
        got = x.grad.numpy()
        nan = np.isnan(xs)
        np.testing.assert_array_equal(got[~nan], expect[~nan])

    adj = [p for p in tmp_path.iterdir() if p.name.endswith(".adj.cpp") and "mix" in p.name]
    assert adj, "no backward source dumped"
    text = adj[0].read_text()
    assert "treadle::sin_cos(" in text and "treadle::cos_sin(" in text
    assert "treadle::adj_sin(" not in text and "treadle::adj_cos(" not in text


@wp.func
def wave(x: wp.float64, k: int) -> wp.float64:
    return wp.sin(wp.float64(k) * x) + wp.cos(x) * wp.float64(0.5)


@wp.kernel
def wave_loop(x: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    acc = wp.float64(0.0)
    for k in range(1, n + 1):
        acc += wave(x[i], k) * wp.cos(x[i] * wp.float64(k))
    out[i] = acc


def test_fused_replay_in_loops_and_funcs():
    """Loops replay each iteration (checkpointed) and ``@func`` adjoints have their own replay: both stay exact."""
    rng = np.random.default_rng(3)
    xs = rng.uniform(-3, 3, 64)
    n_terms = 5
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(64, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(wave_loop, 64, inputs=[x, n_terms, out])
    tape.backward(grads={out: wp.array(np.ones(64), dtype=wp.float64)})

    def f(t):
        return sum((np.sin(k * t) + 0.5 * np.cos(t)) * np.cos(k * t) for k in range(1, n_terms + 1))

    def df(t):
        return sum((k * np.cos(k * t) - 0.5 * np.sin(t)) * np.cos(k * t)
                   - (np.sin(k * t) + 0.5 * np.cos(t)) * k * np.sin(k * t) for k in range(1, n_terms + 1))

    np.testing.assert_allclose(out.numpy(), f(xs), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), df(xs), rtol=1e-12, atol=1e-12)
    h = 1e-6
    np.testing.assert_allclose(x.grad.numpy(), (f(xs + h) - f(xs - h)) / (2 * h), rtol=1e-6, atol=1e-6)


@wp.kernel
def half_sin(x: wp.array(dtype=wp.float16), out: wp.array(dtype=wp.float16)):
    i = wp.tid()
    out[i] = wp.sin(x[i]) + wp.cos(x[i])


def test_half_precision_keeps_separate_adjoints():
    xs = np.linspace(-3, 3, 41).astype(np.float16)
    x = wp.array(xs, dtype=wp.float16, requires_grad=True)
    out = wp.zeros(41, dtype=wp.float16, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(half_sin, 41, inputs=[x, out])
    tape.backward(grads={out: wp.array(np.ones(41, np.float16), dtype=wp.float16)})
    t = xs.astype(np.float64)
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), np.cos(t) - np.sin(t), atol=4e-3)
