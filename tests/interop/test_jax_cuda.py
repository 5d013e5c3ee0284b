"""The CUDA variant of the JAX FFI dispatcher, checked without a GPU.

No CUDA-enabled jaxlib can run here, so XLA never calls the CUDA handler itself. What is checked instead:

- the dispatcher (one C source) builds with the CUDA handler and needs no CUDA header; both handlers are registered,
  the CUDA one for platform ``"CUDA"`` (``register_ffi_target`` recorded through a mock);
- the Python side picks the CUDA variant for a CUDA JAX device (**mocked boundary**: ``jax_platform`` is patched to
  report a CUDA device, because a real one needs a GPU JAX), and the CPU handler refuses such a plan cleanly;
- the CUDA handler end to end: ``treadle_ffi_selftest`` (in the dispatcher) builds an XLA call frame in C with a
  stand-in XLA API whose ``XLA_FFI_Stream_Get`` / ``XLA_FFI_DeviceOrdinal_Get`` return a chosen stream and ordinal,
  and runs the handler against Treadle's fake CUDA driver (``tests/cuda/fake_driver.py``: "device memory" is host
  memory, launches run the CPU build of the same kernel), so results, gradients, zero-filling, batching, the stream
  and the device the launch went to are all real checks of the host side.

The real thing (``jax.jit`` / ``jax.grad`` of a ``jax_kernel`` on a GPU JAX) is ``tests/gpu/test_gpu_jax.py``.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import treadle as wp  # noqa: E402
from treadle._src.core.errors import TreadleError  # noqa: E402
from treadle._src.interop import jax_ffi  # noqa: E402
from treadle._src.interop.jax_kernel import jax_kernel  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cuda"))
from fake_driver import cpu_backed_driver  # noqa: E402

from treadle._src.runtime import cuda_driver as cd  # noqa: E402


@wp.kernel(module="jax_cuda_tests")
def scale_add(x: wp.array(dtype=float), y: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s * x[i] * x[i] + y[i]


@wp.kernel(module="jax_cuda_tests")
def accumulate(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A two-device fake CUDA driver whose launches run the CPU build (binaries are stand-ins, no NVRTC)."""
    with cpu_backed_driver(tmp_path, monkeypatch) as drv:
        yield drv


@pytest.fixture
def on_cuda(monkeypatch):
    """MOCKED BOUNDARY: make every jax_kernel trace as if JAX ran it on CUDA device 1 (needs a GPU JAX for real)."""
    monkeypatch.setattr(jax_ffi, "jax_platform", lambda arrays: ("cuda", 1))


def _ptr(a: Any) -> int:
    return int(a.ptr)


