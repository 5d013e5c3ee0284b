// Textures sampled in software: nearest / linear filtering, wrap / clamp / mirror / border addressing, mip levels
// with nearest or linear blending, texel formats normalised as graphics APIs do; gradients with respect to the
// coordinates and the level of detail.
//
// A texture reaches kernels as a small struct (Texture1D/2D/3D in treadle/_src/texture) whose `_treadle_tex` field
// is the address of a texture_desc_t; its texels (all levels, one after another, each row-major: slice, row,
// texel, channel) live in one buffer on the texture's device. Coordinates are normalised ([0, 1] across the
// texture; texel i of a level of n texels is centred at (i + 0.5) / n) or in texels of level 0 (a level of n
// texels then scales them by n / n0).
//
// `texture_sample<R, F>` returns R = float32 (channel 0), vec2 (channels 0, 1) or vec4 (missing channels are 0);
// F names the call form: 1 (u), 2 (uv), 3 (u, v), 4 (uvw), 5 (u, v, w); an extra trailing float is the lod.
#pragma once
#include "vec.h"

namespace treadle {

struct texture_desc_t {
    uint64 data;
    int32 ndim, format, channels, filter, mip_filter, normalized, levels;
    int32 address[3];
    int32 dims[16][3];  // width, height, depth of each level
    int64 offsets[16];  // byte offset of each level from `data`
};
static_assert(sizeof(texture_desc_t) == 368, "texture_desc_t layout (see treadle/_src/texture/texture.py)");

namespace tex {

enum : int32 { F_U8 = 0, F_I8 = 1, F_U16 = 2, F_I16 = 3, F_F16 = 4, F_F32 = 5, F_U32 = 6, F_I32 = 7 };
enum : int32 { WRAP = 0, CLAMP = 1, MIRROR = 2, BORDER = 3 };

TREADLE_FUNC const texture_desc_t& desc_of(uint64 id) { return *reinterpret_cast<const texture_desc_t*>(id); }

TREADLE_FUNC int32 format_size(int32 f) { return f <= F_I8 ? 1 : (f <= F_F16 ? 2 : 4); }

// Channel `c` of the texel at `p`, as a float (8/16-bit integers normalised, signed ones clamped to -1).
TREADLE_FUNC float32 channel(const uint8* p, int32 f, int32 c) {
    switch (f) {
    case F_U8: return float32(p[c]) * (1.0f / 255.0f);
    case F_I8: {
        const float32 v = float32(reinterpret_cast<const int8*>(p)[c]) * (1.0f / 127.0f);
        return v < -1.0f ? -1.0f : v;
    }
    case F_U16: return float32(reinterpret_cast<const uint16*>(p)[c]) * (1.0f / 65535.0f);
    case F_I16: {
        const float32 v = float32(reinterpret_cast<const int16*>(p)[c]) * (1.0f / 32767.0f);
        return v < -1.0f ? -1.0f : v;
    }
    case F_F16: return detail::half_bits_to_float(reinterpret_cast<const uint16*>(p)[c]);
    case F_F32: return reinterpret_cast<const float32*>(p)[c];
    case F_U32: return float32(reinterpret_cast<const uint32*>(p)[c]);
    default: return float32(reinterpret_cast<const int32*>(p)[c]);
    }
}

// Applies an address mode to a texel index; false: outside a BORDER texture (the texel reads as zero).
TREADLE_FUNC bool address(int32& i, int32 n, int32 mode) {
    if (i >= 0 && i < n)
        return true;
    switch (mode) {
    case WRAP: i = ((i % n) + n) % n; return true;
    case MIRROR: {
        const int32 m = ((i % (2 * n)) + 2 * n) % (2 * n);
        i = m < n ? m : 2 * n - 1 - m;
        return true;
    }
    case BORDER: return false;
    default: i = i < 0 ? 0 : n - 1; return true;
    }
}

// Floor of a texel coordinate, kept far from integer overflow (NaN and huge values read an edge texel).
TREADLE_FUNC int32 floor_i(float32 x, float32& frac) {
    if (!(x > -1.0e9f && x < 1.0e9f)) {
        frac = 0.0f;
        return x > 0.0f ? 1000000000 : -1000000000;
    }
    const float32 f = TREADLE_LIBM(floorf)(x);
    frac = x - f;
    return (int32)f;
}

TREADLE_FUNC void fetch(const texture_desc_t& d, int32 level, const int32* idx, float32 out[4]) {
    for (int c = 0; c < 4; ++c)
        out[c] = 0.0f;
    int32 ijk[3] = {0, 0, 0};
    for (int a = 0; a < d.ndim; ++a) {
        ijk[a] = idx[a];
        if (!address(ijk[a], d.dims[level][a], d.address[a]))
            return;
    }
    const int32 es = format_size(d.format);
    const int64 texel = ((int64)ijk[2] * d.dims[level][1] + ijk[1]) * d.dims[level][0] + ijk[0];
    const uint8* p = reinterpret_cast<const uint8*>(d.data) + d.offsets[level] + texel * d.channels * es;
    for (int c = 0; c < d.channels; ++c)
        out[c] = channel(p, d.format, c);
}

// One level at `coord` (d.ndim coordinates); `grad[a][c]`: d value_c / d coord_a.
TREADLE_FUNC void sample_level(const texture_desc_t& d, int32 level, const float32* coord, float32 v[4],
                               float32 grad[3][4]) {
    float32 x[3], scale[3];
    for (int a = 0; a < 3; ++a) {
        for (int c = 0; c < 4; ++c)
            grad[a][c] = 0.0f;
        scale[a] = 0.0f;
        x[a] = 0.0f;
    }
    for (int a = 0; a < d.ndim; ++a) {
        scale[a] = d.normalized ? float32(d.dims[level][a]) : float32(d.dims[level][a]) / float32(d.dims[0][a]);
        x[a] = coord[a] * scale[a];
    }
    if (d.filter == 0) {
        int32 idx[3];
        float32 unused;
        for (int a = 0; a < d.ndim; ++a)
            idx[a] = floor_i(x[a], unused);
        fetch(d, level, idx, v);
        return;
    }
    int32 i0[3] = {0, 0, 0};
    float32 f[3] = {0.0f, 0.0f, 0.0f};
    for (int a = 0; a < d.ndim; ++a)
        i0[a] = floor_i(x[a] - 0.5f, f[a]);
    for (int c = 0; c < 4; ++c)
        v[c] = 0.0f;
    const int corners = 1 << d.ndim;
    for (int k = 0; k < corners; ++k) {
        int32 idx[3];
        float32 w[3], dw[3];
        for (int a = 0; a < d.ndim; ++a) {
            const int bit = (k >> a) & 1;
            idx[a] = i0[a] + bit;
            w[a] = bit ? f[a] : 1.0f - f[a];
            dw[a] = (bit ? 1.0f : -1.0f) * scale[a];
        }
        float32 t[4];
        fetch(d, level, idx, t);
        float32 weight = 1.0f;
        for (int a = 0; a < d.ndim; ++a)
            weight *= w[a];
        for (int c = 0; c < 4; ++c)
            v[c] += weight * t[c];
        for (int a = 0; a < d.ndim; ++a) {
            float32 wa = dw[a];
            for (int b = 0; b < d.ndim; ++b)
                if (b != a)
                    wa *= w[b];
            for (int c = 0; c < 4; ++c)
                grad[a][c] += wa * t[c];
        }
    }
}

// The sample (all 4 channels), its coordinate gradient and its derivative with respect to the lod.
struct result_t {
    float32 v[4];
    float32 grad[3][4];
    float32 dlod[4];
};

TREADLE_FUNC result_t sample(uint64 id, const float32* coord, float32 lod) {
    const texture_desc_t& d = desc_of(id);
    result_t r;
    for (int c = 0; c < 4; ++c)
        r.dlod[c] = 0.0f;
    const int32 top = d.levels - 1;
    if (top <= 0 || !(lod >= 0.0f)) {  // one level, a negative lod or NaN: level 0
        sample_level(d, 0, coord, r.v, r.grad);
        return r;
    }
    if (d.mip_filter == 0) {
        int32 l = lod >= float32(top) ? top : (int32)TREADLE_LIBM(floorf)(lod + 0.5f);
        l = l > top ? top : l;
        sample_level(d, l, coord, r.v, r.grad);
        return r;
    }
    if (lod >= float32(top)) {
        sample_level(d, top, coord, r.v, r.grad);
        return r;
    }
    const int32 l0 = (int32)TREADLE_LIBM(floorf)(lod);
    const float32 t = lod - float32(l0);
    result_t hi;
    sample_level(d, l0, coord, r.v, r.grad);
    sample_level(d, l0 + 1, coord, hi.v, hi.grad);
    for (int c = 0; c < 4; ++c) {
        r.dlod[c] = hi.v[c] - r.v[c];
        r.v[c] = r.v[c] + t * (hi.v[c] - r.v[c]);
        for (int a = 0; a < 3; ++a)
            r.grad[a][c] = r.grad[a][c] + t * (hi.grad[a][c] - r.grad[a][c]);
    }
    return r;
}

template <typename R> struct out_t;
template <> struct out_t<float32> {
    TREADLE_FUNC static float32 make(const float32* v) { return v[0]; }
    TREADLE_FUNC static float32 dot(const float32* v, const float32& adj) { return v[0] * adj; }
};
template <> struct out_t<vec_t<2, float32>> {
    TREADLE_FUNC static vec_t<2, float32> make(const float32* v) { return vec_t<2, float32>(v[0], v[1]); }
    TREADLE_FUNC static float32 dot(const float32* v, const vec_t<2, float32>& a) { return v[0] * a[0] + v[1] * a[1]; }
};
template <> struct out_t<vec_t<4, float32>> {
    TREADLE_FUNC static vec_t<4, float32> make(const float32* v) {
        return vec_t<4, float32>(v[0], v[1], v[2], v[3]);
    }
    TREADLE_FUNC static float32 dot(const float32* v, const vec_t<4, float32>& a) {
        return v[0] * a[0] + v[1] * a[1] + v[2] * a[2] + v[3] * a[3];
    }
};

template <typename R, typename Tex> TREADLE_FUNC R value(const Tex& t, const float32* coord, float32 lod) {
    const result_t r = sample(t._treadle_tex, coord, lod);
    return out_t<R>::make(r.v);
}
template <typename R, typename Tex>
TREADLE_FUNC void adjoint(const Tex& t, const float32* coord, int n, float32 lod, float32* adj_coord,
                          float32& adj_lod, const R& adj_ret) {
    const result_t r = sample(t._treadle_tex, coord, lod);
    for (int a = 0; a < n; ++a)
        adj_coord[a] += out_t<R>::dot(r.grad[a], adj_ret);
    adj_lod += out_t<R>::dot(r.dlod, adj_ret);
}

}  // namespace tex

// ------------------------------------------------------------------------------------------------ call forms
// (F: 1 = u, 2 = uv, 3 = u v, 4 = uvw, 5 = u v w; a trailing float after the coordinates is the lod.)
template <typename R, int F, typename Tex> TREADLE_FUNC R texture_sample(const Tex& t, float32 a) {
    static_assert(F == 1, "texture_sample(tex, u) is the 1-d form");
    const float32 c[1] = {a};
    return tex::value<R>(t, c, 0.0f);
}
template <typename R, int F, typename Tex> TREADLE_FUNC R texture_sample(const Tex& t, float32 a, float32 b) {
    const float32 c[2] = {a, b};
    return tex::value<R>(t, c, F == 1 ? b : 0.0f);
}
template <typename R, int F, typename Tex>
TREADLE_FUNC R texture_sample(const Tex& t, float32 a, float32 b, float32 c3) {
    const float32 c[3] = {a, b, c3};
    return tex::value<R>(t, c, F == 3 ? c3 : 0.0f);
}
template <typename R, int F, typename Tex>
TREADLE_FUNC R texture_sample(const Tex& t, float32 a, float32 b, float32 c3, float32 lod) {
    const float32 c[3] = {a, b, c3};
    return tex::value<R>(t, c, lod);
}
template <typename R, int F, unsigned N, typename Tex>
TREADLE_FUNC R texture_sample(const Tex& t, const vec_t<N, float32>& p) {
    return tex::value<R>(t, p.c, 0.0f);
}
template <typename R, int F, unsigned N, typename Tex>
TREADLE_FUNC R texture_sample(const Tex& t, const vec_t<N, float32>& p, float32 lod) {
    return tex::value<R>(t, p.c, lod);
}

template <typename R, int F, typename Tex>
TREADLE_FUNC void adj_texture_sample(const Tex& t, float32 a, Tex&, float32& adj_a, const R& adj_ret) {
    const float32 c[1] = {a};
    float32 dc[1] = {0.0f}, dl = 0.0f;
    tex::adjoint<R>(t, c, 1, 0.0f, dc, dl, adj_ret);
    adj_a += dc[0];
}
template <typename R, int F, typename Tex>
TREADLE_FUNC void adj_texture_sample(const Tex& t, float32 a, float32 b, Tex&, float32& adj_a, float32& adj_b,
                                     const R& adj_ret) {
    const float32 c[2] = {a, b};
    float32 dc[2] = {0.0f, 0.0f}, dl = 0.0f;
    tex::adjoint<R>(t, c, F == 1 ? 1 : 2, F == 1 ? b : 0.0f, dc, dl, adj_ret);
    adj_a += dc[0];
    adj_b += F == 1 ? dl : dc[1];
}
template <typename R, int F, typename Tex>
TREADLE_FUNC void adj_texture_sample(const Tex& t, float32 a, float32 b, float32 c3, Tex&, float32& adj_a,
                                     float32& adj_b, float32& adj_c, const R& adj_ret) {
    const float32 c[3] = {a, b, c3};
    float32 dc[3] = {0.0f, 0.0f, 0.0f}, dl = 0.0f;
    tex::adjoint<R>(t, c, F == 3 ? 2 : 3, F == 3 ? c3 : 0.0f, dc, dl, adj_ret);
    adj_a += dc[0];
    adj_b += dc[1];
    adj_c += F == 3 ? dl : dc[2];
}
template <typename R, int F, typename Tex>
TREADLE_FUNC void adj_texture_sample(const Tex& t, float32 a, float32 b, float32 c3, float32 lod, Tex&,
                                     float32& adj_a, float32& adj_b, float32& adj_c, float32& adj_lod,
                                     const R& adj_ret) {
    const float32 c[3] = {a, b, c3};
    float32 dc[3] = {0.0f, 0.0f, 0.0f};
    tex::adjoint<R>(t, c, 3, lod, dc, adj_lod, adj_ret);
    adj_a += dc[0];
    adj_b += dc[1];
    adj_c += dc[2];
}
template <typename R, int F, unsigned N, typename Tex>
TREADLE_FUNC void adj_texture_sample(const Tex& t, const vec_t<N, float32>& p, Tex&, vec_t<N, float32>& adj_p,
                                     const R& adj_ret) {
    float32 dl = 0.0f;
    tex::adjoint<R>(t, p.c, (int)N, 0.0f, adj_p.c, dl, adj_ret);
}
template <typename R, int F, unsigned N, typename Tex>
TREADLE_FUNC void adj_texture_sample(const Tex& t, const vec_t<N, float32>& p, float32 lod, Tex&,
                                     vec_t<N, float32>& adj_p, float32& adj_lod, const R& adj_ret) {
    tex::adjoint<R>(t, p.c, (int)N, lod, adj_p.c, adj_lod, adj_ret);
}

}  // namespace treadle
