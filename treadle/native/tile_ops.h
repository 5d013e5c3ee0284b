// Whole-tile operations: arithmetic, tile_map, reductions and scans, layout (view, reshape, transpose, broadcast),
// element access and the in-place updates. Included from tile.h; each forward function sits next to its adjoint.
#pragma once

namespace treadle {

#define TREADLE_TT tile_t<T, M, N>

// ------------------------------------------------------------------------------------------------ arithmetic
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT add(const TREADLE_TT& a, const TREADLE_TT& b) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::add(a.data[k], b.data[k]);
    return r;
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_add(const TREADLE_TT&, const TREADLE_TT&, TREADLE_TT& adj_a, TREADLE_TT& adj_b, const TREADLE_TT& adj_ret) {
    adj_accum(adj_a, adj_ret);
    adj_accum(adj_b, adj_ret);
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT sub(const TREADLE_TT& a, const TREADLE_TT& b) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::sub(a.data[k], b.data[k]);
    return r;
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_sub(const TREADLE_TT&, const TREADLE_TT&, TREADLE_TT& adj_a, TREADLE_TT& adj_b, const TREADLE_TT& adj_ret) {
    for (int k = 0; k < M * N; ++k) {
        adj_a.data[k] = treadle::add(adj_a.data[k], adj_ret.data[k]);
        adj_b.data[k] = treadle::sub(adj_b.data[k], adj_ret.data[k]);
    }
}
// A tile and a scalar: the scalar applies to every element (either side).
template <typename T, int M, int N, typename S> TREADLE_FUNC TREADLE_TT add(const TREADLE_TT& a, S s) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::add(a.data[k], T(s));
    return r;
}
template <typename T, int M, int N, typename S> TREADLE_FUNC TREADLE_TT add(S s, const TREADLE_TT& a) { return add(a, s); }
template <typename T, int M, int N, typename S> TREADLE_FUNC TREADLE_TT sub(const TREADLE_TT& a, S s) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::sub(a.data[k], T(s));
    return r;
}
template <typename T, int M, int N, typename S> TREADLE_FUNC TREADLE_TT sub(S s, const TREADLE_TT& a) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::sub(T(s), a.data[k]);
    return r;
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_add(const TREADLE_TT&, S, TREADLE_TT& adj_a, S& adj_s, const TREADLE_TT& adj_ret) {
    adj_accum(adj_a, adj_ret);
    for (int k = 0; k < M * N; ++k)
        adj_s = treadle::add(adj_s, S(adj_ret.data[k]));
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_add(S, const TREADLE_TT&, S& adj_s, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    adj_accum(adj_a, adj_ret);
    for (int k = 0; k < M * N; ++k)
        adj_s = treadle::add(adj_s, S(adj_ret.data[k]));
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_sub(const TREADLE_TT&, S, TREADLE_TT& adj_a, S& adj_s, const TREADLE_TT& adj_ret) {
    adj_accum(adj_a, adj_ret);
    for (int k = 0; k < M * N; ++k)
        adj_s = treadle::sub(adj_s, S(adj_ret.data[k]));
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_sub(S, const TREADLE_TT&, S& adj_s, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    for (int k = 0; k < M * N; ++k) {
        adj_a.data[k] = treadle::sub(adj_a.data[k], adj_ret.data[k]);
        adj_s = treadle::add(adj_s, S(adj_ret.data[k]));
    }
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT neg(const TREADLE_TT& a) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::neg(a.data[k]);
    return r;
}
template <typename T, int M, int N> TREADLE_FUNC void adj_neg(const TREADLE_TT&, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        adj_a.data[k] = treadle::sub(adj_a.data[k], adj_ret.data[k]);
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT pos(const TREADLE_TT& a) { return a; }
template <typename T, int M, int N> TREADLE_FUNC void adj_pos(const TREADLE_TT&, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    adj_accum(adj_a, adj_ret);
}
// Elementwise products and quotients: two tiles of one shape, or a tile and a value (either side); the element
// types may differ where the element operation is defined (a float tile times a matrix gives a tile of matrices).
#define TREADLE_TILE_ELEMENTWISE(OP)                                                                                  \
    template <typename A, typename B, int M, int N>                                                                    \
    TREADLE_FUNC auto OP(const tile_t<A, M, N>& a, const tile_t<B, M, N>& b)                                          \
        -> tile_t<decltype(treadle::OP(a.data[0], b.data[0])), M, N> {                                                 \
        tile_t<decltype(treadle::OP(a.data[0], b.data[0])), M, N> r;                                                   \
        for (int k = 0; k < M * N; ++k)                                                                                \
            r.data[k] = treadle::OP(a.data[k], b.data[k]);                                                             \
        return r;                                                                                                      \
    }                                                                                                                  \
    template <typename A, typename B, int M, int N, typename R>                                                        \
    TREADLE_FUNC void adj_##OP(const tile_t<A, M, N>& a, const tile_t<B, M, N>& b, tile_t<A, M, N>& adj_a,           \
                               tile_t<B, M, N>& adj_b, const tile_t<R, M, N>& adj_ret) {                              \
        for (int k = 0; k < M * N; ++k)                                                                                \
            treadle::adj_##OP(a.data[k], b.data[k], adj_a.data[k], adj_b.data[k], adj_ret.data[k]);                    \
    }                                                                                                                  \
    template <typename T, int M, int N, typename S>                                                                    \
    TREADLE_FUNC auto OP(const TREADLE_TT& a, const S& s) -> tile_t<decltype(treadle::OP(a.data[0], s)), M, N> {      \
        tile_t<decltype(treadle::OP(a.data[0], s)), M, N> r;                                                           \
        for (int k = 0; k < M * N; ++k)                                                                                \
            r.data[k] = treadle::OP(a.data[k], s);                                                                     \
        return r;                                                                                                      \
    }                                                                                                                  \
    template <typename T, int M, int N, typename S, typename R>                                                        \
    TREADLE_FUNC void adj_##OP(const TREADLE_TT& a, const S& s, TREADLE_TT& adj_a, S& adj_s,                          \
                               const tile_t<R, M, N>& adj_ret) {                                                       \
        for (int k = 0; k < M * N; ++k)                                                                                \
            treadle::adj_##OP(a.data[k], s, adj_a.data[k], adj_s, adj_ret.data[k]);                                    \
    }                                                                                                                  \
    template <typename T, int M, int N, typename S>                                                                    \
    TREADLE_FUNC auto OP(const S& s, const TREADLE_TT& a) -> tile_t<decltype(treadle::OP(s, a.data[0])), M, N> {      \
        tile_t<decltype(treadle::OP(s, a.data[0])), M, N> r;                                                           \
        for (int k = 0; k < M * N; ++k)                                                                                \
            r.data[k] = treadle::OP(s, a.data[k]);                                                                     \
        return r;                                                                                                      \
    }                                                                                                                  \
    template <typename T, int M, int N, typename S, typename R>                                                        \
    TREADLE_FUNC void adj_##OP(const S& s, const TREADLE_TT& a, S& adj_s, TREADLE_TT& adj_a,                          \
                               const tile_t<R, M, N>& adj_ret) {                                                       \
        for (int k = 0; k < M * N; ++k)                                                                                \
            treadle::adj_##OP(s, a.data[k], adj_s, adj_a.data[k], adj_ret.data[k]);                                    \
    }
TREADLE_TILE_ELEMENTWISE(mul)
TREADLE_TILE_ELEMENTWISE(div)
#undef TREADLE_TILE_ELEMENTWISE
// tile_axpy: dest + alpha * src (the new value of dest).
template <typename T, int M, int N, typename S>
TREADLE_FUNC TREADLE_TT tile_axpy(S alpha, const TREADLE_TT& src, const TREADLE_TT& dest) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = treadle::add(dest.data[k], treadle::mul(alpha, src.data[k]));
    return r;
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_tile_axpy(S alpha, const TREADLE_TT& src, const TREADLE_TT&, S& adj_alpha, TREADLE_TT& adj_src,
                                TREADLE_TT& adj_dest, const TREADLE_TT& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        treadle::adj_mul(alpha, src.data[k], adj_alpha, adj_src.data[k], adj_ret.data[k]);
    adj_accum(adj_dest, adj_ret);
}
// tile_diag_add: a square tile with d added to its diagonal.
template <typename T, int M>
TREADLE_FUNC tile_t<T, M, M> tile_diag_add(const tile_t<T, M, M>& a, const tile_t<T, 1, M>& d) {
    tile_t<T, M, M> r = a;
    for (int i = 0; i < M; ++i)
        r.data[i * M + i] = treadle::add(r.data[i * M + i], d.data[i]);
    return r;
}
template <typename T, int M>
TREADLE_FUNC void adj_tile_diag_add(const tile_t<T, M, M>&, const tile_t<T, 1, M>&, tile_t<T, M, M>& adj_a,
                                    tile_t<T, 1, M>& adj_d, const tile_t<T, M, M>& adj_ret) {
    adj_accum(adj_a, adj_ret);
    for (int i = 0; i < M; ++i)
        adj_d.data[i] = treadle::add(adj_d.data[i], adj_ret.data[i * M + i]);
}
template <typename To, typename T, int M, int N> TREADLE_FUNC tile_t<To, M, N> tile_astype(const TREADLE_TT& a) {
    tile_t<To, M, N> r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = cast<To>(a.data[k]);
    return r;
}
template <typename To, typename T, int M, int N>
TREADLE_FUNC void adj_tile_astype(const TREADLE_TT& a, TREADLE_TT& adj_a, const tile_t<To, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        adj_cast<To>(a.data[k], adj_a.data[k], adj_ret.data[k]);
}

// ------------------------------------------------------------------------------------------------ tile_map
// F and its adjoint AF are generic lambdas over the element function (a builtin or a user function): f(x, ...) and
// af(x, ..., adj_x&, ..., adj_ret). Extra non-tile operands are broadcast to every element.
namespace detail {
template <typename X> struct tile_elem {
    static TREADLE_FUNC const X& at(const X& x, int) { return x; }
    static TREADLE_FUNC X& adj_at(X& x, int) { return x; }
};
template <typename T, int M, int N> struct tile_elem<tile_t<T, M, N>> {
    static TREADLE_FUNC const T& at(const tile_t<T, M, N>& x, int k) { return x.data[k]; }
    static TREADLE_FUNC T& adj_at(tile_t<T, M, N>& x, int k) { return x.data[k]; }
};
template <typename X> TREADLE_FUNC decltype(auto) elem(const X& x, int k) { return tile_elem<X>::at(x, k); }
template <typename X> TREADLE_FUNC decltype(auto) adj_elem(X& x, int k) { return tile_elem<X>::adj_at(x, k); }
}  // namespace detail

template <typename F, typename T, int M, int N, typename... R>
TREADLE_FUNC auto tile_map(F f, const TREADLE_TT& a, const R&... rest) -> tile_t<decltype(f(a.data[0], detail::elem(rest, 0)...)), M, N> {
    tile_t<decltype(f(a.data[0], detail::elem(rest, 0)...)), M, N> r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = f(a.data[k], detail::elem(rest, k)...);
    return r;
}
// One overload per operand count (1 + up to 7 extra operands, tiles or broadcast values).
template <typename AF, typename T, int M, int N, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, TREADLE_TT& adj_a, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], adj_a.data[k], adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, TREADLE_TT& adj_a, B& adj_b, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), adj_a.data[k], detail::adj_elem(adj_b, k), adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename C, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, const C& c, TREADLE_TT& adj_a, B& adj_b, C& adj_c, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), detail::elem(c, k), adj_a.data[k], detail::adj_elem(adj_b, k), detail::adj_elem(adj_c, k), adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename C, typename D, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, const C& c, const D& d, TREADLE_TT& adj_a, B& adj_b, C& adj_c, D& adj_d, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), detail::elem(c, k), detail::elem(d, k), adj_a.data[k], detail::adj_elem(adj_b, k), detail::adj_elem(adj_c, k), detail::adj_elem(adj_d, k), adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename C, typename D, typename E, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, const C& c, const D& d, const E& e, TREADLE_TT& adj_a, B& adj_b, C& adj_c, D& adj_d, E& adj_e, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), detail::elem(c, k), detail::elem(d, k), detail::elem(e, k), adj_a.data[k], detail::adj_elem(adj_b, k), detail::adj_elem(adj_c, k), detail::adj_elem(adj_d, k), detail::adj_elem(adj_e, k), adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename C, typename D, typename E, typename F, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, const C& c, const D& d, const E& e, const F& f, TREADLE_TT& adj_a, B& adj_b, C& adj_c, D& adj_d, E& adj_e, F& adj_f, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), detail::elem(c, k), detail::elem(d, k), detail::elem(e, k), detail::elem(f, k), adj_a.data[k], detail::adj_elem(adj_b, k), detail::adj_elem(adj_c, k), detail::adj_elem(adj_d, k), detail::adj_elem(adj_e, k), detail::adj_elem(adj_f, k), adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename C, typename D, typename E, typename F, typename G, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, const C& c, const D& d, const E& e, const F& f, const G& g, TREADLE_TT& adj_a, B& adj_b, C& adj_c, D& adj_d, E& adj_e, F& adj_f, G& adj_g, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), detail::elem(c, k), detail::elem(d, k), detail::elem(e, k), detail::elem(f, k), detail::elem(g, k), adj_a.data[k], detail::adj_elem(adj_b, k), detail::adj_elem(adj_c, k), detail::adj_elem(adj_d, k), detail::adj_elem(adj_e, k), detail::adj_elem(adj_f, k), detail::adj_elem(adj_g, k), adj_ret.data[k]);
}
template <typename AF, typename T, int M, int N, typename B, typename C, typename D, typename E, typename F, typename G, typename H, typename U>
TREADLE_FUNC void adj_tile_map(AF af, const TREADLE_TT& a, const B& b, const C& c, const D& d, const E& e, const F& f, const G& g, const H& h, TREADLE_TT& adj_a, B& adj_b, C& adj_c, D& adj_d, E& adj_e, F& adj_f, G& adj_g, H& adj_h, const tile_t<U, M, N>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        af(a.data[k], detail::elem(b, k), detail::elem(c, k), detail::elem(d, k), detail::elem(e, k), detail::elem(f, k), detail::elem(g, k), detail::elem(h, k), adj_a.data[k], detail::adj_elem(adj_b, k), detail::adj_elem(adj_c, k), detail::adj_elem(adj_d, k), detail::adj_elem(adj_e, k), detail::adj_elem(adj_f, k), detail::adj_elem(adj_g, k), detail::adj_elem(adj_h, k), adj_ret.data[k]);
}

