// Spatial (6D) algebra on plain vec_t<6, T> / mat_t<6, 6, T>: a twist is (angular w, linear v), a wrench is
// (torque, force). Each forward function sits next to its adjoint.
#pragma once
#include "transform.h"

namespace treadle {
namespace detail {
template <typename T> TREADLE_FUNC vec_t<3, T> top(const vec_t<6, T>& a) { return vec_t<3, T>(a.c[0], a.c[1], a.c[2]); }
template <typename T> TREADLE_FUNC vec_t<3, T> bottom(const vec_t<6, T>& a) {
    return vec_t<3, T>(a.c[3], a.c[4], a.c[5]);
}
template <typename T> TREADLE_FUNC vec_t<6, T> join(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return vec_t<6, T>(a.c[0], a.c[1], a.c[2], b.c[0], b.c[1], b.c[2]);
}
}  // namespace detail

// ------------------------------------------------------------------------------------------------ constructors
template <typename T> TREADLE_FUNC vec_t<6, T> spatial_vector() { return vec_t<6, T>(); }
template <typename T> TREADLE_FUNC void adj_spatial_vector(const vec_t<6, T>&) {}
template <typename T> TREADLE_FUNC vec_t<6, T> spatial_vector(const vec_t<3, T>& w, const vec_t<3, T>& v) {
    return detail::join(w, v);
}
template <typename T>
TREADLE_FUNC void adj_spatial_vector(const vec_t<3, T>&, const vec_t<3, T>&, vec_t<3, T>& adj_w, vec_t<3, T>& adj_v,
                                     const vec_t<6, T>& adj_ret) {
    adj_w += detail::top(adj_ret);
    adj_v += detail::bottom(adj_ret);
}
template <typename T> TREADLE_FUNC vec_t<6, T> spatial_vector(T a, T b, T c, T d, T e, T f) {
    return vec_t<6, T>(a, b, c, d, e, f);
}
template <typename T>
TREADLE_FUNC void adj_spatial_vector(T, T, T, T, T, T, T& a0, T& a1, T& a2, T& a3, T& a4, T& a5,
                                     const vec_t<6, T>& g) {
    a0 += g.c[0];
    a1 += g.c[1];
    a2 += g.c[2];
    a3 += g.c[3];
    a4 += g.c[4];
    a5 += g.c[5];
}

// ------------------------------------------------------------------------------------------------ parts, products
template <typename T> TREADLE_FUNC vec_t<3, T> spatial_top(const vec_t<6, T>& a) { return detail::top(a); }
template <typename T>
TREADLE_FUNC void adj_spatial_top(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    adj_a += detail::join(adj_ret, vec_t<3, T>());
}
template <typename T> TREADLE_FUNC vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) { return detail::bottom(a); }
template <typename T>
TREADLE_FUNC void adj_spatial_bottom(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    adj_a += detail::join(vec_t<3, T>(), adj_ret);
}
template <typename T> TREADLE_FUNC T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) { return dot(a, b); }
template <typename T>
TREADLE_FUNC void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                                  const T& adj_ret) {
    adj_dot(a, b, adj_a, adj_b, adj_ret);
}

// (wa x wb, va x wb + wa x vb): the motion cross product of two twists.
template <typename T> TREADLE_FUNC vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    const vec_t<3, T> wa = detail::top(a), va = detail::bottom(a), wb = detail::top(b), vb = detail::bottom(b);
    return detail::join(cross(wa, wb), cross(va, wb) + cross(wa, vb));
}
template <typename T>
TREADLE_FUNC void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                    vec_t<6, T>& adj_b, const vec_t<6, T>& g) {
    const vec_t<3, T> wa = detail::top(a), va = detail::bottom(a), wb = detail::top(b), vb = detail::bottom(b);
    const vec_t<3, T> gt = detail::top(g), gb = detail::bottom(g);
    vec_t<3, T> gwa, gva, gwb, gvb;
    adj_cross(wa, wb, gwa, gwb, gt);
    adj_cross(va, wb, gva, gwb, gb);
    adj_cross(wa, vb, gwa, gvb, gb);
    adj_a += detail::join(gwa, gva);
    adj_b += detail::join(gwb, gvb);
}
// For twist a = (w, v) and wrench b = (n, f): (w x n + v x f, w x f), the force cross product.
template <typename T> TREADLE_FUNC vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    const vec_t<3, T> w = detail::top(a), v = detail::bottom(a), n = detail::top(b), f = detail::bottom(b);
    return detail::join(cross(w, n) + cross(v, f), cross(w, f));
}
template <typename T>
TREADLE_FUNC void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                         vec_t<6, T>& adj_b, const vec_t<6, T>& g) {
    const vec_t<3, T> w = detail::top(a), v = detail::bottom(a), n = detail::top(b), f = detail::bottom(b);
    const vec_t<3, T> gt = detail::top(g), gb = detail::bottom(g);
    vec_t<3, T> gw, gv, gn, gf;
    adj_cross(w, n, gw, gn, gt);
    adj_cross(v, f, gv, gf, gt);
    adj_cross(w, f, gw, gf, gb);
    adj_a += detail::join(gw, gv);
    adj_b += detail::join(gn, gf);
}

