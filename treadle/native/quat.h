// Quaternions `quat_t<T>`: 4 components in x, y, z, w order (w is the real part), and the quaternion builtins, each
// forward function next to its adjoint.
//
// quat_t (like transform_t in transform.h) derives from vec_t, so vec.h's dot, length, extract, comparisons,
// printing and atomics apply through the base class. The overloads made by TREADLE_VECLIKE_OPS keep the derived
// type for results of the same kind (add, scaling, insert, ...); as exact matches they win over vec.h's templates,
// which only match through a derived-to-base conversion. `mul(quat, quat)` is the Hamilton product: no vector
// overload takes two vectors, so it is never ambiguous.
#pragma once
#include "linalg.h"

namespace treadle {

template <typename T> struct quat_t : vec_t<4, T> {
    TREADLE_FUNC quat_t() : vec_t<4, T>() {}
    TREADLE_FUNC explicit quat_t(T s) : vec_t<4, T>(s) {}
    TREADLE_FUNC quat_t(T x, T y, T z, T w) : vec_t<4, T>(x, y, z, w) {}
    // From the vector (imaginary) part and the real part.
    TREADLE_FUNC quat_t(const vec_t<3, T>& v, T w) : vec_t<4, T>(v.c[0], v.c[1], v.c[2], w) {}
    template <typename P, typename detail::enable_if<detail::is_same<P, T>::value, int>::type = 0>
    TREADLE_FUNC explicit quat_t(const P* p) : vec_t<4, T>(p) {}
    // From a 4-vector or a quaternion of another precision.
    template <typename U> TREADLE_FUNC explicit quat_t(const vec_t<4, U>& o) : vec_t<4, T>(o) {}

    TREADLE_FUNC vec_t<3, T> xyz() const { return vec_t<3, T>(this->c[0], this->c[1], this->c[2]); }
    TREADLE_FUNC T w() const { return this->c[3]; }
};

namespace detail {
template <typename T> struct scalar_of<quat_t<T>> { typedef T type; };
template <unsigned N, typename T> TREADLE_FUNC const vec_t<N, T>& base(const vec_t<N, T>& v) { return v; }
template <unsigned N, typename T> TREADLE_FUNC vec_t<N, T>* base_ptr(vec_t<N, T>* p) { return p; }
template <typename T> struct is_composite<quat_t<T>> { static constexpr bool value = true; };
}  // namespace detail

#define TREADLE_VECLIKE_ATOMIC(V, name)                                                                           \
    template <typename T> TREADLE_FUNC V<T> name(V<T>* addr, const V<T>& v) {                                      \
        return V<T>(name(detail::base_ptr(addr), detail::base(v)));                                                \
    }

// Result-preserving arithmetic for a type V<T> derived from vec_t<N, T> (the adjoints of scalar.h and vec.h serve).
#define TREADLE_VECLIKE_OPS(V)                                                                                     \
    template <typename T> TREADLE_FUNC V<T> operator+(const V<T>& a, const V<T>& b) {                               \
        return V<T>(detail::base(a) + detail::base(b));                                                            \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> operator-(const V<T>& a, const V<T>& b) {                               \
        return V<T>(detail::base(a) - detail::base(b));                                                            \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> operator-(const V<T>& a) { return V<T>(-detail::base(a)); }            \
    template <typename T> TREADLE_FUNC V<T> operator*(const V<T>& a, TREADLE_SCALAR(T) s) {                         \
        return V<T>(detail::base(a) * s);                                                                          \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> operator*(TREADLE_SCALAR(T) s, const V<T>& a) {                         \
        return V<T>(detail::base(a) * s);                                                                          \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> operator/(const V<T>& a, TREADLE_SCALAR(T) s) {                         \
        return V<T>(detail::base(a) / s);                                                                          \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> add(const V<T>& a, const V<T>& b) { return a + b; }                    \
    template <typename T> TREADLE_FUNC V<T> sub(const V<T>& a, const V<T>& b) { return a - b; }                    \
    template <typename T> TREADLE_FUNC V<T> neg(const V<T>& a) { return -a; }                                      \
    template <typename T> TREADLE_FUNC V<T> pos(const V<T>& a) { return a; }                                       \
    template <typename T> TREADLE_FUNC V<T> mul(const V<T>& a, TREADLE_SCALAR(T) s) { return a * s; }              \
    template <typename T> TREADLE_FUNC V<T> mul(TREADLE_SCALAR(T) s, const V<T>& a) { return a * s; }              \
    template <typename T> TREADLE_FUNC V<T> div(const V<T>& a, TREADLE_SCALAR(T) s) { return a / s; }              \
    template <typename T> TREADLE_FUNC V<T> div(TREADLE_SCALAR(T) s, const V<T>& a) {                              \
        return V<T>(div(s, detail::base(a)));                                                                      \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> insert(const V<T>& a, int32 i, TREADLE_SCALAR(T) x) {                  \
        return V<T>(insert(detail::base(a), i, x));                                                                \
    }                                                                                                              \
    template <typename T> TREADLE_FUNC V<T> lerp(const V<T>& a, const V<T>& b, TREADLE_SCALAR(T) t) {              \
        return V<T>(lerp(detail::base(a), detail::base(b), t));                                                    \
    }                                                                                                              \
    TREADLE_VECLIKE_ATOMIC(V, atomic_add)                                                                          \
    TREADLE_VECLIKE_ATOMIC(V, atomic_sub)                                                                          \
    TREADLE_VECLIKE_ATOMIC(V, atomic_min)                                                                          \
    TREADLE_VECLIKE_ATOMIC(V, atomic_max)                                                                          \
    TREADLE_VECLIKE_ATOMIC(V, atomic_exch)                                                                         \
    namespace detail {                                                                                             \
    /* print.h's expect_near compares through max_abs_diff, whose generic template would win over the vec_t  */    \
    /* overload: these specializations forward to it.                                                        */    \
    template <> TREADLE_FUNC double max_abs_diff<V<float32>>(const V<float32>& a, const V<float32>& b) {          \
        return max_abs_diff(base(a), base(b));                                                                     \
    }                                                                                                              \
    template <> TREADLE_FUNC double max_abs_diff<V<float64>>(const V<float64>& a, const V<float64>& b) {          \
        return max_abs_diff(base(a), base(b));                                                                     \
    }                                                                                                              \
    template <> TREADLE_FUNC double max_abs_diff<V<half>>(const V<half>& a, const V<half>& b) {                   \
        return max_abs_diff(base(a), base(b));                                                                     \
    }                                                                                                              \
    }

TREADLE_VECLIKE_OPS(quat_t)

template <typename T> TREADLE_FUNC quat_t<T> normalize(const quat_t<T>& q) { return quat_t<T>(normalize(detail::base(q))); }

// ------------------------------------------------------------------------------------------------ constructors
// quaternion(): zero; quaternion(x, y, z, w); quaternion(ijk, real); quaternion(q) (precision conversion).
template <typename T> TREADLE_FUNC quat_t<T> quaternion() { return quat_t<T>(); }
template <typename T> TREADLE_FUNC void adj_quaternion(const quat_t<T>&) {}
template <typename T> TREADLE_FUNC quat_t<T> quaternion(T x, T y, T z, T w) { return quat_t<T>(x, y, z, w); }
template <typename T>
TREADLE_FUNC void adj_quaternion(T, T, T, T, T& ax, T& ay, T& az, T& aw, const quat_t<T>& adj_ret) {
    ax += adj_ret.c[0];
    ay += adj_ret.c[1];
    az += adj_ret.c[2];
    aw += adj_ret.c[3];
}
template <typename T> TREADLE_FUNC quat_t<T> quaternion(const vec_t<3, T>& v, T w) { return quat_t<T>(v, w); }
template <typename T>
TREADLE_FUNC void adj_quaternion(const vec_t<3, T>&, T, vec_t<3, T>& adj_v, T& adj_w, const quat_t<T>& adj_ret) {
    adj_v += adj_ret.xyz();
    adj_w += adj_ret.c[3];
}
template <typename T, typename U> TREADLE_FUNC quat_t<T> quaternion(const quat_t<U>& q) { return quat_t<T>(q); }
template <typename T, typename U>
TREADLE_FUNC void adj_quaternion(const quat_t<U>&, quat_t<U>& adj_q, const quat_t<T>& adj_ret) {
    adj_q += quat_t<U>(adj_ret);
}

template <typename T> TREADLE_FUNC quat_t<T> quat_identity() { return quat_t<T>(T(0), T(0), T(0), T(1)); }

// ------------------------------------------------------------------------------------------------ products
template <typename T> TREADLE_FUNC quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
    const T(&p)[4] = a.c;
    const T(&q)[4] = b.c;
    return quat_t<T>(p[3] * q[0] + q[3] * p[0] + p[1] * q[2] - p[2] * q[1],
                     p[3] * q[1] + q[3] * p[1] + p[2] * q[0] - p[0] * q[2],
                     p[3] * q[2] + q[3] * p[2] + p[0] * q[1] - p[1] * q[0],
                     p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]);
}
template <typename T> TREADLE_FUNC quat_t<T> quat_inverse(const quat_t<T>& q) {
    return quat_t<T>(T(-q.c[0]), T(-q.c[1]), T(-q.c[2]), q.c[3]);
}
template <typename T> TREADLE_FUNC void adj_quat_inverse(const quat_t<T>&, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    adj_q += quat_inverse(adj_ret);
}
// <g, a b> = <g conj(b), a> = <conj(a) g, b>
template <typename T>
TREADLE_FUNC void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                          const quat_t<T>& adj_ret) {
    adj_a += mul(adj_ret, quat_inverse(b));
    adj_b += mul(quat_inverse(a), adj_ret);
}

// ------------------------------------------------------------------------------------------------ rotation
// v (2w^2 - 1) + 2w (u x v) + 2u (u . v): exact for unit quaternions, and what gradients see for the others.
template <typename T> TREADLE_FUNC vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v) {
    const vec_t<3, T> u = q.xyz();
    const T w = q.c[3];
    return v * T(T(2) * w * w - T(1)) + cross(u, v) * T(T(2) * w) + u * T(T(2) * dot(u, v));
}
template <typename T> TREADLE_FUNC vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v) {
    const vec_t<3, T> u = q.xyz();
    const T w = q.c[3];
    return v * T(T(2) * w * w - T(1)) - cross(u, v) * T(T(2) * w) + u * T(T(2) * dot(u, v));
}
namespace detail {
// Gradient of quat_rotate (sign = +1) or quat_rotate_inv (sign = -1) with respect to q.
template <typename T>
TREADLE_FUNC void adj_rotate_q(const quat_t<T>& q, const vec_t<3, T>& v, T sign, quat_t<T>& adj_q,
                               const vec_t<3, T>& g) {
    const vec_t<3, T> u = q.xyz();
    const T w = q.c[3];
    const vec_t<3, T> du = cross(v, g) * T(T(2) * sign * w) + g * T(T(2) * dot(u, v)) + v * T(T(2) * dot(u, g));
    const T dw = dot(g, v * T(T(4) * w) + cross(u, v) * T(T(2) * sign));
    adj_q += quat_t<T>(du, dw);
}
}  // namespace detail
template <typename T>
TREADLE_FUNC void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v,
                                  const vec_t<3, T>& adj_ret) {
    adj_v += quat_rotate_inv(q, adj_ret);
    detail::adj_rotate_q(q, v, T(1), adj_q, adj_ret);
}
template <typename T>
TREADLE_FUNC void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v,
                                      const vec_t<3, T>& adj_ret) {
    adj_v += quat_rotate(q, adj_ret);
    detail::adj_rotate_q(q, v, T(-1), adj_q, adj_ret);
}

