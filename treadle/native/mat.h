// Row-major matrices `mat_t<R, C, T>` (exactly R * C * sizeof(T) bytes) and their builtins, each forward function
// followed by its adjoint (same convention as scalar.h).
#pragma once
#include "vec.h"

namespace treadle {

template <unsigned R, unsigned C, typename T> struct mat_t {
    // An empty slice of a matrix is the 0x0 matrix: CUDA has no zero-length arrays, so it keeps one unused element.
    T data[R ? R : 1][C ? C : 1];

    TREADLE_FUNC mat_t() : data() {}
    TREADLE_FUNC explicit mat_t(T s) {
        for (unsigned i = 0; i < R; ++i)
            for (unsigned j = 0; j < C; ++j)
                data[i][j] = s;
    }
    // From R * C scalars in row-major order (2x2: 4 values, 3x3: 9, 4x4: 16, any other shape likewise).
    template <typename... A> TREADLE_FUNC mat_t(T x0, T x1, A... rest) {
        static_assert(sizeof...(A) + 2 == R * C, "mat_t: wrong number of components");
        const T tmp[R * C] = {x0, x1, T(rest)...};
        for (unsigned k = 0; k < R * C; ++k)
            data[k / C][k % C] = tmp[k];
    }
    // From R row vectors (R >= 2).
    template <typename... V>
    TREADLE_FUNC mat_t(const vec_t<C, T>& r0, const vec_t<C, T>& r1, const V&... rest) {
        static_assert(sizeof...(V) + 2 == R, "mat_t: wrong number of rows");
        const vec_t<C, T>* rows[R] = {&r0, &r1, &rest...};
        for (unsigned i = 0; i < R; ++i)
            for (unsigned j = 0; j < C; ++j)
                data[i][j] = rows[i]->c[j];
    }
    template <typename P, typename detail::enable_if<detail::is_same<P, T>::value, int>::type = 0>
    TREADLE_FUNC explicit mat_t(const P* p) {
        for (unsigned k = 0; k < R * C; ++k)
            data[k / C][k % C] = p[k];
    }
    template <typename U> TREADLE_FUNC explicit mat_t(const mat_t<R, C, U>& o) {
        for (unsigned i = 0; i < R; ++i)
            for (unsigned j = 0; j < C; ++j)
                data[i][j] = static_cast<T>(o.data[i][j]);
    }

    // m[i][j]
    TREADLE_FUNC T* operator[](int i) { return data[i]; }
    TREADLE_FUNC const T* operator[](int i) const { return data[i]; }
};

namespace detail {
template <unsigned R, unsigned C, typename T> struct scalar_of<mat_t<R, C, T>> { typedef T type; };
}  // namespace detail

#define TREADLE_MAT_T template <unsigned R, unsigned C, typename T> TREADLE_FUNC
#define TREADLE_SQ_T template <unsigned N, typename T> TREADLE_FUNC
#define TREADLE_MAT_LOOP(i, j)           \
    for (unsigned i = 0; i < R; ++i)     \
        for (unsigned j = 0; j < C; ++j)

// ------------------------------------------------------------------------------------------------ operators
TREADLE_MAT_T mat_t<R, C, T> operator+(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.data[i][j] + b.data[i][j]);
    return r;
}
TREADLE_MAT_T mat_t<R, C, T> operator-(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.data[i][j] - b.data[i][j]);
    return r;
}
TREADLE_MAT_T mat_t<R, C, T> operator-(const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(-a.data[i][j]);
    return r;
}
TREADLE_MAT_T mat_t<R, C, T> operator*(const mat_t<R, C, T>& a, TREADLE_SCALAR(T) s) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.data[i][j] * s);
    return r;
}
TREADLE_MAT_T mat_t<R, C, T> operator*(TREADLE_SCALAR(T) s, const mat_t<R, C, T>& a) { return a * s; }
TREADLE_MAT_T mat_t<R, C, T> operator/(const mat_t<R, C, T>& a, TREADLE_SCALAR(T) s) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.data[i][j] / s);
    return r;
}
TREADLE_MAT_T mat_t<R, C, T>& operator+=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    TREADLE_MAT_LOOP(i, j) a.data[i][j] += b.data[i][j];
    return a;
}
TREADLE_MAT_T mat_t<R, C, T>& operator-=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    TREADLE_MAT_LOOP(i, j) a.data[i][j] -= b.data[i][j];
    return a;
}
TREADLE_MAT_T bool operator==(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    TREADLE_MAT_LOOP(i, j) if (!(a.data[i][j] == b.data[i][j])) return false;
    return true;
}
TREADLE_MAT_T bool operator!=(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return !(a == b); }

