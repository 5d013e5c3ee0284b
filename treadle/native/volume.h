// NanoVDB volumes in kernels: value and index lookups through a small caching accessor, nearest and trilinear
// sampling with gradients (and second derivatives, for the adjoint of a gradient), stores, index <-> world maps.
//
// A volume id is the address of a NanoVDB grid (GridData, then TreeData, root, upper, lower and leaf nodes; all
// offsets relative). The grid was validated when its Volume was made (treadle/_src/volume/nanovdb.py), so the code
// here follows offsets without checks. The node layout of each value type is computed by `layout_of` with the
// same C struct rules as the Python side. A grid whose type differs from the requested one reads as zero (value
// grids) or as "no index" (index lookups), as in the reference.
//
// Each forward function sits next to its adj_ function. Sampling is differentiable in the sample point (LINEAR;
// CLOSEST has zero derivative); the *_index forms also in the external values and in the background.
#pragma once
#include "vec.h"
#include "mat.h"
#include "atomic.h"
#include "array.h"

namespace treadle {
namespace nvdb {

enum : uint32 {
    T_FLOAT = 1, T_DOUBLE = 2, T_INT32 = 4, T_INT64 = 5, T_VEC3F = 6, T_VEC3D = 7, T_UINT32 = 10, T_VEC4F = 17,
    T_VEC4D = 18, T_INDEX = 19, T_ONINDEX = 20
};
constexpr uint32 GRID_SIZE = 672, OFF_TYPE = 636, OFF_MAP = 296, OFF_DATA1 = 656;
constexpr int32 CLOSEST = 0, LINEAR = 1;

struct layout_t {
    uint32 root_background, root_size, tile_value, tile_size, stride, upper_table, upper_size, lower_table,
        lower_size, leaf_table, leaf_size;
};

TREADLE_FUNC constexpr uint32 align_up(uint32 n, uint32 a) { return (n + a - 1) / a * a; }
TREADLE_FUNC constexpr uint32 after_stats(uint32 start, uint32 values, uint32 vsize, uint32 valign, uint32 ssize) {
    return align_up(align_up(start, valign) + values * vsize, ssize) + 2 * ssize;
}

// `vsize` bytes per value with scalar alignment `valign`, statistics of `ssize` bytes (mirrors nanovdb._layout).
TREADLE_FUNC constexpr layout_t layout_of(uint32 vsize, uint32 valign, uint32 ssize, bool index) {
    layout_t l{};
    l.root_background = align_up(28, valign);
    l.root_size = align_up(after_stats(28, 3, vsize, valign, ssize), 32);
    l.tile_value = align_up(20, valign);
    l.tile_size = align_up(l.tile_value + vsize, 32);
    l.stride = align_up(vsize > 8 ? vsize : 8, valign > 8 ? valign : 8);
    l.upper_table = align_up(index ? 24 + 8 + 8192 + 32 : after_stats(24 + 8 + 8192, 2, vsize, valign, ssize), 32);
    l.lower_table = align_up(index ? 24 + 8 + 1024 + 32 : after_stats(24 + 8 + 1024, 2, vsize, valign, ssize), 32);
    l.upper_size = l.upper_table + 32768 * l.stride;
    l.lower_size = l.lower_table + 4096 * l.stride;
    l.leaf_table = index ? 80 : align_up(after_stats(80, 2, vsize, valign, ssize), 32);
    l.leaf_size = index ? 96 : align_up(l.leaf_table + 512 * vsize, 32);
    return l;
}

typedef vec_t<3, float32> v3f;
typedef vec_t<3, float64> v3d;
typedef vec_t<4, float32> v4f;
typedef vec_t<4, float64> v4d;

// Per value type: its grid type code, layout, scalar type and number of components.
template <typename T> struct traits;
#define TREADLE_NVDB_TRAITS(T, S, N, CODE, SSIZE)                                                             \
    template <> struct traits<T> {                                                                            \
        typedef S scalar;                                                                                     \
        static constexpr uint32 code = CODE;                                                                  \
        static constexpr int n = N;                                                                           \
        TREADLE_FUNC static constexpr layout_t layout() { return layout_of(sizeof(T), sizeof(S), SSIZE, false); } \
        TREADLE_FUNC static S get(const T& v, int c) { return reinterpret_cast<const S*>(&v)[c]; }            \
        TREADLE_FUNC static S& ref(T& v, int c) { return reinterpret_cast<S*>(&v)[c]; }                       \
    };
TREADLE_NVDB_TRAITS(float32, float32, 1, T_FLOAT, 4)
TREADLE_NVDB_TRAITS(float64, float64, 1, T_DOUBLE, 8)
TREADLE_NVDB_TRAITS(int32, int32, 1, T_INT32, 4)
TREADLE_NVDB_TRAITS(int64, int64, 1, T_INT64, 8)
TREADLE_NVDB_TRAITS(uint32, uint32, 1, T_UINT32, 4)
TREADLE_NVDB_TRAITS(v3f, float32, 3, T_VEC3F, 4)
TREADLE_NVDB_TRAITS(v3d, float64, 3, T_VEC3D, 8)
TREADLE_NVDB_TRAITS(v4f, float32, 4, T_VEC4F, 4)
TREADLE_NVDB_TRAITS(v4d, float64, 4, T_VEC4D, 8)
#undef TREADLE_NVDB_TRAITS

TREADLE_FUNC constexpr layout_t index_layout() { return layout_of(8, 8, 8, true); }

// The gradient type of a value type: vec3 for scalars, an N x 3 Jacobian for N-vectors.
template <typename T, int N = traits<T>::n> struct grad_of { typedef vec_t<3, typename traits<T>::scalar> type; };
template <typename T> struct grad_of<T, 3> { typedef mat_t<3, 3, typename traits<T>::scalar> type; };
template <typename T> struct grad_of<T, 4> { typedef mat_t<4, 3, typename traits<T>::scalar> type; };
template <typename S> TREADLE_FUNC S& grad_at(vec_t<3, S>& g, int, int axis) { return g.c[axis]; }
template <typename S> TREADLE_FUNC S grad_at(const vec_t<3, S>& g, int, int axis) { return g.c[axis]; }
template <unsigned R, typename S> TREADLE_FUNC S& grad_at(mat_t<R, 3, S>& g, int comp, int axis) {
    return g.data[comp][axis];
}
template <unsigned R, typename S> TREADLE_FUNC S grad_at(const mat_t<R, 3, S>& g, int comp, int axis) {
    return g.data[comp][axis];
}

// The real type stencils are weighted in: float64 for float64 grids, float32 otherwise.
template <typename S> struct real_of { typedef float32 type; };
template <> struct real_of<float64> { typedef float64 type; };

// ------------------------------------------------------------------------------------------------ raw access
template <typename T> TREADLE_FUNC const T& at(const uint8* p, uint64 offset) {
    return *reinterpret_cast<const T*>(p + offset);
}
TREADLE_FUNC const uint8* grid_of(uint64 id) { return reinterpret_cast<const uint8*>(id); }
TREADLE_FUNC uint32 grid_type(const uint8* g) { return at<uint32>(g, OFF_TYPE); }
TREADLE_FUNC const uint8* tree_of(const uint8* g) { return g + GRID_SIZE; }
TREADLE_FUNC const uint8* root_of(const uint8* g) { return tree_of(g) + at<uint64>(tree_of(g), 24); }
TREADLE_FUNC bool mask_bit(const uint8* mask, uint32 n) { return (at<uint64>(mask, 8 * (n >> 6)) >> (n & 63)) & 1; }

TREADLE_FUNC uint32 popcount64(uint64 x) {
#if defined(__CUDA_ARCH__)
    return (uint32)__popcll(x);
#else
    return (uint32)__builtin_popcountll(x);
#endif
}

TREADLE_FUNC uint64 root_key(int32 i, int32 j, int32 k) {
    return (uint64)((uint32)k >> 12) | ((uint64)((uint32)j >> 12) << 21) | ((uint64)((uint32)i >> 12) << 42);
}
TREADLE_FUNC uint32 upper_offset(int32 i, int32 j, int32 k) {
    return (((uint32)i & 4095u) >> 7) << 10 | (((uint32)j & 4095u) >> 7) << 5 | (((uint32)k & 4095u) >> 7);
}
TREADLE_FUNC uint32 lower_offset(int32 i, int32 j, int32 k) {
    return (((uint32)i & 127u) >> 3) << 8 | (((uint32)j & 127u) >> 3) << 4 | (((uint32)k & 127u) >> 3);
}
TREADLE_FUNC uint32 leaf_offset(int32 i, int32 j, int32 k) {
    return ((uint32)i & 7u) << 6 | ((uint32)j & 7u) << 3 | ((uint32)k & 7u);
}

// Where the value of a voxel lives: in a leaf (level 0, entry n), a lower or upper node's table (1, 2), a root tile
// (3) or the root's background (4).
struct slot_t {
    const uint8* node;
    int32 level;
    uint32 n;
};

// A lookup cursor caching the last leaf, lower and upper node (one per sample: the 8 corners of a trilinear
// stencil almost always share a leaf).
struct accessor_t {
    const uint8* root;
    layout_t l;
    uint32 tiles;
    const uint8* leaf;
    const uint8* lower;
    const uint8* upper;
    int32 leaf_key[3], lower_key[3], upper_key[3];

