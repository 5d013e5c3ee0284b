"""``PicQuadrature``: particles as quadrature points (particle-in-cell and material point methods).

Each particle is located in a cell of the domain (from its world position by ``lookup``, or given as cell and
coordinates); particles are grouped by cell, and each cell integrates over its particles with weight
``particle measure / cell measure`` (``1 / particle count`` of the cell when no measures are given), so that a
constant integrates to the total particle measure. ``point_index`` is the particle's index in the input arrays.
A particle may also span several cells (GIMP: 2d cell and coordinate arrays, with the fraction of the particle in
each); its entries are then weighted by those fractions. Coordinates and weights are stored per entry in cell order,
computed by kernels, so that tapes differentiate them with respect to positions and measures.
"""

from types import SimpleNamespace
from typing import Any

import numpy as np

import treadle as wp

from . import codegen
from .domain import GeometryDomain
from .quadrature import Quadrature
from .types import coords_type


class PicQuadrature(Quadrature):
    """Quadrature at particles (see the module documentation).

    Args:
        domain: a cell domain.
        positions: world positions (an array of vectors, located with ``lookup``); or a tuple ``(cell indices,
            coordinates)`` or ``(cell indices, coordinates, fractions)``. Tuple arrays are 1d (one cell per
            particle) or 2d of shape ``(particles, k)``: each particle then spans ``k`` cells (GIMP), a negative
            cell index marking an unused slot, and ``fractions`` gives the share of the particle in each cell.
        measures: measure (area or volume) of each particle; ``None``: each cell's measure shared equally.
        env_indices: environment of each particle (geometries with several environments): positions are looked up
            among that environment's cells only.
        requires_grad: whether the particles' coordinates and weights get gradients.
        max_dist: unused (positions outside the geometry snap to the closest cell).
        use_domain_element_indices: cell indices of a tuple are domain element numbers.
        temporary_store: unused (accepted for compatibility).

    A particle's weight in a cell is its fraction there times ``measure / cell measure`` (``1 / particle count`` of
    the cell without measures). ``qp_index`` is the particle's index; ``evaluation_point_count()`` counts the
    (particle, cell) pairs.
    """

    def __init__(self, domain: GeometryDomain, positions: Any, measures: Any = None, env_indices: Any = None,
                 requires_grad: bool = False, max_dist: float = 0.0, use_domain_element_indices: bool = False,
                 temporary_store: Any = None) -> None:
        super().__init__(domain)
        if domain.element_kind.value != 0:
            raise TypeError("PicQuadrature needs a cell domain")
        geo = domain.geometry
        S = geo.scalar_type
        Coords = coords_type(S)
        self._requires_grad = requires_grad
        device = (positions[0] if isinstance(positions, tuple) else positions).device
        fractions = None
        if isinstance(positions, tuple):
            if len(positions) not in (2, 3):
                raise ValueError("PicQuadrature: a positions tuple is (cell indices, coordinates[, fractions])")
            cells, coords = positions[0], positions[1]
            fractions = positions[2] if len(positions) == 3 else None
            if cells.ndim not in (1, 2) or tuple(coords.shape) != tuple(cells.shape):
                raise ValueError(f"PicQuadrature: cell indices (shape {tuple(cells.shape)}) and coordinates (shape "
                                 f"{tuple(coords.shape)}) must have the same 1d or 2d shape")
            if fractions is not None and tuple(fractions.shape) != tuple(cells.shape):
                raise ValueError(f"PicQuadrature: fractions (shape {tuple(fractions.shape)}) must have the shape of "
                                 f"the cell indices {tuple(cells.shape)}")
            n = int(cells.shape[0])
            k = 1 if cells.ndim == 1 else int(cells.shape[1])
            cell_np = cells.numpy().reshape(-1).astype(np.int64)
            if use_domain_element_indices:
                idx = _domain_elements(domain, device)
                cell_np = np.where(cell_np >= 0, idx[np.maximum(cell_np, 0)] if len(idx) else -1, -1)
            flat_coords = coords.flatten() if coords.ndim == 2 else coords
            coords_arr = flat_coords if coords.dtype == Coords else wp.array(flat_coords.numpy(), dtype=Coords,
                                                                             device=device)
            if fractions is not None:
                fractions = fractions.flatten() if fractions.ndim == 2 else fractions
        else:
            n = int(positions.shape[0])
            k = 1
            env = _env_indices(geo, env_indices, n, device)
            cell_arr = wp.zeros(n, dtype=int, device=device)
            coords_arr = wp.zeros(n, dtype=Coords, device=device, requires_grad=requires_grad)
            if env is None:
                wp.launch(_locate_kernel(geo), dim=n, inputs=[geo.cell_arg_value(device), positions, cell_arr,
                                                              coords_arr], device=device)
            else:
                wp.launch(_locate_env_kernel(geo), dim=n, inputs=[geo.cell_arg_value(device), positions, env,
                                                                  cell_arr, coords_arr], device=device)
            cell_np = cell_arr.numpy().astype(np.int64)
        if measures is not None and measures.shape[0] != n:
            raise ValueError(f"PicQuadrature: measures has {measures.shape[0]} entries for {n} particles")
        self._n, self._k, self._m = n, k, n * k
        self._cell_np = cell_np
        self._coords_arr = coords_arr
        self._fractions = fractions
        self._measures = measures
        #: the cell of each (particle, cell) entry (-1: unused) and its coordinates, in input order
        self.particle_cells = wp.array(cell_np.astype(np.int32), dtype=int, device=device)
        self.particle_coords = coords_arr
        self._bin()
        self.funcs = _pic_funcs(S)

    def _bin(self) -> None:
        """Group the (particle, cell) entries by element of the domain and gather their coordinates and weights."""
        domain = self.domain
        geo = domain.geometry
        S = geo.scalar_type
        Coords = coords_type(S)
        device = self.particle_cells.device
        requires_grad = self._requires_grad
        cell_np, coords_arr, fractions, measures = self._cell_np, self._coords_arr, self._fractions, self._measures
        k, m = self._k, self._m
        # (particle, cell) entries grouped by domain element, stably; entries outside the domain go to the tail
        elem_of_cell = _element_of_cell(domain, device)
        valid = cell_np >= 0
        elem = np.where(valid, elem_of_cell[np.maximum(cell_np, 0)], -1) if m else np.zeros(0, dtype=np.int64)
        keep = elem >= 0
        order = np.argsort(np.where(keep, elem, domain.element_count()), kind="stable")
        kept = int(np.count_nonzero(keep))
        counts = np.bincount(elem[order[:kept]], minlength=domain.element_count())
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        particle = np.where(np.arange(m) < kept, order // k, -1).astype(np.int32)
        self._max = int(counts.max()) if len(counts) else 0
        self.cell_particle_offsets = wp.array(offsets, dtype=int, device=device)
        self.cell_particle_indices = wp.array(particle, dtype=int, device=device)
        inv_count = np.zeros(m, dtype=wp.dtype_to_numpy(S))
        if kept:
            inv_count[order[:kept]] = (1.0 / counts[elem[order[:kept]]])
        self._cell_particle_coords = wp.zeros(max(m, 1), dtype=Coords, device=device, requires_grad=requires_grad)
        self._cell_particle_fraction = wp.zeros(max(m, 1), dtype=S, device=device, requires_grad=requires_grad)
        if kept:
            S_np = wp.dtype_to_numpy(S)
            one = wp.array(np.ones(1, dtype=S_np), dtype=S, device=device)
            meas = one if measures is None else measures
            if meas.dtype != S:
                meas = wp.array(meas.numpy().astype(S_np), dtype=S, device=device)
            frac = one if fractions is None else fractions
            if frac.dtype != S:
                frac = wp.array(frac.numpy().astype(S_np), dtype=S, device=device)
            wp.launch(_gather_kernel(geo), dim=kept,
                      inputs=[geo.cell_arg_value(device), wp.array(order[:kept].astype(np.int32), dtype=int,
                                                                   device=device),
                              self.particle_cells, coords_arr, frac,
                              meas, wp.array(inv_count, dtype=S, device=device), k,
                              int(fractions is not None), int(measures is not None),
                              self._cell_particle_coords, self._cell_particle_fraction], device=device)

    @property
    def domain(self) -> GeometryDomain:
        """The cell domain.

        Setting another domain of the same geometry (the cells of a partition) groups the particles again, by
        element of the new domain.
        """
        return self.__dict__["domain"]

    @domain.setter
    def domain(self, value: GeometryDomain) -> None:
        old = self.__dict__.get("domain")
        if old is not None and value.geometry is not old.geometry:
            raise ValueError("PicQuadrature.domain: the new domain must be on the same geometry")
        self.__dict__["domain"] = value
        if old is not None:
            self._bin()

    def fill_element_mask(self, mask: Any) -> None:
        """Set ``mask[e]`` to 1 for the domain elements holding at least one particle, 0 for the others."""
        counts = np.diff(self.cell_particle_offsets.numpy())
        m = (counts > 0).astype(np.int32)
        if mask.shape[0] < m.shape[0]:
            raise ValueError(f"fill_element_mask: the mask has {mask.shape[0]} entries for {m.shape[0]} elements")
        full = np.zeros(mask.shape[0], dtype=np.int32)
        full[:m.shape[0]] = m
        mask.assign(full)

    @property
    def name(self) -> str:
        """``Pic``."""
        return "Pic"

    def max_points_per_element(self) -> int:
        """The most (particle, cell) entries in one cell."""
        return self._max

    def total_point_count(self) -> int:
        """Number of particles (the range of ``qp_index``)."""
        return self._n

    def evaluation_point_count(self) -> int:
        """Number of (particle, cell) entries: particles times cells per particle."""
        return self._m

    def active_cell_count(self) -> int:
        """Cells holding at least one particle."""
        return int(np.count_nonzero(np.diff(self.cell_particle_offsets.numpy())))

    def fill_arg(self, arg: Any, device: Any) -> None:
        """Offsets, particle lists, coordinates and weights, in cell order."""
        arg.cell_particle_offsets = self.cell_particle_offsets.to(device)
        arg.cell_particle_indices = self.cell_particle_indices.to(device)
        arg.cell_particle_coords = self._cell_particle_coords.to(device)
        arg.cell_particle_fraction = self._cell_particle_fraction.to(device)

    def arg_value(self, device: Any = None) -> Any:
        """Rebuilt at each call (the particle arrays may be differentiated)."""
        arg = self.Arg()
        self.fill_arg(arg, wp.get_device(device))
        return arg


def _env_indices(geo: Any, env_indices: Any, n: int, device: Any) -> Any:
    """The particles' environments as an int32 array (``None`` for single-environment geometries)."""
    env_count = geo.environment_count() if hasattr(geo, "environment_count") else 1
    if env_indices is None:
        if env_count > 1:
            raise ValueError(f"PicQuadrature: {geo.name} has {env_count} environments: pass the particles' "
                             "environment indices (env_indices)")
        return None
    if env_indices.ndim != 1 or env_indices.shape[0] != n:
        raise ValueError(f"PicQuadrature: env_indices must have one entry per particle position ({n}), got shape "
                         f"{tuple(env_indices.shape)}")
    dt = env_indices.dtype
    kind = "" if hasattr(dt, "_shape_") else np.dtype(wp.dtype_to_numpy(dt)).kind
    if kind not in ("i", "u"):
        raise ValueError(f"PicQuadrature: env_indices must have an integer dtype, got {env_indices.dtype.__name__}")
    if env_count <= 1:
        return None
    return wp.array(env_indices.numpy().astype(np.int32), dtype=int, device=device)


def _domain_elements(domain: GeometryDomain, device: Any) -> np.ndarray:
    n = domain.element_count()
    out = wp.zeros(max(n, 1), dtype=int, device=device)
    if n:
        wp.launch(_index_kernel(domain), dim=n, inputs=[domain.element_index_arg_value(device), out], device=device)
    return out.numpy()[:n].astype(np.int64)


def _element_of_cell(domain: GeometryDomain, device: Any) -> np.ndarray:
    cells = _domain_elements(domain, device)
    out = np.full(domain.geometry.cell_count(), -1, dtype=np.int64)
    out[cells] = np.arange(len(cells))
    return out


_K: dict[tuple[Any, ...], Any] = {}


def _index_kernel(domain: GeometryDomain) -> Any:
    fn = domain.funcs.element_index
    key = ("index", id(fn))
    k = _K.get(key)
    if k is None:
        IndexArg = domain.ElementIndexArg

        def domain_element_cells(arg: IndexArg, out: wp.array(dtype=int)):
            i = wp.tid()
            out[i] = fn(arg, i)

        k = _K[key] = codegen.kernel(domain_element_cells, key=f"pic_cells_{codegen.digest(IndexArg.key)}")
    return k


def _locate_kernel(geo: Any) -> Any:
    g = geo._funcs
    key = ("locate", id(g))
    k = _K.get(key)
    if k is None:
        CellArg = g.CellArg
        Coords = geo.coords_type
        vec = wp.types.vector(geo.dimension, geo.scalar_type)
        lookup = g.cell_lookup

        def locate_particles(arg: CellArg, pos: wp.array(dtype=vec), cells: wp.array(dtype=int),
                             coords: wp.array(dtype=Coords)):
            i = wp.tid()
            s = lookup(arg, pos[i])
            cells[i] = s.element_index
            coords[i] = s.element_coords

        k = _K[key] = codegen.kernel(locate_particles, key=f"pic_locate_{codegen.digest(CellArg.key)}")
    return k


def _locate_env_kernel(geo: Any) -> Any:
    g = geo._funcs
    key = ("locate_env", id(g))
    k = _K.get(key)
    if k is None:
        CellArg = g.CellArg
        Coords = geo.coords_type
        vec = wp.types.vector(geo.dimension, geo.scalar_type)
        lookup = g.cell_lookup_env

        def locate_particles_env(arg: CellArg, pos: wp.array(dtype=vec), env: wp.array(dtype=int),
                                 cells: wp.array(dtype=int), coords: wp.array(dtype=Coords)):
            i = wp.tid()
            s = lookup(arg, pos[i], env[i])
            cells[i] = s.element_index
            coords[i] = s.element_coords

        k = _K[key] = codegen.kernel(locate_particles_env, key=f"pic_locate_env_{codegen.digest(CellArg.key)}")
    return k


def _gather_kernel(geo: Any) -> Any:
    g = geo._funcs
    key = ("gather", id(g))
    k = _K.get(key)
    if k is None:
        CellArg = g.CellArg
        Coords = geo.coords_type
        S = geo.scalar_type
        SampleT = geo.sample_type
        measure = g.cell_measure

        def pic_gather(arg: CellArg, order: wp.array(dtype=int), cells: wp.array(dtype=int),
                       coords: wp.array(dtype=Coords), fractions: wp.array(dtype=S), measures: wp.array(dtype=S),
                       inv_count: wp.array(dtype=S), per_particle: int, with_fractions: int, with_measures: int,
                       out_coords: wp.array(dtype=Coords), out_fraction: wp.array(dtype=S)):
            j = wp.tid()
            e = order[j]
            c = coords[e]
            out_coords[j] = c
            w = inv_count[e]
            if with_measures != 0:
                s = SampleT()
                s.element_index = cells[e]
                s.element_coords = c
                w = measures[e // per_particle] / measure(arg, s)
            if with_fractions != 0:
                w = w * fractions[e]
            out_fraction[j] = w

        k = _K[key] = codegen.kernel(pic_gather, key=f"pic_gather_{codegen.digest(CellArg.key)}")
    return k


_FUNCS: dict[Any, SimpleNamespace] = {}


def _pic_funcs(S: Any) -> SimpleNamespace:
    f = _FUNCS.get(S)
    if f is not None:
        return f
    Coords = coords_type(S)
    Arg = codegen.struct("PicQuadratureArg", {"cell_particle_offsets": wp.array(dtype=int),
                                              "cell_particle_indices": wp.array(dtype=int),
                                              "cell_particle_coords": wp.array(dtype=Coords),
                                              "cell_particle_fraction": wp.array(dtype=S)},
                         codegen.type_key(S))
    key = ("pic", codegen.type_key(S))

    def point_count(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int) -> int:
        return qp_arg.cell_particle_offsets[domain_element + 1] - qp_arg.cell_particle_offsets[domain_element]

    def point_coords(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> Coords:
        return qp_arg.cell_particle_coords[qp_arg.cell_particle_offsets[domain_element] + q]

    def point_weight(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> S:
        return qp_arg.cell_particle_fraction[qp_arg.cell_particle_offsets[domain_element] + q]

    def point_index(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> int:
        return qp_arg.cell_particle_indices[qp_arg.cell_particle_offsets[domain_element] + q]

    def point_evaluation_index(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> int:
        return qp_arg.cell_particle_offsets[domain_element] + q

    f = SimpleNamespace(Arg=Arg, **{fn.__name__: codegen.func(fn, *key) for fn in (
        point_count, point_coords, point_weight, point_index, point_evaluation_index)})
    _FUNCS[S] = f
    return f
