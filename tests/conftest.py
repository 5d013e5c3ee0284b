"""Shared fixtures: a private kernel cache per test session and the ``device`` fixture (cpu, and cuda if present)."""

from __future__ import annotations

import os
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="treadle-test-cache-")
os.environ.setdefault("TREADLE_CACHE_PATH", _CACHE)
# Every compiler pass verifies its result in full (structure and types; compiler/ir.py: verify_pass).
os.environ.setdefault("TREADLE_VERIFY_IR", "1")

import treadle as wp  # noqa: E402

wp.config.kernel_cache_dir = os.environ["TREADLE_CACHE_PATH"]


def _devices() -> list[str]:
    devs = ["cpu"]
    if wp.is_cuda_available():
        devs.append("cuda:0")
    return devs


@pytest.fixture(params=_devices())
def device(request: pytest.FixtureRequest) -> str:
    """Each test using this fixture runs once per available device."""
    return request.param
