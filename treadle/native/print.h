// print() and the expect_* checks, in the reference's output format:
//   scalars: floats "%g", integers in their natural format, bool "True"/"False";
//   vectors: each component followed by a space ("1 2.5 3 "); matrices: one such line per row.
// On the host a whole print is formatted into a buffer and written with one call, so lines printed by different
// threads do not interleave; stdout is flushed after each print.
#pragma once
#include "mat.h"

// Number of failed expect_* checks, read by the runtime (on the host: weak, so every translation unit of a module
// shares one definition).
#if defined(TREADLE_CUDA)
extern "C" {
__device__ int treadle_expect_failures = 0;
}
#else
extern "C" {
__attribute__((weak, visibility("default"))) int treadle_expect_failures = 0;
}
#endif

namespace treadle {
namespace detail {

struct out_buf {
#if defined(__CUDA_ARCH__)
    template <typename V> TREADLE_FUNC void put(const char* fmt, V v) { printf(fmt, v); }
    TREADLE_FUNC void flush() {}
#else
    char buf[1024];
    int pos = 0;
    template <typename V> void put(const char* fmt, V v) {
        if (pos < (int)sizeof(buf) - 1) {
            const int n = snprintf(buf + pos, sizeof(buf) - pos, fmt, v);
            if (n > 0)
                pos = pos + n < (int)sizeof(buf) - 1 ? pos + n : (int)sizeof(buf) - 1;
        }
    }
    void flush() {
        fputs(buf, stdout);
        fflush(stdout);
        pos = 0;
        buf[0] = 0;
    }
    out_buf() { buf[0] = 0; }
#endif
};

TREADLE_FUNC void put_value(out_buf& o, bool x) { o.put("%s", x ? "True" : "False"); }
TREADLE_FUNC void put_value(out_buf& o, int8 x) { o.put("%d", (int)x); }
TREADLE_FUNC void put_value(out_buf& o, uint8 x) { o.put("%u", (unsigned)x); }
TREADLE_FUNC void put_value(out_buf& o, int16 x) { o.put("%d", (int)x); }
TREADLE_FUNC void put_value(out_buf& o, uint16 x) { o.put("%u", (unsigned)x); }
TREADLE_FUNC void put_value(out_buf& o, int32 x) { o.put("%d", x); }
TREADLE_FUNC void put_value(out_buf& o, uint32 x) { o.put("%u", x); }
TREADLE_FUNC void put_value(out_buf& o, int64 x) { o.put("%lld", x); }
TREADLE_FUNC void put_value(out_buf& o, uint64 x) { o.put("%llu", x); }
TREADLE_FUNC void put_value(out_buf& o, float32 x) { o.put("%g", (double)x); }
TREADLE_FUNC void put_value(out_buf& o, float64 x) { o.put("%g", x); }
TREADLE_FUNC void put_value(out_buf& o, half x) { o.put("%g", (double)float(x)); }
TREADLE_FUNC void put_value(out_buf& o, const char* s) { o.put("%s", s); }
template <unsigned N, typename T> TREADLE_FUNC void put_value(out_buf& o, const vec_t<N, T>& v) {
    for (unsigned i = 0; i < N; ++i) {
        put_value(o, v.c[i]);
        o.put("%s", " ");
    }
}
template <unsigned R, unsigned C, typename T> TREADLE_FUNC void put_value(out_buf& o, const mat_t<R, C, T>& m) {
    for (unsigned i = 0; i < R; ++i) {
        if (i)
            o.put("%s", "\n");
        for (unsigned j = 0; j < C; ++j) {
            put_value(o, m.data[i][j]);
            o.put("%s", " ");
        }
    }
}

TREADLE_FUNC void count_expect_failure() {
#if defined(__CUDA_ARCH__)
    atomicAdd(&treadle_expect_failures, 1);
#else
    __atomic_fetch_add(&treadle_expect_failures, 1, __ATOMIC_RELAXED);
#endif
}

// Largest absolute componentwise difference (as double, for the report).
template <typename T> TREADLE_FUNC double max_abs_diff(const T& a, const T& b) {
    const double d = double(a) - double(b);
    return d < 0 ? -d : d;
}
template <unsigned N, typename T> TREADLE_FUNC double max_abs_diff(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    double m = 0.0;
    for (unsigned i = 0; i < N; ++i) {
        const double d = max_abs_diff(a.c[i], b.c[i]);
        m = d > m || d != d ? d : m;
    }
    return m;
}
template <unsigned R, unsigned C, typename T>
TREADLE_FUNC double max_abs_diff(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    double m = 0.0;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) {
            const double d = max_abs_diff(a.data[i][j], b.data[i][j]);
            m = d > m || d != d ? d : m;
        }
    return m;
}
template <typename T> struct is_composite { static constexpr bool value = false; };
template <unsigned N, typename T> struct is_composite<vec_t<N, T>> { static constexpr bool value = true; };
template <unsigned R, unsigned C, typename T> struct is_composite<mat_t<R, C, T>> {
    static constexpr bool value = true;
};

template <typename T> TREADLE_FUNC void report_expect(const char* name, const T& actual, const T& expected) {
    count_expect_failure();
    out_buf o;
    o.put("Error, %s() failed:\n\t Expected: ", name);
    put_value(o, expected);
    o.put("%s", "\n\t Actual: ");
    put_value(o, actual);
    o.put("%s", "\n");
    o.flush();
}

}  // namespace detail

template <typename T> TREADLE_FUNC void print(const T& x) {
    detail::out_buf o;
    detail::put_value(o, x);
    o.put("%s", "\n");
    o.flush();
}
TREADLE_FUNC void print(const char* s) {
    detail::out_buf o;
    o.put("%s\n", s);
    o.flush();
}
template <typename T> TREADLE_FUNC void adj_print(const T&, T&) {}

// expect_eq(actual, expected): reports when they differ (componentwise ==, so NaN never equals).
template <typename T> TREADLE_FUNC void expect_eq(const T& actual, const T& expected) {
    if (!(actual == expected))
        detail::report_expect("expect_eq", actual, expected);
}
template <typename T> TREADLE_FUNC void expect_neq(const T& actual, const T& expected) {
    if (actual == expected)
        detail::report_expect("expect_neq", actual, expected);
}
// expect_near(actual, expected, tolerance): reports when any |actual - expected| component exceeds the tolerance.
template <typename T, typename F> TREADLE_FUNC void expect_near(const T& actual, const T& expected, F tolerance) {
    const double d = detail::max_abs_diff(actual, expected);
    const double tol = double(tolerance);
    if (d <= tol)
        return;
    detail::count_expect_failure();
    detail::out_buf o;
    o.put("Error, expect_near() failed with tolerance %g\n    Expected: ", tol);
    detail::put_value(o, expected);
    o.put("%s", "\n    Actual: ");
    detail::put_value(o, actual);
    o.put(detail::is_composite<T>::value ? "\n    Max absolute difference: %g\n" : "\n    Absolute difference: %g\n",
          d);
    o.flush();
}
template <typename T> TREADLE_FUNC void adj_expect_eq(const T&, const T&, T&, T&) {}
template <typename T> TREADLE_FUNC void adj_expect_neq(const T&, const T&, T&, T&) {}
template <typename T, typename F> TREADLE_FUNC void adj_expect_near(const T&, const T&, F, T&, T&, F&) {}

}  // namespace treadle
