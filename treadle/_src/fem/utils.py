"""Mesh topologies of dense grids: triangles, quadrilaterals, tetrahedra and hexahedra over a vertex lattice.

Vertex ``(i, j)`` of an ``(Nx + 1) x (Ny + 1)`` lattice is ``i * (Ny + 1) + j`` (and ``(i * (Ny + 1) + j) *
(Nz + 1) + k`` in 3D), as the positions of :class:`Grid2D`/:class:`Grid3D` vertices.
"""

import numpy as np


def _v2(ny: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    return i * (ny + 1) + j


def _v3(ny: int, nz: int, i: np.ndarray, j: np.ndarray, k: np.ndarray) -> np.ndarray:
    return (i * (ny + 1) + j) * (nz + 1) + k


def grid_to_quads(Nx: int, Ny: int) -> np.ndarray:  # noqa: N803 - reference argument names
    """Quadrilaterals of an ``Nx x Ny`` cell grid, counter-clockwise, as an ``(Nx * Ny, 4)`` int array.

    Args:
        Nx: cells along x.
        Ny: cells along y.

    """
    i, j = (a.reshape(-1) for a in np.meshgrid(np.arange(Nx), np.arange(Ny), indexing="ij"))
    return np.stack([_v2(Ny, i, j), _v2(Ny, i + 1, j), _v2(Ny, i + 1, j + 1), _v2(Ny, i, j + 1)],
                    axis=1).astype(np.int32)


def grid_to_tris(Nx: int, Ny: int) -> np.ndarray:  # noqa: N803
    """Two counter-clockwise triangles per cell of an ``Nx x Ny`` grid (split along the ``(0,0)-(1,1)`` diagonal).

    Args:
        Nx: cells along x.
        Ny: cells along y.

    Returns:
        A ``(2 * Nx * Ny, 3)`` int array.

    """
    q = grid_to_quads(Nx, Ny)
    tris = np.empty((2 * len(q), 3), dtype=np.int32)
    tris[0::2] = q[:, [0, 1, 2]]
    tris[1::2] = q[:, [0, 2, 3]]
    return tris


def grid_to_hexes(Nx: int, Ny: int, Nz: int) -> np.ndarray:  # noqa: N803
    """Hexahedra of an ``Nx x Ny x Nz`` cell grid (bottom face counter-clockwise, then the top face).

    Args:
        Nx: cells along x.
        Ny: cells along y.
        Nz: cells along z.

    Returns:
        An ``(Nx * Ny * Nz, 8)`` int array.

    """
    i, j, k = (a.reshape(-1) for a in np.meshgrid(np.arange(Nx), np.arange(Ny), np.arange(Nz), indexing="ij"))
    corners = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
    return np.stack([_v3(Ny, Nz, i + a, j + b, k + c) for a, b, c in corners], axis=1).astype(np.int32)


def _five_tets(parity: int) -> list[tuple[tuple[int, int, int], ...]]:
    """The five tetrahedra of a unit cube: a central one on the corners of one bit parity, and four corner ones."""
    corners = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    central = [p for p in corners if sum(p) % 2 == parity]
    others = [p for p in corners if sum(p) % 2 != parity]
    tets = [tuple(central)]
    for o in others:
        nbrs = [p for p in central if sum(abs(p[d] - o[d]) for d in range(3)) == 1]
        tets.append((o, *nbrs))
    out = []
    for t in tets:  # positive orientation
        p = np.array(t, dtype=np.float64)
        if np.linalg.det(np.stack([p[1] - p[0], p[2] - p[0], p[3] - p[0]])) < 0:
            t = (t[0], t[2], t[1], t[3])
        out.append(t)
    return out


def grid_to_tets(Nx: int, Ny: int, Nz: int) -> np.ndarray:  # noqa: N803
    """Five positively oriented tetrahedra per cell of an ``Nx x Ny x Nz`` grid.

    Neighbouring cells use mirrored decompositions (by the parity of ``i + j + k``), so faces match.

    Args:
        Nx: cells along x.
        Ny: cells along y.
        Nz: cells along z.

    Returns:
        A ``(5 * Nx * Ny * Nz, 4)`` int array.

    """
    i, j, k = (a.reshape(-1) for a in np.meshgrid(np.arange(Nx), np.arange(Ny), np.arange(Nz), indexing="ij"))
    parity = (i + j + k) % 2
    out = np.empty((len(i), 5, 4), dtype=np.int64)
    for par in (0, 1):
        sel = parity == par
        for t, tet in enumerate(_five_tets(par)):
            for v, (a, b, c) in enumerate(tet):
                out[sel, t, v] = _v3(Ny, Nz, i[sel] + a, j[sel] + b, k[sel] + c)
    return out.reshape(-1, 4).astype(np.int32)
