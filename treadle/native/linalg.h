// Small dense linear algebra: svd2, svd3, qr3, eig3, inverse_approx, and the vector norms of the math helpers
// (norm_l1, norm_l2, norm_huber, norm_pseudo_huber, smooth_normalize). Each forward function sits next to its
// adjoint. The decompositions run in float for half inputs and use a fixed maximum number of Jacobi sweeps.
#pragma once
#include "mat.h"

namespace treadle {
namespace detail {

// Several results of one builtin (svd3 -> U, sigma, V). Generated code holds them in its own tuple struct with
// fields f0, f1, ...; the conversion is a template over that struct, and adjoints read adj_ret.f0, adj_ret.f1, ...
template <typename A, typename B> struct ret2 {
    A f0;
    B f1;
    template <typename R> TREADLE_FUNC operator R() const {
        R r;
        r.f0 = f0;
        r.f1 = f1;
        return r;
    }
};
template <typename A, typename B, typename C> struct ret3 {
    A f0;
    B f1;
    C f2;
    template <typename R> TREADLE_FUNC operator R() const {
        R r;
        r.f0 = f0;
        r.f1 = f1;
        r.f2 = f2;
        return r;
    }
};

// The type decompositions compute in: float for half, the type itself otherwise.
template <typename T> struct calc { typedef T type; };
template <> struct calc<half> { typedef float32 type; };

template <typename T> TREADLE_FUNC T epsilon() { return T(1.1920929e-7f); }
template <> TREADLE_FUNC float64 epsilon<float64>() { return 2.220446049250313e-16; }

template <typename T> TREADLE_FUNC T sq(T x) { return T(x * x); }

template <unsigned R, unsigned C, typename T> TREADLE_FUNC vec_t<R, T> col(const mat_t<R, C, T>& m, unsigned j) {
    vec_t<R, T> v;
    for (unsigned i = 0; i < R; ++i)
        v.c[i] = m.data[i][j];
    return v;
}
template <unsigned R, unsigned C, typename T>
TREADLE_FUNC void set_col(mat_t<R, C, T>& m, unsigned j, const vec_t<R, T>& v) {
    for (unsigned i = 0; i < R; ++i)
        m.data[i][j] = v.c[i];
}
template <unsigned R, unsigned C, typename T> TREADLE_FUNC void swap_cols(mat_t<R, C, T>& m, unsigned a, unsigned b) {
    for (unsigned i = 0; i < R; ++i) {
        const T t = m.data[i][a];
        m.data[i][a] = m.data[i][b];
        m.data[i][b] = t;
    }
}

// 1 / (b - a), or 0 when a and b are too close (repeated singular values or eigenvalues: the gradient term is
// undefined there, and dropping it is exact for losses that do not single out one of the repeated vectors).
template <typename T> TREADLE_FUNC T inv_gap(T a, T b, T scale) {
    const T d = T(b - a);
    const T tol = T(T(64) * epsilon<T>() * (scale > T(0) ? scale : T(1)));
    return (d > tol || d < T(-tol)) ? T(T(1) / d) : T(0);
}

// One-sided Jacobi (Hestenes): plane rotations V make the columns of B = A V mutually orthogonal.
template <unsigned N, typename T> TREADLE_FUNC void orthogonalize_columns(mat_t<N, N, T>& B, mat_t<N, N, T>& V) {
    V = treadle::identity<N, T>();
    for (int sweep = 0; sweep < 20; ++sweep) {
        bool rotated = false;
        for (unsigned p = 0; p + 1 < N; ++p)
            for (unsigned q = p + 1; q < N; ++q) {
                T alpha = T(0), beta = T(0), gamma = T(0);
                for (unsigned k = 0; k < N; ++k) {
                    alpha += B.data[k][p] * B.data[k][p];
                    beta += B.data[k][q] * B.data[k][q];
                    gamma += B.data[k][p] * B.data[k][q];
                }
                if (abs(gamma) <= epsilon<T>() * sqrt(alpha * beta) || gamma == T(0))
                    continue;
                rotated = true;
                const T zeta = (beta - alpha) / (T(2) * gamma);
                const T t = (zeta >= T(0) ? T(1) : T(-1)) / (abs(zeta) + sqrt(T(1) + zeta * zeta));
                const T c = T(1) / sqrt(T(1) + t * t), s = c * t;
                for (unsigned k = 0; k < N; ++k) {
                    const T bp = B.data[k][p], bq = B.data[k][q];
                    B.data[k][p] = c * bp - s * bq;
                    B.data[k][q] = s * bp + c * bq;
                    const T vp = V.data[k][p], vq = V.data[k][q];
                    V.data[k][p] = c * vp - s * vq;
                    V.data[k][q] = s * vp + c * vq;
                }
            }
        if (!rotated)
            break;
    }
}

// Sorts the columns of B (and V alongside) by decreasing length; returns true for an odd permutation.
template <unsigned N, typename T> TREADLE_FUNC bool sort_columns(mat_t<N, N, T>& B, mat_t<N, N, T>& V) {
    bool odd = false;
    for (unsigned i = 0; i < N; ++i) {
        unsigned best = i;
        for (unsigned j = i + 1; j < N; ++j)
            if (length_sq(col(B, j)) > length_sq(col(B, best)))
                best = j;
        if (best != i) {
            swap_cols(B, i, best);
            swap_cols(V, i, best);
            odd = !odd;
        }
    }
    return odd;
}

template <typename T> TREADLE_FUNC void svd3_calc(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& U, vec_t<3, T>& sigma,
                                                  mat_t<3, 3, T>& V) {
    mat_t<3, 3, T> B = A;
    orthogonalize_columns(B, V);
    if (sort_columns(B, V)) {  // keep det(V) = +1
        for (unsigned k = 0; k < 3; ++k) {
            V.data[k][2] = -V.data[k][2];
            B.data[k][2] = -B.data[k][2];
        }
    }
    const vec_t<3, T> b0 = col(B, 0), b1 = col(B, 1), b2 = col(B, 2);
    const T s0 = length(b0);
    vec_t<3, T> u0 = s0 > T(0) ? b0 / s0 : vec_t<3, T>(T(1), T(0), T(0));
    vec_t<3, T> u1 = b1 - u0 * dot(u0, b1);
    T s1 = length(u1);
    if (s1 > T(64) * epsilon<T>() * s0 && s1 > T(0)) {
        u1 = u1 / s1;
    } else {  // rank <= 1: any unit vector orthogonal to u0
        const vec_t<3, T> e = abs(u0.c[0]) < T(0.6) ? vec_t<3, T>(T(1), T(0), T(0)) : vec_t<3, T>(T(0), T(1), T(0));
        u1 = normalize(cross(u0, e));
        s1 = dot(u1, b1);
        if (s1 < T(0)) {
            u1 = -u1;
            s1 = -s1;
        }
    }
    const vec_t<3, T> u2 = cross(u0, u1);
    U = matrix_from_cols(u0, u1, u2);
    sigma = vec_t<3, T>(s0, s1, dot(u2, b2));
}

template <typename T> TREADLE_FUNC void svd2_calc(const mat_t<2, 2, T>& A, mat_t<2, 2, T>& U, vec_t<2, T>& sigma,
                                                  mat_t<2, 2, T>& V) {
    mat_t<2, 2, T> B = A;
    orthogonalize_columns(B, V);
    sort_columns(B, V);
    const vec_t<2, T> b0 = col(B, 0), b1 = col(B, 1);
    const T s0 = length(b0), s1 = length(b1);
    const vec_t<2, T> u0 = s0 > T(0) ? b0 / s0 : vec_t<2, T>(T(1), T(0));
    const vec_t<2, T> u1 = s1 > T(64) * epsilon<T>() * s0 && s1 > T(0) ? b1 / s1 : vec_t<2, T>(T(-u0.c[1]), u0.c[0]);
    U = matrix_from_cols(u0, u1);
    sigma = vec_t<2, T>(s0, s1);
}

// Gradient of A = U diag(s) V^T (square, U and V orthogonal, s of any sign):
// with P = U^T dA V, dU = U ((P S + S P^T) o F), dV = V ((S P + P^T S) o F), ds = diag(P), F_ij = 1 / (s_j^2 - s_i^2).
template <unsigned N, typename T>
TREADLE_FUNC mat_t<N, N, T> svd_grad(const mat_t<N, N, T>& U, const vec_t<N, T>& s, const mat_t<N, N, T>& V,
                                     const mat_t<N, N, T>& adj_U, const vec_t<N, T>& adj_s,
                                     const mat_t<N, N, T>& adj_V) {
    const mat_t<N, N, T> gu = mul(transpose(U), adj_U), gv = mul(transpose(V), adj_V);
    const T scale = s.c[0] * s.c[0];
    mat_t<N, N, T> pbar;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) {
            if (i == j) {
                pbar.data[i][i] = adj_s.c[i];
                continue;
            }
            const T f = inv_gap(sq(s.c[i]), sq(s.c[j]), scale);
            pbar.data[i][j] = f * (s.c[j] * (gu.data[i][j] - gu.data[j][i]) + s.c[i] * (gv.data[i][j] - gv.data[j][i]));
        }
    return mul(mul(U, pbar), transpose(V));
}

template <typename T> TREADLE_FUNC void qr3_calc(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, mat_t<3, 3, T>& R) {
    const vec_t<3, T> a0 = col(A, 0), a1 = col(A, 1);
    const T n0 = length(a0);
    const vec_t<3, T> q0 = n0 > T(0) ? a0 / n0 : vec_t<3, T>(T(1), T(0), T(0));
    vec_t<3, T> q1 = a1 - q0 * dot(q0, a1);
    const T n1 = length(q1);
    if (n1 > T(64) * epsilon<T>() * n0 && n1 > T(0)) {
        q1 = q1 / n1;
    } else {
        const vec_t<3, T> e = abs(q0.c[0]) < T(0.6) ? vec_t<3, T>(T(1), T(0), T(0)) : vec_t<3, T>(T(0), T(1), T(0));
        q1 = normalize(cross(q0, e));
    }
    Q = matrix_from_cols(q0, q1, cross(q0, q1));
    R = mul(transpose(Q), A);
    R.data[1][0] = R.data[2][0] = R.data[2][1] = T(0);
}

// Cyclic Jacobi on the symmetric part of A: S = Q diag(d) Q^T with Q a product of rotations (det +1).
template <typename T> TREADLE_FUNC void eig3_calc(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, vec_t<3, T>& d) {
    mat_t<3, 3, T> S = (A + transpose(A)) * T(0.5);
    Q = treadle::identity<3, T>();
    for (int sweep = 0; sweep < 20; ++sweep) {
        const T off = sq(S.data[0][1]) + sq(S.data[0][2]) + sq(S.data[1][2]);
        const T diag = sq(S.data[0][0]) + sq(S.data[1][1]) + sq(S.data[2][2]);
        if (off <= sq(epsilon<T>()) * diag || off == T(0))
            break;
        for (unsigned p = 0; p < 2; ++p)
            for (unsigned q = p + 1; q < 3; ++q) {
                const T apq = S.data[p][q];
                if (apq == T(0))
                    continue;
                const T theta = (S.data[q][q] - S.data[p][p]) / (T(2) * apq);
                const T t = (theta >= T(0) ? T(1) : T(-1)) / (abs(theta) + sqrt(theta * theta + T(1)));
                const T c = T(1) / sqrt(t * t + T(1)), s = t * c;
                mat_t<3, 3, T> J = treadle::identity<3, T>();
                J.data[p][p] = c;
                J.data[q][q] = c;
                J.data[p][q] = s;
                J.data[q][p] = -s;
                S = mul(mul(transpose(J), S), J);
                Q = mul(Q, J);
            }
    }
    d = get_diag(S);
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------ svd3 / svd2
// The return-value forms give (U, sigma, V); the forms with output arguments store them (and, as in the reference,
// carry no gradient).
template <typename T>
TREADLE_FUNC detail::ret3<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>> svd3(const mat_t<3, 3, T>& A) {
    typedef typename detail::calc<T>::type C;
    mat_t<3, 3, C> U, V;
    vec_t<3, C> s;
    detail::svd3_calc(mat_t<3, 3, C>(A), U, s, V);
    return {mat_t<3, 3, T>(U), vec_t<3, T>(s), mat_t<3, 3, T>(V)};
}
template <typename T>
TREADLE_FUNC void svd3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& U, vec_t<3, T>& sigma, mat_t<3, 3, T>& V) {
    const auto r = svd3(A);
    U = r.f0;
    sigma = r.f1;
    V = r.f2;
}
template <typename T, typename R>
TREADLE_FUNC void adj_svd3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& adj_A, const R& adj_ret) {
    const auto r = svd3(A);
    adj_A += detail::svd_grad(r.f0, r.f1, r.f2, adj_ret.f0, adj_ret.f1, adj_ret.f2);
}

