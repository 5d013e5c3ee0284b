// Random numbers: rand_init, randu/randi/randf/randn, poisson, sample_cdf and the uniform samplers of simple domains.
//
// Generator ("treadle32"): the state is one uint32 that the caller keeps in a local variable and that every draw
// advances in place (the builtins take it by reference).
//   - transition: a full-period LCG modulo 2^32, s' = s * 0x2C9277B5 + 0xAC564B05 (PCG's 32-bit constants);
//   - output: the new state pushed through `mix32`, a bijective xorshift-multiply finalizer. As in PCG, the weak
//     low bits of the LCG never reach the user; unlike PCG's RXS-M-XS step, `mix32` also decorrelates neighbouring
//     states, so states that are hashes of consecutive seeds/offsets give independent-looking streams.
//   - rand_init(seed) = mix32(seed ^ K); rand_init(seed, offset) = mix32(rand_init(seed) ^ mix32(offset + K')).
//     Both are bijective in their last argument: distinct offsets (threads) always start from distinct states.
// Every function here has a Python twin in treadle/_src/builtins/random.py (Python scope and constant folding) doing
// the same operations in the same order and precision: integer results are identical, float results agree to
// rounding (the C++ compiler may fuse multiply-adds, libm differs slightly). Keep the two in step.
//
// None of these is differentiable; noise.h holds the differentiable noise functions.
#pragma once
#include "array.h"
#include "vec.h"

namespace treadle {

namespace detail {

// Bijective 32-bit finalizer (xorshift-multiply; multipliers from Wellons' hash-prospector search).
TREADLE_FUNC uint32 mix32(uint32 x) {
    x ^= x >> 16;
    x *= 0x21f0aaadu;
    x ^= x >> 15;
    x *= 0xd35a2d97u;
    x ^= x >> 15;
    return x;
}

// The state may be declared int32 or uint32 in the kernel; both are views of the same 32 bits (signed/unsigned
// variants may alias). Other state types have no overload, so they fail at compile time.
TREADLE_FUNC uint32& rng_bits(uint32& s) { return s; }
TREADLE_FUNC uint32& rng_bits(int32& s) { return reinterpret_cast<uint32&>(s); }

TREADLE_FUNC uint32 rng_next(uint32& s) {
    s = s * 0x2C9277B5u + 0xAC564B05u;
    return mix32(s);
}

// A float in [0, 1): the top 24 bits of a draw times 2^-24 (exact in float32).
TREADLE_FUNC float32 rng_unit(uint32& s) { return float32(rng_next(s) >> 8) * 5.9604644775390625e-8f; }

constexpr float32 kTwoPi = 6.28318530717958647692f;

// ln(k!) without lgamma: a table below 10, Stirling's series for lnΓ(k + 1) above (error < 1e-11 there).
TREADLE_FUNC float64 log_factorial(float64 k) {
    if (k < 10.0) {
        switch (int32(k)) {
            case 0: case 1: return 0.0;
            case 2: return 0.69314718055994531;
            case 3: return 1.79175946922805500;
            case 4: return 3.17805383034794562;
            case 5: return 4.78749174278204599;
            case 6: return 6.57925121201010100;
            case 7: return 8.52516136106541430;
            case 8: return 10.60460290274525023;
            default: return 12.80182748008146961;
        }
    }
    const float64 n = k + 1.0;
    const float64 inv = 1.0 / n;
    const float64 inv2 = inv * inv;
    const float64 series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0)));
    return (n - 0.5) * TREADLE_LIBM(log)(n) - n + 0.91893853320467274 + series;
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------ state
TREADLE_FUNC uint32 rand_init(uint32 seed) { return detail::mix32(seed ^ 0x6A09E667u); }
TREADLE_FUNC uint32 rand_init(int32 seed) { return rand_init(uint32(seed)); }

TREADLE_FUNC uint32 rand_init(uint32 seed, uint32 offset) {
    return detail::mix32(rand_init(seed) ^ detail::mix32(offset + 0x9E3779B9u));
}
TREADLE_FUNC uint32 rand_init(int32 seed, int32 offset) { return rand_init(uint32(seed), uint32(offset)); }
TREADLE_FUNC uint32 rand_init(int32 seed, uint32 offset) { return rand_init(uint32(seed), offset); }
TREADLE_FUNC uint32 rand_init(uint32 seed, int32 offset) { return rand_init(seed, uint32(offset)); }

