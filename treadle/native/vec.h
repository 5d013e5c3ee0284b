// Fixed-size vectors `vec_t<N, T>` (exactly N * sizeof(T) bytes, no padding) and their builtins, each forward
// function followed by its adjoint (same convention as scalar.h).
#pragma once
#include "scalar.h"

namespace treadle {

template <unsigned N, typename T> struct vec_t {
    T c[N];

    TREADLE_FUNC vec_t() : c() {}
    TREADLE_FUNC explicit vec_t(T s) {
        for (unsigned i = 0; i < N; ++i)
            c[i] = s;
    }
    // From exactly N components (N >= 2); trailing arguments of another scalar type are converted.
    template <typename... A> TREADLE_FUNC vec_t(T x0, T x1, A... rest) {
        static_assert(sizeof...(A) + 2 == N, "vec_t: wrong number of components");
        const T tmp[N] = {x0, x1, T(rest)...};
        for (unsigned i = 0; i < N; ++i)
            c[i] = tmp[i];
    }
    // From N consecutive values (a template so that a literal 0 does not select it).
    template <typename P, typename detail::enable_if<detail::is_same<P, T>::value, int>::type = 0>
    TREADLE_FUNC explicit vec_t(const P* p) {
        for (unsigned i = 0; i < N; ++i)
            c[i] = p[i];
    }
    template <typename U> TREADLE_FUNC explicit vec_t(const vec_t<N, U>& o) {
        for (unsigned i = 0; i < N; ++i)
            c[i] = static_cast<T>(o.c[i]);
    }

    TREADLE_FUNC T& operator[](int i) { return c[i]; }
    TREADLE_FUNC const T& operator[](int i) const { return c[i]; }
};

namespace detail {
template <unsigned N, typename T> struct scalar_of<vec_t<N, T>> { typedef T type; };
}  // namespace detail

// ------------------------------------------------------------------------------------------------ operators
#define TREADLE_VEC_T template <unsigned N, typename T> TREADLE_FUNC
#define TREADLE_SCALAR(T) typename detail::identity<T>::type

TREADLE_VEC_T vec_t<N, T> operator+(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(a.c[i] + b.c[i]);
    return r;
}
TREADLE_VEC_T vec_t<N, T> operator-(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(a.c[i] - b.c[i]);
    return r;
}
TREADLE_VEC_T vec_t<N, T> operator-(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(-a.c[i]);
    return r;
}
TREADLE_VEC_T vec_t<N, T> operator*(const vec_t<N, T>& a, TREADLE_SCALAR(T) s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(a.c[i] * s);
    return r;
}
TREADLE_VEC_T vec_t<N, T> operator*(TREADLE_SCALAR(T) s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(s * a.c[i]);
    return r;
}
TREADLE_VEC_T vec_t<N, T> operator/(const vec_t<N, T>& a, TREADLE_SCALAR(T) s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(a.c[i] / s);
    return r;
}
TREADLE_VEC_T vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i)
        a.c[i] += b.c[i];
    return a;
}
TREADLE_VEC_T vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i)
        a.c[i] -= b.c[i];
    return a;
}
TREADLE_VEC_T vec_t<N, T>& operator*=(vec_t<N, T>& a, TREADLE_SCALAR(T) s) {
    for (unsigned i = 0; i < N; ++i)
        a.c[i] *= s;
    return a;
}
TREADLE_VEC_T vec_t<N, T>& operator/=(vec_t<N, T>& a, TREADLE_SCALAR(T) s) {
    for (unsigned i = 0; i < N; ++i)
        a.c[i] /= s;
    return a;
}
TREADLE_VEC_T bool operator==(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i)
        if (!(a.c[i] == b.c[i]))
            return false;
    return true;
}
TREADLE_VEC_T bool operator!=(const vec_t<N, T>& a, const vec_t<N, T>& b) { return !(a == b); }

