// Scalar builtins and operators for float16/float32/float64 (and integers where meaningful), each forward function
// followed by its adjoint. Adjoints accumulate (+=) into adj_* and take the forward inputs, the adjoints of those
// inputs (of the same type; ignored for non-differentiable ones) and finally the adjoint of the result.
#pragma once
#include "core.h"

namespace treadle {

// Lists used by the macros below: X(type) for each type of the class.
#define TREADLE_FLOAT_TYPES(X) X(float32) X(float64) X(half)
#define TREADLE_SIGNED_TYPES(X) X(int8) X(int16) X(int32) X(int64)
#define TREADLE_UNSIGNED_TYPES(X) X(uint8) X(uint16) X(uint32) X(uint64)
#define TREADLE_INT_TYPES(X) TREADLE_SIGNED_TYPES(X) TREADLE_UNSIGNED_TYPES(X)
#define TREADLE_ALL_TYPES(X) TREADLE_INT_TYPES(X) TREADLE_FLOAT_TYPES(X)

// Forward of a float function given its float and double libm names; half computes in float.
#define TREADLE_UNARY_LIBM(name, ff, fd)                                                \
    TREADLE_FUNC float32 name(float32 x) { return TREADLE_LIBM(ff)(x); }              \
    TREADLE_FUNC float64 name(float64 x) { return TREADLE_LIBM(fd)(x); }              \
    TREADLE_FUNC half name(half x) { return half(TREADLE_LIBM(ff)(float32(x))); }

// Adjoint templates of scalar functions accept scalar types only, so that they never compete in overload resolution
// with the vector and matrix adjoints of vec.h and mat.h.
#define TREADLE_SCALAR_ADJ \
    template <typename T, typename detail::enable_if<detail::is_scalar<T>::value, int>::type = 0> TREADLE_FUNC

// Adjoint that contributes nothing (piecewise-constant or non-differentiable functions).
#define TREADLE_ADJ_NONE_1(name)                                                          \
    template <typename T, typename R, typename detail::enable_if<detail::is_scalar<T>::value, int>::type = 0> \
    TREADLE_FUNC void adj_##name(T, T&, const R&) {}
#define TREADLE_ADJ_NONE_2(name)                                                          \
    template <typename T, typename R, typename detail::enable_if<detail::is_scalar<T>::value, int>::type = 0> \
    TREADLE_FUNC void adj_##name(T, T, T&, T&, const R&) {}

// ------------------------------------------------------------------------------------------------ operators
#define TREADLE_X(T)                                                           \
    TREADLE_FUNC T add(T a, T b) { return T(a + b); }                          \
    TREADLE_FUNC T sub(T a, T b) { return T(a - b); }                          \
    TREADLE_FUNC T mul(T a, T b) { return T(a * b); }                          \
    TREADLE_FUNC T pos(T a) { return a; }                                      \
    TREADLE_FUNC T neg(T a) { return T(-a); }
TREADLE_ALL_TYPES(TREADLE_X)
#undef TREADLE_X

// Integer division by zero is undefined behaviour; checked builds report it (dim -2) and return 0 instead.
#if defined(TREADLE_CHECKED)
#define TREADLE_CHECK_DIVISOR(a, b)                       \
    if (b == 0) {                                         \
        treadle_report_oob(-2, (long long)(a), 0);        \
        return 0;                                         \
    }
#else
#define TREADLE_CHECK_DIVISOR(a, b)
#endif

// div: C semantics for integers (truncation toward zero).
#define TREADLE_X(T)                    \
    TREADLE_FUNC T div(T a, T b) {      \
        TREADLE_CHECK_DIVISOR(a, b)     \
        return T(a / b);                \
    }
TREADLE_INT_TYPES(TREADLE_X)
#undef TREADLE_X
#define TREADLE_X(T) \
    TREADLE_FUNC T div(T a, T b) { return T(a / b); }
TREADLE_FLOAT_TYPES(TREADLE_X)
#undef TREADLE_X

template <typename T> TREADLE_FUNC void adj_add(T, T, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_a += adj_ret;
    adj_b += adj_ret;
}
template <typename T> TREADLE_FUNC void adj_sub(T, T, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_a += adj_ret;
    adj_b -= adj_ret;
}
TREADLE_SCALAR_ADJ void adj_mul(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    if constexpr (detail::is_float<T>::value) {
        adj_a += b * adj_ret;
        adj_b += a * adj_ret;
    }
}
TREADLE_SCALAR_ADJ void adj_div(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    if constexpr (detail::is_float<T>::value) {
        adj_a += adj_ret / b;
        adj_b -= adj_ret * a / (b * b);
    }
}
template <typename T> TREADLE_FUNC void adj_pos(T, T& adj_a, const T& adj_ret) { adj_a += adj_ret; }
template <typename T> TREADLE_FUNC void adj_neg(T, T& adj_a, const T& adj_ret) { adj_a -= adj_ret; }

// mod: C semantics for integers (sign follows the dividend), fmod for floats.
#define TREADLE_X(T)                    \
    TREADLE_FUNC T mod(T a, T b) {      \
        TREADLE_CHECK_DIVISOR(a, b)     \
        return T(a % b);                \
    }
TREADLE_INT_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_UNARY_LIBM(trunc, truncf, trunc)  // needed by adj_mod and frac
TREADLE_FUNC float32 mod(float32 a, float32 b) { return TREADLE_LIBM(fmodf)(a, b); }
TREADLE_FUNC float64 mod(float64 a, float64 b) { return TREADLE_LIBM(fmod)(a, b); }
TREADLE_FUNC half mod(half a, half b) { return half(TREADLE_LIBM(fmodf)(float32(a), float32(b))); }
TREADLE_SCALAR_ADJ void adj_mod(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    if constexpr (detail::is_float<T>::value) {  // a - b * trunc(a / b)
        adj_a += adj_ret;
        adj_b -= adj_ret * trunc(a / b);
    }
}

// floordiv: floor(a / b) for floats; integers also round toward negative infinity (as the reference does at run
// time, e.g. floordiv(-7, 2) == -4), unlike `div`, which truncates.
#define TREADLE_X(T)                                                \
    TREADLE_FUNC T floordiv(T a, T b) {                             \
        TREADLE_CHECK_DIVISOR(a, b)                                 \
        T q = T(a / b);                                             \
        if (T(a % b) != 0 && ((a < 0) != (b < 0)))                  \
            q = T(q - 1);                                           \
        return q;                                                   \
    }
TREADLE_SIGNED_TYPES(TREADLE_X)
#undef TREADLE_X
#define TREADLE_X(T)                    \
    TREADLE_FUNC T floordiv(T a, T b) { \
        TREADLE_CHECK_DIVISOR(a, b)     \
        return T(a / b);                \
    }
TREADLE_UNSIGNED_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_FUNC float32 floordiv(float32 a, float32 b) { return TREADLE_LIBM(floorf)(a / b); }
TREADLE_FUNC float64 floordiv(float64 a, float64 b) { return TREADLE_LIBM(floor)(a / b); }
TREADLE_FUNC half floordiv(half a, half b) { return half(TREADLE_LIBM(floorf)(float32(a) / float32(b))); }
TREADLE_ADJ_NONE_2(floordiv)

// Bitwise operators on integers (and bool for and/or/xor).
#define TREADLE_X(T)                                                  \
    TREADLE_FUNC T bit_and(T a, T b) { return T(a & b); }             \
    TREADLE_FUNC T bit_or(T a, T b) { return T(a | b); }              \
    TREADLE_FUNC T bit_xor(T a, T b) { return T(a ^ b); }             \
    TREADLE_FUNC T lshift(T a, T b) { return T(a << b); }             \
    TREADLE_FUNC T rshift(T a, T b) { return T(a >> b); }             \
    TREADLE_FUNC T invert(T a) { return T(~a); }
TREADLE_INT_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_FUNC bool bit_and(bool a, bool b) { return a && b; }
TREADLE_FUNC bool bit_or(bool a, bool b) { return a || b; }
TREADLE_FUNC bool bit_xor(bool a, bool b) { return a != b; }
TREADLE_ADJ_NONE_2(bit_and)
TREADLE_ADJ_NONE_2(bit_or)
TREADLE_ADJ_NONE_2(bit_xor)
TREADLE_ADJ_NONE_2(lshift)
TREADLE_ADJ_NONE_2(rshift)
TREADLE_ADJ_NONE_1(invert)

// ------------------------------------------------------------------------------------------------ min / max / clamp
// Float min/max are C's fmin/fmax (IEEE minNum/maxNum, as in the reference): a NaN operand is missing data and the
// other operand is the result (NaN only when both are), so the order of the operands does not matter; clamp(x, lo,
// hi) is fmin(fmax(x, lo), hi), so clamp(NaN, lo, hi) is min(lo, hi). `x != x` is the NaN test (always false for
// integers). Ties go to `b`, in value and in gradient; clamp's gradient goes to `hi` when x == hi. Gradients go to
// the operand the forward picked.
#define TREADLE_X(T)                                                                        \
    TREADLE_FUNC T min(T a, T b) { return (a < b || b != b) ? a : b; }                      \
    TREADLE_FUNC T max(T a, T b) { return (a > b || b != b) ? a : b; }                      \
    TREADLE_FUNC T clamp(T x, T lo, T hi) { return x != x ? min(lo, hi) : (x < lo ? lo : (x > hi ? hi : x)); }
TREADLE_ALL_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_SCALAR_ADJ void adj_min(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    if (a < b || b != b)
        adj_a += adj_ret;
    else
        adj_b += adj_ret;
}
TREADLE_SCALAR_ADJ void adj_max(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    if (a > b || b != b)
        adj_a += adj_ret;
    else
        adj_b += adj_ret;
}
TREADLE_SCALAR_ADJ void adj_clamp(T x, T lo, T hi, T& adj_x, T& adj_lo, T& adj_hi, const T& adj_ret) {
    if (x != x)
        adj_min(lo, hi, adj_lo, adj_hi, adj_ret);  // the forward gave min(lo, hi)
    else if (x < lo)
        adj_lo += adj_ret;
    else if (x < hi)
        adj_x += adj_ret;
    else
        adj_hi += adj_ret;
}

// ------------------------------------------------------------------------------------------------ abs / sign / step
// sign(x) = -1 if x < 0 else 1 (so sign(0) == sign(-0.0) == 1); step(x) = 1 if x < 0 else 0;
// nonzero(x) = 1 if x != 0 else 0.
#define TREADLE_X(T)                                              \
    TREADLE_FUNC T abs(T x) { return x < T(0) ? T(-x) : x; }      \
    TREADLE_FUNC T sign(T x) { return x < T(0) ? T(-1) : T(1); }  \
    TREADLE_FUNC T step(T x) { return x < T(0) ? T(1) : T(0); }
TREADLE_SIGNED_TYPES(TREADLE_X)
TREADLE_FLOAT_TYPES(TREADLE_X)
#undef TREADLE_X
#define TREADLE_X(T)                             \
    TREADLE_FUNC T abs(T x) { return x; }        \
    TREADLE_FUNC T sign(T) { return T(1); }      \
    TREADLE_FUNC T step(T) { return T(0); }
TREADLE_UNSIGNED_TYPES(TREADLE_X)
#undef TREADLE_X
#define TREADLE_X(T) \
    TREADLE_FUNC T nonzero(T x) { return x != T(0) ? T(1) : T(0); }
TREADLE_ALL_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_SCALAR_ADJ void adj_abs(T x, T& adj_x, const T& adj_ret) {
    if constexpr (detail::is_float<T>::value) {  // d|x|/dx taken as 1 at 0, like the reference
        if (x < T(0))
            adj_x -= adj_ret;
        else
            adj_x += adj_ret;
    }
}
TREADLE_ADJ_NONE_1(sign)
TREADLE_ADJ_NONE_1(step)
TREADLE_ADJ_NONE_1(nonzero)

// ------------------------------------------------------------------------------------------------ classification
#define TREADLE_X(T)                                      \
    TREADLE_FUNC bool isfinite(T) { return true; }         \
    TREADLE_FUNC bool isinf(T) { return false; }           \
    TREADLE_FUNC bool isnan(T) { return false; }
TREADLE_INT_TYPES(TREADLE_X)
#undef TREADLE_X
#if defined(TREADLE_CUDA)
TREADLE_FUNC bool isfinite(float32 x) { return ::isfinite(x); }
TREADLE_FUNC bool isfinite(float64 x) { return ::isfinite(x); }
TREADLE_FUNC bool isinf(float32 x) { return ::isinf(x); }
TREADLE_FUNC bool isinf(float64 x) { return ::isinf(x); }
TREADLE_FUNC bool isnan(float32 x) { return ::isnan(x); }
TREADLE_FUNC bool isnan(float64 x) { return ::isnan(x); }
#else
TREADLE_FUNC bool isfinite(float32 x) { return __builtin_isfinite(x); }
TREADLE_FUNC bool isfinite(float64 x) { return __builtin_isfinite(x); }
TREADLE_FUNC bool isinf(float32 x) { return __builtin_isinf(x); }
TREADLE_FUNC bool isinf(float64 x) { return __builtin_isinf(x); }
TREADLE_FUNC bool isnan(float32 x) { return __builtin_isnan(x); }
TREADLE_FUNC bool isnan(float64 x) { return __builtin_isnan(x); }
#endif
TREADLE_FUNC bool isfinite(half x) { return (x.u & 0x7c00u) != 0x7c00u; }
TREADLE_FUNC bool isinf(half x) { return (x.u & 0x7fffu) == 0x7c00u; }
TREADLE_FUNC bool isnan(half x) { return (x.u & 0x7fffu) > 0x7c00u; }
TREADLE_ADJ_NONE_1(isfinite)
TREADLE_ADJ_NONE_1(isinf)
TREADLE_ADJ_NONE_1(isnan)

// ------------------------------------------------------------------------------------------------ rounding
TREADLE_UNARY_LIBM(floor, floorf, floor)
TREADLE_UNARY_LIBM(ceil, ceilf, ceil)
TREADLE_UNARY_LIBM(round, roundf, round)  // half away from zero
TREADLE_UNARY_LIBM(rint, rintf, rint)     // half to even (default rounding mode)
TREADLE_ADJ_NONE_1(floor)
TREADLE_ADJ_NONE_1(ceil)
TREADLE_ADJ_NONE_1(round)
TREADLE_ADJ_NONE_1(rint)
TREADLE_ADJ_NONE_1(trunc)

#define TREADLE_X(T) \
    TREADLE_FUNC T frac(T x) { return T(x - trunc(x)); }
TREADLE_FLOAT_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_SCALAR_ADJ void adj_frac(T, T& adj_x, const T& adj_ret) { adj_x += adj_ret; }

// ------------------------------------------------------------------------------------------------ powers and logs
TREADLE_UNARY_LIBM(sqrt, sqrtf, sqrt)
TREADLE_SCALAR_ADJ void adj_sqrt(T x, T& adj_x, const T& adj_ret) {
    adj_x += adj_ret / (T(2) * sqrt(x));
}

TREADLE_UNARY_LIBM(cbrt, cbrtf, cbrt)
TREADLE_SCALAR_ADJ void adj_cbrt(T x, T& adj_x, const T& adj_ret) {
    const T c = cbrt(x);
    adj_x += adj_ret / (T(3) * c * c);
}

TREADLE_UNARY_LIBM(exp, expf, exp)
TREADLE_SCALAR_ADJ void adj_exp(T x, T& adj_x, const T& adj_ret) { adj_x += exp(x) * adj_ret; }

TREADLE_UNARY_LIBM(log, logf, log)
TREADLE_SCALAR_ADJ void adj_log(T x, T& adj_x, const T& adj_ret) { adj_x += adj_ret / x; }

TREADLE_UNARY_LIBM(log2, log2f, log2)
TREADLE_SCALAR_ADJ void adj_log2(T x, T& adj_x, const T& adj_ret) {
    adj_x += adj_ret / (x * T(0.693147180559945309417));
}

TREADLE_UNARY_LIBM(log10, log10f, log10)
TREADLE_SCALAR_ADJ void adj_log10(T x, T& adj_x, const T& adj_ret) {
    adj_x += adj_ret / (x * T(2.30258509299404568402));
}

TREADLE_FUNC float32 pow(float32 x, float32 y) { return TREADLE_LIBM(powf)(x, y); }
TREADLE_FUNC float64 pow(float64 x, float64 y) { return TREADLE_LIBM(pow)(x, y); }
TREADLE_FUNC half pow(half x, half y) { return half(TREADLE_LIBM(powf)(float32(x), float32(y))); }
TREADLE_SCALAR_ADJ void adj_pow(T x, T y, T& adj_x, T& adj_y, const T& adj_ret) {
    adj_x += y * pow(x, T(y - T(1))) * adj_ret;
    if (x > T(0))  // d/dy x^y = log(x) x^y, undefined for x <= 0
        adj_y += log(x) * pow(x, y) * adj_ret;
}

// ------------------------------------------------------------------------------------------------ trigonometry
TREADLE_UNARY_LIBM(sin, sinf, sin)
TREADLE_UNARY_LIBM(cos, cosf, cos)
TREADLE_UNARY_LIBM(tan, tanf, tan)
TREADLE_SCALAR_ADJ void adj_sin(T x, T& adj_x, const T& adj_ret) { adj_x += cos(x) * adj_ret; }
TREADLE_SCALAR_ADJ void adj_cos(T x, T& adj_x, const T& adj_ret) { adj_x -= sin(x) * adj_ret; }
// The reverse sweep's replay of sin(x) (cos(x)) whose adjoint needs cos(x) (sin(x)): the two calls side by side,
// which clang++ and g++ fuse into one sincosf/sincos call on the host (glibc's give the same values as sinf/cosf
// and sin/cos: tests/autodiff/test_sincos_fusion.py). adj_sin_of_cos / adj_cos_of_sin are adj_sin / adj_cos given
// that partner value.
TREADLE_FUNC float32 sin_cos(float32 x, float32& c) { c = cos(x); return sin(x); }
TREADLE_FUNC float64 sin_cos(float64 x, float64& c) { c = cos(x); return sin(x); }
TREADLE_FUNC float32 cos_sin(float32 x, float32& s) { float32 c; s = sin_cos(x, c); return c; }
TREADLE_FUNC float64 cos_sin(float64 x, float64& s) { float64 c; s = sin_cos(x, c); return c; }
TREADLE_SCALAR_ADJ void adj_sin_of_cos(T cos_x, T& adj_x, const T& adj_ret) { adj_x += cos_x * adj_ret; }
TREADLE_SCALAR_ADJ void adj_cos_of_sin(T sin_x, T& adj_x, const T& adj_ret) { adj_x -= sin_x * adj_ret; }
TREADLE_SCALAR_ADJ void adj_tan(T x, T& adj_x, const T& adj_ret) {
    const T c = cos(x);
    adj_x += adj_ret / (c * c);
}

// asin/acos clamp their argument to [-1, 1]; outside (and at) the end points the gradient is 0, not inf.
TREADLE_FUNC float64 asin(float64 x) { return TREADLE_LIBM(asin)(clamp(x, -1.0, 1.0)); }
TREADLE_FUNC float64 acos(float64 x) { return TREADLE_LIBM(acos)(clamp(x, -1.0, 1.0)); }
TREADLE_FUNC float32 asin(float32 x) { return TREADLE_LIBM(asinf)(clamp(x, -1.0f, 1.0f)); }
TREADLE_FUNC float32 acos(float32 x) { return TREADLE_LIBM(acosf)(clamp(x, -1.0f, 1.0f)); }
TREADLE_FUNC half asin(half x) { return half(asin(float32(x))); }
TREADLE_FUNC half acos(half x) { return half(acos(float32(x))); }
TREADLE_SCALAR_ADJ void adj_asin(T x, T& adj_x, const T& adj_ret) {
    const T d = T(1) - x * x;
    if (d > T(0))
        adj_x += adj_ret / sqrt(d);
}
TREADLE_SCALAR_ADJ void adj_acos(T x, T& adj_x, const T& adj_ret) {
    const T d = T(1) - x * x;
    if (d > T(0))
        adj_x -= adj_ret / sqrt(d);
}

TREADLE_UNARY_LIBM(atan, atanf, atan)
TREADLE_SCALAR_ADJ void adj_atan(T x, T& adj_x, const T& adj_ret) {
    adj_x += adj_ret / (T(1) + x * x);
}

TREADLE_FUNC float32 atan2(float32 y, float32 x) { return TREADLE_LIBM(atan2f)(y, x); }
TREADLE_FUNC float64 atan2(float64 y, float64 x) { return TREADLE_LIBM(atan2)(y, x); }
TREADLE_FUNC half atan2(half y, half x) { return half(TREADLE_LIBM(atan2f)(float32(y), float32(x))); }
TREADLE_SCALAR_ADJ void adj_atan2(T y, T x, T& adj_y, T& adj_x, const T& adj_ret) {
    const T r2 = x * x + y * y;
    if (r2 > T(0)) {
        adj_y += x * adj_ret / r2;
        adj_x -= y * adj_ret / r2;
    }
}

TREADLE_UNARY_LIBM(sinh, sinhf, sinh)
TREADLE_UNARY_LIBM(cosh, coshf, cosh)
TREADLE_SCALAR_ADJ void adj_sinh(T x, T& adj_x, const T& adj_ret) { adj_x += cosh(x) * adj_ret; }
TREADLE_SCALAR_ADJ void adj_cosh(T x, T& adj_x, const T& adj_ret) { adj_x += sinh(x) * adj_ret; }

TREADLE_UNARY_LIBM(tanh, tanhf, tanh)
TREADLE_SCALAR_ADJ void adj_tanh(T x, T& adj_x, const T& adj_ret) {
    const T t = tanh(x);
    adj_x += (T(1) - t * t) * adj_ret;
}

#define TREADLE_X(T)                                                                   \
    TREADLE_FUNC T degrees(T x) { return T(x * T(57.29577951308232087680)); }          \
    TREADLE_FUNC T radians(T x) { return T(x * T(0.01745329251994329576924)); }
TREADLE_FLOAT_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_SCALAR_ADJ void adj_degrees(T, T& adj_x, const T& adj_ret) {
    adj_x += adj_ret * T(57.29577951308232087680);
}
TREADLE_SCALAR_ADJ void adj_radians(T, T& adj_x, const T& adj_ret) {
    adj_x += adj_ret * T(0.01745329251994329576924);
}

// ------------------------------------------------------------------------------------------------ sign transfer
TREADLE_FUNC float32 copysign(float32 x, float32 y) { return TREADLE_LIBM(copysignf)(x, y); }
TREADLE_FUNC float64 copysign(float64 x, float64 y) { return TREADLE_LIBM(copysign)(x, y); }
TREADLE_FUNC half copysign(half x, half y) { return half::from_bits((uint16)((x.u & 0x7fffu) | (y.u & 0x8000u))); }
TREADLE_SCALAR_ADJ void adj_copysign(T x, T y, T& adj_x, T&, const T& adj_ret) {
    // d/dx = +1 when x already has y's sign, else -1; no gradient to y.
    if ((copysign(T(1), x) < T(0)) == (copysign(T(1), y) < T(0)))
        adj_x += adj_ret;
    else
        adj_x -= adj_ret;
}

// ------------------------------------------------------------------------------------------------ interpolation
#define TREADLE_X(T)                                                             \
    TREADLE_FUNC T lerp(T a, T b, T t) { return T(a * (T(1) - t) + b * t); }     \
    TREADLE_FUNC T smoothstep(T a, T b, T x) {                                   \
        const T t = clamp(T((x - a) / (b - a)), T(0), T(1));                     \
        return T(t * t * (T(3) - T(2) * t));                                     \
    }
TREADLE_FLOAT_TYPES(TREADLE_X)
#undef TREADLE_X
TREADLE_SCALAR_ADJ void adj_lerp(T a, T b, T t, T& adj_a, T& adj_b, T& adj_t, const T& adj_ret) {
    adj_a += adj_ret * (T(1) - t);
    adj_b += adj_ret * t;
    adj_t += adj_ret * (b - a);
}
TREADLE_SCALAR_ADJ void adj_smoothstep(T a, T b, T x, T& adj_a, T& adj_b, T& adj_x, const T& adj_ret) {
    const T w = b - a;
    const T t = (x - a) / w;
    if (!(t > T(0) && t < T(1)))
        return;  // clamped: flat
    const T g = adj_ret * T(6) * t * (T(1) - t) / w;  // d/dt then dt/dx
    adj_x += g;
    adj_a += g * (x - b) / w;
    adj_b += g * (a - x) / w;
}

// ------------------------------------------------------------------------------------------------ error functions
TREADLE_UNARY_LIBM(erf, erff, erf)
TREADLE_UNARY_LIBM(erfc, erfcf, erfc)
TREADLE_SCALAR_ADJ void adj_erf(T x, T& adj_x, const T& adj_ret) {
    adj_x += T(1.12837916709551257390) * exp(T(-x * x)) * adj_ret;  // 2/sqrt(pi) e^{-x^2}
}
TREADLE_SCALAR_ADJ void adj_erfc(T x, T& adj_x, const T& adj_ret) {
    adj_x -= T(1.12837916709551257390) * exp(T(-x * x)) * adj_ret;
}

#if defined(TREADLE_CUDA)
TREADLE_FUNC float32 erfinv(float32 x) { return ::erfinvf(x); }
TREADLE_FUNC float64 erfinv(float64 x) { return ::erfinv(x); }
TREADLE_FUNC float32 erfcinv(float32 x) { return ::erfcinvf(x); }
TREADLE_FUNC float64 erfcinv(float64 x) { return ::erfcinv(x); }
#else
namespace detail {
// Solves erf(y) = x (complement = false) or erfc(y) = x (complement = true) for y >= 0, given the initial guess
// y0, with Halley steps (f'' = -2 y f' for both functions, so a step is f / (f' + y f)).
inline double erf_solve(double target, double y, bool complement) {
    for (int it = 0; it < 4; ++it) {
        const double d = 1.12837916709551257390 * __builtin_exp(-y * y);  // |f'|
        if (!(d > 0.0))
            break;
        const double f = complement ? -(__builtin_erfc(y) - target) : __builtin_erf(y) - target;
        const double step = f / (d + y * f);  // sign arranged so that f' = +d
        if (!__builtin_isfinite(step))
            break;
        y -= step;
    }
    return y;
}
// Initial guess for erfinv from the closed-form approximation by S. Winitzki, written in terms of
// L = log(1 - x^2) so that callers near |x| = 1 can pass it without cancellation.
inline double erfinv_guess(double L) {
    const double a = 0.147;
    const double t = 2.0 / (3.14159265358979323846 * a) + 0.5 * L;
    return __builtin_sqrt(__builtin_sqrt(t * t - L / a) - t);
}
// erfcinv for z in (0, 1]: erfc(y) = z, y >= 0.
inline double erfcinv_01(double z) {
    const double L = __builtin_log(z * (2.0 - z));
    return erf_solve(z, erfinv_guess(L), true);
}
}  // namespace detail

inline float64 erfinv(float64 x) {
    const double ax = x < 0.0 ? -x : x;
    if (!(ax < 1.0)) {
        if (ax == 1.0)
            return x * __builtin_inf();
        return __builtin_nan("");
    }
    double y;
    if (ax <= 0.5)
        y = detail::erf_solve(ax, detail::erfinv_guess(__builtin_log1p(-ax * ax)), false);
    else
        y = detail::erfcinv_01(1.0 - ax);  // 1 - ax is exact here
    return x < 0.0 ? -y : y;
}
inline float64 erfcinv(float64 z) {
    if (!(z > 0.0 && z < 2.0)) {
        if (z == 0.0)
            return __builtin_inf();
        if (z == 2.0)
            return -__builtin_inf();
        return __builtin_nan("");
    }
    if (z > 1.0)
        return -erfcinv(2.0 - z);
    if (z >= 0.5)
        return erfinv(1.0 - z);
    return detail::erfcinv_01(z);
}
inline float32 erfinv(float32 x) { return (float32)erfinv((float64)x); }
inline float32 erfcinv(float32 x) { return (float32)erfcinv((float64)x); }
#endif
TREADLE_FUNC half erfinv(half x) { return half(erfinv(float32(x))); }
TREADLE_FUNC half erfcinv(half x) { return half(erfcinv(float32(x))); }
TREADLE_SCALAR_ADJ void adj_erfinv(T x, T& adj_x, const T& adj_ret) {
    const T y = erfinv(x);  // dy/dx = sqrt(pi)/2 e^{y^2}
    adj_x += T(0.88622692545275801365) * exp(T(y * y)) * adj_ret;
}
TREADLE_SCALAR_ADJ void adj_erfcinv(T x, T& adj_x, const T& adj_ret) {
    const T y = erfcinv(x);
    adj_x -= T(0.88622692545275801365) * exp(T(y * y)) * adj_ret;
}

}  // namespace treadle
