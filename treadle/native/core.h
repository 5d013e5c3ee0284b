// Treadle native core: the host/device function macro, scalar typedefs, float16 (`half`), the launch-bounds
// layout and `cast`. Every other header includes this one.
//
// The same headers are compiled by the host C++ compiler and (later) by NVRTC, so this file avoids the C++ standard
// library: math goes through compiler builtins on the host and CUDA's math API on the device, and the few type
// traits we need are written here.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TREADLE_CUDA 1
#define TREADLE_FUNC __host__ __device__ inline
#else
#define TREADLE_FUNC inline
#endif

// Libm on the host through GCC/Clang builtins (no <cmath>: it is slow to parse); CUDA's math API on the device.
#if defined(TREADLE_CUDA)
#define TREADLE_LIBM(f) ::f
#else
#define TREADLE_LIBM(f) __builtin_##f
#endif

#if !defined(__CUDACC_RTC__)
#include <stdio.h>
#else
// GCC builtins that some headers use and NVRTC lacks.
#define __builtin_inff() __int_as_float(0x7f800000)
#define __builtin_inf() __longlong_as_double(0x7ff0000000000000LL)
#endif

#if defined(TREADLE_CHECKED)
// Defined by the generated code; called by checked builds instead of touching memory out of bounds or dividing by
// zero. dim >= 0: array dimension `dim`, index `index`, extent `extent`; dim == -1: vector/matrix component index;
// dim == -2: integer division or modulo by zero (index = the dividend, extent = 0).
#if defined(TREADLE_CUDA)
extern "C" __device__ void treadle_report_oob(int dim, long long index, long long extent);
#else
extern "C" void treadle_report_oob(int dim, long long index, long long extent);
#endif
#endif

namespace treadle {

typedef signed char int8;
typedef unsigned char uint8;
typedef short int16;
typedef unsigned short uint16;
typedef int int32;
typedef unsigned int uint32;
typedef long long int64;
typedef unsigned long long uint64;
typedef float float32;
typedef double float64;

static_assert(sizeof(int16) == 2 && sizeof(int32) == 4 && sizeof(int64) == 8, "unexpected integer sizes");
static_assert(sizeof(float32) == 4 && sizeof(float64) == 8, "unexpected float sizes");

// ------------------------------------------------------------------------------------------------ tiny traits
namespace detail {

template <bool B, typename T = void> struct enable_if {};
template <typename T> struct enable_if<true, T> { typedef T type; };

// Wrapping a parameter type in identity<T>::type keeps it out of template deduction, so `mul(v, 2.0)` works for
// a float vector.
template <typename T> struct identity { typedef T type; };

template <typename A, typename B> struct is_same { static constexpr bool value = false; };
template <typename A> struct is_same<A, A> { static constexpr bool value = true; };

template <typename T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };

template <typename T> struct is_int { static constexpr bool value = false; };
#define TREADLE_DECLARE_INT(T)                 \
    template <> struct is_int<T> {             \
        static constexpr bool value = true;    \
    };
TREADLE_DECLARE_INT(int8)
TREADLE_DECLARE_INT(uint8)
TREADLE_DECLARE_INT(int16)
TREADLE_DECLARE_INT(uint16)
TREADLE_DECLARE_INT(int32)
TREADLE_DECLARE_INT(uint32)
TREADLE_DECLARE_INT(int64)
TREADLE_DECLARE_INT(uint64)
#undef TREADLE_DECLARE_INT

template <typename T> struct is_scalar {
    static constexpr bool value = is_int<T>::value || is_float<T>::value || is_same<T, bool>::value;
};

// The scalar type of a scalar, vector or matrix (vec.h and mat.h add their specialisations).
template <typename T> struct scalar_of { typedef T type; };

// Bit patterns of floats without the C++ library.
TREADLE_FUNC uint32 float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32 u;
    __builtin_memcpy(&u, &f, 4);
    return u;
#endif
}
TREADLE_FUNC float float_from_bits(uint32 u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
#endif
}
TREADLE_FUNC uint64 double_bits(double d) {
#if defined(__CUDA_ARCH__)
    return (uint64)__double_as_longlong(d);
#else
    uint64 u;
    __builtin_memcpy(&u, &d, 8);
    return u;
#endif
}
TREADLE_FUNC double double_from_bits(uint64 u) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double((long long)u);
#else
    double d;
    __builtin_memcpy(&d, &u, 8);
    return d;
