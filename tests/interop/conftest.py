"""Fixtures of the interop tests."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import treadle as wp


@pytest.fixture
def struct_dtype() -> object:
    """A struct element type: ``@wp.struct`` when available, else a minimal stand-in with the same protocol."""
    if hasattr(wp, "struct"):

        @wp.struct
        class Particle:
            x: float
            v: wp.vec3

        return Particle

    class CParticle(ctypes.Structure):
        _fields_ = [("x", ctypes.c_float), ("v", ctypes.c_float * 3)]

    class StandIn:
        ctype = CParticle
        key = "Particle"

        @staticmethod
        def numpy_dtype() -> object:
            return np.dtype([("x", np.float32), ("v", np.float32, 3)])

    return StandIn
