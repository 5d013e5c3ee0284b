// Support used only by generated kernel code: the export macro, sub-array views and flushing printf.
#pragma once
#include "treadle.h"

#if defined(_WIN32)
#define TREADLE_EXPORT __declspec(dllexport)
#else
#define TREADLE_EXPORT __attribute__((visibility("default")))
#endif

namespace treadle {

// arr[i] on an array with more than one dimension: the sub-array that drops the leading dimension(s).
template <typename T> TREADLE_FUNC array_t<T> view(const array_t<T>& a, int64 i) {
    array_t<T> r;
    r.data = address(a, i);
    r.grad = a.grad ? grad_address(a, i) : nullptr;
    for (int d = 0; d < 3; ++d) {
        r.shape[d] = a.shape[d + 1];
        r.strides[d] = a.strides[d + 1];
    }
    r.shape[3] = 0;
    r.strides[3] = 0;
    r.ndim = a.ndim - 1;
    r.flags = a.flags;
    return r;
}
template <typename T> TREADLE_FUNC array_t<T> view(const array_t<T>& a, int64 i, int64 j) {
    return view(view(a, i), j);
}
template <typename T> TREADLE_FUNC array_t<T> view(const array_t<T>& a, int64 i, int64 j, int64 k) {
    return view(view(view(a, i), j), k);
}

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
template <typename... Args> inline void printf_flush(const char* fmt, Args... args) {
    ::printf(fmt, args...);
    ::fflush(stdout);
}
#else
template <typename... Args> TREADLE_FUNC void printf_flush(const char* fmt, Args... args) { ::printf(fmt, args...); }
#endif

}  // namespace treadle
