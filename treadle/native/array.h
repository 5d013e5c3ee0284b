// Array descriptors as passed to kernels, element addressing with byte strides, load/store and their adjoints.
//
// A negative index counts from the end of its dimension (-1 is the last element), as in the reference. With
// TREADLE_CHECKED defined, every index is checked to lie in [-extent, extent); a bad index is reported through
// treadle_report_oob (defined by the generated code) and element 0 is used instead, so nothing out of bounds is ever
// touched, and a negative one is counted from the end. Without it the accessors take indices as they are: generated
// code passes an index the compiler cannot prove non-negative through wrap_index first, so the common affine
// accesses (thread indices, loop counters) stay plain `i * stride` arithmetic the C++ compiler can vectorize.
#pragma once
#include "atomic.h"

namespace treadle {

template <typename T> struct array_t {
    T* data;
    T* grad;             // gradient buffer with the same shape and byte strides as data, or null
    int64 shape[4];
    int64 strides[4];    // in bytes
    int32 ndim;
    int32 flags;

    // Element access for native snippets (@wp.func_native): a[i] on the first dimension, byte strides.
    TREADLE_FUNC T& operator[](int64 i) const {
        return *reinterpret_cast<T*>(reinterpret_cast<char*>(data) + i * strides[0]);
    }
};
static_assert(sizeof(array_t<float>) == 88, "array_t layout");

#if defined(TREADLE_CHECKED)
#define TREADLE_CHECK_INDEX(a, d, idx)                                      \
    if (!((idx) >= -(a).shape[d] && (idx) < (a).shape[d])) {                \
        treadle_report_oob(d, (long long)(idx), (a).shape[d]);              \
        return 0;                                                           \
    }                                                                       \
    if ((idx) < 0)                                                          \
        (idx) += (a).shape[d];
#else
#define TREADLE_CHECK_INDEX(a, d, idx)
#endif

// An index of dimension d as the release-mode accessors take it: a negative one counted from the end (checked
// builds do that in the accessors, after the bounds check, so the report shows the index as written).
template <typename T, typename I> TREADLE_FUNC I wrap_index(const array_t<T>& a, int d, I i) {
#if defined(TREADLE_CHECKED)
    (void)a;
    (void)d;
    return i;
#else
    return i < 0 ? (I)(i + (I)a.shape[d]) : i;
#endif
}

namespace detail {
// Byte offset of an element (0 after reporting a bad index in checked builds).
template <typename T> TREADLE_FUNC int64 byte_offset(const array_t<T>& a, int64 i) {
    TREADLE_CHECK_INDEX(a, 0, i)
    return i * a.strides[0];
}
template <typename T> TREADLE_FUNC int64 byte_offset(const array_t<T>& a, int64 i, int64 j) {
    TREADLE_CHECK_INDEX(a, 0, i)
    TREADLE_CHECK_INDEX(a, 1, j)
    return i * a.strides[0] + j * a.strides[1];
}
template <typename T> TREADLE_FUNC int64 byte_offset(const array_t<T>& a, int64 i, int64 j, int64 k) {
    TREADLE_CHECK_INDEX(a, 0, i)
    TREADLE_CHECK_INDEX(a, 1, j)
    TREADLE_CHECK_INDEX(a, 2, k)
    return i * a.strides[0] + j * a.strides[1] + k * a.strides[2];
}
template <typename T> TREADLE_FUNC int64 byte_offset(const array_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    TREADLE_CHECK_INDEX(a, 0, i)
    TREADLE_CHECK_INDEX(a, 1, j)
    TREADLE_CHECK_INDEX(a, 2, k)
    TREADLE_CHECK_INDEX(a, 3, l)
    return i * a.strides[0] + j * a.strides[1] + k * a.strides[2] + l * a.strides[3];
}
template <typename T> TREADLE_FUNC T* offset_ptr(T* base, int64 bytes) {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(base) + bytes);
}
}  // namespace detail

#undef TREADLE_CHECK_INDEX

// ------------------------------------------------------------------------------------------------ addresses
template <typename T> TREADLE_FUNC T* address(const array_t<T>& a, int64 i) {
    return detail::offset_ptr(a.data, detail::byte_offset(a, i));
}
template <typename T> TREADLE_FUNC T* address(const array_t<T>& a, int64 i, int64 j) {
    return detail::offset_ptr(a.data, detail::byte_offset(a, i, j));
}
template <typename T> TREADLE_FUNC T* address(const array_t<T>& a, int64 i, int64 j, int64 k) {
    return detail::offset_ptr(a.data, detail::byte_offset(a, i, j, k));
}
template <typename T> TREADLE_FUNC T* address(const array_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    return detail::offset_ptr(a.data, detail::byte_offset(a, i, j, k, l));
}

// Same element in the gradient buffer; null when the array has none.
template <typename T> TREADLE_FUNC T* grad_address(const array_t<T>& a, int64 i) {
    return a.grad ? detail::offset_ptr(a.grad, detail::byte_offset(a, i)) : nullptr;
}
template <typename T> TREADLE_FUNC T* grad_address(const array_t<T>& a, int64 i, int64 j) {
    return a.grad ? detail::offset_ptr(a.grad, detail::byte_offset(a, i, j)) : nullptr;
}
template <typename T> TREADLE_FUNC T* grad_address(const array_t<T>& a, int64 i, int64 j, int64 k) {
    return a.grad ? detail::offset_ptr(a.grad, detail::byte_offset(a, i, j, k)) : nullptr;
}
template <typename T> TREADLE_FUNC T* grad_address(const array_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    return a.grad ? detail::offset_ptr(a.grad, detail::byte_offset(a, i, j, k, l)) : nullptr;
}