// ------------------------------------------------------------------------------------------------ reductions
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, 1, 1> tile_sum(const TREADLE_TT& a) {
    T s = a.data[0];
    for (int k = 1; k < M * N; ++k)
        s = treadle::add(s, a.data[k]);
    tile_t<T, 1, 1> r;
    r.data[0] = s;
    return r;
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_tile_sum(const TREADLE_TT&, TREADLE_TT& adj_a, const tile_t<T, 1, 1>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        adj_a.data[k] = treadle::add(adj_a.data[k], adj_ret.data[0]);
}
// Sum over one axis of a tile seen as (outer, extent, inner): the result drops that axis.
template <int OUTER, int EXT, int INNER, typename T, int M, int N, int RM, int RN>
TREADLE_FUNC tile_t<T, RM, RN> tile_sum_axis(const TREADLE_TT& a) {
    tile_t<T, RM, RN> r;
    for (int o = 0; o < OUTER; ++o)
        for (int i = 0; i < INNER; ++i) {
            T s = a.data[o * EXT * INNER + i];
            for (int e = 1; e < EXT; ++e)
                s = treadle::add(s, a.data[(o * EXT + e) * INNER + i]);
            r.data[o * INNER + i] = s;
        }
    return r;
}
template <int OUTER, int EXT, int INNER, typename T, int M, int N, int RM, int RN>
TREADLE_FUNC void adj_tile_sum_axis(const TREADLE_TT&, TREADLE_TT& adj_a, const tile_t<T, RM, RN>& adj_ret) {
    for (int o = 0; o < OUTER; ++o)
        for (int e = 0; e < EXT; ++e)
            for (int i = 0; i < INNER; ++i) {
                T& g = adj_a.data[(o * EXT + e) * INNER + i];
                g = treadle::add(g, adj_ret.data[o * INNER + i]);
            }
}
// min / max with NaN treated as missing (C fmin/fmax), and the flat index of the first extreme element.
namespace detail {
template <typename T> TREADLE_FUNC bool isnan_(const T& x) { return !(x == x); }
template <bool MAX, typename T, int M, int N> TREADLE_FUNC int tile_arg_extreme(const TREADLE_TT& a) {
    int best = 0;
    for (int k = 1; k < M * N; ++k) {
        const T& x = a.data[k];
        const T& b = a.data[best];
        if (isnan_(x))
            continue;
        if (isnan_(b) || (MAX ? (b < x) : (x < b)))
            best = k;
    }
    return best;
}
}  // namespace detail
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, 1, 1> tile_min(const TREADLE_TT& a) {
    tile_t<T, 1, 1> r;
    r.data[0] = a.data[detail::tile_arg_extreme<false>(a)];
    return r;
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_tile_min(const TREADLE_TT& a, TREADLE_TT& adj_a, const tile_t<T, 1, 1>& adj_ret) {
    const int k = detail::tile_arg_extreme<false>(a);
    adj_a.data[k] = treadle::add(adj_a.data[k], adj_ret.data[0]);
}
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, 1, 1> tile_max(const TREADLE_TT& a) {
    tile_t<T, 1, 1> r;
    r.data[0] = a.data[detail::tile_arg_extreme<true>(a)];
    return r;
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_tile_max(const TREADLE_TT& a, TREADLE_TT& adj_a, const tile_t<T, 1, 1>& adj_ret) {
    const int k = detail::tile_arg_extreme<true>(a);
    adj_a.data[k] = treadle::add(adj_a.data[k], adj_ret.data[0]);
}
template <typename T, int M, int N> TREADLE_FUNC tile_t<int32, 1, 1> tile_argmin(const TREADLE_TT& a) {
    tile_t<int32, 1, 1> r;
    r.data[0] = detail::tile_arg_extreme<false>(a);
    return r;
}
template <typename T, int M, int N> TREADLE_FUNC tile_t<int32, 1, 1> tile_argmax(const TREADLE_TT& a) {
    tile_t<int32, 1, 1> r;
    r.data[0] = detail::tile_arg_extreme<true>(a);
    return r;
}
// tile_reduce(op, a): op folded over the elements in order (op is a generic lambda over a binary builtin or
// @func). Differentiable for op = add through tile_sum; other ops are declared without an adjoint.
template <typename F, typename T, int M, int N> TREADLE_FUNC tile_t<T, 1, 1> tile_reduce(F f, const TREADLE_TT& a) {
    T s = a.data[0];
    for (int k = 1; k < M * N; ++k)
        s = f(s, a.data[k]);
    tile_t<T, 1, 1> r;
    r.data[0] = s;
    return r;
}
// tile_reduce along one axis of a tile seen as (outer, extent, inner).
template <int OUTER, int EXT, int INNER, int RM, int RN, typename F, typename T, int M, int N>
TREADLE_FUNC tile_t<T, RM, RN> tile_reduce_axis(F f, const TREADLE_TT& a) {
    tile_t<T, RM, RN> r;
    for (int o = 0; o < OUTER; ++o)
        for (int i = 0; i < INNER; ++i) {
            T s = a.data[o * EXT * INNER + i];
            for (int e = 1; e < EXT; ++e)
                s = f(s, a.data[(o * EXT + e) * INNER + i]);
            r.data[o * INNER + i] = s;
        }
    return r;
}
// tile_dot: products summed over the tile; vector elements contract with dot, matrix elements with ddot.
namespace detail {
template <typename T> TREADLE_FUNC T dot_elem(const T& a, const T& b) { return treadle::mul(a, b); }
template <unsigned L, typename T> TREADLE_FUNC T dot_elem(const vec_t<L, T>& a, const vec_t<L, T>& b) { return dot(a, b); }
template <unsigned R, unsigned C, typename T> TREADLE_FUNC T dot_elem(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return ddot(a, b);
}
template <typename T, typename S> TREADLE_FUNC void adj_dot_elem(const T& a, const T& b, T& adj_a, T& adj_b, const S& adj_r) {
    treadle::adj_mul(a, b, adj_a, adj_b, adj_r);
}
template <unsigned L, typename T>
TREADLE_FUNC void adj_dot_elem(const vec_t<L, T>& a, const vec_t<L, T>& b, vec_t<L, T>& adj_a, vec_t<L, T>& adj_b, const T& r) {
    adj_dot(a, b, adj_a, adj_b, r);
}
template <unsigned R, unsigned C, typename T>
TREADLE_FUNC void adj_dot_elem(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b,
                               const T& r) {
    adj_ddot(a, b, adj_a, adj_b, r);
}
}  // namespace detail
template <typename T, int M, int N>
TREADLE_FUNC auto tile_dot(const TREADLE_TT& a, const TREADLE_TT& b) -> tile_t<decltype(detail::dot_elem(a.data[0], b.data[0])), 1, 1> {
    auto s = detail::dot_elem(a.data[0], b.data[0]);
    for (int k = 1; k < M * N; ++k)
        s = treadle::add(s, detail::dot_elem(a.data[k], b.data[k]));
    tile_t<decltype(s), 1, 1> r;
    r.data[0] = s;
    return r;
}
template <typename T, int M, int N, typename S>
TREADLE_FUNC void adj_tile_dot(const TREADLE_TT& a, const TREADLE_TT& b, TREADLE_TT& adj_a, TREADLE_TT& adj_b,
                               const tile_t<S, 1, 1>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        detail::adj_dot_elem(a.data[k], b.data[k], adj_a.data[k], adj_b.data[k], adj_ret.data[0]);
}

// ------------------------------------------------------------------------------------------------ scans
template <bool INCLUSIVE, typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_scan_sum(const TREADLE_TT& a) {
    TREADLE_TT r;
    T s = T(0);
    for (int k = 0; k < M * N; ++k) {
        if (INCLUSIVE) {
            s = treadle::add(s, a.data[k]);
            r.data[k] = s;
        } else {
            r.data[k] = s;
            s = treadle::add(s, a.data[k]);
        }
    }
    return r;
}
template <bool INCLUSIVE, typename T, int M, int N>
TREADLE_FUNC void adj_tile_scan_sum(const TREADLE_TT&, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    // each input element's adjoint is the sum of the result adjoints it contributes to (a reversed scan)
    T s = T(0);
    for (int k = M * N - 1; k >= 0; --k) {
        if (INCLUSIVE) {
            s = treadle::add(s, adj_ret.data[k]);
            adj_a.data[k] = treadle::add(adj_a.data[k], s);
        } else {
            adj_a.data[k] = treadle::add(adj_a.data[k], s);
            s = treadle::add(s, adj_ret.data[k]);
        }
    }
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_scan_inclusive(const TREADLE_TT& a) {
    return tile_scan_sum<true>(a);
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_tile_scan_inclusive(const TREADLE_TT& a, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    adj_tile_scan_sum<true>(a, adj_a, adj_ret);
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_scan_exclusive(const TREADLE_TT& a) {
    return tile_scan_sum<false>(a);
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_tile_scan_exclusive(const TREADLE_TT& a, TREADLE_TT& adj_a, const TREADLE_TT& adj_ret) {
    adj_tile_scan_sum<false>(a, adj_a, adj_ret);
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_scan_max_inclusive(const TREADLE_TT& a) {
    TREADLE_TT r;
    T s = a.data[0];
    for (int k = 0; k < M * N; ++k) {
        s = treadle::max(s, a.data[k]);
        r.data[k] = s;
    }
    return r;
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_scan_min_inclusive(const TREADLE_TT& a) {
    TREADLE_TT r;
    T s = a.data[0];
    for (int k = 0; k < M * N; ++k) {
        s = treadle::min(s, a.data[k]);
        r.data[k] = s;
    }
    return r;
}

// ------------------------------------------------------------------------------------------------ layout
// Element access by multi-index (tile_extract, t[i, j]); the compiler passes the extents after the first.
template <int D1, int D2, int D3, typename T, int M, int N>
TREADLE_FUNC T tile_extract_at(const TREADLE_TT& a, int64 i0, int64 i1, int64 i2, int64 i3) {
    return a.data[detail::tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3))];
}
template <int D1, int D2, int D3, typename T, int M, int N, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_extract_at(const TREADLE_TT&, int64 i0, int64 i1, int64 i2, int64 i3, TREADLE_TT& adj_a,
                                      A0&, A1&, A2&, A3&, const T& adj_ret) {
    T& g = adj_a.data[detail::tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3))];
    g = treadle::add(g, adj_ret);
}
// The tile with one element replaced (t[i, j] = v).
template <int D1, int D2, int D3, typename T, int M, int N>
TREADLE_FUNC TREADLE_TT tile_insert_at(const TREADLE_TT& a, int64 i0, int64 i1, int64 i2, int64 i3, T v) {
    TREADLE_TT r = a;
    r.data[detail::tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3))] = v;
    return r;
}
template <int D1, int D2, int D3, typename T, int M, int N, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_insert_at(const TREADLE_TT&, int64 i0, int64 i1, int64 i2, int64 i3, T, TREADLE_TT& adj_a,
                                     A0&, A1&, A2&, A3&, T& adj_v, const TREADLE_TT& adj_ret) {
    const int k = detail::tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3));
    for (int q = 0; q < M * N; ++q)
        if (q != k)
            adj_a.data[q] = treadle::add(adj_a.data[q], adj_ret.data[q]);
    adj_v = treadle::add(adj_v, adj_ret.data[k]);
}
// Per-thread writes into a tile (tile_scatter_masked, tile_scatter_add). A block is one thread on the CPU, so the
// thread's own value is the only one; an index outside the tile is skipped (reported in checked builds) rather than
// writing past the tile.
namespace detail {
template <int D0, int D1, int D2, int D3>
TREADLE_FUNC int tile_checked_offset(int64 i0, int64 i1, int64 i2, int64 i3) {
    const int64 idx[4] = {i0, i1, i2, i3};
    const int64 ext[4] = {D0, D1, D2, D3};
    for (int d = 0; d < 4; ++d)
        if (idx[d] < 0 || idx[d] >= ext[d]) {
#if defined(TREADLE_CHECKED)
            treadle_report_oob(d, (long long)idx[d], (long long)ext[d]);
#endif
            return -1;
        }
    return tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3));
}
}  // namespace detail
template <int D0, int D1, int D2, int D3, typename T, int M, int N>
TREADLE_FUNC TREADLE_TT tile_scatter_masked_at(const TREADLE_TT& a, int64 i0, int64 i1, int64 i2, int64 i3, T v,
                                               bool has_value) {
    TREADLE_TT r = a;
    const int k = has_value ? detail::tile_checked_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    if (k >= 0)
        r.data[k] = v;
    return r;
}
// The written element's gradient goes to the value and is consumed; the others pass through.
template <int D0, int D1, int D2, int D3, typename T, int M, int N, typename A0, typename A1, typename A2,
          typename A3, typename B>
