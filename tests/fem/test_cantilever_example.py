"""The cantilever gallery example, small: the tip deflection agrees with beam theory and the picture is drawn."""

from __future__ import annotations

import os

import numpy as np

from treadle.examples import _image, cantilever


def test_cantilever_tip_deflection_matches_beam_theory(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    r = cantilever.run(str(tmp_path), nx=20, ny=2, degree=2, size=160, quiet=True)
    assert r["residual"] < 1e-6
    assert abs(r["ratio_euler_bernoulli"] - 1.0) < 0.03
    theory = cantilever.beam_theory()
    assert theory["timoshenko"] > theory["euler_bernoulli"]
    np.testing.assert_allclose(theory["euler_bernoulli"], 4.0)  # P L^3 / (3 E H^3 / 12) for the module's beam
    img = _image.read_png(os.path.join(str(tmp_path), "cantilever.png"))
    assert img.shape[1] == 160 and img.std() > 5.0


def test_cantilever_converges_under_refinement() -> None:
    coarse = cantilever.solve(10, 1, 1)["tip_deflection"]
    fine = cantilever.solve(40, 4, 1)["tip_deflection"]
    quad = cantilever.solve(40, 4, 2)["tip_deflection"]
    # degree-1 elements lock in bending: refining (or raising the degree) loosens them towards beam theory
    assert coarse < fine < quad
    assert abs(quad / cantilever.beam_theory()["euler_bernoulli"] - 1.0) < 0.02