// ------------------------------------------------------------------------------------------------ arithmetic
// adj_add, adj_sub, adj_pos and adj_neg of scalar.h serve matrices too.
TREADLE_MAT_T mat_t<R, C, T> add(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return a + b; }
TREADLE_MAT_T mat_t<R, C, T> sub(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return a - b; }
TREADLE_MAT_T mat_t<R, C, T> neg(const mat_t<R, C, T>& a) { return -a; }
TREADLE_MAT_T mat_t<R, C, T> pos(const mat_t<R, C, T>& a) { return a; }

// Bitwise operators on integer matrices: componentwise (no gradient, like their scalar forms).
#define TREADLE_MAT_BITWISE2(name)                                                                                \
    TREADLE_MAT_T mat_t<R, C, T> name(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {                        \
        mat_t<R, C, T> r;                                                                                         \
        TREADLE_MAT_LOOP(i, j) r.data[i][j] = name(a.data[i][j], b.data[i][j]);                                   \
        return r;                                                                                                 \
    }
TREADLE_MAT_BITWISE2(bit_and)
TREADLE_MAT_BITWISE2(bit_or)
TREADLE_MAT_BITWISE2(bit_xor)
TREADLE_MAT_BITWISE2(lshift)
TREADLE_MAT_BITWISE2(rshift)
#undef TREADLE_MAT_BITWISE2
TREADLE_MAT_T mat_t<R, C, T> invert(const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = invert(a.data[i][j]);
    return r;
}

// Frobenius inner product.
TREADLE_MAT_T T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    T s = T(0);
    TREADLE_MAT_LOOP(i, j) s = T(s + a.data[i][j] * b.data[i][j]);
    return s;
}
TREADLE_MAT_T void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                            mat_t<R, C, T>& adj_b, const T& adj_ret) {
    adj_a += b * adj_ret;
    adj_b += a * adj_ret;
}

TREADLE_MAT_T mat_t<R, C, T> mul(const mat_t<R, C, T>& a, TREADLE_SCALAR(T) s) { return a * s; }
TREADLE_MAT_T mat_t<R, C, T> mul(TREADLE_SCALAR(T) s, const mat_t<R, C, T>& a) { return a * s; }
TREADLE_MAT_T void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                           const mat_t<R, C, T>& adj_ret) {
    adj_a += adj_ret * s;
    adj_s += ddot(a, adj_ret);
}
TREADLE_MAT_T void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                           const mat_t<R, C, T>& adj_ret) {
    adj_a += adj_ret * s;
    adj_s += ddot(a, adj_ret);
}
TREADLE_MAT_T mat_t<R, C, T> div(const mat_t<R, C, T>& a, TREADLE_SCALAR(T) s) { return a / s; }
TREADLE_MAT_T void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                           const mat_t<R, C, T>& adj_ret) {
    adj_a += adj_ret / s;
    adj_s -= ddot(a, adj_ret) / (s * s);
}
// s / m, elementwise (as for vectors).
TREADLE_MAT_T mat_t<R, C, T> div(TREADLE_SCALAR(T) s, const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(s / a.data[i][j]);
    return r;
}
TREADLE_MAT_T void adj_div(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                           const mat_t<R, C, T>& adj_ret) {
    TREADLE_MAT_LOOP(i, j) {
        adj_s += adj_ret.data[i][j] / a.data[i][j];
        adj_a.data[i][j] -= adj_ret.data[i][j] * s / (a.data[i][j] * a.data[i][j]);
    }
}

