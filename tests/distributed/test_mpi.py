"""The MPI domain-decomposition example under mpirun equals the single-process run bit for bit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py")
MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun (Open MPI or MPICH) not installed")


def _mpirun(n: int, *args: str) -> subprocess.CompletedProcess:
    cmd = [MPIRUN]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["--oversubscribe", "-np", str(n), sys.executable, "-m", "treadle.examples.distributed_heat", *args]
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", TREADLE_NUM_THREADS="1")
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


@pytest.mark.parametrize("ranks", [2, 4])
def test_distributed_heat_matches_single_process(ranks):
    r = _mpirun(ranks, "96", "60")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"on {ranks} rank(s)" in r.stdout
    assert "identical to the single-process run: True" in r.stdout


def test_uneven_decomposition():
    r = _mpirun(3, "50", "25")  # 50 rows over 3 ranks: 17/17/16
    assert r.returncode == 0, r.stdout + r.stderr
    assert "identical to the single-process run: True" in r.stdout


def test_arrays_pass_to_mpi_without_copies():
    from mpi4py import MPI

    import treadle as wp

    a = wp.zeros((4, 8), dtype=float)
    view = a.numpy()
    buf = MPI.memory.frombuffer(view[1]) if hasattr(MPI, "memory") else MPI.buffer.frombuffer(view[1])
    assert buf.address == a.ptr + a.strides[0]
    view[1, 3] = 7.0
    assert a.numpy()[1, 3] == 7.0


def test_treadle_arrays_are_mpi_buffers():
    """mpi4py takes Treadle arrays themselves (DLPack / array interface): a receive lands in the array's memory."""
    from mpi4py import MPI

    import treadle as wp

    comm = MPI.COMM_SELF
    a = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    b = wp.zeros((3, 4), dtype=float)
    ptr = b.ptr
    comm.Sendrecv(a, dest=0, recvbuf=b, source=0)
    assert b.ptr == ptr
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    v = wp.zeros(2, dtype=wp.vec3)
    comm.Sendrecv([np.ones(6, np.float32), MPI.FLOAT], dest=0, recvbuf=[v, MPI.FLOAT], source=0)
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 3)))