// [[r, 0], [s, r]]
template <typename T> TREADLE_FUNC mat_t<6, 6, T> spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s) {
    mat_t<6, 6, T> m;
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) {
            m.data[i][j] = r.data[i][j];
            m.data[i + 3][j + 3] = r.data[i][j];
            m.data[i + 3][j] = s.data[i][j];
        }
    return m;
}
template <typename T>
TREADLE_FUNC void adj_spatial_adjoint(const mat_t<3, 3, T>&, const mat_t<3, 3, T>&, mat_t<3, 3, T>& adj_r,
                                      mat_t<3, 3, T>& adj_s, const mat_t<6, 6, T>& g) {
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) {
            adj_r.data[i][j] += g.data[i][j] + g.data[i + 3][j + 3];
            adj_s.data[i][j] += g.data[i + 3][j];
        }
}

// ------------------------------------------------------------------------------------------------ frames
// Twist (w, v) into the frame of t = (p, R): (R w, R v + p x R w).
template <typename T> TREADLE_FUNC vec_t<6, T> transform_twist(const transform_t<T>& t, const vec_t<6, T>& x) {
    const vec_t<3, T> w = quat_rotate(t.q(), detail::top(x));
    return detail::join(w, quat_rotate(t.q(), detail::bottom(x)) + cross(t.p(), w));
}
// Wrench (tau, f) into the frame of t = (p, R): (R tau + p x R f, R f).
template <typename T> TREADLE_FUNC vec_t<6, T> transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x) {
    const vec_t<3, T> f = quat_rotate(t.q(), detail::bottom(x));
    return detail::join(quat_rotate(t.q(), detail::top(x)) + cross(t.p(), f), f);
}
namespace detail {
// Shared adjoint: `moved` is the part that is rotated and crossed with p (top for twists, bottom for wrenches);
// g_moved / g_other are the output adjoints of the rotated-only and the rotated-plus-cross parts.
template <typename T>
TREADLE_FUNC void adj_frame(const transform_t<T>& t, const vec_t<3, T>& moved, const vec_t<3, T>& other,
                            const vec_t<3, T>& g_moved, const vec_t<3, T>& g_other, transform_t<T>& adj_t,
                            vec_t<3, T>& adj_moved, vec_t<3, T>& adj_other) {
    const vec_t<3, T> rm = quat_rotate(t.q(), moved);
    vec_t<3, T> gp, grm = g_moved;
    adj_cross(t.p(), rm, gp, grm, g_other);
    quat_t<T> gq;
    adj_quat_rotate(t.q(), other, gq, adj_other, g_other);
    adj_quat_rotate(t.q(), moved, gq, adj_moved, grm);
    adj_t += transform_t<T>(gp, gq);
}
}  // namespace detail
template <typename T>
TREADLE_FUNC void adj_transform_twist(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                      vec_t<6, T>& adj_x, const vec_t<6, T>& g) {
    vec_t<3, T> gw, gv;
    detail::adj_frame(t, detail::top(x), detail::bottom(x), detail::top(g), detail::bottom(g), adj_t, gw, gv);
    adj_x += detail::join(gw, gv);
}
template <typename T>
TREADLE_FUNC void adj_transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                       vec_t<6, T>& adj_x, const vec_t<6, T>& g) {
    vec_t<3, T> gtau, gf;
    detail::adj_frame(t, detail::bottom(x), detail::top(x), detail::bottom(g), detail::top(g), adj_t, gf, gtau);
    adj_x += detail::join(gtau, gf);
}

// Linear velocity v + w x r of a point at offset r on a body with twist (w, v).
template <typename T> TREADLE_FUNC vec_t<3, T> velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r) {
    return detail::bottom(qd) + cross(detail::top(qd), r);
}
template <typename T>
TREADLE_FUNC void adj_velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r, vec_t<6, T>& adj_qd,
                                        vec_t<3, T>& adj_r, const vec_t<3, T>& g) {
    vec_t<3, T> gw;
    adj_cross(detail::top(qd), r, gw, adj_r, g);
    adj_qd += detail::join(gw, g);
}

}  // namespace treadle
