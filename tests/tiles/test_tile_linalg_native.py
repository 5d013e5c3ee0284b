"""Tests of the raw tile linear-algebra and FFT kernels (``tile_linalg_gemm.h``, ``tile_linalg_solve.h``,
``tile_fft_kernels.h``).

Each test instantiates the C++ templates for a set of shapes and dtypes in a small shared library (built once per
compiler with the flags kernels are built with), calls it through ctypes and compares with NumPy/SciPy computed in
float64: products, Cholesky factors, triangular and Cholesky solves, FFTs, and their adjoints against the NumPy
formulas and finite differences. Odd sizes (1, primes, non-powers of two), strided operands and every supported
dtype are covered. Tests skip when no C++ compiler is installed.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

NATIVE = Path(__file__).resolve().parents[2] / "treadle" / "native"
COMPILERS = [c for c in ("clang++", "g++") if shutil.which(c)]
pytestmark = pytest.mark.skipif(not COMPILERS, reason="no C++ compiler (clang++ or g++) found")

CTYPE = {"float16": "treadle::half", "float32": "float", "float64": "double"}
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}

# (M, N, K, dtype of a, of b, of out)
GEMM_SHAPES = [(1, 1, 1), (7, 5, 3), (64, 64, 64), (13, 17, 29), (6, 16, 8), (12, 32, 1), (2, 33, 70)]
GEMM_CASES = [(*s, t, t, t) for s in GEMM_SHAPES for t in ("float32", "float64")] + [
    (7, 5, 3, "float16", "float16", "float16"),
    (16, 16, 16, "float16", "float16", "float16"),
    (13, 17, 29, "float16", "float16", "float32"),
    (9, 4, 11, "float32", "float64", "float64"),
    (9, 4, 11, "float64", "float16", "float32"),
    (8, 8, 8, "float32", "float32", "float16"),
]
CHOL_SIZES = [1, 2, 3, 7, 16, 31]
SOLVE_SHAPES = [(1, 1), (5, 1), (13, 3), (8, 8), (31, 2)]
CHOL_SOLVE_SHAPES = [(1, 1), (6, 1), (11, 4)]
FFT_SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 512, 3, 5, 6, 12, 17]
FFT_ROWS = 3
REAL = ("float32", "float64")


def _case_name(*parts: object) -> str:
    return "_".join(str(p) for p in parts)


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _harness_source() -> str:
    """extern "C" wrappers around every instantiation the tests use."""
    lines = ['#include "tile_linalg_gemm.h"', '#include "tile_linalg_solve.h"', '#include "tile_fft_kernels.h"', "using namespace treadle;", 'extern "C" {']
    for m, n, k, ta, tb, tc in GEMM_CASES:
        name = _case_name(m, n, k, ta, tb, tc)
        a, b, c = CTYPE[ta], CTYPE[tb], CTYPE[tc]
        lines.append(
            f"void gemm_{name}(const void* A, int lda, const void* B, int ldb, void* C, int ldc, double al, double be)"
            f" {{ tile_la::gemm<{a}, {b}, {c}, {m}, {n}, {k}>((const {a}*)A, lda, (const {b}*)B, ldb, ({c}*)C, ldc,"
            f" (tile_la::compute<{c}>::type)al, (tile_la::compute<{c}>::type)be); }}"
        )
        lines.append(
            f"void adj_gemm_{name}(const void* A, int lda, const void* B, int ldb, void* gA, int lga, void* gB,"
            f" int lgb, const void* gC, int lgc, double al) {{ tile_la::adj_gemm<{a}, {b}, {c}, {m}, {n}, {k}>("
            f"(const {a}*)A, lda, (const {b}*)B, ldb, ({a}*)gA, lga, ({b}*)gB, lgb, (const {c}*)gC, lgc,"
            f" (tile_la::compute<{c}>::type)al); }}"
        )
    for t in REAL:
        ct = CTYPE[t]
        for n in CHOL_SIZES:
            for upper in (False, True):
                name = _case_name(n, t, int(upper))
                lines.append(
                    f"void chol_{name}(const void* A, int lda, void* L, int ldl) {{ tile_la::cholesky<{ct}, {n},"
                    f" {_bool(upper)}>((const {ct}*)A, lda, ({ct}*)L, ldl); }}"
                )
                lines.append(
                    f"void adj_chol_{name}(const void* L, const void* gL, void* gA) {{ tile_la::adj_cholesky<{ct},"
                    f" {n}, {_bool(upper)}>((const {ct}*)L, {n}, (const {ct}*)gL, {n}, ({ct}*)gA, {n}); }}"
                )
        for m, r in SOLVE_SHAPES:
            for lower in (True, False):
                name = _case_name(m, r, t, int(lower))
                lines.append(
                    f"void tri_{name}(const void* T, int ldt, const void* y, int ldy, void* z, int ldz) {{"
                    f" tile_la::tri_solve<{ct}, {m}, {r}, {_bool(lower)}>((const {ct}*)T, ldt, (const {ct}*)y, ldy,"
                    f" ({ct}*)z, ldz); }}"
                )
                lines.append(
                    f"void adj_tri_{name}(const void* T, const void* z, const void* gz, void* gT, void* gy) {{"
                    f" tile_la::adj_tri_solve<{ct}, {m}, {r}, {_bool(lower)}>((const {ct}*)T, {m}, (const {ct}*)z,"
                    f" {r}, (const {ct}*)gz, {r}, ({ct}*)gT, {m}, ({ct}*)gy, {r}); }}"
                )
        for m, r in CHOL_SOLVE_SHAPES:
            for upper in (False, True):
                name = _case_name(m, r, t, int(upper))
                lines.append(
                    f"void csolve_{name}(const void* F, const void* y, void* x) {{ tile_la::cholesky_solve<{ct}, {m},"
                    f" {r}, {_bool(upper)}>((const {ct}*)F, {m}, (const {ct}*)y, {r}, ({ct}*)x, {r}); }}"
                )
                lines.append(
                    f"void adj_csolve_{name}(const void* F, const void* x, const void* gx, void* gF, void* gy) {{"
                    f" tile_la::adj_cholesky_solve<{ct}, {m}, {r}, {_bool(upper)}>((const {ct}*)F, {m},"
                    f" (const {ct}*)x, {r}, (const {ct}*)gx, {r}, ({ct}*)gF, {m}, ({ct}*)gy, {r}); }}"
                )
        for n in FFT_SIZES:
            for inv in (False, True):
                name = _case_name(n, t, int(inv))
                lines.append(
                    f"void fft_{name}(void* x, int ld) {{ tile_fft_rows<{ct}, {FFT_ROWS}, {n}, {_bool(inv)}>"
                    f"(({ct}*)x, ld); }}"
                )
                lines.append(
                    f"void adj_fft_{name}(void* x, int ld) {{ adj_tile_fft_rows<{ct}, {FFT_ROWS}, {n}, {_bool(inv)}>"
                    f"(({ct}*)x, ld); }}"
                )
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module", params=COMPILERS)
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The harness built by one compiler, with the kernels' flags plus -Wall -Wextra -Werror."""
    cxx = request.param
    out = tmp_path_factory.mktemp(f"tile_linalg_{cxx.replace('+', 'p')}")
    src = out / "harness.cpp"
    src.write_text(_harness_source())
    so = out / "harness.so"
    cmd = [cxx, "-std=c++17", "-O2", "-march=native", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-shared",
           "-Wall", "-Wextra", "-Werror", f"-I{NATIVE}", str(src), "-o", str(so)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return ctypes.CDLL(str(so))


def _p(a: np.ndarray) -> ctypes.c_void_p:
    """The data pointer (the caller keeps the array alive across the call)."""
    return ctypes.c_void_p(a.ctypes.data)


def _ld(a: np.ndarray) -> int:
    """Row stride in elements of a 2-D array with unit column stride."""
    assert a.strides[1] == a.itemsize
    return a.strides[0] // a.itemsize


def _fn(lib: ctypes.CDLL, name: str, *argtypes: object) -> Callable[..., None]:
    f = getattr(lib, name)
    f.argtypes = list(argtypes)
    f.restype = None
    return f


V, I, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double


def _tol(dtype: str, k: int = 1) -> float:
    return {"float16": 2e-2, "float32": 2e-5 * max(1, k) ** 0.5, "float64": 1e-12 * max(1, k) ** 0.5}[dtype]


# ------------------------------------------------------------------------------------------------ matmul
@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: _case_name(*c))
def test_gemm_matches_numpy(lib: ctypes.CDLL, case: tuple[int, int, int, str, str, str]) -> None:
    """alpha * a @ b + beta * out for both beta == 0 (out never read: NaN garbage stays out) and beta != 0."""
    m, n, k, ta, tb, tc = case
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    # Operands as views into wider buffers, so the row stride differs from the row length.
    a = rng.uniform(-1, 1, (m, k + 3)).astype(NP[ta])[:, 1 : k + 1]
    b = rng.uniform(-1, 1, (k, n + 2)).astype(NP[tb])[:, :n]
    f = _fn(lib, f"gemm_{_case_name(*case)}", V, I, V, I, V, I, D, D)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0

    c = np.full((m, n + 5), np.nan, dtype=NP[tc])[:, 2 : n + 2]
    f(_p(a), _ld(a), _p(b), _ld(b), _p(c), _ld(c), 1.5, 0.0)
    assert np.all(np.abs(c.astype(np.float64) - 1.5 * want) <= _tol(tc, k) * 1.5 * scale)

    c0 = rng.uniform(-1, 1, (m, n)).astype(NP[tc])
    c = c0.copy()
    f(_p(a), _ld(a), _p(b), _ld(b), _p(c), _ld(c), -0.5, 2.0)
    ref = -0.5 * want + 2.0 * c0.astype(np.float64)
    assert np.all(np.abs(c.astype(np.float64) - ref) <= _tol(tc, k) * (scale + 2.0))


