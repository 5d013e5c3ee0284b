// Tiles: fixed-shape blocks of values that a tiled kernel's block owns, and the whole-tile operations on them.
//
// A tile is a value: `tile_t<T, M, N>` holds M*N elements row-major (element (i, j) at data[i * N + j]). A 1-d tile
// of n elements is tile_t<T, 1, n>; tiles of 3 or 4 dimensions fold their leading extents into M (the full shape
// is a compile-time fact of the compiler, which passes the extents a function needs as template arguments).
// Storage kinds (register, shared) are the same struct here: on the CPU a block is one logical thread, its tiles
// live on its stack and every operation is a loop over `data` that the compiler can vectorise.
//
// Each forward function sits next to its adjoint, which accumulates into the adj_ references (adj_<f>(operands...,
// adj_operands&..., adj_ret)).
#pragma once
#include "array.h"
#include "atomic.h"
#include "random.h"

// g++ 12 at -O3 -march=native (AVX-512) mis-vectorises some reverse sweeps once tile functions are inlined into
// them: a tile window read back as if its rows were contiguous (tests/tiles/test_tile_grad.py; clang++, -O2,
// -fno-tree-slp-vectorize and -fno-strict-aliasing all give the right result). The tile functions are compiled
// without SLP vectorisation under g++, which also keeps them out of line in kernels built with other options;
// their loops are still vectorised.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#pragma GCC push_options
#pragma GCC optimize("no-tree-slp-vectorize")
#define TREADLE_TILE_GCC_OPTIONS 1
#endif