TREADLE_FUNC void adj_tile_scatter_masked_at(const TREADLE_TT&, int64 i0, int64 i1, int64 i2, int64 i3, T,
                                             bool has_value, TREADLE_TT& adj_a, A0&, A1&, A2&, A3&, T& adj_v, B&,
                                             const TREADLE_TT& adj_ret) {
    const int k = has_value ? detail::tile_checked_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    for (int q = 0; q < M * N; ++q)
        if (q != k)
            adj_a.data[q] = treadle::add(adj_a.data[q], adj_ret.data[q]);
    if (k >= 0)
        adj_v = treadle::add(adj_v, adj_ret.data[k]);
}
template <int D0, int D1, int D2, int D3, typename T, int M, int N>
TREADLE_FUNC TREADLE_TT tile_scatter_add_at(const TREADLE_TT& a, int64 i0, int64 i1, int64 i2, int64 i3, T v,
                                            bool has_value) {
    TREADLE_TT r = a;
    const int k = has_value ? detail::tile_checked_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    if (k >= 0)
        r.data[k] = treadle::add(r.data[k], v);
    return r;
}
// Every element's gradient passes through; the value also receives the gradient of the element it was added to.
template <int D0, int D1, int D2, int D3, typename T, int M, int N, typename A0, typename A1, typename A2,
          typename A3, typename B>