    TREADLE_FUNC accessor_t(const uint8* g, const layout_t& lay)
        : root(root_of(g)), l(lay), tiles(at<uint32>(root_of(g), 24)), leaf(nullptr), lower(nullptr), upper(nullptr),
          leaf_key{0, 0, 0}, lower_key{0, 0, 0}, upper_key{0, 0, 0} {}

    TREADLE_FUNC static bool same(const int32* key, int32 i, int32 j, int32 k, int32 mask) {
        return key[0] == (i & mask) && key[1] == (j & mask) && key[2] == (k & mask);
    }
    TREADLE_FUNC static void set(int32* key, int32 i, int32 j, int32 k, int32 mask) {
        key[0] = i & mask;
        key[1] = j & mask;
        key[2] = k & mask;
    }

    TREADLE_FUNC slot_t find(int32 i, int32 j, int32 k) {
        if (leaf && same(leaf_key, i, j, k, ~7))
            return slot_t{leaf, 0, leaf_offset(i, j, k)};
        if (lower && same(lower_key, i, j, k, ~127))
            return in_lower(i, j, k);
        if (upper && same(upper_key, i, j, k, ~4095))
            return in_upper(i, j, k);
        const uint64 key = root_key(i, j, k);
        const uint8* tile = root + l.root_size;
        for (uint32 t = 0; t < tiles; ++t, tile += l.tile_size) {
            if (at<uint64>(tile, 0) != key)
                continue;
            const int64 child = at<int64>(tile, 8);
            if (child == 0)
                return slot_t{tile, 3, 0};
            upper = root + child;
            set(upper_key, i, j, k, ~4095);
            return in_upper(i, j, k);
        }
        return slot_t{root, 4, 0};
    }