// (2w^2 - 1) I + 2w skew(u) + 2 u u^T: the columns are quat_rotate(q, e_i).
template <typename T> TREADLE_FUNC mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
    const vec_t<3, T> u = q.xyz();
    const T w = q.c[3];
    return identity<3, T>() * T(T(2) * w * w - T(1)) + skew(u) * T(T(2) * w) + outer(u, u) * T(2);
}
template <typename T>
TREADLE_FUNC void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& g) {
    const vec_t<3, T> u = q.xyz();
    const T w = q.c[3];
    vec_t<3, T> sk;  // <g, skew(x)> = sk . x
    adj_skew(u, sk, g);
    const vec_t<3, T> du = sk * T(T(2) * w) + mul(g + transpose(g), u) * T(2);
    adj_q += quat_t<T>(du, T(T(4) * w * trace(g) + T(2) * dot(sk, u)));
}

namespace detail {
// Shepperd's method: the branch that divides by the largest of 1 + trace and the 1 + 2 m_ii - trace terms.
// Branch b in 0..3 is the component computed from the diagonal (x, y, z, w).
template <typename T> TREADLE_FUNC int quat_branch(const mat_t<3, 3, T>& m) {
    if (m.data[0][0] + m.data[1][1] + m.data[2][2] > T(0))
        return 3;
    if (m.data[0][0] > m.data[1][1] && m.data[0][0] > m.data[2][2])
        return 0;
    return m.data[1][1] > m.data[2][2] ? 1 : 2;
}
// Component c (!= b) of branch b is (m[i][j] + sign * m[j][i]) / (2r).
TREADLE_FUNC void quat_pair(int c, int b, int& i, int& j, int& sign) {
    if (c != 3 && b != 3) {
        i = c;
        j = b;
        sign = 1;
    } else {
        const int a = c == 3 ? b : c;
        i = (a + 2) % 3;
        j = (a + 1) % 3;
        sign = -1;
    }
}
template <typename T> TREADLE_FUNC T quat_diag_sign(int b, int i) { return (b == 3 || b == i) ? T(1) : T(-1); }
// The unnormalized quaternion of branch b and its r.
template <typename T> TREADLE_FUNC quat_t<T> quat_from_matrix_raw(const mat_t<3, 3, T>& m, int b, T& r) {
    T t = T(1);
    for (int i = 0; i < 3; ++i)
        t += quat_diag_sign<T>(b, i) * m.data[i][i];
    r = sqrt(t);
    quat_t<T> q;
    for (int c = 0; c < 4; ++c) {
        if (c == b) {
            q.c[c] = T(T(0.5) * r);
            continue;
        }
        int i, j, sign;
        quat_pair(c, b, i, j, sign);
        q.c[c] = (m.data[i][j] + T(sign) * m.data[j][i]) / (T(2) * r);
    }
    return q;
}
}  // namespace detail

