// Indexed arrays (wp.indexedarray): an array seen through per-dimension index tables.
//
// Element (i, j, ...) of an indexed array is element (idx0[i], idx1[j], ...) of the underlying array, where a null
// table means the identity on that dimension. Every operation generated code applies to arrays (address, load,
// store, their adjoints, views, len, shape, the launch helpers) has an overload here, so kernels and the emitter
// treat both kinds the same way. Layout mirrors core/abi.py IndexedArrayDesc.
#pragma once
#include "array.h"

namespace treadle {

template <typename T> struct indexedarray_t {
    array_t<T> arr;       // the underlying array (data, grad, its own shape and byte strides)
    int32* indices[4];    // per-dimension index tables (contiguous int32), or null for "all"
    int64 shape[4];       // extents as seen through the tables

    TREADLE_FUNC explicit operator bool() const { return arr.data != nullptr; }
};
static_assert(sizeof(indexedarray_t<float>) == 152, "indexedarray_t layout");

namespace detail {
// Index into the underlying array along dimension d (checked against the indexed extent in checked builds).
template <typename T> TREADLE_FUNC int64 map_index(const indexedarray_t<T>& a, int d, int64 i) {
#if defined(TREADLE_CHECKED)
    if (!(i >= -a.shape[d] && i < a.shape[d])) {
        treadle_report_oob(d, (long long)i, a.shape[d]);
        i = 0;
    }
#endif
    if (i < 0)  // counts from the end of the indexed view's dimension
        i += a.shape[d];
    return a.indices[d] ? (int64)a.indices[d][i] : i;
}
}  // namespace detail

// ------------------------------------------------------------------------------------------------ addresses
template <typename T> TREADLE_FUNC T* address(const indexedarray_t<T>& a, int64 i) {
    return address(a.arr, detail::map_index(a, 0, i));
}
template <typename T> TREADLE_FUNC T* address(const indexedarray_t<T>& a, int64 i, int64 j) {
    return address(a.arr, detail::map_index(a, 0, i), detail::map_index(a, 1, j));
}
template <typename T> TREADLE_FUNC T* address(const indexedarray_t<T>& a, int64 i, int64 j, int64 k) {
    return address(a.arr, detail::map_index(a, 0, i), detail::map_index(a, 1, j), detail::map_index(a, 2, k));
}
template <typename T> TREADLE_FUNC T* address(const indexedarray_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    return address(a.arr, detail::map_index(a, 0, i), detail::map_index(a, 1, j), detail::map_index(a, 2, k),
                   detail::map_index(a, 3, l));
}
template <typename T> TREADLE_FUNC indexedarray_t<T> grad_array(const indexedarray_t<T>& a) {
    indexedarray_t<T> g = a;
    g.arr = grad_array(a.arr);
    return g;
}
template <typename T> TREADLE_FUNC bool has_data(const indexedarray_t<T>& a) { return a.arr.data != nullptr; }
template <typename T> TREADLE_FUNC int32 grad_flags(const indexedarray_t<T>& a) { return a.arr.flags; }
template <typename T> TREADLE_FUNC T* grad_address(const indexedarray_t<T>& a, int64 i) {
    return a.arr.grad ? grad_address(a.arr, detail::map_index(a, 0, i)) : nullptr;
}
template <typename T> TREADLE_FUNC T* grad_address(const indexedarray_t<T>& a, int64 i, int64 j) {
    return a.arr.grad ? grad_address(a.arr, detail::map_index(a, 0, i), detail::map_index(a, 1, j)) : nullptr;
}
template <typename T> TREADLE_FUNC T* grad_address(const indexedarray_t<T>& a, int64 i, int64 j, int64 k) {
    return a.arr.grad ? grad_address(a.arr, detail::map_index(a, 0, i), detail::map_index(a, 1, j),
                                     detail::map_index(a, 2, k))
                      : nullptr;
}
template <typename T> TREADLE_FUNC T* grad_address(const indexedarray_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    return a.arr.grad ? grad_address(a.arr, detail::map_index(a, 0, i), detail::map_index(a, 1, j),
                                     detail::map_index(a, 2, k), detail::map_index(a, 3, l))
                      : nullptr;
}

// ------------------------------------------------------------------------------------------------ load / store
template <typename T, typename... I> TREADLE_FUNC T load(const indexedarray_t<T>& a, I... i) {
    return *address(a, int64(i)...);
}
template <typename T> TREADLE_FUNC void store(const indexedarray_t<T>& a, int64 i, const T& v) { *address(a, i) = v; }
template <typename T> TREADLE_FUNC void store(const indexedarray_t<T>& a, int64 i, int64 j, const T& v) {
    *address(a, i, j) = v;
}
template <typename T> TREADLE_FUNC void store(const indexedarray_t<T>& a, int64 i, int64 j, int64 k, const T& v) {
    *address(a, i, j, k) = v;
}
template <typename T>
TREADLE_FUNC void store(const indexedarray_t<T>& a, int64 i, int64 j, int64 k, int64 l, const T& v) {
    *address(a, i, j, k, l) = v;
}

template <typename T, typename I>
TREADLE_FUNC void adj_load(const indexedarray_t<T>& a, I i, indexedarray_t<T>&, I&, const T& adj_ret) {
    if (T* g = grad_address(a, i))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const indexedarray_t<T>& a, I i, I j, indexedarray_t<T>&, I&, I&, const T& adj_ret) {
    if (T* g = grad_address(a, i, j))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const indexedarray_t<T>& a, I i, I j, I k, indexedarray_t<T>&, I&, I&, I&,
                           const T& adj_ret) {
    if (T* g = grad_address(a, i, j, k))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const indexedarray_t<T>& a, I i, I j, I k, I l, indexedarray_t<T>&, I&, I&, I&, I&,
                           const T& adj_ret) {
    if (T* g = grad_address(a, i, j, k, l))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const indexedarray_t<T>& a, I i, const T&, indexedarray_t<T>&, I&, T& adj_v) {
    if (T* g = grad_address(a, i))
        take_grad(a.arr.flags, g, adj_v);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const indexedarray_t<T>& a, I i, I j, const T&, indexedarray_t<T>&, I&, I&, T& adj_v) {
    if (T* g = grad_address(a, i, j))
        take_grad(a.arr.flags, g, adj_v);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const indexedarray_t<T>& a, I i, I j, I k, const T&, indexedarray_t<T>&, I&, I&, I&,
                            T& adj_v) {
    if (T* g = grad_address(a, i, j, k))
        take_grad(a.arr.flags, g, adj_v);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const indexedarray_t<T>& a, I i, I j, I k, I l, const T&, indexedarray_t<T>&, I&, I&, I&,
                            I&, T& adj_v) {
    if (T* g = grad_address(a, i, j, k, l))
        take_grad(a.arr.flags, g, adj_v);
}

// ------------------------------------------------------------------------------------------------ shape, views
template <typename T> TREADLE_FUNC int32 len(const indexedarray_t<T>& a) { return (int32)a.shape[0]; }
template <typename T> TREADLE_FUNC void adj_len(const indexedarray_t<T>&, indexedarray_t<T>&, const int32&) {}

// a[i] on an indexed array with more than one dimension: the indexed sub-array without the leading dimension.
template <typename T> TREADLE_FUNC indexedarray_t<T> view(const indexedarray_t<T>& a, int64 i) {
    indexedarray_t<T> r;
    const int64 k = detail::map_index(a, 0, i);
    r.arr = a.arr;
    r.arr.data = detail::offset_ptr(a.arr.data, k * a.arr.strides[0]);
    r.arr.grad = a.arr.grad ? detail::offset_ptr(a.arr.grad, k * a.arr.strides[0]) : nullptr;
    for (int d = 0; d < 3; ++d) {
        r.arr.shape[d] = a.arr.shape[d + 1];
        r.arr.strides[d] = a.arr.strides[d + 1];
        r.indices[d] = a.indices[d + 1];
        r.shape[d] = a.shape[d + 1];
    }
    r.arr.shape[3] = 0;
    r.arr.strides[3] = 0;
    r.arr.ndim = a.arr.ndim - 1;
    r.indices[3] = nullptr;
    r.shape[3] = 0;
    return r;
}
template <typename T> TREADLE_FUNC indexedarray_t<T> view(const indexedarray_t<T>& a, int64 i, int64 j) {
    return view(view(a, i), j);
}
template <typename T> TREADLE_FUNC indexedarray_t<T> view(const indexedarray_t<T>& a, int64 i, int64 j, int64 k) {
    return view(view(view(a, i), j), k);
}

// ------------------------------------------------------------------------------------------------ launch helpers
// Indexed arrays never take the dense fast path (their elements are scattered by the index tables).
template <int ND, typename T> TREADLE_FUNC bool is_dense(const indexedarray_t<T>&) { return false; }
template <int ND, typename T> TREADLE_FUNC void make_dense(indexedarray_t<T>&) {}

// An index table may list an element twice, so gradients of indexed arrays always accumulate atomically; their
// gradient buffer lies within the underlying array's (grad_own / grad_span of the reverse sweep).
template <int ND, typename T> TREADLE_FUNC bool grad_own(const indexedarray_t<T>&) { return false; }
template <int ND, typename T> TREADLE_FUNC auto grad_span(const indexedarray_t<T>& a) { return grad_span<ND>(a.arr); }
template <typename T> TREADLE_FUNC bool grad_absent(const indexedarray_t<T>& a) { return !a.arr.grad; }

}  // namespace treadle

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include "launch.h"