template <typename T>
TREADLE_FUNC detail::ret3<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>> svd2(const mat_t<2, 2, T>& A) {
    typedef typename detail::calc<T>::type C;
    mat_t<2, 2, C> U, V;
    vec_t<2, C> s;
    detail::svd2_calc(mat_t<2, 2, C>(A), U, s, V);
    return {mat_t<2, 2, T>(U), vec_t<2, T>(s), mat_t<2, 2, T>(V)};
}
template <typename T>
TREADLE_FUNC void svd2(const mat_t<2, 2, T>& A, mat_t<2, 2, T>& U, vec_t<2, T>& sigma, mat_t<2, 2, T>& V) {
    const auto r = svd2(A);
    U = r.f0;
    sigma = r.f1;
    V = r.f2;
}
template <typename T, typename R>
TREADLE_FUNC void adj_svd2(const mat_t<2, 2, T>& A, mat_t<2, 2, T>& adj_A, const R& adj_ret) {
    const auto r = svd2(A);
    adj_A += detail::svd_grad(r.f0, r.f1, r.f2, adj_ret.f0, adj_ret.f1, adj_ret.f2);
}

// ------------------------------------------------------------------------------------------------ qr3
template <typename T> TREADLE_FUNC detail::ret2<mat_t<3, 3, T>, mat_t<3, 3, T>> qr3(const mat_t<3, 3, T>& A) {
    typedef typename detail::calc<T>::type C;
    mat_t<3, 3, C> Q, R;
    detail::qr3_calc(mat_t<3, 3, C>(A), Q, R);
    return {mat_t<3, 3, T>(Q), mat_t<3, 3, T>(R)};
}
template <typename T> TREADLE_FUNC void qr3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, mat_t<3, 3, T>& R) {
    const auto r = qr3(A);
    Q = r.f0;
    R = r.f1;
}
// With X = Q^T dA R^-1: dQ = Q (L - L^T) for L the strict lower part of X, dR = (X - L + L^T) R. Hence
// Xbar = Rbar R^T + strict_lower(G - G^T) with G = Q^T Qbar - Rbar R^T, and Abar = Q Xbar R^-T.
template <typename T, typename Ret>
TREADLE_FUNC void adj_qr3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& adj_A, const Ret& adj_ret) {
    const auto r = qr3(A);
    const mat_t<3, 3, T>&Q = r.f0, &R = r.f1;
    const mat_t<3, 3, T> rbar_rt = mul(adj_ret.f1, transpose(R));
    const mat_t<3, 3, T> g = mul(transpose(Q), adj_ret.f0) - rbar_rt;
    mat_t<3, 3, T> xbar = rbar_rt;
    for (unsigned i = 1; i < 3; ++i)
        for (unsigned j = 0; j < i; ++j)
            xbar.data[i][j] += g.data[i][j] - g.data[j][i];
    adj_A += mul(mul(Q, xbar), transpose(inverse(R)));
}