#endif
}

// Rounds `mantissa >> shift` to nearest, ties to even (shift >= 1).
template <typename U> TREADLE_FUNC U round_shift_rne(U mantissa, unsigned shift) {
    U r = mantissa >> shift;
    U rem = mantissa & ((U(1) << shift) - 1);
    U halfway = U(1) << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1)))
        ++r;
    return r;
}

// float -> binary16 bits, round to nearest even. NaNs stay NaN (quieted, payload top bits kept).
TREADLE_FUNC uint16 float_to_half_bits(float f) {
#if defined(__CUDA_ARCH__)
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#endif
    const uint32 x = float_bits(f);
    const uint32 sign = (x >> 16) & 0x8000u;
    const uint32 ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)  // inf or nan
        return (uint16)(sign | (ax > 0x7f800000u ? (0x7e00u | ((ax >> 13) & 0x3ffu)) : 0x7c00u));
    if (ax >= 0x477ff000u)  // >= 65520: rounds to infinity
        return (uint16)(sign | 0x7c00u);
    if (ax < 0x38800000u) {  // below 2^-14: half subnormal or zero
        const uint32 e = ax >> 23;
        const unsigned shift = 126u - e;  // value / 2^-24 = m * 2^(e - 126)
        if (shift > 24u)
            return (uint16)sign;
        const uint32 m = (ax & 0x7fffffu) | 0x800000u;
        return (uint16)(sign | round_shift_rne<uint32>(m, shift));
    }
    // normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits; a carry correctly bumps the exponent.
    return (uint16)(sign | round_shift_rne<uint32>(ax - 0x38000000u, 13));
}

// double -> binary16 bits directly (no double rounding through float).
TREADLE_FUNC uint16 double_to_half_bits(double d) {
    const uint64 x = double_bits(d);
    const uint32 sign = (uint32)(x >> 48) & 0x8000u;
    const uint64 ax = x & 0x7fffffffffffffffull;
    if (ax >= 0x7ff0000000000000ull)
        return (uint16)(sign | (ax > 0x7ff0000000000000ull ? (0x7e00u | (uint32)((ax >> 42) & 0x3ffu)) : 0x7c00u));
    if (ax >= 0x40effe0000000000ull)  // >= 65520
        return (uint16)(sign | 0x7c00u);
    const uint32 e = (uint32)(ax >> 52);
    if (e < 1009u) {  // below 2^-14
        const unsigned shift = 1051u - e;  // value / 2^-24 = m * 2^(e - 1051)
        if (shift > 53u)
            return (uint16)sign;
        const uint64 m = (ax & 0xfffffffffffffull) | 0x10000000000000ull;
        return (uint16)(sign | (uint32)round_shift_rne<uint64>(m, shift));
    }
    const uint64 rebased = ax - (uint64(1008) << 52);  // exponent 1023 -> 15
    return (uint16)(sign | (uint32)round_shift_rne<uint64>(rebased, 42));
}

TREADLE_FUNC float half_bits_to_float(uint16 h) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
    return f;
#endif
    const uint32 sign = (uint32)(h & 0x8000u) << 16;
    const uint32 e = (h >> 10) & 0x1fu;
    const uint32 m = h & 0x3ffu;
    if (e == 0x1fu)
        return float_from_bits(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        const float v = (float)m * 5.9604644775390625e-8f;  // m * 2^-24, exact
        return (h & 0x8000u) ? -v : v;
    }
    return float_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------ float16
// IEEE binary16 stored as bits; arithmetic converts to float and rounds back (round to nearest even).
// Construction from any arithmetic type is implicit; conversion out is explicit (`float(h)`, `cast<int32>(h)`),
// so mixed expressions like `h + 1.0f` stay in half instead of being ambiguous.
struct half {
    uint16 u;

