"""The public modules: imported lazily, reachable through the Warp alias, names as the reference has them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _run(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)] if not args else
                       [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_import_treadle_does_not_import_sparse_or_solvers():
    out = _run("""
        import sys
        import treadle as wp
        print(sorted(m for m in sys.modules if 'sparse' in m or 'optim' in m))
        print(wp.sparse.bsr_zeros.__module__)
    """)
    first, second = out.splitlines()
    assert first == "[]"
    assert second == "treadle._src.sparse.matrix"


def test_warp_alias_resolves_sparse_and_linear(tmp_path):
    script = tmp_path / "uses_warp.py"
    script.write_text(textwrap.dedent("""
        import warp as wp
        import warp.optim.linear
        import warp.sparse
        from warp.optim.linear import cg
        from warp.sparse import bsr_diag
        import treadle
        assert warp.sparse is treadle.sparse and warp.optim.linear is treadle.optim.linear
        A = bsr_diag(wp.array([2.0, 4.0], dtype=wp.float64))
        x = wp.zeros(2, dtype=wp.float64)
        cg(A, wp.array([2.0, 2.0], dtype=wp.float64), x)
        print(x.numpy().tolist())
    """))
    out = _run("", "-m", "treadle.warp_compat", str(script))
    assert out.strip() == "[1.0, 0.5]"


def test_public_names_match_the_reference():
    import treadle.optim.linear as lin
    import treadle.sparse as sp

    reference_sparse = {
        "BSR_STATUS_ROW_CAPACITY_EXCEEDED", "BSR_STATUS_SUCCESS", "BsrMatrix", "BsrTripletMap", "bsr_assign",
        "bsr_axpy", "bsr_axpy_work_arrays", "bsr_block_index", "bsr_compress", "bsr_copy", "bsr_diag",
        "bsr_from_triplets", "bsr_get_diag", "bsr_identity", "bsr_matrix_t", "bsr_mm", "bsr_mm_work_arrays",
        "bsr_mv", "bsr_row_index", "bsr_scale", "bsr_set_diag", "bsr_set_from_mapped_values",
        "bsr_set_from_triplets", "bsr_set_identity", "bsr_set_transpose", "bsr_set_zero", "bsr_transposed",
        "bsr_zeros"}
    assert reference_sparse <= set(sp.__all__)
    reference_linear = {"BiCGSTAB", "CG", "CR", "FSAI", "GMRES", "LinearOperator", "LinearSolverState", "aslinearoperator",
                        "bicgstab", "cg", "cr", "gmres", "preconditioner"}
    assert reference_linear <= set(lin.__all__)
    assert all(hasattr(lin, n) for n in lin.__all__) and all(hasattr(sp, n) for n in sp.__all__)