template <typename T> TREADLE_FUNC quat_t<T> quat_from_matrix(const mat_t<3, 3, T>& m) {
    T r;
    return normalize(detail::quat_from_matrix_raw(m, detail::quat_branch(m), r));
}
template <typename T>
TREADLE_FUNC void adj_quat_from_matrix(const mat_t<3, 3, T>& m, mat_t<3, 3, T>& adj_m, const quat_t<T>& adj_ret) {
    const int b = detail::quat_branch(m);
    T r;
    const quat_t<T> q = detail::quat_from_matrix_raw(m, b, r);
    quat_t<T> g;
    adj_normalize(q, g, adj_ret);
    T adj_r = T(T(0.5) * g.c[b]);
    for (int c = 0; c < 4; ++c) {
        if (c == b)
            continue;
        adj_r -= g.c[c] * q.c[c] / r;
        int i, j, sign;
        detail::quat_pair(c, b, i, j, sign);
        adj_m.data[i][j] += g.c[c] / (T(2) * r);
        adj_m.data[j][i] += T(sign) * g.c[c] / (T(2) * r);
    }
    for (int i = 0; i < 3; ++i)
        adj_m.data[i][i] += detail::quat_diag_sign<T>(b, i) * adj_r / (T(2) * r);
}
// From the top-left 3x3 block of a 4x4 matrix.
template <typename T> TREADLE_FUNC mat_t<3, 3, T> top_left(const mat_t<4, 4, T>& m) {
    mat_t<3, 3, T> r;
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j)
            r.data[i][j] = m.data[i][j];
    return r;
}
template <typename T> TREADLE_FUNC void add_top_left(mat_t<4, 4, T>& m, const mat_t<3, 3, T>& g) {
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j)
            m.data[i][j] += g.data[i][j];
}
template <typename T> TREADLE_FUNC quat_t<T> quat_from_matrix(const mat_t<4, 4, T>& m) {
    return quat_from_matrix(top_left(m));
}
template <typename T>
TREADLE_FUNC void adj_quat_from_matrix(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m, const quat_t<T>& adj_ret) {
    mat_t<3, 3, T> g;
    adj_quat_from_matrix(top_left(m), g, adj_ret);
    add_top_left(adj_m, g);
}

