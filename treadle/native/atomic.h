// Real atomics (the CPU backend runs kernels on many threads). Every function takes the address and the operand
// and returns the OLD value. Integers use the native atomic instructions; float16/32/64 use a compare-and-swap loop
// on the bit pattern (or CUDA's native atomicAdd where it exists). Vectors and matrices are updated component by
// component: each component is atomic, the composite as a whole is not.
//
// Host: GCC/Clang `__atomic_*` builtins (relaxed order for arithmetic, sequentially consistent for cas/exch).
// Device (`__CUDA_ARCH__`): CUDA atomics; 8- and 16-bit values go through a CAS on their containing 32-bit word.
#pragma once
#include "mat.h"

namespace treadle {
namespace detail {

template <unsigned S> struct uint_of_size;
template <> struct uint_of_size<1> { typedef uint8 type; };
template <> struct uint_of_size<2> { typedef uint16 type; };
template <> struct uint_of_size<4> { typedef uint32 type; };
template <> struct uint_of_size<8> { typedef uint64 type; };

template <typename T> struct is_atomic_scalar {
    static constexpr bool value = is_int<T>::value || is_float<T>::value;
};

template <typename To, typename From> TREADLE_FUNC To bit_cast(const From& f) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast: sizes differ");
    To t;
#if defined(TREADLE_CUDA)
    memcpy(&t, &f, sizeof(To));
#else
    __builtin_memcpy(&t, &f, sizeof(To));
#endif
    return t;
}

// Compare-and-swap on raw bits; returns the value found at p (== expected on success).
template <typename U> TREADLE_FUNC U cas_bits(U* p, U expected, U desired) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(U) == 4) {
        return (U)atomicCAS((unsigned int*)p, (unsigned int)expected, (unsigned int)desired);
    } else if constexpr (sizeof(U) == 8) {
        return (U)atomicCAS((unsigned long long*)p, (unsigned long long)expected, (unsigned long long)desired);
    } else {
        const unsigned long long a = (unsigned long long)p;
        unsigned int* word = (unsigned int*)(a & ~3ull);
        const unsigned shift = (unsigned)(a & 3ull) * 8u;
        const unsigned int mask = ((1u << (8u * sizeof(U))) - 1u) << shift;
        unsigned int old = *(volatile unsigned int*)word;
        for (;;) {
            const U cur = (U)((old & mask) >> shift);
            if (cur != expected)
                return cur;
            const unsigned int prev = atomicCAS(word, old, (old & ~mask) | ((unsigned int)desired << shift));
            if (prev == old)
                return expected;
            old = prev;
        }
    }
#else
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
#endif
}

