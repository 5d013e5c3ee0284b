// The tile matrix product (GEMM) over compile-time shapes and raw row-major buffers, with its adjoint. The tile
// builtins (tile_linalg.h) call it with the tiles' storage; nothing here knows about tiles.
//
// Matrices are given as a pointer plus a row stride (`ld`, in elements); the column stride is 1 unless a function
// says otherwise. Accumulation happens in the "compute type" of the output: float for half, the type itself for
// float and double.
//
// Speed on the host comes from a register-blocked micro-kernel: an MR x NR block of the output lives in local
// accumulators across the whole K loop, each step broadcasts MR values of A and multiplies them with one contiguous
// row segment of B. Written with fixed trip counts and fused multiply-adds (`__builtin_fma*`, which the vectorizers
// turn into packed FMA instructions even though the kernels are built with -ffp-contract=off), g++ and clang++ emit
// it as straight-line packed code. Operands in another type than the compute type (half, mixed precision) or a
// transposed B are first packed into a compute-type buffer in K chunks, so the micro-kernel always reads unit-stride
// rows.
#pragma once
#include "core.h"

namespace treadle {
namespace tile_la {

// The type a product or factorization computes in.
template <typename T> struct compute { typedef T type; };
template <> struct compute<half> { typedef float32 type; };

template <typename S, typename T> TREADLE_FUNC S to(const T& x) { return static_cast<S>(x); }

TREADLE_FUNC float32 fma_(float32 a, float32 b, float32 c) {
#if defined(TREADLE_CUDA)
    return fmaf(a, b, c);
#else
    return __builtin_fmaf(a, b, c);
#endif
}
TREADLE_FUNC float64 fma_(float64 a, float64 b, float64 c) {
#if defined(TREADLE_CUDA)
    return fma(a, b, c);
#else
    return __builtin_fma(a, b, c);
#endif
}

TREADLE_FUNC float32 sqrt_(float32 x) { return TREADLE_LIBM(sqrtf)(x); }
TREADLE_FUNC float64 sqrt_(float64 x) { return TREADLE_LIBM(sqrt)(x); }

template <typename A, typename B> struct same { static constexpr bool value = false; };
template <typename A> struct same<A, A> { static constexpr bool value = true; };

template <int A, int B> struct imin { static constexpr int value = A < B ? A : B; };

// Register-block shape per compute type. NR spans two 256-bit (or one 512-bit) vectors; MR rows of accumulators
// plus one B row and a broadcast stay within the 16 vector registers of AVX2.
template <typename S> struct block;
template <> struct block<float32> {
    static constexpr int MR = 6;
    static constexpr int NR = 16;
};
template <> struct block<float64> {
    static constexpr int MR = 6;
    static constexpr int NR = 8;
};

// Chunk of K packed at a time when operands need converting.
constexpr int KC = 64;

// acc[MR][NR] += A[0:MR, 0:kc] @ B[0:kc, 0:NR]; A has strides (rsa, csa), B row stride ldb and unit column stride.
template <typename S, int MR, int NR>
TREADLE_FUNC void micro(int kc, const S* __restrict__ A, int rsa, int csa, const S* __restrict__ B, int ldb,
                        S (&acc)[MR][NR]) {
    for (int k = 0; k < kc; ++k) {
        const S* b = B + k * ldb;
        S bk[NR];
        for (int j = 0; j < NR; ++j)
            bk[j] = b[j];
        for (int i = 0; i < MR; ++i) {
            const S a = A[i * rsa + k * csa];
            for (int j = 0; j < NR; ++j)
                acc[i][j] = fma_(a, bk[j], acc[i][j]);
        }
    }
}

#if !defined(TREADLE_CUDA) && defined(__GNUC__)
// The full-width block written with vector extensions: g++ does not turn the loop above into a register block (it
// keeps acc in memory); clang++ builds the same form, so both compilers run one algorithm. The multiply-adds are
// contracted into FMAs for this function only (GCC's optimize pragma, clang's fp pragma), whatever -ffp-contract says.
#if !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#endif
template <typename S, int MR> struct gvec {
    typedef S type __attribute__((vector_size(block<S>::NR * sizeof(S))));
};
template <typename S, int MR>
inline __attribute__((always_inline)) void micro_full(int kc, const S* __restrict__ A, int rsa, int csa,
                                                      const S* __restrict__ B, int ldb,
                                                      S (&acc)[MR][block<S>::NR]) {
#if defined(__clang__)
#pragma clang fp contract(fast)
#endif
    typedef typename gvec<S, MR>::type V;
    V c[MR];
    for (int i = 0; i < MR; ++i)
        __builtin_memcpy(&c[i], acc[i], sizeof(V));
    for (int k = 0; k < kc; ++k) {
        V b;
        __builtin_memcpy(&b, B + k * ldb, sizeof(V));
        for (int i = 0; i < MR; ++i)
            c[i] += A[i * rsa + k * csa] * b;
    }
    for (int i = 0; i < MR; ++i)
        __builtin_memcpy(acc[i], &c[i], sizeof(V));
}
#if !defined(__clang__)
#pragma GCC pop_options
#endif
template <> inline void micro<float32, 6, 16>(int kc, const float32* __restrict__ A, int rsa, int csa,
                                               const float32* __restrict__ B, int ldb, float32 (&acc)[6][16]) {
    micro_full<float32, 6>(kc, A, rsa, csa, B, ldb, acc);
}
template <> inline void micro<float64, 6, 8>(int kc, const float64* __restrict__ A, int rsa, int csa,
                                              const float64* __restrict__ B, int ldb, float64 (&acc)[6][8]) {
    micro_full<float64, 6>(kc, A, rsa, csa, B, ldb, acc);
}
#endif

// One MR x NR output block: C = alpha * acc + beta * C (C not read when beta == 0).
template <typename S, typename TC, int MR, int NR>
TREADLE_FUNC void block_kernel(int kc, const S* A, int rsa, int csa, const S* B, int ldb, TC* C, int ldc, S alpha,
                               S beta) {
    S acc[MR][NR];
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j)
            acc[i][j] = S(0);
    micro<S, MR, NR>(kc, A, rsa, csa, B, ldb, acc);
    for (int i = 0; i < MR; ++i) {
        TC* c = C + i * ldc;
        if (beta == S(0)) {
            for (int j = 0; j < NR; ++j)
                c[j] = TC(alpha * acc[i][j]);
        } else {
            for (int j = 0; j < NR; ++j)
                c[j] = TC(fma_(alpha, acc[i][j], beta * to<S>(c[j])));
        }
    }
}

// A row band of MRB rows (MRB <= MR) across all N columns, NR at a time with a compile-time remainder block.
template <typename S, typename TC, int MRB, int N>
TREADLE_FUNC void row_band(int kc, const S* A, int rsa, int csa, const S* B, int ldb, TC* C, int ldc, S alpha,
                           S beta) {
    constexpr int NR = block<S>::NR;
    constexpr int NFULL = N - N % NR;
    for (int j0 = 0; j0 < NFULL; j0 += NR)
        block_kernel<S, TC, MRB, NR>(kc, A, rsa, csa, B + j0, ldb, C + j0, ldc, alpha, beta);
    if constexpr (N % NR != 0)
        block_kernel<S, TC, MRB, N % NR>(kc, A, rsa, csa, B + NFULL, ldb, C + NFULL, ldc, alpha, beta);
}

// C[M,N] = alpha * A[M,kc] @ B[kc,N] + beta * C over compute-type operands (B unit column stride).
template <typename S, typename TC, int M, int N>
TREADLE_FUNC void gemm_compute(int kc, const S* A, int rsa, int csa, const S* B, int ldb, TC* C, int ldc, S alpha,
                               S beta) {
    constexpr int MR = block<S>::MR;
    constexpr int MFULL = M - M % MR;
    for (int i0 = 0; i0 < MFULL; i0 += MR)
        row_band<S, TC, MR, N>(kc, A + i0 * rsa, rsa, csa, B, ldb, C + i0 * ldc, ldc, alpha, beta);
    if constexpr (M % MR != 0)
        row_band<S, TC, M % MR, N>(kc, A + MFULL * rsa, rsa, csa, B, ldb, C + MFULL * ldc, ldc, alpha, beta);
}

// C = alpha * op(A) @ op(B) + beta * C, with op(A) of shape (M, K) and op(B) of shape (K, N). TRANS_A / TRANS_B read
// A as (K, M) / B as (N, K) row-major buffers with row strides lda / ldb. C is never read when beta == 0, so it may
// hold garbage then. C must not alias A or B.
template <typename TA, typename TB, typename TC, int M, int N, int K, bool TRANS_A = false, bool TRANS_B = false>
TREADLE_FUNC void gemm(const TA* A, int lda, const TB* B, int ldb, TC* C, int ldc,
                       typename compute<TC>::type alpha, typename compute<TC>::type beta) {
    typedef typename compute<TC>::type S;
    const int rsa = TRANS_A ? 1 : lda;
    const int csa = TRANS_A ? lda : 1;
    if constexpr (K == 0) {
        // An empty sum: C = beta * C.
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j)
                C[i * ldc + j] = beta == S(0) ? TC(S(0)) : TC(beta * to<S>(C[i * ldc + j]));
    } else if constexpr (same<TA, S>::value && same<TB, S>::value && !TRANS_B) {
        gemm_compute<S, TC, M, N>(K, (const S*)A, rsa, csa, (const S*)B, ldb, C, ldc, alpha, beta);
    } else {
        // Pack K chunks of both operands into compute-type buffers (A as (M, kc), B as (kc, N)).
        constexpr int KB = imin<K, KC>::value;
        S Ap[M * KB];
        S Bp[KB * N];
        for (int k0 = 0; k0 < K; k0 += KB) {
            const int kc = K - k0 < KB ? K - k0 : KB;
            for (int i = 0; i < M; ++i)
                for (int k = 0; k < kc; ++k)
                    Ap[i * KB + k] = to<S>(A[i * rsa + (k0 + k) * csa]);
            for (int k = 0; k < kc; ++k)
                for (int j = 0; j < N; ++j)
                    Bp[k * N + j] = to<S>(TRANS_B ? B[j * ldb + (k0 + k)] : B[(k0 + k) * ldb + j]);
            gemm_compute<S, TC, M, N>(kc, Ap, KB, 1, Bp, N, C, ldc, alpha, k0 == 0 ? beta : S(1));
        }
    }
}

