"""Sides of unstructured meshes, found once on the host from the cells' vertex lists.

Each cell facet (edge of a triangle or quadrilateral, face of a tetrahedron or hexahedron) is keyed by its sorted
vertices; facets with the same key are one side. The side's first cell (lowest index) is its inner cell, the second
(if any) its outer cell. The side's vertices are listed in the inner cell's outward orientation, flipped where
needed so that the side normal points away from the inner cell's centroid (meshes with inverted cells still get
outward normals). For both cells, the side records which cell-local vertex each side vertex is, from which side
and cell reference coordinates convert into each other.
"""

from dataclasses import dataclass

import numpy as np

from ..element import Element

#: Facets of each cell shape: cell-local vertex lists, outward oriented for positively oriented cells.
CELL_FACETS = {
    Element.TRIANGLE: [(1, 2), (2, 0), (0, 1)],
    Element.SQUARE: [(0, 1), (1, 2), (2, 3), (3, 0)],
    Element.TETRAHEDRON: [(1, 2, 3), (0, 3, 2), (0, 1, 3), (0, 2, 1)],
    Element.CUBE: [(0, 4, 7, 3), (1, 2, 6, 5), (0, 1, 5, 4), (3, 7, 6, 2), (0, 3, 2, 1), (4, 5, 6, 7)],
}


@dataclass
class MeshSides:
    """Side data of a mesh (host arrays).

    Attributes:
        vertices: ``(sides, facet vertex count)`` vertex indices, outward from the inner cell.
        inner: inner cell of each side.
        outer: outer cell (the inner cell on boundary sides).
        inner_local: cell-local index, in the inner cell, of each side vertex.
        outer_local: the same in the outer cell.
        boundary: indices of the boundary sides.

    """

    vertices: np.ndarray
    inner: np.ndarray
    outer: np.ndarray
    inner_local: np.ndarray
    outer_local: np.ndarray
    boundary: np.ndarray


def _flip(order: np.ndarray) -> np.ndarray:
    """Reverse a facet's orientation (segments swap ends; polygons keep their first vertex)."""
    if order.shape[-1] == 2:
        return order[..., ::-1]
    return np.concatenate([order[..., :1], order[..., 1:][..., ::-1]], axis=-1)


def build_sides(cells: np.ndarray, element: Element, positions: np.ndarray) -> MeshSides:
    """The sides of a mesh (see the module documentation).

    Args:
        cells: ``(cell_count, vertices per cell)`` vertex indices.
        element: the cells' reference shape.
        positions: ``(vertex_count, dim)`` vertex positions (to orient normals).

    """
    facets = CELL_FACETS[element]
    n_cells = cells.shape[0]
    nf = len(facets)
    m = len(facets[0])
    local = np.array(facets, dtype=np.int64)  # nf, m
    fverts = cells[:, local]  # C, nf, m
    keys = np.sort(fverts, axis=2).reshape(-1, m)
    uniq, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if np.any(counts > 2):
        raise ValueError("mesh is not a manifold: a facet is shared by more than two cells")
    n_sides = len(uniq)
    flat_cell = np.repeat(np.arange(n_cells), nf)
    flat_facet = np.tile(np.arange(nf), n_cells)
    order = np.lexsort((flat_cell, inverse))  # by side, then by cell
    sides_sorted = inverse[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = sides_sorted[1:] != sides_sorted[:-1]
    inner_entry = order[first]
    second = ~first
    outer_entry = np.full(n_sides, -1, dtype=np.int64)
    outer_entry[sides_sorted[second]] = order[second]
    inner_cell = flat_cell[inner_entry]
    inner_facet = flat_facet[inner_entry]
    s_verts = fverts[inner_cell, inner_facet]  # S, m (global ids in the inner cell's orientation)
    s_inner_local = local[inner_facet].copy()

    # orient outward from the inner cell
    pos = np.asarray(positions, dtype=np.float64)
    centroid = pos[cells[inner_cell]].mean(axis=1)
    p = pos[s_verts]
    center = p.mean(axis=1)
    if m == 2:
        t = p[:, 1] - p[:, 0]
        if pos.shape[1] == 2:
            n = np.stack([t[:, 1], -t[:, 0]], axis=1)
        else:  # an edge of a surface mesh: the in-surface normal t x N, N the cell's normal
            cp = pos[cells[inner_cell]]
            if cells.shape[1] == 3:
                cn = np.cross(cp[:, 1] - cp[:, 0], cp[:, 2] - cp[:, 0])
            else:
                cn = np.cross(cp[:, 2] - cp[:, 0], cp[:, 3] - cp[:, 1])
            n = np.cross(t, cn)
    elif m == 3:
        n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    else:
        n = np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 1])
    flip = np.einsum("ij,ij->i", n, center - centroid) < 0.0
    s_verts[flip] = _flip(s_verts[flip])
    s_inner_local[flip] = _flip(s_inner_local[flip])

    outer_cell = inner_cell.copy()
    s_outer_local = s_inner_local.copy()
    has_outer = outer_entry >= 0
    oc = flat_cell[outer_entry[has_outer]]
    outer_cell[has_outer] = oc
    ocv = cells[oc]  # k, vertices per cell
    sv = s_verts[has_outer]  # k, m
    # cell-local index of each side vertex in the outer cell
    match = ocv[:, None, :] == sv[:, :, None]  # k, m, nv
    s_outer_local[has_outer] = np.argmax(match, axis=2)
    boundary = np.nonzero(~has_outer)[0]
    return MeshSides(s_verts.astype(np.int64), inner_cell.astype(np.int64), outer_cell.astype(np.int64),
                     s_inner_local.astype(np.int64), s_outer_local.astype(np.int64), boundary.astype(np.int64))