@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: _case_name(*c))
def test_gemm_adjoint_matches_numpy(lib: ctypes.CDLL, case: tuple[int, int, int, str, str, str]) -> None:
    """adj_a += alpha * adj_out @ b^T, adj_b += alpha * a^T @ adj_out (accumulated onto existing values)."""
    m, n, k, ta, tb, tc = case
    rng = np.random.default_rng(m + n + k)
    a = rng.uniform(-1, 1, (m, k)).astype(NP[ta])
    b = rng.uniform(-1, 1, (k, n)).astype(NP[tb])
    g = rng.uniform(-1, 1, (m, n)).astype(NP[tc])
    ga0 = rng.uniform(-1, 1, (m, k)).astype(NP[ta])
    gb0 = rng.uniform(-1, 1, (k, n)).astype(NP[tb])
    ga, gb = ga0.copy(), gb0.copy()
    f = _fn(lib, f"adj_gemm_{_case_name(*case)}", V, I, V, I, V, I, V, I, V, I, D)
    f(_p(a), k, _p(b), n, _p(ga), k, _p(gb), n, _p(g), n, 0.75)
    a64, b64, g64 = (x.astype(np.float64) for x in (a, b, g))
    want_a = ga0 + 0.75 * g64 @ b64.T
    want_b = gb0 + 0.75 * a64.T @ g64
    assert np.all(np.abs(ga - want_a) <= _tol(ta, n) * (np.abs(g64) @ np.abs(b64.T) + 2))
    assert np.all(np.abs(gb - want_b) <= _tol(tb, m) * (np.abs(a64.T) @ np.abs(g64) + 2))


