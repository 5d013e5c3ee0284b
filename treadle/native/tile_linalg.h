// The tile linear-algebra builtins over tile_t (tile.h includes this header after defining tile_t): tile_matmul in
// both forms, tile_cholesky, the triangular and Cholesky solves, and their in-place variants, each forward function
// next to its adjoint. The arithmetic lives in tile_linalg_gemm.h and tile_linalg_solve.h over raw buffers.
//
// Adjoints recompute what they need from the forward operands (a factor, a solution) rather than keeping it, as
// every adjoint in the library does. In-place builtins return the tile's new value; when the adjoint of the old value
// and of the new one are the same variable (`&adj_out == &adj_ret`), the gradient is moved rather than accumulated.
//
// A right-hand side `y` of a solve with an (M, M) matrix is an (M, NRHS) tile or a 1-D tile of M elements
// (tile_t<T, 1, M>); both are M rows of NRHS contiguous values in memory.
#pragma once
#include "tile_linalg_gemm.h"
#include "tile_linalg_solve.h"

namespace treadle {
namespace tile_la {

// NRHS of a right-hand-side tile of YR x YC elements against an (M, M) matrix.
template <int M, int YR, int YC> struct rhs {
    static_assert(YR == M || (YR == 1 && YC == M), "the right-hand side must have shape (M,) or (M, NRHS)");
    static constexpr int nrhs = YR == M ? YC : 1;
};

// adj_dst (+)= scale * g, where adj_dst may be the very tile g was copied from (an in-place builtin's adjoint).
template <typename T, int M, int N, typename S>
TREADLE_FUNC void move_or_add(tile_t<T, M, N>& adj_dst, const void* adj_ret, const tile_t<T, M, N>& g, S scale) {
    const bool aliased = (const void*)&adj_dst == adj_ret;
    for (int k = 0; k < M * N; ++k) {
        const S v = scale * to<S>(g.data[k]);
        adj_dst.data[k] = aliased ? T(v) : T(to<S>(adj_dst.data[k]) + v);
    }
}

}  // namespace tile_la

// ------------------------------------------------------------------------------------------------ tile_matmul
// c = alpha * a @ b in a's dtype (the form without `out`; beta is unused).
template <typename TA, typename TB, int M, int K, int N, typename S1, typename S2>
TREADLE_FUNC tile_t<TA, M, N> tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, S1 alpha, S2) {
    typedef typename tile_la::compute<TA>::type S;
    tile_t<TA, M, N> r{typename tile_t<TA, M, N>::uninit_t{}};  // beta == 0: gemm writes every element, reads none
    tile_la::gemm<TA, TB, TA, M, N, K>(a.data, K, b.data, N, r.data, N, S(alpha), S(0));
    return r;
}
template <typename TA, typename TB, int M, int K, int N, typename S1, typename S2>
TREADLE_FUNC void adj_tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, S1 alpha, S2,
                                  tile_t<TA, M, K>& adj_a, tile_t<TB, K, N>& adj_b, S1&, S2&,
                                  const tile_t<TA, M, N>& adj_ret) {
    typedef typename tile_la::compute<TA>::type S;
    tile_la::adj_gemm<TA, TB, TA, M, N, K>(a.data, K, b.data, N, adj_a.data, K, adj_b.data, N, adj_ret.data, N,
                                           S(alpha));
}
template <typename TA, typename TB, int M, int K, int N>
TREADLE_FUNC tile_t<TA, M, N> tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b) {
    return tile_matmul(a, b, 1.0f, 0.0f);
}
template <typename TA, typename TB, int M, int K, int N>
TREADLE_FUNC void adj_tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, tile_t<TA, M, K>& adj_a,
                                  tile_t<TB, K, N>& adj_b, const tile_t<TA, M, N>& adj_ret) {
    float32 da = 0.0f, db = 0.0f;
    adj_tile_matmul(a, b, 1.0f, 0.0f, adj_a, adj_b, da, db, adj_ret);
}

// The accumulate form: the new value of `out`, alpha * a @ b + beta * out, computed in out's dtype (out is not
// read when beta == 0).
template <typename TA, typename TB, typename TC, int M, int K, int N, typename S1, typename S2>
TREADLE_FUNC tile_t<TC, M, N> tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b,
                                          const tile_t<TC, M, N>& out, S1 alpha, S2 beta) {
    typedef typename tile_la::compute<TC>::type S;
    tile_t<TC, M, N> r = out;
    tile_la::gemm<TA, TB, TC, M, N, K>(a.data, K, b.data, N, r.data, N, S(alpha), S(beta));
    return r;
}
struct bfloat16;  // defined with the kernels' support code; only compared against here
// Gradients reach a, b and the old out (scaled by beta; none when beta == 0); alpha and beta get none.
template <typename TA, typename TB, typename TC, int M, int K, int N, typename S1, typename S2>
TREADLE_FUNC void adj_tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, const tile_t<TC, M, N>&,
                                  S1 alpha, S2 beta, tile_t<TA, M, K>& adj_a, tile_t<TB, K, N>& adj_b,
                                  tile_t<TC, M, N>& adj_out, S1&, S2&, const tile_t<TC, M, N>& adj_ret) {
    typedef typename tile_la::compute<TC>::type S;
    const tile_t<TC, M, N> g = adj_ret;
    // bfloat16 operands carry no gradients (as bfloat16 arrays do not): only out's part flows then
    if constexpr (!tile_la::same<TA, bfloat16>::value && !tile_la::same<TB, bfloat16>::value)
        tile_la::adj_gemm<TA, TB, TC, M, N, K>(a.data, K, b.data, N, adj_a.data, K, adj_b.data, N, g.data, N,
                                               S(alpha));
    tile_la::move_or_add(adj_out, &adj_ret, g, S(beta));
}