// ------------------------------------------------------------------------------------------------ eig3
// Eigenvectors (columns of Q, right-handed) and eigenvalues of the symmetric part of A, in no particular order.
template <typename T> TREADLE_FUNC detail::ret2<mat_t<3, 3, T>, vec_t<3, T>> eig3(const mat_t<3, 3, T>& A) {
    typedef typename detail::calc<T>::type C;
    mat_t<3, 3, C> Q;
    vec_t<3, C> d;
    detail::eig3_calc(mat_t<3, 3, C>(A), Q, d);
    return {mat_t<3, 3, T>(Q), vec_t<3, T>(d)};
}
template <typename T> TREADLE_FUNC void eig3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, vec_t<3, T>& d) {
    const auto r = eig3(A);
    Q = r.f0;
    d = r.f1;
}
// Abar = sym(Q (diag(dbar) + F o (Q^T Qbar)) Q^T), F_ij = 1 / (d_j - d_i).
template <typename T, typename R>
TREADLE_FUNC void adj_eig3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& adj_A, const R& adj_ret) {
    const auto r = eig3(A);
    const mat_t<3, 3, T>& Q = r.f0;
    const vec_t<3, T>& d = r.f1;
    const mat_t<3, 3, T> g = mul(transpose(Q), adj_ret.f0);
    const T scale = max(abs(d.c[0]), max(abs(d.c[1]), abs(d.c[2])));
    mat_t<3, 3, T> pbar;
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j)
            pbar.data[i][j] = i == j ? adj_ret.f1.c[i] : T(detail::inv_gap(d.c[i], d.c[j], scale) * g.data[i][j]);
    const mat_t<3, 3, T> full = mul(mul(Q, pbar), transpose(Q));
    adj_A += (full + transpose(full)) * T(0.5);
}