    TREADLE_FUNC slot_t in_upper(int32 i, int32 j, int32 k) {
        const uint32 n = upper_offset(i, j, k);
        if (!mask_bit(upper + 32 + 4096, n))
            return slot_t{upper, 2, n};
        lower = upper + at<int64>(upper, l.upper_table + (uint64)n * l.stride);
        set(lower_key, i, j, k, ~127);
        return in_lower(i, j, k);
    }

    TREADLE_FUNC slot_t in_lower(int32 i, int32 j, int32 k) {
        const uint32 n = lower_offset(i, j, k);
        if (!mask_bit(lower + 32 + 512, n))
            return slot_t{lower, 1, n};
        leaf = lower + at<int64>(lower, l.lower_table + (uint64)n * l.stride);
        set(leaf_key, i, j, k, ~7);
        return slot_t{leaf, 0, leaf_offset(i, j, k)};
    }

    // The address of the (value or index) stored at a slot.
    TREADLE_FUNC const uint8* address(const slot_t& s, uint32 value_size) const {
        switch (s.level) {
        case 0: return s.node + l.leaf_table + (uint64)s.n * value_size;
        case 1: return s.node + l.lower_table + (uint64)s.n * l.stride;
        case 2: return s.node + l.upper_table + (uint64)s.n * l.stride;
        case 3: return s.node + l.tile_value;
        default: return s.node + l.root_background;
        }
    }
};

// The raw index (0: none) of a voxel of an index grid, or of any grid (value grids: leaf number * 512 + n + 1, so
// that every leaf voxel has one, as in the reference).
TREADLE_FUNC uint64 raw_index(accessor_t& acc, uint32 type, const uint8* first_leaf, int32 i, int32 j, int32 k) {
    const slot_t s = acc.find(i, j, k);
    if (type == T_INDEX || type == T_ONINDEX) {
        if (s.level != 0)
            return at<uint64>(acc.address(s, 8), 0);
        const uint64 offset = at<uint64>(s.node, 80);
        if (type == T_INDEX)
            return offset + s.n;
        const uint32 w = s.n >> 6, b = s.n & 63;
        const uint64 word = at<uint64>(s.node, 16 + 8 * w);
        if (!((word >> b) & 1))
            return 0;
        uint32 sum = popcount64(word & ((uint64(1) << b) - 1));
        if (w > 0)
            sum += (uint32)(at<uint64>(s.node, 88) >> (9 * (w - 1))) & 511u;
        return offset + sum;
    }
    if (s.level != 0)
        return 0;
    return (uint64)((s.node - first_leaf) / acc.l.leaf_size) * 512 + s.n + 1;
}

// Layout, first leaf and indexable voxel count of any supported grid (0 layout size for an unknown type).
struct grid_shape_t {
    layout_t l;
    const uint8* first_leaf;
    uint64 voxel_count;
    bool known;
};
TREADLE_FUNC grid_shape_t shape_of(const uint8* g) {
    grid_shape_t s{};
    const uint32 type = grid_type(g);
    s.known = true;
    switch (type) {
    case T_FLOAT: s.l = traits<float32>::layout(); break;
    case T_DOUBLE: s.l = traits<float64>::layout(); break;
    case T_INT32: s.l = traits<int32>::layout(); break;
    case T_INT64: s.l = traits<int64>::layout(); break;
    case T_UINT32: s.l = traits<uint32>::layout(); break;
    case T_VEC3F: s.l = traits<v3f>::layout(); break;
    case T_VEC3D: s.l = traits<v3d>::layout(); break;
    case T_VEC4F: s.l = traits<v4f>::layout(); break;
    case T_VEC4D: s.l = traits<v4d>::layout(); break;
    case T_INDEX:
    case T_ONINDEX: s.l = index_layout(); break;
    default: s.known = false;
    }
    const uint8* tree = tree_of(g);
    s.first_leaf = tree + at<uint64>(tree, 0);
    if (type == T_INDEX || type == T_ONINDEX) {
        const uint64 count = at<uint64>(g, OFF_DATA1);
        s.voxel_count = count ? count - 1 : 0;
    } else {
        s.voxel_count = (uint64)at<uint32>(tree, 32) * 512;
    }
    return s;
}

// ------------------------------------------------------------------------------------------------ stencils
// Floor and fraction of a coordinate, clamped so that the integer stays far from overflow (a NaN reads as a
// far-away voxel: the background).
template <typename S> TREADLE_FUNC int32 floor_frac(S x, S& frac) {
    const S lim = S(1.0e9);
    if (!(x > -lim && x < lim)) {
        frac = S(0);
        return (int32)1000000000;
    }
    const S f = TREADLE_LIBM(floor)(x);
    frac = x - f;
    return (int32)f;
}
template <typename S> TREADLE_FUNC int32 round_away(S x) {
    const S lim = S(1.0e9);
    if (!(x > -lim && x < lim))
        return (int32)1000000000;
    return (int32)TREADLE_LIBM(round)(x);
}

// The 8 values of the 2x2x2 stencil at (i, j, k) (corner c = dx * 4 + dy * 2 + dz).
template <typename T> TREADLE_FUNC void stencil(accessor_t& acc, int32 i, int32 j, int32 k, T v[8]) {
    if ((i & 7) != 7 && (j & 7) != 7 && (k & 7) != 7) {
        // the whole stencil lies in one 8^3 block: one leaf, or one tile value for all 8 corners
        const slot_t s = acc.find(i, j, k);
        const uint8* p = acc.address(s, sizeof(T));
        if (s.level == 0) {
            const T* q = reinterpret_cast<const T*>(p);
            v[0] = q[0], v[1] = q[1], v[2] = q[8], v[3] = q[9];
            v[4] = q[64], v[5] = q[65], v[6] = q[72], v[7] = q[73];
        } else {
            for (int c = 0; c < 8; ++c)
                v[c] = at<T>(p, 0);
        }
        return;
    }
    for (int c = 0; c < 8; ++c) {
        const slot_t s = acc.find(i + (c >> 2), j + ((c >> 1) & 1), k + (c & 1));
        v[c] = at<T>(acc.address(s, sizeof(T)), 0);
    }
}

// Trilinear weights of the 8 corners, their derivatives along each axis, and the mixed second derivatives
// d2w/(da db) for the axis pairs (x, y), (x, z), (y, z).
template <typename S> struct weights_t {
    S w[8], d[3][8], dd[3][8];
    TREADLE_FUNC weights_t(S fx, S fy, S fz) {
        const S f[3] = {fx, fy, fz};
        for (int c = 0; c < 8; ++c) {
            S a[3], da[3];
            for (int ax = 0; ax < 3; ++ax) {
                const int bit = (c >> (2 - ax)) & 1;
                a[ax] = bit ? f[ax] : S(1) - f[ax];
                da[ax] = bit ? S(1) : S(-1);
            }
            w[c] = a[0] * a[1] * a[2];
            d[0][c] = da[0] * a[1] * a[2];
            d[1][c] = a[0] * da[1] * a[2];
            d[2][c] = a[0] * a[1] * da[2];
            dd[0][c] = da[0] * da[1] * a[2];
            dd[1][c] = da[0] * a[1] * da[2];
            dd[2][c] = a[0] * da[1] * da[2];
        }
    }
};
// d2 f / (d axis a  d axis b) from the mixed-weight table (0 on the diagonal: trilinear is linear per axis).
template <typename S> TREADLE_FUNC S mixed(const weights_t<S>& W, const S* comp_values, int a, int b) {
    if (a == b)
        return S(0);
    const int pair = (a + b == 1) ? 0 : (a + b == 2 ? 1 : 2);
    S s = S(0);
    for (int c = 0; c < 8; ++c)
        s += W.dd[pair][c] * comp_values[c];
    return s;
}

template <typename T> struct is_float_value {
    static constexpr bool value = detail::is_float<typename traits<T>::scalar>::value;
};

// Per-component corner values of a stencil (as the scalar type).
template <typename T, typename R> TREADLE_FUNC void components(const T v[8], int comp, R out[8]) {
    for (int c = 0; c < 8; ++c)
        out[c] = R(traits<T>::get(v[c], comp));
}

}  // namespace nvdb

// ------------------------------------------------------------------------------------------------ sampling
// The sampled value at `uvw` (index space); `grad` (if not null) receives the gradient / Jacobian.
template <typename T, typename G>
TREADLE_FUNC T volume_sample_core(uint64 id, const vec_t<3, float32>& uvw, int32 mode, G* grad) {
    using namespace nvdb;
    typedef typename traits<T>::scalar S;
    const uint8* g = grid_of(id);
    T out{};
    if (grad)
        *grad = G{};
    if (grid_type(g) != traits<T>::code)
        return out;
    accessor_t acc(g, traits<T>::layout());
    if (mode != LINEAR || !is_float_value<T>::value) {
        const slot_t s = acc.find(round_away(uvw[0]), round_away(uvw[1]), round_away(uvw[2]));
        return at<T>(acc.address(s, sizeof(T)), 0);
    }
    typedef typename real_of<S>::type R;
    R fx, fy, fz;
    const int32 i = floor_frac<R>(R(uvw[0]), fx), j = floor_frac<R>(R(uvw[1]), fy), k = floor_frac<R>(R(uvw[2]), fz);
    T v[8];
    stencil(acc, i, j, k, v);
    const weights_t<R> W(fx, fy, fz);
    for (int comp = 0; comp < traits<T>::n; ++comp) {
        R cv[8];
        components(v, comp, cv);
        R s = R(0);
        for (int c = 0; c < 8; ++c)
            s += W.w[c] * cv[c];
        traits<T>::ref(out, comp) = (typename traits<T>::scalar)s;
        if (grad) {
            for (int ax = 0; ax < 3; ++ax) {
                R d = R(0);
                for (int c = 0; c < 8; ++c)
                    d += W.d[ax][c] * cv[c];
                grad_at(*grad, comp, ax) = (typename traits<T>::scalar)d;
            }
        }
    }
    return out;
}

template <typename T> TREADLE_FUNC T volume_sample(uint64 id, const vec_t<3, float32>& uvw, int32 mode) {
    return volume_sample_core<T, typename nvdb::grad_of<T>::type>(id, uvw, mode, nullptr);
}
template <typename T>
TREADLE_FUNC void adj_volume_sample(uint64 id, const vec_t<3, float32>& uvw, int32 mode, uint64&,
                                    vec_t<3, float32>& adj_uvw, int32&, const T& adj_ret) {
    typedef typename nvdb::grad_of<T>::type G;
    if (mode != nvdb::LINEAR || !nvdb::is_float_value<T>::value)
        return;
    G grad;
    volume_sample_core<T, G>(id, uvw, mode, &grad);
    for (int comp = 0; comp < nvdb::traits<T>::n; ++comp)
        for (int ax = 0; ax < 3; ++ax)
            adj_uvw[ax] += float32(nvdb::grad_at(grad, comp, ax) * nvdb::traits<T>::get(adj_ret, comp));
}

TREADLE_FUNC int32 volume_sample_i(uint64 id, const vec_t<3, float32>& uvw) {
    return volume_sample<int32>(id, uvw, nvdb::CLOSEST);
}

template <typename T, typename G>
TREADLE_FUNC T volume_sample_grad(uint64 id, const vec_t<3, float32>& uvw, int32 mode, G& grad) {
    return volume_sample_core<T, G>(id, uvw, mode, &grad);
}
// Gradients flow from the value (through the gradient) and from `grad` (through the mixed second derivatives of
// the trilinear interpolant); `grad` was written by the call, so its adjoint is consumed.
template <typename T, typename G>
TREADLE_FUNC void adj_volume_sample_grad(uint64 id, const vec_t<3, float32>& uvw, int32 mode, G&, uint64&,
                                         vec_t<3, float32>& adj_uvw, int32&, G& adj_grad, const T& adj_ret) {
    using namespace nvdb;
    typedef typename real_of<typename traits<T>::scalar>::type S;
    const G up = adj_grad;
    adj_grad = G{};
    const uint8* g = grid_of(id);
    if (mode != LINEAR || !is_float_value<T>::value || grid_type(g) != traits<T>::code)
        return;
    accessor_t acc(g, traits<T>::layout());
    S f[3];
    const int32 i = floor_frac<S>(S(uvw[0]), f[0]), j = floor_frac<S>(S(uvw[1]), f[1]);
    const int32 k = floor_frac<S>(S(uvw[2]), f[2]);
    T v[8];
    stencil(acc, i, j, k, v);
    const weights_t<S> W(f[0], f[1], f[2]);
    for (int comp = 0; comp < traits<T>::n; ++comp) {
        S cv[8];
        components(v, comp, cv);
        const S a = traits<T>::get(adj_ret, comp);
        for (int ax = 0; ax < 3; ++ax) {
            S d = S(0);
            for (int c = 0; c < 8; ++c)
                d += W.d[ax][c] * cv[c];
            S h = S(0);
            for (int b = 0; b < 3; ++b)
                h += mixed(W, cv, ax, b) * grad_at(up, comp, b);
            adj_uvw[ax] += float32(d * a + h);
        }
    }
}

// ------------------------------------------------------------------------------------------------ index grids
// Sampling of values held in an external array, one per indexable voxel (`background` where there is none).
template <typename T>
TREADLE_FUNC T index_value(const array_t<T>& data, uint64 raw, const T& background) {
    if (raw == 0 || (int64)(raw - 1) >= data.shape[0])
        return background;
    return *address(data, (int64)(raw - 1));
}

struct index_stencil_t {
    uint64 raw[8];
    int32 i, j, k;
    float32 f[3];
};

TREADLE_FUNC bool index_stencil(uint64 id, const vec_t<3, float32>& uvw, int32 mode, index_stencil_t& st) {
    using namespace nvdb;
    const uint8* g = grid_of(id);
    const grid_shape_t shape = shape_of(g);
    for (int c = 0; c < 8; ++c)
        st.raw[c] = 0;
    if (!shape.known)
        return false;
    accessor_t acc(g, shape.l);
    const uint32 type = grid_type(g);
    if (mode != LINEAR) {
        st.raw[0] = raw_index(acc, type, shape.first_leaf, round_away(uvw[0]), round_away(uvw[1]),
                              round_away(uvw[2]));
        return false;
    }
    st.i = floor_frac<float32>(uvw[0], st.f[0]);
    st.j = floor_frac<float32>(uvw[1], st.f[1]);
    st.k = floor_frac<float32>(uvw[2], st.f[2]);
    for (int c = 0; c < 8; ++c)
        st.raw[c] = raw_index(acc, type, shape.first_leaf, st.i + (c >> 2), st.j + ((c >> 1) & 1), st.k + (c & 1));
    return true;
}

template <typename T, typename G>
TREADLE_FUNC T volume_sample_index_core(uint64 id, const vec_t<3, float32>& uvw, int32 mode, const array_t<T>& data,
                                        const T& background, G* grad) {
    using namespace nvdb;
    typedef typename real_of<typename traits<T>::scalar>::type S;
    index_stencil_t st;
    if (grad)
        *grad = G{};
    const bool linear = index_stencil(id, uvw, mode, st) && is_float_value<T>::value;
    if (!linear)
        return index_value(data, st.raw[0], background);
    T v[8];
    for (int c = 0; c < 8; ++c)
        v[c] = index_value(data, st.raw[c], background);
    const weights_t<S> W(S(st.f[0]), S(st.f[1]), S(st.f[2]));
    T out{};
    for (int comp = 0; comp < traits<T>::n; ++comp) {
        S cv[8];
        components(v, comp, cv);
        S s = S(0);
        for (int c = 0; c < 8; ++c)
            s += W.w[c] * cv[c];
        traits<T>::ref(out, comp) = (typename traits<T>::scalar)s;
        if (grad)
            for (int ax = 0; ax < 3; ++ax) {
                S d = S(0);
                for (int c = 0; c < 8; ++c)
                    d += W.d[ax][c] * cv[c];
                grad_at(*grad, comp, ax) = (typename traits<T>::scalar)d;
            }
    }
    return out;
}

template <typename T>
TREADLE_FUNC T volume_sample_index(uint64 id, const vec_t<3, float32>& uvw, int32 mode, const array_t<T>& data,
                                   const T& background) {
    return volume_sample_index_core<T, typename nvdb::grad_of<T>::type>(id, uvw, mode, data, background, nullptr);
}

// Shared adjoint of the *_index forms: `adj_ret` flows to the corners' values (the data's gradient buffer, or the
// background) and to uvw; `adj_grad` (gradient forms) to the values through the weight derivatives and to uvw
// through the mixed second derivatives.
template <typename T, typename G>
TREADLE_FUNC void adj_index_core(uint64 id, const vec_t<3, float32>& uvw, int32 mode, const array_t<T>& data,
                                 const T& background, vec_t<3, float32>& adj_uvw, T& adj_background,
                                 const G* adj_grad, const T& adj_ret) {
    using namespace nvdb;
    typedef typename real_of<typename traits<T>::scalar>::type S;
    if (!is_float_value<T>::value)
        return;
    index_stencil_t st;
    if (!index_stencil(id, uvw, mode, st)) {  // CLOSEST: the value is one voxel's (or the background)
        const uint64 raw = st.raw[0];
        if (raw == 0 || (int64)(raw - 1) >= data.shape[0])
            adj_background += adj_ret;
        else if (T* gp = grad_address(data, (int64)(raw - 1)))
            atomic_add(gp, adj_ret);
        return;
    }
    T v[8];
    for (int c = 0; c < 8; ++c)
        v[c] = index_value(data, st.raw[c], background);
    const weights_t<S> W(S(st.f[0]), S(st.f[1]), S(st.f[2]));
    T adj_v[8];
    for (int c = 0; c < 8; ++c) {
        adj_v[c] = T{};
        for (int comp = 0; comp < traits<T>::n; ++comp) {
            S a = W.w[c] * traits<T>::get(adj_ret, comp);
            if (adj_grad)
                for (int ax = 0; ax < 3; ++ax)
                    a += W.d[ax][c] * grad_at(*adj_grad, comp, ax);
            traits<T>::ref(adj_v[c], comp) = (typename traits<T>::scalar)a;
        }
    }
    for (int comp = 0; comp < traits<T>::n; ++comp) {
        S cv[8];
        components(v, comp, cv);
        const S a = traits<T>::get(adj_ret, comp);
        for (int ax = 0; ax < 3; ++ax) {
            S d = S(0);
            for (int c = 0; c < 8; ++c)
                d += W.d[ax][c] * cv[c];
            S h = S(0);
            if (adj_grad)
                for (int b = 0; b < 3; ++b)
                    h += mixed(W, cv, ax, b) * grad_at(*adj_grad, comp, b);
            adj_uvw[ax] += float32(d * a + h);
        }
    }
    for (int c = 0; c < 8; ++c) {
        const uint64 raw = st.raw[c];
        if (raw == 0 || (int64)(raw - 1) >= data.shape[0])
            adj_background += adj_v[c];
        else if (T* gp = grad_address(data, (int64)(raw - 1)))
            atomic_add(gp, adj_v[c]);
    }
}

template <typename T>
TREADLE_FUNC void adj_volume_sample_index(uint64 id, const vec_t<3, float32>& uvw, int32 mode,
                                          const array_t<T>& data, const T& background, uint64&,
                                          vec_t<3, float32>& adj_uvw, int32&, array_t<T>&, T& adj_background,
                                          const T& adj_ret) {
    adj_index_core<T, typename nvdb::grad_of<T>::type>(id, uvw, mode, data, background, adj_uvw, adj_background,
                                                       nullptr, adj_ret);
}

template <typename T, typename G>
TREADLE_FUNC T volume_sample_grad_index(uint64 id, const vec_t<3, float32>& uvw, int32 mode, const array_t<T>& data,
                                        const T& background, G& grad) {
    return volume_sample_index_core<T, G>(id, uvw, mode, data, background, &grad);
}
template <typename T, typename G>
TREADLE_FUNC void adj_volume_sample_grad_index(uint64 id, const vec_t<3, float32>& uvw, int32 mode,
                                               const array_t<T>& data, const T& background, G&, uint64&,
                                               vec_t<3, float32>& adj_uvw, int32&, array_t<T>&, T& adj_background,
                                               G& adj_grad, const T& adj_ret) {
    const G upstream = adj_grad;
    adj_grad = G{};
    adj_index_core<T, G>(id, uvw, mode, data, background, adj_uvw, adj_background, &upstream, adj_ret);
}

// ------------------------------------------------------------------------------------------------ lookups, stores
template <typename T> TREADLE_FUNC T volume_lookup(uint64 id, int32 i, int32 j, int32 k) {
    using namespace nvdb;
    const uint8* g = grid_of(id);
    if (grid_type(g) != traits<T>::code)
        return T{};
    accessor_t acc(g, traits<T>::layout());
    return at<T>(acc.address(acc.find(i, j, k), sizeof(T)), 0);
}

// Writes only where the voxel has leaf storage (no allocation, no change of active state).
template <typename T> TREADLE_FUNC void volume_store(uint64 id, int32 i, int32 j, int32 k, const T& value) {
    using namespace nvdb;
    const uint8* g = grid_of(id);
    if (grid_type(g) != traits<T>::code)
        return;
    accessor_t acc(g, traits<T>::layout());
    const slot_t s = acc.find(i, j, k);
    if (s.level == 0)
        *reinterpret_cast<T*>(const_cast<uint8*>(acc.address(s, sizeof(T)))) = value;
}

TREADLE_FUNC int32 volume_lookup_index(uint64 id, int32 i, int32 j, int32 k) {
    using namespace nvdb;
    const uint8* g = grid_of(id);
    const grid_shape_t shape = shape_of(g);
    if (!shape.known)
        return -1;
    accessor_t acc(g, shape.l);
    const uint64 raw = raw_index(acc, grid_type(g), shape.first_leaf, i, j, k);
    return raw ? (int32)(raw - 1) : -1;
}

TREADLE_FUNC int32 volume_voxel_count(uint64 id) { return (int32)nvdb::shape_of(nvdb::grid_of(id)).voxel_count; }

// ------------------------------------------------------------------------------------------------ transforms
// world = M ijk + t (float32 matrices for float32 points, float64 ones for float64 points).
namespace nvdb {
template <typename S> struct map_t;
template <> struct map_t<float32> {
    TREADLE_FUNC static const float32* mat(const uint8* g) { return &at<float32>(g, OFF_MAP); }
    TREADLE_FUNC static const float32* inv(const uint8* g) { return &at<float32>(g, OFF_MAP + 36); }
    TREADLE_FUNC static const float32* vec(const uint8* g) { return &at<float32>(g, OFF_MAP + 72); }
};
template <> struct map_t<float64> {
    TREADLE_FUNC static const float64* mat(const uint8* g) { return &at<float64>(g, OFF_MAP + 88); }
    TREADLE_FUNC static const float64* inv(const uint8* g) { return &at<float64>(g, OFF_MAP + 160); }
    TREADLE_FUNC static const float64* vec(const uint8* g) { return &at<float64>(g, OFF_MAP + 232); }
};
template <typename S> TREADLE_FUNC vec_t<3, S> apply(const S* m, const vec_t<3, S>& x) {
    return vec_t<3, S>(m[0] * x[0] + m[1] * x[1] + m[2] * x[2], m[3] * x[0] + m[4] * x[1] + m[5] * x[2],
                       m[6] * x[0] + m[7] * x[1] + m[8] * x[2]);
}
template <typename S> TREADLE_FUNC vec_t<3, S> apply_t(const S* m, const vec_t<3, S>& x) {
    return vec_t<3, S>(m[0] * x[0] + m[3] * x[1] + m[6] * x[2], m[1] * x[0] + m[4] * x[1] + m[7] * x[2],
                       m[2] * x[0] + m[5] * x[1] + m[8] * x[2]);
}
}  // namespace nvdb

template <typename S> TREADLE_FUNC vec_t<3, S> volume_index_to_world(uint64 id, const vec_t<3, S>& uvw) {
    const uint8* g = nvdb::grid_of(id);
    const S* t = nvdb::map_t<S>::vec(g);
    return nvdb::apply(nvdb::map_t<S>::mat(g), uvw) + vec_t<3, S>(t[0], t[1], t[2]);
}
template <typename S>
TREADLE_FUNC void adj_volume_index_to_world(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_uvw,
                                            const vec_t<3, S>& adj_ret) {
    adj_uvw += nvdb::apply_t(nvdb::map_t<S>::mat(nvdb::grid_of(id)), adj_ret);
}
template <typename S> TREADLE_FUNC vec_t<3, S> volume_world_to_index(uint64 id, const vec_t<3, S>& xyz) {
    const uint8* g = nvdb::grid_of(id);
    const S* t = nvdb::map_t<S>::vec(g);
    return nvdb::apply(nvdb::map_t<S>::inv(g), xyz - vec_t<3, S>(t[0], t[1], t[2]));
}
template <typename S>
TREADLE_FUNC void adj_volume_world_to_index(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_xyz,
                                            const vec_t<3, S>& adj_ret) {
    adj_xyz += nvdb::apply_t(nvdb::map_t<S>::inv(nvdb::grid_of(id)), adj_ret);
}
template <typename S> TREADLE_FUNC vec_t<3, S> volume_index_to_world_dir(uint64 id, const vec_t<3, S>& uvw) {
    return nvdb::apply(nvdb::map_t<S>::mat(nvdb::grid_of(id)), uvw);
}
template <typename S>
TREADLE_FUNC void adj_volume_index_to_world_dir(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_uvw,
                                                const vec_t<3, S>& adj_ret) {
    adj_uvw += nvdb::apply_t(nvdb::map_t<S>::mat(nvdb::grid_of(id)), adj_ret);
}
template <typename S> TREADLE_FUNC vec_t<3, S> volume_world_to_index_dir(uint64 id, const vec_t<3, S>& xyz) {
    return nvdb::apply(nvdb::map_t<S>::inv(nvdb::grid_of(id)), xyz);
}
template <typename S>
TREADLE_FUNC void adj_volume_world_to_index_dir(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_xyz,
                                                const vec_t<3, S>& adj_ret) {
    adj_xyz += nvdb::apply_t(nvdb::map_t<S>::inv(nvdb::grid_of(id)), adj_ret);
}

}  // namespace treadle
