"""2-D heat diffusion decomposed over MPI ranks, with halo exchange between neighbouring slabs.

Each rank owns a horizontal slab of rows plus one halo row above and below. Halo rows travel between ranks with
``mpi4py`` directly from the Treadle arrays' memory (``arr.numpy()`` is a zero-copy view on the CPU), so nothing is
copied on the way to MPI. Every cell is updated by the same kernel with the same arithmetic as in a single-process
run, so the gathered result equals the single-process result bit for bit.

Run: ``mpirun -np 4 python -m treadle.examples.distributed_heat [n] [steps]`` (or without ``mpirun`` for one
process). Rank 0 prints the comparison with a single-process run of the same problem.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import treadle as wp


@wp.kernel
def heat_step(u: wp.array2d(dtype=float), out: wp.array2d(dtype=float), row0: int, ny: int, k: float):
    i, j = wp.tid()  # i: local row including the halo row at 0, j: column
    g = row0 + i - 1  # global row
    nx = u.shape[1]
    if i == 0 or i == u.shape[0] - 1:
        return  # halo rows are owned by the neighbours
    if g <= 0 or g >= ny - 1 or j == 0 or j == nx - 1:
        out[i, j] = u[i, j]  # fixed boundary
        return
    c = u[i, j]
    out[i, j] = c + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * c)


def initial(n: int) -> np.ndarray:
    """A hot square in a cold plate; edges fixed at 0."""
    u = np.zeros((n, n), dtype=np.float32)
    u[n // 4 : n // 2, n // 3 : 2 * n // 3] = 100.0
    return u


def rows_of(rank: int, size: int, n: int) -> tuple[int, int]:
    """The global rows [start, stop) owned by ``rank``."""
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def simulate(n: int, steps: int, comm=None) -> np.ndarray | None:
    """Run ``steps`` updates; returns the full grid on rank 0 (``None`` elsewhere)."""
    rank = comm.Get_rank() if comm is not None else 0
    size = comm.Get_size() if comm is not None else 1
    r0, r1 = rows_of(rank, size, n)
    full = initial(n)
    local = np.zeros((r1 - r0 + 2, n), dtype=np.float32)
    local[1:-1] = full[r0:r1]
    if r0 > 0:
        local[0] = full[r0 - 1]
    if r1 < n:
        local[-1] = full[r1]
    a, b = wp.array(local), wp.array(local)
    up = rank - 1 if rank > 0 else None
    down = rank + 1 if rank < size - 1 else None
    for _ in range(steps):
        wp.launch(heat_step, dim=a.shape, inputs=[a, b, r0, n, 0.2])
        a, b = b, a
        if comm is not None:
            view = a.numpy()  # zero-copy: MPI reads and writes the Treadle array's memory
            if up is not None:
                comm.Sendrecv(view[1], dest=up, recvbuf=view[0], source=up)
            if down is not None:
                comm.Sendrecv(view[-2], dest=down, recvbuf=view[-1], source=down)
    mine = a.numpy()[1:-1].copy()
    if comm is None:
        return mine
    parts = comm.gather(mine, root=0)
    return np.concatenate(parts, axis=0) if rank == 0 else None


def main(n: int = 256, steps: int = 200) -> int:
    try:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    except ImportError:
        comm = None
    rank = comm.Get_rank() if comm is not None else 0
    size = comm.Get_size() if comm is not None else 1
    t0 = time.perf_counter()
    result = simulate(n, steps, comm if size > 1 else None)
    elapsed = time.perf_counter() - t0
    if rank != 0:
        return 0
    reference = simulate(n, steps, None)
    same = bool(np.array_equal(result, reference))
    print(f"distributed heat: {n}x{n} grid, {steps} steps on {size} rank(s) in {elapsed:.3f} s")
    print(f"total heat {float(result.sum()):.4f}; identical to the single-process run: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(*(int(x) for x in sys.argv[1:3])))