// ------------------------------------------------------------------------------------------------ axis and angle
template <typename T> TREADLE_FUNC quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, TREADLE_SCALAR(T) angle) {
    const T h = T(T(0.5) * angle);
    return quat_t<T>(axis * sin(h), cos(h));
}
template <typename T>
TREADLE_FUNC void adj_quat_from_axis_angle(const vec_t<3, T>& axis, T angle, vec_t<3, T>& adj_axis, T& adj_angle,
                                           const quat_t<T>& adj_ret) {
    const T h = T(T(0.5) * angle);
    adj_axis += adj_ret.xyz() * sin(h);
    adj_angle += T(0.5) * (dot(axis, adj_ret.xyz()) * cos(h) - adj_ret.c[3] * sin(h));
}

// (axis, angle) with angle in [0, pi]: q is flipped to w >= 0; the axis is zero when the angle is.
template <typename T> TREADLE_FUNC detail::ret2<vec_t<3, T>, T> quat_to_axis_angle(const quat_t<T>& q) {
    const T sign = q.c[3] < T(0) ? T(-1) : T(1);
    const vec_t<3, T> v = q.xyz() * sign;
    const T s = length(v);
    return {s > T(0) ? v / s : vec_t<3, T>(), T(T(2) * atan2(s, T(sign * q.c[3])))};
}
template <typename T> TREADLE_FUNC void quat_to_axis_angle(const quat_t<T>& q, vec_t<3, T>& axis, T& angle) {
    const auto r = quat_to_axis_angle(q);
    axis = r.f0;
    angle = r.f1;
}
template <typename T, typename R>
TREADLE_FUNC void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q, const R& adj_ret) {
    const T sign = q.c[3] < T(0) ? T(-1) : T(1);
    const vec_t<3, T> v = q.xyz() * sign;
    const T w = T(sign * q.c[3]);
    const T s = length(v);
    if (!(s > T(0)))
        return;
    const T d = s * s + w * w;
    vec_t<3, T> gv = v * T(T(2) * w / (d * s) * adj_ret.f1);
    adj_normalize(v, gv, adj_ret.f0);
    adj_q += quat_t<T>(gv * sign, T(sign * T(-2) * s / d * adj_ret.f1));
}