// ------------------------------------------------------------------------------------------------ Cholesky
// UPPER (0 or 1, the compile-time fill mode) selects L with L L^T = A or U with U^T U = A.
template <int UPPER, typename T, int N> TREADLE_FUNC tile_t<T, N, N> tile_cholesky(const tile_t<T, N, N>& A) {
    tile_t<T, N, N> r;
    tile_la::cholesky<T, N, UPPER != 0>(A.data, N, r.data, N);
    return r;
}
template <int UPPER, typename T, int N>
TREADLE_FUNC void adj_tile_cholesky(const tile_t<T, N, N>& A, tile_t<T, N, N>& adj_A,
                                    const tile_t<T, N, N>& adj_ret) {
    const tile_t<T, N, N> F = tile_cholesky<UPPER>(A);
    tile_la::adj_cholesky<T, N, UPPER != 0>(F.data, N, adj_ret.data, N, adj_A.data, N);
}
// In place: the new value of A is its factor (not differentiable).
template <int UPPER, typename T, int N>
TREADLE_FUNC tile_t<T, N, N> tile_cholesky_inplace(const tile_t<T, N, N>& A) {
    return tile_cholesky<UPPER>(A);
}

// x = A^-1 y from A's factor F (L for the lower fill mode, U for the upper one).
template <int UPPER, typename T, int M, int YR, int YC>
TREADLE_FUNC tile_t<T, YR, YC> tile_cholesky_solve(const tile_t<T, M, M>& F, const tile_t<T, YR, YC>& y) {
    constexpr int R = tile_la::rhs<M, YR, YC>::nrhs;
    tile_t<T, YR, YC> x;
    tile_la::cholesky_solve<T, M, R, UPPER != 0>(F.data, M, y.data, R, x.data, R);
    return x;
}
template <int UPPER, typename T, int M, int YR, int YC>
TREADLE_FUNC void adj_tile_cholesky_solve(const tile_t<T, M, M>& F, const tile_t<T, YR, YC>& y,
                                          tile_t<T, M, M>& adj_F, tile_t<T, YR, YC>& adj_y,
                                          const tile_t<T, YR, YC>& adj_ret) {
    constexpr int R = tile_la::rhs<M, YR, YC>::nrhs;
    const tile_t<T, YR, YC> x = tile_cholesky_solve<UPPER>(F, y);
    tile_la::adj_cholesky_solve<T, M, R, UPPER != 0>(F.data, M, x.data, R, adj_ret.data, R, adj_F.data, M,
                                                     adj_y.data, R);
}
template <int UPPER, typename T, int M, int YR, int YC>
TREADLE_FUNC tile_t<T, YR, YC> tile_cholesky_solve_inplace(const tile_t<T, M, M>& F, const tile_t<T, YR, YC>& y) {
    return tile_cholesky_solve<UPPER>(F, y);
}

// ------------------------------------------------------------------------------------------------ triangular solves
template <typename T, int M, int YR, int YC>
TREADLE_FUNC tile_t<T, YR, YC> tile_lower_solve(const tile_t<T, M, M>& L, const tile_t<T, YR, YC>& y) {
    constexpr int R = tile_la::rhs<M, YR, YC>::nrhs;
    tile_t<T, YR, YC> z;
    tile_la::tri_solve<T, M, R, true>(L.data, M, y.data, R, z.data, R);
    return z;
}
template <typename T, int M, int YR, int YC>
TREADLE_FUNC void adj_tile_lower_solve(const tile_t<T, M, M>& L, const tile_t<T, YR, YC>& y, tile_t<T, M, M>& adj_L,
                                       tile_t<T, YR, YC>& adj_y, const tile_t<T, YR, YC>& adj_ret) {
    constexpr int R = tile_la::rhs<M, YR, YC>::nrhs;
    const tile_t<T, YR, YC> z = tile_lower_solve(L, y);
    tile_la::adj_tri_solve<T, M, R, true>(L.data, M, z.data, R, adj_ret.data, R, adj_L.data, M, adj_y.data, R);
}
template <typename T, int M, int YR, int YC>
TREADLE_FUNC tile_t<T, YR, YC> tile_lower_solve_inplace(const tile_t<T, M, M>& L, const tile_t<T, YR, YC>& y) {
    return tile_lower_solve(L, y);
}

template <typename T, int M, int YR, int YC>
TREADLE_FUNC tile_t<T, YR, YC> tile_upper_solve(const tile_t<T, M, M>& U, const tile_t<T, YR, YC>& z) {
    constexpr int R = tile_la::rhs<M, YR, YC>::nrhs;
    tile_t<T, YR, YC> x;
    tile_la::tri_solve<T, M, R, false>(U.data, M, z.data, R, x.data, R);
    return x;
}
template <typename T, int M, int YR, int YC>
TREADLE_FUNC void adj_tile_upper_solve(const tile_t<T, M, M>& U, const tile_t<T, YR, YC>& z, tile_t<T, M, M>& adj_U,
                                       tile_t<T, YR, YC>& adj_z, const tile_t<T, YR, YC>& adj_ret) {
    constexpr int R = tile_la::rhs<M, YR, YC>::nrhs;
    const tile_t<T, YR, YC> x = tile_upper_solve(U, z);
    tile_la::adj_tri_solve<T, M, R, false>(U.data, M, x.data, R, adj_ret.data, R, adj_U.data, M, adj_z.data, R);
}
template <typename T, int M, int YR, int YC>
TREADLE_FUNC tile_t<T, YR, YC> tile_upper_solve_inplace(const tile_t<T, M, M>& U, const tile_t<T, YR, YC>& z) {
    return tile_upper_solve(U, z);
}

}  // namespace treadle
