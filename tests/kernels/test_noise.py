"""Noise builtins: values, bounds, continuity, periodicity, divergence-free curl noise, and adjoints.

The adjoints (``adj_noise``, ``adj_pnoise``, ``adj_curlnoise`` in ``treadle/native/noise.h``) are checked against
finite differences directly, by a small C++ program built with the host compiler (every overload and arity), and end
to end through ``wp.Tape``. A second program, built with nvcc when one is installed, checks that the random and noise
headers compile for the device.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import treadle as wp

NATIVE = Path(wp.__file__).resolve().parent / "native"


@wp.kernel
def noise_eval(seed: int, x: wp.array(dtype=wp.vec4), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed)
    p = x[i]
    out[i, 0] = wp.noise(s, p[0])
    out[i, 1] = wp.noise(s, wp.vec2(p[0], p[1]))
    out[i, 2] = wp.noise(s, wp.vec3(p[0], p[1], p[2]))
    out[i, 3] = wp.noise(s, p)
    out[i, 4] = wp.pnoise(s, p[0], 3)
    out[i, 5] = wp.pnoise(s, wp.vec2(p[0], p[1]), 3, 5)
    out[i, 6] = wp.pnoise(s, wp.vec3(p[0], p[1], p[2]), 3, 5, 2)
    out[i, 7] = wp.pnoise(s, p, 3, 5, 2, 4)


@wp.kernel
def curl_eval(seed: int, octaves: int, x: wp.array(dtype=wp.vec4), c2: wp.array(dtype=wp.vec2),
              c3: wp.array(dtype=wp.vec3), c4: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(seed)
    p = x[i]
    c2[i] = wp.curlnoise(s, wp.vec2(p[0], p[1]), octaves, 2.0, 0.5)
    c3[i] = wp.curlnoise(s, wp.vec3(p[0], p[1], p[2]), octaves, 2.0, 0.5)
    c4[i] = wp.curlnoise(s, p, octaves, 2.0, 0.5)


@wp.kernel
def curl_defaults(seed: wp.uint32, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.curlnoise(seed, x[i])
    out[i, 1] = wp.curlnoise(seed, x[i], 1)
    out[i, 2] = wp.curlnoise(seed, x[i], octaves=1, lacunarity=2.0)
    out[i, 3] = wp.curlnoise(seed, x[i], 0)


def run_noise(device: str, pts: np.ndarray, seed: int = 1) -> np.ndarray:
    x = wp.array(pts.astype(np.float32), dtype=wp.vec4, device=device)
    out = wp.zeros((len(pts), 8), dtype=float, device=device)
    wp.launch(noise_eval, dim=len(pts), inputs=[seed, x, out], device=device)
    return out.numpy().astype(np.float64)


def run_curl(device: str, pts: np.ndarray, octaves: int = 1, seed: int = 1) -> list[np.ndarray]:
    n = len(pts)
    x = wp.array(pts.astype(np.float32), dtype=wp.vec4, device=device)
    c2 = wp.zeros(n, dtype=wp.vec2, device=device)
    c3 = wp.zeros(n, dtype=wp.vec3, device=device)
    c4 = wp.zeros(n, dtype=wp.vec3, device=device)
    wp.launch(curl_eval, dim=n, inputs=[seed, octaves, x, c2, c3, c4], device=device)
    return [c.numpy().astype(np.float64) for c in (c2, c3, c4)]


def points(n: int, lo: float = -40.0, hi: float = 40.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, (n, 4)).astype(np.float32)


# ----------------------------------------------------------------------------------------------------------------
# Values
# ----------------------------------------------------------------------------------------------------------------


def test_python_scope_matches_kernel(device):
    pts = points(100)
    got = run_noise(device, pts)
    s = wp.uint32(wp.rand_init(1))
    for i, p in enumerate(pts):
        p = [float(c) for c in p]
        host = [
            wp.noise(s, p[0]), wp.noise(s, wp.vec2(*p[:2])), wp.noise(s, wp.vec3(*p[:3])), wp.noise(s, wp.vec4(*p)),
            wp.pnoise(s, p[0], 3), wp.pnoise(s, wp.vec2(*p[:2]), 3, 5), wp.pnoise(s, wp.vec3(*p[:3]), 3, 5, 2),
            wp.pnoise(s, wp.vec4(*p), 3, 5, 2, 4),
        ]
        # the same operations, but the C++ compiler may fuse multiply-adds: agreement to rounding, not to the bit
        np.testing.assert_allclose(host, got[i], atol=5e-6)
    c2, c3, c4 = run_curl(device, pts[:20], octaves=3)
    for i, p in enumerate(pts[:20]):
        p = [float(c) for c in p]
        np.testing.assert_allclose(list(wp.curlnoise(s, wp.vec2(*p[:2]), 3, 2.0, 0.5)), c2[i], atol=5e-5)
        np.testing.assert_allclose(list(wp.curlnoise(s, wp.vec3(*p[:3]), 3, 2.0, 0.5)), c3[i], atol=5e-5)
        np.testing.assert_allclose(list(wp.curlnoise(s, wp.vec4(*p), 3, 2.0, 0.5)), c4[i], atol=5e-5)


def test_bounded_centred_and_zero_on_the_lattice(device):
    out = run_noise(device, points(50_000))
    for d in range(8):
        n = d % 4 + 1
        v = out[:, d]
        assert np.abs(v).max() <= math.sqrt(n) / 2 + 1e-6, d
        assert abs(v.mean()) < 0.01, d
        assert 0.08 < v.std() < 0.35, d  # the reference's scale: about 0.14-0.22
    lattice = np.random.default_rng(1).integers(-100, 100, (500, 4)).astype(np.float32)
    assert np.all(run_noise(device, lattice) == 0.0)


def test_seeds_select_different_fields(device):
    pts = points(20_000, -1000.0, 1000.0)
    a, b = run_noise(device, pts, seed=1), run_noise(device, pts, seed=2)
    for d in range(4):
        assert abs(np.corrcoef(a[:, d], b[:, d])[0, 1]) < 0.05
    # short periods leave few lattice gradients (3 in 1-D), so only require the fields to differ
    assert np.all(np.abs(a[:, 4:] - b[:, 4:]).max(axis=0) > 0.1)


def test_continuous(device):
    pts = points(20_000).astype(np.float64)
    step = np.random.default_rng(2).normal(size=pts.shape)
    step *= 1e-3 / np.linalg.norm(step, axis=1, keepdims=True)
    a, b = run_noise(device, pts), run_noise(device, pts + step)
    delta = np.abs(a - b)
    assert delta.max() < 4e-3  # |gradient| stays below 4
    assert np.all(delta.mean(axis=0) > 1e-4)  # and the field does vary
    # across cell faces too: just below and just above integer coordinates
    faces = np.floor(pts) + 1.0
    below, above = run_noise(device, faces - 1e-3), run_noise(device, faces + 1e-3)
    assert np.abs(below - above).max() < 1e-2


def test_pnoise_is_periodic(device):
    periods = np.array([3, 5, 2, 4], dtype=np.float32)
    pts = points(5_000, -20.0, 20.0)
    base = run_noise(device, pts)
    for k in (-3, 1, 7):
        shifted = run_noise(device, pts + k * periods)
        np.testing.assert_allclose(shifted[:, 4:], base[:, 4:], atol=2e-5)
        assert np.abs(shifted[:, :4] - base[:, :4]).max() > 0.1  # plain noise does not repeat


def test_pnoise_with_long_periods_is_noise(device):
    @wp.kernel
    def long_period(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float, ndim=2)):
        i = wp.tid()
        s = wp.rand_init(9)
        out[i, 0] = wp.noise(s, x[i])
        out[i, 1] = wp.pnoise(s, x[i], 1000, 1000, 1000)

    x = wp.array(np.random.default_rng(3).uniform(0.0, 998.0, (2000, 3)).astype(np.float32), dtype=wp.vec3,
                 device=device)
    out = wp.zeros((2000, 2), dtype=float, device=device)
    wp.launch(long_period, dim=2000, inputs=[x, out], device=device)
    r = out.numpy()
    np.testing.assert_array_equal(r[:, 0], r[:, 1])


def test_curlnoise_is_divergence_free(device):
    base = points(400, -10.0, 10.0).astype(np.float64)
    for octaves, h in ((1, 1e-2), (3, 2.5e-3)):  # the finest octave has 4x the frequency
        # central differences of each component along its own axis (x, y, z; the 4th input is time)
        plus = [run_curl(device, base + h * np.eye(4)[k], octaves) for k in range(3)]
        minus = [run_curl(device, base - h * np.eye(4)[k], octaves) for k in range(3)]
        for f, dim in ((0, 2), (1, 3), (2, 3)):
            terms = np.stack([(plus[k][f][:, k] - minus[k][f][:, k]) / (2 * h) for k in range(dim)], axis=1)
            div = terms.sum(axis=1)
            scale = np.abs(terms).mean()
            assert scale > 0.1
            assert np.abs(div).max() < 0.02 * scale, (octaves, f)


def test_curlnoise_2d_is_rotated_noise_gradient(device):
    # 2-D curl noise is (-dN/dy, dN/dx) of noise(state, xy), as in the reference
    h = 1e-3
    base = points(300, -10.0, 10.0).astype(np.float64)
    c2 = run_curl(device, base)[0]
    dx = (run_noise(device, base + h * np.eye(4)[0])[:, 1] - run_noise(device, base - h * np.eye(4)[0])[:, 1]) / (2 * h)
    dy = (run_noise(device, base + h * np.eye(4)[1])[:, 1] - run_noise(device, base - h * np.eye(4)[1])[:, 1]) / (2 * h)
    np.testing.assert_allclose(c2[:, 0], -dy, atol=5e-3)
    np.testing.assert_allclose(c2[:, 1], dx, atol=5e-3)


def test_curlnoise_octaves_and_defaults(device):
    pts = points(200, -5.0, 5.0)
    one, three = run_curl(device, pts, 1), run_curl(device, pts, 3)
    zero = run_curl(device, pts, 0)
    for a, b, z in zip(one, three, zero):
        assert np.all(z == 0.0)
        assert np.abs(a - b).max() > 0.05
        # finer octaves have weights 1/2, 1/4: the sum stays of the same magnitude
        assert 0.5 < np.linalg.norm(b, axis=1).mean() / np.linalg.norm(a, axis=1).mean() < 2.0
    x = wp.array(pts[:, :3], dtype=wp.vec3, device=device)
    out = wp.zeros((200, 4), dtype=wp.vec3, device=device)
    wp.launch(curl_defaults, dim=200, inputs=[wp.uint32(wp.rand_init(1)), x, out], device=device)
    r = out.numpy()
    np.testing.assert_array_equal(r[:, 0], one[1])
    np.testing.assert_array_equal(r[:, 1], one[1])
    np.testing.assert_array_equal(r[:, 2], one[1])
    assert np.all(r[:, 3] == 0.0)


def test_type_errors(device):
    @wp.kernel
    def wrong_periods(out: wp.array(dtype=float)):
        s = wp.rand_init(1)
        out[0] = wp.pnoise(s, wp.vec2(1.0, 2.0), 3)

    @wp.kernel
    def double_coords(out: wp.array(dtype=float)):
        s = wp.rand_init(1)
        out[0] = wp.noise(s, wp.vec3d(1.0, 2.0, 3.0))

    @wp.kernel
    def scalar_curl(out: wp.array(dtype=float)):
        s = wp.rand_init(1)
        out[0] = wp.curlnoise(s, 1.0)[0]

    out = wp.zeros(1, dtype=float, device=device)
    for k, msg in ((wrong_periods, "needs 2 period"), (double_coords, "x must be a float32"),
                   (scalar_curl, "xy must be a vec2")):
        with pytest.raises(wp.CodegenError, match=msg):
            wp.launch(k, dim=1, inputs=[out], device=device)


@wp.kernel
def noise_loss(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(3, i)
    a = wp.randf(s)  # draws advance the state; the backward pass must replay them identically
    b = wp.randn(s)
    p = x[i]
    c = wp.curlnoise(s, p, 2)
    y[i] = a * wp.noise(s, p) + b * wp.pnoise(s, wp.vec2(p[0], p[2]), 4, 3) + c[1] + wp.noise(s, p[1])


def test_kernel_gradients_through_tape(device):
    n, h = 200, 1e-3
    xn = np.random.default_rng(4).uniform(-5.0, 5.0, (n, 3)).astype(np.float32)
    x = wp.array(xn, dtype=wp.vec3, device=device, requires_grad=True)
    y = wp.zeros(n, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(noise_loss, dim=n, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=device)})
    grad = x.grad.numpy()

    def loss(xs: np.ndarray) -> np.ndarray:
        out = wp.zeros(n, dtype=float, device=device)
        wp.launch(noise_loss, dim=n, inputs=[wp.array(xs, dtype=wp.vec3, device=device), out], device=device)
        return out.numpy().astype(np.float64)

    for k in range(3):
        step = np.zeros_like(xn)
        step[:, k] = h
        fd = (loss(xn + step) - loss(xn - step)) / ((xn + step)[:, k] - (xn - step)[:, k]).astype(np.float64)
        np.testing.assert_allclose(grad[:, k], fd, atol=5e-3 * max(1.0, np.abs(fd).max()))


# ----------------------------------------------------------------------------------------------------------------
# Adjoints (C++ harness) and the device build
# ----------------------------------------------------------------------------------------------------------------

HARNESS = r"""
#include "treadle.h"
using namespace treadle;
typedef vec_t<2, float> v2;
typedef vec_t<3, float> v3;
typedef vec_t<4, float> v4;

