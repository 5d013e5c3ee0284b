// Gradient (Perlin-style) noise in 1-4 dimensions, its periodic variant and curl noise, with adjoints with respect to
// the position.
//
// noise(seed, x): the unit lattice Z^N carries one unit gradient vector per point, chosen by hashing the point's
// integer coordinates with the seed (a chain of detail::mix32). Inside a cell, each of the 2^N corners contributes
// dot(g_corner, x - corner), blended with the quintic fade 6t^5 - 15t^4 + 10t^3 along every axis, which makes the
// field C2 (continuous gradients and Hessians). Gradients: 1-D a value in [-1, 1); 2-D one of 8 directions at 45
// degrees; 3-D one of the 12 cube-edge directions; 4-D one of the 32 directions with three +-1 components (the
// last two normalised). Unit gradients bound |noise| by sqrt(N)/2 <= 1 (1-D: 1/2); the field is 0 at lattice points.
// pnoise wraps the lattice coordinates modulo the periods (periods below 1 count as 1).
// curlnoise: the curl of a noise potential (2-D: psi scalar, v = (-dpsi/dy, dpsi/dx); 3-D/4-D: three potential
// fields, curl over x, y, z; the 4th coordinate is time). Octave i adds gain^i * curl(lacunarity^i * x) with its own
// potential seeds. Its adjoint uses the analytic Hessians of the potentials.
// random.py holds a Python twin of noise/pnoise/curlnoise (same operations, same order); keep the two in step.
#pragma once
#include "random.h"