TREADLE_MAT_T mat_t<R, C, T> cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.data[i][j] * b.data[i][j]);
    return r;
}
TREADLE_MAT_T void adj_cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                              mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    adj_a += cw_mul(b, adj_ret);
    adj_b += cw_mul(a, adj_ret);
}
TREADLE_MAT_T mat_t<R, C, T> cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.data[i][j] / b.data[i][j]);
    return r;
}
TREADLE_MAT_T void adj_cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                              mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    TREADLE_MAT_LOOP(i, j) {
        adj_a.data[i][j] += adj_ret.data[i][j] / b.data[i][j];
        adj_b.data[i][j] -= adj_ret.data[i][j] * a.data[i][j] / (b.data[i][j] * b.data[i][j]);
    }
}

// ------------------------------------------------------------------------------------------------ products
// outer(a, b)[i][j] = a[i] * b[j]
TREADLE_MAT_T mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) {
    mat_t<R, C, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[i][j] = T(a.c[i] * b.c[j]);
    return r;
}

TREADLE_MAT_T mat_t<C, R, T> transpose(const mat_t<R, C, T>& a) {
    mat_t<C, R, T> r;
    TREADLE_MAT_LOOP(i, j) r.data[j][i] = a.data[i][j];
    return r;
}
TREADLE_MAT_T void adj_transpose(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<C, R, T>& adj_ret) {
    TREADLE_MAT_LOOP(i, j) adj_a.data[i][j] += adj_ret.data[j][i];
}

// Matrix times column vector.
TREADLE_MAT_T vec_t<R, T> mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v) {
    vec_t<R, T> r;
    for (unsigned i = 0; i < R; ++i) {
        T s = T(0);
        for (unsigned j = 0; j < C; ++j)
            s = T(s + m.data[i][j] * v.c[j]);
        r.c[i] = s;
    }
    return r;
}
// Row vector times matrix.
TREADLE_MAT_T vec_t<C, T> mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m) {
    vec_t<C, T> r;
    TREADLE_MAT_LOOP(i, j) r.c[j] = T(r.c[j] + v.c[i] * m.data[i][j]);
    return r;
}
TREADLE_MAT_T void adj_mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v, mat_t<R, C, T>& adj_m, vec_t<C, T>& adj_v,
                           const vec_t<R, T>& adj_ret) {
    adj_m += outer(adj_ret, v);
    adj_v += mul(adj_ret, m);
}
TREADLE_MAT_T void adj_mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m, vec_t<R, T>& adj_v, mat_t<R, C, T>& adj_m,
                           const vec_t<C, T>& adj_ret) {
    adj_v += mul(m, adj_ret);
    adj_m += outer(v, adj_ret);
}

// Matrix times matrix: (R x K) (K x C).
template <unsigned R, unsigned K, unsigned C, typename T>
TREADLE_FUNC mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned k = 0; k < K; ++k)
            for (unsigned j = 0; j < C; ++j)
                r.data[i][j] = T(r.data[i][j] + a.data[i][k] * b.data[k][j]);
    return r;
}
template <unsigned R, unsigned K, unsigned C, typename T>
TREADLE_FUNC void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a,
                          mat_t<K, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    adj_a += mul(adj_ret, transpose(b));
    adj_b += mul(transpose(a), adj_ret);
}

TREADLE_MAT_T void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b,
                             const mat_t<R, C, T>& adj_ret) {
    adj_a += mul(adj_ret, b);
    adj_b += mul(a, adj_ret);
}

// ------------------------------------------------------------------------------------------------ square matrices
template <unsigned N, typename T> TREADLE_FUNC mat_t<N, N, T> identity() {
    mat_t<N, N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.data[i][i] = T(1);
    return r;
}

