"""The GPU suite: every test here runs on ``cuda:0`` and the whole directory is skipped without a CUDA device.

Run it with ``python tools/gpu_check.py`` (suite + benchmarks + summary) or ``python -m pytest tests/gpu``.

``TREADLE_GPU_DRY_RUN=1`` runs the suite without a GPU against the fake driver of ``tests/cuda`` (launches run the
CPU build, binaries are stand-ins): it checks the tests themselves and the host side, not CUDA. Tests that need
device-side behaviour carry the ``needs_device`` mark and are skipped then.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import treadle as wp

DRY_RUN = bool(os.environ.get("TREADLE_GPU_DRY_RUN"))

if DRY_RUN:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cuda"))
    from fake_driver import FakeDriver, cpu_executor

    from treadle._src.backends.cuda import build as _cb
    from treadle._src.runtime import cuda_driver as _cd

    def _stub_compile(items: list, options: object) -> None:
        from treadle._src.runtime.cache import get_cache

        for it in items:
            p = get_cache().root / f"dry_{it.key}.cubin"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"\x7fELF stand-in")
            it.binary_path = p

    _cb.compile_cuda_batch = _stub_compile  # type: ignore[assignment]
    _fake = FakeDriver(ndev=1)
    _fake.executor = cpu_executor()
    _cd.use_driver(_fake)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_device: needs device-side behaviour (skipped in the dry run)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if DRY_RUN:
        skip_dev = pytest.mark.skip(reason="dry run: needs device-side behaviour")
        for item in items:
            if item.get_closest_marker("needs_device") is not None:
                item.add_marker(skip_dev)
        return
    if wp.is_cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (the GPU suite runs when a GPU is present)")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)


@pytest.fixture
def dev() -> wp.Device:
    """The first CUDA device (made current for the test)."""
    d = wp.get_device("cuda:0")
    with wp.ScopedDevice(d):
        yield d