TREADLE_FUNC void adj_tile_scatter_add_at(const TREADLE_TT&, int64 i0, int64 i1, int64 i2, int64 i3, T,
                                          bool has_value, TREADLE_TT& adj_a, A0&, A1&, A2&, A3&, T& adj_v, B&,
                                          const TREADLE_TT& adj_ret) {
    const int k = has_value ? detail::tile_checked_offset<D0, D1, D2, D3>(i0, i1, i2, i3) : -1;
    for (int q = 0; q < M * N; ++q)
        adj_a.data[q] = treadle::add(adj_a.data[q], adj_ret.data[q]);
    if (k >= 0)
        adj_v = treadle::add(adj_v, adj_ret.data[k]);
}
// A window of a tile (tile_view with an explicit shape, tile_assign): source extents S0..S3, window extents W0..W3,
// offsets o0..o3 (elements outside the source read as zero).
template <int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, typename F>
TREADLE_FUNC void for_subtile(int64 o0, int64 o1, int64 o2, int64 o3, F f) {
    for (int i0 = 0; i0 < W0; ++i0)
        for (int i1 = 0; i1 < W1; ++i1)
            for (int i2 = 0; i2 < W2; ++i2)
                for (int i3 = 0; i3 < W3; ++i3) {
                    const int64 s0 = o0 + i0, s1 = o1 + i1, s2 = o2 + i2, s3 = o3 + i3;
                    if (s0 < 0 || s0 >= S0 || s1 < 0 || s1 >= S1 || s2 < 0 || s2 >= S2 || s3 < 0 || s3 >= S3)
                        continue;
                    f(detail::tile_offset<W1, W2, W3>(i0, i1, i2, i3),
                      detail::tile_offset<S1, S2, S3>(int(s0), int(s1), int(s2), int(s3)));
                }
}
template <int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, typename T, int M, int N>
TREADLE_FUNC tile_t<T, W0 * W1 * W2, W3> tile_subtile(const TREADLE_TT& a, int64 o0, int64 o1, int64 o2, int64 o3) {
    tile_t<T, W0 * W1 * W2, W3> r;
    for_subtile<S0, S1, S2, S3, W0, W1, W2, W3>(o0, o1, o2, o3, [&](int w, int s) { r.data[w] = a.data[s]; });
    return r;
}
template <int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, typename T, int M, int N, typename A0,
          typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_subtile(const TREADLE_TT&, int64 o0, int64 o1, int64 o2, int64 o3, TREADLE_TT& adj_a,
                                   A0&, A1&, A2&, A3&, const tile_t<T, W0 * W1 * W2, W3>& adj_ret) {
    for_subtile<S0, S1, S2, S3, W0, W1, W2, W3>(o0, o1, o2, o3, [&](int w, int s) {
        adj_a.data[s] = treadle::add(adj_a.data[s], adj_ret.data[w]);
    });
}
// tile_slice_indexed / t[idx, :]: rows (or entries along padded axis AX) of a picked by a 1-d int32 tile; negative
// indices count from the end, indices still outside read zero.
template <int AX, int S0, int S1, int S2, int S3, int R0, int R1, int R2, int R3, int NI, typename T, int M, int N>
TREADLE_FUNC tile_t<T, R0 * R1 * R2, R3> tile_gather_axis(const TREADLE_TT& a, const tile_t<int32, 1, NI>& idx) {
    tile_t<T, R0 * R1 * R2, R3> r;
    const int S[4] = {S0, S1, S2, S3};
    int k = 0;
    for (int i0 = 0; i0 < R0; ++i0)
        for (int i1 = 0; i1 < R1; ++i1)
            for (int i2 = 0; i2 < R2; ++i2)
                for (int i3 = 0; i3 < R3; ++i3, ++k) {
                    int c[4] = {i0, i1, i2, i3};
                    int j = idx.data[c[AX]];
                    j = j < 0 ? j + S[AX] : j;
                    if (j < 0 || j >= S[AX])
                        continue;
                    c[AX] = j;
                    r.data[k] = a.data[detail::tile_offset<S1, S2, S3>(c[0], c[1], c[2], c[3])];
                }
    return r;
}
template <int AX, int S0, int S1, int S2, int S3, int R0, int R1, int R2, int R3, int NI, typename T, int M, int N>
TREADLE_FUNC void adj_tile_gather_axis(const TREADLE_TT&, const tile_t<int32, 1, NI>& idx, TREADLE_TT& adj_a,
                                       tile_t<int32, 1, NI>&, const tile_t<T, R0 * R1 * R2, R3>& adj_ret) {
    const int S[4] = {S0, S1, S2, S3};
    int k = 0;
    for (int i0 = 0; i0 < R0; ++i0)
        for (int i1 = 0; i1 < R1; ++i1)
            for (int i2 = 0; i2 < R2; ++i2)
                for (int i3 = 0; i3 < R3; ++i3, ++k) {
                    int c[4] = {i0, i1, i2, i3};
                    int j = idx.data[c[AX]];
                    j = j < 0 ? j + S[AX] : j;
                    if (j < 0 || j >= S[AX])
                        continue;
                    c[AX] = j;
                    T& g = adj_a.data[detail::tile_offset<S1, S2, S3>(c[0], c[1], c[2], c[3])];
                    g = treadle::add(g, adj_ret.data[k]);
                }
}
// A strided window (slices with a step): element w of the window reads source index o[d] + w[d] * ST[d].
template <int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, int ST0, int ST1, int ST2, int ST3,
          typename F>