// The gradient buffer of `a` seen as an array (same shape and strides; no gradient of its own): what
// wp.adjoint[arr] names in a @func_grad body. Its data is null when `a` has no gradient buffer.
template <typename T> TREADLE_FUNC array_t<T> grad_array(const array_t<T>& a) {
    array_t<T> g = a;
    g.data = a.grad;
    g.grad = nullptr;
    return g;
}
template <typename T> TREADLE_FUNC bool has_data(const array_t<T>& a) { return a.data != nullptr; }

// Bit of array_t::flags: stores keep the gradient of the element they overwrite (the array was made with
// retain_grad, or its gradient buffer is an adjoint array the caller passed to an explicit backward launch).
#define TREADLE_ARRAY_KEEP_GRAD 1
template <typename T> TREADLE_FUNC int32 grad_flags(const array_t<T>& a) { return a.flags; }
// The adjoint of a store: the element's gradient goes to the stored value and is consumed (the store replaced the
// element's earlier value, which therefore receives no gradient), unless the array keeps its gradient.
template <typename T> TREADLE_FUNC void take_grad(int32 flags, T* g, T& adj_v) {
    adj_v += *g;
    if (!(flags & TREADLE_ARRAY_KEEP_GRAD))
        *g = T{};
}
template <typename T> TREADLE_FUNC void drop_grad(int32 flags, T* g) {
    if (!(flags & TREADLE_ARRAY_KEEP_GRAD))
        *g = T{};
}
// A store whose value has no adjoint (a constant, an integer): only the consumption.
template <typename A, typename... I> TREADLE_FUNC void adj_store_overwrite(const A& a, I... idx) {
    if (auto* g = grad_address(a, idx...))
        drop_grad(grad_flags(a), g);
}

// ------------------------------------------------------------------------------------------------ load / store
// Adjoints use the `grad` buffer of the forward array; the adj_a argument is accepted for the uniform calling
// convention and ignored. adj_load accumulates atomically (many threads may read one element).
template <typename T> TREADLE_FUNC T load(const array_t<T>& a, int64 i) { return *address(a, i); }
template <typename T> TREADLE_FUNC T load(const array_t<T>& a, int64 i, int64 j) { return *address(a, i, j); }
template <typename T> TREADLE_FUNC T load(const array_t<T>& a, int64 i, int64 j, int64 k) {
    return *address(a, i, j, k);
}
template <typename T> TREADLE_FUNC T load(const array_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    return *address(a, i, j, k, l);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const array_t<T>& a, I i, array_t<T>&, I&, const T& adj_ret) {
    if (T* g = grad_address(a, i))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const array_t<T>& a, I i, I j, array_t<T>&, I&, I&, const T& adj_ret) {
    if (T* g = grad_address(a, i, j))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const array_t<T>& a, I i, I j, I k, array_t<T>&, I&, I&, I&, const T& adj_ret) {
    if (T* g = grad_address(a, i, j, k))
        atomic_add(g, adj_ret);
}
template <typename T, typename I>
TREADLE_FUNC void adj_load(const array_t<T>& a, I i, I j, I k, I l, array_t<T>&, I&, I&, I&, I&, const T& adj_ret) {
    if (T* g = grad_address(a, i, j, k, l))
        atomic_add(g, adj_ret);
}

template <typename T> TREADLE_FUNC void store(const array_t<T>& a, int64 i, const T& v) { *address(a, i) = v; }
template <typename T> TREADLE_FUNC void store(const array_t<T>& a, int64 i, int64 j, const T& v) {
    *address(a, i, j) = v;
}
template <typename T> TREADLE_FUNC void store(const array_t<T>& a, int64 i, int64 j, int64 k, const T& v) {
    *address(a, i, j, k) = v;
}
template <typename T> TREADLE_FUNC void store(const array_t<T>& a, int64 i, int64 j, int64 k, int64 l, const T& v) {
    *address(a, i, j, k, l) = v;
}
// The stored value's adjoint is the gradient held at the element.
template <typename T, typename I>
TREADLE_FUNC void adj_store(const array_t<T>& a, I i, const T&, array_t<T>&, I&, T& adj_v) {
    if (T* g = grad_address(a, i))
        take_grad(a.flags, g, adj_v);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const array_t<T>& a, I i, I j, const T&, array_t<T>&, I&, I&, T& adj_v) {
    if (T* g = grad_address(a, i, j))
        take_grad(a.flags, g, adj_v);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const array_t<T>& a, I i, I j, I k, const T&, array_t<T>&, I&, I&, I&, T& adj_v) {
    if (T* g = grad_address(a, i, j, k))
        take_grad(a.flags, g, adj_v);
}
template <typename T, typename I>
TREADLE_FUNC void adj_store(const array_t<T>& a, I i, I j, I k, I l, const T&, array_t<T>&, I&, I&, I&, I&,
                            T& adj_v) {
    if (T* g = grad_address(a, i, j, k, l))
        take_grad(a.flags, g, adj_v);
}

// ------------------------------------------------------------------------------------------------ shape helpers
template <typename T> TREADLE_FUNC int32 len(const array_t<T>& a) { return (int32)a.shape[0]; }
template <typename T> TREADLE_FUNC void adj_len(const array_t<T>&, array_t<T>&, const int32&) {}

// Multi-dimensional thread index of flat index `flat` (row-major: the last dimension varies fastest);
// writes b.ndim values.
TREADLE_FUNC void tid_from_index(const launch_bounds_t& b, int64 flat, int32* out) {
    for (int d = b.ndim - 1; d >= 0; --d) {
        const int64 n = b.shape[d];
        out[d] = (int32)(flat % n);
        flat /= n;
    }
}

}  // namespace treadle
