// Rigid transforms `transform_t<T>`: 7 components, the translation p (3) then the rotation q (4, x y z w), mapping x
// to quat_rotate(q, x) + p; and the transform builtins, each forward function next to its adjoint. Like quat_t,
// transform_t derives from vec_t (see quat.h); `mul(transform, transform)` is the composition.
#pragma once
#include "quat.h"

namespace treadle {

template <typename T> struct transform_t : vec_t<7, T> {
    TREADLE_FUNC transform_t() : vec_t<7, T>() {}
    TREADLE_FUNC explicit transform_t(T s) : vec_t<7, T>(s) {}
    TREADLE_FUNC transform_t(T px, T py, T pz, T qx, T qy, T qz, T qw) : vec_t<7, T>(px, py, pz, qx, qy, qz, qw) {}
    TREADLE_FUNC transform_t(const vec_t<3, T>& p, const quat_t<T>& q)
        : vec_t<7, T>(p.c[0], p.c[1], p.c[2], q.c[0], q.c[1], q.c[2], q.c[3]) {}
    template <typename P, typename detail::enable_if<detail::is_same<P, T>::value, int>::type = 0>
    TREADLE_FUNC explicit transform_t(const P* p) : vec_t<7, T>(p) {}
    template <typename U> TREADLE_FUNC explicit transform_t(const vec_t<7, U>& o) : vec_t<7, T>(o) {}

    TREADLE_FUNC vec_t<3, T> p() const { return vec_t<3, T>(this->c[0], this->c[1], this->c[2]); }
    TREADLE_FUNC quat_t<T> q() const { return quat_t<T>(this->c[3], this->c[4], this->c[5], this->c[6]); }
};

namespace detail {
template <typename T> struct scalar_of<transform_t<T>> { typedef T type; };
template <typename T> struct is_composite<transform_t<T>> { static constexpr bool value = true; };
}  // namespace detail

TREADLE_VECLIKE_OPS(transform_t)

// ------------------------------------------------------------------------------------------------ constructors
// transformation(): zero; transformation(s): s everywhere; transformation(7 scalars); transformation(p[, q]).
template <typename T> TREADLE_FUNC transform_t<T> transformation() { return transform_t<T>(); }
template <typename T> TREADLE_FUNC void adj_transformation(const transform_t<T>&) {}
template <typename T> TREADLE_FUNC transform_t<T> transformation(T s) { return transform_t<T>(s); }
template <typename T> TREADLE_FUNC void adj_transformation(T, T& adj_s, const transform_t<T>& adj_ret) {
    for (unsigned i = 0; i < 7; ++i)
        adj_s += adj_ret.c[i];
}
template <typename T>
TREADLE_FUNC transform_t<T> transformation(T px, T py, T pz, T qx, T qy, T qz, T qw) {
    return transform_t<T>(px, py, pz, qx, qy, qz, qw);
}
template <typename T>
TREADLE_FUNC void adj_transformation(T, T, T, T, T, T, T, T& a0, T& a1, T& a2, T& a3, T& a4, T& a5, T& a6,
                                     const transform_t<T>& g) {
    a0 += g.c[0];
    a1 += g.c[1];
    a2 += g.c[2];
    a3 += g.c[3];
    a4 += g.c[4];
    a5 += g.c[5];
    a6 += g.c[6];
}
template <typename T> TREADLE_FUNC transform_t<T> transformation(const vec_t<3, T>& p, const quat_t<T>& q) {
    return transform_t<T>(p, q);
}
template <typename T>
TREADLE_FUNC void adj_transformation(const vec_t<3, T>&, const quat_t<T>&, vec_t<3, T>& adj_p, quat_t<T>& adj_q,
                                     const transform_t<T>& adj_ret) {
    adj_p += adj_ret.p();
    adj_q += adj_ret.q();
}
template <typename T> TREADLE_FUNC transform_t<T> transformation(const vec_t<3, T>& p) {
    return transform_t<T>(p, quat_identity<T>());
}
template <typename T>
TREADLE_FUNC void adj_transformation(const vec_t<3, T>&, vec_t<3, T>& adj_p, const transform_t<T>& adj_ret) {
    adj_p += adj_ret.p();
}

template <typename T> TREADLE_FUNC transform_t<T> transform_identity() {
    return transform_t<T>(vec_t<3, T>(), quat_identity<T>());
}

// ------------------------------------------------------------------------------------------------ parts
template <typename T> TREADLE_FUNC vec_t<3, T> transform_get_translation(const transform_t<T>& t) { return t.p(); }
template <typename T>
TREADLE_FUNC void adj_transform_get_translation(const transform_t<T>&, transform_t<T>& adj_t,
                                                const vec_t<3, T>& adj_ret) {
    for (unsigned i = 0; i < 3; ++i)
        adj_t.c[i] += adj_ret.c[i];
}
template <typename T> TREADLE_FUNC quat_t<T> transform_get_rotation(const transform_t<T>& t) { return t.q(); }
template <typename T>
TREADLE_FUNC void adj_transform_get_rotation(const transform_t<T>&, transform_t<T>& adj_t, const quat_t<T>& adj_ret) {
    for (unsigned i = 0; i < 4; ++i)
        adj_t.c[3 + i] += adj_ret.c[i];
}

// Copies with one part replaced (what `t.p = v` and `t.q = r` mean in kernels), and the in-place setters.
template <typename T>
TREADLE_FUNC transform_t<T> transform_set_translation_copy(const transform_t<T>& t, const vec_t<3, T>& p) {
    return transform_t<T>(p, t.q());
}
template <typename T>
TREADLE_FUNC void adj_transform_set_translation_copy(const transform_t<T>&, const vec_t<3, T>&, transform_t<T>& adj_t,
                                                     vec_t<3, T>& adj_p, const transform_t<T>& adj_ret) {
    adj_p += adj_ret.p();
    for (unsigned i = 3; i < 7; ++i)
        adj_t.c[i] += adj_ret.c[i];
}
template <typename T>
TREADLE_FUNC transform_t<T> transform_set_rotation_copy(const transform_t<T>& t, const quat_t<T>& q) {
    return transform_t<T>(t.p(), q);
}
template <typename T>
TREADLE_FUNC void adj_transform_set_rotation_copy(const transform_t<T>&, const quat_t<T>&, transform_t<T>& adj_t,
                                                  quat_t<T>& adj_q, const transform_t<T>& adj_ret) {
    adj_q += adj_ret.q();
    for (unsigned i = 0; i < 3; ++i)
        adj_t.c[i] += adj_ret.c[i];
}
template <typename T> TREADLE_FUNC void transform_set_translation(transform_t<T>& t, const vec_t<3, T>& p) {
    t = transform_set_translation_copy(t, p);
}
template <typename T> TREADLE_FUNC void transform_set_rotation(transform_t<T>& t, const quat_t<T>& q) {
    t = transform_set_rotation_copy(t, q);
}

// ------------------------------------------------------------------------------------------------ composition
// a b: translation a.p + quat_rotate(a.q, b.p), rotation a.q b.q (b is applied first).
template <typename T> TREADLE_FUNC transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_t<T>(a.p() + quat_rotate(a.q(), b.p()), mul(a.q(), b.q()));
}
template <typename T>
TREADLE_FUNC void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                          transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    quat_t<T> gaq, gbq;
    vec_t<3, T> gbp;
    adj_quat_rotate(a.q(), b.p(), gaq, gbp, adj_ret.p());
    adj_mul(a.q(), b.q(), gaq, gbq, adj_ret.q());
    adj_a += transform_t<T>(adj_ret.p(), gaq);
    adj_b += transform_t<T>(gbp, gbq);
}
template <typename T> TREADLE_FUNC transform_t<T> transform_multiply(const transform_t<T>& a, const transform_t<T>& b) {
    return mul(a, b);
}
template <typename T>
TREADLE_FUNC void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                                         transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    adj_mul(a, b, adj_a, adj_b, adj_ret);
}