// ------------------------------------------------------------------------------------------------ arithmetic
// adj_add, adj_sub, adj_pos and adj_neg of scalar.h serve vectors too (they only use += and -=).
TREADLE_VEC_T vec_t<N, T> add(const vec_t<N, T>& a, const vec_t<N, T>& b) { return a + b; }
TREADLE_VEC_T vec_t<N, T> sub(const vec_t<N, T>& a, const vec_t<N, T>& b) { return a - b; }
TREADLE_VEC_T vec_t<N, T> neg(const vec_t<N, T>& a) { return -a; }
TREADLE_VEC_T vec_t<N, T> pos(const vec_t<N, T>& a) { return a; }

TREADLE_VEC_T T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    T s = T(a.c[0] * b.c[0]);
    for (unsigned i = 1; i < N; ++i)
        s = T(s + a.c[i] * b.c[i]);
    return s;
}
TREADLE_VEC_T void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                           const T& adj_ret) {
    adj_a += b * adj_ret;
    adj_b += a * adj_ret;
}

TREADLE_VEC_T vec_t<N, T> mul(const vec_t<N, T>& a, TREADLE_SCALAR(T) s) { return a * s; }
TREADLE_VEC_T vec_t<N, T> mul(TREADLE_SCALAR(T) s, const vec_t<N, T>& a) { return s * a; }
TREADLE_VEC_T void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    adj_a += adj_ret * s;
    adj_s += dot(a, adj_ret);
}
TREADLE_VEC_T void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    adj_a += adj_ret * s;
    adj_s += dot(a, adj_ret);
}

TREADLE_VEC_T vec_t<N, T> div(const vec_t<N, T>& a, TREADLE_SCALAR(T) s) { return a / s; }
TREADLE_VEC_T void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    adj_a += adj_ret / s;
    adj_s -= dot(a, adj_ret) / (s * s);
}
// Scalar divided by each component.
TREADLE_VEC_T vec_t<N, T> div(TREADLE_SCALAR(T) s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(s / a.c[i]);
    return r;
}
TREADLE_VEC_T void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) {
        adj_s += adj_ret.c[i] / a.c[i];
        adj_a.c[i] -= adj_ret.c[i] * s / (a.c[i] * a.c[i]);
    }
}

TREADLE_VEC_T vec_t<N, T> cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(a.c[i] * b.c[i]);
    return r;
}
TREADLE_VEC_T void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                              const vec_t<N, T>& adj_ret) {
    adj_a += cw_mul(b, adj_ret);
    adj_b += cw_mul(a, adj_ret);
}

TREADLE_VEC_T vec_t<N, T> cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = T(a.c[i] / b.c[i]);
    return r;
}
TREADLE_VEC_T void adj_cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                              const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) {
        adj_a.c[i] += adj_ret.c[i] / b.c[i];
        adj_b.c[i] -= adj_ret.c[i] * a.c[i] / (b.c[i] * b.c[i]);
    }
}

// mod on vectors: componentwise, with the scalar mod's semantics (C remainder; fmod for floats).
TREADLE_VEC_T vec_t<N, T> mod(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = mod(a.c[i], b.c[i]);
    return r;
}
TREADLE_VEC_T void adj_mod(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                           const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_mod(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

// Bitwise operators on integer vectors: componentwise (no gradient, like their scalar forms).
#define TREADLE_VEC_BITWISE2(name)                                                                                \
    TREADLE_VEC_T vec_t<N, T> name(const vec_t<N, T>& a, const vec_t<N, T>& b) {                                 \
        vec_t<N, T> r;                                                                                            \
        for (unsigned i = 0; i < N; ++i)                                                                          \
            r.c[i] = name(a.c[i], b.c[i]);                                                                        \
        return r;                                                                                                 \
    }
TREADLE_VEC_BITWISE2(bit_and)
TREADLE_VEC_BITWISE2(bit_or)
TREADLE_VEC_BITWISE2(bit_xor)
TREADLE_VEC_BITWISE2(lshift)
TREADLE_VEC_BITWISE2(rshift)
#undef TREADLE_VEC_BITWISE2
TREADLE_VEC_T vec_t<N, T> invert(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = invert(a.c[i]);
    return r;
}

// ------------------------------------------------------------------------------------------------ geometry
template <typename T> TREADLE_FUNC vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return vec_t<3, T>(T(a.c[1] * b.c[2] - a.c[2] * b.c[1]), T(a.c[2] * b.c[0] - a.c[0] * b.c[2]),
                       T(a.c[0] * b.c[1] - a.c[1] * b.c[0]));
}
template <typename T>
TREADLE_FUNC void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b,
                            const vec_t<3, T>& adj_ret) {
    adj_a += cross(b, adj_ret);
    adj_b += cross(adj_ret, a);
}

