"""Swept volumes: a box sliding along x sweeps a longer box, a sphere sweeps a capsule; bounds, signed distances at
the grid nodes against the analytic shapes, the sign modes, the extracted envelope (closed, area and volume of the
capsule), swept_volume_sdf in a user kernel, argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from geomlib_shapes import area_volume, assert_closed_oriented, box_mesh, box_sdf, icosphere, segment_distance

import treadle as wp
import treadle.geometry as geo

Mode = geo.SweptVolumeSignMode


def mesh(pts: np.ndarray, faces: np.ndarray, winding: bool = True) -> wp.Mesh:
    return wp.Mesh(wp.array(pts, dtype=wp.vec3), wp.array(faces.reshape(-1), dtype=wp.int32),
                   support_winding_number=winding)


def slide(starts: np.ndarray, ends: np.ndarray, samples: int, angle: float = 0.0) -> np.ndarray:
    """(1, samples, 7) poses translating from ``starts`` to ``ends``, rotating by up to ``angle`` about z."""
    t = np.linspace(0.0, 1.0, samples)
    xf = np.zeros((1, samples, 7), np.float32)
    xf[0, :, :3] = starts + t[:, None] * (ends - starts)
    xf[0, :, 5] = np.sin(0.5 * angle * t)
    xf[0, :, 6] = np.cos(0.5 * angle * t)
    return xf


def nodes(shape: tuple[int, ...], lo: object, hi: object) -> np.ndarray:
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    axes = [lo[a] + np.arange(shape[a]) * (hi[a] - lo[a]) / (shape[a] - 1) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1)


BOX_LO, BOX_HI = np.zeros(3), np.array([0.5, 0.5, 0.5])


def test_box_sweeps_a_box(device: str) -> None:
    box = mesh(*box_mesh(tuple(BOX_LO), tuple(BOX_HI)))
    xf = slide(np.zeros(3), np.array([1.0, 0.0, 0.0]), 9)  # steps of 0.125 < the box's 0.5: a solid bar
    lo, hi = geo.swept_volume_bounds([box], xf)
    np.testing.assert_allclose(np.array(lo), [0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(np.array(hi), [1.5, 0.5, 0.5], atol=1e-6)
    plo, phi = geo.swept_volume_bounds([box], xf, padding=0.1)
    np.testing.assert_allclose(np.array(plo), [-0.1] * 3, atol=1e-6)
    np.testing.assert_allclose(np.array(phi), [1.6, 0.6, 0.6], atol=1e-6)
    field, flo, fhi = geo.swept_volume_field([box], xf, voxel_size=0.05)
    # the domain: the bounds padded by two cells, grown to whole cells of exactly the voxel size
    f = field.numpy()
    np.testing.assert_allclose((np.array(fhi) - np.array(flo)) / (np.array(f.shape) - 1), 0.05, rtol=1e-5)
    assert (np.array(flo) <= -0.1 + 1e-6).all() and (np.array(fhi) >= [1.6 - 1e-6, 0.6 - 1e-6, 0.6 - 1e-6]).all()
    p = nodes(f.shape, flo, fhi)
    exact = box_sdf(p, BOX_LO, np.array([1.5, 0.5, 0.5]))
    outside = exact > 1e-4
    np.testing.assert_allclose(f[outside], exact[outside], atol=1e-5)
    inside = exact < -1e-4
    # inside, the field is the deepest of the poses' depths: negative, never deeper than the bar's own depth
    assert (f[inside] < 0).all() and (f[inside] >= exact[inside] - 1e-5).all()
    # an explicit domain with a resolution
    f2, lo2, hi2 = geo.swept_volume_field([box], xf, resolution=(12, 7, 9), lower=(-1, -1, -1), upper=(2, 1, 1.5))
    assert f2.shape == (12, 7, 9) and np.allclose(np.array(lo2), -1) and np.allclose(np.array(hi2), [2, 1, 1.5])
    e2 = box_sdf(nodes(f2.shape, lo2, hi2), BOX_LO, np.array([1.5, 0.5, 0.5]))
    np.testing.assert_allclose(f2.numpy()[e2 > 1e-4], e2[e2 > 1e-4], atol=1e-5)


def test_sign_modes(device: str) -> None:
    box = mesh(*box_mesh(tuple(BOX_LO), tuple(BOX_HI)))
    xf = slide(np.zeros(3), np.array([1.0, 0.3, 0.0]), 6, angle=0.7)
    fields = {}
    for mode in Mode:
        f, lo, hi = geo.swept_volume_field([box], xf, resolution=(30, 22, 16), sign_mode=mode)
        fields[mode] = f.numpy()
    mags = np.abs(fields[Mode.NO_SIGN])
    assert (fields[Mode.NO_SIGN] >= 0).all()
    for mode in (Mode.NORMAL, Mode.WINDING_NUMBER, Mode.PARITY):
        # outside every pose the signed field is the unsigned one; inside, it is the deepest depth over the poses,
        # at least the distance to the nearest pose's surface
        pos = fields[mode] > 0
        np.testing.assert_allclose(fields[mode][pos], mags[pos], atol=1e-6)
        assert (-fields[mode][~pos] >= mags[~pos] - 1e-6).all()
    # brute force inside test: a node is inside the swept volume when it is inside some posed box
    p = nodes(fields[Mode.NO_SIGN].shape, lo, hi).reshape(-1, 3)
    inside = np.zeros(len(p), bool)
    for s in range(xf.shape[1]):
        t, q = xf[0, s, :3].astype(np.float64), xf[0, s, 3:].astype(np.float64)
        ang = 2 * np.arctan2(q[2], q[3])
        c, sn = np.cos(-ang), np.sin(-ang)
        local = p - t
        local = np.stack([c * local[:, 0] - sn * local[:, 1], sn * local[:, 0] + c * local[:, 1], local[:, 2]], 1)
        inside |= np.all((local > BOX_LO) & (local < BOX_HI), axis=1)
    clear = mags.reshape(-1) > 1e-4
    assert inside[clear].any() and (~inside[clear]).any()
    for mode in (Mode.NORMAL, Mode.WINDING_NUMBER, Mode.PARITY):
        np.testing.assert_array_equal(fields[mode].reshape(-1)[clear] < 0, inside[clear])
    # an integer is accepted for the mode (members are ints)
    f_int, _, _ = geo.swept_volume_field([box], xf, resolution=(30, 22, 16), sign_mode=0)
    np.testing.assert_array_equal(f_int.numpy(), fields[Mode.NORMAL])


def test_sphere_sweeps_a_capsule(device: str) -> None:
    r, a, b = 0.3, np.array([0.0, 0.0, 0.0]), np.array([1.2, 0.4, -0.2])
    pts, faces = icosphere(3, r)
    sphere = mesh(pts, faces)
    # faceting: the mesh lies between the sphere and the planes of its faces, the nearest at this depth
    tri = pts[faces].astype(np.float64)
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    facet = r - np.min(np.abs(np.einsum("ij,ij->i", tri[:, 0], normal)) / np.linalg.norm(normal, axis=1))
    samples = 31
    xf = slide(a, b, samples)
    step = np.linalg.norm(b - a) / (samples - 1)
    dip = r - np.sqrt(r * r - (step / 2) ** 2)  # the union of spheres dips this much between two samples
    field, lo, hi = geo.swept_volume_field([sphere], xf, voxel_size=0.04)
    f = field.numpy()
    p = nodes(f.shape, lo, hi)
    capsule = segment_distance(p, a, b) - r
    out = capsule > 0.01
    assert np.abs(f[out] - capsule[out]).max() < dip + facet + 1e-5
    # against the union of the sampled spheres itself, only the faceting error is left
    union = np.min([np.linalg.norm(p - c, axis=-1) for c in xf[0, :, :3].astype(np.float64)], axis=0) - r
    assert np.abs(f[out] - union[out]).max() < facet + 1e-5
    assert (f[capsule < -0.01] < 0).all()
    # the envelope: closed, with the capsule's area and volume
    for kw in ({"voxel_size": 0.03}, {"resolution": (48, 24, 21)}):
        verts, indices = geo.swept_volume_mesh([sphere], xf, **kw)
        v, t = verts.numpy(), indices.numpy().reshape(-1, 3)
        assert_closed_oriented(v, t)
        area, volume = area_volume(v, t)
        length = np.linalg.norm(b - a)
        np.testing.assert_allclose(volume, np.pi * r * r * length + 4 / 3 * np.pi * r**3, rtol=0.02)
        np.testing.assert_allclose(area, 2 * np.pi * r * length + 4 * np.pi * r * r, rtol=0.02)
        assert np.abs(segment_distance(v.astype(np.float64), a, b) - r).max() < 0.03
    # a positive threshold dilates the envelope by that much; it then encloses every sampled pose
    dv, dt = geo.swept_volume_mesh([sphere], xf, voxel_size=0.04, threshold=0.05)
    np.testing.assert_allclose(segment_distance(dv.numpy().astype(np.float64), a, b), r + 0.05, atol=0.02)
    nv, _ = geo.swept_volume_mesh([sphere], xf, voxel_size=0.04, threshold=0.05, sign_mode=Mode.NO_SIGN)
    np.testing.assert_allclose(segment_distance(nv.numpy().astype(np.float64), a, b), r + 0.05, atol=0.02)


def test_two_meshes_and_the_user_kernel(device: str) -> None:
    sphere = mesh(*icosphere(2, 0.2))
    box = mesh(*box_mesh((-0.1, -0.1, -0.1), (0.1, 0.1, 0.1)))
    xf = np.concatenate([slide(np.zeros(3), np.array([1.0, 0.0, 0.0]), 5),
                         slide(np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0]), 5, angle=1.0)])
    field, lo, hi = geo.swept_volume_field([sphere, box], xf, resolution=(16, 20, 18))
    # each mesh alone, then the union: the minimum of the two fields
    f_a, _, _ = geo.swept_volume_field([sphere], xf[:1], resolution=(16, 20, 18), lower=lo, upper=hi)
    f_b, _, _ = geo.swept_volume_field([box], xf[1:], resolution=(16, 20, 18), lower=lo, upper=hi)
    np.testing.assert_allclose(field.numpy(), np.minimum(f_a.numpy(), f_b.numpy()), atol=1e-6)
    b_lo, b_hi = geo.swept_volume_bounds([sphere, box], xf)
    assert (np.array(b_lo) >= np.array(lo)).all() and (np.array(b_hi) <= np.array(hi)).all()

    @wp.kernel
    def sample(points: wp.array(dtype=wp.vec3), ids: wp.array(dtype=wp.uint64),
               xforms: wp.array2d(dtype=wp.transform), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = geo.swept_volume_sdf(points[i], ids, xforms, 100.0, wp.int32(geo.SweptVolumeSignMode.WINDING_NUMBER))

    p = nodes(field.shape, lo, hi).reshape(-1, 3).astype(np.float32)
    out = wp.zeros(len(p), dtype=float)
    ids = wp.array(np.array([sphere.id, box.id], np.uint64), dtype=wp.uint64)
    wp.launch(sample, dim=len(p), inputs=[wp.array(p, dtype=wp.vec3), ids, wp.array(xf, dtype=wp.transform), out])
    np.testing.assert_allclose(out.numpy(), field.numpy().reshape(-1), atol=2e-6)
    # a search bound shorter than the distance gives +max_dist
    far = wp.zeros(1, dtype=float)

    @wp.kernel
    def far_point(ids: wp.array(dtype=wp.uint64), xforms: wp.array2d(dtype=wp.transform), out: wp.array(dtype=float)):
        out[0] = geo.swept_volume_sdf(wp.vec3(10.0, 10.0, 10.0), ids, xforms, 0.5, 3)

    wp.launch(far_point, dim=1, inputs=[ids, wp.array(xf, dtype=wp.transform), far])
    assert far.numpy()[0] == 0.5


def test_bad_arguments(device: str) -> None:
    box = mesh(*box_mesh((0, 0, 0), (1, 1, 1)))
    plain = mesh(*box_mesh((0, 0, 0), (1, 1, 1)), winding=False)
    xf = slide(np.zeros(3), np.ones(3), 3)
    with pytest.raises(ValueError, match="support_winding_number"):
        geo.swept_volume_field([plain], xf, voxel_size=0.1)
    geo.swept_volume_field([plain], xf, voxel_size=0.2, sign_mode=Mode.NORMAL)  # fine without the winding data
    with pytest.raises(ValueError, match="not both"):
        geo.swept_volume_field([box], xf, voxel_size=0.1, resolution=(4, 4, 4))
    with pytest.raises(ValueError, match="voxel_size or resolution"):
        geo.swept_volume_field([box], xf)
    with pytest.raises(ValueError, match="cannot be combined"):
        geo.swept_volume_field([box], xf, voxel_size=0.1, lower=(0, 0, 0), upper=(1, 1, 1))
    with pytest.raises(ValueError, match="both lower and upper"):
        geo.swept_volume_field([box], xf, resolution=(4, 4, 4), lower=(0, 0, 0))
    with pytest.raises(ValueError, match="positive"):
        geo.swept_volume_field([box], xf, voxel_size=0.0)
    with pytest.raises(ValueError, match="at least 2"):
        geo.swept_volume_field([box], xf, resolution=(1, 4, 4))
    with pytest.raises(ValueError, match="three entries"):
        geo.swept_volume_field([box], xf, resolution=(4, 4))
    with pytest.raises(ValueError, match="more than"):
        geo.swept_volume_field([box], xf, voxel_size=1e-4)
    with pytest.raises(ValueError, match=r"shape \(3, 7\)"):
        geo.swept_volume_field([box], xf[0], voxel_size=0.1)
    with pytest.raises(ValueError, match="2 meshes"):
        geo.swept_volume_field([box, box], xf, voxel_size=0.1)
    with pytest.raises(ValueError, match="at least one pose"):
        geo.swept_volume_field([box], xf[:, :0], voxel_size=0.1)
    bad_q = xf.copy()
    bad_q[0, 1, 3:] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match=r"transforms\[0, 1\].*unit quaternions"):
        geo.swept_volume_bounds([box], bad_q)
    with pytest.raises(ValueError, match="at least one mesh"):
        geo.swept_volume_field([], xf, voxel_size=0.1)
    with pytest.raises(TypeError, match="sequence"):
        geo.swept_volume_field(box, xf, voxel_size=0.1)
    with pytest.raises(TypeError, match=r"meshes\[0\]"):
        geo.swept_volume_field([3], xf, voxel_size=0.1)
    with pytest.raises(ValueError, match="sign_mode"):
        geo.swept_volume_field([box], xf, voxel_size=0.1, sign_mode=7)
    with pytest.raises(ValueError, match="threshold must be positive"):
        geo.swept_volume_mesh([box], xf, voxel_size=0.1, sign_mode=Mode.NO_SIGN)
