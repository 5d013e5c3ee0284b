// Support used only by generated kernel code: the export macro, sub-array views and flushing printf.
#pragma once
#include "treadle.h"
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif

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

// ------------------------------------------------------------------------------------------------ checked mode
// With TREADLE_CHECKED, generated code records which statement each thread is executing (an index into a location
// table kept on the Python side); the first failed check of a launch is stored here and read back by the launcher.
#if defined(TREADLE_CHECKED) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
namespace treadle {
// The statement (index into the location table) and the thread each thread is executing. Reached only through the
// out-of-line check_slot(), never by an inline TLS access: see ckpt_stack() below for why.
struct check_slot_t {
    int loc = -1;
    long long tid = -1;
};
inline thread_local check_slot_t tl_check;
__attribute__((noinline)) inline check_slot_t* check_slot() { return &tl_check; }
// TREADLE_AT stores through `treadle_chk`: in a kernel body, the local pointer to the slot that TREADLE_THREAD takes
// once per thread; elsewhere (functions), the global null below, which looks the slot up at each statement.
inline void check_at(check_slot_t* slot, int at) { slot->loc = at; }
inline void check_at(decltype(nullptr), int at) { check_slot()->loc = at; }
static int g_error_set = 0;
static long long g_error[8];  // location index, thread, dimension (or code), index, extent, indices 1..3
}  // namespace treadle

extern "C" void treadle_report_oob(int dim, long long index, long long extent) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&treadle::g_error_set, &expected, 2, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        const treadle::check_slot_t* slot = treadle::check_slot();
        treadle::g_error[0] = slot->loc;
        treadle::g_error[1] = slot->tid;
        treadle::g_error[2] = dim;
        treadle::g_error[3] = index;
        treadle::g_error[4] = extent;
        treadle::g_error[5] = treadle::g_error[6] = treadle::g_error[7] = 0;
        __atomic_store_n(&treadle::g_error_set, 1, __ATOMIC_RELEASE);
    }
}

// config.verify_fp: a NaN (code -4) or an infinity (code -5) stored into element (i0, i1, i2, i3) of a float array;
// `extent` carries the number of indices.
static void treadle_report_fp(int code, int nidx, long long i0, long long i1, long long i2, long long i3) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&treadle::g_error_set, &expected, 2, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        const treadle::check_slot_t* slot = treadle::check_slot();
        const long long rec[8] = {slot->loc, slot->tid, code, i0, nidx, i1, i2, i3};
        for (int i = 0; i < 8; ++i) treadle::g_error[i] = rec[i];
        __atomic_store_n(&treadle::g_error_set, 1, __ATOMIC_RELEASE);
    }
}

// The record of the first failed check since the last call (8 entries; see g_error), cleared by reading it.
extern "C" TREADLE_EXPORT int treadle_checked_error(long long* out) {
    if (__atomic_load_n(&treadle::g_error_set, __ATOMIC_ACQUIRE) != 1) return 0;
    for (int i = 0; i < 8; ++i) out[i] = treadle::g_error[i];
    __atomic_store_n(&treadle::g_error_set, 0, __ATOMIC_RELEASE);
    return 1;
}