def test_dispatcher_has_both_handlers_and_needs_no_cuda_header():
    d = jax_ffi.get_dispatcher()
    assert d.lib.treadle_ffi_handler and d.lib.treadle_ffi_cuda_handler
    src = jax_ffi._SOURCE.read_text()
    assert "cuda.h" not in src and "cuda_runtime" not in src
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler for the plain-C syntax check")
    # The source is also valid C (the FFI C API only), with no CUDA toolkit on the include path.
    proc = subprocess.run([cc, "-x", "c", "-std=c11", "-fsyntax-only", "-Wall", "-Werror", "-I",
                           jax.ffi.include_dir(), str(jax_ffi._SOURCE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_cuda_target_is_registered(monkeypatch):
    d = jax_ffi.get_dispatcher()
    seen = []
    monkeypatch.setattr(jax.ffi, "register_ffi_target", lambda name, cap, platform: seen.append((name, platform)))
    try:
        fresh = jax_ffi._Dispatcher(d.lib, d.path)
    finally:
        d.lib.treadle_ffi_set_token(d.token)  # the fresh one replaced the process token in the shared library
    assert (jax_ffi.TARGET, "cpu") in seen and (jax_ffi.TARGET, "CUDA") in seen
    assert fresh.cuda_registered
    assert d.cuda_registered  # the real registration (CPU-only jaxlib) accepted the CUDA target too


class _Dev:
    def __init__(self, platform: str, hw: int) -> None:
        self.platform = platform
        self.local_hardware_id = hw
        self.id = hw + 10


class _Arr:
    def __init__(self, dev: _Dev) -> None:
        self._dev = dev
        self.shape, self.dtype = (3,), np.float32

    def devices(self) -> set:
        return {self._dev}


def test_jax_platform_picks_the_cuda_variant_for_a_cuda_device():
    # MOCKED BOUNDARY: JAX arrays on a GPU device (a real one needs a GPU jaxlib); "gpu" is jaxlib's platform name.
    assert jax_ffi.jax_platform([_Arr(_Dev("gpu", 1))]) == ("cuda", 1)
    assert jax_ffi.jax_platform([_Arr(_Dev("cuda", 0))]) == ("cuda", 0)
    assert jax_ffi.jax_platform([jnp.ones(3)]) == ("cpu", 0)
    seen = []

    @jax.jit
    def f(x):
        seen.append(jax_ffi.jax_platform([x]))  # a tracer: JAX's default device decides
        return x

    f(jnp.ones(3))
    assert seen == [("cpu", 0)]
    assert jax_ffi._platform_of(_Dev("gpu", 0)) == ("cuda", 0)


def test_cuda_trace_builds_cuda_plans_and_the_cpu_handler_refuses_them(fake, on_cuda):
    f = jax_kernel(scale_add, enable_backward=True, block_dim=128)
    x, y = jnp.arange(4.0, dtype=jnp.float32), jnp.ones(4, jnp.float32)
    f._launches.clear()  # jax_kernel(...) is memoised: forget launches of earlier tests
    f._diff.clear()
    with pytest.raises(Exception, match="traced for a CUDA device but runs on the CPU"):
        jax.block_until_ready(f(x, y, 2.0))
    (lp,) = f._launches.values()
    assert lp.platform == "cuda"
    plan = lp.forward_plan()
    assert plan._plan.kind == jax_ffi.KIND_CUDA and not plan._plan.entry
    assert plan.cuda_target.block_dim == 128 and not plan.cuda_target.adjoint
    assert lp.backward_plan([0, 1]).cuda_target.adjoint
    # the kernel was loaded for cuda:1 at trace time (forward and adjoint), not inside the XLA call
    inst = scale_add.get_instance(None)
    assert {("cuda:1", False), ("cuda:1", True)} <= set(inst._cuda_plans)
    # the same shapes traced for another device reuse the launch and load the kernel there too
    jax_ffi.jax_platform = lambda arrays: ("cuda", 0)  # restored by the on_cuda fixture's monkeypatch
    with pytest.raises(Exception, match="traced for a CUDA device"):
        jax.block_until_ready(f(x, y, 2.0))
    assert len(f._launches) == 1 and lp.preloaded == {0, 1}
    assert {("cuda:0", False), ("cuda:0", True)} <= set(inst._cuda_plans)


def test_cuda_trace_without_treadle_cuda_is_a_clear_error(on_cuda, monkeypatch):
    monkeypatch.setattr("treadle._src.runtime.device.is_cuda_available", lambda: False)
    f = jax_kernel(scale_add)
    with pytest.raises(TreadleError, match="cannot use CUDA"):
        f(jnp.ones(3, jnp.float32), jnp.ones(3, jnp.float32), 1.0)


def test_jax_callable_refuses_cuda(on_cuda):
    def fn(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        pass

    from treadle._src.interop.jax_kernel import jax_callable

    g = jax_callable(fn)
    with pytest.raises(Exception, match="CPU only"):
        g(jnp.ones(3, jnp.float32))


def _cuda_launch(f: Any, *args: Any) -> Any:
    """The _Launch of a jax_kernel traced for CUDA (the CPU run it triggers fails by design and is ignored)."""
    f._launches.clear()  # jax_kernel(...) is memoised: forget launches of earlier tests
    f._diff.clear()
    try:
        jax.block_until_ready(f(*args))
    except Exception:  # noqa: BLE001 - the CPU handler refuses the CUDA plan
        pass
    (lp,) = f._launches.values()
    return lp


def test_cuda_handler_forward_on_xla_stream_and_device(fake, on_cuda):
    n = 37
    rng = np.random.default_rng(1)
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    f = jax_kernel(scale_add)
    lp = _cuda_launch(f, jnp.asarray(xh), jnp.asarray(yh), 1.5)
    dev = wp.get_device("cuda:1")
    x, y = wp.array(xh, device=dev), wp.array(yh, device=dev)
    out = wp.full(n, 123.0, dtype=float, device=dev)  # stale values: outputs are cleared first
    stream = wp.Stream(dev)
    before = len(fake.launches)
    code, msg = jax_ffi.selftest_call(lp.forward_plan(), [(_ptr(x), (n,)), (_ptr(y), (n,)), (_ptr(out), (n,))], 2,
                                      cuda=True, stream=stream.cuda_stream, ordinal=1)
    assert (code, msg) == (0, "")
    np.testing.assert_allclose(out.numpy(), 1.5 * xh * xh + yh, rtol=1e-6)
    (rec,) = fake.launches[before:]
    assert rec["stream"] == stream.cuda_stream  # XLA's stream, not the device's current one
    assert rec["ctx"] == cd.handle(dev.context)  # cuda:1's context (the ordinal XLA reported)
    assert rec["ctx"] != cd.handle(wp.get_device("cuda:0").context)
    assert rec["size"] == n


def test_cuda_handler_batches_and_zero_fills(fake, on_cuda):
    n, nb = 8, 3
    rng = np.random.default_rng(2)
    xh = rng.standard_normal((nb, n)).astype(np.float32)
    f = jax_kernel(accumulate, output_dims={"out": 1})
    lp = _cuda_launch(f, jnp.asarray(xh[0]))
    dev = wp.get_device("cuda:1")
    x = wp.array(xh, device=dev)
    out = wp.full((nb, 1), 7.0, dtype=float, device=dev)  # accumulated into: must be zeroed by the handler
    code, msg = jax_ffi.selftest_call(lp.forward_plan(), [(_ptr(x), (nb, n)), (_ptr(out), (nb, 1))], 1, cuda=True,
                                      stream=0, ordinal=1)
    assert (code, msg) == (0, "")
    np.testing.assert_allclose(out.numpy()[:, 0], xh.sum(axis=1), rtol=1e-5)


def test_cuda_handler_backward_gradients(fake, on_cuda):
    n = 16
    rng = np.random.default_rng(3)
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ct = rng.standard_normal(n).astype(np.float32)
    f = jax_kernel(scale_add, enable_backward=True)
    lp = _cuda_launch(f, jnp.asarray(xh), jnp.asarray(yh), 0.5)
    plan = lp.backward_plan([0, 1])
    dev = wp.get_device("cuda:0")
    x, y = wp.array(xh, device=dev), wp.array(yh, device=dev)
    out = wp.array(0.5 * xh * xh + yh, device=dev)
    cot = wp.array(ct, device=dev)
    gx, gy = wp.full(n, 9.0, dtype=float, device=dev), wp.full(n, 9.0, dtype=float, device=dev)
    cot_copy = wp.array(ct, device=dev)
    bufs = [(_ptr(a), (n,)) for a in (x, y, out, cot, gx, gy, cot_copy)]
    # an XLA without XLA_FFI_DeviceOrdinal_Get: the launch goes to the current CUDA device (cuda:0)
    code, msg = jax_ffi.selftest_call(plan, bufs, 4, cuda=True, stream=0, ordinal=1, with_ordinal=False)
    assert (code, msg) == (0, "")
    np.testing.assert_allclose(gx.numpy(), ct * xh, rtol=1e-5)  # d/dx (0.5 x^2 + y) = x
    np.testing.assert_allclose(gy.numpy(), ct, rtol=1e-6)


def test_cuda_handler_refuses_cpu_plans_and_reports_launch_errors(fake, on_cuda, monkeypatch):
    n = 4
    f_cpu = jax_kernel(accumulate, output_dims={"out": 1})
    monkeypatch.setattr(jax_ffi, "jax_platform", lambda arrays: ("cpu", 0))
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    f_cpu._launches.clear()
    f_cpu._diff.clear()
    jax.block_until_ready(f_cpu(jnp.asarray(x)))
    (lp_cpu,) = f_cpu._launches.values()
    bufs = [(x.ctypes.data, (n,)), (out.ctypes.data, (1,))]
    code, msg = jax_ffi.selftest_call(lp_cpu.forward_plan(), bufs, 1, cuda=True)
    assert code != 0 and "traced for the CPU" in msg
    # the same plan through the CPU handler works (host pointers)
    assert jax_ffi.selftest_call(lp_cpu.forward_plan(), bufs, 1, cuda=False) == (0, "")
    assert out[0] == pytest.approx(x.sum())
    # an error inside the CUDA launch path comes back as the call's error message
    monkeypatch.setattr(jax_ffi, "jax_platform", lambda arrays: ("cuda", 0))
    f = jax_kernel(accumulate, output_dims={"out": 1})
    lp = _cuda_launch(f, jnp.asarray(x))
    dev = wp.get_device("cuda:0")
    xd, od = wp.array(x, device=dev), wp.zeros(1, dtype=float, device=dev)
    code, msg = jax_ffi.selftest_call(lp.forward_plan(), [(_ptr(xd), (n,)), (_ptr(od), (1,))], 1, cuda=True,
                                      ordinal=5)
    assert code != 0 and "cuda:5" in msg


def test_xla_stream_shape():
    s = jax_ffi.XlaStream(0xABC)
    assert s.cuda_stream == 0xABC and s.is_capturing is False
    assert ctypes.sizeof(jax_ffi._Plan) == jax_ffi.get_dispatcher().lib.treadle_ffi_plan_size()