// ------------------------------------------------------------------------------------------------ Euler angles
namespace detail {
// The rotation of `angle` about coordinate axis `axis` (0, 1, 2), and the derivative of that map.
template <typename T> TREADLE_FUNC quat_t<T> axis_quat(int axis, T angle) {
    quat_t<T> q;
    q.c[axis] = sin(T(T(0.5) * angle));
    q.c[3] = cos(T(T(0.5) * angle));
    return q;
}
template <typename T> TREADLE_FUNC T adj_axis_quat(int axis, T angle, const quat_t<T>& g) {
    return T(0.5) * (g.c[axis] * cos(T(T(0.5) * angle)) - g.c[3] * sin(T(T(0.5) * angle)));
}
// qk qj qi and its gradient with respect to the three angles.
template <typename T> TREADLE_FUNC quat_t<T> euler3(int i, int j, int k, T ai, T aj, T ak) {
    return mul(axis_quat(k, ak), mul(axis_quat(j, aj), axis_quat(i, ai)));
}
template <typename T>
TREADLE_FUNC void adj_euler3(int i, int j, int k, T ai, T aj, T ak, T& gi, T& gj, T& gk, const quat_t<T>& g) {
    const quat_t<T> qi = axis_quat(i, ai), qj = axis_quat(j, aj), qk = axis_quat(k, ak);
    const quat_t<T> ji = mul(qj, qi);
    quat_t<T> d_qk, d_ji, d_qj, d_qi;
    adj_mul(qk, ji, d_qk, d_ji, g);
    adj_mul(qj, qi, d_qj, d_qi, d_ji);
    gi += adj_axis_quat(i, ai, d_qi);
    gj += adj_axis_quat(j, aj, d_qj);
    gk += adj_axis_quat(k, ak, d_qk);
}
}  // namespace detail

// Roll about x, then pitch about y, then yaw about z (fixed axes): qz qy qx.
template <typename T> TREADLE_FUNC quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
    return detail::euler3(0, 1, 2, roll, pitch, yaw);
}
template <typename T>
TREADLE_FUNC void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw, const quat_t<T>& g) {
    detail::adj_euler3(0, 1, 2, roll, pitch, yaw, adj_roll, adj_pitch, adj_yaw, g);
}

// Rotations about fixed axes i, j, k in that order, by e[i], e[j], e[k] (e[i] twice when i == k).
template <typename T> TREADLE_FUNC quat_t<T> quat_from_euler(const vec_t<3, T>& e, int32 i, int32 j, int32 k) {
    return detail::euler3(i, j, k, e.c[i], e.c[j], e.c[k]);
}
template <typename T, typename I, typename J, typename K>
TREADLE_FUNC void adj_quat_from_euler(const vec_t<3, T>& e, I i, J j, K k, vec_t<3, T>& adj_e, I&, J&, K&,
                                      const quat_t<T>& g) {
    T gi = T(0), gj = T(0), gk = T(0);
    detail::adj_euler3(int(i), int(j), int(k), e.c[i], e.c[j], e.c[k], gi, gj, gk, g);
    adj_e.c[i] += gi;
    adj_e.c[j] += gj;
    adj_e.c[k] += gk;
}