# ------------------------------------------------------------------------------------------------ Cholesky
def _spd(n: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.uniform(-1, 1, (n, n))
    return x @ x.T + n * np.eye(n)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", CHOL_SIZES)
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_matches_numpy(lib: ctypes.CDLL, dtype: str, n: int, upper: bool) -> None:
    """The factor matches numpy.linalg.cholesky; only the selected triangle of A is read; the other is zeroed."""
    rng = np.random.default_rng(n)
    a = _spd(n, rng)
    poisoned = a.copy()
    # The triangle that must not be read holds garbage.
    mask = np.tril(np.ones((n, n), bool), -1) if upper else np.triu(np.ones((n, n), bool), 1)
    poisoned[mask] = np.nan
    src = poisoned.astype(NP[dtype])
    out = np.full((n, n), 7.0, dtype=NP[dtype])
    f = _fn(lib, f"chol_{_case_name(n, dtype, int(upper))}", V, I, V, I)
    f(_p(src), n, _p(out), n)
    ref = np.linalg.cholesky(a)
    ref = ref.T if upper else ref
    assert np.allclose(out, ref, rtol=_tol(dtype, n) * 10, atol=_tol(dtype, n) * 10)
    # In place: the same buffer as input and output.
    inplace = src.copy()
    f(_p(inplace), n, _p(inplace), n)
    assert np.array_equal(inplace, out)


def test_cholesky_not_positive_definite_gives_nan(lib: ctypes.CDLL) -> None:
    """A matrix that is not positive definite does not come back as a plausible factor."""
    a = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    out = np.zeros((3, 3))
    _fn(lib, "chol_3_float64_0", V, I, V, I)(_p(a), 3, _p(out), 3)
    assert np.isnan(out[1, 1])


@pytest.mark.parametrize("n", [1, 2, 3, 7])
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_adjoint_finite_differences(lib: ctypes.CDLL, n: int, upper: bool) -> None:
    """The gradient with respect to the read triangle of A matches central differences of <adj_L, chol(A)>."""
    rng = np.random.default_rng(10 + n)
    a = _spd(n, rng)
    g_out = rng.uniform(-1, 1, (n, n))
    chol = _fn(lib, f"chol_{_case_name(n, 'float64', int(upper))}", V, I, V, I)

    def factor(x: np.ndarray) -> np.ndarray:
        out = np.zeros((n, n))
        xc = np.ascontiguousarray(x)
        chol(_p(xc), n, _p(out), n)
        return out

    lfac = factor(a)
    grad = np.full((n, n), 0.25)  # accumulated onto
    _fn(lib, f"adj_chol_{_case_name(n, 'float64', int(upper))}", V, V, V)(_p(lfac), _p(g_out), _p(grad))
    eps = 1e-6
    for i in range(n):
        for j in range(n):
            read = (j >= i) if upper else (j <= i)
            if not read:
                assert grad[i, j] == 0.25, "the unread triangle gets no gradient"
                continue
            ap, am = a.copy(), a.copy()
            ap[i, j] += eps
            am[i, j] -= eps
            fd = (np.sum(g_out * factor(ap)) - np.sum(g_out * factor(am))) / (2 * eps)
            assert abs(grad[i, j] - 0.25 - fd) < 1e-6 * (1 + abs(fd)), (i, j, grad[i, j] - 0.25, fd)


# ------------------------------------------------------------------------------------------------ triangular solves
def _tri(m: int, lower: bool, rng: np.random.Generator) -> np.ndarray:
    t = rng.uniform(-1, 1, (m, m)) + np.diag(rng.uniform(2, 3, m))
    return np.tril(t) if lower else np.triu(t)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", SOLVE_SHAPES, ids=lambda s: _case_name(*s))
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_triangular_solve_matches_scipy(lib: ctypes.CDLL, dtype: str, shape: tuple[int, int], lower: bool) -> None:
    """z = T^-1 y like scipy.linalg.solve_triangular; the other triangle of T is never read; z may alias y."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    m, r = shape
    rng = np.random.default_rng(m * r)
    t = _tri(m, lower, rng)
    y = rng.uniform(-1, 1, (m, r))
    tp = t.copy()
    tp[np.triu(np.ones((m, m), bool), 1) if lower else np.tril(np.ones((m, m), bool), -1)] = np.nan
    tp = tp.astype(NP[dtype])
    yy = y.astype(NP[dtype])
    z = np.zeros((m, r), dtype=NP[dtype])
    f = _fn(lib, f"tri_{_case_name(m, r, dtype, int(lower))}", V, I, V, I, V, I)
    f(_p(tp), m, _p(yy), r, _p(z), r)
    want = scipy_linalg.solve_triangular(t, y, lower=lower)
    assert np.allclose(z, want, rtol=_tol(dtype, m) * 10, atol=_tol(dtype, m) * 10)
    f(_p(tp), m, _p(yy), r, _p(yy), r)
    assert np.array_equal(yy, z)


@pytest.mark.parametrize("shape", SOLVE_SHAPES, ids=lambda s: _case_name(*s))
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_triangular_solve_adjoint_finite_differences(lib: ctypes.CDLL, shape: tuple[int, int], lower: bool) -> None:
    """Gradients with respect to y and to T's triangle match central differences; the other triangle gets none."""
    m, r = shape
    rng = np.random.default_rng(3 * m + r)
    t = _tri(m, lower, rng)
    y = rng.uniform(-1, 1, (m, r))
    gz = rng.uniform(-1, 1, (m, r))
    f = _fn(lib, f"tri_{_case_name(m, r, 'float64', int(lower))}", V, I, V, I, V, I)

    def solve(tt: np.ndarray, yv: np.ndarray) -> np.ndarray:
        z = np.zeros((m, r))
        tc, yc = np.ascontiguousarray(tt), np.ascontiguousarray(yv)
        f(_p(tc), m, _p(yc), r, _p(z), r)
        return z

    z = solve(t, y)
    g_t = np.zeros((m, m))
    g_y = np.ones((m, r))
    _fn(lib, f"adj_tri_{_case_name(m, r, 'float64', int(lower))}", V, V, V, V, V)(_p(t), _p(z), _p(gz), _p(g_t), _p(g_y))
    eps = 1e-6
    for idx in np.ndindex(m, r):
        yp, ym = y.copy(), y.copy()
        yp[idx] += eps
        ym[idx] -= eps
        fd = (np.sum(gz * solve(t, yp)) - np.sum(gz * solve(t, ym))) / (2 * eps)
        assert abs(g_y[idx] - 1.0 - fd) < 1e-6 * (1 + abs(fd))
    for i, k in np.ndindex(m, m):
        if (k > i) if lower else (k < i):
            assert g_t[i, k] == 0.0
            continue
        tp, tm = t.copy(), t.copy()
        tp[i, k] += eps
        tm[i, k] -= eps
        fd = (np.sum(gz * solve(tp, y)) - np.sum(gz * solve(tm, y))) / (2 * eps)
        assert abs(g_t[i, k] - fd) < 1e-6 * (1 + abs(fd)), (i, k)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", CHOL_SOLVE_SHAPES, ids=lambda s: _case_name(*s))
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_solve_matches_numpy(lib: ctypes.CDLL, dtype: str, shape: tuple[int, int], upper: bool) -> None:
    """x = A^-1 y from A's factor (L, or U for the upper fill mode), reading only the factor's triangle."""
    m, r = shape
    rng = np.random.default_rng(m + 7 * r)
    a = _spd(m, rng)
    lfac = np.linalg.cholesky(a)
    fac = lfac.T.copy() if upper else lfac.copy()
    fac[np.tril(np.ones((m, m), bool), -1) if upper else np.triu(np.ones((m, m), bool), 1)] = np.nan
    y = rng.uniform(-1, 1, (m, r))
    x = np.zeros((m, r), dtype=NP[dtype])
    fac_t, y_t = fac.astype(NP[dtype]), y.astype(NP[dtype])
    _fn(lib, f"csolve_{_case_name(m, r, dtype, int(upper))}", V, V, V)(_p(fac_t), _p(y_t), _p(x))
    assert np.allclose(x, np.linalg.solve(a, y), rtol=_tol(dtype, m) * 20, atol=_tol(dtype, m) * 20)


@pytest.mark.parametrize("shape", CHOL_SOLVE_SHAPES, ids=lambda s: _case_name(*s))
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_solve_adjoint_finite_differences(lib: ctypes.CDLL, shape: tuple[int, int], upper: bool) -> None:
    """Gradients with respect to y and the factor's triangle match central differences."""
    m, r = shape
    rng = np.random.default_rng(5 * m + r)
    fac = np.linalg.cholesky(_spd(m, rng))
    fac = fac.T.copy() if upper else fac
    y = rng.uniform(-1, 1, (m, r))
    gx = rng.uniform(-1, 1, (m, r))
    f = _fn(lib, f"csolve_{_case_name(m, r, 'float64', int(upper))}", V, V, V)

    def solve(ff: np.ndarray, yv: np.ndarray) -> np.ndarray:
        x = np.zeros((m, r))
        fc, yc = np.ascontiguousarray(ff), np.ascontiguousarray(yv)
        f(_p(fc), _p(yc), _p(x))
        return x

    x = solve(fac, y)
    g_f = np.zeros((m, m))
    g_y = np.zeros((m, r))
    adj = _fn(lib, f"adj_csolve_{_case_name(m, r, 'float64', int(upper))}", V, V, V, V, V)
    adj(_p(fac), _p(x), _p(gx), _p(g_f), _p(g_y))
    eps = 1e-6
    for idx in np.ndindex(m, r):
        yp, ym = y.copy(), y.copy()
        yp[idx] += eps
        ym[idx] -= eps
        fd = (np.sum(gx * solve(fac, yp)) - np.sum(gx * solve(fac, ym))) / (2 * eps)
        assert abs(g_y[idx] - fd) < 1e-6 * (1 + abs(fd))
    for i, k in np.ndindex(m, m):
        if (k < i) if upper else (k > i):
            assert g_f[i, k] == 0.0
            continue
        fp, fm = fac.copy(), fac.copy()
        fp[i, k] += eps
        fm[i, k] -= eps
        fd = (np.sum(gx * solve(fp, y)) - np.sum(gx * solve(fm, y))) / (2 * eps)
        assert abs(g_f[i, k] - fd) < 1e-6 * (1 + abs(fd)), (i, k)


# ------------------------------------------------------------------------------------------------ FFT
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", FFT_SIZES)
@pytest.mark.parametrize("inverse", [False, True], ids=["fft", "ifft"])
def test_fft_matches_numpy(lib: ctypes.CDLL, dtype: str, n: int, inverse: bool) -> None:
    """Unnormalized transforms of every row of a strided batch match numpy.fft (ifft times N)."""
    rng = np.random.default_rng(n)
    ld = n + 3  # row stride in complex elements
    buf = rng.uniform(-1, 1, (FFT_ROWS, ld, 2)).astype(NP[dtype])
    before = buf.copy()
    _fn(lib, f"fft_{_case_name(n, dtype, int(inverse))}", V, I)(_p(buf), ld)
    z = before[:, :n, 0].astype(np.float64) + 1j * before[:, :n, 1].astype(np.float64)
    want = np.fft.ifft(z, axis=1) * n if inverse else np.fft.fft(z, axis=1)
    got = buf[:, :n, 0].astype(np.float64) + 1j * buf[:, :n, 1]
    tol = (1e-5 if dtype == "float32" else 1e-12) * max(1.0, np.log2(max(n, 2))) * np.sqrt(n)
    assert np.max(np.abs(got - want)) <= tol * max(1.0, np.max(np.abs(want)))
    # Padding between rows is untouched.
    assert np.array_equal(buf[:, n:], before[:, n:])


@pytest.mark.parametrize("n", [1, 8, 32, 12, 17])
@pytest.mark.parametrize("inverse", [False, True], ids=["fft", "ifft"])
def test_fft_adjoint_is_the_transpose(lib: ctypes.CDLL, n: int, inverse: bool) -> None:
    """<g, F x> = <adj_F(g), x> over the real (re, im) pairs, i.e. the adjoint is the transposed linear map."""
    rng = np.random.default_rng(100 + n)
    x = rng.uniform(-1, 1, (FFT_ROWS, n, 2))
    g = rng.uniform(-1, 1, (FFT_ROWS, n, 2))
    fx = x.copy()
    _fn(lib, f"fft_{_case_name(n, 'float64', int(inverse))}", V, I)(_p(fx), n)
    ag = g.copy()
    _fn(lib, f"adj_fft_{_case_name(n, 'float64', int(inverse))}", V, I)(_p(ag), n)
    assert abs(np.sum(g * fx) - np.sum(ag * x)) < 1e-11 * n


def test_fft_roundtrip_scales_by_n(lib: ctypes.CDLL) -> None:
    """A forward then an inverse transform multiplies by N (no normalization), as the reference documents."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (FFT_ROWS, 64, 2))
    y = x.copy()
    _fn(lib, "fft_64_float64_0", V, I)(_p(y), 64)
    _fn(lib, "fft_64_float64_1", V, I)(_p(y), 64)
    assert np.allclose(y, 64 * x, atol=1e-11)


# ------------------------------------------------------------------------------------------------ CUDA (compile only)
CUDA_SOURCE = """
#include "treadle.h"
#include "tile_linalg_gemm.h"
#include "tile_linalg_solve.h"
#include "tile_fft_kernels.h"
using namespace treadle;
template <typename T> __device__ void all_ops(T* a, T* b, T* c, treadle::half* h) {
    tile_la::gemm<T, T, T, 13, 17, 29>(a, 29, b, 17, c, 17, T(1), T(0.5));
    tile_la::gemm<treadle::half, T, T, 8, 8, 8>(h, 8, b, 8, c, 8, T(1), T(0));
    tile_la::adj_gemm<T, T, T, 7, 5, 3>(a, 3, b, 5, a, 3, b, 5, c, 5, T(2));
    tile_la::cholesky<T, 9, true>(a, 9, c, 9);
    tile_la::adj_cholesky<T, 9, false>(a, 9, b, 9, c, 9);
    tile_la::tri_solve<T, 6, 3, true>(a, 6, b, 3, c, 3);
    tile_la::adj_tri_solve<T, 6, 1, false>(a, 6, b, 1, b, 1, c, 6, c, 1);
    tile_la::cholesky_solve<T, 5, 2, false>(a, 5, b, 2, c, 2);
    tile_la::adj_cholesky_solve<T, 5, 2, true>(a, 5, b, 2, b, 2, c, 5, c, 2);
    tile_fft_rows<T, 2, 64, false>(a, 64);
    tile_fft_rows<T, 2, 12, true>(a, 12);
    adj_tile_fft_rows<T, 1, 8, false>(a, 8);
}
extern "C" __global__ void linalg_f32(float* a, float* b, float* c, treadle::half* h) { all_ops(a, b, c, h); }
extern "C" __global__ void linalg_f64(double* a, double* b, double* c, treadle::half* h) { all_ops(a, b, c, h); }
"""


def test_kernels_compile_with_nvrtc() -> None:
    """The same templates compile as device code (one thread per block) to a cubin for sm_80 and sm_90."""
    from treadle._src.backends.cuda import build as cb

    if not cb.nvrtc_available():
        pytest.skip("NVRTC (cuda-bindings) is not installed")
    opts = [cb.CudaCompileOptions(arch=arch) for arch in (80, 90)]
    for binary, arch in zip(cb.compile_cuda_source_archs(CUDA_SOURCE, opts, "tile_linalg_check.cu"), (80, 90)):
        assert binary[:4] == b"\x7fELF"
        assert int.from_bytes(binary[48:52], "little") & 0xFF == arch  # e_flags: the SM architecture