TREADLE_SQ_T T trace(const mat_t<N, N, T>& a) {
    T s = T(0);
    for (unsigned i = 0; i < N; ++i)
        s = T(s + a.data[i][i]);
    return s;
}
TREADLE_SQ_T void adj_trace(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_a, const T& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_a.data[i][i] += adj_ret;
}

TREADLE_SQ_T mat_t<N, N, T> diag(const vec_t<N, T>& d) {
    mat_t<N, N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.data[i][i] = d.c[i];
    return r;
}
TREADLE_SQ_T void adj_diag(const vec_t<N, T>&, vec_t<N, T>& adj_d, const mat_t<N, N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_d.c[i] += adj_ret.data[i][i];
}

TREADLE_SQ_T vec_t<N, T> get_diag(const mat_t<N, N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = a.data[i][i];
    return r;
}
TREADLE_SQ_T void adj_get_diag(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_a.data[i][i] += adj_ret.c[i];
}

// skew(v) * w == cross(v, w)
template <typename T> TREADLE_FUNC mat_t<3, 3, T> skew(const vec_t<3, T>& v) {
    return mat_t<3, 3, T>(T(0), T(-v.c[2]), v.c[1], v.c[2], T(0), T(-v.c[0]), T(-v.c[1]), v.c[0], T(0));
}
template <typename T>
TREADLE_FUNC void adj_skew(const vec_t<3, T>&, vec_t<3, T>& adj_v, const mat_t<3, 3, T>& g) {
    adj_v.c[0] += g.data[2][1] - g.data[1][2];
    adj_v.c[1] += g.data[0][2] - g.data[2][0];
    adj_v.c[2] += g.data[1][0] - g.data[0][1];
}

// Adjugate (transposed cofactor matrix): adjugate(A) A = det(A) I. Also gives d det / dA = adjugate(A)^T, which,
// unlike det * inverse^T, stays valid for singular matrices.
template <typename T> TREADLE_FUNC mat_t<2, 2, T> adjugate(const mat_t<2, 2, T>& m) {
    return mat_t<2, 2, T>(m.data[1][1], T(-m.data[0][1]), T(-m.data[1][0]), m.data[0][0]);
}
template <typename T> TREADLE_FUNC mat_t<3, 3, T> adjugate(const mat_t<3, 3, T>& m) {
    const vec_t<3, T> r0(m.data[0]), r1(m.data[1]), r2(m.data[2]);
    // The cofactor rows are the cross products of the other two rows; the adjugate is their transpose.
    return transpose(mat_t<3, 3, T>(cross(r1, r2), cross(r2, r0), cross(r0, r1)));
}
template <typename T> TREADLE_FUNC mat_t<4, 4, T> adjugate(const mat_t<4, 4, T>& m) {
    const T(&a)[4][4] = m.data;
    // 2x2 minors of the top two rows (s) and the bottom two rows (c).
    const T s0 = a[0][0] * a[1][1] - a[1][0] * a[0][1], s1 = a[0][0] * a[1][2] - a[1][0] * a[0][2];
    const T s2 = a[0][0] * a[1][3] - a[1][0] * a[0][3], s3 = a[0][1] * a[1][2] - a[1][1] * a[0][2];
    const T s4 = a[0][1] * a[1][3] - a[1][1] * a[0][3], s5 = a[0][2] * a[1][3] - a[1][2] * a[0][3];
    const T c5 = a[2][2] * a[3][3] - a[3][2] * a[2][3], c4 = a[2][1] * a[3][3] - a[3][1] * a[2][3];
    const T c3 = a[2][1] * a[3][2] - a[3][1] * a[2][2], c2 = a[2][0] * a[3][3] - a[3][0] * a[2][3];
    const T c1 = a[2][0] * a[3][2] - a[3][0] * a[2][2], c0 = a[2][0] * a[3][1] - a[3][0] * a[2][1];
    return mat_t<4, 4, T>(
        a[1][1] * c5 - a[1][2] * c4 + a[1][3] * c3, -a[0][1] * c5 + a[0][2] * c4 - a[0][3] * c3,
        a[3][1] * s5 - a[3][2] * s4 + a[3][3] * s3, -a[2][1] * s5 + a[2][2] * s4 - a[2][3] * s3,
        -a[1][0] * c5 + a[1][2] * c2 - a[1][3] * c1, a[0][0] * c5 - a[0][2] * c2 + a[0][3] * c1,
        -a[3][0] * s5 + a[3][2] * s2 - a[3][3] * s1, a[2][0] * s5 - a[2][2] * s2 + a[2][3] * s1,
        a[1][0] * c4 - a[1][1] * c2 + a[1][3] * c0, -a[0][0] * c4 + a[0][1] * c2 - a[0][3] * c0,
        a[3][0] * s4 - a[3][1] * s2 + a[3][3] * s0, -a[2][0] * s4 + a[2][1] * s2 - a[2][3] * s0,
        -a[1][0] * c3 + a[1][1] * c1 - a[1][2] * c0, a[0][0] * c3 - a[0][1] * c1 + a[0][2] * c0,
        -a[3][0] * s3 + a[3][1] * s1 - a[3][2] * s0, a[2][0] * s3 - a[2][1] * s1 + a[2][2] * s0);
}