// (roll, pitch, yaw), the inverse of quat_rpy (pitch from a clamped asin).
template <typename T> TREADLE_FUNC vec_t<3, T> quat_to_rpy(const quat_t<T>& q) {
    const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3];
    return vec_t<3, T>(atan2(T(T(2) * (w * x + y * z)), T(T(1) - T(2) * (x * x + y * y))),
                       asin(T(T(2) * (w * y - z * x))),
                       atan2(T(T(2) * (w * z + x * y)), T(T(1) - T(2) * (y * y + z * z))));
}
template <typename T>
TREADLE_FUNC void adj_quat_to_rpy(const quat_t<T>& q, quat_t<T>& adj_q, const vec_t<3, T>& g) {
    const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3];
    T ga = T(0), gb = T(0), gc = T(0), gd = T(0), ge = T(0);
    adj_atan2(T(T(2) * (w * x + y * z)), T(T(1) - T(2) * (x * x + y * y)), ga, gb, g.c[0]);
    adj_asin(T(T(2) * (w * y - z * x)), gc, g.c[1]);
    adj_atan2(T(T(2) * (w * z + x * y)), T(T(1) - T(2) * (y * y + z * z)), gd, ge, g.c[2]);
    adj_q += quat_t<T>(T(2) * (ga * w - T(2) * gb * x - gc * z + gd * y),
                       T(2) * (ga * z - T(2) * gb * y + gc * w + gd * x - T(2) * ge * y),
                       T(2) * (ga * y - gc * x + gd * w - T(2) * ge * z), T(2) * (ga * x + gc * y + gd * z));
}

namespace detail {
// Euler angles by the direct method of Bernardes and Viollet (2022): the quaternion is permuted (and, for
// Tait-Bryan sequences, rotated by 45 degrees) into a proper sequence, whose angles come from two atan2.
// p = (a, b, c, d) are the permuted components; returns false for an invalid axis sequence.
template <typename T> TREADLE_FUNC T pi() { return T(3.14159265358979323846); }
// 1 or 2 when the middle angle t2 (in [0, pi]) is within 2^-12 of 0 or pi (the first angle is then not unique).
template <typename T> TREADLE_FUNC int euler_lock(T t2) {
    const T tol = T(1.0 / 4096.0);
    return t2 <= tol ? 1 : (t2 >= pi<T>() - tol ? 2 : 0);
}
template <typename T> TREADLE_FUNC bool euler_parts(const quat_t<T>& q, int i, int j, int k, quat_t<T>& p, T& eps,
                                                    bool& proper) {
    if (i < 0 || i > 2 || j < 0 || j > 2 || k < 0 || k > 2 || i == j || j == k)
        return false;
    proper = i == k;
    const int kk = proper ? 3 - i - j : k;
    eps = T((i - j) * (j - kk) * (kk - i) / 2);
    const T w = q.c[3], qi = q.c[i], qj = q.c[j], qk = T(q.c[kk] * eps);
    if (proper)
        p = quat_t<T>(w, qi, qj, qk);
    else
        p = quat_t<T>(w - qj, qi + qk, qj + w, qk - qi);
    return true;
}
}  // namespace detail

