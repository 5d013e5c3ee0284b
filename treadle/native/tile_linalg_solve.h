// Cholesky factorization, triangular solves and Cholesky solves over compile-time shapes and raw row-major buffers,
// with their adjoints (the helpers come from tile_linalg_gemm.h).
//
// Every routine works on a compute-type copy in a local buffer, so the output may alias the input (the in-place
// builtins pass the same pointer) and only the triangle a routine documents is ever read. The inner loops are
// unit-stride AXPYs along rows (the factorization is right-looking with the pivot column copied out first; the
// solves update whole right-hand-side rows), which the vectorizers turn into packed FMAs.
#pragma once
#include "tile_linalg_gemm.h"

namespace treadle {
namespace tile_la {

// ------------------------------------------------------------------------------------------------ triangular solve
// Solves op(T) X = X in place for an (M, M) triangular T read with strides (rs, cs) (a transposed view is the
// same buffer with the strides swapped), X an (M, NRHS) compute-type buffer with row stride NRHS. LOWER selects
// forward substitution; only that triangle of T (and its diagonal) is read.
template <typename S, typename TT, int M, int NRHS, bool LOWER>
TREADLE_FUNC void trsm_compute(const TT* T, int rs, int cs, S* X) {
    for (int s = 0; s < M; ++s) {
        const int i = LOWER ? s : M - 1 - s;
        S* xi = X + i * NRHS;
        const int k_begin = LOWER ? 0 : i + 1;
        const int k_end = LOWER ? i : M;
        for (int k = k_begin; k < k_end; ++k) {
            const S t = -to<S>(T[i * rs + k * cs]);
            const S* xk = X + k * NRHS;
            for (int j = 0; j < NRHS; ++j)
                xi[j] = fma_(t, xk[j], xi[j]);
        }
        const S inv = S(1) / to<S>(T[i * rs + i * cs]);
        for (int j = 0; j < NRHS; ++j)
            xi[j] *= inv;
    }
}

// Copies an (M, NRHS) buffer with row stride ld into a compute-type buffer, or back.
template <typename S, typename T, int M, int NRHS> TREADLE_FUNC void load_rhs(const T* y, int ld, S* X) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < NRHS; ++j)
            X[i * NRHS + j] = to<S>(y[i * ld + j]);
}
template <typename S, typename T, int M, int NRHS> TREADLE_FUNC void store_rhs(const S* X, T* y, int ld) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < NRHS; ++j)
            y[i * ld + j] = T(X[i * NRHS + j]);
}

// z = L^-1 y (LOWER) or z = U^-1 y (!LOWER) for an (M, M) matrix with row stride ldt and right-hand sides y of
// shape (M, NRHS) with row stride ldy (a 1-D right-hand side is NRHS = 1, ldy = 1). z may alias y.
template <typename T, int M, int NRHS, bool LOWER>
TREADLE_FUNC void tri_solve(const T* Tm, int ldt, const T* y, int ldy, T* z, int ldz) {
    typedef typename compute<T>::type S;
    S X[M * NRHS];
    load_rhs<S, T, M, NRHS>(y, ldy, X);
    trsm_compute<S, T, M, NRHS, LOWER>(Tm, ldt, 1, X);
    store_rhs<S, T, M, NRHS>(X, z, ldz);
}

// Adjoint of z = T^-1 y: with t = T^-T adj_z, adj_y += t and adj_T += -t z^T restricted to T's triangle (the other
// triangle was never read, so it gets no gradient).
template <typename T, int M, int NRHS, bool LOWER>
TREADLE_FUNC void adj_tri_solve(const T* Tm, int ldt, const T* z, int ldz, const T* adj_z, int ld_adj_z, T* adj_T,
                                int ld_adj_t, T* adj_y, int ld_adj_y) {
    typedef typename compute<T>::type S;
    S W[M * NRHS];
    load_rhs<S, T, M, NRHS>(adj_z, ld_adj_z, W);
    // T^T is triangular of the other kind: the same buffer with swapped strides.
    trsm_compute<S, T, M, NRHS, !LOWER>(Tm, 1, ldt, W);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < NRHS; ++j)
            adj_y[i * ld_adj_y + j] = T(to<S>(adj_y[i * ld_adj_y + j]) + W[i * NRHS + j]);
    for (int i = 0; i < M; ++i) {
        const int k_begin = LOWER ? 0 : i;
        const int k_end = LOWER ? i + 1 : M;
        for (int k = k_begin; k < k_end; ++k) {
            S dot = S(0);
            for (int j = 0; j < NRHS; ++j)
                dot = fma_(W[i * NRHS + j], to<S>(z[k * ldz + j]), dot);
            adj_T[i * ld_adj_t + k] = T(to<S>(adj_T[i * ld_adj_t + k]) - dot);
        }
    }
}

