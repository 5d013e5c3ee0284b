"""The spatial data structures run on the CPU for now: their tests take the cpu device only."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["cpu"])
def device(request: pytest.FixtureRequest) -> str:
    """The devices the geometry structures support."""
    return request.param