// ------------------------------------------------------------------------------------------------ scalars
template <typename S> TREADLE_FUNC uint32 randu(S& state) { return detail::rng_next(detail::rng_bits(state)); }

// [low, high) by the high half of a 32x32-bit product (bias < range / 2^32, spread evenly over the range);
// an empty or reversed range returns low.
template <typename S> TREADLE_FUNC uint32 randu(S& state, uint32 low, uint32 high) {
    const uint32 r = detail::rng_next(detail::rng_bits(state));
    if (high <= low)
        return low;
    return low + uint32((uint64(r) * uint64(high - low)) >> 32);
}

template <typename S> TREADLE_FUNC int32 randi(S& state) { return int32(detail::rng_next(detail::rng_bits(state))); }

template <typename S> TREADLE_FUNC int32 randi(S& state, int32 low, int32 high) {
    const uint32 r = detail::rng_next(detail::rng_bits(state));
    if (high <= low)
        return low;
    const uint32 range = uint32(high) - uint32(low);
    return int32(uint32(low) + uint32((uint64(r) * uint64(range)) >> 32));
}

template <typename S> TREADLE_FUNC float32 randf(S& state) { return detail::rng_unit(detail::rng_bits(state)); }

template <typename S> TREADLE_FUNC float32 randf(S& state, float32 low, float32 high) {
    return low + (high - low) * detail::rng_unit(detail::rng_bits(state));
}

// Box-Muller with two draws; 1 - u1 lies in (0, 1], so the logarithm is finite.
template <typename S> TREADLE_FUNC float32 randn(S& state) {
    uint32& s = detail::rng_bits(state);
    const float32 u1 = detail::rng_unit(s);
    const float32 u2 = detail::rng_unit(s);
    const float32 r = TREADLE_LIBM(sqrtf)(-2.0f * TREADLE_LIBM(logf)(1.0f - u1));
    return r * TREADLE_LIBM(cosf)(detail::kTwoPi * u2);
}

// Poisson(lam): Knuth's product of uniforms below lam = 10, Hörmann's transformed rejection (PTRS) above; both in
// double precision. lam <= 0 (or NaN) returns 0 without drawing.
template <typename S> TREADLE_FUNC uint32 poisson(S& state, float32 lam) {
    uint32& s = detail::rng_bits(state);
    if (!(lam > 0.0f))
        return 0;
    const float64 L = float64(lam);
    if (L < 10.0) {
        const float64 limit = TREADLE_LIBM(exp)(-L);
        float64 p = 1.0;
        uint32 k = 0;
        while (true) {
            p *= float64(detail::rng_unit(s));
            if (p <= limit)
                return k;
            ++k;
        }
    }
    const float64 log_lam = TREADLE_LIBM(log)(L);
    const float64 b = 0.931 + 2.53 * TREADLE_LIBM(sqrt)(L);
    const float64 a = -0.059 + 0.02483 * b;
    const float64 log_inv_alpha = TREADLE_LIBM(log)(1.1239 + 1.1328 / (b - 3.4));
    const float64 v_r = 0.9277 - 3.6224 / (b - 2.0);
    while (true) {
        const float64 u = float64(detail::rng_unit(s)) - 0.5;
        const float64 v = float64(detail::rng_unit(s));
        const float64 us = 0.5 - (u < 0.0 ? -u : u);
        const float64 k = TREADLE_LIBM(floor)((2.0 * a / us + b) * u + L + 0.43);
        if (us >= 0.07 && v <= v_r)
            return uint32(k);
        if (k < 0.0 || (us < 0.013 && v > us))
            continue;
        const float64 lhs = TREADLE_LIBM(log)(v) + log_inv_alpha - TREADLE_LIBM(log)(a / (us * us) + b);
        if (lhs <= -L + k * log_lam - detail::log_factorial(k))
            return uint32(k);
    }
}

