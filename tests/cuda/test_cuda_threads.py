"""CUDA launches from several threads at once (fake driver): a new kernel is built and loaded once per device."""

from __future__ import annotations

import threading
import typing

import numpy as np
import pytest
from fake_driver import cpu_backed_driver

import treadle as wp
from treadle._src.backends.cuda import build as cb


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake driver whose launches run the CPU build; CUDA binaries are stand-ins (no NVRTC)."""
    with cpu_backed_driver(tmp_path, monkeypatch) as drv:
        yield drv


def test_first_cuda_launch_from_threads_loads_once(fake, monkeypatch):
    @wp.kernel(module="unique")
    def triple(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * 3.0

    loads: list[typing.Any] = []
    real = cb.load_cuda_kernel

    def counted(inst: typing.Any, device: typing.Any, adjoint: bool = False) -> typing.Any:
        loads.append((id(inst), device.alias, adjoint))
        return real(inst, device, adjoint=adjoint)

    monkeypatch.setattr(cb, "load_cuda_kernel", counted)  # what CudaPlan calls
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def body(t: int) -> None:
        try:
            x = wp.array(np.arange(16, dtype=np.float32) + t, device="cuda:0")
            y = wp.zeros(16, dtype=float, device="cuda:0")
            barrier.wait()
            wp.launch(triple, dim=16, inputs=[x], outputs=[y], device="cuda:0")
            np.testing.assert_allclose(y.numpy(), (np.arange(16) + t) * 3.0)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    assert loads == [loads[0]], "the kernel was built and loaded more than once"