namespace treadle {
// 0: finite, -4: NaN, -5: infinite (from the bits, so fast-math flags cannot fold the test away).
inline int fp_class(double x) {
    unsigned long long b;
    ::memcpy(&b, &x, 8);
    if ((b & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL) return 0;
    return (b & 0x000fffffffffffffULL) ? -4 : -5;
}
inline int fp_class(float x) { return fp_class(double(x)); }
inline int fp_class(const half& x) { return fp_class(double(float(x))); }
// Check every component of a stored value of scalar type S (scalars, vectors, matrices, quaternions, transforms).
template <typename S, typename V>
inline void verify_fp(const V& v, int nidx, long long i0, long long i1 = 0, long long i2 = 0, long long i3 = 0) {
    const S* p = reinterpret_cast<const S*>(&v);
    for (size_t k = 0; k < sizeof(V) / sizeof(S); ++k) {
        const int c = fp_class(p[k]);
        if (c) {
            treadle_report_fp(c, nidx, i0, i1, i2, i3);
            return;
        }
    }
}
}  // namespace treadle
static constexpr decltype(nullptr) treadle_chk = nullptr;
#define TREADLE_AT(at) treadle::check_at(treadle_chk, (at));
#define TREADLE_THREAD(t)                                                                                              \
    treadle::check_slot_t* const treadle_chk = treadle::check_slot();                                                  \
    treadle_chk->tid = (t);
#else
#define TREADLE_AT(loc)
#define TREADLE_THREAD(t)
#endif

// ------------------------------------------------------------------------------------------------ adjoints
namespace treadle {

// Accumulate an adjoint: a += b (struct and tuple overloads are generated next to their types).
template <typename T> TREADLE_FUNC void adj_accum(T& a, const T& b) { a = treadle::add(a, b); }
// The value an adjoint starts from (and is reset to): -0.0 in every float32/float64 component, else zero. Both are
// zero; -0.0 is the exact additive identity (x + -0.0 == x for every x, where +0.0 + -0.0 is +0.0), so the compiler
// may fold an adjoint's first accumulation (and an fma into it) into a plain copy without any fast-math licence,
// which it may not do from +0.0. Gradient buffers start from +0.0 and only receive sums, so they come out the same.
template <typename T> TREADLE_FUNC T adj_zero() {
    typedef typename detail::scalar_of<T>::type S;
    if constexpr (detail::is_float<S>::value)
        return T(S(-0.0));
    else
        return T{};
}
template <typename T> TREADLE_FUNC void adj_reset(T& a) { a = adj_zero<T>(); }
// Accumulate into a gradient buffer element that other threads may update too.
template <typename T> TREADLE_FUNC void adj_atomic_accum(T* g, const T& v) { treadle::atomic_add(g, v); }

// Gradient of a load at the thread's own index (emit_adjoint.own_index_arrays): when no other thread can touch the
// element (`own`, checked once per launch by grad_own/grad_apart) a plain add, else an atomic one.
template <typename T> TREADLE_FUNC void adj_grad_add(T* g, const T& v, bool own) {
    if (own)
        *g = treadle::add(*g, v);
    else
        treadle::atomic_add(g, v);
}
// Byte range [lo, hi) of an array's gradient buffer (empty without one); ND is the array type's static ndim.
struct grad_span_t {
    unsigned long long lo, hi;
};
template <int ND, typename T> TREADLE_FUNC grad_span_t grad_span(const array_t<T>& a) {
    if (!a.grad)
        return grad_span_t{0, 0};
    unsigned long long lo = (unsigned long long)a.grad, hi = lo + sizeof(T);
    for (int d = 0; d < ND; ++d) {
        if (a.shape[d] <= 0)
            return grad_span_t{0, 0};
        const int64 e = (a.shape[d] - 1) * a.strides[d];
        if (e >= 0)
            hi += (unsigned long long)e;
        else
            lo -= (unsigned long long)(-e);
    }
    return grad_span_t{lo, hi};
}
// Whether distinct indices of `a` address distinct gradient elements: sorted by size, each stride clears the span of
// the smaller dimensions (true for contiguous arrays and their slices; false for zero or overlapping strides).
template <int ND, typename T> TREADLE_FUNC bool grad_own(const array_t<T>& a) {
    if (!a.grad)
        return false;
    int64 s[ND > 0 ? ND : 1], n[ND > 0 ? ND : 1];
    for (int d = 0; d < ND; ++d) {
        s[d] = a.strides[d] < 0 ? -a.strides[d] : a.strides[d];
        n[d] = a.shape[d];
    }
    for (int d = 1; d < ND; ++d)
        for (int k = d; k > 0 && s[k] < s[k - 1]; --k) {
            const int64 ts = s[k], tn = n[k];
            s[k] = s[k - 1], n[k] = n[k - 1], s[k - 1] = ts, n[k - 1] = tn;
        }
    int64 need = (int64)sizeof(T);
    for (int d = 0; d < ND; ++d) {
        if (n[d] <= 1)
            continue;
        if (s[d] < need)
            return false;
        need = s[d] * (n[d] - 1) + need;
    }
    return true;
}
// Whether an array has no gradient buffer (the backward entry's test for its `_own` body, emit_adjoint.own_condition).
template <typename T> TREADLE_FUNC bool grad_absent(const array_t<T>& a) { return !a.grad; }
TREADLE_FUNC bool grad_apart(const grad_span_t& a, const grad_span_t& b) {
    return a.lo == a.hi || b.lo == b.hi || a.hi <= b.lo || b.hi <= a.lo;
}
// Whether an adjoint is non-zero (component-wise for vectors and matrices): the reverse sweep skips the adjoint of a
// builtin whose result adjoint is exactly zero, so that 0 * inf / 0 * NaN partials of unused values stay out.
template <typename S> TREADLE_FUNC bool scalar_nonzero(S s) { return s != S(0); }
TREADLE_FUNC bool scalar_nonzero(half h) { return (h.u & 0x7fffu) != 0; }
template <typename S, typename T> TREADLE_FUNC bool adj_nonzero(const T& v) {
    const S* p = reinterpret_cast<const S*>(&v);
    bool nz = false;
    for (unsigned k = 0; k < sizeof(T) / sizeof(S); ++k)
        nz |= scalar_nonzero(p[k]);
    return nz;
}

// Per-thread checkpoint stack for differentiating loops: each iteration pushes the variables its body modifies;
// the reverse sweep reads them back by position and pops the loop's entries when done.
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
struct ckpt_stack_t {
    unsigned char* data = nullptr;
    size_t size = 0;
    size_t cap = 0;
    ~ckpt_stack_t() { ::free(data); }
};
inline thread_local ckpt_stack_t tl_ckpt;

// The stack is reached only through this out-of-line call. A thread's TLS access takes the dynamic linker's slow
// path (which may run malloc and glibc's AVX-512 string functions, clobbering zmm16-31 that compilers assume a TLS
// access preserves) not only on its first access but after any later dlopen() -- e.g. another Python thread
// loading a kernel library while this kernel runs. Inside this call no vector value of the kernel is live, and at
// the call site the compiler treats every vector register as clobbered, as for any call.
__attribute__((noinline)) inline ckpt_stack_t& ckpt_stack() { return tl_ckpt; }

inline size_t ckpt_size() { return ckpt_stack().size; }
template <typename T> inline void ckpt_push(const T& v) {
    ckpt_stack_t& s = ckpt_stack();
    if (s.size + sizeof(T) > s.cap) {
        size_t cap = s.cap ? s.cap * 2 : 4096;
        while (cap < s.size + sizeof(T)) cap *= 2;
        unsigned char* p = static_cast<unsigned char*>(::realloc(s.data, cap));
        if (!p) ::abort();
        s.data = p;
        s.cap = cap;
    }
    ::memcpy(s.data + s.size, &v, sizeof(T));
    s.size += sizeof(T);
}
template <typename T> inline size_t ckpt_read(size_t pos, T& v) {
    ::memcpy(&v, ckpt_stack().data + pos, sizeof(T));
    return pos + sizeof(T);
}
inline void ckpt_pop_to(size_t pos) { ckpt_stack().size = pos; }
#endif

}  // namespace treadle

// ------------------------------------------------------------------------------------------------ arrays from pointers
namespace treadle {
// `wp.array(ptr=p, shape=(...), dtype=T)` in kernel code: a contiguous view of memory the kernel does not own (no
// gradient); `arr.ptr`: the address of element 0.
template <typename T>
TREADLE_FUNC array_t<T> array_from_ptr_n(uint64 p, int32 n, int64 s0, int64 s1, int64 s2, int64 s3) {
    array_t<T> r;
    const int64 s[4] = {s0, s1, s2, s3};
    r.data = reinterpret_cast<T*>(p);
    r.grad = nullptr;
    r.ndim = n;
    r.flags = 0;
    int64 stride = int64(sizeof(T));
    for (int d = 3; d >= 0; --d) {
        r.shape[d] = d < n ? s[d] : 0;
        r.strides[d] = d < n ? stride : 0;
        if (d < n) stride *= s[d];
    }
    return r;
}
template <typename T> TREADLE_FUNC array_t<T> array_from_ptr(uint64 p, int64 s0) {
    return array_from_ptr_n<T>(p, 1, s0, 0, 0, 0);
}
template <typename T> TREADLE_FUNC array_t<T> array_from_ptr(uint64 p, int64 s0, int64 s1) {
    return array_from_ptr_n<T>(p, 2, s0, s1, 0, 0);
}
template <typename T> TREADLE_FUNC array_t<T> array_from_ptr(uint64 p, int64 s0, int64 s1, int64 s2) {
    return array_from_ptr_n<T>(p, 3, s0, s1, s2, 0);
}
template <typename T> TREADLE_FUNC array_t<T> array_from_ptr(uint64 p, int64 s0, int64 s1, int64 s2, int64 s3) {
    return array_from_ptr_n<T>(p, 4, s0, s1, s2, s3);
}
template <typename T> TREADLE_FUNC uint64 array_ptr(const array_t<T>& a) {
    return uint64(reinterpret_cast<unsigned long long>(a.data));
}
}  // namespace treadle

// ------------------------------------------------------------------------------------------------ array slicing
namespace treadle {

// One entry per indexed dimension of `arr[...]` in kernel code: an integer index, or a Python-style slice.
struct slice_spec {
    int64 start;
    int64 stop;
    int64 step;
    int32 kind;  // 0: integer index; 1: slice (bit 2: has start, bit 4: has stop)
};

#if !defined(TREADLE_CHECKED) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
// A release build takes a zero slice step as 1; it says so once per kernel library on stderr (checked builds report
// the statement instead).
inline void warn_zero_step() {
    static int said = 0;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) == 0)
        fputs("treadle: slice step cannot be zero (a kernel took it as 1; run with wp.config.mode = \"debug\" to "
              "find the line)\n", stderr);
}
#endif

