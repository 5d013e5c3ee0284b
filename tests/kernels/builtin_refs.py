"""NumPy float64 references for the registry builtins (used by ``test_registry_numeric.py``).

Each entry of :data:`REFS` is written from the documented math of the builtin (docstrings, ``docs/``), not from its
implementation: ``fn(*args)`` gets one sample's arguments (float values as float64 scalars/arrays, integer values as
Python ints or int64 arrays, booleans as ``bool``) and returns the expected value; for overloads with several
outputs (a tuple result, or output arguments such as ``svd3(A, U, sigma, V)``) a tuple in the order: result parts,
then the output arguments. ``typed=True`` references get the argument types first. Integer results are wrapped to
the result type (two's complement), as C++ does.

``domain`` draws one argument list for ``n`` samples (``None`` entries: the default for that type; see
``default_values``); ``check`` replaces the comparison where the result is not unique (decompositions: the
factors are checked for their defining properties instead); ``tol`` multiplies the precision tolerance of the
comparison (see ``test_registry_numeric.py``).

:data:`EXEMPT` lists the builtins checked elsewhere, with the reason and the tests that cover them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.types.typesys import generic_kind, is_float, scalar_of

Gen = np.random.Generator


@dataclasses.dataclass
class Ref:
    fn: Callable[..., Any] | None = None
    domain: Callable[[tuple[Any, ...], Gen, int], list[Any]] | None = None
    check: Callable[..., None] | None = None
    tol: float = 1.0
    typed: bool = False
    canon: Callable[[int, Any, Any], Any] | None = None  # (output index, value, reference) -> value to compare
    sigs: Callable[[tuple[Any, ...]], bool] | None = None  # which accepted signatures to test (default: all)


# ----------------------------------------------------------------------------------------------------------------
# Sample values
# ----------------------------------------------------------------------------------------------------------------


def shape_of(t: Any) -> tuple[int, ...]:
    return tuple(getattr(t, "_shape_", ()))


def is_int_scalar(t: Any) -> bool:
    return t is not wp.bool and not isinstance(getattr(t, "_shape_", None), tuple) and not is_float(t)


def bits(t: Any) -> int:
    return int(np.dtype(scalar_of(t)._np_).itemsize * 8)


def signed(t: Any) -> bool:
    return bool(np.issubdtype(np.dtype(scalar_of(t)._np_), np.signedinteger))


def unit_quats(rng: Gen, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def unit_vecs(rng: Gen, n: int, d: int = 3) -> np.ndarray:
    v = rng.normal(size=(n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def default_values(t: Any, rng: Gen, n: int) -> np.ndarray:
    """``n`` sample values of type ``t``: floats in [-2, 2], small integers, unit quaternions and rotations."""
    shape = shape_of(t)
    if t is wp.bool:
        return rng.integers(0, 2, size=n).astype(bool)
    st = scalar_of(t)
    if not is_float(st):
        lo = -20 if signed(st) else 0
        return rng.integers(lo, 21, size=(n, *shape))
    kind = generic_kind(t)
    if kind == "quat_t":
        return unit_quats(rng, n)
    if kind == "transform_t":
        return np.concatenate([rng.uniform(-2, 2, size=(n, 3)), unit_quats(rng, n)], axis=1)
    return rng.uniform(-2, 2, size=(n, *shape))


def wrap_int(v: Any, t: Any) -> Any:
    """Integer ``v`` (or array) wrapped to integer type ``t`` (two's complement), as a C++ conversion does."""
    if t is wp.bool:
        return np.asarray(v) != 0
    nb, sg = bits(t), signed(t)

    def one(x: Any) -> int:
        x = int(x) % (1 << nb)
        return x - (1 << nb) if sg and x >= 1 << (nb - 1) else x

    a = np.asarray(v, dtype=object)
    return np.vectorize(one, otypes=[object])(a).astype(np.dtype(scalar_of(t)._np_)) if a.shape else \
        np.dtype(scalar_of(t)._np_).type(one(a.item()))


# ----------------------------------------------------------------------------------------------------------------
# Math helpers (written from the definitions)
# ----------------------------------------------------------------------------------------------------------------


def qmul(a: Any, b: Any) -> np.ndarray:
    """Hamilton product, quaternions stored (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def qconj(q: Any) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def qrot(q: Any, v: Any) -> np.ndarray:
    """Rotate v by unit quaternion q: the vector part of q (0, v) q*."""
    return qmul(qmul(q, np.array([v[0], v[1], v[2], 0.0])), qconj(q))[:3]


def qmat(q: Any) -> np.ndarray:
    return np.stack([qrot(q, e) for e in np.eye(3)], axis=1)


def axis_quat(axis: Any, angle: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=np.float64)
    return np.concatenate([axis * math.sin(angle / 2), [math.cos(angle / 2)]])


def rot_quat(m: Any) -> np.ndarray:
    """The unit quaternion of a (nearly) orthogonal 3x3 matrix: dominant eigenvector of Bar-Itzhack's K matrix."""
    m = np.asarray(m, dtype=np.float64)
    k = np.array([[m[0, 0] - m[1, 1] - m[2, 2], m[1, 0] + m[0, 1], m[2, 0] + m[0, 2], m[2, 1] - m[1, 2]],
                  [m[1, 0] + m[0, 1], m[1, 1] - m[0, 0] - m[2, 2], m[2, 1] + m[1, 2], m[0, 2] - m[2, 0]],
                  [m[2, 0] + m[0, 2], m[2, 1] + m[1, 2], m[2, 2] - m[0, 0] - m[1, 1], m[1, 0] - m[0, 1]],
                  [m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1], m[0, 0] + m[1, 1] + m[2, 2]]]) / 3
    w, v = np.linalg.eigh(k)
    return v[:, np.argmax(w)]