// Determinant by expansion along the first column of the adjugate (sizes 2, 3, 4).
TREADLE_SQ_T T determinant(const mat_t<N, N, T>& m) {
    static_assert(N >= 2 && N <= 4, "determinant: only 2x2, 3x3 and 4x4 matrices");
    const mat_t<N, N, T> adj = adjugate(m);
    T d = T(0);
    for (unsigned i = 0; i < N; ++i)
        d = T(d + m.data[0][i] * adj.data[i][0]);
    return d;
}
TREADLE_SQ_T void adj_determinant(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const T& adj_ret) {
    adj_m += transpose(adjugate(m)) * adj_ret;
}

// Inverse (sizes 2, 3, 4); a singular matrix gives the zero matrix, as in the reference.
TREADLE_SQ_T mat_t<N, N, T> inverse(const mat_t<N, N, T>& m) {
    static_assert(N >= 2 && N <= 4, "inverse: only 2x2, 3x3 and 4x4 matrices");
    const mat_t<N, N, T> adj = adjugate(m);
    T d = T(0);
    for (unsigned i = 0; i < N; ++i)
        d = T(d + m.data[0][i] * adj.data[i][0]);
    if (d == T(0))
        return mat_t<N, N, T>();
    return adj * T(T(1) / d);
}
TREADLE_SQ_T void adj_inverse(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const mat_t<N, N, T>& adj_ret) {
    if (determinant(m) == T(0))
        return;
    const mat_t<N, N, T> bt = transpose(inverse(m));  // d(A^-1) = -A^-1 dA A^-1
    adj_m -= mul(mul(bt, adj_ret), bt);
}

