"""The examples run and agree with their NumPy references (small sizes)."""

from __future__ import annotations

from treadle.examples import nbody, saxpy, stencil


def test_saxpy_example():
    assert saxpy.run(10000) < 1e-5


def test_nbody_example():
    r = nbody.run(128, 20, quiet=True)
    assert r["error"] < 1e-4
    assert r["drift"] < 1e-4


def test_stencil_example():
    assert stencil.run(24, 5) < 1e-5


# --- the simulation gallery (small configurations; each asserts on its sanity figures and its pictures) ---

import os  # noqa: E402

import numpy as np  # noqa: E402

from treadle.examples import _image  # noqa: E402


def _pngs(out: str, count: int) -> list[np.ndarray]:
    names = sorted(n for n in os.listdir(out) if n.endswith(".png"))
    assert len(names) == count
    images = [_image.read_png(os.path.join(out, n)) for n in names]
    for img in images:
        assert img.ndim == 3 and img.shape[2] == 3 and img.shape[0] > 0
        assert img.std() > 5.0  # not a blank picture
    return images


def test_png_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (7, 11, 3), dtype=np.uint8)
    path = _image.write_png(str(tmp_path / "a.png"), img)
    assert np.array_equal(_image.read_png(path), img)
    data = bytearray(open(path, "rb").read())
    data[40] ^= 0xFF  # corrupt a byte inside a chunk: the CRC check must catch it
    open(path, "wb").write(bytes(data))
    import pytest

    with pytest.raises(ValueError):
        _image.read_png(path)


def test_dem_example(tmp_path):
    from treadle.examples import dem

    r = dem.run(str(tmp_path), frames=2, count=300, seconds=1.2, size=64, quiet=True)
    assert r["ok"] and r["max_overlap"] < 0.05 and r["energy_end"] < r["energy_start"]
    _pngs(str(tmp_path), 3)


def test_sph_example(tmp_path):
    from treadle.examples import sph

    r = sph.run(str(tmp_path), frames=2, spacing=0.07, seconds=0.3, size=64, quiet=True)
    assert r["ok"] and r["density_error"] < 0.03
    _pngs(str(tmp_path), 3)


def test_cloth_example(tmp_path):
    from treadle.examples import cloth

    r = cloth.run(str(tmp_path), frames=2, res=16, seconds=0.4, size=64, quiet=True)
    assert r["ok"] and r["max_penetration"] < 1e-3 and r["max_strain"] < 0.1
    _pngs(str(tmp_path), 3)


def test_raycast_example(tmp_path):
    from treadle.examples import raycast

    r = raycast.run(str(tmp_path), frames=1, size=48, segments=60, samples=400, quiet=True)
    assert r["ok"] and r["checked"] == 400 and r["max_t_error"] < 1e-3 and r["coverage"] > 0.2
    _pngs(str(tmp_path), 1)


def test_nanovdb_raymarch_example(tmp_path):
    from treadle.examples import nanovdb_raymarch

    r = nanovdb_raymarch.run(str(tmp_path), frames=1, size=48, voxel=0.04, samples=300, quiet=True)
    assert r["ok"] and r["checked"] == 300 and r["coverage"] > 0.05
    assert (tmp_path / "torus.nvdb").exists()
    _pngs(str(tmp_path), 1)


def test_marching_cubes_example(tmp_path):
    from treadle.examples import marching_cubes

    r = marching_cubes.run(str(tmp_path), frames=1, res=40, size=48, quiet=True)
    assert r["ok"] and r["closed"] and r["oriented"] and r["volume_error"] < 0.02
    _pngs(str(tmp_path), 1)
    obj = (tmp_path / "torus.obj").read_text().splitlines()
    obj_v = np.array([[float(x) for x in line.split()[1:]] for line in obj if line.startswith("v ")])
    obj_f = np.array([[int(x) - 1 for x in line.split()[1:]] for line in obj if line.startswith("f ")])
    assert len(obj_f) == r["triangles"] and len(obj_v) == r["vertices"]
    # the binary PLY holds the same mesh
    data = (tmp_path / "torus.ply").read_bytes()
    head, body = data.split(b"end_header\n", 1)
    assert f"element vertex {len(obj_v)}".encode() in head and f"element face {len(obj_f)}".encode() in head
    ply_v = np.frombuffer(body[: 12 * len(obj_v)], "<f4").reshape(-1, 3)
    faces = np.frombuffer(body[12 * len(obj_v):], dtype=[("n", "u1"), ("i", "<i4", (3,))])
    assert (faces["n"] == 3).all() and np.array_equal(faces["i"], obj_f)
    np.testing.assert_allclose(ply_v, obj_v, rtol=0, atol=1e-5)


def test_isosurface_example(tmp_path):
    from treadle.examples import isosurface

    r = isosurface.run(str(tmp_path), frames=1, res=40, size=48, quiet=True)
    assert r["ok"] and r["sparse_equals_dense"] and r["marching_cubes_closed"] and r["surface_nets_closed"]
    assert r["capsule_closed"] and r["capsule_volume_error"] < 0.03 and r["sparse_evaluations"] < r["dense_nodes"]
    _pngs(str(tmp_path), 1)
    obj = (tmp_path / "capsule.obj").read_text().splitlines()
    assert sum(line.startswith("f ") for line in obj) > 0