def aligned(q: Any, like: Any) -> np.ndarray:
    """``q`` or ``-q`` (the same rotation), whichever is closer to ``like``."""
    q, like = np.asarray(q, dtype=np.float64), np.asarray(like, dtype=np.float64)
    return -q if float(q @ like) < 0 else q


def tf_apply(t: Any, x: Any) -> np.ndarray:
    return qrot(t[3:], x) + t[:3]


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def erfinv(y: float) -> float:
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if math.erf(mid) < y:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def ints_of(sig: tuple[Any, ...]) -> bool:
    return not is_float(scalar_of(sig[0])) if sig else False


def elementwise(op: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """A binary op applied per component (integers: on Python ints, wrapped by the caller)."""

    def fn(sig: tuple[Any, ...], a: Any, b: Any) -> Any:
        if ints_of(sig) or sig[0] is wp.bool:
            return np.vectorize(lambda x, y: op(int(x), int(y)), otypes=[object])(a, b)
        return op(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))

    return fn


# ----------------------------------------------------------------------------------------------------------------
# Domains
# ----------------------------------------------------------------------------------------------------------------


def uniform(lo: float, hi: float) -> Callable[[tuple[Any, ...], Gen, int], list[Any]]:
    def dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
        return [rng.uniform(lo, hi, size=(n, *shape_of(t))) for t in sig]

    return dom


