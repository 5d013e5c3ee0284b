"""``treadle.geometry`` runs on the CPU: its tests take the cpu device only."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["cpu"])
def device(request: pytest.FixtureRequest) -> str:
    """The devices the geometry library is tested on."""
    return request.param
