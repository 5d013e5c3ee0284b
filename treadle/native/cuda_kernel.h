// Device-side support for the CUDA entry points of generated kernels (included only by CUDA translation units,
// after treadle.h and kernel_support.h; see treadle/_src/compiler/emit_cuda.py).
//
// - make_dense / is_dense: the device twins of the host-only helpers in launch.h (the per-thread bodies name them).
// - cuda_tid: the per-dimension thread index of a flat launch index (32-bit arithmetic when the launch fits).
// - A per-thread checkpoint stack for differentiating loops (the host uses a growing thread_local buffer): a
//   fixed-capacity buffer in the thread's local memory, sized at compile time (TREADLE_CKPT_BYTES). Generated code
//   calls treadle::ckpt_* without a handle, so each thread publishes a pointer to its stack in a shared-memory
//   slot indexed by threadIdx.x (1-d blocks of at most TREADLE_CUDA_MAX_BLOCK threads). A push that does not fit
//   is counted but not stored; the entry point then records the size the thread needed in
//   treadle_cuda_ckpt_overflow, which the runtime reads back and reports (never a silent wrong gradient).
// - Checked mode (TREADLE_CHECKED): the statement location and thread index live in shared-memory slots too, and
//   the first failed check of a launch is stored in treadle_cuda_checked_error for the runtime to read.
#pragma once
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#ifndef TREADLE_CUDA_MAX_BLOCK
#define TREADLE_CUDA_MAX_BLOCK 1024
#endif

// Kernel parameters read in place from the constant bank even when the body takes them by reference (sm_70+).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700 && defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 7))
#define TREADLE_GRID_CONSTANT __grid_constant__
#else
#define TREADLE_GRID_CONSTANT
#endif

namespace treadle {

template <int ND, typename T> TREADLE_FUNC bool is_dense(const array_t<T>& a) {
    int64 s = (int64)sizeof(T);
    for (int d = ND - 1; d >= 0; --d) {
        if (a.shape[d] > 1 && a.strides[d] != s)
            return false;
        s *= a.shape[d];
    }
    return true;
}

template <int ND, typename T> TREADLE_FUNC void make_dense(array_t<T>& a) {
    int64 s = (int64)sizeof(T);
    for (int d = ND - 1; d >= 0; --d) {
        a.strides[d] = s;
        s *= a.shape[d];
    }
}

// t[0..ndim) from the flat index (row-major over bounds.shape); unused components stay 0.
__device__ __forceinline__ void cuda_tid(const launch_bounds_t& b, int64 flat, int32* t) {
    if (b.ndim <= 1) {
        t[0] = (int32)flat;
        return;
    }
    if (b.size <= 0x7fffffffLL) {
        uint32 r = (uint32)flat;
        for (int d = b.ndim - 1; d > 0; --d) {
            const uint32 n = (uint32)b.shape[d];
            t[d] = (int32)(r % n);
            r /= n;
        }
        t[0] = (int32)r;
        return;
    }
    tid_from_index(b, flat, t);
}

// Prefetch element i of a 1-d array (when D) and of its gradient (when G) into L2; nothing when i is out of range.
template <bool D, bool G, typename T> __device__ __forceinline__ void cuda_prefetch(const array_t<T>& a, int64 i) {
    if (i >= a.shape[0])
        return;
    const int64 off = i * a.strides[0];
    if (D)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(a.data) + off));
    if (G && a.grad != nullptr)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(a.grad) + off));
}

// ------------------------------------------------------------------------------------------------ checkpoints
struct cuda_ckpt_t {
    unsigned char* data;
    unsigned long long size;  // bytes pushed (may exceed cap: then the thread overflowed)
    unsigned long long cap;
    unsigned long long need;  // the largest size a push that did not fit asked for (0: every push fit)
};

}  // namespace treadle

extern "C" {
// The largest checkpoint size (bytes per thread) a thread needed beyond the compiled capacity; 0 when none did.
__device__ unsigned long long treadle_cuda_ckpt_overflow = 0;
}
__shared__ treadle::cuda_ckpt_t* treadle_ckpt_slots[TREADLE_CUDA_MAX_BLOCK];