// ------------------------------------------------------------------------------------------------ from vectors
template <unsigned N, typename T> TREADLE_FUNC mat_t<N, 1, T> matrix_from_cols(const vec_t<N, T>& c0) {
    mat_t<N, 1, T> m;
    for (unsigned i = 0; i < N; ++i)
        m.data[i][0] = c0.c[i];
    return m;
}
template <unsigned N, typename T> TREADLE_FUNC mat_t<1, N, T> matrix_from_rows(const vec_t<N, T>& r0) {
    mat_t<1, N, T> m;
    for (unsigned j = 0; j < N; ++j)
        m.data[0][j] = r0.c[j];
    return m;
}
template <unsigned N, typename T>
TREADLE_FUNC mat_t<N, 2, T> matrix_from_cols(const vec_t<N, T>& c0, const vec_t<N, T>& c1) {
    return transpose(mat_t<2, N, T>(c0, c1));
}
template <unsigned N, typename T>
TREADLE_FUNC mat_t<N, 3, T> matrix_from_cols(const vec_t<N, T>& c0, const vec_t<N, T>& c1, const vec_t<N, T>& c2) {
    return transpose(mat_t<3, N, T>(c0, c1, c2));
}
template <unsigned N, typename T>
TREADLE_FUNC mat_t<N, 4, T> matrix_from_cols(const vec_t<N, T>& c0, const vec_t<N, T>& c1, const vec_t<N, T>& c2,
                                             const vec_t<N, T>& c3) {
    return transpose(mat_t<4, N, T>(c0, c1, c2, c3));
}
template <unsigned N, typename T>
TREADLE_FUNC mat_t<2, N, T> matrix_from_rows(const vec_t<N, T>& r0, const vec_t<N, T>& r1) {
    return mat_t<2, N, T>(r0, r1);
}
template <unsigned N, typename T>
TREADLE_FUNC mat_t<3, N, T> matrix_from_rows(const vec_t<N, T>& r0, const vec_t<N, T>& r1, const vec_t<N, T>& r2) {
    return mat_t<3, N, T>(r0, r1, r2);
}
template <unsigned N, typename T>
TREADLE_FUNC mat_t<4, N, T> matrix_from_rows(const vec_t<N, T>& r0, const vec_t<N, T>& r1, const vec_t<N, T>& r2,
                                             const vec_t<N, T>& r3) {
    return mat_t<4, N, T>(r0, r1, r2, r3);
}

namespace detail {
// Adds column (or row) k of g into v.
template <unsigned R, unsigned C, typename T>
TREADLE_FUNC void add_col(const mat_t<R, C, T>& g, unsigned k, vec_t<R, T>& v) {
    for (unsigned i = 0; i < R; ++i)
        v.c[i] += g.data[i][k];
}
template <unsigned R, unsigned C, typename T>
TREADLE_FUNC void add_row(const mat_t<R, C, T>& g, unsigned k, vec_t<C, T>& v) {
    for (unsigned j = 0; j < C; ++j)
        v.c[j] += g.data[k][j];
}
}  // namespace detail

