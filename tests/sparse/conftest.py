"""Fixtures of the sparse-matrix tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _sparse_module() -> None:
    import treadle.sparse  # noqa: F401 - a lazy submodule: make wp.sparse reachable