namespace treadle {

namespace detail {

constexpr float32 kInvSqrt2 = 0.70710678118654752f;
constexpr float32 kInvSqrt3 = 0.57735026918962576f;

// The lattice gradient for hash h.
template <unsigned N> TREADLE_FUNC void noise_gradient(uint32 h, float32* g);

template <> TREADLE_FUNC void noise_gradient<1>(uint32 h, float32* g) {
    g[0] = float32(h >> 8) * 1.1920928955078125e-7f - 1.0f;  // 2^-23
}

// cos(k * 45 degrees) for k in [0, 8).
TREADLE_FUNC float32 cos_eighth(uint32 k) {
    if (k & 1u)
        return (k == 1u || k == 7u) ? kInvSqrt2 : -kInvSqrt2;
    return k == 0u ? 1.0f : (k == 4u ? -1.0f : 0.0f);
}

template <> TREADLE_FUNC void noise_gradient<2>(uint32 h, float32* g) {
    // Direction k * 45 degrees; sin(k * 45) = cos((k - 2) * 45).
    const uint32 k = h >> 29;
    g[0] = cos_eighth(k);
    g[1] = cos_eighth((k + 6u) & 7u);
}

template <> TREADLE_FUNC void noise_gradient<3>(uint32 h, float32* g) {
    // 12 edge directions: one zero axis, +-1/sqrt2 on the other two.
    const uint32 idx = (h >> 8) % 12u;
    const uint32 zero_axis = idx >> 2;
    unsigned bit = 0;
    for (uint32 i = 0; i < 3; ++i) {
        if (i == zero_axis) {
            g[i] = 0.0f;
        } else {
            g[i] = ((idx >> bit) & 1u) ? -kInvSqrt2 : kInvSqrt2;
            ++bit;
        }
    }
}

template <> TREADLE_FUNC void noise_gradient<4>(uint32 h, float32* g) {
    // 32 directions: one zero axis, +-1/sqrt3 on the other three.
    const uint32 idx = h >> 27;
    const uint32 zero_axis = idx >> 3;
    unsigned bit = 0;
    for (uint32 i = 0; i < 4; ++i) {
        if (i == zero_axis) {
            g[i] = 0.0f;
        } else {
            g[i] = ((idx >> bit) & 1u) ? -kInvSqrt3 : kInvSqrt3;
            ++bit;
        }
    }
}

TREADLE_FUNC int32 wrap_period(int32 i, int32 p) {
    if (p < 1)
        p = 1;
    const int32 r = i % p;
    return r < 0 ? r + p : r;
}

// Value of the N-d noise at x; with grad != null also its gradient, with hess != null (row-major N x N) its Hessian.
// period == null: no wrapping.
template <unsigned N>
TREADLE_FUNC float32 perlin(uint32 seed, const float32* x, const int32* period, float32* grad, float32* hess) {
    int32 cell[N];
    float32 t[N], f[N], df[N], ddf[N];
    for (unsigned k = 0; k < N; ++k) {
        const float32 fl = TREADLE_LIBM(floorf)(x[k]);
        cell[k] = int32(fl);
        const float32 tk = x[k] - fl;
        t[k] = tk;
        f[k] = tk * tk * tk * (tk * (tk * 6.0f - 15.0f) + 10.0f);
        df[k] = 30.0f * tk * tk * (tk - 1.0f) * (tk - 1.0f);
        ddf[k] = 60.0f * tk * (tk - 1.0f) * (2.0f * tk - 1.0f);
    }
    if (grad)
        for (unsigned k = 0; k < N; ++k)
            grad[k] = 0.0f;
    if (hess)
        for (unsigned k = 0; k < N * N; ++k)
            hess[k] = 0.0f;
    float32 value = 0.0f;
    for (unsigned c = 0; c < (1u << N); ++c) {
        uint32 h = seed;
        float32 d[N], w[N], dw[N], ddw[N];
        for (unsigned k = 0; k < N; ++k) {
            const bool hi = (c >> k) & 1u;
            int32 ci = cell[k] + (hi ? 1 : 0);
            if (period)
                ci = wrap_period(ci, period[k]);
            h = mix32(h ^ uint32(ci));
            d[k] = hi ? t[k] - 1.0f : t[k];
            w[k] = hi ? f[k] : 1.0f - f[k];
            dw[k] = hi ? df[k] : -df[k];
            ddw[k] = hi ? ddf[k] : -ddf[k];
        }
        float32 g[N];
        noise_gradient<N>(h, g);
        float32 dot = 0.0f;
        float32 weight = 1.0f;
        for (unsigned k = 0; k < N; ++k) {
            dot += g[k] * d[k];
            weight *= w[k];
        }
        value += weight * dot;
        if (!grad && !hess)
            continue;
        float32 wk[N];  // d weight / d x_k
        for (unsigned k = 0; k < N; ++k) {
            float32 p = dw[k];
            for (unsigned j = 0; j < N; ++j)
                if (j != k)
                    p *= w[j];
            wk[k] = p;
        }
        if (grad)
            for (unsigned k = 0; k < N; ++k)
                grad[k] += wk[k] * dot + weight * g[k];
        if (hess) {
            for (unsigned k = 0; k < N; ++k) {
                for (unsigned l = 0; l < N; ++l) {
                    float32 wkl;
                    if (k == l) {
                        wkl = ddw[k];
                        for (unsigned j = 0; j < N; ++j)
                            if (j != k)
                                wkl *= w[j];
                    } else {
                        wkl = dw[k] * dw[l];
                        for (unsigned j = 0; j < N; ++j)
                            if (j != k && j != l)
                                wkl *= w[j];
                    }
                    hess[k * N + l] += wkl * dot + wk[k] * g[l] + wk[l] * g[k];
                }
            }
        }
    }
    return value;
}

// Seed of potential component `comp` in octave `octave` (octave 0, component 0 is the seed itself, so 2-D curl noise
// is the rotated gradient of noise(seed, x)).
TREADLE_FUNC uint32 curl_seed(uint32 seed, uint32 octave, uint32 comp) {
    return (octave == 0u && comp == 0u) ? seed : mix32(seed + 0x9E3779B9u * (4u * octave + comp));
}

template <unsigned N> struct curl_dim { static constexpr unsigned value = N == 2 ? 2u : 3u; };

// One octave of curl noise at x (already scaled), written to v; with jac != null also dv/dx (row-major, CN x N).
template <unsigned N>
TREADLE_FUNC void curl_octave(uint32 seed, uint32 octave, const float32* x, float32* v, float32* jac) {
    if constexpr (N == 2) {
        float32 g[2], H[4];
        perlin<2>(curl_seed(seed, octave, 0u), x, nullptr, g, jac ? H : nullptr);
        v[0] = -g[1];
        v[1] = g[0];
        if (jac)
            for (unsigned k = 0; k < 2; ++k) {
                jac[0 * N + k] = -H[1 * 2 + k];
                jac[1 * N + k] = H[0 * 2 + k];
            }
    } else {
        float32 G[3][N], H[3][N * N];
        for (uint32 c = 0; c < 3; ++c)
            perlin<N>(curl_seed(seed, octave, c), x, nullptr, G[c], jac ? H[c] : nullptr);
        v[0] = G[2][1] - G[1][2];
        v[1] = G[0][2] - G[2][0];
        v[2] = G[1][0] - G[0][1];
        if (jac)
            for (unsigned k = 0; k < N; ++k) {
                jac[0 * N + k] = H[2][1 * N + k] - H[1][2 * N + k];
                jac[1 * N + k] = H[0][2 * N + k] - H[2][0 * N + k];
                jac[2 * N + k] = H[1][0 * N + k] - H[0][1 * N + k];
            }
    }
}

template <typename O> TREADLE_FUNC uint32 octave_count(O octaves) { return octaves > O(0) ? uint32(octaves) : 0u; }

// Sum over octaves; with adj_ret/adj_x set, accumulates adj_x += J^T adj_ret instead of computing the value.
template <unsigned N>
TREADLE_FUNC vec_t<curl_dim<N>::value, float32> curl_sum(uint32 seed, const vec_t<N, float32>& x, uint32 octaves,
                                                         float32 lacunarity, float32 gain,
                                                         const vec_t<curl_dim<N>::value, float32>* adj_ret,
                                                         vec_t<N, float32>* adj_x) {
    constexpr unsigned CN = curl_dim<N>::value;
    vec_t<CN, float32> out;
    float32 freq = 1.0f;
    float32 amp = 1.0f;
    for (uint32 i = 0; i < octaves; ++i) {
        float32 xs[N], v[CN], jac[CN * N];
        for (unsigned k = 0; k < N; ++k)
            xs[k] = x.c[k] * freq;
        curl_octave<N>(seed, i, xs, v, adj_x ? jac : nullptr);
        for (unsigned a = 0; a < CN; ++a)
            out.c[a] += amp * v[a];
        if (adj_x)
            for (unsigned k = 0; k < N; ++k) {
                float32 s = 0.0f;
                for (unsigned a = 0; a < CN; ++a)
                    s += adj_ret->c[a] * jac[a * N + k];
                adj_x->c[k] += amp * freq * s;
            }
        freq *= lacunarity;
        amp *= gain;
    }
    return out;
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------ noise
TREADLE_FUNC float32 noise(uint32 seed, float32 x) { return detail::perlin<1>(seed, &x, nullptr, nullptr, nullptr); }
template <typename S> TREADLE_FUNC void adj_noise(uint32 seed, float32 x, S&, float32& adj_x, const float32& adj_ret) {
    float32 g;
    detail::perlin<1>(seed, &x, nullptr, &g, nullptr);
    adj_x += adj_ret * g;
}

template <unsigned N> TREADLE_FUNC float32 noise(uint32 seed, const vec_t<N, float32>& x) {
    return detail::perlin<N>(seed, x.c, nullptr, nullptr, nullptr);
}
template <unsigned N, typename S>
TREADLE_FUNC void adj_noise(uint32 seed, const vec_t<N, float32>& x, S&, vec_t<N, float32>& adj_x,
                            const float32& adj_ret) {
    float32 g[N];
    detail::perlin<N>(seed, x.c, nullptr, g, nullptr);
    for (unsigned k = 0; k < N; ++k)
        adj_x.c[k] += adj_ret * g[k];
}

// ------------------------------------------------------------------------------------------------ pnoise
TREADLE_FUNC float32 pnoise(uint32 seed, float32 x, int32 px) {
    return detail::perlin<1>(seed, &x, &px, nullptr, nullptr);
}
TREADLE_FUNC float32 pnoise(uint32 seed, const vec_t<2, float32>& x, int32 px, int32 py) {
    const int32 p[2] = {px, py};
    return detail::perlin<2>(seed, x.c, p, nullptr, nullptr);
}
TREADLE_FUNC float32 pnoise(uint32 seed, const vec_t<3, float32>& x, int32 px, int32 py, int32 pz) {
    const int32 p[3] = {px, py, pz};
    return detail::perlin<3>(seed, x.c, p, nullptr, nullptr);
}
TREADLE_FUNC float32 pnoise(uint32 seed, const vec_t<4, float32>& x, int32 px, int32 py, int32 pz, int32 pt) {
    const int32 p[4] = {px, py, pz, pt};
    return detail::perlin<4>(seed, x.c, p, nullptr, nullptr);
}

template <typename S, typename I>
TREADLE_FUNC void adj_pnoise(uint32 seed, float32 x, int32 px, S&, float32& adj_x, I&, const float32& adj_ret) {
    float32 g;
    detail::perlin<1>(seed, &x, &px, &g, nullptr);
    adj_x += adj_ret * g;
}
template <typename S, typename I>
TREADLE_FUNC void adj_pnoise(uint32 seed, const vec_t<2, float32>& x, int32 px, int32 py, S&, vec_t<2, float32>& adj_x,
                             I&, I&, const float32& adj_ret) {
    const int32 p[2] = {px, py};
    float32 g[2];
    detail::perlin<2>(seed, x.c, p, g, nullptr);
    for (unsigned k = 0; k < 2; ++k)
        adj_x.c[k] += adj_ret * g[k];
}
template <typename S, typename I>
TREADLE_FUNC void adj_pnoise(uint32 seed, const vec_t<3, float32>& x, int32 px, int32 py, int32 pz, S&,
                             vec_t<3, float32>& adj_x, I&, I&, I&, const float32& adj_ret) {
    const int32 p[3] = {px, py, pz};
    float32 g[3];
    detail::perlin<3>(seed, x.c, p, g, nullptr);
    for (unsigned k = 0; k < 3; ++k)
        adj_x.c[k] += adj_ret * g[k];
}
template <typename S, typename I>
TREADLE_FUNC void adj_pnoise(uint32 seed, const vec_t<4, float32>& x, int32 px, int32 py, int32 pz, int32 pt, S&,
                             vec_t<4, float32>& adj_x, I&, I&, I&, I&, const float32& adj_ret) {
    const int32 p[4] = {px, py, pz, pt};
    float32 g[4];
    detail::perlin<4>(seed, x.c, p, g, nullptr);
    for (unsigned k = 0; k < 4; ++k)
        adj_x.c[k] += adj_ret * g[k];
}

// ------------------------------------------------------------------------------------------------ curlnoise
// xy: vec2 -> vec2; xyz: vec3 -> vec3; xyzt: vec4 -> vec3. octaves may be int32 or uint32 (<= 0: zero vector).
template <unsigned N, typename O = uint32>
TREADLE_FUNC vec_t<detail::curl_dim<N>::value, float32> curlnoise(uint32 seed, const vec_t<N, float32>& x,
                                                                  O octaves = O(1), float32 lacunarity = 2.0f,
                                                                  float32 gain = 0.5f) {
    return detail::curl_sum<N>(seed, x, detail::octave_count(octaves), lacunarity, gain, nullptr, nullptr);
}

// One adjoint per call arity (the optional arguments get no gradient).
template <unsigned N, typename S>
TREADLE_FUNC void adj_curlnoise(uint32 seed, const vec_t<N, float32>& x, S&, vec_t<N, float32>& adj_x,
                                const vec_t<detail::curl_dim<N>::value, float32>& adj_ret) {
    detail::curl_sum<N>(seed, x, 1u, 2.0f, 0.5f, &adj_ret, &adj_x);
}
template <unsigned N, typename S, typename O>
TREADLE_FUNC void adj_curlnoise(uint32 seed, const vec_t<N, float32>& x, O octaves, S&, vec_t<N, float32>& adj_x, O&,
                                const vec_t<detail::curl_dim<N>::value, float32>& adj_ret) {
    detail::curl_sum<N>(seed, x, detail::octave_count(octaves), 2.0f, 0.5f, &adj_ret, &adj_x);
}
template <unsigned N, typename S, typename O>
TREADLE_FUNC void adj_curlnoise(uint32 seed, const vec_t<N, float32>& x, O octaves, float32 lacunarity, S&,
                                vec_t<N, float32>& adj_x, O&, float32&,
                                const vec_t<detail::curl_dim<N>::value, float32>& adj_ret) {
    detail::curl_sum<N>(seed, x, detail::octave_count(octaves), lacunarity, 0.5f, &adj_ret, &adj_x);
}
template <unsigned N, typename S, typename O>
TREADLE_FUNC void adj_curlnoise(uint32 seed, const vec_t<N, float32>& x, O octaves, float32 lacunarity, float32 gain,
                                S&, vec_t<N, float32>& adj_x, O&, float32&, float32&,
                                const vec_t<detail::curl_dim<N>::value, float32>& adj_ret) {
    detail::curl_sum<N>(seed, x, detail::octave_count(octaves), lacunarity, gain, &adj_ret, &adj_x);
}

}  // namespace treadle
