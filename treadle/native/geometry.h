// Geometric primitives shared by the BVH and mesh queries, and the builtins `closest_point_edge_edge` and
// `intersect_tri_tri`. Everything works on vec_t<3, T> (T = float32 unless noted).
#pragma once
#include "vec.h"

namespace treadle {
namespace geo {

typedef vec_t<3, float32> v3;

template <typename T> TREADLE_FUNC T clamp01(T x) { return x < T(0) ? T(0) : (x > T(1) ? T(1) : x); }
template <typename T> TREADLE_FUNC T sq(T x) { return x * x; }
TREADLE_FUNC float32 len2(const v3& a) { return dot(a, a); }

// ------------------------------------------------------------------------------------------------ boxes
// Squared distance from p to the box [lo, hi] (0 inside).
TREADLE_FUNC float32 box_dist2(const float32* lo, const float32* hi, const v3& p) {
    float32 d2 = 0.0f;
    for (int a = 0; a < 3; ++a) {
        const float32 d = p.c[a] < lo[a] ? lo[a] - p.c[a] : (p.c[a] > hi[a] ? p.c[a] - hi[a] : 0.0f);
        d2 += d * d;
    }
    return d2;
}

// Squared distance from p to the farthest corner of the box.
TREADLE_FUNC float32 box_far2(const float32* lo, const float32* hi, const v3& p) {
    float32 d2 = 0.0f;
    for (int a = 0; a < 3; ++a) {
        const float32 d0 = p.c[a] - lo[a], d1 = hi[a] - p.c[a];
        d2 += d0 > d1 ? d0 * d0 : d1 * d1;
    }
    return d2;
}

TREADLE_FUNC bool box_overlap(const float32* lo, const float32* hi, const v3& qlo, const v3& qhi) {
    return lo[0] <= qhi.c[0] && hi[0] >= qlo.c[0] && lo[1] <= qhi.c[1] && hi[1] >= qlo.c[1] &&
           lo[2] <= qhi.c[2] && hi[2] >= qlo.c[2];
}

// A ray prepared for slab tests. A zero direction component marks the ray as parallel to that slab: the slab then
// either holds the origin (no constraint on t, the origin may sit exactly on a face) or rejects the ray.
struct ray_pre {
    v3 o, inv;
    int32 parallel[3];
};
TREADLE_FUNC ray_pre prepare_ray(const v3& o, const v3& d) {
    ray_pre r;
    r.o = o;
    for (int a = 0; a < 3; ++a) {
        r.parallel[a] = d.c[a] == 0.0f;
        r.inv.c[a] = 1.0f / (r.parallel[a] ? 1.0f : d.c[a]);
    }
    return r;
}

// Entry parameter t >= 0 of the ray into the box grown by `pad` if it enters with t <= tmax, else -1 (branch-free).
TREADLE_FUNC float32 ray_box(const float32* lo, const float32* hi, const ray_pre& r, float32 tmax, float32 pad = 0.0f) {
    float32 t0 = 0.0f, t1 = tmax;
    for (int a = 0; a < 3; ++a) {
        const float32 l = lo[a] - pad, h = hi[a] + pad;
        const float32 ta = (l - r.o.c[a]) * r.inv.c[a], tb = (h - r.o.c[a]) * r.inv.c[a];
        float32 near = ta < tb ? ta : tb, far = ta < tb ? tb : ta;
        const bool inside = r.o.c[a] >= l && r.o.c[a] <= h;
        near = r.parallel[a] ? (inside ? -3.0e38f : 3.0e38f) : near;
        far = r.parallel[a] ? (inside ? 3.0e38f : -3.0e38f) : far;
        t0 = near > t0 ? near : t0;
        t1 = far < t1 ? far : t1;
    }
    return t0 <= t1 ? t0 : -1.0f;
}

// ------------------------------------------------------------------------------------------------ triangles
// Closest point of triangle (a, b, c) to p, as barycentric weights (u of a, v of b); returns the squared distance.
TREADLE_FUNC float32 closest_point_triangle(const v3& a, const v3& b, const v3& c, const v3& p, float32& u,
                                            float32& v) {
    const v3 ab = b - a, ac = c - a, ap = p - a;
    const float32 d1 = dot(ab, ap), d2 = dot(ac, ap);
    if (d1 <= 0.0f && d2 <= 0.0f) {
        u = 1.0f, v = 0.0f;
        return len2(ap);
    }
    const v3 bp = p - b;
    const float32 d3 = dot(ab, bp), d4 = dot(ac, bp);
    if (d3 >= 0.0f && d4 <= d3) {
        u = 0.0f, v = 1.0f;
        return len2(bp);
    }
    const float32 vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {  // edge ab
        const float32 t = d1 / (d1 - d3);
        u = 1.0f - t, v = t;
        return len2(p - (a + ab * t));
    }
    const v3 cp = p - c;
    const float32 d5 = dot(ab, cp), d6 = dot(ac, cp);
    if (d6 >= 0.0f && d5 <= d6) {
        u = 0.0f, v = 0.0f;
        return len2(cp);
    }
    const float32 vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {  // edge ac
        const float32 t = d2 / (d2 - d6);
        u = 1.0f - t, v = 0.0f;
        return len2(p - (a + ac * t));
    }
    const float32 va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {  // edge bc
        const float32 t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        u = 0.0f, v = 1.0f - t;
        return len2(p - (b + (c - b) * t));
    }
    const float32 den = 1.0f / (va + vb + vc);
    const float32 wb = vb * den, wc = vc * den;
    u = 1.0f - wb - wc, v = wb;
    return len2(p - (a + ab * wb + ac * wc));
}

// Triangles whose area is negligible relative to their longest edge are skipped by point queries.
TREADLE_FUNC bool triangle_degenerate(const v3& a, const v3& b, const v3& c) {
    const float32 e = len2(b - a) + len2(c - b) + len2(a - c);
    const float32 n2 = len2(cross(b - a, c - a));
    return !(n2 > 1e-12f * e * e);
}

// Ray o + t d against triangle (a, b, c) (both sides): t and barycentric weights (u of a, v of b) on a hit.
TREADLE_FUNC bool ray_triangle(const v3& a, const v3& b, const v3& c, const v3& o, const v3& d, float32& t,
                               float32& u, float32& v) {
    const v3 e1 = b - a, e2 = c - a;
    const v3 pv = cross(d, e2);
    const float32 det = dot(e1, pv);
    if (det == 0.0f || !(det == det)) return false;
    const float32 inv = 1.0f / det;
    const v3 tv = o - a;
    const float32 bu = dot(tv, pv) * inv;
    if (bu < 0.0f || bu > 1.0f) return false;
    const v3 qv = cross(tv, e1);
    const float32 bv = dot(d, qv) * inv;
    if (bv < 0.0f || bu + bv > 1.0f) return false;
    t = dot(e2, qv) * inv;
    u = 1.0f - bu - bv, v = bu;
    return true;
}

// Closest points of segments [p1, q1] and [p2, q2]: weights s, t along them and the squared distance.
template <typename T>
TREADLE_FUNC T closest_segments(const vec_t<3, T>& p1, const vec_t<3, T>& q1, const vec_t<3, T>& p2,
                                const vec_t<3, T>& q2, T eps, T& s, T& t) {
    const vec_t<3, T> d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2;
    const T a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
    if (a <= eps && e <= eps) {
        s = t = T(0);
    } else if (a <= eps) {
        s = T(0);
        t = clamp01(f / e);
    } else {
        const T c = dot(d1, r);
        if (e <= eps) {
            t = T(0);
            s = clamp01(-c / a);
        } else {
            const T b = dot(d1, d2), den = a * e - b * b;
            s = den != T(0) ? clamp01((b * f - c * e) / den) : T(0);
            t = (b * s + f) / e;
            if (t < T(0)) {
                t = T(0);
                s = clamp01(-c / a);
            } else if (t > T(1)) {
                t = T(1);
                s = clamp01((b - c) / a);
            }
        }
    }
    const vec_t<3, T> d = (p1 + d1 * s) - (p2 + d2 * t);
    return dot(d, d);
}

}  // namespace geo

template <typename E>
TREADLE_FUNC vec_t<3, float32> closest_point_edge_edge(const vec_t<3, float32>& p1, const vec_t<3, float32>& q1,
                                                       const vec_t<3, float32>& p2, const vec_t<3, float32>& q2,
                                                       E epsilon) {
    float32 s, t;
    const float32 d2 = geo::closest_segments(p1, q1, p2, q2, float32(epsilon), s, t);
    return vec_t<3, float32>(s, t, sqrt(d2));
}

namespace geo {
// d clamp01(x) / dx: 1 where the clamp passes x through, 0 where it holds a bound.
TREADLE_FUNC float32 clamp01_slope(float32 x) { return (x >= 0.0f && x <= 1.0f) ? 1.0f : 0.0f; }
}  // namespace geo

// Reverse mode through the branch closest_segments took (same decisions, same formulas): the gradients of s, t and
// the distance d with respect to the four end points. Away from the branch boundaries this is the exact derivative
// (for d it reduces to the envelope-theorem gradient: the unit vector between the closest points, split by s and t).
template <typename E>
TREADLE_FUNC void adj_closest_point_edge_edge(const vec_t<3, float32>& p1, const vec_t<3, float32>& q1,
                                              const vec_t<3, float32>& p2, const vec_t<3, float32>& q2, E epsilon,
                                              vec_t<3, float32>& adj_p1, vec_t<3, float32>& adj_q1,
                                              vec_t<3, float32>& adj_p2, vec_t<3, float32>& adj_q2, E&,
                                              const vec_t<3, float32>& adj_ret) {
    typedef vec_t<3, float32> v3;
    const float32 eps = float32(epsilon);
    const v3 d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2;
    const float32 a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r), c = dot(d1, r), b = dot(d1, d2);
    float32 s, t;
    const float32 dd = geo::closest_segments(p1, q1, p2, q2, eps, s, t);
    const float32 dist = sqrt(dd);
    float32 adj_s = adj_ret.c[0], adj_t = adj_ret.c[1];
    // d = |D|, D = p1 + d1 s - p2 - d2 t
    const v3 D = (p1 + d1 * s) - (p2 + d2 * t);
    const v3 adj_D = dist > 0.0f ? D * (adj_ret.c[2] / dist) : v3();
    v3 adj_d1 = adj_D * s, adj_d2 = adj_D * (-t), adj_r;
    adj_p1 += adj_D;
    adj_p2 -= adj_D;
    adj_s += dot(adj_D, d1);
    adj_t -= dot(adj_D, d2);
    // s and t as closest_segments computed them, from a, b, c, e, f
    float32 adj_a = 0.0f, adj_b = 0.0f, adj_c = 0.0f, adj_e = 0.0f, adj_f = 0.0f;
    if (a <= eps && e <= eps) {
        // s = t = 0: constant
    } else if (a <= eps) {
        adj_f += adj_t * geo::clamp01_slope(f / e) / e;
        adj_e -= adj_t * geo::clamp01_slope(f / e) * f / (e * e);
    } else if (e <= eps) {
        adj_c -= adj_s * geo::clamp01_slope(-c / a) / a;
        adj_a += adj_s * geo::clamp01_slope(-c / a) * c / (a * a);
    } else {
        const float32 den = a * e - b * b;
        const float32 u = den != 0.0f ? (b * f - c * e) / den : 0.0f;
        const float32 s0 = den != 0.0f ? geo::clamp01(u) : 0.0f;
        const float32 t0 = (b * s0 + f) / e;
        if (t0 < 0.0f) {
            adj_c -= adj_s * geo::clamp01_slope(-c / a) / a;
            adj_a += adj_s * geo::clamp01_slope(-c / a) * c / (a * a);
        } else if (t0 > 1.0f) {
            const float32 k = adj_s * geo::clamp01_slope((b - c) / a) / a;
            adj_b += k;
            adj_c -= k;
            adj_a -= k * (b - c) / a;
        } else {
            adj_b += adj_t * s0 / e;
            adj_f += adj_t / e;
            adj_e -= adj_t * t0 / e;
            const float32 adj_s0 = adj_s + adj_t * b / e;
            if (den != 0.0f) {
                const float32 adj_u = adj_s0 * geo::clamp01_slope(u);
                const float32 adj_n = adj_u / den, adj_den = -adj_u * u / den;
                adj_b += adj_n * f;
                adj_f += adj_n * b;
                adj_c -= adj_n * e;
                adj_e -= adj_n * c;
                adj_a += adj_den * e;
                adj_e += adj_den * a;
                adj_b -= 2.0f * b * adj_den;
            }
        }
    }
    // a = d1.d1, e = d2.d2, f = d2.r, c = d1.r, b = d1.d2
    adj_d1 += d1 * (2.0f * adj_a) + r * adj_c + d2 * adj_b;
    adj_d2 += d2 * (2.0f * adj_e) + r * adj_f + d1 * adj_b;
    adj_r += d2 * adj_f + d1 * adj_c;
    // d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2
    adj_q1 += adj_d1;
    adj_p1 -= adj_d1;
    adj_q2 += adj_d2;
    adj_p2 -= adj_d2;
    adj_p1 += adj_r;
    adj_p2 -= adj_r;
}