namespace treadle {
// The bytes an indexed array can touch lie within its underlying array.
template <int ND, typename T> inline bool span(const indexedarray_t<T>& a, const char*& lo, const char*& hi) {
    return span<ND>(a.arr, lo, hi);
}
template <int NA, int NB, typename A, typename B>
inline bool disjoint(const indexedarray_t<A>& a, const indexedarray_t<B>& b) {
    return disjoint<NA, NB>(a.arr, b.arr);
}
template <int NA, int NB, typename A, typename B>
inline bool disjoint(const indexedarray_t<A>& a, const array_t<B>& b) {
    return disjoint<NA, NB>(a.arr, b);
}
template <int NA, int NB, typename A, typename B>
inline bool disjoint(const array_t<A>& a, const indexedarray_t<B>& b) {
    return disjoint<NA, NB>(a, b.arr);
}
// Reductions into a 1-d indexed array: the private buffer replaces the table and the data; reduce_into adds the
// buffer back through the table.
template <typename T> inline void privatize(indexedarray_t<T>& a, T* buf, int64 n) {
    a.arr.data = buf;
    a.arr.grad = nullptr;
    a.arr.shape[0] = n;
    a.arr.strides[0] = (int64)sizeof(T);
    a.indices[0] = nullptr;
    a.shape[0] = n;
}
template <typename T> inline void reduce_into(const indexedarray_t<T>& a, const T* buf, int64 n) {
    for (int64 k = 0; k < n; ++k)
        if (buf[k] != T(0))
            atomic_add(address(a, k), buf[k]);
}
}  // namespace treadle
#endif
