// Launch loops used by the CPU entry points of generated kernels (host only; not part of CUDA builds).
//
// Each kernel exports a range entry `<sym>_cpu_range(bounds, args, begin, end)` that runs threads [begin, end).
// It copies the arguments by value, then runs the per-thread body inlined in a plain counted loop:
//
// - 1-d kernels (and kernels that only use the flat index) loop over a 32-bit index, so the index arithmetic is
//   affine and the compiler can vectorize the body;
// - n-d kernels walk rows of the innermost launch dimension with the outer indices held constant, so stencils
//   vectorize along their last axis instead of paying a division per thread;
// - when every array argument is dense (C order), the body is instantiated with `make_dense` strides whose innermost
//   stride is a compile-time constant: loads and stores become unit-stride accesses. Strided views take the general
//   instantiation with runtime strides (same results, no vectorization).
//
// `<sym>_cpu_forward(bounds, args, nthreads)` runs a whole launch: through the thread pool of the Treadle runtime
// (threads.h) when that library is loaded, else serially on the calling thread.
#pragma once
#include "array.h"

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)

#define TREADLE_NOINLINE __attribute__((noinline))

// Provided by the runtime library (threads.h); null when it is not loaded.
extern "C" __attribute__((weak, visibility("default"))) void treadle_rt_parallel_for(
    void (*fn)(const void*, const void*, long long, long long), const void* bounds, const void* args, int nthreads);
extern "C" __attribute__((weak, visibility("default"))) void treadle_rt_stream_copy(void* dst, const void* src,
                                                                                  long long bytes);
extern "C" __attribute__((weak, visibility("default"))) void treadle_rt_stream_fence();