// ------------------------------------------------------------------------------------------------ tri-tri
// Triangle-triangle intersection: separating-axis tests over the two face normals and the nine edge-edge cross
// products (exact for non-coplanar triangles); coplanar triangles add the in-plane edge normals.
namespace geo {
template <typename T>
TREADLE_FUNC bool separated(const vec_t<3, T>* A, const vec_t<3, T>* B, const vec_t<3, T>& axis) {
    T amin = dot(A[0], axis), amax = amin, bmin = dot(B[0], axis), bmax = bmin;
    for (int i = 1; i < 3; ++i) {
        const T a = dot(A[i], axis), b = dot(B[i], axis);
        amin = a < amin ? a : amin, amax = a > amax ? a : amax;
        bmin = b < bmin ? b : bmin, bmax = b > bmax ? b : bmax;
    }
    return amax < bmin || bmax < amin;
}
}  // namespace geo

template <typename T>
TREADLE_FUNC int32 intersect_tri_tri(const vec_t<3, T>& v0, const vec_t<3, T>& v1, const vec_t<3, T>& v2,
                                     const vec_t<3, T>& u0, const vec_t<3, T>& u1, const vec_t<3, T>& u2) {
    const vec_t<3, T> A[3] = {v0, v1, v2}, B[3] = {u0, u1, u2};
    const vec_t<3, T> ea[3] = {v1 - v0, v2 - v1, v0 - v2}, eb[3] = {u1 - u0, u2 - u1, u0 - u2};
    const vec_t<3, T> na = cross(ea[0], ea[1]), nb = cross(eb[0], eb[1]);
    if (geo::separated(A, B, na) || geo::separated(A, B, nb)) return 0;
    const vec_t<3, T> nc = cross(na, nb);
    const T scale = dot(na, na) * dot(nb, nb);
    if (dot(nc, nc) > scale * T(1e-12)) {
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                const vec_t<3, T> axis = cross(ea[i], eb[j]);
                if (dot(axis, axis) > T(0) && geo::separated(A, B, axis)) return 0;
            }
        return 1;
    }
    // (nearly) coplanar: in-plane normals of every edge
    for (int i = 0; i < 3; ++i) {
        if (geo::separated(A, B, cross(na, ea[i])) || geo::separated(A, B, cross(na, eb[i]))) return 0;
    }
    return 1;
}

}  // namespace treadle
