// Batched in-place complex FFTs along the rows of a row-major buffer, over compile-time shapes, with their adjoints.
// Complex numbers are stored interleaved (re, im), the layout of a vec2 tile element.
//
// The transforms are unnormalized: forward X[k] = sum_n x[n] exp(-2 pi i k n / N), inverse with +i; forward then
// inverse multiplies by N. Power-of-two lengths use a Stockham auto-sort FFT (radix-4 passes, one radix-2 pass when
// log2 N is odd), whose innermost loop runs over contiguous elements so it vectorizes and needs no bit-reversal.
// Other lengths use a direct DFT over a precomputed table of the N roots of unity (O(N^2), exact root indices).
// Both compute in the element's scalar type; the roots of unity are computed in double and rounded once.
#pragma once
#include "core.h"

namespace treadle {
namespace tile_fft_impl {

template <typename S> struct cpx {
    S re, im;
};

template <typename S> TREADLE_FUNC cpx<S> cadd(cpx<S> a, cpx<S> b) { return {a.re + b.re, a.im + b.im}; }
template <typename S> TREADLE_FUNC cpx<S> csub(cpx<S> a, cpx<S> b) { return {a.re - b.re, a.im - b.im}; }
template <typename S> TREADLE_FUNC cpx<S> cmul(cpx<S> a, cpx<S> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
// Multiplication by -i (forward) or +i (inverse): the radix-4 butterfly's quarter turn.
template <typename S, bool INV> TREADLE_FUNC cpx<S> quarter(cpx<S> a) {
    return INV ? cpx<S>{-a.im, a.re} : cpx<S>{a.im, -a.re};
}

template <int N> struct pow2 {
    static constexpr bool value = N > 0 && (N & (N - 1)) == 0;
};

// The N-th roots of unity w^k = exp(-+2 pi i k / N), k < N. When 8 divides N only the first octant goes through
// cos/sin (in double, rounded once) and the rest follows by the exact symmetries of the unit circle, so the table
// is exactly symmetric and costs N/8 libm calls; other lengths compute every root directly.
template <typename S, int N, bool INV> TREADLE_FUNC void roots(cpx<S>* w) {
    const double two_pi = 6.283185307179586476925286766559;
    if constexpr (N % 8 == 0) {
        constexpr int E = N / 8;
        for (int k = 0; k <= E; ++k) {
            const double a = two_pi * (double)k / (double)N;
            const double c = k == E ? 0.70710678118654752440 : TREADLE_LIBM(cos)(a);
            const double sn = k == E ? 0.70710678118654752440 : TREADLE_LIBM(sin)(a);
            // (cos, sin) of the angle k, 2E - k (swapped), and their reflections into the other quadrants.
            const S cs = S(c), ss = S(sn);
            const int ks[8] = {k, 2 * E - k, 2 * E + k, 4 * E - k, 4 * E + k, 6 * E - k, 6 * E + k, 8 * E - k};
            const S re[8] = {cs, ss, -ss, -cs, -cs, -ss, ss, cs};
            const S im[8] = {ss, cs, cs, ss, -ss, -cs, -cs, -ss};
            for (int q = 0; q < 8; ++q)
                if (ks[q] < N)
                    w[ks[q]] = {re[q], INV ? im[q] : -im[q]};
        }
    } else {
        for (int k = 0; k < N; ++k) {
            const double a = two_pi * (double)k / (double)N;
            double c = TREADLE_LIBM(cos)(a);
            double sn = TREADLE_LIBM(sin)(a);
            // Quarter and half turns are exact.
            if (4 * k == N || 4 * k == 3 * N)
                c = 0.0;
            if (2 * k == N)
                sn = 0.0;
            w[k] = {S(c), INV ? S(sn) : S(-sn)};
        }
    }
}

// One Stockham pass of radix R over n-point sub-transforms with stride s (n * s = N): reads x, writes y.
template <typename S, int N, bool INV>
TREADLE_FUNC void pass2(int n, int s, const cpx<S>* x, cpx<S>* y, const cpx<S>* w) {
    const int m = n / 2;
    for (int p = 0; p < m; ++p) {
        const cpx<S> wp = w[p * s];
        for (int q = 0; q < s; ++q) {
            const cpx<S> a = x[q + s * p];
            const cpx<S> b = x[q + s * (p + m)];
            y[q + s * (2 * p)] = cadd(a, b);
            y[q + s * (2 * p + 1)] = cmul(csub(a, b), wp);
        }
    }
}

template <typename S, int N, bool INV>
TREADLE_FUNC void pass4(int n, int s, const cpx<S>* x, cpx<S>* y, const cpx<S>* w) {
    const int m = n / 4;
    for (int p = 0; p < m; ++p) {
        const cpx<S> w1 = w[p * s];
        const cpx<S> w2 = w[2 * p * s];
        const cpx<S> w3 = w[3 * p * s];
        for (int q = 0; q < s; ++q) {
            const cpx<S> a = x[q + s * p];
            const cpx<S> b = x[q + s * (p + m)];
            const cpx<S> c = x[q + s * (p + 2 * m)];
            const cpx<S> d = x[q + s * (p + 3 * m)];
            const cpx<S> apc = cadd(a, c), amc = csub(a, c);
            const cpx<S> bpd = cadd(b, d), bmd = quarter<S, INV>(csub(b, d));
            y[q + s * (4 * p)] = cadd(apc, bpd);
            y[q + s * (4 * p + 1)] = cmul(cadd(amc, bmd), w1);
            y[q + s * (4 * p + 2)] = cmul(csub(apc, bpd), w2);
            y[q + s * (4 * p + 3)] = cmul(csub(amc, bmd), w3);
        }
    }
}

// One length-N transform of the row `row` (interleaved re/im, N complex values) in place, given the roots table. The
// row is read and written through its scalars only (it is a vec2 tile's storage, not an array of cpx), and the
// transform runs in the two local buffers.
template <typename S, int N, bool INV>
TREADLE_FUNC void transform_row(S* row, const cpx<S>* w, cpx<S>* buf, cpx<S>* scratch) {
    if constexpr (N <= 1) {
        return;
    } else {
        for (int k = 0; k < N; ++k)
            buf[k] = {row[2 * k], row[2 * k + 1]};
        cpx<S>* x = buf;
        if constexpr (pow2<N>::value) {
            cpx<S>* y = scratch;
            int n = N, s = 1;
            while (n >= 4) {
                pass4<S, N, INV>(n, s, x, y, w);
                cpx<S>* t = x;
                x = y;
                y = t;
                n /= 4;
                s *= 4;
            }
            if (n == 2) {
                pass2<S, N, INV>(n, s, x, y, w);
                x = y;
            }
        } else {
            for (int k = 0; k < N; ++k) {
                S re = S(0), im = S(0);
                int idx = 0;  // (k * n) mod N, kept without overflow
                for (int n = 0; n < N; ++n) {
                    const cpx<S> t = cmul(buf[n], w[idx]);
                    re += t.re;
                    im += t.im;
                    idx += k;
                    if (idx >= N)
                        idx -= N;
                }
                scratch[k] = {re, im};
            }
            x = scratch;
        }
        for (int k = 0; k < N; ++k) {
            row[2 * k] = x[k].re;
            row[2 * k + 1] = x[k].im;
        }
    }
}

}  // namespace tile_fft_impl

// In-place FFT (INV = false) or inverse FFT (INV = true) of ROWS independent rows of N complex values; row r starts
// at data + 2 * r * ld_complex (ld_complex: row stride in complex elements). S is float or double.
template <typename S, int ROWS, int N, bool INV> TREADLE_FUNC void tile_fft_rows(S* data, int ld_complex) {
    using namespace tile_fft_impl;
    if constexpr (N > 1) {
        cpx<S> w[N];
        cpx<S> buf[N];
        cpx<S> scratch[N];
        roots<S, N, INV>(w);
        for (int r = 0; r < ROWS; ++r)
            transform_row<S, N, INV>(data + 2 * r * ld_complex, w, buf, scratch);
    }
}

// Adjoint of the in-place transform: the forward FFT is the linear map F, whose transpose over the (re, im) pairs is
// the inverse transform F^H (unnormalized). adj is replaced by its transform, which is the incoming gradient of the
// input (the in-place builtin's adjoint reads and writes the same adjoint tile).
template <typename S, int ROWS, int N, bool INV> TREADLE_FUNC void adj_tile_fft_rows(S* adj, int ld_complex) {
    tile_fft_rows<S, ROWS, N, !INV>(adj, ld_complex);
}

}  // namespace treadle