// Rotation quat_inverse(q), translation -quat_rotate(quat_inverse(q), p).
template <typename T> TREADLE_FUNC transform_t<T> transform_inverse(const transform_t<T>& t) {
    const quat_t<T> qi = quat_inverse(t.q());
    return transform_t<T>(-quat_rotate(qi, t.p()), qi);
}
template <typename T>
TREADLE_FUNC void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t, const transform_t<T>& adj_ret) {
    const quat_t<T> qi = quat_inverse(t.q());
    quat_t<T> gqi = adj_ret.q();
    vec_t<3, T> gp;
    adj_quat_rotate(qi, t.p(), gqi, gp, -adj_ret.p());
    adj_t += transform_t<T>(gp, quat_inverse(gqi));
}

// ------------------------------------------------------------------------------------------------ points, vectors
template <typename T> TREADLE_FUNC vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) {
    return quat_rotate(t.q(), x) + t.p();
}
template <typename T>
TREADLE_FUNC void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                      vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    quat_t<T> gq;
    adj_quat_rotate(t.q(), x, gq, adj_x, adj_ret);
    adj_t += transform_t<T>(adj_ret, gq);
}
template <typename T> TREADLE_FUNC vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& x) {
    return quat_rotate(t.q(), x);
}
template <typename T>
TREADLE_FUNC void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                       vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    quat_t<T> gq;
    adj_quat_rotate(t.q(), x, gq, adj_x, adj_ret);
    adj_t += transform_t<T>(vec_t<3, T>(), gq);
}

// 4x4 matrices acting on column vectors: points use w = 1, vectors w = 0 (no perspective divide).
template <typename T> TREADLE_FUNC vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    return mul(top_left(m), x);
}
template <typename T>
TREADLE_FUNC void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                       vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    mat_t<3, 3, T> g;
    adj_mul(top_left(m), x, g, adj_x, adj_ret);
    add_top_left(adj_m, g);
}
template <typename T> TREADLE_FUNC vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    return transform_vector(m, x) + vec_t<3, T>(m.data[0][3], m.data[1][3], m.data[2][3]);
}
template <typename T>
TREADLE_FUNC void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                      vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    adj_transform_vector(m, x, adj_m, adj_x, adj_ret);
    for (unsigned i = 0; i < 3; ++i)
        adj_m.data[i][3] += adj_ret.c[i];
}