template <typename T> TREADLE_FUNC vec_t<3, T> quat_to_euler(const quat_t<T>& q, int32 i, int32 j, int32 k) {
    quat_t<T> p;
    T eps;
    bool proper;
    if (!detail::euler_parts(q, i, j, k, p, eps, proper))
        return vec_t<3, T>();
    const T a = p.c[0], b = p.c[1], c = p.c[2], d = p.c[3];
    T t2 = T(T(2) * atan2(sqrt(c * c + d * d), sqrt(a * a + b * b)));
    const T tp = atan2(b, a), tm = atan2(d, c);
    T t1 = T(0), t3;
    const int lock = detail::euler_lock(t2);
    if (lock == 1) {  // gimbal lock (as the reference: within 2^-12 rad): the first angle is set to zero
        t2 = T(0);
        t3 = T(T(2) * tp);
    } else if (lock == 2) {
        t2 = T(detail::pi<T>());
        t3 = T(T(2) * tm);
    } else {
        t1 = tp - tm;
        t3 = tp + tm;
    }
    if (!proper) {
        t3 = T(eps * t3);
        t2 = T(t2 - T(T(0.5) * detail::pi<T>()));
    }
    vec_t<3, T> e;
    e.c[i] = t1;
    e.c[j] = t2;
    e.c[proper ? 3 - i - j : k] = t3;
    return e;
}
template <typename T, typename I, typename J, typename K>
TREADLE_FUNC void adj_quat_to_euler(const quat_t<T>& q, I i, J j, K k, quat_t<T>& adj_q, I&, J&, K&,
                                    const vec_t<3, T>& g) {
    quat_t<T> p;
    T eps;
    bool proper;
    if (!detail::euler_parts(q, int(i), int(j), int(k), p, eps, proper))
        return;
    const int kk = proper ? 3 - int(i) - int(j) : int(k);
    const T a = p.c[0], b = p.c[1], c = p.c[2], d = p.c[3];
    const T n1 = a * a + b * b, n2 = c * c + d * d;
    const T r1 = sqrt(n1), r2 = sqrt(n2);
    const int lock = detail::euler_lock(T(T(2) * atan2(r2, r1)));
    const T g3 = proper ? g.c[kk] : T(eps * g.c[kk]);
    const T g2 = lock ? T(0) : g.c[j], g1 = lock ? T(0) : g.c[i];
    const T gp = lock == 2 ? T(0) : (lock == 1 ? T(T(2) * g3) : T(g1 + g3));  // gradients of tp and tm
    const T gm = lock == 1 ? T(0) : (lock == 2 ? T(T(2) * g3) : T(g3 - g1));
    quat_t<T> gpq;  // d loss / d (a, b, c, d)
    if (n1 > T(0)) {
        gpq.c[0] += T(-gp * b / n1);
        gpq.c[1] += T(gp * a / n1);
    }
    if (n2 > T(0)) {
        gpq.c[2] += T(-gm * d / n2);
        gpq.c[3] += T(gm * c / n2);
    }
    if (r1 > T(0) && r2 > T(0) && g2 != T(0)) {  // t2 = 2 atan2(r2, r1)
        const T s = T(T(2) * g2 / (n1 + n2));
        gpq.c[0] += T(-s * r2 * a / r1);
        gpq.c[1] += T(-s * r2 * b / r1);
        gpq.c[2] += T(s * r1 * c / r2);
        gpq.c[3] += T(s * r1 * d / r2);
    }
    // Back through the permutation: p = (w, qi, qj, qk eps) or (w - qj, qi + qk eps, qj + w, qk eps - qi).
    T gw, gi, gj, gk;
    if (proper) {
        gw = gpq.c[0];
        gi = gpq.c[1];
        gj = gpq.c[2];
        gk = gpq.c[3];
    } else {
        gw = gpq.c[0] + gpq.c[2];
        gi = gpq.c[1] - gpq.c[3];
        gj = gpq.c[2] - gpq.c[0];
        gk = gpq.c[1] + gpq.c[3];
    }
    adj_q.c[3] += gw;
    adj_q.c[i] += gi;
    adj_q.c[j] += gj;
    adj_q.c[kk] += T(gk * eps);
}

// ------------------------------------------------------------------------------------------------ interpolation
namespace detail {
// r = p^t for the unit rotation of p, taken along the shortest arc: (v sin(t th) / |v|, cos(t th)), th = atan2(|v|, w).
template <typename T> struct slerp_parts {
    T sign, s, w, th, phi, k;
    vec_t<3, T> v;
    TREADLE_FUNC slerp_parts(const quat_t<T>& p, T t) {
        sign = p.c[3] < T(0) ? T(-1) : T(1);
        v = p.xyz() * sign;
        w = T(sign * p.c[3]);
        s = length(v);
        th = atan2(s, w);
        phi = T(t * th);
        k = s > epsilon<T>() * w ? T(sin(phi) / s) : (w > T(0) ? T(t / w) : T(0));
    }
    TREADLE_FUNC quat_t<T> rot() const { return quat_t<T>(v * k, cos(phi)); }
};
}  // namespace detail

// a (conj(a) b)^t: equals a at t = 0 and +-normalize(b) (the closer one) at t = 1 for a unit a.
template <typename T> TREADLE_FUNC quat_t<T> quat_slerp(const quat_t<T>& a, const quat_t<T>& b, TREADLE_SCALAR(T) t) {
    return mul(a, detail::slerp_parts<T>(mul(quat_inverse(a), b), t).rot());
}
template <typename T>
TREADLE_FUNC void adj_quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b,
                                 T& adj_t, const quat_t<T>& adj_ret) {
    const quat_t<T> ai = quat_inverse(a);
    const quat_t<T> p = mul(ai, b);
    const detail::slerp_parts<T> sp(p, t);
    const quat_t<T> r = sp.rot();
    quat_t<T> gr;
    adj_mul(a, r, adj_a, gr, adj_ret);
    const vec_t<3, T> grv = gr.xyz();
    const T gk = dot(grv, sp.v), gc = gr.c[3];  // gradients of k and of cos(phi)
    vec_t<3, T> gv = grv * sp.k;
    T gs = T(0), gw = T(0);
    const T sphi = sin(sp.phi), cphi = cos(sp.phi);
    if (sp.s > detail::epsilon<T>() * sp.w) {
        const T d = sp.s * sp.s + sp.w * sp.w;
        const T dth_ds = sp.w / d, dth_dw = T(-sp.s / d);
        gs += gk * (cphi * t * dth_ds * sp.s - sphi) / (sp.s * sp.s) - gc * sphi * t * dth_ds;
        gw += gk * cphi * t * dth_dw / sp.s - gc * sphi * t * dth_dw;
        adj_t += gk * cphi * sp.th / sp.s - gc * sphi * sp.th;
        gv += sp.v * T(gs / sp.s);
    } else if (sp.w > T(0)) {
        gw += T(-gk * t / (sp.w * sp.w));
        adj_t += gk / sp.w;
    }
    const quat_t<T> gp(gv * sp.sign, T(gw * sp.sign));
    quat_t<T> g_ai;
    adj_mul(ai, b, g_ai, adj_b, gp);
    adj_a += quat_inverse(g_ai);
}

