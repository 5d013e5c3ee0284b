"""Random numbers, samplers and noise (group "Random").

The generator and the noise functions are implemented in ``treadle/native/random.h`` and ``noise.h`` (the design is
described there). This file declares the builtins and holds their Python twins, used for Python-scope calls
(``wp.randf(state)``) and constant folding; they repeat the C++ operations in the same order and precision, so integer
results are identical and float results agree to rounding (the C++ compiler may fuse multiply-adds, and libm
functions come from different libraries).

As in the reference, the ``state`` argument of the ``rand*`` and ``sample_*`` builtins is a ``uint32`` variable that
each call advances in place inside kernels; from Python scope it is not modified (Python integers are immutable), so
repeated calls return the same value. ``noise``, ``pnoise`` and ``curlnoise`` only read their state (the seed).
A state or seed may be an ``int32`` or a ``uint32``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import scalars
from ..types.typesys import ArrayT, is_vector, scalar_of, type_str
from .registry import Interp, arity, builtin, need

GROUP = "Random"

_F32 = np.float32
_M32 = 0xFFFFFFFF


def _vec(n: int) -> Any:
    from ..types.vector import vector

    return vector(n, scalars.float32)


# ----------------------------------------------------------------------------------------------------------------
# Type rules
# ----------------------------------------------------------------------------------------------------------------


def _is_state(t: Any) -> bool:
    return t is scalars.int32 or t is scalars.uint32


def _need_state(t: Any, what: str = "state") -> None:
    need(_is_state(t), f"{what} must be an int32 or uint32, got {type_str(t)}")


def _float_vec_len(t: Any) -> int:
    """1 for float32, N for a float32 vector of length 2-4, 0 otherwise."""
    if t is scalars.float32:
        return 1
    if is_vector(t) and scalar_of(t) is scalars.float32 and t._length_ in (2, 3, 4):
        return int(t._length_)
    return 0


def _rule(ret: Any, *extra: Any) -> Any:
    """A rule for ``f(state)`` and, when ``extra`` names argument kinds, ``f(state, *extra)``."""

    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        arity(types, *((1, 1 + len(extra)) if extra else (1,)))
        _need_state(types[0])
        for t, kinds in zip(types[1:], extra):
            need(t in kinds, f"expected {' or '.join(type_str(k) for k in kinds)}, got {type_str(t)}")
        return ret

    return rule


def _rand_init_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 1, 2)
    _need_state(types[0], "seed")
    if len(types) == 2:
        _need_state(types[1], "offset")
    return scalars.uint32


def _poisson_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    _need_state(types[0])
    need(types[1] is scalars.float32, f"lam must be a float32, got {type_str(types[1])}")
    return scalars.uint32


def _sample_cdf_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    _need_state(types[0])
    t = types[1]
    need(isinstance(t, ArrayT) and t.ndim == 1 and t.dtype is scalars.float32,
         f"cdf must be a 1-d float32 array, got {type_str(t)}")
    return scalars.int32


def _noise_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2)
    _need_state(types[0])
    need(_float_vec_len(types[1]) > 0, f"x must be a float32 or a vec2/vec3/vec4, got {type_str(types[1])}")
    return scalars.float32


def _pnoise_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    need(len(types) >= 2, "expected (state, x, periods...)")
    _need_state(types[0])
    n = _float_vec_len(types[1])
    need(n > 0, f"x must be a float32 or a vec2/vec3/vec4, got {type_str(types[1])}")
    need(len(types) == 2 + n, f"a {n}-d coordinate needs {n} period argument(s), got {len(types) - 2}")
    for t in types[2:]:
        need(t is scalars.int32, f"periods must be int32, got {type_str(t)}")
    return scalars.float32


def _curlnoise_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    arity(types, 2, 3, 4, 5)
    _need_state(types[0])
    n = _float_vec_len(types[1])
    need(n >= 2, f"xy must be a vec2, vec3 or vec4, got {type_str(types[1])}")
    if len(types) > 2:
        need(_is_state(types[2]), f"octaves must be an int32 or uint32, got {type_str(types[2])}")
    for t in types[3:]:
        need(t is scalars.float32, f"lacunarity and gain must be float32, got {type_str(t)}")
    return _vec(2 if n == 2 else 3)


# ----------------------------------------------------------------------------------------------------------------
# Python twins of random.h (exact integer arithmetic; float32/float64 exactly where the C++ uses them)
# ----------------------------------------------------------------------------------------------------------------


def _mix32(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x21F0AAAD) & _M32
    x ^= x >> 15
    x = (x * 0xD35A2D97) & _M32
    x ^= x >> 15
    return x


def _u32(v: Any) -> int:
    return int(v) & _M32


_TWO_PI = _F32(6.28318530717958647692)


class _Rng:
    """The state of one generator (a Python int)."""

    def __init__(self, state: Any) -> None:
        self.s = _u32(state)

    def next(self) -> int:
        self.s = (self.s * 0x2C9277B5 + 0xAC564B05) & _M32
        return _mix32(self.s)

    def unit(self) -> np.float32:
        return _F32(self.next() >> 8) * _F32(5.9604644775390625e-8)


def _f32(fn: Any, x: Any) -> np.float32:
    """A float32 libm function through the double one (correctly rounded in almost all cases)."""
    return _F32(fn(float(x)))


def _rand_init(seed: Any, offset: Any = None) -> np.uint32:
    s = _mix32(_u32(seed) ^ 0x6A09E667)
    if offset is not None:
        s = _mix32(s ^ _mix32((_u32(offset) + 0x9E3779B9) & _M32))
    return np.uint32(s)


def _bounded(r: int, low: int, high: int) -> int:
    return low if high <= low else (low + ((r * ((high - low) & _M32)) >> 32)) & _M32


def _randu(state: Any, low: Any = None, high: Any = None) -> np.uint32:
    r = _Rng(state).next()
    return np.uint32(r if low is None else _bounded(r, _u32(low), _u32(high)))


def _randi(state: Any, low: Any = None, high: Any = None) -> np.int32:
    r = _Rng(state).next()
    if low is not None:
        lo, hi = int(low), int(high)
        r = lo if hi <= lo else lo + ((r * (hi - lo)) >> 32)
    r &= _M32
    return np.int32(r - (1 << 32) if r >= 1 << 31 else r)


def _randf(state: Any, low: Any = None, high: Any = None) -> np.float32:
    u = _Rng(state).unit()
    return u if low is None else _F32(low) + (_F32(high) - _F32(low)) * u


def _randn(state: Any) -> np.float32:
    rng = _Rng(state)
    u1, u2 = rng.unit(), rng.unit()
    r = _f32(math.sqrt, _F32(-2.0) * _f32(math.log, _F32(1.0) - u1))
    return r * _f32(math.cos, _TWO_PI * u2)


_LOG_FACT = (0.0, 0.0, 0.69314718055994531, 1.79175946922805500, 3.17805383034794562, 4.78749174278204599,
             6.57925121201010100, 8.52516136106541430, 10.60460290274525023, 12.80182748008146961)


def _log_factorial(k: float) -> float:
    if k < 10.0:
        return _LOG_FACT[int(k)]
    n = k + 1.0
    inv = 1.0 / n
    inv2 = inv * inv
    series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0)))
    return (n - 0.5) * math.log(n) - n + 0.91893853320467274 + series


def _poisson(state: Any, lam: Any) -> np.uint32:
    rng = _Rng(state)
    L = float(_F32(lam))
    if not L > 0.0:
        return np.uint32(0)
    if L < 10.0:
        limit, p, count = math.exp(-L), 1.0, 0
        while True:
            p *= float(rng.unit())
            if p <= limit:
                return np.uint32(count)
            count += 1
    log_lam = math.log(L)
    b = 0.931 + 2.53 * math.sqrt(L)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
    v_r = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u = float(rng.unit()) - 0.5
        v = float(rng.unit())
        us = 0.5 - abs(u)
        k = float(math.floor((2.0 * a / us + b) * u + L + 0.43)) if us > 0.0 else -1.0
        if us >= 0.07 and v <= v_r:
            return np.uint32(k)
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        lhs = (math.log(v) if v > 0.0 else -math.inf) + log_inv_alpha - math.log(a / (us * us) + b)
        if lhs <= -L + k * log_lam - _log_factorial(k):
            return np.uint32(k)


def _vec_of(*xs: Any) -> np.ndarray:
    return np.array(xs, dtype=np.float32)


def _sample_triangle(state: Any) -> np.ndarray:
    rng = _Rng(state)
    u, v = rng.unit(), rng.unit()
    if u + v > _F32(1.0):
        u, v = _F32(1.0) - u, _F32(1.0) - v
    return _vec_of(u, v)


def _sample_unit_ring(state: Any) -> np.ndarray:
    phi = _TWO_PI * _Rng(state).unit()
    return _vec_of(_f32(math.cos, phi), _f32(math.sin, phi))


def _sample_unit_disk(state: Any) -> np.ndarray:
    rng = _Rng(state)
    r = _f32(math.sqrt, rng.unit())
    phi = _TWO_PI * rng.unit()
    return _vec_of(r * _f32(math.cos, phi), r * _f32(math.sin, phi))


def _sphere_point(z: np.float32, phi: np.float32) -> np.ndarray:
    rr = _F32(1.0) - z * z
    r = _f32(math.sqrt, rr if rr > 0 else _F32(0.0))
    return _vec_of(r * _f32(math.cos, phi), r * _f32(math.sin, phi), z)


def _surface(rng: _Rng, hemisphere: bool) -> np.ndarray:
    u = rng.unit()
    z = _F32(1.0) - u if hemisphere else _F32(1.0) - _F32(2.0) * u
    return _sphere_point(z, _TWO_PI * rng.unit())


def _sampler_surface(hemisphere: bool) -> Any:
    return lambda state: _surface(_Rng(state), hemisphere)


def _sampler_ball(hemisphere: bool) -> Any:
    def sample(state: Any) -> np.ndarray:
        rng = _Rng(state)
        p = _surface(rng, hemisphere)
        return p * _f32(np.cbrt, rng.unit())

    return sample


def _sampler_box(n: int) -> Any:
    def sample(state: Any) -> np.ndarray:
        rng = _Rng(state)
        return _vec_of(*[rng.unit() - _F32(0.5) for _ in range(n)])

    return sample


# ----------------------------------------------------------------------------------------------------------------
# Python twin of noise.h
# ----------------------------------------------------------------------------------------------------------------

_INV_SQRT2 = _F32(0.70710678118654752)
_INV_SQRT3 = _F32(0.57735026918962576)


def _cos_eighth(k: int) -> np.float32:
    if k & 1:
        return _INV_SQRT2 if k in (1, 7) else -_INV_SQRT2
    return _F32(1.0) if k == 0 else (_F32(-1.0) if k == 4 else _F32(0.0))


def _gradient(n: int, h: int) -> list[np.float32]:
    if n == 1:
        return [_F32(h >> 8) * _F32(1.1920928955078125e-7) - _F32(1.0)]
    if n == 2:
        k = h >> 29
        return [_cos_eighth(k), _cos_eighth((k + 6) & 7)]
    idx, unit = ((h >> 8) % 12, _INV_SQRT2) if n == 3 else (h >> 27, _INV_SQRT3)
    zero_axis = idx >> 2 if n == 3 else idx >> 3
    g, bit = [], 0
    for i in range(n):
        if i == zero_axis:
            g.append(_F32(0.0))
        else:
            g.append(-unit if (idx >> bit) & 1 else unit)
            bit += 1
    return g


def _wrap(i: int, p: int) -> int:
    return i % max(p, 1)  # Python's % is already non-negative for a positive modulus


def _perlin(seed: int, x: Sequence[np.float32], period: Sequence[int] | None,
            want_grad: bool) -> tuple[np.float32, list[np.float32]]:
    n = len(x)
    cell, t, f, df = [], [], [], []
    for xk in x:
        fl = _F32(math.floor(xk))
        cell.append(int(fl))
        tk = _F32(xk - fl)
        t.append(tk)
        f.append(tk * tk * tk * (tk * (tk * _F32(6.0) - _F32(15.0)) + _F32(10.0)))
        df.append(_F32(30.0) * tk * tk * (tk - _F32(1.0)) * (tk - _F32(1.0)))
    value = _F32(0.0)
    grad = [_F32(0.0)] * n
    for c in range(1 << n):
        h = seed
        d, w, dw = [], [], []
        for k in range(n):
            hi = (c >> k) & 1
            ci = cell[k] + hi
            if period is not None:
                ci = _wrap(ci, int(period[k]))
            h = _mix32(h ^ (ci & _M32))
            d.append(t[k] - _F32(1.0) if hi else t[k])
            w.append(f[k] if hi else _F32(1.0) - f[k])
            dw.append(df[k] if hi else -df[k])
        g = _gradient(n, h)
        dot, weight = _F32(0.0), _F32(1.0)
        for k in range(n):
            dot = dot + g[k] * d[k]
            weight = weight * w[k]
        value = value + weight * dot
        if want_grad:
            for k in range(n):
                p = dw[k]
                for j in range(n):
                    if j != k:
                        p = p * w[j]
                grad[k] = grad[k] + (p * dot + weight * g[k])
    return value, grad


def _coords(x: Any) -> list[np.float32]:
    return [_F32(v) for v in np.asarray(x, dtype=np.float32).reshape(-1)]


def _noise(state: Any, x: Any) -> np.float32:
    return _perlin(_u32(state), _coords(x), None, False)[0]


def _pnoise(state: Any, x: Any, *periods: Any) -> np.float32:
    return _perlin(_u32(state), _coords(x), [int(p) for p in periods], False)[0]


def _curl_seed(seed: int, octave: int, comp: int) -> int:
    if octave == 0 and comp == 0:
        return seed
    return _mix32((seed + 0x9E3779B9 * (4 * octave + comp)) & _M32)


def _curlnoise(state: Any, x: Any, octaves: Any = 1, lacunarity: Any = 2.0, gain: Any = 0.5) -> np.ndarray:
    seed, xs0 = _u32(state), _coords(x)
    n = len(xs0)
    cn = 2 if n == 2 else 3
    out = [_F32(0.0)] * cn
    freq, amp = _F32(1.0), _F32(1.0)
    for i in range(max(int(octaves), 0)):
        xs = [xk * freq for xk in xs0]
        if n == 2:
            g = _perlin(_curl_seed(seed, i, 0), xs, None, True)[1]
            v = [-g[1], g[0]]
        else:
            G = [_perlin(_curl_seed(seed, i, c), xs, None, True)[1] for c in range(3)]
            v = [G[2][1] - G[1][2], G[0][2] - G[2][0], G[1][0] - G[0][1]]
        out = [o + amp * va for o, va in zip(out, v)]
        freq = freq * _F32(lacunarity)
        amp = amp * _F32(gain)
    return _vec_of(*out)


# ----------------------------------------------------------------------------------------------------------------
# Declarations
# ----------------------------------------------------------------------------------------------------------------

_U32, _I32, _F = scalars.uint32, scalars.int32, scalars.float32
_ADVANCES = " Inside kernels ``state`` must be a variable; it is advanced in place."

builtin("rand_init", group=GROUP, rule=_rand_init_rule, host=_rand_init, differentiable=False,
        signature="rand_init(seed: int32[, offset: int32]) -> uint32",
        doc="A random number generator state from a seed, and optionally an offset (typically the thread index) "
            "that selects a distinct sequence: distinct offsets give distinct states.")
builtin("randu", group=GROUP, rule=_rule(_U32, (_U32, _I32), (_U32, _I32)), host=_randu, differentiable=False,
        ref_args=(0,), interpret=Interp.RANDOM, signature="randu(state: uint32[, low: uint32, high: uint32]) -> uint32",
        doc="A uniform random uint32 in [0, 2^32), or in [low, high)." + _ADVANCES)
builtin("randi", group=GROUP, rule=_rule(_I32, (_I32,), (_I32,)), host=_randi, differentiable=False,
        ref_args=(0,), interpret=Interp.RANDOM, signature="randi(state: uint32[, low: int32, high: int32]) -> int32",
        doc="A uniform random int32 in [-2^31, 2^31), or in [low, high)." + _ADVANCES)
builtin("randf", group=GROUP, rule=_rule(_F, (_F,), (_F,)), host=_randf, differentiable=False,
        ref_args=(0,), interpret=Interp.RANDOM, signature="randf(state: uint32[, low: float32, high: float32]) -> float32",
        doc="A uniform random float in [0, 1) (a multiple of 2^-24), or low + (high - low) * randf(state)."
            + _ADVANCES)
builtin("randn", group=GROUP, rule=_rule(_F), host=_randn, differentiable=False, ref_args=(0,), interpret=Interp.RANDOM,
        signature="randn(state: uint32) -> float32",
        doc="A standard normal random float (Box-Muller, two draws)." + _ADVANCES)
builtin("poisson", group=GROUP, rule=_poisson_rule, host=_poisson, differentiable=False, ref_args=(0,),
        interpret=Interp.RANDOM,
        signature="poisson(state: uint32, lam: float32) -> uint32",
        doc="A Poisson(lam) random count (mean and variance lam); 0 without drawing when lam <= 0." + _ADVANCES)
builtin("sample_cdf", group=GROUP, rule=_sample_cdf_rule, kernel_only=True, differentiable=False, ref_args=(0,),
        interpret=Interp.SAMPLE_CDF, signature="sample_cdf(state: uint32, cdf: array(dtype=float32)) -> int32",
        doc="Inverse-transform sampling: draws u in [0, 1) and returns the first index i with cdf[i] >= u "
            "(cdf non-decreasing, last element 1)." + _ADVANCES)

_SAMPLERS: dict[str, tuple[int, Any, str]] = {
    "sample_triangle": (2, _sample_triangle,
                        "Barycentric coordinates (u, v) of a uniform point in a triangle (w = 1 - u - v)."),
    "sample_unit_ring": (2, _sample_unit_ring, "A uniform point on the unit circle in the xy-plane."),
    "sample_unit_disk": (2, _sample_unit_disk, "A uniform point in the unit disk (radius <= 1)."),
    "sample_unit_sphere_surface": (3, _sampler_surface(False), "A uniform point on the unit sphere."),
    "sample_unit_sphere": (3, _sampler_ball(False), "A uniform point in the unit ball (radius <= 1)."),
    "sample_unit_hemisphere_surface": (3, _sampler_surface(True),
                                       "A uniform point on the unit hemisphere (z >= 0)."),
    "sample_unit_hemisphere": (3, _sampler_ball(True), "A uniform point in the unit half-ball (z >= 0)."),
    "sample_unit_square": (2, _sampler_box(2), "A uniform point in the square [-0.5, 0.5)^2."),
    "sample_unit_cube": (3, _sampler_box(3), "A uniform point in the cube [-0.5, 0.5)^3."),
}
for _name, (_n, _host, _doc) in _SAMPLERS.items():
    builtin(_name, group=GROUP, rule=_rule(_vec(_n)), host=_host, differentiable=False, ref_args=(0,),
            interpret=Interp.RANDOM, signature=f"{_name}(state: uint32) -> vec{_n}", doc=_doc + _ADVANCES)

builtin("noise", group=GROUP, rule=_noise_rule, host=_noise,
        signature="noise(state: uint32, x: float32 | vec2 | vec3 | vec4) -> float32",
        doc="Perlin-style gradient noise: smooth (C2), zero at integer points, ``abs(value) <= sqrt(N)/2 <= 1`` in N-d. "
            "``state`` selects the field and is not advanced; differentiable with respect to x.")
builtin("pnoise", group=GROUP, rule=_pnoise_rule, host=_pnoise,
        signature="pnoise(state: uint32, x: float32 | vec2 | vec3 | vec4, px: int32, py: int32, pz: int32, "
                  "pt: int32) -> float32",
        doc="Noise that repeats with integer periods (one per coordinate; periods below 1 count as 1). "
            "Differentiable with respect to x.")
builtin("curlnoise", group=GROUP, rule=_curlnoise_rule, host=_curlnoise,
        signature="curlnoise(state: uint32, xy: vec2 | vec3 | vec4, octaves: uint32 = 1, lacunarity: float32 = 2.0, "
                  "gain: float32 = 0.5) -> vec2 | vec3",
        doc="A divergence-free vector field: the curl of noise potentials (vec2 -> vec2, vec3 -> vec3, vec4 = "
            "position and time -> vec3). Octave i adds gain**i * curl(lacunarity**i * x). Differentiable with "
            "respect to the position.")
