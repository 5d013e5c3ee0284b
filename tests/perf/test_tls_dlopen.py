"""Backward passes of loop kernels stay right while other threads dlopen() libraries mid-kernel.

Each dlopen() of a library with thread-local storage makes every thread's next TLS access take the dynamic linker's
slow path; the checkpoint stack of differentiated loops is therefore reached through an out-of-line call
(``native/kernel_support.h: ckpt_stack``), never inline among live vector values.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import treadle as wp
from treadle._src.backends.cpu.build import load_library


@wp.kernel
def looped(x: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    v = x[i]
    s = 0.0
    for k in range(n):
        s = s + wp.sin(v * float(k))
        v = v * 1.01
    out[i] = s


def _grad_ref(x: np.ndarray, n: int) -> np.ndarray:
    g = np.zeros_like(x, dtype=np.float64)
    for k in range(n):
        c = 1.01**k
        g += np.cos(x * c * k) * c * k
    return g


@contextlib.contextmanager
def libraries_loading(lib: Path, tmp_path: Path, count: int) -> Iterator[None]:
    """While the block runs, another thread dlopen()s up to ``count`` copies of the library ``lib``."""
    stop = threading.Event()
    loaded: list[ctypes.CDLL] = []

    def churn() -> None:
        i = 0
        while not stop.is_set() and i < count:
            copy = tmp_path / f"copy{i}.so"
            shutil.copyfile(lib, copy)
            loaded.append(ctypes.CDLL(str(copy), mode=getattr(ctypes, "RTLD_LOCAL", 0)))
            i += 1

    t = threading.Thread(target=churn)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
    assert loaded


def test_loop_gradients_while_libraries_load(tmp_path):
    m, n = 4096, 12
    x_np = np.random.default_rng(3).random(m).astype(np.float32) * 0.5
    x = wp.array(x_np, dtype=float, requires_grad=True)
    out = wp.zeros(m, dtype=float, requires_grad=True)
    want = _grad_ref(x_np.astype(np.float64), n)

    def grad() -> np.ndarray:
        tape = wp.Tape()
        with tape:
            wp.launch(looped, m, inputs=[x, out, n])
        tape.backward(grads={out: wp.ones(m, dtype=float)})
        g = x.grad.numpy().copy()
        tape.zero()
        return g

    np.testing.assert_allclose(grad(), want, rtol=2e-3, atol=2e-3)
    lib = looped.get_instance(None).built.lib_path
    load_library(lib)
    with libraries_loading(lib, tmp_path, 200):
        for _ in range(20):
            np.testing.assert_allclose(grad(), want, rtol=2e-3, atol=2e-3)


@wp.kernel
def scaled(a: wp.array(dtype=float), out: wp.array(dtype=float), c: float, d: float):
    i = wp.tid()
    v = a[i] * c
    out[i] = v + d * v


def test_checked_mode_kernels_while_libraries_load(tmp_path):
    """Checked builds record each thread's statement in thread-local storage: never inline among live values.

    (The first launch of a checked kernel, right after its library was loaded, once produced garbage this way: the
    dynamic linker's slow TLS path clobbered the register holding ``c``.)
    """
    m = 1 << 15
    a = wp.array(np.linspace(0.5, 1.5, m, dtype=np.float32), dtype=float)
    out = wp.zeros(m, dtype=float)
    want = a.numpy() * np.float32(2.0)
    want = want + np.float32(0.25) * want
    with wp.config.override(mode="debug"):
        wp.launch(scaled, m, inputs=[a, out, 2.0, 0.25])
        np.testing.assert_array_equal(out.numpy(), want)
        lib = scaled.get_instance(None).built.lib_path
    with libraries_loading(lib, tmp_path, 300), wp.config.override(mode="debug", num_threads=1):
        for _ in range(60):
            out.zero_()
            wp.launch(scaled, m, inputs=[a, out, 2.0, 0.25])
            np.testing.assert_array_equal(out.numpy(), want)
