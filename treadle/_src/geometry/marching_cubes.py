"""``MarchingCubes``: triangle meshes of iso-surfaces of scalar fields on regular grids.

The case table is derived here rather than typed in: for each of the 256 inside/outside patterns of a cube's
corners (inside: value < threshold), every cube face contributes one segment per run of inside corners along its
boundary (diagonal inside corners on a face stay separate), the segments chain into closed loops through the
crossed cube edges, and each loop is triangulated as a fan. Neighbouring cubes derive the same segments on their
shared face, so the output is watertight with consistently oriented triangles (normals toward larger values).

Extraction (four Treadle kernels and two prefix sums):

1. ``_mc_edge_counts``: per grid node, how many of its three forward grid edges cross the threshold;
2. ``_mc_verts``: one vertex per crossed grid edge, linearly interpolated along it -- differentiable, and
   recorded on an active ``Tape``, so gradients flow from the vertex positions back to the field;
3. ``_mc_cell_counts``: per cell, its case and triangle count;
4. ``_mc_tris``: the triangles, indexing the shared edge vertices.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..builtins.exports import exported_builtins
from ..lang.array import array
from ..lang.creation import empty, zeros
from ..lang.kernel import kernel
from ..lang.launch import launch
from ..runtime.device import get_device
from ..types import scalars
from ..types.vector import vec3f

tid = exported_builtins()["tid"]

#: Corner k of a cell sits at offset (k & 1, (k >> 1) & 1, (k >> 2) & 1).
CORNERS = tuple((k & 1, (k >> 1) & 1, (k >> 2) & 1) for k in range(8))
#: Cell edges as (corner, corner); edge e runs along axis e // 4 from its first corner.
EDGES = tuple((c, c | (1 << axis)) for axis in range(3) for c in range(8) if not c & (1 << axis))
#: Cell faces as corner cycles, counter-clockwise seen from outside the cell.
FACES = ((0, 4, 6, 2), (1, 3, 7, 5), (0, 1, 5, 4), (2, 6, 7, 3), (0, 2, 3, 1), (4, 5, 7, 6))
MAX_TRIS = 5


def _edge_index(a: int, b: int) -> int:
    return EDGES.index((min(a, b), max(a, b)))


def _case_triangles(case: int) -> list[tuple[int, int, int]]:
    """Triangles (as cell-edge triples) of one corner pattern."""
    inside = [bool(case >> k & 1) for k in range(8)]
    nxt: dict[int, int] = {}
    for face in FACES:
        for i in range(4):
            a, b = face[i], face[(i + 1) % 4]
            if inside[a] or not inside[b]:
                continue
            # a run of inside corners starts at b: follow it to its end
            j = (i + 1) % 4
            while inside[face[(j + 1) % 4]]:
                j = (j + 1) % 4
            enter = _edge_index(a, b)
            leave = _edge_index(face[j], face[(j + 1) % 4])
            nxt[enter] = leave
    tris: list[tuple[int, int, int]] = []
    seen: set[int] = set()
    for start in sorted(nxt):
        if start in seen:
            continue
        loop = [start]
        seen.add(start)
        while nxt[loop[-1]] != start:
            loop.append(nxt[loop[-1]])
            seen.add(loop[-1])
        tris += [(loop[0], loop[k], loop[k + 1]) for k in range(1, len(loop) - 1)]
    return tris


@lru_cache(maxsize=1)
def case_tables() -> tuple[np.ndarray, np.ndarray]:
    """``(tri_edges[256, 3 * MAX_TRIS], tri_counts[256])`` (int32, unused entries -1)."""
    edges = np.full((256, 3 * MAX_TRIS), -1, np.int32)
    counts = np.zeros(256, np.int32)
    for case in range(256):
        tris = _case_triangles(case)
        if len(tris) > MAX_TRIS:  # pragma: no cover - the construction never needs more
            raise AssertionError(f"case {case}: {len(tris)} triangles")
        counts[case] = len(tris)
        if tris:
            edges[case, : 3 * len(tris)] = np.array(tris, np.int32).reshape(-1)
    return edges, counts


def _edge_table() -> np.ndarray:
    """Per cell edge: the node offset (3) and the axis of the grid edge it lies on."""
    return np.array([(*CORNERS[a], e // 4) for e, (a, _) in enumerate(EDGES)], np.int32)


@kernel(enable_backward=False)
def _mc_edge_counts(field: array(dtype=float, ndim=3), threshold: float, counts: array(dtype=int, ndim=3)):
    i, j, k = tid()
    inside = field[i, j, k] < threshold
    n = 0
    if i + 1 < field.shape[0]:
        if (field[i + 1, j, k] < threshold) != inside:
            n += 1
    if j + 1 < field.shape[1]:
        if (field[i, j + 1, k] < threshold) != inside:
            n += 1
    if k + 1 < field.shape[2]:
        if (field[i, j, k + 1] < threshold) != inside:
            n += 1
    counts[i, j, k] = n


@kernel
def _mc_verts(field: array(dtype=float, ndim=3), threshold: float, lower: vec3f, spacing: vec3f,
              offsets: array(dtype=int, ndim=3), edge_vid: array(dtype=int, ndim=4), verts: array(dtype=vec3f)):
    i, j, k = tid()
    f0 = field[i, j, k]
    inside = f0 < threshold
    base = vec3f(float(i), float(j), float(k))
    v = offsets[i, j, k]
    for axis in range(3):
        ii = i
        jj = j
        kk = k
        if axis == 0:
            ii = i + 1
        if axis == 1:
            jj = j + 1
        if axis == 2:
            kk = k + 1
        if ii < field.shape[0] and jj < field.shape[1] and kk < field.shape[2]:
            f1 = field[ii, jj, kk]
            if (f1 < threshold) != inside:
                t = (threshold - f0) / (f1 - f0)
                p = base
                p[axis] = p[axis] + t
                verts[v] = lower + vec3f(p[0] * spacing[0], p[1] * spacing[1], p[2] * spacing[2])
                edge_vid[i, j, k, axis] = v
                v += 1


@kernel(enable_backward=False)
def _mc_cell_counts(field: array(dtype=float, ndim=3), threshold: float, tri_counts: array(dtype=int),
                    cases: array(dtype=int, ndim=3), counts: array(dtype=int, ndim=3)):
    i, j, k = tid()
    case = 0
    for c in range(8):
        if field[i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1)] < threshold:
            case = case | (1 << c)
    cases[i, j, k] = case
    counts[i, j, k] = tri_counts[case]


@kernel(enable_backward=False)
def _mc_tris(cases: array(dtype=int, ndim=3), offsets: array(dtype=int, ndim=3), tri_edges: array(dtype=int, ndim=2),
             tri_counts: array(dtype=int), edge_table: array(dtype=int, ndim=2), edge_vid: array(dtype=int, ndim=4),
             indices: array(dtype=int)):
    i, j, k = tid()
    case = cases[i, j, k]
    first = offsets[i, j, k]
    for t in range(tri_counts[case]):
        for c in range(3):
            e = tri_edges[case, 3 * t + c]
            vid = edge_vid[i + edge_table[e, 0], j + edge_table[e, 1], k + edge_table[e, 2], edge_table[e, 3]]
            indices[3 * (first + t) + c] = vid


def _exclusive_scan(counts: array) -> tuple[array, int]:
    c = counts.numpy()
    total = int(c.sum())
    offsets = np.empty(c.shape, np.int32)
    offsets.reshape(-1)[:] = np.cumsum(c.reshape(-1)) - c.reshape(-1)
    return array(offsets, dtype=scalars.int32, device=counts.device), total


def _as_vec3(v: Any, default: tuple[float, float, float]) -> np.ndarray:
    return np.asarray(default if v is None else [float(x) for x in v], np.float32)


def extract_surface(field: array, threshold: float = 0.0, lower: Any = None, upper: Any = None) -> tuple[array, array]:
    """The iso-surface of ``field`` at ``threshold``: ``(verts, indices)`` (vec3 positions, flat int32 triangles)."""
    if not isinstance(field, array) or field.ndim != 3:
        raise ValueError("MarchingCubes: field must be a 3-d array")
    if field.dtype is not scalars.float32:
        raise TypeError(f"MarchingCubes: field must have dtype float32, got {getattr(field.dtype, '__name__', field)}")
    nx, ny, nz = field.shape
    if min(nx, ny, nz) < 2:
        raise ValueError(f"MarchingCubes: the field needs at least 2 nodes on every axis, got {field.shape}")
    dev = field.device
    lo = _as_vec3(lower, (0.0, 0.0, 0.0))
    hi = _as_vec3(upper, (float(nx - 1), float(ny - 1), float(nz - 1)))
    spacing = (hi - lo) / np.array([nx - 1, ny - 1, nz - 1], np.float32)
    thr = float(threshold)
    tri_edges_np, tri_counts_np = case_tables()
    tri_edges = array(tri_edges_np, dtype=scalars.int32, device=dev)
    tri_counts = array(tri_counts_np, dtype=scalars.int32, device=dev)
    edge_table = array(_edge_table(), dtype=scalars.int32, device=dev)

    counts = empty((nx, ny, nz), dtype=scalars.int32, device=dev)
    launch(_mc_edge_counts, dim=(nx, ny, nz), inputs=[field, thr, counts], device=dev, record_tape=False)
    offsets, num_verts = _exclusive_scan(counts)
    verts = zeros(num_verts, dtype=vec3f, device=dev, requires_grad=field.requires_grad)
    edge_vid = zeros((nx, ny, nz, 3), dtype=scalars.int32, device=dev)
    launch(_mc_verts, dim=(nx, ny, nz),
           inputs=[field, thr, vec3f(*lo.tolist()), vec3f(*spacing.tolist()), offsets, edge_vid, verts], device=dev)

    cases = empty((nx - 1, ny - 1, nz - 1), dtype=scalars.int32, device=dev)
    cell_counts = empty((nx - 1, ny - 1, nz - 1), dtype=scalars.int32, device=dev)
    launch(_mc_cell_counts, dim=(nx - 1, ny - 1, nz - 1), inputs=[field, thr, tri_counts, cases, cell_counts],
           device=dev, record_tape=False)
    tri_offsets, num_tris = _exclusive_scan(cell_counts)
    indices = empty(3 * num_tris, dtype=scalars.int32, device=dev)
    if num_tris:
        launch(_mc_tris, dim=(nx - 1, ny - 1, nz - 1),
               inputs=[cases, tri_offsets, tri_edges, tri_counts, edge_table, edge_vid, indices], device=dev,
               record_tape=False)
    return verts, indices


class MarchingCubes:
    """Iso-surface extraction on an ``nx`` x ``ny`` x ``nz`` grid of nodes.

    Args:
        nx, ny, nz: grid nodes per axis.
        lower: position of node (0, 0, 0) (default: the origin).
        upper: position of node (nx - 1, ny - 1, nz - 1) (default: (nx - 1, ny - 1, nz - 1), i.e. node indices).
        device: the device of the fields.
        domain_bounds_lower_corner, domain_bounds_upper_corner: older names of ``lower`` and ``upper``.
        max_verts, max_tris: accepted for compatibility (outputs are sized exactly).

    The older positional form ``MarchingCubes(nx, ny, nz, max_verts, max_tris, device)`` is accepted too.
    After :meth:`surface`, :attr:`verts` holds the vertex positions and :attr:`indices` the triangles (flat int32).
    Gradients flow from ``verts`` to the field through the edge interpolation when the call runs under a ``Tape``.
    """

    #: The case table as plain tuples: corner offsets, cell edges (corner pairs), the range of each case's triangles
    #: (257 entries) and the cell edges of every triangle (3 per triangle).
    CUBE_CORNER_OFFSETS = CORNERS
    EDGE_TO_CORNERS = EDGES
    CASE_TO_TRI_RANGE = tuple(int(x) for x in np.concatenate([[0], np.cumsum(case_tables()[1])]))
    TRI_LOCAL_INDICES = tuple(int(x) for x in case_tables()[0].reshape(-1) if x >= 0)

    def __init__(self, nx: int, ny: int, nz: int, lower: Any = None, upper: Any = None, device: Any = None,
                 domain_bounds_lower_corner: Any = None, domain_bounds_upper_corner: Any = None, *,
                 max_verts: int = 0, max_tris: int = 0) -> None:
        if isinstance(lower, (int, np.integer)) or isinstance(upper, (int, np.integer)):
            max_verts, max_tris = int(lower or 0), int(upper or 0)  # older positional (max_verts, max_tris)
            lower = upper = None
        self.nx, self.ny, self.nz = int(nx), int(ny), int(nz)
        self.device = get_device(device)
        self.lower = lower if lower is not None else domain_bounds_lower_corner
        self.upper = upper if upper is not None else domain_bounds_upper_corner
        self.max_verts, self.max_tris = int(max_verts), int(max_tris)
        self.verts: array | None = None
        self.indices: array | None = None

    @property
    def domain_bounds_lower_corner(self) -> Any:
        """Older name of :attr:`lower`."""
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value: Any) -> None:
        self.lower = value

    @property
    def domain_bounds_upper_corner(self) -> Any:
        """Older name of :attr:`upper`."""
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value: Any) -> None:
        self.upper = value

    def resize(self, nx: int, ny: int, nz: int, max_verts: int | None = None, max_tris: int | None = None) -> None:
        """Change the grid size (``max_verts``/``max_tris`` are accepted for compatibility)."""
        self.nx, self.ny, self.nz = int(nx), int(ny), int(nz)
        if max_verts is not None:
            self.max_verts = int(max_verts)
        if max_tris is not None:
            self.max_tris = int(max_tris)

    def surface(self, field: array, threshold: float) -> None:
        """Extract the iso-surface of ``field`` (shape (nx, ny, nz)) at ``threshold`` into ``verts``/``indices``."""
        if not isinstance(field, array) or tuple(field.shape) != (self.nx, self.ny, self.nz):
            shape = getattr(field, "shape", None)
            raise ValueError(f"MarchingCubes.surface(): field shape {shape} does not match the grid "
                             f"({self.nx}, {self.ny}, {self.nz})")
        self.verts, self.indices = extract_surface(field, threshold, self.lower, self.upper)

    @classmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower: Any = None, upper: Any = None
                ) -> tuple[array, array]:
        """Stateless extraction: ``(verts, indices)`` of the iso-surface of ``field`` at ``threshold``."""
        return extract_surface(field, threshold, lower, upper)

    @staticmethod
    def extract_surface_marching_cubes(field: array, threshold: float = 0.0, domain_bounds_lower_corner: Any = None,
                                       domain_bounds_upper_corner: Any = None) -> tuple[array, array]:
        """Older name of :meth:`extract`."""
        return extract_surface(field, threshold, domain_bounds_lower_corner, domain_bounds_upper_corner)