static float comp(float x, int) { return x; }
template <unsigned N> static float comp(const vec_t<N, float>& x, int k) { return x.c[k]; }
static void bump(float& x, int, float h) { x += h; }
template <unsigned N> static void bump(vec_t<N, float>& x, int k, float h) { x.c[k] += h; }
static double err(double a, double b) { return a > b ? a - b : b - a; }

struct Stat { double err = 0, scale = 0; };
static void report(const char* name, const Stat& s) { printf("%s %.9g %.9g\n", name, s.err, s.scale); }

// Scalar fields: the adjoint with adj_ret = 1 is the gradient; compare with central differences.
template <typename X, typename F, typename A> static void scalar_check(const char* name, int dims, F f, A adj) {
    Stat st;
    uint32 rng = rand_init(17);
    const float h = 1e-3f;
    for (int t = 0; t < 400; ++t) {
        X x{};
        for (int k = 0; k < dims; ++k) bump(x, k, randf(rng, -20.0f, 20.0f));
        X g{};
        adj(x, g);
        for (int k = 0; k < dims; ++k) {
            X xp = x, xm = x;
            bump(xp, k, h);
            bump(xm, k, -h);
            const double fd = (double(f(xp)) - double(f(xm))) / (double(comp(xp, k)) - double(comp(xm, k)));
            st.err = err(fd, comp(g, k)) > st.err ? err(fd, comp(g, k)) : st.err;
            st.scale = err(fd, 0.0) > st.scale ? err(fd, 0.0) : st.scale;
        }
    }
    report(name, st);
}

