"""Random numbers and samplers: determinism, kernel/Python-scope agreement, and distributions.

Statistics use NumPy only, on about 1e5 draws with fixed seeds (so every run sees the same numbers); thresholds are
at roughly the 1e-3 level or stricter of the reference distributions, so a correct generator passes with margin.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import treadle as wp

N = 100_000


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------


@wp.kernel
def uniform_draws(seed: int, out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    for j in range(out.shape[1]):
        out[i, j] = wp.randf(s)


@wp.kernel
def single_seed_draws(seed: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed)
    a = wp.randf(s)
    b = wp.randf(s)
    out[i] = a - b


@wp.kernel
def int_draws(seed: int, lo: int, hi: int, iout: wp.array(dtype=int, ndim=2), uout: wp.array(dtype=wp.uint32, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    iout[i, 0] = wp.randi(s)
    iout[i, 1] = wp.randi(s, lo, hi)
    uout[i, 0] = wp.randu(s)
    uout[i, 1] = wp.randu(s, wp.uint32(lo), wp.uint32(hi))


@wp.kernel
def float_draws(seed: int, lam: float, out: wp.array(dtype=float, ndim=2), counts: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i, 0] = wp.randn(s)
    out[i, 1] = wp.randf(s, -2.0, 3.0)
    counts[i] = wp.poisson(s, lam)


@wp.kernel
def first_draws(seed: int, states: wp.array(dtype=wp.uint32), f: wp.array(dtype=float, ndim=2),
                u: wp.array(dtype=wp.uint32, ndim=2), k: wp.array(dtype=int, ndim=2)):
    # The first draw of each function from the same state, for comparison with Python-scope calls.
    i = wp.tid()
    s0 = wp.rand_init(seed, i)
    states[i] = s0
    s = s0
    f[i, 0] = wp.randf(s)
    s = s0
    f[i, 1] = wp.randf(s, -1.5, 2.5)
    s = s0
    f[i, 2] = wp.randn(s)
    s = s0
    u[i, 0] = wp.randu(s)
    s = s0
    u[i, 1] = wp.randu(s, wp.uint32(7), wp.uint32(4000000000))
    s = s0
    u[i, 2] = wp.poisson(s, 2.5)
    s = s0
    u[i, 3] = wp.poisson(s, 137.0)
    s = s0
    k[i, 0] = wp.randi(s)
    s = s0
    k[i, 1] = wp.randi(s, -1000, 1000)
    s = s0
    k[i, 2] = wp.randi(s, -2147483647, 2147483647)
    u[i, 4] = wp.rand_init(seed)


@wp.kernel
def int32_state(seed: int, out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    t = int(s)  # an int32 state holds the same 32 bits
    out[i, 0] = wp.randf(s)
    out[i, 1] = wp.randf(t)
    out[i, 2] = wp.randf(s)
    out[i, 3] = wp.randf(t)


@wp.kernel
def cdf_draws(seed: int, cdf: wp.array(dtype=float), out: wp.array(dtype=int)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i] = wp.sample_cdf(s, cdf)


SAMPLERS = [
    "sample_triangle", "sample_unit_ring", "sample_unit_disk", "sample_unit_square",
    "sample_unit_sphere_surface", "sample_unit_sphere", "sample_unit_hemisphere_surface", "sample_unit_hemisphere",
    "sample_unit_cube",
]


@wp.kernel
def sampler_draws(seed: int, which: int, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    p = wp.vec3(0.0, 0.0, 0.0)
    if which == 0:
        t = wp.sample_triangle(s)
        p = wp.vec3(t[0], t[1], 0.0)
    elif which == 1:
        t = wp.sample_unit_ring(s)
        p = wp.vec3(t[0], t[1], 0.0)
    elif which == 2:
        t = wp.sample_unit_disk(s)
        p = wp.vec3(t[0], t[1], 0.0)
    elif which == 3:
        t = wp.sample_unit_square(s)
        p = wp.vec3(t[0], t[1], 0.0)
    elif which == 4:
        p = wp.sample_unit_sphere_surface(s)
    elif which == 5:
        p = wp.sample_unit_sphere(s)
    elif which == 6:
        p = wp.sample_unit_hemisphere_surface(s)
    elif which == 7:
        p = wp.sample_unit_hemisphere(s)
    else:
        p = wp.sample_unit_cube(s)
    out[i] = p


# ----------------------------------------------------------------------------------------------------------------
# Statistics helpers (NumPy only)
# ----------------------------------------------------------------------------------------------------------------


def ks_stat(x: np.ndarray, cdf=lambda v: v) -> float:
    """sqrt(n) * Kolmogorov-Smirnov distance to a continuous CDF (below 1.95 with probability 0.999)."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = len(x)
    c = cdf(x)
    i = np.arange(1, n + 1)
    return float(max((i / n - c).max(), (c - (i - 1) / n).max()) * math.sqrt(n))