// ------------------------------------------------------------------------------------------------ Cholesky
// Factors the (N, N) compute-type buffer W (row stride N) in place into its lower Cholesky factor, reading and
// writing the lower triangle only. A matrix that is not positive definite yields NaN entries, as sqrt does.
template <typename S, int N> TREADLE_FUNC void potrf_lower(S* W) {
    S col[N];
    for (int k = 0; k < N; ++k) {
        const S d = sqrt_(W[k * N + k]);
        W[k * N + k] = d;
        const S inv = S(1) / d;
        for (int i = k + 1; i < N; ++i) {
            W[i * N + k] *= inv;
            col[i] = W[i * N + k];
        }
        // Trailing update of the lower triangle, one row at a time: row i, columns k+1..i, minus L[i,k] * L[k+1..i,k].
        for (int i = k + 1; i < N; ++i) {
            const S lik = -col[i];
            S* row = W + i * N;
            for (int j = k + 1; j <= i; ++j)
                row[j] = fma_(lik, col[j], row[j]);
        }
    }
}

// L with L L^T = A (UPPER = false) or U with U^T U = A (UPPER = true), for an (N, N) A with row stride lda; only
// the selected triangle of A is read and the other triangle of the result is zero. out may alias A.
template <typename T, int N, bool UPPER> TREADLE_FUNC void cholesky(const T* A, int lda, T* out, int ldo) {
    typedef typename compute<T>::type S;
    S W[N * N];
    // The upper triangle of A, transposed, is the lower triangle of the same symmetric matrix.
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j)
            W[i * N + j] = to<S>(UPPER ? A[j * lda + i] : A[i * lda + j]);
    potrf_lower<S, N>(W);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            const S v = j <= i ? W[i * N + j] : S(0);
            if (UPPER)
                out[j * ldo + i] = T(v);
            else
                out[i * ldo + j] = T(v);
        }
}

// Adjoint of the factorization: with L the lower factor, G = L^T adj_L and P = G's lower triangle with the diagonal
// halved, the gradient with respect to a full A is A_bar = L^-T P L^-1. A is parameterized by one triangle (the
// other is never read), so an off-diagonal entry of that triangle collects A_bar[i,j] + A_bar[j,i]. For UPPER, the
// factor is U = L^T and the same holds with everything transposed.
template <typename T, int N, bool UPPER>
TREADLE_FUNC void adj_cholesky(const T* F, int ldf, const T* adj_F, int ld_adj_f, T* adj_A, int ld_adj_a) {
    typedef typename compute<T>::type S;
    S L[N * N];
    S LB[N * N];
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            const bool lower = j <= i;
            L[i * N + j] = lower ? to<S>(UPPER ? F[j * ldf + i] : F[i * ldf + j]) : S(0);
            LB[i * N + j] = lower ? to<S>(UPPER ? adj_F[j * ld_adj_f + i] : adj_F[i * ld_adj_f + j]) : S(0);
        }
    // P = tril(L^T LB) with the diagonal halved.
    S P[N * N];
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
            P[i * N + j] = S(0);
    for (int k = 0; k < N; ++k)
        for (int i = 0; i <= k; ++i) {
            const S lki = L[k * N + i];
            for (int j = 0; j <= i; ++j)
                P[i * N + j] = fma_(lki, LB[k * N + j], P[i * N + j]);
        }
    for (int i = 0; i < N; ++i)
        P[i * N + i] *= S(0.5);
    // Y = L^-T P (an upper solve with L read transposed), then A_bar^T = L^-T Y^T.
    trsm_compute<S, S, N, N, false>(L, 1, N, P);
    S YT[N * N];
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
            YT[i * N + j] = P[j * N + i];
    trsm_compute<S, S, N, N, false>(L, 1, N, YT);  // YT now holds A_bar^T
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) {
            const S g = i == j ? YT[i * N + i] : YT[i * N + j] + YT[j * N + i];
            T& dst = UPPER ? adj_A[j * ld_adj_a + i] : adj_A[i * ld_adj_a + j];
            dst = T(to<S>(dst) + g);
        }
}