template <typename T> TREADLE_FUNC array_t<T> subview(const array_t<T>& a, const slice_spec* sp, int n) {
    array_t<T> r;
    int64 off = 0;
    int od = 0;
    for (int d = 0; d < a.ndim; ++d) {
        const int64 ext = a.shape[d];
        if (d < n && sp[d].kind == 0) {
            int64 i = sp[d].start;
#if defined(TREADLE_CHECKED)
            if (i < 0 || i >= ext) treadle_report_oob(d, (long long)i, (long long)ext);
#endif
            off += i * a.strides[d];
            continue;
        }
        int64 start = 0, len = ext, step = 1;
        if (d < n) {
            step = sp[d].step;
            const bool has_start = (sp[d].kind & 2) != 0, has_stop = (sp[d].kind & 4) != 0;
            if (step == 0) {
#if defined(TREADLE_CHECKED)
                treadle_report_oob(-3, 0, 0);
#elif !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
                warn_zero_step();
#endif
                step = 1;
            }
            int64 s = sp[d].start, e = sp[d].stop;
            if (step > 0) {
                s = has_start ? (s < 0 ? s + ext : s) : 0;
                e = has_stop ? (e < 0 ? e + ext : e) : ext;
                s = s < 0 ? 0 : (s > ext ? ext : s);
                e = e < 0 ? 0 : (e > ext ? ext : e);
                len = e > s ? (e - s + step - 1) / step : 0;
            } else {
                s = has_start ? (s < 0 ? s + ext : s) : ext - 1;
                e = has_stop ? (e < 0 ? e + ext : e) : -1;
                s = s < -1 ? -1 : (s > ext - 1 ? ext - 1 : s);
                e = e < -1 ? -1 : (e > ext - 1 ? ext - 1 : e);
                len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
            }
            start = s;
        }
        r.shape[od] = len;
        r.strides[od] = a.strides[d] * step;
        off += start * a.strides[d];
        ++od;
    }
    for (int d = od; d < 4; ++d) {
        r.shape[d] = 0;
        r.strides[d] = 0;
    }
    r.ndim = od;
    r.flags = a.flags;
    r.data = reinterpret_cast<T*>(reinterpret_cast<char*>(a.data) + off);
    r.grad = a.grad ? reinterpret_cast<T*>(reinterpret_cast<char*>(a.grad) + off) : nullptr;
    return r;
}

}  // namespace treadle

