"""``PicQuadrature``: particles as quadrature points (particle-in-cell and material point methods).

Each particle is located in a cell of the domain (from its world position by ``lookup``, or given as cell and
coordinates); particles are grouped by cell, and each cell integrates over its particles with weight
``particle measure / cell measure`` (``1 / particle count`` of the cell when no measures are given), so that a
constant integrates to the total particle measure. ``point_index`` is the particle's index in the input arrays.
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
        positions: world positions (an array of vectors), or a tuple ``(cell indices, coordinates)``.
        measures: measure (area or volume) of each particle; ``None``: each cell's measure shared equally.
        env_indices: not supported (must be ``None``).
        requires_grad: whether the particles' coordinates and weights get gradients.
        max_dist: unused (positions outside the geometry snap to the closest cell).
        use_domain_element_indices: cell indices of a ``(cells, coords)`` tuple are domain element numbers.
        temporary_store: unused (accepted for compatibility).

    """

    def __init__(self, domain: GeometryDomain, positions: Any, measures: Any = None, env_indices: Any = None,
                 requires_grad: bool = False, max_dist: float = 0.0, use_domain_element_indices: bool = False,
                 temporary_store: Any = None) -> None:
        super().__init__(domain)
        if domain.element_kind.value != 0:
            raise TypeError("PicQuadrature needs a cell domain")
        if env_indices is not None:
            raise NotImplementedError("PicQuadrature: environments (env_indices) are not supported")
        geo = domain.geometry
        S = geo.scalar_type
        Coords = coords_type(S)
        self._requires_grad = requires_grad
        device = (positions[0] if isinstance(positions, tuple) else positions).device
        if isinstance(positions, tuple):
            cells, coords = positions[0], positions[1]
            if cells.ndim != 1:
                raise NotImplementedError("PicQuadrature: particles spanning several cells (2d arrays) are not "
                                          "supported")
            cell_np = cells.numpy().astype(np.int64)
            if use_domain_element_indices:
                idx = _domain_elements(domain, device)
                cell_np = idx[cell_np]
            coords_arr = coords if coords.dtype == Coords else wp.array(coords.numpy(), dtype=Coords, device=device)
        else:
            n = positions.shape[0]
            cell_arr = wp.zeros(n, dtype=int, device=device)
            coords_arr = wp.zeros(n, dtype=Coords, device=device, requires_grad=requires_grad)
            wp.launch(_locate_kernel(geo), dim=n, inputs=[geo.cell_arg_value(device), positions, cell_arr, coords_arr],
                      device=device)
            cell_np = cell_arr.numpy().astype(np.int64)
        self._n = len(cell_np)
        self._cell_np = cell_np
        self.particle_coords = coords_arr
        self.particle_cells = wp.array(cell_np.astype(np.int32), dtype=int, device=device)
        self._measures = measures
        self._bin()
        self.funcs = _pic_funcs(S)

    def _bin(self) -> None:
        """Group the particles by element of the domain, and weigh them (cells outside the domain are dropped)."""
        domain = self.domain
        geo = domain.geometry
        S = geo.scalar_type
        device = self.particle_cells.device
        cell_np, n = self._cell_np, self._n
        elem_of_cell = _element_of_cell(domain, device)
        elem = elem_of_cell[cell_np] if n else np.zeros(0, dtype=np.int64)
        keep = elem >= 0
        order = np.argsort(np.where(keep, elem, domain.element_count()), kind="stable")
        order = order[keep[order]]
        counts = np.bincount(elem[order], minlength=domain.element_count())
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        self._max = int(counts.max()) if len(counts) else 0
        self.cell_particle_offsets = wp.array(offsets, dtype=int, device=device)
        self.cell_particle_indices = wp.array(order.astype(np.int32), dtype=int, device=device)
        # weights: measure / cell measure, or 1 / count
        weights = wp.zeros(n, dtype=S, device=device, requires_grad=self._requires_grad)
        if n:
            if self._measures is None:
                per = (1.0 / np.maximum(counts, 1))[np.maximum(elem, 0)].astype(wp.dtype_to_numpy(S))
                per[~keep] = 0.0
                weights.assign(per)
            else:
                wp.launch(_weight_kernel(geo), dim=n, inputs=[geo.cell_arg_value(device), self.particle_cells,
                                                              self.particle_coords, self._measures, weights],
                          device=device)
        self.particle_fraction = weights

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
        """The most particles in one cell."""
        return self._max

    def total_point_count(self) -> int:
        """Number of particles."""
        return self._n

    def active_cell_count(self) -> int:
        """Cells holding at least one particle."""
        return int(np.count_nonzero(np.diff(self.cell_particle_offsets.numpy())))

    def fill_arg(self, arg: Any, device: Any) -> None:
        """Offsets, particle lists, coordinates and weights."""
        arg.offsets = self.cell_particle_offsets.to(device)
        arg.indices = self.cell_particle_indices.to(device)
        arg.coords = self.particle_coords.to(device)
        arg.weights = self.particle_fraction.to(device)

    def arg_value(self, device: Any = None) -> Any:
        """Rebuilt at each call (the particle arrays may be differentiated)."""
        arg = self.Arg()
        self.fill_arg(arg, wp.get_device(device))
        return arg


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


def _weight_kernel(geo: Any) -> Any:
    g = geo._funcs
    key = ("weight", id(g))
    k = _K.get(key)
    if k is None:
        CellArg = g.CellArg
        Coords = geo.coords_type
        S = geo.scalar_type
        SampleT = geo.sample_type
        measure = g.cell_measure

        def particle_weights(arg: CellArg, cells: wp.array(dtype=int), coords: wp.array(dtype=Coords),
                             measures: wp.array(dtype=Any), out: wp.array(dtype=S)):
            i = wp.tid()
            s = SampleT()
            s.element_index = cells[i]
            s.element_coords = coords[i]
            if cells[i] >= 0:
                out[i] = S(measures[i]) / measure(arg, s)

        k = _K[key] = codegen.kernel(particle_weights, key=f"pic_weights_{codegen.digest(CellArg.key)}")
    return k


_FUNCS: dict[Any, SimpleNamespace] = {}


def _pic_funcs(S: Any) -> SimpleNamespace:
    f = _FUNCS.get(S)
    if f is not None:
        return f
    Coords = coords_type(S)
    Arg = codegen.struct("PicQuadratureArg", {"offsets": wp.array(dtype=int), "indices": wp.array(dtype=int),
                                              "coords": wp.array(dtype=Coords), "weights": wp.array(dtype=S)},
                         codegen.type_key(S))
    key = ("pic", codegen.type_key(S))

    def point_count(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int) -> int:
        return qp_arg.offsets[domain_element + 1] - qp_arg.offsets[domain_element]

    def point_coords(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> Coords:
        return qp_arg.coords[qp_arg.indices[qp_arg.offsets[domain_element] + q]]

    def point_weight(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> S:
        return qp_arg.weights[qp_arg.indices[qp_arg.offsets[domain_element] + q]]

    def point_index(elt_arg: Any, qp_arg: Arg, domain_element: int, element: int, q: int) -> int:
        return qp_arg.indices[qp_arg.offsets[domain_element] + q]

    f = SimpleNamespace(Arg=Arg, **{fn.__name__: codegen.func(fn, *key) for fn in (
        point_count, point_coords, point_weight, point_index)})
    _FUNCS[S] = f
    return f
