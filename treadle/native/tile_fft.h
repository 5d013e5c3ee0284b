// tile_fft and tile_ifft over tile_t (tile.h includes this header after defining tile_t): in-place transforms along
// the last dimension of a tile of vec2 elements (component 0 the real part, 1 the imaginary part), every leading
// row an independent batch. The transforms themselves are in tile_fft_kernels.h.
#pragma once
#include "tile_fft_kernels.h"

namespace treadle {
namespace tile_fft_impl {

template <bool INV, typename S, int R, int N>
TREADLE_FUNC tile_t<vec_t<2, S>, R, N> transformed(const tile_t<vec_t<2, S>, R, N>& x) {
    static_assert(sizeof(vec_t<2, S>) == 2 * sizeof(S), "vec2 must be two packed scalars");
    tile_t<vec_t<2, S>, R, N> r = x;
    tile_fft_rows<S, R, N, INV>(&r.data[0].c[0], N);
    return r;
}

// The adjoint of y = F x is adj_x (+)= F^H adj_y: the opposite unnormalized transform of the incoming gradient. The
// in-place builtin's old and new values may share one adjoint variable; then it is replaced instead of added to.
template <bool INV, typename S, int R, int N>
TREADLE_FUNC void adj_transformed(tile_t<vec_t<2, S>, R, N>& adj_x, const tile_t<vec_t<2, S>, R, N>& adj_ret) {
    const tile_t<vec_t<2, S>, R, N> g = transformed<!INV>(adj_ret);
    const bool aliased = &adj_x == &adj_ret;
    for (int k = 0; k < R * N; ++k)
        for (int c = 0; c < 2; ++c)
            adj_x.data[k].c[c] = aliased ? g.data[k].c[c] : adj_x.data[k].c[c] + g.data[k].c[c];
}

}  // namespace tile_fft_impl

// The new value of the tile: its forward FFT along the last dimension (unnormalized, numpy.fft.fft's convention).
template <typename S, int R, int N>
TREADLE_FUNC tile_t<vec_t<2, S>, R, N> tile_fft(const tile_t<vec_t<2, S>, R, N>& x) {
    return tile_fft_impl::transformed<false>(x);
}
template <typename S, int R, int N>
TREADLE_FUNC void adj_tile_fft(const tile_t<vec_t<2, S>, R, N>&, tile_t<vec_t<2, S>, R, N>& adj_x,
                               const tile_t<vec_t<2, S>, R, N>& adj_ret) {
    tile_fft_impl::adj_transformed<false>(adj_x, adj_ret);
}

// The new value of the tile: its inverse FFT along the last dimension, not divided by N.
template <typename S, int R, int N>
TREADLE_FUNC tile_t<vec_t<2, S>, R, N> tile_ifft(const tile_t<vec_t<2, S>, R, N>& x) {
    return tile_fft_impl::transformed<true>(x);
}
template <typename S, int R, int N>
TREADLE_FUNC void adj_tile_ifft(const tile_t<vec_t<2, S>, R, N>&, tile_t<vec_t<2, S>, R, N>& adj_x,
                                const tile_t<vec_t<2, S>, R, N>& adj_ret) {
    tile_fft_impl::adj_transformed<true>(adj_x, adj_ret);
}

}  // namespace treadle