namespace treadle {

__device__ __forceinline__ cuda_ckpt_t& cuda_ckpt() { return *treadle_ckpt_slots[threadIdx.x]; }

TREADLE_FUNC size_t ckpt_size() {
#if defined(__CUDA_ARCH__)
    return (size_t)cuda_ckpt().size;
#else
    return 0;
#endif
}

template <typename T> TREADLE_FUNC void ckpt_push(const T& v) {
#if defined(__CUDA_ARCH__)
    cuda_ckpt_t& s = cuda_ckpt();
    if (s.size + sizeof(T) <= s.cap)
        memcpy(s.data + s.size, &v, sizeof(T));
    else if (s.size + sizeof(T) > s.need)
        s.need = s.size + sizeof(T);  // kept past ckpt_pop_to: the launch reports it
    s.size += sizeof(T);
#else
    (void)v;
#endif
}

template <typename T> TREADLE_FUNC size_t ckpt_read(size_t pos, T& v) {
#if defined(__CUDA_ARCH__)
    const cuda_ckpt_t& s = cuda_ckpt();
    if (pos + sizeof(T) <= s.cap)
        memcpy(&v, s.data + pos, sizeof(T));
#else
    (void)v;
#endif
    return pos + sizeof(T);
}

TREADLE_FUNC void ckpt_pop_to(size_t pos) {
#if defined(__CUDA_ARCH__)
    cuda_ckpt().size = pos;
#else
    (void)pos;
#endif
}

// Entry-point helpers: bind the thread's stack before its first thread index, empty it after each one, report
// an overflow at the end. (The backward body pops every loop's checkpoints before it returns, so the size it
// reached is only known from `need`.)
__device__ __forceinline__ void cuda_ckpt_bind(cuda_ckpt_t& s, unsigned char* buf, unsigned long long cap) {
    s.data = buf;
    s.size = 0;
    s.cap = cap;
    s.need = 0;
    treadle_ckpt_slots[threadIdx.x] = &s;
}

__device__ __forceinline__ void cuda_ckpt_check(cuda_ckpt_t& s) { s.size = 0; }

__device__ __forceinline__ void cuda_ckpt_report(const cuda_ckpt_t& s) {
    if (s.need > 0)
        atomicMax(&treadle_cuda_ckpt_overflow, s.need);
}

}  // namespace treadle

// ------------------------------------------------------------------------------------------------ checked mode
#if defined(TREADLE_CHECKED)
extern "C" {
// [0]: 1 once a check failed; [1] location index, [2] thread, [3] dimension, [4] index, [5] extent.
__device__ long long treadle_cuda_checked_error[6] = {0, 0, 0, 0, 0, 0};
}
__shared__ int treadle_loc_slots[TREADLE_CUDA_MAX_BLOCK];
__shared__ long long treadle_tid_slots[TREADLE_CUDA_MAX_BLOCK];

extern "C" __device__ void treadle_report_oob(int dim, long long index, long long extent) {
    unsigned long long* flag = reinterpret_cast<unsigned long long*>(&treadle_cuda_checked_error[0]);
    if (atomicCAS(flag, 0ull, 2ull) == 0ull) {
        treadle_cuda_checked_error[1] = treadle_loc_slots[threadIdx.x];
        treadle_cuda_checked_error[2] = treadle_tid_slots[threadIdx.x];
        treadle_cuda_checked_error[3] = dim;
        treadle_cuda_checked_error[4] = index;
        treadle_cuda_checked_error[5] = extent;
        __threadfence();
        atomicExch(flag, 1ull);
    }
}

#undef TREADLE_AT
#undef TREADLE_THREAD
#define TREADLE_AT(loc) treadle_loc_slots[threadIdx.x] = (loc);
#define TREADLE_THREAD(t) treadle_tid_slots[threadIdx.x] = (long long)(t);
#endif

#endif  // CUDA
