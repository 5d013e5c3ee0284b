"""The NanoVDB format: layouts, bit-exact round trips through files and buffers, multi-grid files, bad input."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import treadle as wp
from treadle._src.volume import build as B
from treadle._src.volume import nanovdb as nv

ROOT = Path(__file__).resolve().parents[2]

# Node sizes of NanoVDB 32.x grids (format facts: GridData 672 B, tree 64 B; per value type: root, upper, lower, leaf).
KNOWN_SIZES = {
    nv.FLOAT: (64, 270400, 33856, 2144), nv.DOUBLE: (96, 270400, 33856, 4224), nv.INT32: (64, 270400, 33856, 2144),
    nv.INT64: (96, 270400, 33856, 4224), nv.UINT32: (64, 270400, 33856, 2144), nv.VEC3F: (96, 532544, 66624, 6272),
    nv.VEC3D: (128, 794720, 99424, 12448), nv.VEC4F: (96, 532576, 66656, 8320),
    nv.VEC4D: (160, 1056896, 132224, 16544), nv.INDEX: (96, 270400, 33856, 96), nv.ONINDEX: (96, 270400, 33856, 96),
}


@pytest.mark.parametrize("code", sorted(KNOWN_SIZES))
def test_layout_sizes(code):
    lay = nv.LAYOUTS[code]
    assert (lay.root_size, lay.upper_size, lay.lower_size, lay.leaf_size) == KNOWN_SIZES[code]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_native_layouts_match_python(tmp_path):
    """volume.h derives the same offsets as nanovdb.py (checked by static_asserts the C++ compiler evaluates)."""
    ctype = {nv.FLOAT: "float32", nv.DOUBLE: "float64", nv.INT32: "int32", nv.INT64: "int64", nv.UINT32: "uint32",
             nv.VEC3F: "nvdb::v3f", nv.VEC3D: "nvdb::v3d", nv.VEC4F: "nvdb::v4f", nv.VEC4D: "nvdb::v4d"}
    fields = ("root_background", "root_size", "tile_value", "tile_size", "upper_table", "upper_size", "lower_table",
              "lower_size", "leaf_table", "leaf_size")
    lines = ['#include "treadle.h"', "using namespace treadle;"]
    for code, lay in nv.LAYOUTS.items():
        expr = "nvdb::index_layout()" if lay.is_index else f"nvdb::traits<{ctype[code]}>::layout()"
        for f in fields:
            lines.append(f"static_assert({expr}.{f} == {getattr(lay, f)}, \"{lay.name}.{f}\");")
        lines.append(f"static_assert({expr}.stride == {lay.table_stride}, \"{lay.name}.stride\");")
    src = tmp_path / "layouts.cpp"
    src.write_text("\n".join(lines) + "\n")
    r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", f"-I{ROOT / 'treadle' / 'native'}", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def _grids():
    """A few grids of different types and topologies."""
    pts = np.array([[0, 0, 0], [9, 0, 0], [-3, 20, 5], [5000, 3, -300]], dtype=np.int32)
    out = {}
    for code, bg in ((nv.FLOAT, 1.5), (nv.INT32, 7), (nv.VEC3F, (1.0, 2.0, 3.0)), (nv.VEC4D, (1, 2, 3, 4)),
                     (nv.DOUBLE, -2.0), (nv.INDEX, None)):
        o = B.leaf_origins_of(pts)
        vals = None
        if bg is not None:
            lay = nv.LAYOUTS[code]
            vals = np.random.default_rng(code).integers(-50, 50, (len(o), 512, lay.components)).astype(lay.numpy_value)
        out[code] = B.build_grid(code, o, B.full_masks(len(o)), vals, None if bg is None else np.array(bg),
                                 np.eye(3) * 0.25, np.array([1.0, -2.0, 0.5]), name=f"g{code}")
    o, m = B.voxel_topology(np.array([[0, 0, 0], [1, 0, 0], [9, 0, 0], [-100, 7, 3]], dtype=np.int32))
    out[nv.ONINDEX] = B.build_grid(nv.ONINDEX, o, m, None, None, np.eye(3), np.zeros(3))
    return out


@pytest.mark.parametrize("codec", ["none", "zip"])
def test_round_trip_is_bit_exact(tmp_path, codec):
    for code, buf in _grids().items():
        vol = wp.Volume._from_bytes(buf)
        path = tmp_path / f"g{code}_{codec}.nvdb"
        vol.save_to_nvdb(str(path), codec=codec)
        back = wp.Volume.load_from_nvdb(str(path))
        assert back.array().numpy().tobytes() == buf.tobytes(), nv.type_name(code)
        # a file object and bytes read the same
        with open(path, "rb") as f:
            assert wp.Volume.load_from_nvdb(f).array().numpy().tobytes() == buf.tobytes()
        assert wp.Volume.load_from_nvdb(path.read_bytes()).array().numpy().tobytes() == buf.tobytes()


def test_blosc_round_trip(tmp_path):
    pytest.importorskip("blosc", reason="the 'blosc' package is not installed")
    buf = _grids()[nv.FLOAT]
    path = tmp_path / "b.nvdb"
    wp.Volume._from_bytes(buf).save_to_nvdb(path, codec="blosc")
    assert wp.Volume.load_from_nvdb(path).array().numpy().tobytes() == buf.tobytes()


def test_blosc_missing_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "blosc", None)
    with pytest.raises(ImportError, match="blosc"):
        wp.Volume._from_bytes(_grids()[nv.FLOAT]).save_to_nvdb(tmp_path / "b.nvdb", codec="blosc")
    data = bytearray(b"".join(nv.file_bytes([nv.parse_grid(_grids()[nv.FLOAT], 0, "t")])))
    struct.pack_into("<H", data, 14, 2)  # the segment's codec: blosc
    with pytest.raises(ImportError, match="blosc"):
        wp.Volume.load_from_nvdb(bytes(data))


def test_save_to_stream_and_unknown_codec():
    buf = _grids()[nv.INT32]
    vol = wp.Volume._from_bytes(buf)
    stream = io.BytesIO()
    vol.save_to_nvdb(stream)
    assert wp.Volume.load_from_nvdb(stream.getvalue()).array().numpy().tobytes() == buf.tobytes()
    with pytest.raises(ValueError, match="codec"):
        vol.save_to_nvdb(io.BytesIO(), codec="lzma")


def test_raw_grid_buffer_and_metadata():
    buf = _grids()[nv.FLOAT]
    vol = wp.Volume.load_from_nvdb(buf.tobytes())  # a raw grid (no file header)
    info = vol.get_grid_info()
    assert (info.name, info.type_str, info.size_in_bytes, info.grid_count) == ("g1", "float", len(buf), 1)
    np.testing.assert_allclose(np.array(info.translation), [1.0, -2.0, 0.5])
    np.testing.assert_allclose(np.array(info.transform_matrix).reshape(3, 3), np.eye(3) * 0.25)
    assert vol.get_voxel_size() == (0.25, 0.25, 0.25)
    assert vol.dtype is wp.float32 and not vol.is_index


def test_multi_grid_file(tmp_path):
    grids = _grids()
    parsed = [nv.parse_grid(grids[c], 0, "t") for c in (nv.FLOAT, nv.VEC3F, nv.ONINDEX)]
    path = tmp_path / "multi.nvdb"
    path.write_bytes(b"".join(nv.file_bytes(parsed, "zip")))
    first = wp.Volume.load_from_nvdb(path)
    second = first.load_next_grid()
    third = second.load_next_grid()
    assert third.load_next_grid() is None
    assert [v.get_grid_info().type_str for v in (first, second, third)] == ["float", "Vec3f", "OnIndex"]
    assert [v.get_grid_info().grid_index for v in (first, second, third)] == [0, 1, 2]
    assert all(v.get_grid_info().grid_count == 3 for v in (first, second, third))
    # the next grid's values are those written (indices/counts renumbered only)
    np.testing.assert_array_equal(nv.parse_grid(second.array().numpy(), 0, "x").leaf_values(),
                                  parsed[1].leaf_values())


def _bad(data: bytes, match: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.nvdb"
    path.write_bytes(data)
    with pytest.raises(nv.NanoVDBError) as err:
        wp.Volume.load_from_nvdb(str(path))
    msg = str(err.value)
    assert str(path) in msg and match in msg, msg


def test_bad_files_are_named_errors(tmp_path):
    good = b"".join(nv.file_bytes([nv.parse_grid(_grids()[nv.FLOAT], 0, "t")]))
    _bad(b"", "not a NanoVDB file", tmp_path)
    _bad(b"PK\x03\x04" + b"\0" * 100, "magic number", tmp_path)
    _bad(good[:-1000], "truncated", tmp_path)
    _bad(good[:100], "truncated", tmp_path)
    bad_version = bytearray(good)
    struct.pack_into("<I", bad_version, 8, nv.make_version(31, 0, 0))
    _bad(bytes(bad_version), "version 31.0.0", tmp_path)
    bad_type = bytearray(good)
    struct.pack_into("<I", bad_type, 16 + 176 + 3 + nv.OFF_TYPE, 9)  # Half: not supported
    _bad(bytes(bad_type), "not supported", tmp_path)
    bad_child = bytearray(good)
    struct.pack_into("<q", bad_child, 16 + 176 + 3 + nv.GRID_SIZE + 64 + 64 + 8, 12345)  # root tile's child offset
    _bad(bytes(bad_child), "points at byte", tmp_path)
    zipped = b"".join(nv.file_bytes([nv.parse_grid(_grids()[nv.FLOAT], 0, "t")], "zip"))
    damaged = bytearray(zipped)
    damaged[300] ^= 0xFF
    _bad(bytes(damaged), "zip", tmp_path)
    with pytest.raises(OSError, match="missing.nvdb"):
        wp.Volume.load_from_nvdb(str(tmp_path / "missing.nvdb"))


FUZZ = textwrap.dedent("""
    import sys, numpy as np, treadle as wp
    from treadle._src.volume import nanovdb as nv
    data = open(sys.argv[1], "rb").read()
    rng = np.random.default_rng(int(sys.argv[2]))

    @wp.kernel
    def probe(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), d: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        p = pts[i]
        g = wp.vec3()
        s = wp.volume_sample_f(vid, p, wp.Volume.LINEAR) + wp.volume_sample_grad_f(vid, p, wp.Volume.LINEAR, g)
        s += wp.volume_sample_index(vid, p, wp.Volume.LINEAR, d, 0.0) + float(wp.volume_lookup_index(vid, 1, 2, 3))
        s += wp.volume_lookup_f(vid, int(p[0]), int(p[1]), int(p[2])) + float(wp.volume_sample_i(vid, p))
        v = wp.volume_sample_v(vid, p, wp.Volume.CLOSEST)
        out[i] = s + g[0] + v[1] + float(wp.volume_voxel_count(vid))

    ok = failed = 0
    for trial in range(int(sys.argv[3])):
        b = bytearray(data)
        if trial % 3 == 0:
            b = b[:int(rng.integers(0, len(b)))]
        else:
            for _ in range(int(rng.integers(1, 6))):
                at = int(rng.integers(0, len(b)))
                b[at] ^= 1 << int(rng.integers(0, 8))
        try:
            vol = wp.Volume.load_from_nvdb(bytes(b))
        except (nv.NanoVDBError, ImportError) as e:
            assert "NanoVDB" in str(e) or "blosc" in str(e), e
            failed += 1
            continue
        pts = wp.array(rng.uniform(-40, 60, (256, 3)).astype(np.float32), dtype=wp.vec3)
        d = wp.zeros(max(vol.get_voxel_count(), 1), dtype=float)
        out = wp.zeros(256, dtype=float)
        wp.launch(probe, 256, inputs=[vol.id, pts, d, out])
        vol.get_voxels(); vol.get_tiles()
        ok += 1
    print("OK", ok, failed)
""")


@pytest.mark.parametrize("code", [nv.FLOAT, nv.ONINDEX])
def test_fuzzed_files_never_crash(tmp_path, code):
    """Truncations and bit flips either load (then every builtin reads in bounds) or raise a NanoVDBError."""
    grid = nv.parse_grid(_grids()[code], 0, "t")
    path = tmp_path / "fuzz.nvdb"
    path.write_bytes(b"".join(nv.file_bytes([grid])))
    script = tmp_path / "fuzz.py"
    script.write_text(FUZZ)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, str(script), str(path), str(code), "60"], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    ok, failed = map(int, r.stdout.split("OK")[1].split())
    assert failed > 0 and ok + failed == 60