template <typename U> TREADLE_FUNC U load_bits(U* p) {
#if defined(__CUDA_ARCH__)
    return *(volatile U*)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

// Atomically replaces *addr by op(*addr); returns the old value. Skips the write when the bits would not change.
template <typename T, typename Op> TREADLE_FUNC T cas_update(T* addr, Op op) {
    typedef typename uint_of_size<sizeof(T)>::type U;
    U* p = reinterpret_cast<U*>(addr);
    U old = load_bits(p);
    for (;;) {
        const T cur = detail::bit_cast<T>(old);
        const U desired = detail::bit_cast<U>(op(cur));
        if (desired == old)
            return cur;
        const U prev = cas_bits(p, old, desired);
        if (prev == old)
            return cur;
        old = prev;
    }
}

#if !defined(__CUDA_ARCH__)
// Float add/sub on the host: a relaxed compare-and-swap loop (arithmetic atomics need no ordering; a relaxed one also
// lets the compiler keep loop-invariant loads, such as kernel arguments, out of the loop around it).
template <typename T> TREADLE_FUNC T cas_add_relaxed(T* addr, T v) {
    typedef typename uint_of_size<sizeof(T)>::type U;
    U* p = reinterpret_cast<U*>(addr);
    U old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        const T cur = detail::bit_cast<T>(old);
        const U desired = detail::bit_cast<U>(T(cur + v));
        if (desired == old || __atomic_compare_exchange_n(p, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return cur;
    }
}
#endif

template <typename T> struct op_add {
    T v;
    TREADLE_FUNC T operator()(T a) const { return T(a + v); }
};
template <typename T> struct op_sub {
    T v;
    TREADLE_FUNC T operator()(T a) const { return T(a - v); }
};
// fmin/fmax of the slot and the value (scalar.h: a NaN on either side is missing data)
template <typename T> struct op_min {
    T v;
    TREADLE_FUNC T operator()(T a) const { return (v < a || a != a) ? v : a; }
};
template <typename T> struct op_max {
    T v;
    TREADLE_FUNC T operator()(T a) const { return (v > a || a != a) ? v : a; }
};
template <typename T> struct op_set {
    T v;
    TREADLE_FUNC T operator()(T) const { return v; }
};
template <typename T> struct op_and {
    T v;
    TREADLE_FUNC T operator()(T a) const { return T(a & v); }
};
template <typename T> struct op_or {
    T v;
    TREADLE_FUNC T operator()(T a) const { return T(a | v); }
};
template <typename T> struct op_xor {
    T v;
    TREADLE_FUNC T operator()(T a) const { return T(a ^ v); }
};

#if defined(__CUDA_ARCH__)
// CUDA's native integer atomics take int / unsigned int / unsigned long long.
#define TREADLE_CUDA_INT_OP(native, addr, v)                                                                        \
    if constexpr (detail::is_same<T, int32>::value) {                                                               \
        return native((int*)(addr), (int)(v));                                                                      \
    } else if constexpr (sizeof(T) == 4) {                                                                          \
        return (T)native((unsigned int*)(addr), (unsigned int)(v));                                                 \
    } else {                                                                                                        \
        return (T)native((unsigned long long*)(addr), (unsigned long long)(v));                                     \
    }
#endif

}  // namespace detail

#define TREADLE_ATOMIC_SCALAR \
    template <typename T, typename detail::enable_if<detail::is_atomic_scalar<T>::value, int>::type = 0> TREADLE_FUNC
#define TREADLE_ATOMIC_INT \
    template <typename T, typename detail::enable_if<detail::is_int<T>::value, int>::type = 0> TREADLE_FUNC

// ------------------------------------------------------------------------------------------------ add / sub
TREADLE_ATOMIC_SCALAR T atomic_add(T* addr, TREADLE_SCALAR(T) v) {
    if constexpr (detail::is_int<T>::value) {
#if defined(__CUDA_ARCH__)
        if constexpr (sizeof(T) >= 4) {
            TREADLE_CUDA_INT_OP(atomicAdd, addr, v)
        } else {
            return detail::cas_update(addr, detail::op_add<T>{v});
        }
#else
        return __atomic_fetch_add(addr, v, __ATOMIC_RELAXED);
#endif
    } else {
#if defined(__CUDA_ARCH__)
        if constexpr (detail::is_same<T, float32>::value)
            return atomicAdd(addr, v);
#if __CUDA_ARCH__ >= 600
        if constexpr (detail::is_same<T, float64>::value)
            return atomicAdd(addr, v);
#endif
#else
        if constexpr (sizeof(T) >= 4)
            return detail::cas_add_relaxed(addr, v);
#endif
        return detail::cas_update(addr, detail::op_add<T>{v});
    }
}
TREADLE_ATOMIC_SCALAR T atomic_sub(T* addr, TREADLE_SCALAR(T) v) {
    if constexpr (detail::is_int<T>::value) {
#if defined(__CUDA_ARCH__)
        if constexpr (sizeof(T) >= 4) {
            TREADLE_CUDA_INT_OP(atomicAdd, addr, T(0) - v)
        } else {
            return detail::cas_update(addr, detail::op_sub<T>{v});
        }
#else
        return __atomic_fetch_sub(addr, v, __ATOMIC_RELAXED);
#endif
    } else {
#if defined(__CUDA_ARCH__)
        if constexpr (detail::is_same<T, float32>::value)
            return atomicAdd(addr, -v);
#if __CUDA_ARCH__ >= 600
        if constexpr (detail::is_same<T, float64>::value)
            return atomicAdd(addr, -v);
#endif
#else
        if constexpr (sizeof(T) >= 4)
            return detail::cas_add_relaxed(addr, T(-v));
#endif
        return detail::cas_update(addr, detail::op_sub<T>{v});
    }
}
// Gradient: the adjoint of the value is the adjoint stored at the target address (adj_addr: the gradient array's
// element, may be null). The returned old value carries no gradient.
template <typename T> TREADLE_FUNC void adj_atomic_add(T*, T, T* adj_addr, T& adj_v, const T&) {
    if (adj_addr)
        adj_v += *adj_addr;
}
template <typename T> TREADLE_FUNC void adj_atomic_sub(T*, T, T* adj_addr, T& adj_v, const T&) {
    if (adj_addr)
        adj_v -= *adj_addr;
}

// ------------------------------------------------------------------------------------------------ min / max
TREADLE_ATOMIC_SCALAR T atomic_min(T* addr, TREADLE_SCALAR(T) v) {
#if defined(__CUDA_ARCH__)
    if constexpr (detail::is_int<T>::value && sizeof(T) >= 4) {
        if constexpr (detail::is_same<T, int64>::value)
            return (T)atomicMin((long long*)addr, (long long)v);
        else
            TREADLE_CUDA_INT_OP(atomicMin, addr, v)
    }
#endif
    return detail::cas_update(addr, detail::op_min<T>{v});
}
TREADLE_ATOMIC_SCALAR T atomic_max(T* addr, TREADLE_SCALAR(T) v) {
#if defined(__CUDA_ARCH__)
    if constexpr (detail::is_int<T>::value && sizeof(T) >= 4) {
        if constexpr (detail::is_same<T, int64>::value)
            return (T)atomicMax((long long*)addr, (long long)v);
        else
            TREADLE_CUDA_INT_OP(atomicMax, addr, v)
    }
#endif
    return detail::cas_update(addr, detail::op_max<T>{v});
}

// ------------------------------------------------------------------------------------------------ cas / exch
// Compare-and-swap: stores `value` if *addr equals `compare` bit for bit; returns the old value.
TREADLE_ATOMIC_SCALAR T atomic_cas(T* addr, TREADLE_SCALAR(T) compare, TREADLE_SCALAR(T) value) {
    typedef typename detail::uint_of_size<sizeof(T)>::type U;
    return detail::bit_cast<T>(detail::cas_bits(reinterpret_cast<U*>(addr), detail::bit_cast<U>(compare),
                                                detail::bit_cast<U>(value)));
}
TREADLE_ATOMIC_SCALAR T atomic_exch(T* addr, TREADLE_SCALAR(T) value) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(T) >= 4) {
        typedef typename detail::uint_of_size<sizeof(T)>::type U;
        if constexpr (sizeof(T) == 4)
            return detail::bit_cast<T>(atomicExch((unsigned int*)addr, detail::bit_cast<U>(value)));
        else
            return detail::bit_cast<T>(atomicExch((unsigned long long*)addr, detail::bit_cast<U>(value)));
    }
    return detail::cas_update(addr, detail::op_set<T>{value});