// Inverse-transform sampling of a 1-D CDF: the first index whose value is >= u (the last index if none is).
template <typename S> TREADLE_FUNC int32 sample_cdf(S& state, const array_t<float32>& cdf) {
    const float32 u = detail::rng_unit(detail::rng_bits(state));
    int64 lo = 0;
    int64 hi = cdf.shape[0] - 1;
    if (hi < 0)
        return 0;
    while (lo < hi) {
        const int64 mid = lo + (hi - lo) / 2;
        if (load(cdf, mid) < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return int32(lo);
}

// ------------------------------------------------------------------------------------------------ domains
// Each sampler draws its uniforms in the order they appear in the code (never as unsequenced call arguments).

// Barycentric (u, v) uniform over the triangle u, v >= 0, u + v <= 1: the square folded onto its lower half.
template <typename S> TREADLE_FUNC vec_t<2, float32> sample_triangle(S& state) {
    uint32& s = detail::rng_bits(state);
    float32 u = detail::rng_unit(s);
    float32 v = detail::rng_unit(s);
    if (u + v > 1.0f) {
        u = 1.0f - u;
        v = 1.0f - v;
    }
    return vec_t<2, float32>(u, v);
}

template <typename S> TREADLE_FUNC vec_t<2, float32> sample_unit_ring(S& state) {
    const float32 phi = detail::kTwoPi * detail::rng_unit(detail::rng_bits(state));
    return vec_t<2, float32>(TREADLE_LIBM(cosf)(phi), TREADLE_LIBM(sinf)(phi));
}

// Radius sqrt(u) makes the density uniform in area.
template <typename S> TREADLE_FUNC vec_t<2, float32> sample_unit_disk(S& state) {
    uint32& s = detail::rng_bits(state);
    const float32 r = TREADLE_LIBM(sqrtf)(detail::rng_unit(s));
    const float32 phi = detail::kTwoPi * detail::rng_unit(s);
    return vec_t<2, float32>(r * TREADLE_LIBM(cosf)(phi), r * TREADLE_LIBM(sinf)(phi));
}

namespace detail {
// A point on the unit sphere with height z (uniform z gives uniform area, Archimedes' hat-box theorem).
TREADLE_FUNC vec_t<3, float32> sphere_point(float32 z, float32 phi) {
    const float32 rr = 1.0f - z * z;
    const float32 r = TREADLE_LIBM(sqrtf)(rr > 0.0f ? rr : 0.0f);
    return vec_t<3, float32>(r * TREADLE_LIBM(cosf)(phi), r * TREADLE_LIBM(sinf)(phi), z);
}
}  // namespace detail

template <typename S> TREADLE_FUNC vec_t<3, float32> sample_unit_sphere_surface(S& state) {
    uint32& s = detail::rng_bits(state);
    const float32 z = 1.0f - 2.0f * detail::rng_unit(s);
    const float32 phi = detail::kTwoPi * detail::rng_unit(s);
    return detail::sphere_point(z, phi);
}

template <typename S> TREADLE_FUNC vec_t<3, float32> sample_unit_hemisphere_surface(S& state) {
    uint32& s = detail::rng_bits(state);
    const float32 z = 1.0f - detail::rng_unit(s);
    const float32 phi = detail::kTwoPi * detail::rng_unit(s);
    return detail::sphere_point(z, phi);
}

// Direction times radius cbrt(u): uniform in volume.
template <typename S> TREADLE_FUNC vec_t<3, float32> sample_unit_sphere(S& state) {
    uint32& s = detail::rng_bits(state);
    const vec_t<3, float32> p = sample_unit_sphere_surface(s);
    return p * TREADLE_LIBM(cbrtf)(detail::rng_unit(s));
}

template <typename S> TREADLE_FUNC vec_t<3, float32> sample_unit_hemisphere(S& state) {
    uint32& s = detail::rng_bits(state);
    const vec_t<3, float32> p = sample_unit_hemisphere_surface(s);
    return p * TREADLE_LIBM(cbrtf)(detail::rng_unit(s));
}

template <typename S> TREADLE_FUNC vec_t<2, float32> sample_unit_square(S& state) {
    uint32& s = detail::rng_bits(state);
    const float32 x = detail::rng_unit(s) - 0.5f;
    const float32 y = detail::rng_unit(s) - 0.5f;
    return vec_t<2, float32>(x, y);
}

template <typename S> TREADLE_FUNC vec_t<3, float32> sample_unit_cube(S& state) {
    uint32& s = detail::rng_bits(state);
    const float32 x = detail::rng_unit(s) - 0.5f;
    const float32 y = detail::rng_unit(s) - 0.5f;
    const float32 z = detail::rng_unit(s) - 0.5f;
    return vec_t<3, float32>(x, y, z);
}

}  // namespace treadle