    half() = default;
    TREADLE_FUNC half(float f) : u(detail::float_to_half_bits(f)) {}
    TREADLE_FUNC half(double d) : u(detail::double_to_half_bits(d)) {}
    TREADLE_FUNC half(bool b) : u(b ? 0x3c00 : 0) {}
    TREADLE_FUNC half(int8 i) : u(detail::float_to_half_bits((float)i)) {}
    TREADLE_FUNC half(uint8 i) : u(detail::float_to_half_bits((float)i)) {}
    TREADLE_FUNC half(int16 i) : u(detail::float_to_half_bits((float)i)) {}
    TREADLE_FUNC half(uint16 i) : u(detail::float_to_half_bits((float)i)) {}
    TREADLE_FUNC half(int32 i) : u(detail::double_to_half_bits((double)i)) {}
    TREADLE_FUNC half(uint32 i) : u(detail::double_to_half_bits((double)i)) {}
    TREADLE_FUNC half(int64 i) : u(detail::double_to_half_bits((double)i)) {}
    TREADLE_FUNC half(uint64 i) : u(detail::double_to_half_bits((double)i)) {}

    TREADLE_FUNC static half from_bits(uint16 bits) {
        half h;
        h.u = bits;
        return h;
    }

    TREADLE_FUNC explicit operator float() const { return detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator double() const { return (double)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator bool() const { return (u & 0x7fffu) != 0; }
    TREADLE_FUNC explicit operator int8() const { return (int8)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator uint8() const { return (uint8)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator int16() const { return (int16)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator uint16() const { return (uint16)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator int32() const { return (int32)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator uint32() const { return (uint32)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator int64() const { return (int64)detail::half_bits_to_float(u); }
    TREADLE_FUNC explicit operator uint64() const { return (uint64)detail::half_bits_to_float(u); }

    TREADLE_FUNC half& operator+=(half o) { return *this = half(float(*this) + float(o)); }
    TREADLE_FUNC half& operator-=(half o) { return *this = half(float(*this) - float(o)); }
    TREADLE_FUNC half& operator*=(half o) { return *this = half(float(*this) * float(o)); }
    TREADLE_FUNC half& operator/=(half o) { return *this = half(float(*this) / float(o)); }
};
typedef half float16;
static_assert(sizeof(half) == 2, "half must be 2 bytes");

TREADLE_FUNC half operator+(half a, half b) { return half(float(a) + float(b)); }
TREADLE_FUNC half operator-(half a, half b) { return half(float(a) - float(b)); }
TREADLE_FUNC half operator*(half a, half b) { return half(float(a) * float(b)); }
TREADLE_FUNC half operator/(half a, half b) { return half(float(a) / float(b)); }
TREADLE_FUNC half operator-(half a) { return half::from_bits((uint16)(a.u ^ 0x8000u)); }
TREADLE_FUNC half operator+(half a) { return a; }
TREADLE_FUNC bool operator==(half a, half b) { return float(a) == float(b); }
TREADLE_FUNC bool operator!=(half a, half b) { return float(a) != float(b); }
TREADLE_FUNC bool operator<(half a, half b) { return float(a) < float(b); }
TREADLE_FUNC bool operator<=(half a, half b) { return float(a) <= float(b); }
TREADLE_FUNC bool operator>(half a, half b) { return float(a) > float(b); }
TREADLE_FUNC bool operator>=(half a, half b) { return float(a) >= float(b); }

namespace detail {
template <> struct is_float<half> { static constexpr bool value = true; };
}  // namespace detail

// ------------------------------------------------------------------------------------------------ launch bounds
struct launch_bounds_t {
    int64 shape[4];
    int32 ndim;
    int32 pad;
    int64 size;
};
static_assert(sizeof(launch_bounds_t) == 48, "launch_bounds_t layout");

// ------------------------------------------------------------------------------------------------ cast
// Scalar conversion with C++ semantics (float -> int truncates; anything -> bool is `!= 0`). Also converts vectors
// and matrices of equal shape (their converting constructors are explicit, which static_cast allows).
template <typename To, typename From> TREADLE_FUNC To cast(From x) { return static_cast<To>(x); }

// Gradient flows only between floating-point types; any integer or bool side is a zero-gradient cut.
template <typename To, typename From> TREADLE_FUNC void adj_cast(From, From& adj_x, const To& adj_ret) {
    if constexpr (detail::is_float<typename detail::scalar_of<From>::type>::value &&
                  detail::is_float<typename detail::scalar_of<To>::type>::value)
        adj_x += static_cast<From>(adj_ret);
}

}  // namespace treadle