namespace treadle {

typedef void (*range_fn_t)(const void*, const void*, long long, long long);

// True when `a` (declared with ND dimensions) is laid out densely in C order. Dimensions of extent 0 or 1 may have
// any stride: only index 0 is valid there, whatever the stride.
template <int ND, typename T> TREADLE_FUNC bool is_dense(const array_t<T>& a) {
    int64 s = (int64)sizeof(T);
    for (int d = ND - 1; d >= 0; --d) {
        if (a.shape[d] > 1 && a.strides[d] != s)
            return false;
        s *= a.shape[d];
    }
    return true;
}

// Rewrites the strides of a dense array so that the innermost one is a constant the compiler can see.
template <int ND, typename T> TREADLE_FUNC void make_dense(array_t<T>& a) {
    int64 s = (int64)sizeof(T);
    for (int d = ND - 1; d >= 0; --d) {
        a.strides[d] = s;
        s *= a.shape[d];
    }
}

// [lo, hi): the bytes an array argument can touch; false when it has no elements.
template <int ND, typename T> inline bool span(const array_t<T>& a, const char*& lo, const char*& hi) {
    if (!a.data)
        return false;
    int64 l = 0, h = 0;
    for (int d = 0; d < ND; ++d) {
        if (a.shape[d] <= 0)
            return false;
        const int64 s = (a.shape[d] - 1) * a.strides[d];
        (s < 0 ? l : h) += s;
    }
    lo = reinterpret_cast<const char*>(a.data) + l;
    hi = reinterpret_cast<const char*>(a.data) + h + (int64)sizeof(T);
    return true;
}

// Whether the memory spanned by two array arguments is disjoint (an empty or null array overlaps nothing).
template <int NA, int NB, typename A, typename B> inline bool disjoint(const array_t<A>& a, const array_t<B>& b) {
    const char *alo, *ahi, *blo, *bhi;
    if (!span<NA>(a, alo, ahi) || !span<NB>(b, blo, bhi))
        return true;
    return ahi <= blo || bhi <= alo;
}

// Thread-local storage of a kernel library is allocated by the first `__tls_get_addr` of each thread (and updated
// after later dlopen()s). That slow path can clobber vector registers (glibc's AVX-512 string functions use
// zmm16-31, which compilers assume an inline TLS access preserves), so kernel code reaches its TLS only through
// out-of-line calls (kernel_support.h: ckpt_stack, check_slot), and a range entry touches its library's TLS first,
// before any vector value is live, so that those calls usually take the fast path.
static __thread int tl_warm;
TREADLE_NOINLINE inline void warm_tls() { tl_warm = 1; }

// Points a 1-d array argument at a chunk-local buffer of n elements (reductions, see compiler/reductions.py).
template <typename T> inline void privatize(array_t<T>& a, T* buf, int64 n) {
    a.data = buf;
    a.grad = nullptr;
    a.shape[0] = n;
    a.strides[0] = (int64)sizeof(T);
}

// Adds a chunk-local reduction buffer into the real array (one atomic per element that received anything).
template <typename T> inline void reduce_into(const array_t<T>& a, const T* buf, int64 n) {
    for (int64 k = 0; k < n; ++k)
        if (buf[k] != T(0))
            atomic_add(address(a, k), buf[k]);
}

// Whether `launch_loop<ND>` can run threads [.., end) of this launch.
template <int ND> inline bool launch_fast(const launch_bounds_t& b, int64 end) {
    return end <= 0x7fffffff && (ND <= 1 || b.ndim == ND);
}

namespace detail {
// One thread: the body called with its flat index and per-dimension indices.
template <int ND, typename F> inline void launch_one(F& f, int64 base, int32 k, int32 a0, int32 a1, int32 a2) {
    if constexpr (ND <= 1)
        f((int64)k, k, 0, 0, 0);
    else if constexpr (ND == 2)
        f(base + k, a0, k, 0, 0);
    else if constexpr (ND == 3)
        f(base + k, a0, a1, k, 0);
    else
        f(base + k, a0, a1, a2, k);
}

// Threads [k0, k1) of one row of the innermost launch dimension (a0..a2: the outer indices). `Lanes` tells the
// compiler that the iterations (threads) are independent: kernel threads are unordered, so a thread's accesses
// never have to wait for another's, and g++ may vectorize this loop with threads as lanes even when the body has
// loops of its own (launch_loop_lanes).
template <int ND, bool Lanes, typename F>
inline void launch_row(F& f, int64 base, int32 k0, int32 k1, int32 a0, int32 a1, int32 a2) {
    if constexpr (Lanes) {
#pragma GCC ivdep
        for (int32 k = k0; k < k1; ++k)
            launch_one<ND>(f, base, k, a0, a1, a2);
    } else {
        for (int32 k = k0; k < k1; ++k)
            launch_one<ND>(f, base, k, a0, a1, a2);
    }
}

template <int ND, bool Lanes, typename F>
inline void launch_rows(const launch_bounds_t& b, int64 begin, int64 end, F& f) {
    if constexpr (ND <= 1) {
        (void)b;
        launch_row<ND, Lanes>(f, 0, (int32)begin, (int32)end, 0, 0, 0);
    } else {
        int32 t[4] = {0, 0, 0, 0};
        int64 r = begin;
        for (int d = ND - 1; d >= 0; --d) {
            t[d] = (int32)(r % b.shape[d]);
            r /= b.shape[d];
        }
        const int32 inner = (int32)b.shape[ND - 1];
        int64 flat = begin;
        while (flat < end) {
            const int32 k0 = t[ND - 1];
            const int64 left = end - flat;
            const int32 k1 = left < (int64)(inner - k0) ? k0 + (int32)left : inner;
            launch_row<ND, Lanes>(f, flat - k0, k0, k1, t[0], t[1], t[2]);
            flat += k1 - k0;
            t[ND - 1] = 0;
            for (int d = ND - 2; d >= 0; --d) {
                if (++t[d] < b.shape[d])
                    break;
                t[d] = 0;
            }
        }
    }
}
}  // namespace detail

// Runs f(flat, t0, t1, t2, t3) for the threads [begin, end) of a launch with ND dimensions (see launch_fast).
template <int ND, typename F> inline void launch_loop(const launch_bounds_t& b, int64 begin, int64 end, F&& f) {
    detail::launch_rows<ND, false>(b, begin, end, f);
}

// launch_loop for a body whose thread loop may be vectorized with threads as lanes (see detail::launch_row): the
// `_nonempty` instantiation of a body whose loops have launch-constant ranges (compiler/uniform.py).
template <int ND, typename F> inline void launch_loop_lanes(const launch_bounds_t& b, int64 begin, int64 end, F&& f) {
    detail::launch_rows<ND, true>(b, begin, end, f);
}

// Outputs at least this large (bytes) are written with streaming stores (launch_loop_streamed); smaller ones are
// likely to be read again soon from the caches, which streaming stores bypass.
#ifndef TREADLE_STREAM_MIN_BYTES
#define TREADLE_STREAM_MIN_BYTES (64ll << 20)
#endif

// Whether launch_loop_streamed may write the dense 1-d output `out` for threads [begin, end).
template <typename T> inline bool stream_fits(const array_t<T>& out, int64 begin, int64 end) {
    typedef __UINTPTR_TYPE__ uptr;
    return treadle_rt_stream_copy && treadle_rt_stream_fence && end - begin >= 4096 && end <= out.shape[0] &&
           out.shape[0] * (int64)sizeof(T) >= TREADLE_STREAM_MIN_BYTES && ((uptr)out.data % alignof(T)) == 0;
}

// A dense 1-d launch whose body writes `out[i]` exactly once, unconditionally, and never reads `out`
// (compiler/streaming.py). Threads run in blocks of B; with `stream` (see stream_fits), a whole block writes into an
// aligned local buffer (the descriptor's data pointer is moved so that thread i's element is buf[i - first]) which
// is then streamed to memory with non-temporal stores -- no read-for-ownership of the output's cache lines. Threads
// before the first 64-byte boundary and a last partial block write directly. The block loop is the only inlined
// copy of the body that the compiler vectorizes, streaming or not, so streaming costs next to no build time.
template <typename T, typename F>
inline void launch_loop_streamed(int64 begin, int64 end, array_t<T>& out, bool stream, F&& f) {
    typedef __UINTPTR_TYPE__ uptr;
    constexpr int32 B = sizeof(T) <= 16 ? 1024 : 256;  // B * sizeof(T) is a multiple of 64
    alignas(64) unsigned char storage[B * sizeof(T)];
    T* const real = out.data;
    int32 i = (int32)begin;
    const int32 e = (int32)end;
    if (stream) {
#if defined(__clang__)
#pragma clang loop vectorize(disable) interleave(disable) unroll(disable)
#endif
        for (int32 n = 0; i < e && ((uptr)(real + i) % 64) != 0 && n < 64; ++n)
            f(i++);
        stream = ((uptr)(real + i) % 64) == 0;
    }
    for (; i < e; i += B) {
        const int32 stop = e - i < B ? e : i + B;
        const bool whole = stream && stop - i == B;
        if (whole)
            out.data = reinterpret_cast<T*>(reinterpret_cast<uptr>(storage) - (uptr)i * sizeof(T));
        for (int32 k = i; k < stop; ++k)
            f(k);
        if (whole) {
            out.data = real;
            treadle_rt_stream_copy(real + i, storage, (long long)(B * sizeof(T)));
        }
    }
    if (stream)
        treadle_rt_stream_fence();
}

// The flat loop of a 1-d launch with the threads dealt round-robin to four bodies (threads i, i+1, i+2, i+3 to
// f0..f3): reductions into chunk-local buffers get four independent accumulators instead of one serial chain.
template <typename F0, typename F1, typename F2, typename F3>
inline void launch_loop4(int64 begin, int64 end, F0&& f0, F1&& f1, F2&& f2, F3&& f3) {
    int32 i = (int32)begin;
    const int32 e = (int32)end;
    for (; i + 3 < e; i += 4) {
        f0(i);
        f1(i + 1);
        f2(i + 2);
        f3(i + 3);
    }
    for (; i < e; ++i)
        f0(i);
}

// Any launch shape (a kernel launched with another number of dimensions than its tid() unpacks, or more than 2^31
// threads): the thread index is recomputed for every thread.
template <typename F> inline void launch_loop_any(const launch_bounds_t& b, int64 begin, int64 end, F&& f) {
    for (int64 i = begin; i < end; ++i) {
        int32 t[4] = {0, 0, 0, 0};
        tid_from_index(b, i, t);
        f(i, t[0], t[1], t[2], t[3]);
    }
}

// A whole launch: on the runtime's thread pool when it is loaded, else on the calling thread.
inline void parallel_launch(range_fn_t range, const launch_bounds_t* b, const void* args, int32 nthreads) {
    if (nthreads > 1 && treadle_rt_parallel_for)
        treadle_rt_parallel_for(range, b, args, nthreads);
    else if (b->size > 0)
        range(b, args, 0, b->size);
}

}  // namespace treadle

#endif