def assert_chi2(observed: np.ndarray, expected: np.ndarray) -> None:
    """Pearson's chi-square against a bound about 5 sigma above its mean (df)."""
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert abs(observed.sum() - expected.sum()) < 1e-6 * expected.sum() + 1e-9
    stat = float(((observed - expected) ** 2 / expected).sum())
    df = len(observed) - 1
    assert stat < df + 5 * math.sqrt(2 * df), f"chi2 = {stat:.1f} for {df} degrees of freedom"


def assert_uniform01(x: np.ndarray, bins: int = 100) -> None:
    assert x.min() >= 0.0 and x.max() < 1.0
    assert ks_stat(x) < 1.95
    counts = np.histogram(x, bins=bins, range=(0.0, 1.0))[0]
    assert_chi2(counts, np.full(bins, len(x) / bins))


def launch_uniform(device: str, seed: int, threads: int, per_thread: int) -> np.ndarray:
    out = wp.zeros((threads, per_thread), dtype=float, device=device)
    wp.launch(uniform_draws, dim=threads, inputs=[seed, out], device=device)
    return out.numpy()


def sampler(device: str, name: str, seed: int = 11, n: int = N) -> np.ndarray:
    out = wp.zeros(n, dtype=wp.vec3, device=device)
    wp.launch(sampler_draws, dim=n, inputs=[seed, SAMPLERS.index(name), out], device=device)
    return out.numpy().astype(np.float64)


# ----------------------------------------------------------------------------------------------------------------
# Determinism and state handling
# ----------------------------------------------------------------------------------------------------------------


def test_same_seed_same_numbers_different_offsets_and_seeds_differ(device):
    a = launch_uniform(device, 42, 1000, 4)
    b = launch_uniform(device, 42, 1000, 4)
    c = launch_uniform(device, 43, 1000, 4)
    np.testing.assert_array_equal(a, b)
    assert np.mean(a == c) < 0.01
    # different thread offsets start different sequences; successive draws in one thread differ
    assert len(np.unique(a[:, 0])) > 990
    assert np.mean(a[:, 0] == a[:, 1]) < 0.01
    # each value is a multiple of 2^-24
    np.testing.assert_array_equal(a * 2.0**24, np.floor(a * 2.0**24))


def test_state_advances_in_place(device):
    out = wp.zeros(4, dtype=float, device=device)
    wp.launch(single_seed_draws, dim=4, inputs=[7, out], device=device)
    d = out.numpy()
    assert np.all(d != 0.0) and np.all(d == d[0])


def test_int32_state_variable_is_the_same_generator(device):
    out = wp.zeros((64, 4), dtype=float, device=device)
    wp.launch(int32_state, dim=64, inputs=[5, out], device=device)
    r = out.numpy()
    np.testing.assert_array_equal(r[:, 0], r[:, 1])
    np.testing.assert_array_equal(r[:, 2], r[:, 3])
    assert np.all(r[:, 0] != r[:, 2])