TREADLE_FUNC void for_strided(int64 o0, int64 o1, int64 o2, int64 o3, F f) {
    int w = 0;
    for (int i0 = 0; i0 < W0; ++i0)
        for (int i1 = 0; i1 < W1; ++i1)
            for (int i2 = 0; i2 < W2; ++i2)
                for (int i3 = 0; i3 < W3; ++i3, ++w) {
                    const int64 s0 = o0 + i0 * ST0, s1 = o1 + i1 * ST1, s2 = o2 + i2 * ST2, s3 = o3 + i3 * ST3;
                    if (s0 < 0 || s0 >= S0 || s1 < 0 || s1 >= S1 || s2 < 0 || s2 >= S2 || s3 < 0 || s3 >= S3)
                        continue;
                    f(w, detail::tile_offset<S1, S2, S3>(int(s0), int(s1), int(s2), int(s3)));
                }
}
#define TREADLE_STRIDED_TP                                                                                             \
    int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, int ST0, int ST1, int ST2, int ST3, typename T,     \
        int M, int N
#define TREADLE_STRIDED_ARGS S0, S1, S2, S3, W0, W1, W2, W3, ST0, ST1, ST2, ST3
template <TREADLE_STRIDED_TP>
TREADLE_FUNC tile_t<T, W0 * W1 * W2, W3> tile_subtile_step(const TREADLE_TT& a, int64 o0, int64 o1, int64 o2, int64 o3) {
    tile_t<T, W0 * W1 * W2, W3> r;
    for_strided<TREADLE_STRIDED_ARGS>(o0, o1, o2, o3, [&](int w, int s) { r.data[w] = a.data[s]; });
    return r;
}
template <TREADLE_STRIDED_TP, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_subtile_step(const TREADLE_TT&, int64 o0, int64 o1, int64 o2, int64 o3, TREADLE_TT& adj_a,
                                        A0&, A1&, A2&, A3&, const tile_t<T, W0 * W1 * W2, W3>& adj_ret) {
    for_strided<TREADLE_STRIDED_ARGS>(o0, o1, o2, o3, [&](int w, int s) {
        adj_a.data[s] = treadle::add(adj_a.data[s], adj_ret.data[w]);
    });
}
template <TREADLE_STRIDED_TP, typename U>
TREADLE_FUNC TREADLE_TT tile_assign_step(const TREADLE_TT& dst, const tile_t<U, W0 * W1 * W2, W3>& src, int64 o0,
                                         int64 o1, int64 o2, int64 o3) {
    TREADLE_TT r = dst;
    for_strided<TREADLE_STRIDED_ARGS>(o0, o1, o2, o3, [&](int w, int s) { r.data[s] = cast<T>(src.data[w]); });
    return r;
}
template <TREADLE_STRIDED_TP, typename U, typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_assign_step(const TREADLE_TT&, const tile_t<U, W0 * W1 * W2, W3>& src, int64 o0, int64 o1,
                                       int64 o2, int64 o3, TREADLE_TT& adj_dst, tile_t<U, W0 * W1 * W2, W3>& adj_src,
                                       A0&, A1&, A2&, A3&, const TREADLE_TT& adj_ret) {
    bool covered[M * N > 0 ? M * N : 1] = {};
    for_strided<TREADLE_STRIDED_ARGS>(o0, o1, o2, o3, [&](int w, int s) {
        covered[s] = true;
        adj_cast<T>(src.data[w], adj_src.data[w], adj_ret.data[s]);
    });
    for (int k = 0; k < M * N; ++k)
        if (!covered[k])
            adj_dst.data[k] = treadle::add(adj_dst.data[k], adj_ret.data[k]);
}
#undef TREADLE_STRIDED_TP
#undef TREADLE_STRIDED_ARGS
// tile_assign(dst, src, offset): dst with the window at offset replaced by src (converted to dst's type).
template <int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, typename T, int M, int N, typename U>
TREADLE_FUNC TREADLE_TT tile_assign_window(const TREADLE_TT& dst, const tile_t<U, W0 * W1 * W2, W3>& src, int64 o0,
                                           int64 o1, int64 o2, int64 o3) {
    TREADLE_TT r = dst;
    for_subtile<S0, S1, S2, S3, W0, W1, W2, W3>(o0, o1, o2, o3, [&](int w, int s) { r.data[s] = cast<T>(src.data[w]); });
    return r;
}
template <int S0, int S1, int S2, int S3, int W0, int W1, int W2, int W3, typename T, int M, int N, typename U,
          typename A0, typename A1, typename A2, typename A3>