#else
    typedef typename detail::uint_of_size<sizeof(T)>::type U;
    return detail::bit_cast<T>(
        __atomic_exchange_n(reinterpret_cast<U*>(addr), detail::bit_cast<U>(value), __ATOMIC_SEQ_CST));
#endif
}
template <typename T> TREADLE_FUNC void adj_atomic_cas(T*, T, T, T*, T&, T&, const T&) {}
template <typename T> TREADLE_FUNC void adj_atomic_exch(T*, T, T*, T&, const T&) {}

// ------------------------------------------------------------------------------------------------ bitwise (integers)
#if defined(__CUDA_ARCH__)
#define TREADLE_ATOMIC_BITWISE(name, native, op, builtin)                         \
    TREADLE_ATOMIC_INT T name(T* addr, TREADLE_SCALAR(T) v) {                     \
        if constexpr (sizeof(T) >= 4) {                                           \
            TREADLE_CUDA_INT_OP(native, addr, v)                                  \
        } else {                                                                  \
            return detail::cas_update(addr, detail::op<T>{v});                    \
        }                                                                         \
    }                                                                             \
    template <typename T> TREADLE_FUNC void adj_##name(T*, T, T*, T&, const T&) {}
#else
#define TREADLE_ATOMIC_BITWISE(name, native, op, builtin)                         \
    TREADLE_ATOMIC_INT T name(T* addr, TREADLE_SCALAR(T) v) {                     \
        return builtin(addr, v, __ATOMIC_RELAXED);                                \
    }                                                                             \
    template <typename T> TREADLE_FUNC void adj_##name(T*, T, T*, T&, const T&) {}