template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_cols(const vec_t<N, T>&, vec_t<N, T>& a0, const mat_t<N, 1, T>& g) {
    detail::add_col(g, 0, a0);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, vec_t<N, T>& a0, const mat_t<1, N, T>& g) {
    detail::add_row(g, 0, a0);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_cols(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& a0, vec_t<N, T>& a1,
                                       const mat_t<N, 2, T>& g) {
    detail::add_col(g, 0, a0);
    detail::add_col(g, 1, a1);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_cols(const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& a0,
                                       vec_t<N, T>& a1, vec_t<N, T>& a2, const mat_t<N, 3, T>& g) {
    detail::add_col(g, 0, a0);
    detail::add_col(g, 1, a1);
    detail::add_col(g, 2, a2);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_cols(const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&,
                                       vec_t<N, T>& a0, vec_t<N, T>& a1, vec_t<N, T>& a2, vec_t<N, T>& a3,
                                       const mat_t<N, 4, T>& g) {
    detail::add_col(g, 0, a0);
    detail::add_col(g, 1, a1);
    detail::add_col(g, 2, a2);
    detail::add_col(g, 3, a3);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& a0, vec_t<N, T>& a1,
                                       const mat_t<2, N, T>& g) {
    detail::add_row(g, 0, a0);
    detail::add_row(g, 1, a1);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& a0,
                                       vec_t<N, T>& a1, vec_t<N, T>& a2, const mat_t<3, N, T>& g) {
    detail::add_row(g, 0, a0);
    detail::add_row(g, 1, a1);
    detail::add_row(g, 2, a2);
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&,
                                       vec_t<N, T>& a0, vec_t<N, T>& a1, vec_t<N, T>& a2, vec_t<N, T>& a3,
                                       const mat_t<4, N, T>& g) {
    detail::add_row(g, 0, a0);
    detail::add_row(g, 1, a1);
    detail::add_row(g, 2, a2);
    detail::add_row(g, 3, a3);
}

// Five or more vectors: one variadic form each way (the fixed-arity forms above stay the common case).
template <unsigned N, typename T, typename... V>
TREADLE_FUNC mat_t<N, 5 + sizeof...(V), T> matrix_from_cols(const vec_t<N, T>& c0, const vec_t<N, T>& c1,
                                                             const vec_t<N, T>& c2, const vec_t<N, T>& c3,
                                                             const vec_t<N, T>& c4, const V&... cs) {
    const vec_t<N, T>* const v[] = {&c0, &c1, &c2, &c3, &c4, &cs...};
    mat_t<N, 5 + sizeof...(V), T> m;
    for (unsigned k = 0; k < 5 + sizeof...(V); ++k)
        for (unsigned i = 0; i < N; ++i)
            m.data[i][k] = v[k]->c[i];
    return m;
}
template <unsigned N, typename T, typename... V>
TREADLE_FUNC mat_t<5 + sizeof...(V), N, T> matrix_from_rows(const vec_t<N, T>& r0, const vec_t<N, T>& r1,
                                                             const vec_t<N, T>& r2, const vec_t<N, T>& r3,
                                                             const vec_t<N, T>& r4, const V&... rs) {
    const vec_t<N, T>* const v[] = {&r0, &r1, &r2, &r3, &r4, &rs...};
    mat_t<5 + sizeof...(V), N, T> m;
    for (unsigned k = 0; k < 5 + sizeof...(V); ++k)
        for (unsigned j = 0; j < N; ++j)
            m.data[k][j] = v[k]->c[j];
    return m;
}
// The adjoints take K inputs, K input adjoints and the result's adjoint: 2K + 1 arguments, walked by address (a
// pack cannot be split in two without a helper per arity). The fixed-arity forms are more specialised, so this one
// only serves K >= 5.
template <unsigned N, typename T, typename... A>
TREADLE_FUNC void adj_matrix_from_cols(const vec_t<N, T>& c0, A&... rest) {
    constexpr unsigned K = (sizeof...(A) + 1) / 2;
    const void* const p[] = {&c0, &rest...};
    const mat_t<N, K, T>& g = *static_cast<const mat_t<N, K, T>*>(p[2 * K]);
    for (unsigned k = 0; k < K; ++k)
        detail::add_col(g, k, *static_cast<vec_t<N, T>*>(const_cast<void*>(p[K + k])));
}
template <unsigned N, typename T, typename... A>
TREADLE_FUNC void adj_matrix_from_rows(const vec_t<N, T>& r0, A&... rest) {
    constexpr unsigned K = (sizeof...(A) + 1) / 2;
    const void* const p[] = {&r0, &rest...};
    const mat_t<K, N, T>& g = *static_cast<const mat_t<K, N, T>*>(p[2 * K]);
    for (unsigned k = 0; k < K; ++k)
        detail::add_row(g, k, *static_cast<vec_t<N, T>*>(const_cast<void*>(p[K + k])));
}

// ------------------------------------------------------------------------------------------------ element access
TREADLE_MAT_T vec_t<C, T> extract(const mat_t<R, C, T>& m, int32 i) {
    TREADLE_CHECK_COMPONENT(i, R)
    return vec_t<C, T>(m.data[i]);
}
template <unsigned R, unsigned C, typename T, typename I>
TREADLE_FUNC void adj_extract(const mat_t<R, C, T>&, I i, mat_t<R, C, T>& adj_m, I&, const vec_t<C, T>& adj_ret) {
    TREADLE_CHECK_COMPONENT(i, R)
    for (unsigned j = 0; j < C; ++j)
        adj_m.data[i][j] += adj_ret.c[j];
}
TREADLE_MAT_T T extract(const mat_t<R, C, T>& m, int32 i, int32 j) {
    TREADLE_CHECK_COMPONENT(i, R)
    TREADLE_CHECK_COMPONENT(j, C)
    return m.data[i][j];
}
template <unsigned R, unsigned C, typename T, typename I>
TREADLE_FUNC void adj_extract(const mat_t<R, C, T>&, I i, I j, mat_t<R, C, T>& adj_m, I&, I&, const T& adj_ret) {
    TREADLE_CHECK_COMPONENT(i, R)
    TREADLE_CHECK_COMPONENT(j, C)
    adj_m.data[i][j] += adj_ret;
}

// Functional updates: copies of `m` with row i (or element i, j) replaced.
TREADLE_MAT_T mat_t<R, C, T> insert(const mat_t<R, C, T>& m, int32 i, const vec_t<C, T>& row) {
    TREADLE_CHECK_COMPONENT(i, R)
    mat_t<R, C, T> r = m;
    for (unsigned j = 0; j < C; ++j)
        r.data[i][j] = row.c[j];
    return r;
}
template <unsigned R, unsigned C, typename T, typename I>
TREADLE_FUNC void adj_insert(const mat_t<R, C, T>&, I i, const vec_t<C, T>&, mat_t<R, C, T>& adj_m, I&,
                             vec_t<C, T>& adj_row, const mat_t<R, C, T>& adj_ret) {
    TREADLE_CHECK_COMPONENT(i, R)
    TREADLE_MAT_LOOP(k, j) {
        if (k == (unsigned)i)
            adj_row.c[j] += adj_ret.data[k][j];
        else
            adj_m.data[k][j] += adj_ret.data[k][j];
    }
}
TREADLE_MAT_T mat_t<R, C, T> insert(const mat_t<R, C, T>& m, int32 i, int32 j, TREADLE_SCALAR(T) x) {
    TREADLE_CHECK_COMPONENT(i, R)
    TREADLE_CHECK_COMPONENT(j, C)
    mat_t<R, C, T> r = m;
    r.data[i][j] = x;
    return r;
}
template <unsigned R, unsigned C, typename T, typename I>
TREADLE_FUNC void adj_insert(const mat_t<R, C, T>&, I i, I j, T, mat_t<R, C, T>& adj_m, I&, I&, T& adj_x,
                             const mat_t<R, C, T>& adj_ret) {
    TREADLE_CHECK_COMPONENT(i, R)
    TREADLE_CHECK_COMPONENT(j, C)
    TREADLE_MAT_LOOP(k, l) {
        if (k == (unsigned)i && l == (unsigned)j)
            adj_x += adj_ret.data[k][l];
        else
            adj_m.data[k][l] += adj_ret.data[k][l];
    }
}

TREADLE_MAT_T bool equal(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return a == b; }
TREADLE_MAT_T void adj_equal(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>&, mat_t<R, C, T>&,
                             const bool&) {}

TREADLE_MAT_T mat_t<R, C, T> lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, TREADLE_SCALAR(T) t) {
    return a * T(T(1) - t) + b * t;
}
TREADLE_MAT_T void adj_lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t, mat_t<R, C, T>& adj_a,
                            mat_t<R, C, T>& adj_b, T& adj_t, const mat_t<R, C, T>& adj_ret) {
    adj_a += adj_ret * T(T(1) - t);
    adj_b += adj_ret * t;
    adj_t += ddot(b - a, adj_ret);
}

TREADLE_MAT_T bool isfinite(const mat_t<R, C, T>& a) {
    TREADLE_MAT_LOOP(i, j) if (!isfinite(a.data[i][j])) return false;
    return true;
}
TREADLE_MAT_T bool isnan(const mat_t<R, C, T>& a) {
    TREADLE_MAT_LOOP(i, j) if (isnan(a.data[i][j])) return true;
    return false;
}
TREADLE_MAT_T bool isinf(const mat_t<R, C, T>& a) {
    TREADLE_MAT_LOOP(i, j) if (isinf(a.data[i][j])) return true;
    return false;
}

}  // namespace treadle