TREADLE_FUNC void adj_tile_assign_window(const TREADLE_TT&, const tile_t<U, W0 * W1 * W2, W3>& src, int64 o0, int64 o1,
                                         int64 o2, int64 o3, TREADLE_TT& adj_dst, tile_t<U, W0 * W1 * W2, W3>& adj_src,
                                         A0&, A1&, A2&, A3&, const TREADLE_TT& adj_ret) {
    // the overwritten region's adjoint goes to src, the rest to dst
    bool covered[M * N > 0 ? M * N : 1] = {};
    for_subtile<S0, S1, S2, S3, W0, W1, W2, W3>(o0, o1, o2, o3, [&](int w, int s) {
        covered[s] = true;
        adj_cast<T>(src.data[w], adj_src.data[w], adj_ret.data[s]);
    });
    for (int k = 0; k < M * N; ++k)
        if (!covered[k])
            adj_dst.data[k] = treadle::add(adj_dst.data[k], adj_ret.data[k]);
}
// Same elements, new shape (tile_reshape, tile_squeeze): a copy of the storage.
template <int RM, int RN, typename T, int M, int N> TREADLE_FUNC tile_t<T, RM, RN> tile_reshape(const TREADLE_TT& a) {
    static_assert(RM * RN == M * N, "tile_reshape keeps the element count");
    tile_t<T, RM, RN> r;
    for (int k = 0; k < M * N; ++k)
        r.data[k] = a.data[k];
    return r;
}
template <int RM, int RN, typename T, int M, int N>
TREADLE_FUNC void adj_tile_reshape(const TREADLE_TT&, TREADLE_TT& adj_a, const tile_t<T, RM, RN>& adj_ret) {
    for (int k = 0; k < M * N; ++k)
        adj_a.data[k] = treadle::add(adj_a.data[k], adj_ret.data[k]);
}
template <typename T, int M, int N> TREADLE_FUNC tile_t<T, N, M> tile_transpose(const TREADLE_TT& a) {
    tile_t<T, N, M> r;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            r.data[j * M + i] = a.data[i * N + j];
    return r;
}
template <typename T, int M, int N>
TREADLE_FUNC void adj_tile_transpose(const TREADLE_TT&, TREADLE_TT& adj_a, const tile_t<T, N, M>& adj_ret) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            adj_a.data[i * N + j] = treadle::add(adj_a.data[i * N + j], adj_ret.data[j * M + i]);
}
// tile_broadcast: source extents S0..S3 (1 where broadcast, aligned right), target extents B0..B3.
template <int S0, int S1, int S2, int S3, int B0, int B1, int B2, int B3, typename T, int M, int N>
TREADLE_FUNC tile_t<T, B0 * B1 * B2, B3> tile_broadcast(const TREADLE_TT& a) {
    tile_t<T, B0 * B1 * B2, B3> r;
    for (int i0 = 0; i0 < B0; ++i0)
        for (int i1 = 0; i1 < B1; ++i1)
            for (int i2 = 0; i2 < B2; ++i2)
                for (int i3 = 0; i3 < B3; ++i3)
                    r.data[detail::tile_offset<B1, B2, B3>(i0, i1, i2, i3)] = a.data[detail::tile_offset<S1, S2, S3>(
                        S0 == 1 ? 0 : i0, S1 == 1 ? 0 : i1, S2 == 1 ? 0 : i2, S3 == 1 ? 0 : i3)];
    return r;
}
template <int S0, int S1, int S2, int S3, int B0, int B1, int B2, int B3, typename T, int M, int N>
TREADLE_FUNC void adj_tile_broadcast(const TREADLE_TT&, TREADLE_TT& adj_a, const tile_t<T, B0 * B1 * B2, B3>& adj_ret) {
    for (int i0 = 0; i0 < B0; ++i0)
        for (int i1 = 0; i1 < B1; ++i1)
            for (int i2 = 0; i2 < B2; ++i2)
                for (int i3 = 0; i3 < B3; ++i3) {
                    T& g = adj_a.data[detail::tile_offset<S1, S2, S3>(S0 == 1 ? 0 : i0, S1 == 1 ? 0 : i1,
                                                                     S2 == 1 ? 0 : i2, S3 == 1 ? 0 : i3)];
                    g = treadle::add(g, adj_ret.data[detail::tile_offset<B1, B2, B3>(i0, i1, i2, i3)]);
                }
}

