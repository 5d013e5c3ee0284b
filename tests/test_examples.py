"""The examples run and agree with their NumPy references (small sizes)."""

from __future__ import annotations

from treadle.examples import nbody, saxpy, stencil


def test_saxpy_example():
    assert saxpy.run(10000) < 1e-5


def test_nbody_example():
    r = nbody.run(128, 20, quiet=True)
    assert r["error"] < 1e-4
    assert r["drift"] < 1e-4


def test_stencil_example():
    assert stencil.run(24, 5) < 1e-5
