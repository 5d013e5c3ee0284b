"""IsoSurfaceMarchingCubes and IsoSurfaceNets: closed, consistently oriented meshes of sphere and torus SDFs whose area
and volume converge to the analytic values, nets against marching cubes and a brute-force net, the class tables
against a brute-force marching cubes, gradients against finite differences, argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from geomlib_shapes import area_volume, assert_closed_oriented, edge_uses, sphere_field, torus_field

import treadle as wp
import treadle.geometry as geo

EXTRACTORS = [geo.IsoSurfaceMarchingCubes, geo.IsoSurfaceNets]
BIG_R, SMALL_R = 0.55, 0.25


def extract(cls: type, field: wp.array, **kw: object) -> tuple[np.ndarray, np.ndarray]:
    verts, indices = cls.extract(field, 0.0, lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0), **kw)
    assert verts.dtype == wp.vec3 and indices.dtype == wp.int32
    per = 4 if kw.get("topology") == "quad" else 3
    return verts.numpy(), indices.numpy().reshape(-1, per)


@pytest.mark.parametrize("cls", EXTRACTORS)
def test_sphere_and_torus_converge(cls: type, device: str) -> None:
    center = (0.031, -0.047, 0.022)
    errors = []
    for n in (24, 48, 96):
        h = 2.0 / (n - 1)
        field, _ = sphere_field(n, center, 0.6)
        verts, tris = extract(cls, field)
        assert_closed_oriented(verts, tris)
        assert np.abs(np.linalg.norm(verts - center, axis=1) - 0.6).max() < h
        area, volume = area_volume(verts, tris)
        area_err = abs(area / (4 * np.pi * 0.36) - 1)
        vol_err = abs(volume / (4 / 3 * np.pi * 0.216) - 1)
        # second-order in the cell size: the bound falls 4x per halving
        assert area_err < 1.5 * h**2 / 0.36 and vol_err < 1.5 * h**2 / 0.36, (n, area_err, vol_err)
        torus = torus_field(n, BIG_R, SMALL_R)
        tv, tt = extract(cls, torus)
        assert_closed_oriented(tv, tt)
        ta, tvol = area_volume(tv, tt)
        torus_area, torus_vol = 4 * np.pi**2 * BIG_R * SMALL_R, 2 * np.pi**2 * BIG_R * SMALL_R**2
        assert abs(ta / torus_area - 1) < 2.0 * h**2 / SMALL_R**2 and abs(tvol / torus_vol - 1) < 2.0 * h**2 / SMALL_R**2
        # Euler characteristic: a sphere is 2, a torus 0
        for v, f, chi in ((verts, tris, 2), (tv, tt, 0)):
            undirected, _ = edge_uses(f)
            assert len(v) - len(undirected) + len(f) == chi
        errors.append(vol_err)
    assert errors[-1] < errors[0] / 4


def test_nets_against_marching_cubes(device: str) -> None:
    field, _ = sphere_field(40, (0.02, 0.01, -0.03), 0.65)
    mv, mt = extract(geo.IsoSurfaceMarchingCubes, field)
    nv, nt = extract(geo.IsoSurfaceNets, field)
    nqv, nq = extract(geo.IsoSurfaceNets, field, topology="quad")
    np.testing.assert_array_equal(nqv, nv)
    # the quads split along their first diagonal are the triangles
    np.testing.assert_array_equal(nt, np.stack([nq[:, [0, 1, 2]], nq[:, [0, 2, 3]]], 1).reshape(-1, 3))
    assert_closed_oriented(nqv, nq)
    # one vertex per crossed cell (no cell is crossed twice by a sphere), each inside its cell
    f = field.numpy()
    below = f < 0.0
    crossed = np.zeros(np.array(f.shape) - 1, bool)
    some = np.zeros_like(crossed)
    for c in range(8):
        s = below[c & 1: f.shape[0] - 1 + (c & 1), (c >> 1) & 1: f.shape[1] - 1 + ((c >> 1) & 1),
                  (c >> 2) & 1: f.shape[2] - 1 + ((c >> 2) & 1)]
        crossed |= s
        some |= ~s
    assert len(nv) == int((crossed & some).sum())
    cell = np.floor((nv + 1.0) / (2.0 / 39)).astype(int)
    assert crossed[tuple(cell.T)].all() and some[tuple(cell.T)].all()
    # both approximate the same sphere: areas and volumes agree to the discretisation error
    (ma, mvol), (na, nvol) = area_volume(mv, mt), area_volume(nv, nt)
    assert abs(na / ma - 1) < 0.02 and abs(nvol / mvol - 1) < 0.02
    # one quad per crossed grid edge, and marching cubes has one vertex per crossed grid edge
    assert len(nq) == len(mv)


def brute_force_nets(f: np.ndarray, thr: float) -> tuple[np.ndarray, set[tuple[int, ...]]]:
    """Surface nets on a field without ambiguous cells: one vertex per crossed cell (mean of the edge crossings),
    a quad (as a cycle) across every crossed edge with four cells around it."""
    nx, ny, nz = f.shape
    inside = f < thr
    verts, vid = [], {}
    for i in range(nx - 1):
        for j in range(ny - 1):
            for k in range(nz - 1):
                pts = []
                for a in range(3):
                    for du in (0, 1):
                        for dv in (0, 1):
                            p = np.array([i, j, k])
                            u, v = [x for x in range(3) if x != a]
                            p[u] += du
                            p[v] += dv
                            q = p.copy()
                            q[a] += 1
                            if inside[tuple(p)] != inside[tuple(q)]:
                                t = (thr - f[tuple(p)]) / (f[tuple(q)] - f[tuple(p)])
                                pts.append(p + t * (q - p))
                if pts:
                    vid[(i, j, k)] = len(verts)
                    verts.append(np.mean(pts, axis=0))
    quads = set()
    for p in np.ndindex(f.shape):
        for a in range(3):
            q = list(p)
            q[a] += 1
            if q[a] >= f.shape[a] or inside[p] == inside[tuple(q)]:
                continue
            u, v = [x for x in range(3) if x != a]
            if not (1 <= p[u] <= f.shape[u] - 2 and 1 <= p[v] <= f.shape[v] - 2):
                continue
            cells = []
            for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                c = list(p)
                c[u] -= 1 - du
                c[v] -= 1 - dv
                cells.append(vid[tuple(c)])
            quads.add(tuple(cells))
    return np.array(verts), quads


def test_nets_against_brute_force_open_surface(device: str) -> None:
    # a sphere that leaves the grid: an open mesh stopping short of the boundary, and a stray corner node below the
    # threshold whose cell's crossed edges all lie on the boundary (no face, so no vertex)
    x = np.arange(11, dtype=np.float64)
    gx, gy, gz = np.meshgrid(x - 4.37, x - 4.16, x - 4.5, indexing="ij")
    f = (np.sqrt(gx**2 + gy**2 + gz**2) - 4.8).astype(np.float32)
    f[10, 10, 10] = -1.0
    verts, quads = geo.IsoSurfaceNets.extract(wp.array(f, dtype=float), 0.0, topology="quad")
    bv, bq = brute_force_nets(f.astype(np.float64), 0.0)
    used = sorted({c for q in bq for c in q})
    remap = {u: i for i, u in enumerate(used)}
    np.testing.assert_allclose(verts.numpy(), bv[used], atol=2e-6)

    def cycles(qs: object) -> set[tuple[int, ...]]:  # quads as unoriented cycles (orientation is checked below)
        out = set()
        for q in qs:
            forms = [list(q), list(q)[::-1]]
            out.add(min(tuple(f[i:] + f[:i]) for f in forms for i in range(4)))
        return out

    assert cycles(quads.numpy().reshape(-1, 4).tolist()) == cycles([[remap[c] for c in q] for q in bq])
    # open mesh: boundary edges are used once, all others twice, orientation consistent
    undirected, directed = edge_uses(quads.numpy().reshape(-1, 4))
    assert (undirected <= 2).all() and (undirected == 1).any() and (directed == 1).all()


def test_a_cell_crossed_twice_gets_two_vertices(device: str) -> None:
    # two blobs touching one cell at opposite corners: that cell holds two sheets, so two vertices
    f = np.ones((4, 4, 4), np.float32)
    f[1, 1, 1] = -1.0
    f[2, 2, 2] = -1.0
    verts, tris = geo.IsoSurfaceNets.extract(wp.array(f, dtype=float), 0.0)
    v = verts.numpy()
    in_middle = np.all((v > 1.0) & (v < 2.0), axis=1)
    assert in_middle.sum() == 2
    # 15 crossed cells around the two nodes, the shared one twice; each blob a closed surface of 6 quads
    assert len(v) == 16 and tris.shape[0] == 3 * 2 * 12
    assert_closed_oriented(v, tris.numpy().reshape(-1, 3))


def brute_force_marching_cubes(f: np.ndarray, thr: float) -> set[tuple[tuple[float, ...], ...]]:
    """Marching cubes from the class tables (documented corner and edge numbering), triangles as point triples."""
    cls = geo.IsoSurfaceMarchingCubes
    out = set()
    for cell in np.ndindex(tuple(np.array(f.shape) - 1)):
        corners = [np.array(cell) + np.array(o) for o in cls.CUBE_CORNER_OFFSETS]
        values = [f[tuple(c)] for c in corners]
        case = sum(1 << c for c in range(8) if values[c] < thr)
        idx = cls.TRI_LOCAL_INDICES[cls.CASE_TO_TRI_RANGE[case]: cls.CASE_TO_TRI_RANGE[case + 1]]
        pts = []
        for e in idx:
            a, b = cls.EDGE_TO_CORNERS[e]
            t = (thr - values[a]) / (values[b] - values[a])
            pts.append(tuple(np.round(corners[a] + t * (corners[b] - corners[a]), 4)))
        for k in range(0, len(pts), 3):
            tri = pts[k: k + 3]
            m = tri.index(min(tri))
            out.add(tuple(tri[m:] + tri[:m]))
    return out


def test_class_tables_describe_the_extraction(device: str) -> None:
    cls = geo.IsoSurfaceMarchingCubes
    assert cls.CUBE_CORNER_OFFSETS[:4] == ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0))
    assert len(cls.CASE_TO_TRI_RANGE) == 257 and cls.CASE_TO_TRI_RANGE[-1] == len(cls.TRI_LOCAL_INDICES)
    for a, b in cls.EDGE_TO_CORNERS:  # edges join corners one step apart, from the lower one
        d = np.array(cls.CUBE_CORNER_OFFSETS[b]) - np.array(cls.CUBE_CORNER_OFFSETS[a])
        assert sorted(d.tolist()) == [0, 0, 1]
    rng = np.random.default_rng(4)
    f = rng.normal(size=(6, 5, 7)).astype(np.float32)  # many ambiguous cells
    verts, indices = cls.extract(wp.array(f, dtype=float), 0.1)
    v = verts.numpy().astype(np.float64)
    got = set()
    for tri in indices.numpy().reshape(-1, 3):
        pts = [tuple(np.round(v[i], 4)) for i in tri]
        m = pts.index(min(pts))
        got.add(tuple(pts[m:] + pts[:m]))
    assert got == brute_force_marching_cubes(f.astype(np.float64), 0.1)


def test_random_fields_stay_manifold(device: str) -> None:
    # every face of a random field's surface meets its neighbours consistently: interior edges twice, oriented
    rng = np.random.default_rng(7)
    f = rng.normal(size=(9, 8, 7)).astype(np.float32)
    f[0], f[-1], f[:, 0], f[:, -1], f[:, :, 0], f[:, :, -1] = 1, 1, 1, 1, 1, 1  # closed inside the grid
    for cls in EXTRACTORS:
        verts, indices = cls.extract(wp.array(f, dtype=float), 0.0)
        assert_closed_oriented(verts.numpy(), indices.numpy().reshape(-1, 3))


def test_stateful_interface_and_bases(device: str) -> None:
    field, _ = sphere_field((20, 16, 24), (0.0, 0.0, 0.0), 0.5)
    for cls in EXTRACTORS:
        ext = cls(20, 16, 24, lower=(-1, -1, -1), upper=(1, 1, 1))
        assert isinstance(ext, geo.IsoSurfaceBase) and ext.verts is None and ext.indices is None
        ext.surface(field, 0.0)
        v0, i0 = cls.extract(field, 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))
        np.testing.assert_array_equal(ext.verts.numpy(), v0.numpy())
        np.testing.assert_array_equal(ext.indices.numpy(), i0.numpy())
        ext.resize(8, 8, 8)
        with pytest.raises(ValueError, match="does not match"):
            ext.surface(field, 0.0)
    mc = geo.IsoSurfaceMarchingCubes(4, 4, 4, domain_bounds_lower_corner=(1, 2, 3))
    assert mc.lower == (1, 2, 3) and mc.domain_bounds_lower_corner == (1, 2, 3)
    assert isinstance(mc, wp.MarchingCubes) and isinstance(wp.MarchingCubes(4, 4, 4), geo.IsoSurfaceBase)
    assert geo.IsoSurfaceNets(4, 4, 4, topology="quad").topology == "quad"
    with pytest.raises(TypeError):
        geo.IsoSurfaceBase(4, 4, 4)  # abstract
    # default bounds: node indices
    v, _ = geo.IsoSurfaceNets.extract(field, 0.0)
    assert v.numpy().min() > 0.0 and (v.numpy().max(axis=0) < [19, 15, 23]).all()


def test_empty_fields(device: str) -> None:
    for cls in EXTRACTORS:
        for thr in (-1.0, 1.0):
            v, i = cls.extract(wp.zeros((5, 6, 7), dtype=float), thr)
            assert v.shape == (0,) and i.shape == (0,)


@wp.kernel
def weighted_sum(verts: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.dot(verts[i], w[i]))


@pytest.mark.parametrize("cls", EXTRACTORS)
def test_gradient_to_the_field_matches_finite_differences(cls: type, device: str) -> None:
    field, _ = sphere_field(14, (0.05, -0.02, 0.03), 0.55, requires_grad=True)
    f0 = field.numpy().copy()
    v, _ = cls.extract(field, 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))
    rng = np.random.default_rng(1)
    w = wp.array(rng.normal(size=(v.shape[0], 3)).astype(np.float32), dtype=wp.vec3)
    with wp.Tape() as tape:
        verts, _ = cls.extract(field, 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        wp.launch(weighted_sum, dim=verts.shape[0], inputs=[verts, w, loss])
    tape.backward(loss)
    grad = field.grad.numpy()
    assert np.abs(grad).max() > 0

    def loss_of(f: np.ndarray) -> float:
        vv, _ = cls.extract(wp.array(f, dtype=float), 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))
        assert vv.shape == v.shape  # the perturbation keeps the topology
        return float(np.sum(vv.numpy().astype(np.float64) * w.numpy()))

    eps = 2e-3
    near = np.argwhere((np.abs(f0) < 0.2) & (np.abs(f0) > 4 * eps))
    for idx in near[rng.choice(len(near), 8, replace=False)]:
        fp, fm = f0.copy(), f0.copy()
        fp[tuple(idx)] += eps
        fm[tuple(idx)] -= eps
        fd = (loss_of(fp) - loss_of(fm)) / (2 * eps)
        assert abs(fd - grad[tuple(idx)]) < 2e-2 * max(1.0, abs(fd)), (idx, fd, grad[tuple(idx)])


def test_bad_arguments(device: str) -> None:
    for cls in EXTRACTORS:
        with pytest.raises(ValueError, match="3-d"):
            cls.extract(wp.zeros((4, 4), dtype=float))
        with pytest.raises(ValueError, match="3-d"):
            cls.extract(np.zeros((4, 4, 4), np.float32))
        with pytest.raises(ValueError, match="at least 2"):
            cls.extract(wp.zeros((4, 1, 4), dtype=float))
        with pytest.raises(TypeError, match="float32"):
            cls.extract(wp.zeros((4, 4, 4), dtype=wp.float64))
        with pytest.raises(TypeError, match="lower"):
            cls.extract(wp.zeros((4, 4, 4), dtype=float), lower="abc")
    with pytest.raises(ValueError, match="topology"):
        geo.IsoSurfaceNets.extract(wp.zeros((4, 4, 4), dtype=float), topology="hex")
    with pytest.raises(ValueError, match="topology"):
        geo.IsoSurfaceNets(4, 4, 4, topology="hex")


def test_submodule_is_imported_on_first_use() -> None:
    import subprocess
    import sys

    code = ("import sys, treadle as wp; assert 'treadle.geometry' not in sys.modules; "
            "assert wp.geometry.IsoSurfaceNets is __import__('treadle.geometry').geometry.IsoSurfaceNets; "
            "assert 'treadle.geometry' in sys.modules")
    env = dict(__import__("os").environ, PYTHONPATH=str(__import__("pathlib").Path(wp.__file__).parent.parent))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    with pytest.raises(AttributeError, match="no attribute 'not_a_submodule'"):
        wp.not_a_submodule  # noqa: B018
