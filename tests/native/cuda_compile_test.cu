// Compile-only check of the CUDA branches of treadle/native with NVRTC (driven by test_headers.py; no GPU needed).
#include "treadle.h"

#if defined(TREADLE_CHECKED)
extern "C" __device__ void treadle_report_oob(int dim, long long index, long long extent) {
    printf("out of bounds: dim %d index %lld extent %lld\n", dim, index, extent);
}
#endif

namespace treadle {

template <typename T> __device__ void int_atomics(T* p) {
    atomic_add(p, T(1));
    atomic_sub(p, T(1));
    atomic_min(p, T(1));
    atomic_max(p, T(1));
    atomic_and(p, T(1));
    atomic_or(p, T(1));
    atomic_xor(p, T(1));
    atomic_cas(p, T(1), T(2));
    atomic_exch(p, T(3));
}

template <typename T> __device__ void float_atomics(T* p, T v) {
    atomic_add(p, v);
    atomic_sub(p, v);
    atomic_min(p, v);
    atomic_max(p, v);
    atomic_cas(p, v, v);
    atomic_exch(p, v);
}

__device__ void body(array_t<float> a, array_t<vec_t<3, float>> v, array_t<half> h, array_t<double> d, int i) {
    const float x = load(a, i);
    const vec_t<3, float> p = load(v, i);
    float y = sin(x) + cos(x) + erfinv(x) + erfcinv(x) + pow(x, 2.0f) + atan2(x, 1.0f) + smoothstep(0.0f, 1.0f, x);
    y += float(isnan(x)) + length(normalize(p)) + determinant(mat_t<3, 3, float>(1.0f)) + float(floordiv(7, i + 1));
    half hx = load(h, i);
    hx = sin(hx) + half(2.0f) * hx;
    store(h, i, hx);
    float_atomics(address(a, 0), y);
    float_atomics(address(d, 0), double(y));
    float_atomics(address(h, 0), hx);
    atomic_add(address(v, 0), p);
    __shared__ int32 s32[4];
    __shared__ uint32 u32[4];
    __shared__ int64 s64[4];
    __shared__ uint64 u64[4];
    __shared__ int16 s16[4];
    __shared__ uint8 u8[4];
    int_atomics(&s32[1]);
    int_atomics(&u32[1]);
    int_atomics(&s64[1]);
    int_atomics(&u64[1]);
    int_atomics(&s16[1]);
    int_atomics(&u8[3]);
    float ax = 0.0f, g = 0.0f;
    int ai = 0;
    adj_sin(x, ax, 1.0f);
    adj_erfinv(x, ax, 1.0f);
    array_t<float> adj_a = {};
    adj_load(a, i, adj_a, ai, 1.0f);
    adj_store(a, i, x, adj_a, ai, g);
    int32 t[2];
    launch_bounds_t lb = {};
    tid_from_index(lb, i, t);
    print(p);
    print(x);
    print(hx);
    print(mat_t<2, 2, double>());
    print("text");
    expect_eq(x, y);
    expect_near(p, p, 0.1f);
    store(a, i, y + float(cast<int32>(hx)) + ax + g + float(extract(p, t[0])));
}

}  // namespace treadle

extern "C" __global__ void kernel(treadle::array_t<float> a, treadle::array_t<treadle::vec_t<3, float>> v,
                                  treadle::array_t<treadle::half> h, treadle::array_t<double> d) {
    treadle::body(a, v, h, d, (int)(blockIdx.x * blockDim.x + threadIdx.x));
}