// Adjoint of C = alpha * A @ B + beta * C_in, given adj_C (the gradient of the output): adj_A += alpha * adj_C @ B^T,
// adj_B += alpha * A^T @ adj_C. The caller scales adj_C by beta afterwards for C_in (or zeroes it when beta == 0).
template <typename TA, typename TB, typename TC, int M, int N, int K>
TREADLE_FUNC void adj_gemm(const TA* A, int lda, const TB* B, int ldb, TA* adj_A, int ld_adj_a, TB* adj_B,
                           int ld_adj_b, const TC* adj_C, int ld_adj_c, typename compute<TC>::type alpha) {
    typedef typename compute<TA>::type SA;
    typedef typename compute<TB>::type SB;
    // adj_A (M, K) += alpha * adj_C (M, N) @ B^T (N, K)
    gemm<TC, TB, TA, M, K, N, false, true>(adj_C, ld_adj_c, B, ldb, adj_A, ld_adj_a, SA(alpha), SA(1));
    // adj_B (K, N) += alpha * A^T (K, M) @ adj_C (M, N)
    gemm<TA, TC, TB, K, N, M, true, false>(A, lda, adj_C, ld_adj_c, adj_B, ld_adj_b, SB(alpha), SB(1));
}

}  // namespace tile_la
}  // namespace treadle