// Vector fields: adj with adj_ret = e_a is row a of the Jacobian.
template <unsigned N, unsigned C, typename F, typename A> static void curl_check(const char* name, F f, A adj) {
    Stat st;
    uint32 rng = rand_init(23);
    const float h = 1e-3f;
    for (int t = 0; t < 200; ++t) {
        vec_t<N, float> x;
        for (unsigned k = 0; k < N; ++k) x.c[k] = randf(rng, -10.0f, 10.0f);
        for (unsigned a = 0; a < C; ++a) {
            vec_t<C, float> e;
            e.c[a] = 1.0f;
            vec_t<N, float> row;
            adj(x, e, row);
            for (unsigned k = 0; k < N; ++k) {
                vec_t<N, float> xp = x, xm = x;
                xp.c[k] += h;
                xm.c[k] -= h;
                const double fd = (double(f(xp).c[a]) - double(f(xm).c[a])) / (double(xp.c[k]) - double(xm.c[k]));
                st.err = err(fd, row.c[k]) > st.err ? err(fd, row.c[k]) : st.err;
                st.scale = err(fd, 0.0) > st.scale ? err(fd, 0.0) : st.scale;
            }
        }
    }
    report(name, st);
}

int main() {
    const uint32 s = rand_init(5);
    uint32 as = 0;
    int32 ai = 0;
    float af = 0.0f;
    scalar_check<float>("noise1", 1, [&](float x) { return noise(s, x); },
                        [&](float x, float& g) { adj_noise(s, x, as, g, 1.0f); });
    scalar_check<v2>("noise2", 2, [&](v2 x) { return noise(s, x); },
                     [&](v2 x, v2& g) { adj_noise(s, x, as, g, 1.0f); });
    scalar_check<v3>("noise3", 3, [&](v3 x) { return noise(s, x); },
                     [&](v3 x, v3& g) { adj_noise(s, x, as, g, 1.0f); });
    scalar_check<v4>("noise4", 4, [&](v4 x) { return noise(s, x); },
                     [&](v4 x, v4& g) { adj_noise(s, x, as, g, 1.0f); });
    scalar_check<float>("pnoise1", 1, [&](float x) { return pnoise(s, x, 3); },
                        [&](float x, float& g) { adj_pnoise(s, x, 3, as, g, ai, 1.0f); });
    scalar_check<v2>("pnoise2", 2, [&](v2 x) { return pnoise(s, x, 3, 2); },
                     [&](v2 x, v2& g) { adj_pnoise(s, x, 3, 2, as, g, ai, ai, 1.0f); });
    scalar_check<v3>("pnoise3", 3, [&](v3 x) { return pnoise(s, x, 3, 2, 4); },
                     [&](v3 x, v3& g) { adj_pnoise(s, x, 3, 2, 4, as, g, ai, ai, ai, 1.0f); });
    scalar_check<v4>("pnoise4", 4, [&](v4 x) { return pnoise(s, x, 3, 2, 4, 1); },
                     [&](v4 x, v4& g) { adj_pnoise(s, x, 3, 2, 4, 1, as, g, ai, ai, ai, ai, 1.0f); });
    curl_check<2, 2>("curl2", [&](v2 x) { return curlnoise(s, x); },
                     [&](v2 x, v2 e, v2& g) { adj_curlnoise(s, x, as, g, e); });
    curl_check<3, 3>("curl3", [&](v3 x) { return curlnoise(s, x, 1); },
                     [&](v3 x, v3 e, v3& g) { adj_curlnoise(s, x, 1, as, g, ai, e); });
    curl_check<4, 3>("curl4", [&](v4 x) { return curlnoise(s, x, 1, 2.0f); },
                     [&](v4 x, v3 e, v4& g) { adj_curlnoise(s, x, 1, 2.0f, as, g, ai, af, e); });
    curl_check<3, 3>("curl3_octaves", [&](v3 x) { return curlnoise(s, x, 3u, 1.7f, 0.6f); },
                     [&](v3 x, v3 e, v3& g) { uint32 ao = 0; adj_curlnoise(s, x, 3u, 1.7f, 0.6f, as, g, ao, af, af, e); });
    curl_check<2, 2>("curl2_octaves", [&](v2 x) { return curlnoise(s, x, 2, 2.0f, 0.5f); },
                     [&](v2 x, v2 e, v2& g) { adj_curlnoise(s, x, 2, 2.0f, 0.5f, as, g, ai, af, af, e); });
    return 0;
}
"""

CUDA_HARNESS = r"""
#include "treadle.h"
namespace treadle {  // (a global using-directive would make CUDA's own math overloads ambiguous)
__global__ void all_random(const array_t<float> cdf, float* out, vec_t<3, float>* vout) {
    uint32 s = rand_init(1, int32(threadIdx.x));
    int32 si = 3;
    out[0] = randf(s) + randf(si, 1.0f, 2.0f) + randn(s) + float(randi(s) + randi(s, 0, 4));
    out[1] = float(randu(s) + randu(s, 2u, 9u) + poisson(s, 2.0f) + poisson(s, 50.0f) + uint32(sample_cdf(s, cdf)));
    vec_t<2, float> a = sample_triangle(s) + sample_unit_ring(s) + sample_unit_disk(s) + sample_unit_square(s);
    vout[0] = sample_unit_sphere_surface(s) + sample_unit_sphere(s) + sample_unit_hemisphere_surface(s) +
              sample_unit_hemisphere(s) + sample_unit_cube(si) + vec_t<3, float>(a[0], a[1], 0.0f);
    const vec_t<4, float> x4(0.1f, 0.2f, 0.3f, 0.4f);
    const vec_t<3, float> x3(0.1f, 0.2f, 0.3f);
    const vec_t<2, float> x2(0.1f, 0.2f);
    out[2] = noise(s, 0.5f) + noise(s, x2) + noise(s, x3) + noise(s, x4) + pnoise(s, 0.5f, 2) + pnoise(s, x2, 2, 3) +
             pnoise(s, x3, 1, 2, 3) + pnoise(s, x4, 1, 2, 3, 4);
    vout[1] = curlnoise(s, x3) + curlnoise(s, x4, 2, 2.0f, 0.5f);
    uint32 as = 0;
    int32 ai = 0;
    float af = 0.0f, ax = 0.0f;
    vec_t<2, float> g2;
    vec_t<3, float> g3;
    vec_t<4, float> g4;
    adj_noise(s, 0.5f, as, ax, 1.0f);
    adj_noise(s, x4, as, g4, 1.0f);
    adj_pnoise(s, x3, 1, 2, 3, as, g3, ai, ai, ai, 1.0f);
    adj_curlnoise(s, x2, as, g2, x2);
    adj_curlnoise(s, x4, ai, af, as, g4, ai, af, x3);
    out[3] = ax + g2[0] + g3[0] + g4[0];
}
}  // namespace treadle
"""


def _compiler() -> str | None:
    for name in ("g++", "clang++", "c++"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_compiler() is None, reason="no C++ compiler found")
def test_adjoints_match_finite_differences(tmp_path):
    src = tmp_path / "noise_adjoints.cpp"
    src.write_text(HARNESS)
    exe = tmp_path / "noise_adjoints"
    cmd = [_compiler(), "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{NATIVE}", str(src), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    results = {name: (float(e), float(s)) for name, e, s in (line.split() for line in run.stdout.splitlines())}
    assert len(results) == 13
    for name, (error, scale) in results.items():
        assert scale > 0.1, name
        assert error < 2e-3 * max(scale, 1.0) * (3.0 if "octaves" in name else 1.0), (name, error, scale)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_headers_compile_for_cuda(tmp_path):
    src = tmp_path / "random_noise.cu"
    src.write_text(CUDA_HARNESS)
    cmd = ["nvcc", "-std=c++17", "-arch=sm_80", "-c", f"-I{NATIVE}", str(src), "-o", str(tmp_path / "rn.o")]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
