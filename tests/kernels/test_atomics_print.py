"""Atomics under parallel launches (exact results, old values returned), printing and expectations."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

import treadle as wp


@wp.kernel
def atomic_sum(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])


@wp.kernel
def atomic_hist(x: wp.array(dtype=int), hist: wp.array(dtype=int), olds: wp.array(dtype=int)):
    i = wp.tid()
    olds[i] = wp.atomic_add(hist, x[i] % 4, 1)


@wp.kernel
def atomic_minmax(x: wp.array(dtype=float), lo: wp.array(dtype=float), hi: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i])
    wp.atomic_max(hi, 0, x[i])


@wp.kernel
def inplace_add(x: wp.array(dtype=wp.vec3), acc: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    acc[0, 1] += x[i]
    acc[0, 0] -= x[i]


@wp.kernel
def atomic_int64(acc: wp.array(dtype=wp.int64)):
    wp.atomic_add(acc, 0, wp.int64(3))


def test_atomic_add_exact(device):
    n = 1 << 16
    x = wp.ones(n, dtype=float, device=device)
    total = wp.zeros(1, dtype=float, device=device)
    wp.launch(atomic_sum, dim=n, inputs=[x, total], device=device)
    assert total.numpy()[0] == float(n)


def test_atomic_returns_old_values(device):
    n = 4000
    xs = np.arange(n, dtype=np.int32)
    hist = wp.zeros(4, dtype=int, device=device)
    olds = wp.zeros(n, dtype=int, device=device)
    wp.launch(atomic_hist, dim=n, inputs=[wp.array(xs, device=device), hist, olds], device=device)
    np.testing.assert_array_equal(hist.numpy(), [n // 4] * 4)
    o = olds.numpy()
    for b in range(4):  # every slot handed out exactly once
        np.testing.assert_array_equal(np.sort(o[xs % 4 == b]), np.arange(n // 4))


def test_atomic_min_max(device):
    xs = np.random.default_rng(0).standard_normal(10000).astype(np.float32)
    lo = wp.full(1, 1e30, dtype=float, device=device)
    hi = wp.full(1, -1e30, dtype=float, device=device)
    wp.launch(atomic_minmax, dim=len(xs), inputs=[wp.array(xs, device=device), lo, hi], device=device)
    assert lo.numpy()[0] == xs.min() and hi.numpy()[0] == xs.max()


def test_inplace_add_on_array_is_atomic(device):
    n = 5000
    x = wp.full(n, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3, device=device)
    acc = wp.zeros((1, 2), dtype=wp.vec3, device=device)
    wp.launch(inplace_add, dim=n, inputs=[x, acc], device=device)
    np.testing.assert_array_equal(acc.numpy()[0], [[-n, -2 * n, -3 * n], [n, 2 * n, 3 * n]])


def test_int64_atomics(device):
    acc = wp.zeros(1, dtype=wp.int64, device=device)
    wp.launch(atomic_int64, dim=100000, inputs=[acc], device=device)
    assert acc.numpy()[0] == 300000


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)


def test_print_and_printf_reach_stdout(tmp_path):
    script = tmp_path / "printing.py"
    script.write_text(textwrap.dedent("""
        import treadle as wp

        @wp.kernel
        def k(x: float):
            print(x)
            wp.printf("i=%d f=%f\\n", 7, x)
            print("value", 3)
            print(wp.vec3(1.0, 2.0, 3.0))

        wp.launch(k, dim=1, inputs=[2.5])
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "2.5"
    assert lines[1] == "i=7 f=2.500000"
    assert lines[2] == "value 3"
    assert lines[3].split() == ["1", "2", "3"]  # the reference prints vectors as space-separated components


def test_expect_failures_are_reported(tmp_path):
    script = tmp_path / "expect.py"
    script.write_text(textwrap.dedent("""
        import treadle as wp

        @wp.kernel
        def k(x: int):
            wp.expect_eq(x, 3)
            wp.expect_near(1.0, 1.05, 0.1)

        wp.launch(k, dim=1, inputs=[3])
        print("---")
        wp.launch(k, dim=1, inputs=[4])
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    before, after = r.stdout.split("---")
    assert "expect_eq" not in before
    assert "expect_eq" in after