// x = A^-1 y given A's factor: L with L L^T = A (UPPER = false) or U with U^T U = A (UPPER = true); only that
// triangle of the factor is read. x may alias y.
template <typename T, int M, int NRHS, bool UPPER>
TREADLE_FUNC void cholesky_solve(const T* F, int ldf, const T* y, int ldy, T* x, int ldx) {
    typedef typename compute<T>::type S;
    S X[M * NRHS];
    load_rhs<S, T, M, NRHS>(y, ldy, X);
    if (UPPER) {
        trsm_compute<S, T, M, NRHS, true>(F, 1, ldf, X);  // U^T z = y
        trsm_compute<S, T, M, NRHS, false>(F, ldf, 1, X);  // U x = z
    } else {
        trsm_compute<S, T, M, NRHS, true>(F, ldf, 1, X);  // L z = y
        trsm_compute<S, T, M, NRHS, false>(F, 1, ldf, X);  // L^T x = z
    }
    store_rhs<S, T, M, NRHS>(X, x, ldx);
}

// Adjoint of x = A^-1 y through the factor F, as the composition of the two triangular solves' adjoints: the
// intermediate z is recomputed from x, adj_y += A^-1 adj_x, and F's triangle collects both solves' -t x^T terms.
template <typename T, int M, int NRHS, bool UPPER>
TREADLE_FUNC void adj_cholesky_solve(const T* F, int ldf, const T* x, int ldx, const T* adj_x, int ld_adj_x,
                                     T* adj_F, int ld_adj_f, T* adj_y, int ld_adj_y) {
    typedef typename compute<T>::type S;
    // Forward intermediate z (the first solve's result) is recomputed from x: z = L^T x (lower) or z = U x (upper).
    S Z[M * NRHS];
    S X[M * NRHS];
    load_rhs<S, T, M, NRHS>(x, ldx, X);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < NRHS; ++j) {
            S acc = S(0);
            for (int k = i; k < M; ++k) {
                // (L^T)[i,k] = L[k,i]; U[i,k] for the upper factor.
                const S f = to<S>(UPPER ? F[i * ldf + k] : F[k * ldf + i]);
                acc = fma_(f, X[k * NRHS + j], acc);
            }
            Z[i * NRHS + j] = acc;
        }
    // Second solve x = R^-1 z with R upper (L^T or U): t = R^-T adj_x, adj_z = t, adj_R -= t x^T on R's upper part.
    S Tb[M * NRHS];
    load_rhs<S, T, M, NRHS>(adj_x, ld_adj_x, Tb);
    if (UPPER)
        trsm_compute<S, T, M, NRHS, true>(F, 1, ldf, Tb);  // U^T t = adj_x
    else
        trsm_compute<S, T, M, NRHS, true>(F, ldf, 1, Tb);  // L t = adj_x
    // First solve z = Q^-1 y with Q lower (L or U^T): w = Q^-T t, adj_y += w, adj_Q -= w z^T on Q's lower part.
    S Wb[M * NRHS];
    for (int i = 0; i < M * NRHS; ++i)
        Wb[i] = Tb[i];
    if (UPPER)
        trsm_compute<S, T, M, NRHS, false>(F, ldf, 1, Wb);  // U w = t
    else
        trsm_compute<S, T, M, NRHS, false>(F, 1, ldf, Wb);  // L^T w = t
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < NRHS; ++j)
            adj_y[i * ld_adj_y + j] = T(to<S>(adj_y[i * ld_adj_y + j]) + Wb[i * NRHS + j]);
    // Lower-factor coordinates: Q = L gets -w z^T at [i,k] (k <= i); R = L^T gets -t x^T at [k,i] i.e. L[i,k]
    // gets -t_k x_i. For the upper factor U: Q = U^T, so U[k,i] gets -w_i z_k; R = U, so U[k,i] gets -t_k x_i.
    for (int i = 0; i < M; ++i)
        for (int k = 0; k <= i; ++k) {
            S g = S(0);
            for (int j = 0; j < NRHS; ++j)
                g += Wb[i * NRHS + j] * Z[k * NRHS + j] + Tb[k * NRHS + j] * X[i * NRHS + j];
            T& dst = UPPER ? adj_F[k * ld_adj_f + i] : adj_F[i * ld_adj_f + k];
            dst = T(to<S>(dst) - g);
        }
}

}  // namespace tile_la
}  // namespace treadle