namespace treadle {

// The block's number of logical threads: one on the CPU (and in Treadle's CUDA code, which runs each block as one
// thread for now).
TREADLE_FUNC int32 block_dim() { return 1; }

template <typename T, int M, int N> struct tile_t {
    static constexpr int rows = M;
    static constexpr int cols = N;
    static constexpr int size = M * N;
    T data[M * N];

    TREADLE_FUNC tile_t() {
        for (int k = 0; k < M * N; ++k)
            data[k] = T{};
    }
    // Elements left uninitialized, for a result whose every element is written next (a tile_load of a window inside
    // its array, a product with beta == 0): zeroing a 64x64 tile first costs as much as copying it.
    struct uninit_t {};
    TREADLE_FUNC explicit tile_t(uninit_t) {}
    // Every element set to `fill` (adj_zero builds its -0.0 starting value this way).
    template <typename S> TREADLE_FUNC explicit tile_t(S fill) {
        for (int k = 0; k < M * N; ++k)
            data[k] = T(fill);
    }
    TREADLE_FUNC T& operator[](int k) { return data[k]; }
    TREADLE_FUNC const T& operator[](int k) const { return data[k]; }
    TREADLE_FUNC T& operator()(int i, int j) { return data[i * N + j]; }
    TREADLE_FUNC const T& operator()(int i, int j) const { return data[i * N + j]; }
};

namespace detail {
template <typename T, int M, int N> struct scalar_of<tile_t<T, M, N>> { typedef typename scalar_of<T>::type type; };
// Row-major offset of a multi-index in a tile of extents (D0, D1, D2, D3), missing leading extents being 1.
template <int D1, int D2, int D3> TREADLE_FUNC int tile_offset(int i0, int i1, int i2, int i3) {
    return ((i0 * D1 + i1) * D2 + i2) * D3 + i3;
}
}  // namespace detail

// add / sub of two @wp.struct values, field by field: the generated code defines tile_struct_add/sub for each
// struct next to it, found here by argument-dependent lookup (other types have no such function: no match).
template <typename T> TREADLE_FUNC auto add(const T& a, const T& b) -> decltype(tile_struct_add(a, b)) {
    return tile_struct_add(a, b);
}
template <typename T> TREADLE_FUNC auto sub(const T& a, const T& b) -> decltype(tile_struct_sub(a, b)) {
    return tile_struct_sub(a, b);
}

template <typename T, int M, int N> TREADLE_FUNC void adj_accum(tile_t<T, M, N>& a, const tile_t<T, M, N>& b) {
    for (int k = 0; k < M * N; ++k)
        a.data[k] = treadle::add(a.data[k], b.data[k]);
}

// ------------------------------------------------------------------------------------------------ construction
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, M, N> tile_zeros() { return tile_t<T, M, N>(); }
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, M, N> tile_ones() {
    return tile_t<T, M, N>(typename detail::scalar_of<T>::type(1));
}
template <typename T, int M, int N, typename S> TREADLE_FUNC tile_t<T, M, N> tile_full(S value) {
    tile_t<T, M, N> r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = T(value);
    return r;
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_tile_full(S, S& adj_value, const tile_t<T, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        adj_value = treadle::add(adj_value, cast<S>(adj_ret.data[k]));
}
// tile_from_thread: with one logical thread per block, the value of thread 0 everywhere (tile_full's adjoint).
template <typename T, int M, int N, typename S> TREADLE_FUNC tile_t<T, M, N> tile_from_thread(S value, int32) {
    return tile_full<T, M, N>(value);
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_tile_from_thread(S value, int32, S& adj_value, int32&, const tile_t<T, M, N>& adj_ret) {
    adj_tile_full<T, M, N>(value, adj_value, adj_ret);
}
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, M, N> tile_arange(float64 start, float64 step) {
    tile_t<T, M, N> r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = T(start + step * k);
    return r;
}
// tile(x): the tile of each thread's value; one thread per block, so a (1,) tile or the (n, 1) column of a vector.
template <typename T> TREADLE_FUNC tile_t<T, 1, 1> tile(T x) {
    tile_t<T, 1, 1> r;
    r.data[0] = x;
    return r;
}
template <typename T> TREADLE_FUNC void adj_tile(T, T& adj_x, const tile_t<T, 1, 1>& adj_ret) {
    adj_x = treadle::add(adj_x, adj_ret.data[0]);
}
template <unsigned L, typename T> TREADLE_FUNC tile_t<T, L, 1> tile_vec(const vec_t<L, T>& x) {
    tile_t<T, L, 1> r;
    for (int k = 0; k < L; ++k)
        r.data[k] = x[k];
    return r;
}
template <unsigned L, typename T>
TREADLE_FUNC void adj_tile_vec(const vec_t<L, T>&, vec_t<L, T>& adj_x, const tile_t<T, int(L), 1>& adj_ret) {
    for (int k = 0; k < L; ++k)
        adj_x[k] = treadle::add(adj_x[k], adj_ret.data[k]);
}
// untile(t): this thread's value (its column): the element of a (1,) tile, or the vector of an (n, 1) tile.
template <typename T> TREADLE_FUNC T untile(const tile_t<T, 1, 1>& t) { return t.data[0]; }
template <typename T> TREADLE_FUNC void adj_untile(const tile_t<T, 1, 1>&, tile_t<T, 1, 1>& adj_t, const T& adj_ret) {
    adj_t.data[0] = treadle::add(adj_t.data[0], adj_ret);
}
template <unsigned L, typename T> TREADLE_FUNC vec_t<L, T> untile_vec(const tile_t<T, L, 1>& t) {
    vec_t<L, T> r;
    for (int k = 0; k < L; ++k)
        r[k] = t.data[k];
    return r;
}
template <unsigned L, typename T>
TREADLE_FUNC void adj_untile_vec(const tile_t<T, L, 1>&, tile_t<T, L, 1>& adj_t, const vec_t<L, T>& adj_ret) {
    for (int k = 0; k < L; ++k)
        adj_t.data[k] = treadle::add(adj_t.data[k], adj_ret[k]);
}

// ------------------------------------------------------------------------------------------------ array <-> tile
namespace detail {
// The addressing of a tile-shaped window of an array: extents D0..D3 of the tile (leading ones are 1 for tiles of
// fewer dimensions), the array's shape and byte strides padded the same way, the window's element offsets.
struct tile_window {
    int64 shape[4];
    int64 stride[4];
    int64 origin[4];
};
template <int ND, typename A> TREADLE_FUNC tile_window window(const A& a, int64 o0, int64 o1, int64 o2, int64 o3) {
    tile_window w;
    const int64 o[4] = {o0, o1, o2, o3};
    for (int d = 0; d < 4; ++d) {
        const int src = d - (4 - ND);
        w.shape[d] = src >= 0 ? a.shape[src] : 1;
        w.stride[d] = src >= 0 ? a.strides[src] : 0;
        w.origin[d] = src >= 0 ? o[src] : 0;
    }
    return w;
}
// Calls f(tile element index k, byte offset off, count) for the part of every tile row inside the array: the row's
// elements k .. k + count - 1 lie at byte offsets off, off + stride[3], ... of the array.
template <int D0, int D1, int D2, int D3, typename F> TREADLE_FUNC void for_window_rows(const tile_window& w, F f) {
    // the rows' part inside the array, [lo, hi), is the same for every row
    const int lo = w.origin[3] < 0 ? (w.origin[3] <= -D3 ? D3 : int(-w.origin[3])) : 0;
    const int64 hi64 = w.shape[3] - w.origin[3];
    const int hi = hi64 < D3 ? int(hi64 < 0 ? 0 : hi64) : D3;
    if (lo >= hi)
        return;
    for (int i0 = 0; i0 < D0; ++i0) {
        const int64 a0 = w.origin[0] + i0;
        if (a0 < 0 || a0 >= w.shape[0])
            continue;
        for (int i1 = 0; i1 < D1; ++i1) {
            const int64 a1 = w.origin[1] + i1;
            if (a1 < 0 || a1 >= w.shape[1])
                continue;
            for (int i2 = 0; i2 < D2; ++i2) {
                const int64 a2 = w.origin[2] + i2;
                if (a2 < 0 || a2 >= w.shape[2])
                    continue;
                const int64 base = a0 * w.stride[0] + a1 * w.stride[1] + a2 * w.stride[2];
                f(tile_offset<D1, D2, D3>(i0, i1, i2, 0) + lo, base + (w.origin[3] + lo) * w.stride[3], hi - lo);
            }
        }
    }
}
// Calls f(tile element index, byte offset in the array) for every tile element inside the array.
template <int D0, int D1, int D2, int D3, typename F> TREADLE_FUNC void for_window(const tile_window& w, F f) {
    const int64 s3 = w.stride[3];
    for_window_rows<D0, D1, D2, D3>(w, [&](int k, int64 off, int n) {
        for (int t = 0; t < n; ++t)
            f(k + t, off + t * s3);
    });
}
// Whether the whole D0 x D1 x D2 x D3 window lies inside the array.
template <int D0, int D1, int D2, int D3> TREADLE_FUNC bool window_inside(const tile_window& w) {
    const int64 d[4] = {D0, D1, D2, D3};
    bool in = true;
    for (int k = 0; k < 4; ++k)
        in = in && w.origin[k] >= 0 && w.origin[k] + d[k] <= w.shape[k];
    return in;
}
// Calls f(tile element pointer, array element pointer, count) on each row part inside the array whose elements are
// contiguous in the array (its last stride is the element size: a dense last axis), otherwise f_strided(k, off) on
// each element. `p` is the array's data or grad pointer.
template <int D0, int D1, int D2, int D3, typename T, typename FR, typename FE>
TREADLE_FUNC void for_window_fast(const tile_window& w, T* p, FR f_rows, FE f_strided) {
    const int64 s3 = w.stride[3];
    if (s3 == int64(sizeof(T))) {
        for_window_rows<D0, D1, D2, D3>(w, [&](int k, int64 off, int n) {
            f_rows(k, reinterpret_cast<T*>(reinterpret_cast<char*>(p) + off), n);
        });
    } else {
        for_window_rows<D0, D1, D2, D3>(w, [&](int k, int64 off, int n) {
            for (int t = 0; t < n; ++t)
                f_strided(k + t, off + t * s3);
        });
    }
}
template <typename T> TREADLE_FUNC T& at_bytes(T* base, int64 bytes) {
    return *reinterpret_cast<T*>(reinterpret_cast<char*>(base) + bytes);
}
}  // namespace detail

// tile_load: the window of `a` at element offsets o0..o3 (as many as the array's dimensions); elements outside the
// array read as zero.
template <typename T, int ND, int D0, int D1, int D2, int D3>
TREADLE_FUNC tile_t<T, D0 * D1 * D2, D3> tile_load(const array_t<T>& a, int64 o0 = 0, int64 o1 = 0, int64 o2 = 0,
                                                    int64 o3 = 0) {
    typedef tile_t<T, D0 * D1 * D2, D3> tile_type;
    tile_type r{typename tile_type::uninit_t{}};
    const detail::tile_window w = detail::window<ND>(a, o0, o1, o2, o3);
    if (!detail::window_inside<D0, D1, D2, D3>(w)) {
        for (int k = 0; k < tile_type::size; ++k)
            r.data[k] = T{};
    }
    T* data = a.data;
    detail::for_window_fast<D0, D1, D2, D3>(
        w, data,
        [&](int k, const T* src, int n) {
            T* dst = r.data + k;
            for (int t = 0; t < n; ++t)
                dst[t] = src[t];
        },
        [&](int k, int64 off) { r.data[k] = detail::at_bytes(data, off); });
    return r;
}
// Adjoint: the tile's adjoint added into the array's gradient (atomically: blocks may load overlapping windows).
template <typename T, int ND, int D0, int D1, int D2, int D3, typename... I>
TREADLE_FUNC void adj_tile_load_impl(const array_t<T>& a, int64 o0, int64 o1, int64 o2, int64 o3,
                                     const tile_t<T, D0 * D1 * D2, D3>& adj_ret) {
    if (!a.grad)
        return;
    const detail::tile_window w = detail::window<ND>(a, o0, o1, o2, o3);
    T* g = a.grad;
    detail::for_window<D0, D1, D2, D3>(w, [&](int k, int64 off) { atomic_add(&detail::at_bytes(g, off), adj_ret.data[k]); });
}
template <typename T, int ND, int D0, int D1, int D2, int D3>
TREADLE_FUNC void adj_tile_load(const array_t<T>& a, array_t<T>&, const tile_t<T, D0 * D1 * D2, D3>& adj_ret) {
    adj_tile_load_impl<T, ND, D0, D1, D2, D3>(a, 0, 0, 0, 0, adj_ret);
}
template <typename T, int ND, int D0, int D1, int D2, int D3, typename I0>
TREADLE_FUNC void adj_tile_load(const array_t<T>& a, I0 o0, array_t<T>&, I0&, const tile_t<T, D0 * D1 * D2, D3>& adj_ret) {
    adj_tile_load_impl<T, ND, D0, D1, D2, D3>(a, o0, 0, 0, 0, adj_ret);
}
template <typename T, int ND, int D0, int D1, int D2, int D3, typename I0, typename I1>
TREADLE_FUNC void adj_tile_load(const array_t<T>& a, I0 o0, I1 o1, array_t<T>&, I0&, I1&,
                                const tile_t<T, D0 * D1 * D2, D3>& adj_ret) {
    adj_tile_load_impl<T, ND, D0, D1, D2, D3>(a, o0, o1, 0, 0, adj_ret);
}
template <typename T, int ND, int D0, int D1, int D2, int D3, typename I0, typename I1, typename I2>
TREADLE_FUNC void adj_tile_load(const array_t<T>& a, I0 o0, I1 o1, I2 o2, array_t<T>&, I0&, I1&, I2&,
                                const tile_t<T, D0 * D1 * D2, D3>& adj_ret) {
    adj_tile_load_impl<T, ND, D0, D1, D2, D3>(a, o0, o1, o2, 0, adj_ret);
}
template <typename T, int ND, int D0, int D1, int D2, int D3, typename I0, typename I1, typename I2, typename I3>
TREADLE_FUNC void adj_tile_load(const array_t<T>& a, I0 o0, I1 o1, I2 o2, I3 o3, array_t<T>&, I0&, I1&, I2&, I3&,
                                const tile_t<T, D0 * D1 * D2, D3>& adj_ret) {
    adj_tile_load_impl<T, ND, D0, D1, D2, D3>(a, o0, o1, o2, o3, adj_ret);
}

// tile_store: the tile written into the window of `a`; elements outside the array are skipped.
template <typename T, int ND, int D0, int D1, int D2, int D3>
TREADLE_FUNC void tile_store_impl(const array_t<T>& a, const tile_t<T, D0 * D1 * D2, D3>& t, int64 o0, int64 o1,
                                  int64 o2, int64 o3) {
    const detail::tile_window w = detail::window<ND>(a, o0, o1, o2, o3);
    T* data = a.data;
    detail::for_window_fast<D0, D1, D2, D3>(
        w, data,
        [&](int k, T* dst, int n) {
            const T* src = t.data + k;
            for (int e = 0; e < n; ++e)
                dst[e] = src[e];
        },
        [&](int k, int64 off) { detail::at_bytes(data, off) = t.data[k]; });
}
// Adjoint: the gradient of the stored elements read back into the tile's adjoint.
template <typename T, int ND, int D0, int D1, int D2, int D3>
TREADLE_FUNC void adj_tile_store_impl(const array_t<T>& a, tile_t<T, D0 * D1 * D2, D3>& adj_t, int64 o0, int64 o1,
                                      int64 o2, int64 o3) {
    if (!a.grad)
        return;
    const detail::tile_window w = detail::window<ND>(a, o0, o1, o2, o3);
    T* g = a.grad;
    detail::for_window_fast<D0, D1, D2, D3>(
        w, g,
        [&](int k, const T* src, int n) {
            T* dst = adj_t.data + k;
            for (int e = 0; e < n; ++e)
                dst[e] = treadle::add(dst[e], src[e]);
        },
        [&](int k, int64 off) { adj_t.data[k] = treadle::add(adj_t.data[k], detail::at_bytes(g, off)); });
}
#define TREADLE_TILE_T tile_t<T, D0 * D1 * D2, D3>
#define TREADLE_TILE_TP typename T, int ND, int D0, int D1, int D2, int D3
template <TREADLE_TILE_TP> TREADLE_FUNC void tile_store(const array_t<T>& a, const TREADLE_TILE_T& t) {
    tile_store_impl<T, ND, D0, D1, D2, D3>(a, t, 0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0> TREADLE_FUNC void tile_store(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0) {
    tile_store_impl<T, ND, D0, D1, D2, D3>(a, t, o0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1>
TREADLE_FUNC void tile_store(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0, I1 o1) {
    tile_store_impl<T, ND, D0, D1, D2, D3>(a, t, o0, o1, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2>
TREADLE_FUNC void tile_store(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0, I1 o1, I2 o2) {
    tile_store_impl<T, ND, D0, D1, D2, D3>(a, t, o0, o1, o2, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2, typename I3>
TREADLE_FUNC void tile_store(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0, I1 o1, I2 o2, I3 o3) {
    tile_store_impl<T, ND, D0, D1, D2, D3>(a, t, o0, o1, o2, o3);
}
template <TREADLE_TILE_TP>
TREADLE_FUNC void adj_tile_store(const array_t<T>& a, const TREADLE_TILE_T&, array_t<T>&, TREADLE_TILE_T& adj_t) {
    adj_tile_store_impl<T, ND, D0, D1, D2, D3>(a, adj_t, 0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0>
TREADLE_FUNC void adj_tile_store(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, array_t<T>&, TREADLE_TILE_T& adj_t,
                                 I0&) {
    adj_tile_store_impl<T, ND, D0, D1, D2, D3>(a, adj_t, o0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1>
TREADLE_FUNC void adj_tile_store(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, I1 o1, array_t<T>&,
                                 TREADLE_TILE_T& adj_t, I0&, I1&) {
    adj_tile_store_impl<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2>
TREADLE_FUNC void adj_tile_store(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, I1 o1, I2 o2, array_t<T>&,
                                 TREADLE_TILE_T& adj_t, I0&, I1&, I2&) {
    adj_tile_store_impl<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, o2, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2, typename I3>
TREADLE_FUNC void adj_tile_store(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, I1 o1, I2 o2, I3 o3, array_t<T>&,
                                 TREADLE_TILE_T& adj_t, I0&, I1&, I2&, I3&) {
    adj_tile_store_impl<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, o2, o3);
}

// tile_atomic_add: the tile added into the window of `a` element by element; returns the old values (zero outside
// the array). The gradient of every added element reaches the tile's adjoint.
template <TREADLE_TILE_TP>
TREADLE_FUNC TREADLE_TILE_T tile_atomic_add_impl(const array_t<T>& a, const TREADLE_TILE_T& t, int64 o0, int64 o1,
                                                 int64 o2, int64 o3) {
    TREADLE_TILE_T old;
    const detail::tile_window w = detail::window<ND>(a, o0, o1, o2, o3);
    T* data = a.data;
    detail::for_window<D0, D1, D2, D3>(w, [&](int k, int64 off) { old.data[k] = atomic_add(&detail::at_bytes(data, off), t.data[k]); });
    return old;
}
template <TREADLE_TILE_TP> TREADLE_FUNC TREADLE_TILE_T tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T& t) {
    return tile_atomic_add_impl<T, ND, D0, D1, D2, D3>(a, t, 0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0>
TREADLE_FUNC TREADLE_TILE_T tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0) {
    return tile_atomic_add_impl<T, ND, D0, D1, D2, D3>(a, t, o0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1>
TREADLE_FUNC TREADLE_TILE_T tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0, I1 o1) {
    return tile_atomic_add_impl<T, ND, D0, D1, D2, D3>(a, t, o0, o1, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2>
TREADLE_FUNC TREADLE_TILE_T tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0, I1 o1, I2 o2) {
    return tile_atomic_add_impl<T, ND, D0, D1, D2, D3>(a, t, o0, o1, o2, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2, typename I3>
TREADLE_FUNC TREADLE_TILE_T tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T& t, I0 o0, I1 o1, I2 o2, I3 o3) {
    return tile_atomic_add_impl<T, ND, D0, D1, D2, D3>(a, t, o0, o1, o2, o3);
}
namespace detail {
template <TREADLE_TILE_TP>
TREADLE_FUNC void adj_tile_atomic_add_at(const array_t<T>& a, TREADLE_TILE_T& adj_t, int64 o0, int64 o1, int64 o2, int64 o3) {
    adj_tile_store_impl<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, o2, o3);
}
}  // namespace detail
template <TREADLE_TILE_TP>
TREADLE_FUNC void adj_tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T&, array_t<T>&, TREADLE_TILE_T& adj_t,
                                      const TREADLE_TILE_T&) {
    detail::adj_tile_atomic_add_at<T, ND, D0, D1, D2, D3>(a, adj_t, 0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0>
TREADLE_FUNC void adj_tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, array_t<T>&,
                                      TREADLE_TILE_T& adj_t, I0&, const TREADLE_TILE_T&) {
    detail::adj_tile_atomic_add_at<T, ND, D0, D1, D2, D3>(a, adj_t, o0, 0, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1>
TREADLE_FUNC void adj_tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, I1 o1, array_t<T>&,
                                      TREADLE_TILE_T& adj_t, I0&, I1&, const TREADLE_TILE_T&) {
    detail::adj_tile_atomic_add_at<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, 0, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2>
TREADLE_FUNC void adj_tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, I1 o1, I2 o2, array_t<T>&,
                                      TREADLE_TILE_T& adj_t, I0&, I1&, I2&, const TREADLE_TILE_T&) {
    detail::adj_tile_atomic_add_at<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, o2, 0);
}
template <TREADLE_TILE_TP, typename I0, typename I1, typename I2, typename I3>
TREADLE_FUNC void adj_tile_atomic_add(const array_t<T>& a, const TREADLE_TILE_T&, I0 o0, I1 o1, I2 o2, I3 o3,
                                      array_t<T>&, TREADLE_TILE_T& adj_t, I0&, I1&, I2&, I3&, const TREADLE_TILE_T&) {
    detail::adj_tile_atomic_add_at<T, ND, D0, D1, D2, D3>(a, adj_t, o0, o1, o2, o3);
}
// tile_load_indexed / tile_store_indexed / tile_atomic_add_indexed: along padded axis AX, element c reads (writes)
// the array at o[AX] + idx[c[AX]], elsewhere at o[d] + c[d]; elements outside the array read zero (are skipped).
namespace detail {
template <int AX, int D0, int D1, int D2, int D3, int NI, typename F>
TREADLE_FUNC void for_indexed(const tile_window& w, const tile_t<int32, 1, NI>& idx, F f) {
    int k = 0;
    for (int i0 = 0; i0 < D0; ++i0)
        for (int i1 = 0; i1 < D1; ++i1)
            for (int i2 = 0; i2 < D2; ++i2)
                for (int i3 = 0; i3 < D3; ++i3, ++k) {
                    const int c[4] = {i0, i1, i2, i3};
                    int64 off = 0;
                    bool in = true;
                    for (int d = 0; d < 4; ++d) {
                        const int64 x = w.origin[d] + (d == AX ? int64(idx.data[c[d]]) : int64(c[d]));
                        in = in && x >= 0 && x < w.shape[d];
                        off += x * w.stride[d];
                    }
                    if (in)
                        f(k, off);
                }
}
}  // namespace detail
#define TREADLE_IDX_TP typename T, int ND, int AX, int D0, int D1, int D2, int D3, int NI
template <TREADLE_IDX_TP>
TREADLE_FUNC TREADLE_TILE_T tile_load_indexed(const array_t<T>& a, const tile_t<int32, 1, NI>& idx, int64 o0, int64 o1,
                                              int64 o2, int64 o3) {
    TREADLE_TILE_T r;
    T* data = a.data;
    detail::for_indexed<AX, D0, D1, D2, D3>(detail::window<ND>(a, o0, o1, o2, o3), idx,
                                            [&](int k, int64 off) { r.data[k] = detail::at_bytes(data, off); });
    return r;
}
template <TREADLE_IDX_TP, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_load_indexed(const array_t<T>& a, const tile_t<int32, 1, NI>& idx, int64 o0, int64 o1,
                                        int64 o2, int64 o3, array_t<T>&, tile_t<int32, 1, NI>&, A0&, A1&, A2&, A3&,
                                        const TREADLE_TILE_T& adj_ret) {
    if (!a.grad)
        return;
    T* g = a.grad;
    detail::for_indexed<AX, D0, D1, D2, D3>(detail::window<ND>(a, o0, o1, o2, o3), idx, [&](int k, int64 off) {
        atomic_add(&detail::at_bytes(g, off), adj_ret.data[k]);
    });
}
template <TREADLE_IDX_TP>
TREADLE_FUNC void tile_store_indexed(const array_t<T>& a, const tile_t<int32, 1, NI>& idx, const TREADLE_TILE_T& t,
                                     int64 o0, int64 o1, int64 o2, int64 o3) {
    T* data = a.data;
    detail::for_indexed<AX, D0, D1, D2, D3>(detail::window<ND>(a, o0, o1, o2, o3), idx,
                                            [&](int k, int64 off) { detail::at_bytes(data, off) = t.data[k]; });
}
template <TREADLE_IDX_TP, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_store_indexed(const array_t<T>& a, const tile_t<int32, 1, NI>& idx, const TREADLE_TILE_T&,
                                         int64 o0, int64 o1, int64 o2, int64 o3, array_t<T>&, tile_t<int32, 1, NI>&,
                                         TREADLE_TILE_T& adj_t, A0&, A1&, A2&, A3&) {
    if (!a.grad)
        return;
    T* g = a.grad;
    detail::for_indexed<AX, D0, D1, D2, D3>(detail::window<ND>(a, o0, o1, o2, o3), idx, [&](int k, int64 off) {
        adj_t.data[k] = treadle::add(adj_t.data[k], detail::at_bytes(g, off));
    });
}
template <TREADLE_IDX_TP>
TREADLE_FUNC TREADLE_TILE_T tile_atomic_add_indexed(const array_t<T>& a, const tile_t<int32, 1, NI>& idx,
                                                    const TREADLE_TILE_T& t, int64 o0, int64 o1, int64 o2, int64 o3) {
    TREADLE_TILE_T old;
    T* data = a.data;
    detail::for_indexed<AX, D0, D1, D2, D3>(detail::window<ND>(a, o0, o1, o2, o3), idx, [&](int k, int64 off) {
        old.data[k] = atomic_add(&detail::at_bytes(data, off), t.data[k]);
    });
    return old;
}
template <TREADLE_IDX_TP, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_atomic_add_indexed(const array_t<T>& a, const tile_t<int32, 1, NI>& idx,
                                              const TREADLE_TILE_T& t, int64 o0, int64 o1, int64 o2, int64 o3,
                                              array_t<T>& adj_a, tile_t<int32, 1, NI>& adj_idx, TREADLE_TILE_T& adj_t,
                                              A0& a0, A1& a1, A2& a2, A3& a3, const TREADLE_TILE_T&) {
    adj_tile_store_indexed<T, ND, AX, D0, D1, D2, D3, NI>(a, idx, t, o0, o1, o2, o3, adj_a, adj_idx, adj_t, a0, a1,
                                                          a2, a3);
}
#undef TREADLE_IDX_TP
#undef TREADLE_TILE_T
#undef TREADLE_TILE_TP

}  // namespace treadle

#include "tile_ops.h"

#if defined(TREADLE_TILE_GCC_OPTIONS)
#pragma GCC pop_options
#undef TREADLE_TILE_GCC_OPTIONS
#endif

// ---- linear algebra and FFT (tile_linalg.h, tile_fft.h) ----
#include "tile_linalg.h"
#include "tile_fft.h"
#include "tile_stack.h"
#include "tile_scatter.h"
#include "tile_queries.h"