// ------------------------------------------------------------------------------------------------ inverse_approx
// On the CPU the same method as inverse() (the reference does the same).
TREADLE_SQ_T mat_t<N, N, T> inverse_approx(const mat_t<N, N, T>& m) { return inverse(m); }
TREADLE_SQ_T void adj_inverse_approx(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const mat_t<N, N, T>& adj_ret) {
    adj_inverse(m, adj_m, adj_ret);
}

// ------------------------------------------------------------------------------------------------ norms
TREADLE_VEC_T T norm_l1(const vec_t<N, T>& v) {
    T s = T(0);
    for (unsigned i = 0; i < N; ++i)
        s += abs(v.c[i]);
    return s;
}
TREADLE_VEC_T void adj_norm_l1(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_v.c[i] += v.c[i] > T(0) ? adj_ret : (v.c[i] < T(0) ? T(-adj_ret) : T(0));
}

TREADLE_VEC_T T norm_l2(const vec_t<N, T>& v) { return length(v); }
TREADLE_VEC_T void adj_norm_l2(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    adj_length(v, adj_v, adj_ret);
}

// 0.5 |v|^2 inside |v| <= delta, delta (|v| - delta / 2) outside.
TREADLE_VEC_T T norm_huber(const vec_t<N, T>& v, TREADLE_SCALAR(T) delta) {
    const T a = dot(v, v);
    return a <= delta * delta ? T(T(0.5) * a) : T(delta * (sqrt(a) - T(0.5) * delta));
}
TREADLE_VEC_T void adj_norm_huber(const vec_t<N, T>& v, T delta, vec_t<N, T>& adj_v, T& adj_delta, const T& adj_ret) {
    const T a = dot(v, v);
    if (a <= delta * delta) {
        adj_v += v * adj_ret;
    } else {
        const T l = sqrt(a);
        adj_v += v * T(delta / l * adj_ret);
        adj_delta += (l - delta) * adj_ret;
    }
}
TREADLE_VEC_T T norm_huber(const vec_t<N, T>& v) { return norm_huber(v, T(1)); }
TREADLE_VEC_T void adj_norm_huber(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    T unused = T(0);
    adj_norm_huber(v, T(1), adj_v, unused, adj_ret);
}