// ------------------------------------------------------------------------------------------------ matrices
// [[R diag(s), p], [0, 1]]
template <typename T>
TREADLE_FUNC mat_t<4, 4, T> transform_compose(const vec_t<3, T>& p, const quat_t<T>& q, const vec_t<3, T>& s) {
    const mat_t<3, 3, T> r = quat_to_matrix(q);
    mat_t<4, 4, T> m;
    for (unsigned i = 0; i < 3; ++i) {
        for (unsigned j = 0; j < 3; ++j)
            m.data[i][j] = r.data[i][j] * s.c[j];
        m.data[i][3] = p.c[i];
    }
    m.data[3][3] = T(1);
    return m;
}
template <typename T>
TREADLE_FUNC void adj_transform_compose(const vec_t<3, T>&, const quat_t<T>& q, const vec_t<3, T>& s,
                                        vec_t<3, T>& adj_p, quat_t<T>& adj_q, vec_t<3, T>& adj_s,
                                        const mat_t<4, 4, T>& g) {
    const mat_t<3, 3, T> r = quat_to_matrix(q);
    mat_t<3, 3, T> gr;
    for (unsigned i = 0; i < 3; ++i) {
        for (unsigned j = 0; j < 3; ++j) {
            gr.data[i][j] = g.data[i][j] * s.c[j];
            adj_s.c[j] += g.data[i][j] * r.data[i][j];
        }
        adj_p.c[i] += g.data[i][3];
    }
    adj_quat_to_matrix(q, adj_q, gr);
}
// [[R, p], [0, 1]] with R = quat_to_matrix(q).
template <typename T> TREADLE_FUNC mat_t<4, 4, T> transform_to_matrix(const transform_t<T>& t) {
    return transform_compose(t.p(), t.q(), vec_t<3, T>(T(1)));
}
template <typename T>
TREADLE_FUNC void adj_transform_to_matrix(const transform_t<T>& t, transform_t<T>& adj_t, const mat_t<4, 4, T>& g) {
    vec_t<3, T> gp, gs;
    quat_t<T> gq;
    adj_transform_compose(t.p(), t.q(), vec_t<3, T>(T(1)), gp, gq, gs, g);
    adj_t += transform_t<T>(gp, gq);
}

// Translation from the last column, rotation quat_from_matrix of the top-left block (not rescaled).
template <typename T> TREADLE_FUNC transform_t<T> transform_from_matrix(const mat_t<4, 4, T>& m) {
    return transform_t<T>(vec_t<3, T>(m.data[0][3], m.data[1][3], m.data[2][3]), quat_from_matrix(m));
}
template <typename T>
TREADLE_FUNC void adj_transform_from_matrix(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m,
                                            const transform_t<T>& adj_ret) {
    adj_quat_from_matrix(m, adj_m, adj_ret.q());
    for (unsigned i = 0; i < 3; ++i)
        adj_m.data[i][3] += adj_ret.c[i];
}

// (p, q, s): s are the lengths of the columns of the top-left block, q the rotation of the rescaled block.
template <typename T>
TREADLE_FUNC detail::ret3<vec_t<3, T>, quat_t<T>, vec_t<3, T>> transform_decompose(const mat_t<4, 4, T>& m) {
    mat_t<3, 3, T> r = top_left(m);
    vec_t<3, T> s;
    for (unsigned j = 0; j < 3; ++j) {
        s.c[j] = length(detail::col(r, j));
        detail::set_col(r, j, detail::col(r, j) / s.c[j]);
    }
    return {vec_t<3, T>(m.data[0][3], m.data[1][3], m.data[2][3]), quat_from_matrix(r), s};
}
template <typename T>
TREADLE_FUNC void transform_decompose(const mat_t<4, 4, T>& m, vec_t<3, T>& p, quat_t<T>& q, vec_t<3, T>& s) {
    const auto r = transform_decompose(m);
    p = r.f0;
    q = r.f1;
    s = r.f2;
}
template <typename T, typename R>
TREADLE_FUNC void adj_transform_decompose(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m, const R& adj_ret) {
    const mat_t<3, 3, T> a = top_left(m);
    mat_t<3, 3, T> r;
    for (unsigned j = 0; j < 3; ++j)
        detail::set_col(r, j, normalize(detail::col(a, j)));
    mat_t<3, 3, T> gr;
    adj_quat_from_matrix(r, gr, adj_ret.f1);
    for (unsigned j = 0; j < 3; ++j) {
        const vec_t<3, T> c = detail::col(a, j);
        vec_t<3, T> gc;
        adj_normalize(c, gc, detail::col(gr, j));
        adj_length(c, gc, adj_ret.f2.c[j]);
        for (unsigned i = 0; i < 3; ++i)
            adj_m.data[i][j] += gc.c[i];
    }
    for (unsigned i = 0; i < 3; ++i)
        adj_m.data[i][3] += adj_ret.f0.c[i];
}

}  // namespace treadle