#endif
TREADLE_ATOMIC_BITWISE(atomic_and, atomicAnd, op_and, __atomic_fetch_and)
TREADLE_ATOMIC_BITWISE(atomic_or, atomicOr, op_or, __atomic_fetch_or)
TREADLE_ATOMIC_BITWISE(atomic_xor, atomicXor, op_xor, __atomic_fetch_xor)
#undef TREADLE_ATOMIC_BITWISE

// ------------------------------------------------------------------------------------------------ composites
#define TREADLE_ATOMIC_COMPOSITE(name)                                                                    \
    template <unsigned N, typename T>                                                                     \
    TREADLE_FUNC vec_t<N, T> name(vec_t<N, T>* addr, const vec_t<N, T>& v) {                              \
        vec_t<N, T> old;                                                                                  \
        for (unsigned i = 0; i < N; ++i)                                                                  \
            old.c[i] = name(&addr->c[i], v.c[i]);                                                         \
        return old;                                                                                       \
    }                                                                                                     \
    template <unsigned R, unsigned C, typename T>                                                         \
    TREADLE_FUNC mat_t<R, C, T> name(mat_t<R, C, T>* addr, const mat_t<R, C, T>& v) {                     \
        mat_t<R, C, T> old;                                                                               \
        for (unsigned i = 0; i < R; ++i)                                                                  \
            for (unsigned j = 0; j < C; ++j)                                                              \
                old.data[i][j] = name(&addr->data[i][j], v.data[i][j]);                                   \
        return old;                                                                                       \
    }
TREADLE_ATOMIC_COMPOSITE(atomic_add)
TREADLE_ATOMIC_COMPOSITE(atomic_sub)
TREADLE_ATOMIC_COMPOSITE(atomic_min)
TREADLE_ATOMIC_COMPOSITE(atomic_max)
TREADLE_ATOMIC_COMPOSITE(atomic_exch)
TREADLE_ATOMIC_COMPOSITE(atomic_and)
TREADLE_ATOMIC_COMPOSITE(atomic_or)
TREADLE_ATOMIC_COMPOSITE(atomic_xor)
#undef TREADLE_ATOMIC_COMPOSITE

// ------------------------------------------------------------------------------------------------ min / max adjoints
// The gradient held at the element flows to every value equal to the element's final content (the value that won;
// ties all receive it), componentwise for vectors and matrices, as in the reference.
namespace detail {
template <typename T> TREADLE_FUNC void adj_minmax(const T* addr, const T& v, const T* g, T& adj_v) {
    if (g && (*addr == v || (*addr != *addr && v != v)))  // a NaN that stayed NaN counts as the value's
        adj_v += *g;
}
template <unsigned N, typename T>
TREADLE_FUNC void adj_minmax(const vec_t<N, T>* addr, const vec_t<N, T>& v, const vec_t<N, T>* g, vec_t<N, T>& adj_v) {
    if (g)
        for (unsigned i = 0; i < N; ++i)
            adj_minmax(&addr->c[i], v.c[i], &g->c[i], adj_v.c[i]);
}
template <unsigned R, unsigned C, typename T>
TREADLE_FUNC void adj_minmax(const mat_t<R, C, T>* addr, const mat_t<R, C, T>& v, const mat_t<R, C, T>* g,
                             mat_t<R, C, T>& adj_v) {
    if (g)
        for (unsigned i = 0; i < R; ++i)
            for (unsigned j = 0; j < C; ++j)
                adj_minmax(&addr->data[i][j], v.data[i][j], &g->data[i][j], adj_v.data[i][j]);
}
}  // namespace detail
template <typename T> TREADLE_FUNC void adj_atomic_min(T* addr, T v, T* adj_addr, T& adj_v, const T&) {
    detail::adj_minmax(addr, v, adj_addr, adj_v);
}
template <typename T> TREADLE_FUNC void adj_atomic_max(T* addr, T v, T* adj_addr, T& adj_v, const T&) {
    detail::adj_minmax(addr, v, adj_addr, adj_v);
}

}  // namespace treadle
