// Test program for treadle/native (driven by test_headers.py). Modes:
//   headers_test            values, adjoints (central differences in float64), half, layout, arrays, atomics
//   headers_test print      prints values in the reference's print format (compared by the Python test)
//   headers_test half IN OUT  converts the float32 and float64 values in IN to float16 bits written to OUT
#include "treadle.h"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

// Inside namespace treadle so that unqualified calls find treadle::sin and not ::sin from <cmath>.
namespace treadle {
namespace tests {

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        ++g_checks;                                                          \
        if (!(cond)) {                                                       \
            ++g_failures;                                                    \
            std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
        }                                                                    \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                               \
    do {                                                                                                    \
        ++g_checks;                                                                                         \
        const double va_ = double(a), vb_ = double(b);                                                      \
        if (!(std::fabs(va_ - vb_) <= (tol))) {                                                             \
            ++g_failures;                                                                                   \
            std::printf("FAIL %s:%d: %s = %.17g, expected %s = %.17g\n", __FILE__, __LINE__, #a, va_, #b, vb_); \
        }                                                                                                   \
    } while (0)

// ------------------------------------------------------------------------------------------------ flattening
// Uniform access to the float64 components of scalars, vectors and matrices, for the gradient checks.
inline int nflat(const double&) { return 1; }
inline double& flat(double& x, int) { return x; }
template <unsigned N> int nflat(const vec_t<N, double>&) { return N; }
template <unsigned N> double& flat(vec_t<N, double>& v, int k) { return v.c[k]; }
template <unsigned R, unsigned C> int nflat(const mat_t<R, C, double>&) { return R * C; }
template <unsigned R, unsigned C> double& flat(mat_t<R, C, double>& m, int k) { return m.data[k / C][k % C]; }

static unsigned g_seed = 12345u;
inline double rnd() {  // deterministic, in [-1, 1)
    g_seed = g_seed * 1664525u + 1013904223u;
    return (g_seed >> 8) / double(1u << 23) - 1.0;
}
template <typename T> T random_like() {
    T x = T();
    for (int k = 0; k < nflat(x); ++k)
        flat(x, k) = rnd();
    return x;
}
template <typename T> double fdot(T a, T b) {
    double s = 0;
    for (int k = 0; k < nflat(a); ++k)
        s += flat(a, k) * flat(b, k);
    return s;
}

// Compares the adjoint of each input with central differences of <g, f(inputs)> for a random output adjoint g.
// The work is done once per signature (grad_check_impl); each call site only adds two small thunks, which keeps
// this file quick to compile.
template <typename Y, typename... X>
void grad_check_impl(const char* name, int line, Y (*fwd)(const void*, const X&...), const void* fctx,
                     void (*adj)(const void*, const std::tuple<X...>&, std::tuple<X...>&, const Y&),
                     const void* actx, std::tuple<X...> xs) {
    const Y g = random_like<Y>();
    std::tuple<X...> adjs{X()...};
    adj(actx, xs, adjs, g);
    const auto objective = [&]() {
        return fdot(std::apply([&](const X&... a) { return fwd(fctx, a...); }, xs), g);
    };
    const double h = 1e-6;
    auto check_input = [&](auto& xi, auto ai) {
        for (int k = 0; k < nflat(xi); ++k) {
            const double x0 = flat(xi, k);
            flat(xi, k) = x0 + h;
            const double fp = objective();
            flat(xi, k) = x0 - h;
            const double fm = objective();
            flat(xi, k) = x0;
            const double fd = (fp - fm) / (2 * h);
            const double an = flat(ai, k);
            ++g_checks;
            if (!(std::fabs(an - fd) <= 1e-6 * (1.0 + std::fabs(fd)))) {
                ++g_failures;
                std::printf("FAIL grad %s (line %d) component %d: adjoint %.12g, finite difference %.12g\n", name,
                            line, k, an, fd);
            }
        }
    };
    std::apply([&](auto&... xi) { std::apply([&](const auto&... ai) { (check_input(xi, ai), ...); }, adjs); }, xs);
}
template <typename Fwd, typename Adj, typename... X>
void grad_check(const char* name, int line, const Fwd& fwd, const Adj& adj, X... x) {
    typedef decltype(fwd(x...)) Y;
    Y (*f)(const void*, const X&...) = [](const void* p, const X&... a) -> Y {
        return (*static_cast<const Fwd*>(p))(a...);
    };
    void (*ad)(const void*, const std::tuple<X...>&, std::tuple<X...>&, const Y&) =
        [](const void* p, const std::tuple<X...>& xs, std::tuple<X...>& as, const Y& r) {
            std::apply([&](const X&... a) { std::apply([&](X&... b) { (*static_cast<const Adj*>(p))(a..., b..., r); }, as); },
                       xs);
        };
    grad_check_impl<Y, X...>(name, line, f, &fwd, ad, &adj, std::tuple<X...>(x...));
}
#define GRAD(fn, ...)                                                                                      \
    grad_check(#fn, __LINE__, [](auto... a) { return fn(a...); },                                         \
               [](auto&&... a) { adj_##fn(a...); }, __VA_ARGS__)

typedef vec_t<2, double> v2d;
typedef vec_t<3, double> v3d;
typedef vec_t<4, double> v4d;
typedef mat_t<2, 2, double> m22d;
typedef mat_t<3, 3, double> m33d;
typedef mat_t<4, 4, double> m44d;
typedef vec_t<3, float> v3f;

// ------------------------------------------------------------------------------------------------ scalar values
static void test_scalar_values() {
    const double pi = 3.14159265358979323846;
    CHECK(sign(-0.0) == 1.0 && sign(0.0f) == 1.0f && sign(-2.5) == -1.0 && sign(-3) == -1 && sign(7u) == 1u);
    CHECK(step(0.0) == 0.0 && step(-1.0f) == 1.0f && step(2) == 0 && step(-2) == 1 && step(3u) == 0u);
    CHECK(nonzero(-0.0) == 0.0 && nonzero(0.5f) == 1.0f && nonzero(-4) == 1 && nonzero(int64(0)) == 0);
    CHECK(round(-2.5) == -3.0 && round(2.5f) == 3.0f && round(-0.5) == -1.0 && round(0.49999997f) == 0.0f);
    CHECK(rint(2.5) == 2.0 && rint(3.5f) == 4.0f && rint(-2.5) == -2.0);
    CHECK(frac(-2.25) == -0.25 && frac(3.75f) == 0.75f && trunc(-2.7) == -2.0 && floor(-2.5f) == -3.0f);
    CHECK(ceil(2.1) == 3.0);
    CHECK(floordiv(-7, 2) == -4 && floordiv(7, -2) == -4 && floordiv(-8, 2) == -4 && floordiv(7, 2) == 3);
    CHECK(floordiv(int8(-7), int8(2)) == int8(-4) && floordiv(7u, 2u) == 3u && floordiv(int64(-9), int64(4)) == -3);
    CHECK(floordiv(-7.0, 2.0) == -4.0 && floordiv(7.5f, 2.0f) == 3.0f);
    CHECK(div(-7, 2) == -3 && div(7, -2) == -3 && div(7.0, 2.0) == 3.5);
    CHECK(mod(-7, 3) == -1 && mod(7, -3) == 1 && mod(-7.5, 2.0) == -1.5 && mod(7.5f, 2.0f) == 1.5f);
    CHECK(add(int8(127), int8(1)) == int8(-128) && sub(uint8(0), uint8(1)) == uint8(255));
    CHECK(mul(int16(300), int16(300)) == int16(24464) && neg(5) == -5 && pos(-5) == -5);
    CHECK(bit_and(12, 10) == 8 && bit_or(12, 10) == 14 && bit_xor(12, 10) == 6 && invert(0) == -1);
    CHECK(lshift(1, 4) == 16 && rshift(-16, 2) == -4 && rshift(16u, 2u) == 4u && invert(uint8(0)) == uint8(255));
    CHECK(bit_and(true, false) == false && bit_or(true, false) == true && bit_xor(true, true) == false);
    CHECK(abs(-3) == 3 && abs(-2.5) == 2.5 && abs(int64(-5)) == 5 && abs(7u) == 7u && abs(-0.0f) == 0.0f);
    CHECK(min(2, 3) == 2 && max(2.0, 3.0) == 3.0 && min(-1.0f, 1.0f) == -1.0f && max(uint64(5), uint64(9)) == 9);
    CHECK(clamp(5, 0, 3) == 3 && clamp(-1.0, 0.0, 1.0) == 0.0 && clamp(0.25f, 0.0f, 1.0f) == 0.25f);
    CHECK(clamp(std::nan(""), 0.0, 1.0) == 0.0);  // fmin(fmax(NaN, lo), hi): the lower bound
    CHECK(min(std::nan(""), 2.0) == 2.0 && min(2.0, std::nan("")) == 2.0 && max(std::nanf(""), -1.0f) == -1.0f);
    CHECK(std::isnan(min(std::nan(""), std::nan(""))) && min(3, 4) == 3 && max(int8(-2), int8(5)) == 5);
    CHECK_NEAR(asin(2.0), pi / 2, 1e-15);
    CHECK_NEAR(acos(-3.0), pi, 1e-15);
    CHECK_NEAR(asin(-1.5f), -pi / 2, 1e-6);
    CHECK_NEAR(atan2(1.0, -1.0), 3 * pi / 4, 1e-15);
    CHECK_NEAR(degrees(pi), 180.0, 1e-12);
    CHECK_NEAR(radians(180.0f), pi, 1e-6);
    CHECK_NEAR(cbrt(-27.0), -3.0, 1e-15);
    CHECK_NEAR(pow(2.0, 10.0), 1024.0, 0.0);
    CHECK_NEAR(log2(8.0f), 3.0, 0.0);
    CHECK_NEAR(log10(1000.0), 3.0, 1e-15);
    CHECK_NEAR(copysign(3.0, -1.0), -3.0, 0.0);
    CHECK_NEAR(copysign(-3.0f, 1.0f), 3.0, 0.0);
    CHECK_NEAR(lerp(1.0, 3.0, 0.25), 1.5, 0.0);
    CHECK_NEAR(smoothstep(0.0, 1.0, 0.25), 0.15625, 1e-15);
    CHECK_NEAR(smoothstep(1.0f, 0.0f, 0.25f), 0.84375, 1e-7);
    CHECK(smoothstep(0.0, 1.0, -3.0) == 0.0 && smoothstep(0.0, 1.0, 3.0) == 1.0);
    CHECK(isnan(std::nan("")) && !isnan(1.0f) && isinf(-INFINITY) && !isinf(1.0) && isfinite(1.0f));
    CHECK(!isfinite(std::nan("")) && isfinite(3) && !isnan(3) && !isinf(int64(3)));
    CHECK(isnan(half(std::nanf(""))) && isinf(half(1e6f)) && isfinite(half(65504.0f)) && !isfinite(half(-1e6f)));

    // error functions and their inverses
    CHECK_NEAR(erfinv(0.5), 0.47693627620446987338, 1e-16);
    CHECK_NEAR(erfcinv(0.5), 0.47693627620446987338, 1e-16);
    CHECK_NEAR(erfinv(0.5f), 0.47693627620446987338, 1e-7);
    CHECK(erfinv(1.0) == INFINITY && erfinv(-1.0) == -INFINITY && std::isnan(erfinv(1.5)));
    CHECK(erfcinv(0.0) == INFINITY && erfcinv(2.0) == -INFINITY && std::isnan(erfcinv(-0.1)));
    CHECK(erfinv(0.0) == 0.0 && erfcinv(1.0) == 0.0);
    for (double x = -0.999999; x < 1.0; x += 0.0123457) {
        ++g_checks;
        if (!(std::fabs(std::erf(erfinv(x)) - x) <= 4e-16 * (1 + std::fabs(x)))) {
            ++g_failures;
            std::printf("FAIL erfinv(%.17g): erf gives %.17g\n", x, std::erf(erfinv(x)));
        }
    }
    for (double z = 1e-300; z < 2.0; z *= 3.7) {
        // erfc is steep in the tail: allow 4 ulp of y propagated through |erfc'(y)|, plus 4 ulp of z
        const double y = erfcinv(z);
        const double tol = 1.1283791670955126 * std::exp(-y * y) * 4 * 2.2e-16 * std::fabs(y) + 4 * 2.2e-16 * z;
        ++g_checks;
        if (!(std::fabs(std::erfc(y) - z) <= tol)) {
            ++g_failures;
            std::printf("FAIL erfcinv(%.17g) = %.17g: erfc gives %.17g\n", z, y, std::erfc(y));
        }
    }
    CHECK_NEAR(erfcinv(1.5), -0.47693627620446987338, 1e-15);

    // float overloads stay float; half computes through float
    static_assert(std::is_same<decltype(sin(1.0f)), float>::value, "sin(float) is float");
    static_assert(std::is_same<decltype(sin(half(1.0f))), half>::value, "sin(half) is half");
    static_assert(std::is_same<decltype(floordiv(1, 2)), int>::value, "floordiv(int, int) is int");
    CHECK_NEAR(float(sin(half(0.5f))), std::sin(0.5), 1e-3);
    CHECK(float(half(2.0f) * half(3.0f) + half(1.0f)) == 7.0f);
    CHECK(float(-half(2.0f)) == -2.0f && half(1.0f) < half(2.0f) && half(0.0f) == half(-0.0f));
    half h(1.0f);
    h += half(0.5f);
    CHECK(float(h) == 1.5f && float(h + 1.0f) == 2.5f && float(round(half(2.5f))) == 3.0f);

    // cast
    CHECK(cast<int32>(-2.7f) == -2 && cast<bool>(0.5) == true && cast<bool>(0) == false);
    CHECK(cast<int32>(half(-2.7f)) == -2 && cast<float32>(half(0.5f)) == 0.5f && cast<float64>(half(0.25f)) == 0.25);
    CHECK(cast<half>(65520.0).u == 0x7c00 && cast<half>(3).u == 0x4200 && cast<uint8>(300) == 44);
    CHECK((cast<vec_t<3, int32>>(v3f(1.5f, -2.5f, 3.0f)) == vec_t<3, int32>(1, -2, 3)));
    double adj_d = 0;
    adj_cast<float>(1.0, adj_d, 2.0f);
    int32 adj_i = 0;
    float adj_f = 0.0f;
    adj_cast<int32>(1.0f, adj_f, 5);  // float -> int: no gradient
    adj_cast<float>(3, adj_i, 2.0f);  // int -> float: no gradient to the int
    CHECK(adj_d == 2.0 && adj_i == 0 && adj_f == 0.0f);
}

// ------------------------------------------------------------------------------------------------ vec / mat values
static void test_vec_mat_values() {
    const v3f a(1.0f, 2.0f, 3.0f), b(4.0f, 5.0f, 6.0f);
    CHECK(dot(a, b) == 32.0f);
    CHECK((cross(a, b) == v3f(-3.0f, 6.0f, -3.0f)));
    CHECK((normalize(v3f()) == v3f()) && std::fabs(length(normalize(b)) - 1.0f) < 1e-6f);
    CHECK(length_sq(a) == 14.0f && length(vec_t<2, double>(3.0, 4.0)) == 5.0);
    CHECK((mul(a, 2.0f) == v3f(2, 4, 6)) && (mul(2.0f, a) == v3f(2, 4, 6)) && (div(b, 2.0f) == v3f(2, 2.5f, 3)));
    CHECK((div(12.0f, a) == v3f(12, 6, 4)) && (cw_mul(a, b) == v3f(4, 10, 18)) && (cw_div(b, a) == v3f(4, 2.5f, 2)));
    CHECK((add(a, b) == v3f(5, 7, 9)) && (sub(a, b) == v3f(-3, -3, -3)) && (neg(a) == v3f(-1, -2, -3)));
    CHECK((min(a, v3f(3, 1, 3)) == v3f(1, 1, 3)) && (max(a, v3f(3, 1, 3)) == v3f(3, 2, 3)));
    CHECK(min(v3f(3, 1, 2)) == 1.0f && max(v3f(3, 1, 2)) == 3.0f);
    CHECK(argmax(v3f(1, 5, 5)) == 1u && argmin(v3f(1, 1, 5)) == 0u && argmin(v3f(2, 0, -1)) == 2u);
    CHECK((abs(v3f(-1, 2, -3)) == v3f(1, 2, 3)) && (sign(v3f(-1, 0, 2)) == v3f(-1, 1, 1)));
    CHECK((clamp(v3f(-1, 0.5f, 3), v3f(0.0f), v3f(1.0f)) == v3f(0, 0.5f, 1)));
    CHECK(extract(a, 2) == 3.0f && (insert(a, 1, 9.0f) == v3f(1, 9, 3)) && (a == v3f(1, 2, 3)));
    CHECK(equal(a, a) && !equal(a, b) && (a != b));
    CHECK((lerp(a, b, 0.5f) == v3f(2.5f, 3.5f, 4.5f)));
    CHECK(isnan(v3f(0, NAN, 0)) && !isfinite(v3f(0, INFINITY, 0)) && isfinite(a) && isinf(v3f(0, -INFINITY, 0)));
    const float raw[3] = {7, 8, 9};
    CHECK((v3f(raw) == v3f(7, 8, 9)) && (vec_t<3, double>(a) == vec_t<3, double>(1, 2, 3)));
    CHECK((v3f(0) == v3f()) && (v3f(2.0f) == v3f(2, 2, 2)));
    const vec_t<6, float> s6(1, 2, 3, 4, 5, 6.0);
    CHECK(s6[5] == 6.0f && sizeof(s6) == 24);
    const vec_t<3, half> hv(half(1.0f), half(2.0f), 3.0f);
    CHECK(float(dot(hv, hv)) == 14.0f && float(length(vec_t<2, half>(3.0f, 4.0f))) == 5.0f);
    CHECK((vec_t<2, int32>(1, 2) + vec_t<2, int32>(3, 4) == vec_t<2, int32>(4, 6)));

    typedef mat_t<2, 2, float> m22f;
    typedef mat_t<3, 3, float> m33f;
    const m22f m(1, 2, 3, 4);
    CHECK(m.data[0][1] == 2.0f && m[1][0] == 3.0f && determinant(m) == -2.0f && trace(m) == 5.0f);
    CHECK((transpose(m) == m22f(1, 3, 2, 4)) && (mul(m, m) == m22f(7, 10, 15, 22)));
    CHECK((mul(m, vec_t<2, float>(1, 1)) == vec_t<2, float>(3, 7)));
    CHECK((mul(vec_t<2, float>(1, 1), m) == vec_t<2, float>(4, 6)));
    CHECK((inverse(m) == m22f(-2, 1, 1.5f, -0.5f)) && (inverse(m22f(1, 2, 2, 4)) == m22f()));
    CHECK((inverse(m33f()) == m33f()) && ddot(m, m) == 30.0f);
    CHECK((identity<3, float>() == m33f(1, 0, 0, 0, 1, 0, 0, 0, 1)) && (diag(a) == m33f(1, 0, 0, 0, 2, 0, 0, 0, 3)));
    CHECK((get_diag(m) == vec_t<2, float>(1, 4)) && (mul(skew(a), b) == cross(a, b)));
    CHECK((outer(vec_t<2, float>(1, 2), a) == mat_t<2, 3, float>(1, 2, 3, 2, 4, 6)));
    CHECK((matrix_from_cols(a, b) == mat_t<3, 2, float>(1, 4, 2, 5, 3, 6)));
    CHECK((matrix_from_rows(a, b) == mat_t<2, 3, float>(1, 2, 3, 4, 5, 6)));
    CHECK((m22f(vec_t<2, float>(1, 2), vec_t<2, float>(3, 4)) == m));
    CHECK((extract(m, 1) == vec_t<2, float>(3, 4)) && extract(m, 0, 1) == 2.0f);
    CHECK((insert(m, 0, vec_t<2, float>(9, 8)) == m22f(9, 8, 3, 4)) && (insert(m, 1, 1, 7.0f) == m22f(1, 2, 3, 7)));
    CHECK((mul(m, 2.0f) == m22f(2, 4, 6, 8)) && (div(m, 2.0f) == m22f(0.5f, 1, 1.5f, 2)));
    CHECK((cw_mul(m, m) == m22f(1, 4, 9, 16)) && (add(m, m) == mul(2.0f, m)) && (sub(m, m) == m22f()));
    CHECK((mat_t<2, 3, float>(1, 2, 3, 4, 5, 6).data[1][0] == 4.0f) && (m22f(1.5f) == m22f(1.5f, 1.5f, 1.5f, 1.5f)));
    // non-square products and an inverse round trip
    const mat_t<2, 3, double> p(1, 2, 3, 4, 5, 6);
    const mat_t<3, 2, double> q(7, 8, 9, 10, 11, 12);
    CHECK((mul(p, q) == mat_t<2, 2, double>(58, 64, 139, 154)));
    m44d r4;
    for (int k = 0; k < 16; ++k)
        flat(r4, k) = rnd();
    const m44d e4 = mul(r4, inverse(r4)) - identity<4, double>();
    m33d r3 = random_like<m33d>();
    const m33d e3 = mul(inverse(r3), r3) - identity<3, double>();
    CHECK(ddot(e4, e4) < 1e-24 && ddot(e3, e3) < 1e-24);
    CHECK_NEAR(determinant(m44d(2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 1, 0, 0, 5)), 120.0, 1e-12);
    CHECK_NEAR(determinant(m33d(2, -3, 1, 2, 0, -1, 1, 4, 5)), 49.0, 1e-12);
    const mat_t<3, 3, half> mh(half(1.0f), 2.0f, 3.0f, 0.0f, 1.0f, 4.0f, 5.0f, 6.0f, 0.0f);
    CHECK(float(determinant(mh)) == 1.0f);
}

// ------------------------------------------------------------------------------------------------ adjoints
static void test_adjoints() {
    for (double x : {-0.9, -0.3, 0.2, 0.7}) {
        GRAD(sin, x);
        GRAD(cos, x);
        GRAD(tan, x);
        GRAD(asin, x);
        GRAD(acos, x);
        GRAD(atan, x);
        GRAD(sinh, x);
        GRAD(cosh, x);
        GRAD(tanh, x);
        GRAD(exp, x);
        GRAD(erf, x);
        GRAD(erfc, x);
        GRAD(erfinv, x);
        GRAD(erfcinv, x + 1.0);
        GRAD(degrees, x);
        GRAD(radians, x);
        GRAD(abs, x);
        GRAD(frac, x + 2.0);
        GRAD(cbrt, x);
        GRAD(neg, x);
        GRAD(pos, x);
        GRAD(log, x + 1.0);
        GRAD(log2, x + 1.0);
        GRAD(log10, x + 1.0);
        GRAD(sqrt, x + 1.0);
        GRAD(pow, x + 1.5, x * 3.0);
        GRAD(atan2, x, 0.4);
        GRAD(atan2, 0.3, x);
        GRAD(add, x, 0.3);
        GRAD(sub, x, 0.3);
        GRAD(mul, x, 0.3);
        GRAD(div, x, 0.3);
        GRAD(mod, x * 5.0, 0.65);
        GRAD(min, x, 0.1);
        GRAD(max, x, 0.1);
        GRAD(copysign, x, -0.5);
        GRAD(lerp, x, 0.4, 0.3);
        GRAD(smoothstep, -1.0, 1.2, x);
        GRAD(smoothstep, 1.0, -1.0, x);
        GRAD(clamp, x, -0.5, 0.5);
    }
    // vectors
    for (int rep = 0; rep < 3; ++rep) {
        const v3d a = random_like<v3d>(), b = random_like<v3d>();
        const double s = rnd() + 2.0;
        GRAD(dot, a, b);
        GRAD(cross, a, b);
        GRAD(length, a);
        GRAD(length_sq, a);
        GRAD(normalize, a);
        GRAD(mul, a, s);
        GRAD(mul, s, a);
        GRAD(div, a, s);
        GRAD(div, s, v3d(a + v3d(3.0)));
        GRAD(cw_mul, a, b);
        GRAD(cw_div, a, v3d(b + v3d(3.0)));
        GRAD(add, a, b);
        GRAD(sub, a, b);
        GRAD(neg, a);
        GRAD(lerp, a, b, s);
        GRAD(min, a, b);
        GRAD(max, a, b);
        GRAD(min, a);
        GRAD(max, a);
        GRAD(abs, a);
        GRAD(normalize, random_like<v4d>());
        grad_check("extract", __LINE__, [](v3d v) { return extract(v, 1); },
                   [](v3d v, v3d& av, double g) { int32 ai = 0; adj_extract(v, 1, av, ai, g); }, a);
        grad_check("insert", __LINE__, [](v3d v, double x) { return insert(v, 2, x); },
                   [](v3d v, double x, v3d& av, double& ax, const v3d& g) {
                       int32 ai = 0;
                       adj_insert(v, 2, x, av, ai, ax, g);
                   },
                   a, s);
    }
    // matrices
    for (int rep = 0; rep < 3; ++rep) {
        const m22d a2 = random_like<m22d>();
        const m33d a3 = random_like<m33d>(), b3 = random_like<m33d>();
        const m44d a4 = random_like<m44d>();
        const v3d v = random_like<v3d>();
        GRAD(determinant, a2);
        GRAD(determinant, a3);
        GRAD(determinant, a4);
        GRAD(inverse, a2);
        GRAD(inverse, a3);
        GRAD(inverse, a4);
        GRAD(mul, a3, v);
        GRAD(mul, v, a3);
        GRAD(mul, a3, b3);
        GRAD(mul, random_like<mat_t<2, 3, double>>(), random_like<mat_t<3, 4, double>>());
        GRAD(mul, random_like<mat_t<2, 3, double>>(), v);
        GRAD(mul, a3, 1.5);
        GRAD(mul, 1.5, a3);
        GRAD(div, a3, 1.5);
        GRAD(add, a3, b3);
        GRAD(sub, a3, b3);
        GRAD(neg, a3);
        GRAD(transpose, random_like<mat_t<2, 3, double>>());
        GRAD(trace, a3);
        GRAD(ddot, a3, b3);
        GRAD(outer, v, random_like<v2d>());
        GRAD(skew, v);
        GRAD(diag, v);
        GRAD(get_diag, a3);
        GRAD(cw_mul, a3, b3);
        GRAD(cw_div, a3, m33d(b3 + m33d(3.0)));
        GRAD(lerp, a3, b3, 0.3);
        GRAD(matrix_from_cols, v, random_like<v3d>());
        GRAD(matrix_from_cols, v, v, random_like<v3d>(), random_like<v3d>());
        GRAD(matrix_from_rows, v, random_like<v3d>(), v);
        grad_check("extract_row", __LINE__, [](m33d m) { return extract(m, 1); },
                   [](m33d m, m33d& am, const v3d& g) { int32 ai = 0; adj_extract(m, 1, am, ai, g); }, a3);
        grad_check("extract_ij", __LINE__, [](m33d m) { return extract(m, 2, 1); },
                   [](m33d m, m33d& am, double g) { int32 ai = 0, aj = 0; adj_extract(m, 2, 1, am, ai, aj, g); }, a3);
        grad_check("insert_row", __LINE__, [](m33d m, v3d r) { return insert(m, 0, r); },
                   [](m33d m, v3d r, m33d& am, v3d& ar, const m33d& g) {
                       int32 ai = 0;
                       adj_insert(m, 0, r, am, ai, ar, g);
                   },
                   a3, v);
        grad_check("insert_ij", __LINE__, [](m33d m, double x) { return insert(m, 1, 2, x); },
                   [](m33d m, double x, m33d& am, double& ax, const m33d& g) {
                       int32 ai = 0, aj = 0;
                       adj_insert(m, 1, 2, x, am, ai, aj, ax, g);
                   },
                   a3, 0.5);
    }
    // determinant gradient of a singular matrix is the (finite) cofactor matrix
    m33d sing(1, 2, 3, 2, 4, 6, 1, 0, 1), adj_sing;
    adj_determinant(sing, adj_sing, 1.0);
    CHECK(isfinite(adj_sing) && adj_sing.data[2][2] == 0.0 && adj_sing.data[0][0] == 4.0);
    double px = 0, py = 0;
    adj_pow(-0.5, 3.0, px, py, 1.0);  // negative base: gradient to x only
    CHECK_NEAR(px, 0.75, 1e-15);
    CHECK(py == 0.0);
    // gradients are accumulated, not assigned
    double ax = 1.0;
    adj_sin(0.0, ax, 1.0);
    CHECK(ax == 2.0);
    // no NaN/inf from the clamped and guarded cases
    double g0 = 0, g1 = 0;
    adj_acos(1.0, g0, 1.0);
    adj_pow(0.0, 2.0, g0, g1, 1.0);
    v3d an;
    adj_normalize(v3d(), an, v3d(1.0));
    CHECK(g0 == 0.0 && g1 == 0.0 && (an == v3d()));
}

// ------------------------------------------------------------------------------------------------ half conversions
static void test_half_roundtrip() {
    int bad = 0;
    for (uint32 b = 0; b < 65536; ++b) {
        const half h = half::from_bits((uint16)b);
        const float f = float(h);
        const half back_f(f), back_d((double)f);
        const bool is_nan = (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0;
        if (is_nan) {
            if (!std::isnan(f) || !isnan(back_f) || !isnan(back_d))
                ++bad;
        } else if (back_f.u != b || back_d.u != b || double(h) != (double)f) {
            ++bad;
        }
    }
    ++g_checks;
    if (bad) {
        ++g_failures;
        std::printf("FAIL half round trip: %d bit patterns\n", bad);
    }
    // ties go to even, just off a tie goes to the nearer value (float and double paths)
    bad = 0;
    for (uint32 b = 0; b < 0x7bff; ++b) {
        const float lo = float(half::from_bits((uint16)b)), hi = float(half::from_bits((uint16)(b + 1)));
        const float mid = 0.5f * (lo + hi);  // exact
        const uint16 even = (b & 1) ? (uint16)(b + 1) : (uint16)b;
        if (half(mid).u != even || half((double)mid).u != even)
            ++bad;
        if (half(std::nextafter(mid, 1e9f)).u != b + 1 || half(std::nextafter(mid, 0.0f)).u != b)
            ++bad;
        if (half(std::nextafter((double)mid, 1e9)).u != b + 1 || half(std::nextafter((double)mid, 0.0)).u != b)
            ++bad;
        if (half(-mid).u != (even | 0x8000u))
            ++bad;
    }
    ++g_checks;
    if (bad) {
        ++g_failures;
        std::printf("FAIL half rounding: %d cases\n", bad);
    }
    CHECK(half(65519.0f).u == 0x7bff && half(65520.0f).u == 0x7c00 && half(-1e30).u == 0xfc00);
    CHECK(half(2.9802322387695312e-8f).u == 0 && half(2.9802326e-8f).u == 1 && half(1e-30).u == 0);
    CHECK(half(-0.0f).u == 0x8000 && half(INFINITY).u == 0x7c00 && half(5.9604644775390625e-8).u == 1);
}

// Converts the values of a file (uint32 count, float32[count], uint32 count, float64[count]) to half bits.
static int half_dump(const char* in_path, const char* out_path) {
    FILE* in = std::fopen(in_path, "rb");
    FILE* out = std::fopen(out_path, "wb");
    if (!in || !out)
        return 2;
    uint32 n = 0;
    if (std::fread(&n, 4, 1, in) != 1)
        return 2;
    std::vector<float> f(n);
    if (std::fread(f.data(), 4, n, in) != n)
        return 2;
    std::vector<uint16> hb;
    for (float x : f)
        hb.push_back(half(x).u);
    if (std::fread(&n, 4, 1, in) != 1)
        return 2;
    std::vector<double> d(n);
    if (std::fread(d.data(), 8, n, in) != n)
        return 2;
    for (double x : d)
        hb.push_back(half(x).u);
    std::fwrite(hb.data(), 2, hb.size(), out);
    std::fclose(in);
    std::fclose(out);
    return 0;
}

// ------------------------------------------------------------------------------------------------ layout
static void test_layout() {
    static_assert(sizeof(array_t<float>) == 88 && sizeof(array_t<v3d>) == 88, "array_t");
    static_assert(offsetof(array_t<float>, grad) == 8 && offsetof(array_t<float>, shape) == 16, "array_t");
    static_assert(offsetof(array_t<float>, strides) == 48 && offsetof(array_t<float>, ndim) == 80, "array_t");
    static_assert(offsetof(array_t<float>, flags) == 84, "array_t");
    static_assert(sizeof(launch_bounds_t) == 48 && offsetof(launch_bounds_t, ndim) == 32, "launch_bounds_t");
    static_assert(offsetof(launch_bounds_t, pad) == 36 && offsetof(launch_bounds_t, size) == 40, "launch_bounds_t");
    static_assert(sizeof(vec_t<3, float>) == 12 && alignof(vec_t<3, float>) == 4, "vec_t");
    static_assert(sizeof(vec_t<3, half>) == 6 && sizeof(vec_t<4, double>) == 32, "vec_t");
    static_assert(sizeof(mat_t<3, 3, double>) == 72 && sizeof(mat_t<2, 3, float>) == 24, "mat_t");
    static_assert(sizeof(half) == 2 && alignof(half) == 2, "half");
    static_assert(std::is_trivially_copyable<half>::value && std::is_trivially_copyable<vec_t<3, float>>::value,
                  "trivially copyable");
    static_assert(std::is_trivially_copyable<mat_t<4, 4, half>>::value, "trivially copyable");
    static_assert(std::is_standard_layout<array_t<float>>::value && std::is_trivial<array_t<float>>::value, "pod");
    static_assert(sizeof(int64) == 8 && sizeof(uint8) == 1 && sizeof(int16) == 2, "ints");
    CHECK(true);
}

// ------------------------------------------------------------------------------------------------ arrays
static void test_arrays() {
    // a 2 x 3 x 4 float array viewed with dimensions 0 and 2 swapped (non-contiguous): shape 4 x 3 x 2
    float buf[24], gbuf[24] = {};
    for (int k = 0; k < 24; ++k)
        buf[k] = (float)k;
    array_t<float> a = {};
    a.data = buf;
    a.ndim = 3;
    a.shape[0] = 4, a.shape[1] = 3, a.shape[2] = 2;
    a.strides[0] = 4, a.strides[1] = 16, a.strides[2] = 48;
    CHECK(load(a, 1, 2, 1) == 21.0f && address(a, 3, 0, 0) == &buf[3] && len(a) == 4);
    CHECK(grad_address(a, 1, 1, 1) == nullptr);
    store(a, 2, 1, 0, 99.0f);
    CHECK(buf[6] == 99.0f);
    a.grad = gbuf;
    float adj_v = 0.0f;
    array_t<float> adj_a = {};
    int32 ai = 0, aj = 0, ak = 0;
    adj_load(a, 1, 2, 1, adj_a, ai, aj, ak, 2.5f);
    adj_load(a, 1, 2, 1, adj_a, ai, aj, ak, 0.5f);
    CHECK(gbuf[21] == 3.0f && grad_address(a, 1, 2, 1) == &gbuf[21]);
    adj_store(a, 1, 2, 1, 0.0f, adj_a, ai, aj, ak, adj_v);
    CHECK(adj_v == 3.0f);
    // 1-D and 4-D
    double d1[5] = {0, 1, 2, 3, 4};
    array_t<double> b = {};
    b.data = d1;
    b.ndim = 1;
    b.shape[0] = 5;
    b.strides[0] = 8;
    CHECK(load(b, 4) == 4.0 && load(b, int32(2)) == 2.0);
    int32 i4[16];
    for (int k = 0; k < 16; ++k)
        i4[k] = k;
    array_t<int32> c = {};
    c.data = i4;
    c.ndim = 4;
    for (int d = 0; d < 4; ++d)
        c.shape[d] = 2, c.strides[d] = 4 << (3 - d);
    CHECK(load(c, 1, 0, 1, 1) == 11 && load(c, 0, 1, 1, 0) == 6);
    // vector elements
    v3d vb[2] = {v3d(1, 2, 3), v3d(4, 5, 6)}, vg[2];
    array_t<v3d> va = {};
    va.data = vb;
    va.grad = vg;
    va.ndim = 1;
    va.shape[0] = 2;
    va.strides[0] = sizeof(v3d);
    array_t<v3d> adj_va = {};
    int32 a1 = 0;
    adj_load(va, 1, adj_va, a1, v3d(1, 1, 1));
    CHECK((load(va, 1) == v3d(4, 5, 6)) && (vg[1] == v3d(1, 1, 1)) && (vg[0] == v3d()));
    // thread indices
    launch_bounds_t lb = {};
    lb.ndim = 3;
    lb.shape[0] = 2, lb.shape[1] = 3, lb.shape[2] = 4;
    lb.size = 24;
    int32 t[3];
    tid_from_index(lb, 17, t);  // 17 = 1*12 + 1*4 + 1
    CHECK(t[0] == 1 && t[1] == 1 && t[2] == 1);
    tid_from_index(lb, 23, t);
    CHECK(t[0] == 1 && t[1] == 2 && t[2] == 3);
}

// ------------------------------------------------------------------------------------------------ atomics
template <typename Fn> static void run_threads(int n, Fn fn) {
    std::vector<std::thread> ts;
    for (int t = 0; t < n; ++t)
        ts.emplace_back(fn, t);
    for (auto& th : ts)
        th.join();
}

// Every returned old value must be distinct and cover 0..total-1: each add happened exactly once.
template <typename T> static void check_counter(const char* name, int threads, int per) {
    T counter = T(0);
    std::vector<unsigned char> seen((size_t)threads * per, 0);
    run_threads(threads, [&](int) {
        for (int k = 0; k < per; ++k) {
            const T old = atomic_add(&counter, T(1));
            const long long o = (long long)double(old);
            if (o >= 0 && o < (long long)seen.size())
                __atomic_fetch_add(&seen[(size_t)o], 1, __ATOMIC_RELAXED);
        }
    });
    size_t ok = 0;
    for (unsigned char s : seen)
        ok += s == 1;
    ++g_checks;
    if (!(double(counter) == double(threads) * per && ok == seen.size())) {
        ++g_failures;
        std::printf("FAIL atomic_add %s: total %.17g, distinct olds %zu of %zu\n", name, double(counter), ok,
                    seen.size());
    }
}

static void test_atomics() {
    const int T = 4, N = 100000;
    check_counter<float32>("float32", T, N);
    check_counter<float64>("float64", T, N);
    check_counter<int32>("int32", T, N);
    check_counter<uint32>("uint32", T, N);
    check_counter<int64>("int64", T, N);
    check_counter<uint64>("uint64", T, N);
    check_counter<half>("float16", T, 500);  // integers are exact in half up to 2048
    check_counter<int16>("int16", T, 5000);

    float f = 1000.0f;
    run_threads(T, [&](int) {
        for (int k = 0; k < 1000; ++k)
            atomic_sub(&f, 0.25f);
    });
    CHECK(f == 0.0f);
    half hs = half(100.0f);
    run_threads(T, [&](int) {
        for (int k = 0; k < 25; ++k)
            atomic_sub(&hs, half(1.0f));
    });
    CHECK(float(hs) == 0.0f);

    // min / max under contention
    float fmin = 1e30f, fmax = -1e30f;
    int32 imin = 1 << 30, imax = -(1 << 30);
    double dmax = -1e300;
    half hmin = half(60000.0f);
    uint64 umax = 0;
    run_threads(T, [&](int t) {
        for (int k = 0; k < N; ++k) {
            const int v = (k * 7919 + t * 104729) % 200003 - 100000;
            atomic_min(&fmin, (float)v);
            atomic_max(&fmax, (float)v);
            atomic_min(&imin, v);
            atomic_max(&imax, v);
            atomic_max(&dmax, (double)v * 0.5);
            atomic_max(&umax, (uint64)(v + 100000));
            if (k < 2000)
                atomic_min(&hmin, half((float)(v % 2000)));
        }
    });
    int vmin = 1 << 30, vmax = -(1 << 30), hm = 1 << 30;
    for (int t = 0; t < T; ++t)
        for (int k = 0; k < N; ++k) {
            const int v = (k * 7919 + t * 104729) % 200003 - 100000;
            vmin = v < vmin ? v : vmin;
            vmax = v > vmax ? v : vmax;
            if (k < 2000)
                hm = (v % 2000) < hm ? v % 2000 : hm;
        }
    CHECK(fmin == (float)vmin && fmax == (float)vmax && imin == vmin && imax == vmax && dmax == vmax * 0.5);
    CHECK(umax == (uint64)(vmax + 100000) && float(hmin) == (float)hm);
    CHECK(atomic_min(&imin, 5) == vmin && atomic_max(&fmax, 0.0f) == (float)vmax);

    // a CAS spin lock protecting a non-atomic counter; exch releases it
    int32 lock = 0;
    long long plain = 0;
    run_threads(T, [&](int) {
        for (int k = 0; k < 20000; ++k) {
            while (atomic_cas(&lock, 0, 1) != 0) {
            }
            ++plain;
            atomic_exch(&lock, 0);
        }
    });
    CHECK(plain == T * 20000LL && lock == 0);
    float fc = 1.5f;
    CHECK(atomic_cas(&fc, 1.5f, 2.5f) == 1.5f && fc == 2.5f && atomic_cas(&fc, 1.5f, 9.0f) == 2.5f && fc == 2.5f);
    double dx = 1.0;
    half hx = half(1.0f);
    CHECK(atomic_exch(&dx, 3.0) == 1.0 && dx == 3.0 && float(atomic_exch(&hx, half(2.0f))) == 1.0f);
    CHECK(float(hx) == 2.0f && float(atomic_cas(&hx, half(2.0f), half(4.0f))) == 2.0f && float(hx) == 4.0f);

    // bitwise: each thread owns 8 bits
    uint32 bits = 0, x = 0;
    int64 band = -1;
    run_threads(T, [&](int t) {
        for (int k = 0; k < 8; ++k) {
            atomic_or(&bits, 1u << (t * 8 + k));
            atomic_xor(&x, 1u << (t * 8 + k));
            atomic_xor(&x, 1u << (t * 8 + k));
            atomic_and(&band, ~(int64(1) << (t * 8 + k)));
        }
    });
    CHECK(bits == 0xffffffffu && x == 0u && band == ~int64(0xffffffff));

    // composites: componentwise atomic, returning the old composite
    v3f acc;
    mat_t<2, 2, double> macc;
    run_threads(3, [&](int) {
        for (int k = 0; k < 10000; ++k) {
            atomic_add(&acc, v3f(1.0f, 2.0f, 0.5f));
            atomic_add(&macc, mat_t<2, 2, double>(1, 2, 3, 4));
        }
    });
    CHECK((acc == v3f(30000.0f, 60000.0f, 15000.0f)) && (macc == mat_t<2, 2, double>(30000, 60000, 90000, 120000)));
    v3f mm(5.0f, 5.0f, 5.0f);
    CHECK((atomic_max(&mm, v3f(1, 7, 5)) == v3f(5, 5, 5)) && (mm == v3f(5, 7, 5)));
    CHECK((atomic_sub(&mm, v3f(1, 1, 1)) == v3f(5, 7, 5)) && (mm == v3f(4, 6, 4)));

    // adjoints
    float g = 3.0f, av = 1.0f;
    adj_atomic_add(&f, 2.0f, &g, av, 0.0f);
    CHECK(av == 4.0f);
    adj_atomic_sub(&f, 2.0f, &g, av, 0.0f);
    adj_atomic_add(&f, 2.0f, (float*)nullptr, av, 0.0f);
    adj_atomic_min(&f, 2.0f, &g, av, 0.0f);
    CHECK(av == 1.0f);
    v3f vg(1, 2, 3), avv;
    adj_atomic_add(&acc, v3f(), &vg, avv, v3f());
    CHECK((avv == vg));
}

// ------------------------------------------------------------------------------------------------ print mode
static int print_mode() {
    print(v3f(1.0f, 2.5f, 3.0f));
    print(mat_t<2, 2, float>(1, 2, 3, 4));
    print(1.5f);
    print(3);
    print(true);
    print(false);
    print(vec_t<3, int32>(1, 2, 3));
    print(half(0.5f));
    print(int8(-3));
    print(uint8(200));
    print(int64(-5));
    print(uint64(18446744073709551615ull));
    print(uint32(4000000000u));
    print(1.0e20f);
    print(0.1);
    print(1.0 / 3.0);
    print(123456789.0f);
    print(1e-7f);
    print(vec_t<2, half>(1.5f, 2.0f));
    print(mat_t<3, 3, double>());
    print("hello");
    expect_eq(1, 2);
    expect_eq(vec_t<2, float>(1, 2), vec_t<2, float>(1, 3));
    expect_neq(1.0f, 1.0f);
    expect_near(1.0f, 2.0f, 0.1f);
    expect_near(vec_t<2, float>(1, 2), vec_t<2, float>(1, 3), 0.1f);
    expect_eq(5, 5);
    expect_near(1.0, 1.05, 0.1);
    expect_neq(v3f(1.0f), v3f(2.0f));
    print(treadle_expect_failures);
    return 0;
}

}  // namespace tests
}  // namespace treadle

int main(int argc, char** argv) {
    using namespace treadle::tests;
    if (argc > 1 && std::strcmp(argv[1], "print") == 0)
        return print_mode();
    if (argc > 3 && std::strcmp(argv[1], "half") == 0)
        return half_dump(argv[2], argv[3]);
    if (argc > 1 && std::strcmp(argv[1], "erf") == 0) {  // erfinv and erfcinv of each argument, float64 and float32
        for (int k = 2; k < argc; ++k) {
            const double v = std::strtod(argv[k], nullptr);
            std::printf("%.17g %.17g %.9g %.9g\n", treadle::erfinv(v), treadle::erfcinv(v),
                        (double)treadle::erfinv((float)v), (double)treadle::erfcinv((float)v));
        }
        return 0;
    }
    test_scalar_values();
    test_vec_mat_values();
    test_adjoints();
    test_half_roundtrip();
    test_layout();
    test_arrays();
    test_atomics();
    std::printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