// ------------------------------------------------------------------------------------------------ sort, scatter
// tile_sort(keys, values): both permuted by ascending key (insertion sort for short tiles, else heap sort: no
// allocation, and deterministic on every target). Returns the sorted pair through the references.
template <typename K, typename V, int M, int N>
TREADLE_FUNC void tile_sort_pair(tile_t<K, M, N>& keys, tile_t<V, M, N>& values) {
    const int n = M * N;
    auto sift = [&](int root, int end) {
        while (2 * root + 1 < end) {
            int child = 2 * root + 1;
            if (child + 1 < end && keys.data[child] < keys.data[child + 1])
                ++child;
            if (!(keys.data[root] < keys.data[child]))
                return;
            K tk = keys.data[root]; keys.data[root] = keys.data[child]; keys.data[child] = tk;
            V tv = values.data[root]; values.data[root] = values.data[child]; values.data[child] = tv;
            root = child;
        }
    };
    for (int s = n / 2 - 1; s >= 0; --s)
        sift(s, n);
    for (int end = n - 1; end > 0; --end) {
        K tk = keys.data[0]; keys.data[0] = keys.data[end]; keys.data[end] = tk;
        V tv = values.data[0]; values.data[0] = values.data[end]; values.data[end] = tv;
        sift(0, end);
    }
}
template <typename K, typename V, int M, int N> struct tile_sorted_t {
    tile_t<K, M, N> keys;
    tile_t<V, M, N> values;
};
template <typename K, typename V, int M, int N>
TREADLE_FUNC tile_t<K, M, N> tile_sort_keys(const tile_t<K, M, N>& keys, const tile_t<V, M, N>& values) {
    tile_t<K, M, N> k = keys;
    tile_t<V, M, N> v = values;
    tile_sort_pair(k, v);
    return k;
}
template <typename K, typename V, int M, int N>
TREADLE_FUNC tile_t<V, M, N> tile_sort_values(const tile_t<K, M, N>& keys, const tile_t<V, M, N>& values) {
    tile_t<K, M, N> k = keys;
    tile_t<V, M, N> v = values;
    tile_sort_pair(k, v);
    return v;
}
// tile_scatter_add / tile_scatter_masked: this (single) thread's value added / written at the index when has_value.
template <int D1, int D2, int D3, typename T, int M, int N, typename S>
TREADLE_FUNC TREADLE_TT tile_scatter_add_at(const TREADLE_TT& a, int64 i0, int64 i1, int64 i2, int64 i3, S value,
                                            bool has_value) {
    TREADLE_TT r = a;
    if (has_value) {
        T& x = r.data[detail::tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3))];
        x = treadle::add(x, T(value));
    }
    return r;
}
template <int D1, int D2, int D3, typename T, int M, int N, typename S>
TREADLE_FUNC TREADLE_TT tile_scatter_masked_at(const TREADLE_TT& a, int64 i0, int64 i1, int64 i2, int64 i3, S value,
                                               bool has_value) {
    TREADLE_TT r = a;
    if (has_value)
        r.data[detail::tile_offset<D1, D2, D3>(int(i0), int(i1), int(i2), int(i3))] = T(value);
    return r;
}

// ------------------------------------------------------------------------------------------------ random
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_randf(uint32 seed, float32 lo, float32 hi) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k) {
        uint32 state = rand_init(seed, uint32(k));
        r.data[k] = T(randf(state, lo, hi));
    }
    return r;
}
template <typename T, int M, int N> TREADLE_FUNC TREADLE_TT tile_randi(uint32 seed, int32 lo, int32 hi, bool bounded) {
    TREADLE_TT r;
    for (int k = 0; k < M * N; ++k) {
        uint32 state = rand_init(seed, uint32(k));
        r.data[k] = T(bounded ? randi(state, lo, hi) : randi(state));
    }
    return r;
}

#undef TREADLE_TT

}  // namespace treadle