namespace treadle {
// First index in the sorted range [lo, hi) of a 1-d array whose value is not less than v; hi - 1 when every value
// is less (the reference API's convention: the result is always an index of the range, if it is not empty).
template <typename T> TREADLE_FUNC int32 lower_bound(const array_t<T>& a, int32 lo, int32 hi, const T& v) {
    hi = hi > lo ? hi - 1 : lo;
    while (lo < hi) {
        const int32 mid = lo + (hi - lo) / 2;
        if (*address(a, mid) < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
template <typename T> TREADLE_FUNC int32 lower_bound(const array_t<T>& a, const T& v) {
    return lower_bound(a, 0, int32(a.shape[0]), v);
}
}  // namespace treadle

namespace treadle {
// A contiguous descriptor over thread-private storage (kernel-local `wp.zeros(shape, dtype)`).
template <typename T>
TREADLE_FUNC array_t<T> local_array(T* data, T* grad, int ndim, int64 s0, int64 s1, int64 s2, int64 s3) {
    array_t<T> a;
    a.data = data;
    a.grad = grad;
    const int64 s[4] = {s0, s1, s2, s3};
    int64 stride = sizeof(T);
    for (int d = 3; d >= 0; --d) {
        a.shape[d] = d < ndim ? s[d] : 0;
        a.strides[d] = d < ndim ? stride : 0;
        if (d < ndim) stride *= s[d];
    }
    a.ndim = ndim;
    a.flags = 0;
    return a;
}
template <typename T> TREADLE_FUNC void zero_fill(T* p, int64 n) {
    for (int64 i = 0; i < n; ++i) p[i] = T();
}
}  // namespace treadle

namespace treadle {
// wp.cast(x, T): reinterpret the bits of x as T (same size).
template <typename To, typename From> TREADLE_FUNC To bit_cast(const From& x) {
    static_assert(sizeof(To) == sizeof(From), "cast() needs types of the same size");
    To r;
    ::memcpy(&r, &x, sizeof(To));
    return r;
}
}  // namespace treadle

namespace treadle {
// The gradient buffer of an array as an array (what native adjoint snippets see as adj_<array>).
template <typename T> TREADLE_FUNC array_t<T> grad_of(const array_t<T>& a) {
    array_t<T> g = a;
    g.data = a.grad;
    g.grad = nullptr;
    return g;
}
}  // namespace treadle

namespace treadle {
// bfloat16 storage type: the upper 16 bits of a float32 (round to nearest even). Kernels load, store and convert
// it; arithmetic happens after converting to float32.
struct bfloat16 {
    uint16 u;
    TREADLE_FUNC bfloat16() : u(0) {}
    TREADLE_FUNC bfloat16(float f) {
        uint32 bits;
        ::memcpy(&bits, &f, 4);
        if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) {
            u = uint16((bits >> 16) | 0x40);  // quiet NaN
        } else {
            bits += 0x7fffu + ((bits >> 16) & 1u);
            u = uint16(bits >> 16);
        }
    }
    TREADLE_FUNC bfloat16(double d) : bfloat16(float(d)) {}
    TREADLE_FUNC bfloat16(int32 i) : bfloat16(float(i)) {}
    TREADLE_FUNC operator float() const {
        uint32 bits = uint32(u) << 16;
        float f;
        ::memcpy(&f, &bits, 4);
        return f;
    }
};
// bfloat16 atomics (add, sub, min, max, cas, exch): a compare-and-swap loop on the 16 bits, arithmetic in float32
// rounded back to bfloat16 (the reference supports the same set; not differentiable, like the storage type itself).
#define TREADLE_BF16_ATOMIC(name, op)                                                                               \
    TREADLE_FUNC bfloat16 name(bfloat16* addr, bfloat16 v) {                                                       \
        return detail::cas_update(addr, detail::op<bfloat16>{v});                                                  \
    }
TREADLE_BF16_ATOMIC(atomic_add, op_add)
TREADLE_BF16_ATOMIC(atomic_sub, op_sub)
TREADLE_BF16_ATOMIC(atomic_min, op_min)
TREADLE_BF16_ATOMIC(atomic_max, op_max)
TREADLE_BF16_ATOMIC(atomic_exch, op_set)
#undef TREADLE_BF16_ATOMIC
TREADLE_FUNC bfloat16 atomic_cas(bfloat16* addr, bfloat16 compare, bfloat16 value) {
    bfloat16 old;
    old.u = detail::cas_bits(&addr->u, compare.u, value.u);
    return old;
}
}  // namespace treadle

namespace treadle {
// identity<N, T>() has no inputs, so nothing flows back.
template <unsigned N, typename T> TREADLE_FUNC void adj_identity(const mat_t<N, N, T>&) {}
}  // namespace treadle
