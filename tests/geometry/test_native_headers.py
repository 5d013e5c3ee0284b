"""The geometry headers instantiate cleanly: warning-free on the host, and for CUDA when nvcc is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "treadle" / "native"

# Every query template instantiated once (result structs mirror the emitted MeshQueryPoint / MeshQueryRay).
SOURCE = r"""
#include "treadle.h"
struct MQP { bool result; float sign; int face; float u; float v; };
struct MQR { bool result; float sign; int face; float t; float u; float v; treadle::vec_t<3, float> normal; };
KERNEL void k(treadle::uint64 g, treadle::uint64 b, treadle::uint64 m, float* out) {
    using namespace treadle;
    vec_t<3, float> p(0.1f, 0.2f, 0.3f);
    int32 i = 0;
    float s = 0;
    auto q = hash_grid_query(g, p, 0.5f);
    while (hash_grid_query_next(q, i)) s += i;
    auto qd = hash_grid_query(g, vec_t<3, double>(0.1, 0.2, 0.3), 0.5, 3);
    while (hash_grid_query_next(qd, i)) s += i;
    auto qh = hash_grid_query(g, vec_t<3, half>(half(0.1f), half(0.2f), half(0.3f)), half(0.5f));
    while (hash_grid_query_next(qh, i)) s += i;
    auto bq = bvh_query_ray(b, p, p);
    while (bvh_query_next(bq, i)) s += i;
    auto bs = bvh_query_capsule(b, p, p, 1.0f, 2);
    while (bvh_query_next(bs, i, 2.0f)) s += i;
    MQP r1 = mesh_query_point<MQP>(m, p, 1.0f);
    MQP r2 = mesh_query_point_sign_winding_number<MQP>(m, p, 1.0f);
    MQP r3 = mesh_query_point_sign_normal<MQP>(m, p, 1.0f, 1e-3f);
    MQP r4 = mesh_query_point_sign_parity<MQP>(m, p, 1.0f, 3, 0.1f);
    MQP r5 = mesh_query_furthest_point_no_sign<MQP>(m, p, 1.0);
    MQR h = mesh_query_ray<MQR>(m, p, p, 1.0f);
    float inside, u, v, t, sign;
    int32 face;
    vec_t<3, float> n;
    mesh_query_point(m, p, 1.0f, inside, face, u, v);
    mesh_query_ray(m, p, p, 1.0f, t, u, v, sign, n, face);
    auto mq = mesh_query_sphere(m, p, 1.0f);
    while (bvh_query_next(mq, i)) s += i;
    s += mesh_query_ray_count_intersections(m, p, p) + mesh_query_ray_anyhit(m, p, p, 1.0f);
    s += r1.u + r2.u + r3.u + r4.u + r5.u + h.t + mesh_eval_position(m, 0, 0.1f, 0.2f)[0];
    s += mesh_eval_face_normal(m, 0)[1] + mesh_eval_velocity(m, 1, 0.5f, 0.5f)[2] + mesh_get_point(m, 2)[0];
    s += closest_point_edge_edge(p, p, p, p, 1e-6f)[0] + intersect_tri_tri(p, p, p, p, p, p);
    s += hash_grid_point_id(g, 0) + bvh_get_group_root(b, 1) + mesh_get_index(m, 0) + (float)mesh_get_bvh(m);
    s += bvh_build_serial(b) + bvh_refit_serial(b) + mesh_build_serial(m) + mesh_refit_serial(m);
    out[0] = s;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_host_build_is_warning_free(tmp_path: Path) -> None:
    src = tmp_path / "geometry.cpp"
    src.write_text("#define KERNEL\n" + SOURCE)
    cmd = ["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-c", f"-I{NATIVE}", str(src), "-o",
           str(tmp_path / "g.o")]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_headers_compile_for_cuda(tmp_path: Path) -> None:
    src = tmp_path / "geometry.cu"
    src.write_text("#define KERNEL __global__\n" + SOURCE)
    # both passes (the host pass catches device-only calls from host/device code), without optimisation
    cmd = ["nvcc", "-std=c++17", "-arch=sm_80", "-c", "-Xcicc", "-O0", "-Xptxas", "-O0", f"-I{NATIVE}", str(src),
           "-o", str(tmp_path / "g.o")]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