// ------------------------------------------------------------------------------------------------ helpers
// The shortest-arc rotation taking the direction of a onto the direction of b.
template <typename T> TREADLE_FUNC quat_t<T> quat_between_vectors(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    const vec_t<3, T> an = normalize(a), bn = normalize(b);
    return normalize(quat_t<T>(cross(an, bn), T(T(1) + dot(an, bn))));
}
template <typename T>
TREADLE_FUNC void adj_quat_between_vectors(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a,
                                           vec_t<3, T>& adj_b, const quat_t<T>& adj_ret) {
    const vec_t<3, T> an = normalize(a), bn = normalize(b);
    quat_t<T> g;
    adj_normalize(quat_t<T>(cross(an, bn), T(T(1) + dot(an, bn))), g, adj_ret);
    vec_t<3, T> g_an = bn * g.c[3], g_bn = an * g.c[3];
    adj_cross(an, bn, g_an, g_bn, g.xyz());
    adj_normalize(a, adj_a, g_an);
    adj_normalize(b, adj_b, g_bn);
}

// Swing-twist: the twist of q about a unit axis is normalize((q.xyz . axis) axis, q.w).
template <typename T> TREADLE_FUNC quat_t<T> quat_twist(const vec_t<3, T>& axis, const quat_t<T>& q) {
    return normalize(quat_t<T>(axis * dot(q.xyz(), axis), q.c[3]));
}
template <typename T>
TREADLE_FUNC void adj_quat_twist(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                 quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    const T d = dot(q.xyz(), axis);
    quat_t<T> g;
    adj_normalize(quat_t<T>(axis * d, q.c[3]), g, adj_ret);
    const T gd = dot(g.xyz(), axis);
    adj_axis += g.xyz() * d + q.xyz() * gd;
    adj_q += quat_t<T>(axis * gd, g.c[3]);
}
// 2 atan2(|twist.xyz|, twist.w) (= 2 acos(twist.w), in [0, 2 pi]), accurate for small angles in float32.
template <typename T> TREADLE_FUNC T quat_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q) {
    const quat_t<T> tw = quat_twist(axis, q);
    return T(T(2) * atan2(length(tw.xyz()), tw.c[3]));
}
template <typename T>
TREADLE_FUNC void adj_quat_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                       quat_t<T>& adj_q, const T& adj_ret) {
    const quat_t<T> tw = quat_twist(axis, q);
    const vec_t<3, T> v = tw.xyz();
    const T s = length(v);
    T gs = T(0);
    quat_t<T> g;
    adj_atan2(s, tw.c[3], gs, g.c[3], T(T(2) * adj_ret));
    const vec_t<3, T> gv = s > T(0) ? v * T(gs / s) : vec_t<3, T>();
    g = quat_t<T>(gv, g.c[3]);
    adj_quat_twist(axis, q, adj_axis, adj_q, g);
}
// 2 atan2(twist.xyz . axis, twist.w).
template <typename T> TREADLE_FUNC T quat_twist_angle_signed(const vec_t<3, T>& axis, const quat_t<T>& q) {
    const quat_t<T> tw = quat_twist(axis, q);
    return T(T(2) * atan2(dot(tw.xyz(), axis), tw.c[3]));
}
template <typename T>
TREADLE_FUNC void adj_quat_twist_angle_signed(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                              quat_t<T>& adj_q, const T& adj_ret) {
    const quat_t<T> tw = quat_twist(axis, q);
    const T y = dot(tw.xyz(), axis);
    T gy = T(0);
    quat_t<T> g;
    adj_atan2(y, tw.c[3], gy, g.c[3], T(T(2) * adj_ret));
    const vec_t<3, T> gtw = axis * gy;
    adj_axis += tw.xyz() * gy;
    g = quat_t<T>(gtw, g.c[3]);
    adj_quat_twist(axis, q, adj_axis, adj_q, g);
}

}  // namespace treadle
