// tile_scatter_add / tile_scatter_masked: a per-thread value added into (written to) one element of a tile.
//
// A block is one logical thread on the CPU, so each call touches at most one element: the one at the multi-index
// (i0, i1, i2, i3) (leading indices 0 for tiles of fewer dimensions) when has_value is true. An index outside the
// tile touches nothing. The functions return the tile's new value (the compiler stores it back into the variable).
#pragma once

namespace treadle {
namespace detail {
template <int D0, int D1, int D2, int D3>
TREADLE_FUNC int scatter_offset(int64 i0, int64 i1, int64 i2, int64 i3) {
    if (i0 < 0 || i0 >= D0 || i1 < 0 || i1 >= D1 || i2 < 0 || i2 >= D2 || i3 < 0 || i3 >= D3)
        return -1;
    return tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3));
}
}  // namespace detail

template <int D0, int D1, int D2, int D3, bool ATOMIC, typename T, int M, int N, typename V>
TREADLE_FUNC tile_t<T, M, N> tile_scatter_add(const tile_t<T, M, N>& a, int64 i0, int64 i1, int64 i2, int64 i3,
                                              const V& value, bool has_value) {
    tile_t<T, M, N> r = a;
    const int k = has_value ? detail::scatter_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    if (k >= 0)
        r.data[k] = treadle::add(r.data[k], T(value));
    return r;
}
// The tile's adjoint passes through; the value's adjoint is the adjoint of the element it was added to.
template <int D0, int D1, int D2, int D3, bool ATOMIC, typename T, int M, int N, typename V, typename A0, typename A1,
          typename A2, typename A3, typename B>
TREADLE_FUNC void adj_tile_scatter_add(const tile_t<T, M, N>&, int64 i0, int64 i1, int64 i2, int64 i3, const V&,
                                       bool has_value, tile_t<T, M, N>& adj_a, A0&, A1&, A2&, A3&, V& adj_value, B&,
                                       const tile_t<T, M, N>& adj_ret) {
    adj_accum(adj_a, adj_ret);
    const int k = has_value ? detail::scatter_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    if (k >= 0)
        adj_value = treadle::add(adj_value, V(adj_ret.data[k]));
}

template <int D0, int D1, int D2, int D3, typename T, int M, int N, typename V>
TREADLE_FUNC tile_t<T, M, N> tile_scatter_masked(const tile_t<T, M, N>& a, int64 i0, int64 i1, int64 i2, int64 i3,
                                                 const V& value, bool has_value) {
    tile_t<T, M, N> r = a;
    const int k = has_value ? detail::scatter_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    if (k >= 0)
        r.data[k] = T(value);
    return r;
}
// The written element's adjoint goes to the value (the old element was overwritten: it gets none).
template <int D0, int D1, int D2, int D3, typename T, int M, int N, typename V, typename A0, typename A1, typename A2,
          typename A3, typename B>
TREADLE_FUNC void adj_tile_scatter_masked(const tile_t<T, M, N>&, int64 i0, int64 i1, int64 i2, int64 i3, const V&,
                                          bool has_value, tile_t<T, M, N>& adj_a, A0&, A1&, A2&, A3&, V& adj_value,
                                          B&, const tile_t<T, M, N>& adj_ret) {
    const int k = has_value ? detail::scatter_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    for (int e = 0; e < M * N; ++e)
        if (e != k)
            adj_a.data[e] = treadle::add(adj_a.data[e], adj_ret.data[e]);
    if (k >= 0)
        adj_value = treadle::add(adj_value, V(adj_ret.data[k]));
}

}  // namespace treadle