// delta sqrt(1 + |v|^2 / delta^2)
TREADLE_VEC_T T norm_pseudo_huber(const vec_t<N, T>& v, TREADLE_SCALAR(T) delta) {
    return delta * sqrt(T(1) + dot(v, v) / (delta * delta));
}
namespace detail {
// d h / d v = v * gv, d h / d delta = gd for h = norm_pseudo_huber(v, delta).
template <unsigned N, typename T> TREADLE_FUNC void pseudo_huber_grad(const vec_t<N, T>& v, T delta, T& gv, T& gd) {
    const T a = dot(v, v);
    const T s = sqrt(T(1) + a / (delta * delta));
    gv = T(1) / (s * delta);
    gd = s - a / (s * delta * delta);
}
}  // namespace detail
TREADLE_VEC_T void adj_norm_pseudo_huber(const vec_t<N, T>& v, T delta, vec_t<N, T>& adj_v, T& adj_delta,
                                         const T& adj_ret) {
    T gv, gd;
    detail::pseudo_huber_grad(v, delta, gv, gd);
    adj_v += v * T(gv * adj_ret);
    adj_delta += gd * adj_ret;
}
TREADLE_VEC_T T norm_pseudo_huber(const vec_t<N, T>& v) { return norm_pseudo_huber(v, T(1)); }
TREADLE_VEC_T void adj_norm_pseudo_huber(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    T unused = T(0);
    adj_norm_pseudo_huber(v, T(1), adj_v, unused, adj_ret);
}

// v / norm_pseudo_huber(v, delta)
TREADLE_VEC_T vec_t<N, T> smooth_normalize(const vec_t<N, T>& v, TREADLE_SCALAR(T) delta) {
    return v / norm_pseudo_huber(v, delta);
}
TREADLE_VEC_T void adj_smooth_normalize(const vec_t<N, T>& v, T delta, vec_t<N, T>& adj_v, T& adj_delta,
                                        const vec_t<N, T>& adj_ret) {
    const T h = norm_pseudo_huber(v, delta);
    T gv, gd;
    detail::pseudo_huber_grad(v, delta, gv, gd);
    const T k = T(-dot(v, adj_ret) / (h * h));  // d(loss)/dh
    adj_v += adj_ret / h + v * T(k * gv);
    adj_delta += k * gd;
}
TREADLE_VEC_T vec_t<N, T> smooth_normalize(const vec_t<N, T>& v) { return smooth_normalize(v, T(1)); }
TREADLE_VEC_T void adj_smooth_normalize(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const vec_t<N, T>& adj_ret) {
    T unused = T(0);
    adj_smooth_normalize(v, T(1), adj_v, unused, adj_ret);
}

}  // namespace treadle