def test_python_scope_matches_kernel(device):
    n, seed = 64, 2024
    states = wp.zeros(n, dtype=wp.uint32, device=device)
    f = wp.zeros((n, 3), dtype=float, device=device)
    u = wp.zeros((n, 5), dtype=wp.uint32, device=device)
    k = wp.zeros((n, 3), dtype=int, device=device)
    wp.launch(first_draws, dim=n, inputs=[seed, states, f, u, k], device=device)
    states, f, u, k = states.numpy(), f.numpy(), u.numpy(), k.numpy()
    assert np.all(u[:, 4] == wp.rand_init(seed))
    for i in range(n):
        assert wp.rand_init(seed, i) == states[i]
        s = wp.uint32(int(states[i]))
        assert wp.randf(s) == f[i, 0]
        assert wp.randf(s) == f[i, 0]  # Python scope does not advance the state
        assert wp.randf(s, -1.5, 2.5) == f[i, 1]
        assert wp.randn(s) == pytest.approx(f[i, 2], abs=1e-6)
        assert wp.randu(s) == u[i, 0]
        assert wp.randu(s, wp.uint32(7), wp.uint32(4000000000)) == u[i, 1]
        assert wp.poisson(s, 2.5) == u[i, 2]
        assert wp.poisson(s, 137.0) == u[i, 3]
        assert wp.randi(s) == k[i, 0]
        assert wp.randi(s, -1000, 1000) == k[i, 1]
        assert wp.randi(s, -2147483647, 2147483647) == k[i, 2]
    for name in SAMPLERS:
        got = sampler(device, name, seed=3, n=32)
        for i in range(32):
            host = getattr(wp, name)(wp.uint32(wp.rand_init(3, i)))
            np.testing.assert_allclose(np.array(list(host) + [0.0] * (3 - len(host))), got[i], atol=2e-7)


def test_literal_state_and_wrong_types_are_errors(device):
    @wp.kernel
    def literal_state(out: wp.array(dtype=float)):
        out[0] = wp.randf(wp.rand_init(3))

    @wp.kernel
    def float_state(out: wp.array(dtype=float)):
        s = 1.5
        out[0] = wp.randf(s)

    @wp.kernel
    def float_cdf_index(out: wp.array(dtype=float), cdf: wp.array(dtype=wp.float64)):
        s = wp.rand_init(1)
        out[0] = float(wp.sample_cdf(s, cdf))

    out = wp.zeros(1, dtype=float, device=device)
    with pytest.raises(wp.CodegenError, match="must be a variable"):
        wp.launch(literal_state, dim=1, inputs=[out], device=device)
    with pytest.raises(wp.CodegenError, match="state must be an int32 or uint32"):
        wp.launch(float_state, dim=1, inputs=[out], device=device)
    cdf = wp.zeros(3, dtype=wp.float64, device=device)
    with pytest.raises(wp.CodegenError, match="cdf must be a 1-d float32 array"):
        wp.launch(float_cdf_index, dim=1, inputs=[out, cdf], device=device)
    with pytest.raises(RuntimeError, match="only be called inside"):
        wp.sample_cdf(wp.uint32(1), cdf)


# ----------------------------------------------------------------------------------------------------------------
# Distributions
# ----------------------------------------------------------------------------------------------------------------


