"""Helpers for finite-element example programs: meshes of boxes, Krylov solves of BSR systems, saddle-point
systems, block-diagonal inversion, a frame progress bar and a field plotter.

Programs written for the reference import these as ``warp.examples.fem.utils``; under the Warp alias that name is
this module. Each function is Treadle's own implementation of the documented behaviour.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

import treadle as wp
import treadle.fem as fem
from treadle.optim import linear
from treadle.sparse import BsrMatrix, bsr_get_diag, bsr_mv, bsr_transposed

__all__ = ["Plot", "SaddleSystem", "bsr_cg", "bsr_solve_saddle", "gen_hexmesh", "gen_quadmesh", "gen_tetmesh",
           "gen_trimesh", "gen_volume", "invert_diagonal_bsr_matrix", "progress_bar"]


# ------------------------------------------------------------------------------------------------ meshes
def _lattice(res: Any, lo: Any, hi: Any, dim: int) -> np.ndarray:
    axes = [np.linspace(float(lo[d]), float(hi[d]), int(res[d]) + 1) for d in range(dim)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, dim)


def _bounds(lo: Any, hi: Any, dim: int) -> tuple[Any, Any]:
    return (lo if lo is not None else [0.0] * dim), (hi if hi is not None else [1.0] * dim)


def gen_trimesh(res: Any, bounds_lo: Any = None, bounds_hi: Any = None) -> tuple[Any, Any]:
    """Two triangles per cell of a ``res[0] x res[1]`` grid of the box: ``(positions, triangle vertex indices)``.

    Args:
        res: cells along x and y.
        bounds_lo: lower corner (origin by default).
        bounds_hi: upper corner (``(1, 1)`` by default).

    """
    lo, hi = _bounds(bounds_lo, bounds_hi, 2)
    pos = _lattice(res, lo, hi, 2)
    return wp.array(pos, dtype=wp.vec2), wp.array(fem.utils.grid_to_tris(int(res[0]), int(res[1])), dtype=int)


def gen_quadmesh(res: Any, bounds_lo: Any = None, bounds_hi: Any = None) -> tuple[Any, Any]:
    """The cells of a ``res[0] x res[1]`` grid of the box as quadrilaterals: ``(positions, vertex indices)``.

    Args:
        res: cells along x and y.
        bounds_lo: lower corner.
        bounds_hi: upper corner.

    """
    lo, hi = _bounds(bounds_lo, bounds_hi, 2)
    pos = _lattice(res, lo, hi, 2)
    return wp.array(pos, dtype=wp.vec2), wp.array(fem.utils.grid_to_quads(int(res[0]), int(res[1])), dtype=int)


def gen_tetmesh(res: Any, bounds_lo: Any = None, bounds_hi: Any = None) -> tuple[Any, Any]:
    """Five tetrahedra per cell of a ``res`` grid of the box: ``(positions, tetrahedron vertex indices)``.

    Args:
        res: cells along x, y and z.
        bounds_lo: lower corner.
        bounds_hi: upper corner.

    """
    lo, hi = _bounds(bounds_lo, bounds_hi, 3)
    pos = _lattice(res, lo, hi, 3)
    tets = fem.utils.grid_to_tets(int(res[0]), int(res[1]), int(res[2]))
    return wp.array(pos, dtype=wp.vec3), wp.array(tets, dtype=int)


def gen_hexmesh(res: Any, bounds_lo: Any = None, bounds_hi: Any = None) -> tuple[Any, Any]:
    """The cells of a ``res`` grid of the box as hexahedra: ``(positions, hexahedron vertex indices)``.

    Args:
        res: cells along x, y and z.
        bounds_lo: lower corner.
        bounds_hi: upper corner.

    """
    lo, hi = _bounds(bounds_lo, bounds_hi, 3)
    pos = _lattice(res, lo, hi, 3)
    hexes = fem.utils.grid_to_hexes(int(res[0]), int(res[1]), int(res[2]))
    return wp.array(pos, dtype=wp.vec3), wp.array(hexes, dtype=int)


def gen_volume(res: Any, bounds_lo: Any = None, bounds_hi: Any = None, device: Any = None) -> Any:
    """A sparse volume covering the box with voxels of one grid cell (for ``fem.Nanogrid``).

    Args:
        res: voxels along x, y and z.
        bounds_lo: lower corner.
        bounds_hi: upper corner.
        device: device of the volume.

    """
    volume = getattr(wp, "Volume", None)
    if volume is None:
        raise NotImplementedError("gen_volume needs wp.Volume, which this Treadle build does not provide")
    lo, hi = _bounds(bounds_lo, bounds_hi, 3)
    lo = np.array([float(v) for v in lo])
    hi = np.array([float(v) for v in hi])
    res = np.array([int(v) for v in res])
    voxel = (hi - lo) / res
    # voxel ijk (0 <= ijk < res) covers the box's cell ijk: voxel sizes per axis, centres half a voxel in
    ijk = np.stack(np.meshgrid(*[np.arange(r) for r in res], indexing="ij"), -1).reshape(-1, 3)
    return volume.allocate_by_voxels(wp.array(ijk.astype(np.int32), dtype=wp.vec3i, device=device),
                                     voxel_size=tuple(float(v) for v in voxel), translation=tuple(lo + 0.5 * voxel),
                                     device=device)


# ------------------------------------------------------------------------------------------------ solvers
def _solver(method: str) -> Any:
    solvers = {"cg": linear.cg, "cr": linear.cr, "bicgstab": linear.bicgstab, "gmres": linear.gmres}
    if method not in solvers:
        raise ValueError(f"unknown solver method {method!r}; use one of {', '.join(solvers)}")
    return solvers[method]


def _to_host(v: Any) -> float:
    if isinstance(v, wp.array):
        return float(v.numpy().reshape(-1)[0])
    return float(v)


def bsr_cg(A: BsrMatrix, x: Any, b: Any, max_iters: int = 0, tol: float = 0.0001, check_every: int = 10,
           use_diag_precond: bool = True, mv_routine: Any = None, quiet: bool = False, method: str = "cg",
           M: Any = None, mv_routine_uses_multiple_cuda_contexts: bool = False) -> tuple[float, int]:
    """Solve ``A x = b`` with a Krylov method (``x`` holds the initial guess and receives the solution).

    Args:
        A: the matrix.
        x: initial guess, then solution.
        b: right-hand side.
        max_iters: iteration limit (0: the system size).
        tol: relative residual tolerance.
        check_every: iterations between residual checks (and printed lines).
        use_diag_precond: precondition with the inverse of the (block) diagonal.
        mv_routine: ``f(x, y, z, alpha, beta)`` computing ``z = alpha A x + beta y`` instead of ``A``.
        quiet: print nothing.
        method: ``"cg"``, ``"cr"``, ``"bicgstab"`` or ``"gmres"``.
        M: a preconditioner matrix or operator (instead of the diagonal one).
        mv_routine_uses_multiple_cuda_contexts: accepted for compatibility.

    Returns:
        ``(final residual norm, iterations)``.

    """
    solve = _solver(method)
    op: Any = A
    if M is not None:
        precond = linear.aslinearoperator(M)
    elif mv_routine is not None:
        op = linear.LinearOperator(A.shape, A.dtype, A.device, matvec=mv_routine)
        precond = None
    else:
        precond = linear.preconditioner(A, "diag") if use_diag_precond else None

    def report(i: Any, err: Any, atol: Any) -> None:
        print(f"{method}: iteration {int(_to_host(i))}, residual {_to_host(err):.6g} (target {_to_host(atol):.3g})")

    iters, err, atol = solve(op, b, x, tol=tol, maxiter=max_iters, M=precond, check_every=check_every,
                             callback=None if quiet else report, use_cuda_graph=False)
    iters, err, atol = int(_to_host(iters)), _to_host(err), _to_host(atol)
    if not quiet:
        status = "converged" if err <= atol else "stopped before converging"
        print(f"{method}: {status} after {iters} iterations, residual {err:.6g}")
    return err, iters


class SaddleSystem(linear.LinearOperator):
    """The saddle-point operator ``[A B^T; B 0]`` over vectors ``(u; p)`` stored one after the other.

    Args:
        A: the primal block (square, ``n_u`` block rows).
        B: the constraint block (``n_p`` block rows, ``n_u`` block columns).
        Bt: ``B``'s transpose (computed when ``None``).
        use_diag_precond: build the block-diagonal preconditioner ``[diag(A)^-1; (B diag(A)^-1 B^T)_diag^-1]``.

    """

    def __init__(self, A: BsrMatrix, B: BsrMatrix, Bt: BsrMatrix | None = None, use_diag_precond: bool = True) -> None:
        if B.ncol != A.nrow:
            raise ValueError(f"SaddleSystem: B has {B.ncol} block columns, A has {A.nrow} block rows")
        self._A, self._B = A, B
        self._Bt = bsr_transposed(B) if Bt is None else Bt
        self._nu = A.shape[0]
        self._np = B.shape[0]
        self._scalar = A.scalar_type
        self._u_vec = wp.types.vector(A.block_shape[0], A.scalar_type) if A.block_shape[0] > 1 else A.scalar_type
        self._p_vec = wp.types.vector(B.block_shape[0], B.scalar_type) if B.block_shape[0] > 1 else B.scalar_type
        n = self._nu + self._np
        super().__init__((n, n), A.scalar_type, A.device, matvec=self._matvec)
        self._preconditioner = self._diagonal_preconditioner() if use_diag_precond else None

    @property
    def preconditioner(self) -> Any:
        """The block-diagonal preconditioner (``None`` without one)."""
        return self._preconditioner

    def u_slice(self, a: Any) -> Any:
        """The primal part of a saddle vector, as an array of the primal block type (a view)."""
        return _view(a, 0, self._A.nrow, self._u_vec)

    def p_slice(self, a: Any) -> Any:
        """The constraint part of a saddle vector (a view)."""
        offset = self._nu * np.dtype(wp.dtype_to_numpy(self._scalar)).itemsize
        return _view(a, offset, self._B.nrow, self._p_vec)

    def _matvec(self, x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        xu, xp = self.u_slice(x), self.p_slice(x)
        zu, zp = self.u_slice(z), self.p_slice(z)
        if z.ptr != y.ptr:
            wp.copy(z, y)
        # z_u = alpha (A x_u + B^T x_p) + beta y_u;  z_p = alpha B x_u + beta y_p
        bsr_mv(self._A, xu, zu, alpha=alpha, beta=beta)
        bsr_mv(self._Bt, xp, zu, alpha=alpha, beta=1.0)
        bsr_mv(self._B, xu, zp, alpha=alpha, beta=beta)

    def _diagonal_preconditioner(self) -> Any:
        A, B = self._A, self._B
        mu = linear.preconditioner(A, "diag")
        a_diag = bsr_get_diag(A)
        bs = B.block_shape[0]
        schur_t = wp.types.matrix(shape=(bs, bs), dtype=B.scalar_type)
        schur = wp.empty(B.nrow, dtype=schur_t, device=A.device)
        a_blocks = a_diag if A.block_shape != (1, 1) else a_diag.view(wp.types.matrix(shape=(1, 1),
                                                                                       dtype=A.scalar_type))
        b_blocks = B.values if B.block_shape != (1, 1) else B.values.view(wp.types.matrix(shape=(1, 1),
                                                                                          dtype=B.scalar_type))
        wp.launch(_schur_inverse_diagonal, dim=B.nrow, inputs=[B.offsets, B.columns, b_blocks, a_blocks, schur],
                  device=A.device)
        mp = linear.aslinearoperator(schur if bs > 1 else schur.view(B.scalar_type))

        def apply(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
            mu.matvec(self.u_slice(x), self.u_slice(y), self.u_slice(z), alpha, beta)
            mp.matvec(self.p_slice(x), self.p_slice(y), self.p_slice(z), alpha, beta)

        return linear.LinearOperator(self.shape, self.dtype, self.device, matvec=apply)


def _view(a: Any, byte_offset: int, count: int, dtype: Any) -> Any:
    return wp.array(ptr=a.ptr + byte_offset, dtype=dtype, shape=(count,), device=a.device, copy=False)


@wp.kernel(enable_backward=False)
def _schur_inverse_diagonal(offsets: wp.array(dtype=int), columns: wp.array(dtype=int),
                            b_values: wp.array(dtype=Any), a_diag: wp.array(dtype=Any),
                            out: wp.array(dtype=Any)):
    row = wp.tid()
    acc = out.dtype()
    for k in range(offsets[row], offsets[row + 1]):
        b = b_values[k]
        acc += b * fem.linalg.inverse_qr(a_diag[columns[k]]) * wp.transpose(b)
    out[row] = fem.linalg.inverse_qr(acc)


def bsr_solve_saddle(saddle_system: SaddleSystem, x_u: Any, x_p: Any, b_u: Any, b_p: Any, max_iters: int = 0,
                     tol: float = 0.0001, check_every: int = 10, quiet: bool = False,
                     method: str = "bicgstab") -> tuple[float, int]:
    """Solve ``[A B^T; B 0] (x_u; x_p) = (b_u; b_p)`` with a Krylov method (``x_u``, ``x_p`` updated).

    Args:
        saddle_system: the operator.
        x_u: primal initial guess and solution.
        x_p: multiplier initial guess and solution.
        b_u: primal right-hand side.
        b_p: constraint right-hand side.
        max_iters: iteration limit.
        tol: relative residual tolerance.
        check_every: iterations between residual checks.
        quiet: print nothing.
        method: ``"bicgstab"`` (default), ``"gmres"``, ``"cr"`` or ``"cg"``.

    Returns:
        ``(final residual norm, iterations)``.

    """
    n = saddle_system.shape[0]
    x = wp.empty(n, dtype=saddle_system._scalar, device=saddle_system.device)
    b = wp.empty(n, dtype=saddle_system._scalar, device=saddle_system.device)
    wp.copy(saddle_system.u_slice(x), x_u)
    wp.copy(saddle_system.p_slice(x), x_p)
    wp.copy(saddle_system.u_slice(b), b_u)
    wp.copy(saddle_system.p_slice(b), b_p)
    solve = _solver(method)

    def report(i: Any, err: Any, atol: Any) -> None:
        print(f"{method}: iteration {int(_to_host(i))}, residual {_to_host(err):.6g} (target {_to_host(atol):.3g})")

    iters, err, atol = solve(saddle_system, b, x, tol=tol, maxiter=max_iters, M=saddle_system.preconditioner,
                             check_every=check_every, callback=None if quiet else report, use_cuda_graph=False)
    iters, err, atol = int(_to_host(iters)), _to_host(err), _to_host(atol)
    wp.copy(x_u, saddle_system.u_slice(x))
    wp.copy(x_p, saddle_system.p_slice(x))
    if not quiet:
        status = "converged" if err <= atol else "stopped before converging"
        print(f"{method}: {status} after {iters} iterations, residual {err:.6g}")
    return err, iters


@wp.kernel(enable_backward=False)
def _invert_blocks(values: wp.array(dtype=Any)):
    i = wp.tid()
    values[i] = fem.linalg.inverse_qr(values[i])


@wp.kernel(enable_backward=False)
def _invert_scalars(values: wp.array(dtype=Any)):
    i = wp.tid()
    v = values[i]
    values[i] = wp.where(v == type(v)(0.0), v, type(v)(1.0) / v)


def invert_diagonal_bsr_matrix(A: BsrMatrix) -> None:
    """Invert each block of a block-diagonal matrix in place (a lumped mass matrix, for instance).

    Args:
        A: the matrix (one block per row, on the diagonal).

    """
    kernel = _invert_scalars if A.block_shape == (1, 1) else _invert_blocks
    wp.launch(kernel, dim=A.nnz_sync() if hasattr(A, "nnz_sync") else A.nnz, inputs=[A.values], device=A.device)


# ------------------------------------------------------------------------------------------------ frames, plots
def progress_bar(num_frames: int, quiet: bool = False) -> Iterator[tuple[int, Any]]:
    """Iterate over frames, showing progress: yields ``(frame, set_info)``; ``set_info(key, value)`` adds a metric.

    Args:
        num_frames: number of frames.
        quiet: show nothing.

    """
    info: dict[str, Any] = {}
    start = time.perf_counter()

    def set_info(key: str, value: Any) -> None:
        info[key] = value

    def show(done: int, end: str) -> None:
        if quiet:
            return
        width = 30
        filled = width * done // max(num_frames, 1)
        extra = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in info.items())
        sys.stdout.write(f"\r[{'=' * filled}{' ' * (width - filled)}] {done}/{num_frames} "
                         f"{time.perf_counter() - start:.1f}s {extra}{end}")
        sys.stdout.flush()

    for k in range(num_frames):
        yield k, set_info
        show(k + 1, "")
    show(num_frames, "\n")


class Plot:
    """Collects snapshots of discrete fields and plots them with matplotlib.

    Args:
        stage: a USD stage path or object to also write the fields to (needs the ``render`` extra).
        default_point_radius: radius of points drawn for fields without a triangulation.

    """

    def __init__(self, stage: Any = None, default_point_radius: float = 0.01) -> None:
        self.default_point_radius = default_point_radius
        self._fields: dict[str, tuple[Any, list[np.ndarray]]] = {}
        self._usd = None
        if stage is not None:
            from treadle.render import UsdRenderer

            self._usd = UsdRenderer(stage)
        self._time = 0.0

    def begin_frame(self, time: float) -> None:
        """Start a frame at ``time``."""
        self._time = time
        if self._usd is not None:
            self._usd.begin_frame(time)

    def end_frame(self) -> None:
        """End the frame."""
        if self._usd is not None:
            self._usd.end_frame()

    def add_field(self, name: str, field: Any) -> None:
        """Record the current values of ``field`` under ``name``."""
        if name not in self._fields:
            self._fields[name] = (field, [])
        self._fields[name][1].append(field.dof_values.numpy().copy())
        if self._usd is not None:
            pos = field.space.node_positions().numpy()
            if pos.shape[1] == 2:
                pos = np.concatenate([pos, np.zeros((len(pos), 1))], axis=1)
            self._usd.render_points(name, pos.astype(np.float32), radius=self.default_point_radius)

    @property
    def fields(self) -> dict[str, tuple[Any, list[np.ndarray]]]:
        """The recorded fields: ``{name: (field, [values per frame])}``."""
        return self._fields

    def plot(self, options: dict[str, Any] | None = None, backend: str = "auto", save: str | None = None) -> None:
        """Draw the last snapshot of each field (2D geometries), showing the figure or saving it to ``save``.

        Args:
            options: per-field options (``{"name": {"clim": (lo, hi)}}``).
            backend: ``"matplotlib"`` or ``"auto"``.
            save: image path to write instead of opening a window.

        """
        try:
            import matplotlib

            if save is not None:
                matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("Plot.plot needs matplotlib (pip install matplotlib)") from None
        options = options or {}
        fig, axes = plt.subplots(1, max(len(self._fields), 1), squeeze=False, figsize=(5 * len(self._fields), 4))
        for ax, (name, (field, frames)) in zip(axes[0], self._fields.items()):
            pos = field.space.node_positions().numpy()
            values = frames[-1]
            mag = np.linalg.norm(values.reshape(len(values), -1), axis=1) if values.ndim > 1 else values
            if pos.shape[1] == 2:
                try:
                    tris = field.space.node_triangulation()
                    art = ax.tripcolor(pos[:, 0], pos[:, 1], tris, mag, shading="gouraud")
                except NotImplementedError:
                    art = ax.scatter(pos[:, 0], pos[:, 1], c=mag)
                if values.ndim > 1 and values.shape[1] == 2:
                    ax.quiver(pos[:, 0], pos[:, 1], values[:, 0], values[:, 1])
            else:
                art = ax.scatter(pos[:, 0], pos[:, 1], c=mag)
            clim = options.get(name, {}).get("clim")
            if clim is not None:
                art.set_clim(*clim)
            ax.set_title(name)
            ax.set_aspect("equal")
            fig.colorbar(art, ax=ax)
        if save is not None:
            fig.savefig(save)
            plt.close(fig)
        else:
            plt.show()