TREADLE_VEC_T T length_sq(const vec_t<N, T>& a) { return dot(a, a); }
TREADLE_VEC_T void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    adj_a += a * T(T(2) * adj_ret);
}

TREADLE_VEC_T T length(const vec_t<N, T>& a) { return sqrt(dot(a, a)); }
TREADLE_VEC_T void adj_length(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    const T l = length(a);
    if (l > T(0))
        adj_a += a * T(adj_ret / l);
}

// The zero vector normalizes to zero (no NaNs).
TREADLE_VEC_T vec_t<N, T> normalize(const vec_t<N, T>& a) {
    const T l = length(a);
    return l > T(0) ? a / l : vec_t<N, T>();
}
TREADLE_VEC_T void adj_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    const T l = length(a);
    if (l > T(0)) {
        const vec_t<N, T> n = a / l;  // d(a/|a|) = (I - n n^T) / |a|
        adj_a += (adj_ret - n * dot(n, adj_ret)) / l;
    }
}

// ------------------------------------------------------------------------------------------------ elementwise
TREADLE_VEC_T vec_t<N, T> min(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = min(a.c[i], b.c[i]);
    return r;
}
TREADLE_VEC_T void adj_min(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                           const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_min(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}
TREADLE_VEC_T vec_t<N, T> max(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = max(a.c[i], b.c[i]);
    return r;
}
TREADLE_VEC_T void adj_max(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                           const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_max(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}
TREADLE_VEC_T vec_t<N, T> clamp(const vec_t<N, T>& x, const vec_t<N, T>& lo, const vec_t<N, T>& hi) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = clamp(x.c[i], lo.c[i], hi.c[i]);
    return r;
}
TREADLE_VEC_T void adj_clamp(const vec_t<N, T>& x, const vec_t<N, T>& lo, const vec_t<N, T>& hi, vec_t<N, T>& adj_x,
                             vec_t<N, T>& adj_lo, vec_t<N, T>& adj_hi, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_clamp(x.c[i], lo.c[i], hi.c[i], adj_x.c[i], adj_lo.c[i], adj_hi.c[i], adj_ret.c[i]);
}
TREADLE_VEC_T vec_t<N, T> abs(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = abs(a.c[i]);
    return r;
}
TREADLE_VEC_T void adj_abs(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_abs(a.c[i], adj_a.c[i], adj_ret.c[i]);
}
TREADLE_VEC_T vec_t<N, T> sign(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i)
        r.c[i] = sign(a.c[i]);
    return r;
}
TREADLE_VEC_T void adj_sign(const vec_t<N, T>&, vec_t<N, T>&, const vec_t<N, T>&) {}

TREADLE_VEC_T vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, TREADLE_SCALAR(T) t) {
    return a * T(T(1) - t) + b * t;
}
TREADLE_VEC_T void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                            T& adj_t, const vec_t<N, T>& adj_ret) {
    adj_a += adj_ret * T(T(1) - t);
    adj_b += adj_ret * t;
    adj_t += dot(b - a, adj_ret);
}

