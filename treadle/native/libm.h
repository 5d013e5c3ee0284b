// The C math library's names (sqrtf, fabsf, powf, atan2, ...) declared in the global namespace, for the C++ of
// @func_native snippets: warp-lang's CPU runtime has them in scope, and snippets written for it call them. The
// headers themselves never use these (math goes through compiler builtins, see core.h), and <math.h> is not
// included because in C++ it pulls in <cmath>, which is slow to parse. On CUDA the device math API provides them.
#pragma once

// The C fixed-width integer types (uint32_t, int64_t, ...), which snippets use as well: <stdint.h> on the host
// (a small C header, also under nvcc), the same typedefs under NVRTC, which has no C library headers.
#if !defined(__CUDACC_RTC__)
#include <stdint.h>
#else
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif

#if !defined(TREADLE_CUDA)
#define TREADLE_LIBM_DECL1(name) extern "C" float name##f(float) noexcept; extern "C" double name(double) noexcept;
#define TREADLE_LIBM_DECL2(name) \
    extern "C" float name##f(float, float) noexcept; extern "C" double name(double, double) noexcept;
TREADLE_LIBM_DECL1(sqrt)
TREADLE_LIBM_DECL1(cbrt)
TREADLE_LIBM_DECL1(fabs)
TREADLE_LIBM_DECL1(exp)
TREADLE_LIBM_DECL1(exp2)
TREADLE_LIBM_DECL1(expm1)
TREADLE_LIBM_DECL1(log)
TREADLE_LIBM_DECL1(log2)
TREADLE_LIBM_DECL1(log10)
TREADLE_LIBM_DECL1(log1p)
TREADLE_LIBM_DECL1(sin)
TREADLE_LIBM_DECL1(cos)
TREADLE_LIBM_DECL1(tan)
TREADLE_LIBM_DECL1(asin)
TREADLE_LIBM_DECL1(acos)
TREADLE_LIBM_DECL1(atan)
TREADLE_LIBM_DECL1(sinh)
TREADLE_LIBM_DECL1(cosh)
TREADLE_LIBM_DECL1(tanh)
TREADLE_LIBM_DECL1(asinh)
TREADLE_LIBM_DECL1(acosh)
TREADLE_LIBM_DECL1(atanh)
TREADLE_LIBM_DECL1(floor)
TREADLE_LIBM_DECL1(ceil)
TREADLE_LIBM_DECL1(round)
TREADLE_LIBM_DECL1(trunc)
TREADLE_LIBM_DECL1(rint)
TREADLE_LIBM_DECL1(nearbyint)
TREADLE_LIBM_DECL1(erf)
TREADLE_LIBM_DECL1(erfc)
TREADLE_LIBM_DECL1(tgamma)
TREADLE_LIBM_DECL1(lgamma)
TREADLE_LIBM_DECL2(pow)
TREADLE_LIBM_DECL2(atan2)
TREADLE_LIBM_DECL2(fmod)
TREADLE_LIBM_DECL2(fmin)
TREADLE_LIBM_DECL2(fmax)
TREADLE_LIBM_DECL2(hypot)
TREADLE_LIBM_DECL2(copysign)
TREADLE_LIBM_DECL2(fdim)
TREADLE_LIBM_DECL2(remainder)
extern "C" float fmaf(float, float, float) noexcept;
extern "C" double fma(double, double, double) noexcept;
extern "C" float ldexpf(float, int) noexcept;
extern "C" double ldexp(double, int) noexcept;
#undef TREADLE_LIBM_DECL1
#undef TREADLE_LIBM_DECL2
#endif
