"""A gradient that reaches a builtin without an adjoint is reported (``wp.DroppedGradientWarning``, once per place,
at the user's line) when the backward pass is built, instead of silently becoming 0.

Builtins whose derivative is 0 wherever it exists (``floor``, ``round``, ``step`` ...) and calls with constant
arguments stay silent. (The check is per value: a call whose result reaches the loss only through an integer field,
such as ``q.face``, is still reported.)
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import treadle as wp


def _mesh() -> wp.Mesh:
    points = wp.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), dtype=wp.vec3)
    return wp.Mesh(points=points, indices=wp.array([0, 1, 2], dtype=int))


@wp.kernel
def _uses_u(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, p[i], 10.0)  # <- u depends on p, and the query has no adjoint
    out[i] = q.u + wp.floor(p[i][0]) * 2.0


@wp.kernel
def _quiet(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, wp.vec3(0.1, 0.1, 1.0), 10.0)  # constant query point
    out[i] = q.u * p[i][0] + wp.round(p[i][1]) + wp.step(p[i][2])


def _backward(kernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[warnings.WarningMessage]:
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))  # the backward pass gets built here
    mesh = _mesh()
    p = wp.array([[0.2, 0.3, 1.0]], dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 1, inputs=[mesh.id, p, out])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={out: wp.ones(1, dtype=float)})
    return [w for w in caught if issubclass(w.category, wp.DroppedGradientWarning)]


def test_a_dropped_gradient_is_reported_at_its_line(tmp_path, monkeypatch):
    caught = _backward(_uses_u, tmp_path, monkeypatch)
    assert len(caught) == 1
    lines, first = inspect.getsourcelines(_uses_u.func)
    line = first + next(i for i, text in enumerate(lines) if "# <-" in text)
    text = str(caught[0].message)
    assert f"{__file__}:{line}:" in text and "'mesh_query_point_no_sign' has no adjoint" in text


def test_zero_derivatives_and_unreachable_calls_are_quiet(tmp_path, monkeypatch):
    assert _backward(_quiet, tmp_path, monkeypatch) == []