// Classification over all components: isfinite = all finite, isnan / isinf = any.
TREADLE_VEC_T bool isfinite(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i)
        if (!isfinite(a.c[i]))
            return false;
    return true;
}
TREADLE_VEC_T bool isnan(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i)
        if (isnan(a.c[i]))
            return true;
    return false;
}
TREADLE_VEC_T bool isinf(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i)
        if (isinf(a.c[i]))
            return true;
    return false;
}

// ------------------------------------------------------------------------------------------------ reductions
// min(v) / max(v): the smallest / largest component (NaN components are skipped, as fmin/fmax do; NaN only when
// every component is); the gradient goes to the first such component.
TREADLE_VEC_T uint32 argmin(const vec_t<N, T>& a) {
    uint32 k = 0;
    for (unsigned i = 1; i < N; ++i)
        if (a.c[i] < a.c[k] || a.c[k] != a.c[k])
            k = i;
    return a.c[k] != a.c[k] ? 0u : k;
}
TREADLE_VEC_T uint32 argmax(const vec_t<N, T>& a) {
    uint32 k = 0;
    for (unsigned i = 1; i < N; ++i)
        if (a.c[i] > a.c[k] || a.c[k] != a.c[k])
            k = i;
    return a.c[k] != a.c[k] ? 0u : k;
}
TREADLE_VEC_T void adj_argmin(const vec_t<N, T>&, vec_t<N, T>&, const uint32&) {}
TREADLE_VEC_T void adj_argmax(const vec_t<N, T>&, vec_t<N, T>&, const uint32&) {}
TREADLE_VEC_T T min(const vec_t<N, T>& a) { return a.c[argmin(a)]; }
TREADLE_VEC_T T max(const vec_t<N, T>& a) { return a.c[argmax(a)]; }
TREADLE_VEC_T void adj_min(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    adj_a.c[argmin(a)] += adj_ret;
}
TREADLE_VEC_T void adj_max(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    adj_a.c[argmax(a)] += adj_ret;
}

// ------------------------------------------------------------------------------------------------ component access
// The forward functions take an int32 index (any integer converts); the adjoints accept any integer index type.
#if defined(TREADLE_CHECKED)
#define TREADLE_CHECK_COMPONENT(i, n)                                          \
    if ((unsigned long long)(i) >= (unsigned long long)(n)) {                  \
        treadle_report_oob(-1, (long long)(i), (long long)(n));                \
        i = 0;                                                                 \
    }
#else
#define TREADLE_CHECK_COMPONENT(i, n)
#endif

TREADLE_VEC_T T extract(const vec_t<N, T>& a, int32 i) {
    TREADLE_CHECK_COMPONENT(i, N)
    return a.c[i];
}
template <unsigned N, typename T, typename I>
TREADLE_FUNC void adj_extract(const vec_t<N, T>&, I i, vec_t<N, T>& adj_a, I&, const T& adj_ret) {
    TREADLE_CHECK_COMPONENT(i, N)
    adj_a.c[i] += adj_ret;
}

// Functional update: a copy of `a` with component i set to x.
TREADLE_VEC_T vec_t<N, T> insert(const vec_t<N, T>& a, int32 i, TREADLE_SCALAR(T) x) {
    TREADLE_CHECK_COMPONENT(i, N)
    vec_t<N, T> r = a;
    r.c[i] = x;
    return r;
}
template <unsigned N, typename T, typename I>
TREADLE_FUNC void adj_insert(const vec_t<N, T>&, I i, T, vec_t<N, T>& adj_a, I&, T& adj_x, const vec_t<N, T>& adj_ret) {
    TREADLE_CHECK_COMPONENT(i, N)
    for (unsigned k = 0; k < N; ++k)
        if (k != (unsigned)i)
            adj_a.c[k] += adj_ret.c[k];
    adj_x += adj_ret.c[i];
}

TREADLE_VEC_T bool equal(const vec_t<N, T>& a, const vec_t<N, T>& b) { return a == b; }
TREADLE_VEC_T void adj_equal(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>&, vec_t<N, T>&, const bool&) {}

}  // namespace treadle