def away_from_integers(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Values k + u with u in [0.1, 0.4] or [0.6, 0.9] (rounding functions: no rounding-dependent ties)."""
    k = rng.integers(-5, 5, size=n)
    u = rng.uniform(0.1, 0.4, size=n) + 0.5 * rng.integers(0, 2, size=n)
    return [k + u]


def with_halves(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Exact ties k + 0.5 for half the samples (round: away from zero; rint: to even)."""
    x = away_from_integers(sig, rng, n)[0]
    x[::2] = rng.integers(-5, 5, size=len(x[::2])) + 0.5
    return [x]


def with_zeros(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    x = default_values(sig[0], rng, n)
    x[::4] = 0
    return [x]


def nonzero_divisor(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Divisors away from zero; integer dividends of both signs (C truncation and remainder signs)."""
    out = []
    for i, t in enumerate(sig):
        v = default_values(t, rng, n)
        if i == 1 or (i == 0 and len(sig) == 2 and shape_of(sig[0]) == () and shape_of(sig[1]) != ()):
            if is_float(scalar_of(t)):
                v = np.sign(v + 1e-9) * (0.5 + np.abs(v))
            else:
                v = np.where(v == 0, 3, v)
        if i == 0 and t is wp.int8:
            v = np.maximum(v, -100)
        out.append(v)
    if len(sig) == 2 and shape_of(sig[0]) != () and shape_of(sig[1]) == () and not is_float(scalar_of(sig[1])):
        out[1] = np.where(out[1] == 0, 3, out[1])
    if len(sig) == 2 and shape_of(sig[0]) == () and shape_of(sig[1]) == () and is_float(sig[0]):
        # floats: quotients away from integers, so floor/fmod do not depend on rounding
        q = away_from_integers(sig, rng, n)[0]
        out[0] = q * out[1]
    return out


def shifts(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    t = sig[0]
    if t is wp.bool:
        return [None, None]
    nb = bits(t)
    a = default_values(t, rng, n)
    top = nb - 1 if nb < 32 or not signed(t) else nb - 6  # no signed overflow (undefined in C++17)
    return [np.abs(a), rng.integers(0, top + 1, size=(n, *shape_of(t)))]


def full_range(t: Any, rng: Gen, n: int) -> np.ndarray:
    """Integers over the whole range of integer type ``t`` (every bit pattern), as Python ints."""
    nb, sg = bits(t), signed(t)
    lo = -(1 << (nb - 1)) if sg else 0
    raw = rng.integers(0, 1 << 32, size=(n, *shape_of(t), 2), dtype=np.uint64)
    vals = (raw[..., 0].astype(object) << 32 | raw[..., 1].astype(object)) % (1 << nb)
    return vals + lo


def rshift_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Any bit pattern (the sign bit set: arithmetic shifts for signed, logical for unsigned types)."""
    t = sig[0]
    if t is wp.bool:
        return [None, None]
    return [full_range(t, rng, n), rng.integers(0, bits(t), size=(n, *shape_of(t)))]


def bit_patterns(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Bitwise operators: any bit pattern."""
    return [None if t is wp.bool else full_range(t, rng, n) for t in sig]


def wrapping(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Integer arithmetic: the whole range where wrapping around is defined in C++ (unsigned types, and signed
    types narrower than int, computed in int and converted back); small values otherwise (signed overflow is
    undefined behaviour)."""
    out = []
    for t in sig:
        st = scalar_of(t)
        if t is wp.bool or is_float(st) or (signed(st) and bits(st) >= 32):
            out.append(None)
        else:
            out.append(full_range(t, rng, n))
    return out


def special_floats(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    x = default_values(sig[0], rng, n)
    flat = x.reshape(n, -1)
    specials = [np.inf, -np.inf, np.nan]
    for s in range(n):
        if s % 2:
            flat[s, rng.integers(0, flat.shape[1])] = specials[s % 3]
    return [flat.reshape(x.shape)]


def clamp_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    x, a, b = (default_values(t, rng, n) for t in sig)
    return [x, np.minimum(a, b), np.maximum(a, b)]


def smoothstep_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    a = rng.uniform(-2, 0, size=n)
    return [a, a + rng.uniform(0.5, 2, size=n), rng.uniform(-2.5, 2.5, size=n)]


def distinct(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    t = sig[0]
    d = shape_of(t)[0]
    base = np.stack([rng.permutation(d) for _ in range(n)])
    if is_float(scalar_of(t)):
        return [base + rng.uniform(0, 0.5, size=(n, d))]
    return [base * 3 - 4 if signed(t) else base * 3]


def well_conditioned(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    d = shape_of(sig[0])[0]
    return [rng.uniform(-0.5, 0.5, size=(n, d, d)) + 2 * np.eye(d) * rng.choice([-1, 1], size=(n, 1, 1))]


def positive(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    return [rng.uniform(0.1, 4, size=n)]


def rotation_matrices(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    d = shape_of(sig[0])[0]
    out = np.zeros((n, d, d))
    for s, q in enumerate(unit_quats(rng, n)):
        out[s, :3, :3] = qmat(q)
        if d == 4:
            out[s, :3, 3] = rng.uniform(-2, 2, size=3)
            out[s, 3, 3] = 1
    return [out]


def unit_axis_first(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    return [unit_vecs(rng, n)] + [None] * (len(sig) - 1)


def euler_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    seqs = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0),
            (0, 1, 0), (0, 2, 0), (1, 0, 1), (1, 2, 1), (2, 0, 2), (2, 1, 2)]
    pick = np.array([seqs[i] for i in rng.integers(0, len(seqs), size=n)])
    return [None, pick[:, 0], pick[:, 1], pick[:, 2]]


def to_euler_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Random rotations, and rotations at gimbal lock (middle angle +-pi/2, or 0 and pi for proper sequences)."""
    dom = euler_dom(sig, rng, n)
    q = unit_quats(rng, n)
    for s in range(0, n, 3):
        i, j, k = (int(dom[a][s]) for a in (1, 2, 3))
        e = rng.uniform(-1.5, 1.5, size=3)
        e[j] = rng.choice([-0.5 * math.pi, 0.5 * math.pi] if i != k else [0.0, math.pi])
        e[k] = e[i] if i == k else e[k]
        q[s] = _from_euler(e, i, j, k)
    dom[0] = q
    return dom


def slerp_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Random pairs; a == b and a == -b (no rotation between them); t = 0 and 1."""
    a, b = unit_quats(rng, n), unit_quats(rng, n)
    b[0], b[1] = a[0], -a[1]
    t = rng.uniform(0, 1, size=n)
    t[2], t[3] = 0.0, 1.0
    return [a, b, t]


def degenerate_matrices(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Random matrices, and degenerate ones: rank 1 and 2, repeated singular values/eigenvalues, zero, diagonal."""
    d = shape_of(sig[0])[0]
    a = rng.uniform(-2, 2, size=(n, d, d))
    a[0] = 0
    a[1] = np.outer(rng.uniform(-2, 2, size=d), rng.uniform(-2, 2, size=d))  # rank 1
    a[2, :, -1] = a[2, :, 0] * 0.5  # rank d - 1 (parallel columns)
    a[3] = 1.5 * np.eye(d)
    a[4] = np.diag(rng.uniform(-2, 2, size=d))
    r = np.linalg.qr(rng.normal(size=(d, d)))[0]
    a[5] = r * 0.7  # all singular values equal
    sym = np.diag([1.0, 1.0, 2.0][:d] if d == 3 else [1.0, 1.0])
    a[6] = r @ sym @ r.T  # a repeated eigenvalue
    return [a] + [None] * (len(sig) - 1)


def compose_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    return [None, None, rng.uniform(0.5, 2, size=(n, 3))]


def decompose_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    out = np.zeros((n, 4, 4))
    for s in range(n):
        out[s] = compose(rng.uniform(-2, 2, size=3), unit_quats(rng, 1)[0], rng.uniform(0.5, 2, size=3))
    return [out] + [None] * (len(sig) - 1)


def select_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    c = default_values(sig[0], rng, n)
    if sig[0] is not wp.bool:
        c = np.where(rng.integers(0, 2, size=n) == 1, 0, c)
    return [c, None, None]


def delta_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Norms with a delta argument: delta > 0 (float16: the squared ratio |v|^2 / delta^2 stays finite)."""
    return [None, rng.uniform(0.25, 2, size=n)][:len(sig)]


def equal_half(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Two values of one type, equal in every other sample (comparisons: the equal case too)."""
    a, b = (default_values(t, rng, n) for t in sig)
    b[::2] = a[::2]
    return [a, b]


def scalars_only(sig: tuple[Any, ...]) -> bool:
    return all(not shape_of(t) for t in sig)


def pow_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    return [rng.uniform(0.1, 3, size=n), rng.uniform(-2, 2, size=n)]


def compose(p: Any, q: Any, s: Any) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = qmat(q) @ np.diag(s)
    m[:3, 3] = p
    return m


# ----------------------------------------------------------------------------------------------------------------
# Checks of decompositions (the factors are not unique: check their defining properties)
# ----------------------------------------------------------------------------------------------------------------


def _near(what: str, got: Any, want: Any, tol: float) -> None:
    err = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want)))
    scale = max(1.0, float(np.max(np.abs(want))))
    assert err <= tol * scale, f"{what}: error {err:.3g} > {tol * scale:.3g}"


def check_svd(args: list[Any], outs: list[Any], tol: float) -> None:
    a = np.asarray(args[0], dtype=np.float64)
    u, s, v = (np.asarray(o, dtype=np.float64) for o in outs)
    n = a.shape[0]
    _near("U diag(sigma) V^T == A", u @ np.diag(s) @ v.T, a, tol)
    _near("U^T U == I", u.T @ u, np.eye(n), tol)
    _near("V^T V == I", v.T @ v, np.eye(n), tol)
    assert np.all(np.abs(s[:-1]) >= np.abs(s[1:]) - tol * max(1.0, float(np.max(np.abs(s))))), f"unsorted {s}"
    assert np.all(s[:n - 1] >= -tol), f"negative singular values {s}"
    if n == 3:
        _near("det U == 1", np.linalg.det(u), 1.0, tol)
        _near("det V == 1", np.linalg.det(v), 1.0, tol)
        assert s[2] * np.linalg.det(a) >= -tol, f"sigma[2] = {s[2]} does not carry the sign of det(A)"
    else:
        assert s[1] >= -tol, f"negative singular value {s}"


def check_qr(args: list[Any], outs: list[Any], tol: float) -> None:
    a = np.asarray(args[0], dtype=np.float64)
    q, r = (np.asarray(o, dtype=np.float64) for o in outs)
    _near("Q R == A", q @ r, a, tol)
    _near("Q^T Q == I", q.T @ q, np.eye(3), tol)
    _near("det Q == 1", np.linalg.det(q), 1.0, tol)
    _near("R upper triangular", np.tril(r, -1), np.zeros((3, 3)), tol)


def check_eig(args: list[Any], outs: list[Any], tol: float) -> None:
    a = np.asarray(args[0], dtype=np.float64)
    q, d = (np.asarray(o, dtype=np.float64) for o in outs)
    _near("Q diag(d) Q^T == (A + A^T) / 2", q @ np.diag(d) @ q.T, 0.5 * (a + a.T), tol)
    _near("Q^T Q == I", q.T @ q, np.eye(3), tol)
    _near("det Q == 1", np.linalg.det(q), 1.0, tol)


def check_to_euler(args: list[Any], outs: list[Any], tol: float) -> None:
    q, i, j, k = args
    e = np.asarray(outs[0], dtype=np.float64)
    i, j, k = int(i), int(j), int(k)
    kk = 3 - i - j if i == k else k
    ax = np.eye(3)
    # rotation about fixed axis i by e[i], then j by e[j], then k by e[kk]
    r = qmul(axis_quat(ax[k], e[kk]), qmul(axis_quat(ax[j], e[j]), axis_quat(ax[i], e[i])))
    _near(f"rotation of the angles ({i}, {j}, {k})", aligned(r, q), q, tol)


# ----------------------------------------------------------------------------------------------------------------
# Reference functions
# ----------------------------------------------------------------------------------------------------------------


def _mul(sig: tuple[Any, ...], a: Any, b: Any) -> Any:
    ka, kb = generic_kind(sig[0]), generic_kind(sig[1])
    if ints_of(sig) and ka is None and kb is None:
        return int(a) * int(b)
    if ka == kb == "quat_t":
        return qmul(a, b)
    if ka == kb == "transform_t":
        return np.concatenate([tf_apply(a, b[:3]), qmul(a[3:], b[3:])])
    if ka == "mat_t" and kb in ("mat_t", "vec_t"):
        return np.asarray(a) @ np.asarray(b)
    if ka == "vec_t" and kb == "mat_t":
        return np.asarray(a) @ np.asarray(b)
    return np.multiply(a, b)


def _div(sig: tuple[Any, ...], a: Any, b: Any) -> Any:
    if not is_float(scalar_of(sig[0])):
        return np.vectorize(lambda x, y: c_div(int(x), int(y)), otypes=[object])(a, b)
    return np.divide(a, b)


def _mod(sig: tuple[Any, ...], a: Any, b: Any) -> Any:
    if not is_float(scalar_of(sig[0])):
        return np.vectorize(lambda x, y: int(x) - c_div(int(x), int(y)) * int(y), otypes=[object])(a, b)
    return np.fmod(a, b)


def _floordiv(sig: tuple[Any, ...], a: Any, b: Any) -> Any:
    if not is_float(scalar_of(sig[0])):
        return int(a) // int(b)
    return math.floor(a / b)


def _minmax(red: Callable[..., Any], pair: Callable[..., Any]) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        return red(args[0]) if len(args) == 1 else pair(args[0], args[1])

    return fn


def _select(c: Any, a: Any, b: Any) -> Any:
    return b if c else a


def _where(c: Any, a: Any, b: Any) -> Any:
    return a if c else b


def _quaternion(*args: Any) -> Any:
    if not args:
        return np.zeros(4)
    if len(args) == 1:
        return args[0]
    if len(args) == 2:
        return np.concatenate([args[0], [args[1]]])
    return np.array(args)


def _transformation(*args: Any) -> Any:
    if not args:
        return np.zeros(7)
    if len(args) == 1 and np.ndim(args[0]) == 0:
        return np.full(7, args[0])
    if len(args) == 1:
        return np.concatenate([args[0], [0, 0, 0, 1]])
    if len(args) == 2:
        return np.concatenate([args[0], args[1]])
    return np.array(args)


def _spatial_vector(*args: Any) -> Any:
    if not args:
        return np.zeros(6)
    if len(args) == 2:
        return np.concatenate([args[0], args[1]])
    return np.array(args)


def _pseudo_huber(v: Any, d: float = 1.0) -> float:
    return d * math.sqrt(1 + float(v @ v) / (d * d))


def _huber(v: Any, d: float = 1.0) -> float:
    n = math.sqrt(float(v @ v))
    return 0.5 * n * n if n <= d else d * (n - 0.5 * d)


def _normalize(v: Any) -> Any:
    n = float(np.sqrt(v @ v))
    return v / n if n > 0 else np.zeros_like(v)


def _from_euler(e: Any, i: int, j: int, k: int) -> Any:
    ax = np.eye(3)
    return qmul(axis_quat(ax[k], e[k]), qmul(axis_quat(ax[j], e[j]), axis_quat(ax[i], e[i])))


def _to_rpy(q: Any) -> Any:
    m = qmat(q)  # R = Rz(yaw) Ry(pitch) Rx(roll)
    return np.array([math.atan2(m[2, 1], m[2, 2]), math.asin(max(-1.0, min(1.0, -m[2, 0]))),
                     math.atan2(m[1, 0], m[0, 0])])


def _twist(axis: Any, q: Any) -> Any:
    t = np.concatenate([axis * float(axis @ q[:3]), [q[3]]])
    return t / np.linalg.norm(t)


def _between(a: Any, b: Any) -> Any:
    a, b = _normalize(a), _normalize(b)
    c = np.cross(a, b)
    s = np.linalg.norm(c)
    return axis_quat(c / s, math.atan2(s, float(a @ b))) if s > 0 else np.array([0.0, 0.0, 0.0, 1.0])


def between_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Random directions, and parallel ones (b = 2a: the identity)."""
    a, b = rng.uniform(-2, 2, size=(n, 3)), rng.uniform(-2, 2, size=(n, 3))
    b[0] = 2 * a[0]
    return [a, b]


def axis_angle_dom(sig: tuple[Any, ...], rng: Gen, n: int) -> list[Any]:
    """Random rotations, the identity (zero axis) and a negative real part."""
    q = unit_quats(rng, n)
    q[0] = [0, 0, 0, 1]
    q[1] = -np.abs(q[1])
    return [q] + [None] * (len(sig) - 1)


def _slerp(a: Any, b: Any, t: float) -> Any:
    if float(a @ b) < 0:  # the shortest arc: to -b
        b = -b
    rel = qmul(qconj(a), b)
    ang = 2 * math.atan2(float(np.linalg.norm(rel[:3])), rel[3])
    axis = _normalize(rel[:3])
    return qmul(a, axis_quat(axis, t * ang))


def _axis_angle(q: Any) -> Any:
    if q[3] < 0:
        q = -q
    s = float(np.linalg.norm(q[:3]))
    return (q[:3] / s if s > 0 else np.zeros(3)), 2 * math.atan2(s, q[3])


def _decompose(m: Any, *_: Any) -> Any:
    s = np.linalg.norm(m[:3, :3], axis=0)
    return m[:3, 3], rot_quat(m[:3, :3] / s), s


def _twist_xform(t: Any, x: Any) -> Any:
    w = qrot(t[3:], x[:3])
    return np.concatenate([w, qrot(t[3:], x[3:]) + np.cross(t[:3], w)])


def _wrench_xform(t: Any, x: Any) -> Any:
    f = qrot(t[3:], x[3:])
    return np.concatenate([qrot(t[3:], x[:3]) + np.cross(t[:3], f), f])


def _spatial_cross(a: Any, b: Any) -> Any:
    return np.concatenate([np.cross(a[:3], b[:3]), np.cross(a[:3], b[3:]) + np.cross(a[3:], b[:3])])


def _spatial_cross_dual(a: Any, b: Any) -> Any:
    return np.concatenate([np.cross(a[:3], b[:3]) + np.cross(a[3:], b[3:]), np.cross(a[:3], b[3:])])


def up_to_sign(index: int, start: int = 0) -> Callable[[int, Any, Any], Any]:
    """Output ``index`` holds a rotation quaternion (components ``start:``), compared up to sign."""

    def canon(i: int, v: Any, ref: Any) -> Any:
        if i != index:
            return v
        v = np.array(v, dtype=np.float64)
        v[start:] = aligned(v[start:], np.asarray(ref, dtype=np.float64)[start:])
        return v

    return canon


def _vec_or_scalar_unary(fn: Callable[[Any], Any]) -> Ref:
    return Ref(lambda x: np.vectorize(fn, otypes=[np.float64])(x))


def _int_unary(op: Callable[[int], Any]) -> Callable[..., Any]:
    return lambda x: np.vectorize(lambda v: op(int(v)), otypes=[object])(x) if np.ndim(x) else op(int(x))


def _generic_unary(op: Callable[[Any], Any]) -> Callable[..., Any]:
    def fn(sig: tuple[Any, ...], x: Any) -> Any:
        if is_float(scalar_of(sig[0])):
            return op(np.asarray(x, dtype=np.float64))
        return _int_unary(op)(x)

    return fn


REFS: dict[str, Ref] = {
    # scalar math (floats)
    "acos": Ref(lambda x: math.acos(max(-1.0, min(1.0, x))), uniform(-1.1, 1.1)),
    "asin": Ref(lambda x: math.asin(max(-1.0, min(1.0, x))), uniform(-1.1, 1.1)),
    "atan": Ref(math.atan, uniform(-4, 4)),
    "atan2": Ref(math.atan2, uniform(-2, 2)),
    "cbrt": Ref(lambda x: math.copysign(abs(x) ** (1 / 3), x), uniform(-8, 8)),
    "ceil": Ref(math.ceil, away_from_integers),
    "floor": Ref(math.floor, away_from_integers),
    "trunc": Ref(math.trunc, away_from_integers),
    "frac": Ref(lambda x: x - math.trunc(x), away_from_integers),
    "round": Ref(lambda x: math.copysign(math.floor(abs(x) + 0.5), x), with_halves),
    "rint": Ref(lambda x: float(np.rint(x)), with_halves),
    "cos": Ref(math.cos, uniform(-4, 4)),
    "sin": Ref(math.sin, uniform(-4, 4)),
    "tan": Ref(math.tan, uniform(-1.3, 1.3), tol=2),
    "cosh": Ref(math.cosh, uniform(-3, 3)),
    "sinh": Ref(math.sinh, uniform(-3, 3)),
    "tanh": Ref(math.tanh, uniform(-3, 3)),
    "degrees": Ref(lambda x: x * 180 / math.pi),
    "radians": Ref(lambda x: x * math.pi / 180, uniform(-360, 360)),
    "erf": Ref(math.erf),
    "erfc": Ref(math.erfc),
    "erfinv": Ref(erfinv, uniform(-0.95, 0.95), tol=4),
    "erfcinv": Ref(lambda x: erfinv(1 - x), uniform(0.05, 1.95), tol=4),
    "exp": Ref(math.exp, uniform(-3, 3)),
    "log": Ref(math.log, positive),
    "log2": Ref(math.log2, positive),
    "log10": Ref(math.log10, positive),
    "sqrt": Ref(math.sqrt, positive),
    "pow": Ref(lambda x, y: x ** y, pow_dom, tol=2),
    "copysign": Ref(math.copysign),
    "smoothstep": Ref(lambda a, b, x: (lambda t: t * t * (3 - 2 * t))(min(1.0, max(0.0, (x - a) / (b - a)))),
                      smoothstep_dom, tol=2),
    "lerp": Ref(lambda a, b, t: a * (1 - t) + b * t, tol=2),
    # scalar math (numbers and vectors)
    "abs": Ref(_generic_unary(abs), typed=True),
    "sign": Ref(_generic_unary(lambda x: np.where(x < 0, -1, 1)), with_zeros, typed=True),
    "step": Ref(_generic_unary(lambda x: np.where(x < 0, 1, 0)), with_zeros, typed=True),
    "nonzero": Ref(_generic_unary(lambda x: np.where(x != 0, 1, 0)), with_zeros, typed=True),
    "isfinite": Ref(lambda x: bool(np.all(np.isfinite(x))), special_floats),
    "isnan": Ref(lambda x: bool(np.any(np.isnan(x))), special_floats),
    "isinf": Ref(lambda x: bool(np.any(np.isinf(x))), special_floats),
    "min": Ref(_minmax(np.min, np.minimum)),
    "max": Ref(_minmax(np.max, np.maximum)),
    "clamp": Ref(lambda x, a, b: min(max(x, a), b), clamp_dom),
    # operators
    "add": Ref(elementwise(lambda a, b: a + b), wrapping, typed=True),
    "sub": Ref(elementwise(lambda a, b: a - b), wrapping, typed=True),
    "mul": Ref(_mul, typed=True, tol=4),
    "div": Ref(_div, nonzero_divisor, typed=True),
    "mod": Ref(_mod, nonzero_divisor, typed=True),
    "floordiv": Ref(_floordiv, nonzero_divisor, typed=True),
    "neg": Ref(_generic_unary(lambda x: -x), wrapping, typed=True),
    "pos": Ref(_generic_unary(lambda x: x), typed=True),
    "invert": Ref(_int_unary(lambda x: ~x), bit_patterns),
    "bit_and": Ref(elementwise(lambda a, b: a & b), bit_patterns, typed=True),
    "bit_or": Ref(elementwise(lambda a, b: a | b), bit_patterns, typed=True),
    "bit_xor": Ref(elementwise(lambda a, b: a ^ b), bit_patterns, typed=True),
    "lshift": Ref(elementwise(lambda a, b: a << b), shifts, typed=True),
    "rshift": Ref(elementwise(lambda a, b: a >> b), rshift_dom, typed=True),
    "_cmp_lt": Ref(lambda a, b: a < b, equal_half),
    "_cmp_le": Ref(lambda a, b: a <= b, equal_half),
    "_cmp_gt": Ref(lambda a, b: a > b, equal_half),
    "_cmp_ge": Ref(lambda a, b: a >= b, equal_half),
    "_cmp_eq": Ref(lambda a, b: bool(np.array_equal(a, b)), equal_half),
    "_cmp_ne": Ref(lambda a, b: not np.array_equal(a, b), equal_half),
    "_not": Ref(lambda x: not x, with_zeros, sigs=scalars_only),
    # utility
    "select": Ref(_select, select_dom),
    "where": Ref(_where, select_dom),
    # vector math
    "dot": Ref(lambda a, b: a @ b, tol=2),
    "cross": Ref(np.cross),
    "length": Ref(lambda v: math.sqrt(float(v @ v))),
    "length_sq": Ref(lambda v: v @ v),
    "normalize": Ref(_normalize, with_zeros),
    "outer": Ref(np.outer),
    "transpose": Ref(np.transpose),
    "determinant": Ref(np.linalg.det, tol=4),
    "inverse": Ref(np.linalg.inv, well_conditioned, tol=4),
    "inverse_approx": Ref(np.linalg.inv, well_conditioned, tol=4),
    "trace": Ref(np.trace),
    "diag": Ref(np.diag),
    "get_diag": Ref(np.diag),
    "skew": Ref(lambda v: np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])),
    "ddot": Ref(lambda a, b: float(np.sum(a * b)), tol=4),  # float16: 36-term sums in half
    "cw_mul": Ref(elementwise(lambda a, b: a * b), typed=True),
    "cw_div": Ref(_div, nonzero_divisor, typed=True),
    "argmin": Ref(lambda v: int(np.argmin(v)), distinct),
    "argmax": Ref(lambda v: int(np.argmax(v)), distinct),
    "matrix_from_cols": Ref(lambda *c: np.stack(c, axis=1)),
    "matrix_from_rows": Ref(lambda *r: np.stack(r, axis=0)),
    "norm_l1": Ref(lambda v: float(np.sum(np.abs(v)))),
    "norm_l2": Ref(lambda v: float(np.sqrt(v @ v))),
    "norm_huber": Ref(_huber, delta_dom),
    "norm_pseudo_huber": Ref(_pseudo_huber, delta_dom),
    "smooth_normalize": Ref(lambda v, d=1.0: v / _pseudo_huber(v, d), delta_dom),
    "svd3": Ref(check=check_svd, domain=degenerate_matrices, tol=8),
    "svd2": Ref(check=check_svd, domain=degenerate_matrices, tol=8),
    "qr3": Ref(check=check_qr, domain=degenerate_matrices, tol=8),
    "eig3": Ref(check=check_eig, domain=degenerate_matrices, tol=8),
    # quaternions
    "quaternion": Ref(_quaternion),
    "quat_identity": Ref(lambda: np.array([0.0, 0.0, 0.0, 1.0])),
    "quat_from_axis_angle": Ref(lambda a, t: axis_quat(a, t), unit_axis_first),
    "quat_to_axis_angle": Ref(lambda q, *_: _axis_angle(q), axis_angle_dom, tol=4),
    "quat_from_matrix": Ref(lambda m: rot_quat(m[:3, :3]), rotation_matrices, tol=4, canon=up_to_sign(0)),
    "quat_to_matrix": Ref(qmat),
    "quat_rpy": Ref(lambda r, p, y: _from_euler(np.array([r, p, y]), 0, 1, 2)),
    "quat_to_rpy": Ref(_to_rpy, tol=4),
    "quat_inverse": Ref(qconj),
    "quat_rotate": Ref(qrot),
    "quat_rotate_inv": Ref(lambda q, v: qrot(qconj(q), v)),
    "quat_slerp": Ref(_slerp, slerp_dom, tol=4),
    "quat_between_vectors": Ref(_between, between_dom, tol=4, canon=up_to_sign(0)),
    "quat_from_euler": Ref(lambda e, i, j, k: _from_euler(e, int(i), int(j), int(k)), euler_dom),
    "quat_to_euler": Ref(check=check_to_euler, domain=to_euler_dom, tol=8),
    "quat_twist": Ref(_twist, unit_axis_first, tol=2, canon=up_to_sign(0)),
    "quat_twist_angle": Ref(lambda a, q: 2 * math.acos(max(-1.0, min(1.0, _twist(a, q)[3]))), unit_axis_first,
                            tol=8),
    "quat_twist_angle_signed": Ref(lambda a, q: 2 * math.atan2(float(_twist(a, q)[:3] @ a), _twist(a, q)[3]),
                                   unit_axis_first, tol=8),
    # transforms
    "transformation": Ref(_transformation),
    "transform_identity": Ref(lambda: np.array([0.0, 0, 0, 0, 0, 0, 1])),
    "transform_get_translation": Ref(lambda t: t[:3]),
    "transform_get_rotation": Ref(lambda t: t[3:]),
    "transform_set_translation": Ref(lambda t, p: np.concatenate([p, t[3:]])),
    "transform_set_rotation": Ref(lambda t, q: np.concatenate([t[:3], q])),
    "transform_set_translation_copy": Ref(lambda t, p: np.concatenate([p, t[3:]])),
    "transform_set_rotation_copy": Ref(lambda t, q: np.concatenate([t[:3], q])),
    "transform_multiply": Ref(lambda a, b: np.concatenate([tf_apply(a, b[:3]), qmul(a[3:], b[3:])]), tol=2),
    "transform_point": Ref(lambda t, x: t[:3, :3] @ x + t[:3, 3] if np.ndim(t) == 2 else tf_apply(t, x), tol=2),
    "transform_vector": Ref(lambda t, x: t[:3, :3] @ x if np.ndim(t) == 2 else qrot(t[3:], x), tol=2),
    "transform_inverse": Ref(lambda t: np.concatenate([-qrot(qconj(t[3:]), t[:3]), qconj(t[3:])]), tol=2),
    "transform_compose": Ref(compose, compose_dom),
    "transform_decompose": Ref(_decompose, decompose_dom, tol=4, canon=up_to_sign(1)),
    "transform_from_matrix": Ref(lambda m: np.concatenate([m[:3, 3], rot_quat(m[:3, :3])]), rotation_matrices,
                                 tol=4, canon=up_to_sign(0, 3)),
    "transform_to_matrix": Ref(lambda t: compose(t[:3], t[3:], np.ones(3))),
    # spatial
    "spatial_vector": Ref(_spatial_vector),
    "spatial_top": Ref(lambda a: a[:3]),
    "spatial_bottom": Ref(lambda a: a[3:]),
    "spatial_dot": Ref(lambda a, b: a @ b),
    "spatial_cross": Ref(_spatial_cross),
    "spatial_cross_dual": Ref(_spatial_cross_dual),
    "spatial_adjoint": Ref(lambda r, s: np.block([[r, np.zeros((3, 3))], [s, r]])),
    "transform_twist": Ref(_twist_xform, tol=2),
    "transform_wrench": Ref(_wrench_xform, tol=2),
    "velocity_at_point": Ref(lambda qd, r: qd[3:] + np.cross(qd[:3], r)),
}

_RANDOM = "deterministic per seed but no closed form: statistical tests (moments, ranges, histograms) in "
_GEOM = "needs a mesh/BVH/hash grid or geometry input: checked against brute force in "
_LOWERING = "special lowering (not a plain call): "

#: Builtins without a reference here: reason and the tests that check them instead.
EXEMPT: dict[str, str] = {
    # Tile builtins take and give whole tiles (compile-time shapes): checked against NumPy, finite differences and
    # bad input in tests/tiles/ (each group of tile builtins declares its own module there).
    **{n: "tile builtin: tests/tiles/" for n, b in REGISTRY.builtins.items() if b.group == "Tile Primitives"},
    # The older names of the tiled geometry queries (declared in the geometry groups): brute force in
    # tests/tiles/test_tile_queries.py.
    **{n: "tiled query: tests/tiles/test_tile_queries.py" for n in REGISTRY.builtins if n.endswith("_tiled")},
    **{n: _RANDOM + "tests/kernels/test_random.py; kernel == host here" for n in (
        "rand_init", "randf", "randi", "randu", "randn", "poisson", "sample_triangle", "sample_unit_cube",
        "sample_unit_disk", "sample_unit_hemisphere", "sample_unit_hemisphere_surface", "sample_unit_ring",
        "sample_unit_sphere", "sample_unit_sphere_surface", "sample_unit_square")},
    **{n: _RANDOM + "tests/kernels/test_noise.py; kernel == host here" for n in ("noise", "pnoise", "curlnoise")},
    "sample_cdf": _RANDOM + "tests/kernels/test_random.py (takes an array)",
    **{n: _GEOM + "tests/geometry/test_mesh.py" for n in (
        "mesh_get", "mesh_get_bvh", "mesh_get_group_root", "mesh_get_index", "mesh_get_point", "mesh_get_velocity",
        "mesh_eval_face_normal", "mesh_eval_position", "mesh_eval_velocity", "mesh_query_aabb",
        "mesh_query_aabb_next", "mesh_query_furthest_point_no_sign", "mesh_query_next", "mesh_query_point",
        "mesh_query_point_no_sign", "mesh_query_point_sign_normal", "mesh_query_point_sign_parity",
        "mesh_query_point_sign_winding_number", "mesh_query_ray", "mesh_query_ray_anyhit",
        "mesh_query_ray_count_intersections", "mesh_query_sphere", "_mesh_build", "_mesh_refit")},
    **{n: _GEOM + "tests/geometry/test_bvh.py" for n in (
        "bvh_get_group_root", "bvh_query_aabb", "bvh_query_capsule", "bvh_query_next", "bvh_query_ray",
        "bvh_query_sphere", "_bvh_build", "_bvh_refit")},
    **{n: _GEOM + "tests/geometry/test_hash_grid.py" for n in (
        "hash_grid_point_id", "hash_grid_query", "hash_grid_query_next", "_hash_bounds", "_hash_sort")},
    **{n: "needs a NanoVDB volume: checked against analytic fields, NumPy lookups and finite differences in "
          "tests/volume/test_volume_sampling.py and test_volume_index.py" for n in (
        "volume_sample", "volume_sample_f", "volume_sample_i", "volume_sample_v", "volume_sample_grad",
        "volume_sample_grad_f", "volume_sample_index", "volume_sample_grad_index", "volume_lookup", "volume_lookup_f",
        "volume_lookup_i", "volume_lookup_v", "volume_lookup_index", "volume_store", "volume_store_f",
        "volume_store_i", "volume_store_v", "volume_voxel_count", "volume_index_to_world", "volume_world_to_index",
        "volume_index_to_world_dir", "volume_world_to_index_dir")},
    "texture_sample": "needs a texture: checked against a NumPy sampler and finite differences in "
                      "tests/texture/test_texture_sampling.py",
    "closest_point_edge_edge": _GEOM + "tests/geometry/test_primitives.py",
    "intersect_tri_tri": _GEOM + "tests/geometry/test_primitives.py",
    **{n: _LOWERING + "atomics, tests/kernels/test_atomics_print.py and test_half_atomics.py" for n in (
        "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exch", "atomic_and", "atomic_or",
        "atomic_xor", "atomic_cas")},
    "print": _LOWERING + "output only, tests/kernels/test_atomics_print.py",
    "printf": _LOWERING + "output only, tests/kernels/test_atomics_print.py",
    "expect_eq": "prints on failure, returns nothing: tests/kernels/test_atomics_print.py",
    "expect_neq": "prints on failure, returns nothing: tests/kernels/test_atomics_print.py",
    "expect_near": _LOWERING + "prints on failure: tests/kernels/test_atomics_print.py",
    "tid": _LOWERING + "thread index, every kernel test",
    "len": _LOWERING + "tests/kernels/test_language.py",
    "cast": _LOWERING + "bit reinterpretation, tests/kernels/test_language.py",
    "identity": "compile-time size argument: tests/kernels/test_vec_mat.py",
    "lower_bound": "takes an array: tests/kernels/test_language.py",
    "_array_dim": _LOWERING + "arr.shape[d], tests/kernels/test_language.py",
    "_array_valid": _LOWERING + "bool(arr), tests/kernels/test_language.py",
    "_array_ptr": _LOWERING + "arr.ptr, tests/kernels/test_array_from_ptr.py",
    "_array_from_ptr": _LOWERING + "wp.array(ptr=, shape=, dtype=), tests/kernels/test_array_from_ptr.py",
    "_grad_array": "array plumbing (wp.adjoint[arr] in @func_grad): tests/autodiff/test_custom_grad_arrays.py",
    "_has_data": "array plumbing (adjoint guards on gradient buffers): tests/autodiff/test_custom_grad_arrays.py",
}