def test_randf_uniform_and_uncorrelated(device):
    a = launch_uniform(device, 1234, N // 4, 4)
    assert_uniform01(a.reshape(-1))
    for j in range(4):
        assert ks_stat(a[:, j]) < 1.95
    # consecutive draws in a thread, and the same draw in neighbouring threads
    lim = 5.0 / math.sqrt(a.shape[0])
    for x, y in ((a[:, 0], a[:, 1]), (a[:, 2], a[:, 3]), (a[:-1, 0], a[1:, 0])):
        assert abs(np.corrcoef(x, y)[0, 1]) < lim
    # pairs fill the unit square evenly
    h = np.histogram2d(a[:, 0], a[:, 1], bins=10, range=[[0, 1], [0, 1]])[0].reshape(-1)
    assert_chi2(h, np.full(100, a.shape[0] / 100))


def test_randi_randu_ranges_and_bits(device):
    iout = wp.zeros((N, 2), dtype=int, device=device)
    uout = wp.zeros((N, 2), dtype=wp.uint32, device=device)
    wp.launch(int_draws, dim=N, inputs=[99, 3, 20, iout, uout], device=device)
    i, u = iout.numpy(), uout.numpy()
    for r in (i[:, 1], u[:, 1].astype(np.int64)):
        assert r.min() == 3 and r.max() == 19
        assert_chi2(np.bincount(r - 3, minlength=17), np.full(17, N / 17))
    # every bit of the full-range draws is a fair coin
    for bits in (i[:, 0].view(np.uint32), u[:, 0]):
        freq = ((bits[:, None] >> np.arange(32, dtype=np.uint32)) & 1).mean(axis=0)
        assert np.all(np.abs(freq - 0.5) < 5 * 0.5 / math.sqrt(N))
    assert abs(np.mean(i[:, 0] < 0) - 0.5) < 0.01


def test_randi_full_range_and_empty_range():
    s = wp.uint32(wp.rand_init(5))
    draws = [wp.randi(wp.uint32(wp.rand_init(5, k)), -2147483648, 2147483647) for k in range(2000)]
    assert min(draws) < -1.5e9 and max(draws) > 1.5e9
    assert wp.randi(s, 4, 4) == 4 and wp.randi(s, 9, 2) == 9
    assert wp.randu(s, wp.uint32(6), wp.uint32(6)) == 6


def test_randn_and_scaled_randf(device):
    out = wp.zeros((N, 2), dtype=float, device=device)
    counts = wp.zeros(N, dtype=wp.uint32, device=device)
    wp.launch(float_draws, dim=N, inputs=[5, 1.0, out, counts], device=device)
    z, f = out.numpy()[:, 0].astype(np.float64), out.numpy()[:, 1].astype(np.float64)
    assert abs(z.mean()) < 0.015
    assert abs(z.var() - 1.0) < 0.025
    assert abs(np.mean(z**4) - 3.0) < 0.15  # kurtosis of a normal
    erf = np.vectorize(math.erf)
    assert ks_stat(z, lambda v: 0.5 * (1.0 + erf(v / math.sqrt(2.0)))) < 1.95
    assert f.min() >= -2.0 and f.max() < 3.0
    assert ks_stat((f + 2.0) / 5.0) < 1.95


@pytest.mark.parametrize("lam", [0.0, 0.3, 3.5, 9.9, 10.0, 42.0, 1500.0])
def test_poisson(device, lam):
    out = wp.zeros((N, 2), dtype=float, device=device)
    counts = wp.zeros(N, dtype=wp.uint32, device=device)
    wp.launch(float_draws, dim=N, inputs=[17, lam, out, counts], device=device)
    k = counts.numpy().astype(np.int64)
    if lam == 0.0:
        assert np.all(k == 0)
        return
    sigma = math.sqrt(lam / N)
    assert abs(k.mean() - lam) < 5 * sigma
    assert abs(k.var() / lam - 1.0) < 0.04
    # the whole distribution: chi-square over the bins that expect at least 20 draws, tails pooled
    support = np.arange(0, int(lam + 12 * math.sqrt(lam) + 20))
    pmf = np.exp(-lam + support * math.log(lam) - np.array([math.lgamma(x + 1.0) for x in support]))
    keep = pmf * N >= 20
    lo, hi = support[keep][0], support[keep][-1]
    obs = np.bincount(np.clip(k, lo, hi) - lo, minlength=hi - lo + 1)
    exp = pmf[lo : hi + 1] * N
    exp[0] += pmf[:lo].sum() * N
    exp[-1] += (1.0 - pmf[: hi + 1].sum()) * N
    assert_chi2(obs, exp * (N / exp.sum()))


def test_sample_cdf_frequencies(device):
    weights = np.array([0.1, 0.0, 0.35, 0.05, 0.2, 0.3])
    cdf_np = np.cumsum(weights) / weights.sum()
    cdf = wp.array(cdf_np.astype(np.float32), dtype=float, device=device)
    out = wp.zeros(N, dtype=int, device=device)
    wp.launch(cdf_draws, dim=N, inputs=[8, cdf, out], device=device)
    idx = out.numpy()
    assert idx.min() >= 0 and idx.max() == len(weights) - 1
    counts = np.bincount(idx, minlength=len(weights))
    assert counts[1] == 0  # a zero-weight bin is never chosen
    nz = weights > 0
    assert_chi2(counts[nz], weights[nz] / weights.sum() * N)
    # a one-element CDF always gives index 0
    one = wp.array(np.ones(1, dtype=np.float32), dtype=float, device=device)
    wp.launch(cdf_draws, dim=100, inputs=[8, one, out], device=device)
    assert np.all(out.numpy()[:100] == 0)


# ----------------------------------------------------------------------------------------------------------------
# Samplers: domain and uniformity (by area / volume)
# ----------------------------------------------------------------------------------------------------------------


def _angle01(p: np.ndarray) -> np.ndarray:
    return (np.arctan2(p[:, 1], p[:, 0]) / (2 * math.pi)) % 1.0


def test_sample_triangle(device):
    p = sampler(device, "sample_triangle")
    u, v = p[:, 0], p[:, 1]
    assert u.min() >= 0.0 and v.min() >= 0.0 and (u + v).max() <= 1.0 + 1e-7
    # marginal density 2 (1 - u): (1 - u)^2 is uniform; same for v and for w = 1 - u - v
    for c in (u, v, 1.0 - u - v):
        assert ks_stat((1.0 - c) ** 2) < 1.95
    assert abs(np.corrcoef(u, v)[0, 1] + 0.5) < 0.02  # covariance of a uniform triangle point


def test_sample_unit_ring_and_disk(device):
    ring = sampler(device, "sample_unit_ring")
    np.testing.assert_allclose(np.hypot(ring[:, 0], ring[:, 1]), 1.0, atol=1e-6)
    assert ks_stat(_angle01(ring)) < 1.95
    disk = sampler(device, "sample_unit_disk")
    r2 = disk[:, 0] ** 2 + disk[:, 1] ** 2
    assert r2.max() <= 1.0 + 1e-6
    assert ks_stat(r2) < 1.95  # uniform in area: r^2 is uniform
    assert ks_stat(_angle01(disk)) < 1.95
    assert np.all(ring[:, 2] == 0.0) and np.all(disk[:, 2] == 0.0)


def test_sample_unit_square_and_cube(device):
    sq = sampler(device, "sample_unit_square")
    cube = sampler(device, "sample_unit_cube")
    for p, n in ((sq, 2), (cube, 3)):
        assert p[:, :n].min() >= -0.5 and p[:, :n].max() < 0.5
        for c in range(n):
            assert ks_stat(p[:, c] + 0.5) < 1.95
        h = np.histogramdd(p[:, :n], bins=[5] * n, range=[(-0.5, 0.5)] * n)[0].reshape(-1)
        assert_chi2(h, np.full(h.size, N / h.size))
    assert np.all(sq[:, 2] == 0.0)


@pytest.mark.parametrize("name", ["sample_unit_sphere_surface", "sample_unit_hemisphere_surface"])
def test_sphere_surfaces(device, name):
    p = sampler(device, name)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-6)
    z = p[:, 2]
    hemi = "hemisphere" in name
    # Archimedes: uniform on the sphere <=> z uniform on [-1, 1] (hemisphere: [0, 1]) and azimuth uniform
    assert ks_stat(z if hemi else (z + 1.0) / 2.0) < 1.95
    assert ks_stat(_angle01(p)) < 1.95
    if hemi:
        assert z.min() >= 0.0
    else:
        assert np.all(np.abs(p.mean(axis=0)) < 0.01)


@pytest.mark.parametrize("name", ["sample_unit_sphere", "sample_unit_hemisphere"])
def test_balls(device, name):
    p = sampler(device, name)
    r = np.linalg.norm(p, axis=1)
    assert r.max() <= 1.0 + 1e-6
    assert ks_stat(r**3) < 1.95  # uniform in volume: r^3 is uniform
    d = p / r[:, None]
    assert ks_stat(_angle01(d)) < 1.95
    if name == "sample_unit_hemisphere":
        assert p[:, 2].min() >= 0.0
        assert ks_stat(d[:, 2]) < 1.95
    else:
        assert ks_stat((d[:, 2] + 1.0) / 2.0) < 1.95
