// Triangle meshes: access (`mesh_get*`, `mesh_eval_*`) and queries (closest / furthest point with four ways to
// decide inside or outside, rays, boxes and spheres) over the mesh's triangle BVH (bvh.h).
//
// A kernel refers to a mesh by the address of its `mesh_t`, whose first member is the BVH over its faces, so the
// same id is also the BVH id (`mesh_get_bvh`). The Python object (treadle/_src/geometry/mesh.py) owns everything;
// `mesh_build_serial` / `mesh_refit_serial` (run by one-thread kernels) recompute the face bounds, the tree and,
// with winding-number support, the per-node dipoles. Vertex pseudo-normals (sign_normal) are computed on demand
// from the face corners around each point (a fixed table built once by Python).
//
// Barycentric results follow the reference: u weights the face's first vertex, v its second
// (position = u v0 + v v1 + (1 - u - v) v2).
#pragma once
#include "array.h"
#include "bvh.h"

namespace treadle {

struct mesh_t {
    bvh_t bvh;                         // first member: the mesh id is also its BVH id
    array_t<vec_t<3, float32>> points;
    array_t<vec_t<3, float32>> velocities;  // data == null: no velocities
    array_t<int32> indices;            // 3 per face
    int32 num_points;
    int32 num_faces;
    const int32* vertex_corners_start; // per point: first entry of vertex_corners (num_points + 1 entries)
    const int32* vertex_corners;       // face corners (3 f + k) around each point: pseudo-normals on demand
    float32* winding;                  // per node: area vector (3), centroid (3), area, radius; null if unsupported
    float32 avg_edge;                  // mean edge length (scale of sign_normal's epsilon)
    int32 pad;
};

namespace detail {
typedef vec_t<3, float32> v3;

TREADLE_FUNC const mesh_t& mesh_of(uint64 id) { return *(const mesh_t*)id; }
TREADLE_FUNC int32 mesh_index(const mesh_t& m, int64 i) { return *address(m.indices, i); }
TREADLE_FUNC v3 mesh_point(const mesh_t& m, int32 i) { return *address(m.points, i); }
TREADLE_FUNC void mesh_face(const mesh_t& m, int32 f, v3& a, v3& b, v3& c) {
    a = mesh_point(m, mesh_index(m, 3 * (int64)f));
    b = mesh_point(m, mesh_index(m, 3 * (int64)f + 1));
    c = mesh_point(m, mesh_index(m, 3 * (int64)f + 2));
}
TREADLE_FUNC v3 unit(const v3& x) {
    const float32 l = sqrt(dot(x, x));
    return l > 0.0f ? x * (1.0f / l) : v3();
}
TREADLE_FUNC v3 face_normal(const mesh_t& m, int32 f) {
    v3 a, b, c;
    mesh_face(m, f, a, b, c);
    return unit(cross(b - a, c - a));
}
TREADLE_FUNC int32 mesh_root(const mesh_t& m, int32 root) {
    return (root >= 0 && root < m.bvh.num_nodes) ? root : 0;
}
}  // namespace detail

// ------------------------------------------------------------------------------------------------ access
template <typename R> TREADLE_FUNC R mesh_get(uint64 id) {
    const mesh_t& m = detail::mesh_of(id);
    R r;
    r.points = m.points;
    r.velocities = m.velocities;
    r.indices = m.indices;
    return r;
}
template <typename I> TREADLE_FUNC vec_t<3, float32> mesh_get_point(uint64 id, I index) {
    const mesh_t& m = detail::mesh_of(id);
    return detail::mesh_point(m, detail::mesh_index(m, (int64)index));
}
template <typename I> TREADLE_FUNC vec_t<3, float32> mesh_get_velocity(uint64 id, I index) {
    const mesh_t& m = detail::mesh_of(id);
    if (m.velocities.data == nullptr) return vec_t<3, float32>();
    return *address(m.velocities, detail::mesh_index(m, (int64)index));
}
template <typename I> TREADLE_FUNC int32 mesh_get_index(uint64 id, I index) {
    return detail::mesh_index(detail::mesh_of(id), (int64)index);
}
TREADLE_FUNC uint64 mesh_get_bvh(uint64 id) { return id; }
template <typename G> TREADLE_FUNC int32 mesh_get_group_root(uint64 id, G group) { return bvh_get_group_root(id, group); }

template <typename I, typename U, typename V>
TREADLE_FUNC vec_t<3, float32> mesh_eval_position(uint64 id, I face, U bary_u, V bary_v) {
    vec_t<3, float32> a, b, c;
    detail::mesh_face(detail::mesh_of(id), (int32)face, a, b, c);
    const float32 u = float32(bary_u), v = float32(bary_v);
    return a * u + b * v + c * (1.0f - u - v);
}
// Gradients with respect to the barycentric coordinates (the mesh's points are data, as in the reference).
template <typename I, typename U, typename V>
TREADLE_FUNC void adj_mesh_eval_position(uint64 id, I face, U, V, uint64&, I&, U& adj_u, V& adj_v,
                                         const vec_t<3, float32>& adj_ret) {
    vec_t<3, float32> a, b, c;
    detail::mesh_face(detail::mesh_of(id), (int32)face, a, b, c);
    adj_u += U(dot(adj_ret, a - c));
    adj_v += V(dot(adj_ret, b - c));
}
template <typename I, typename U, typename V>
TREADLE_FUNC vec_t<3, float32> mesh_eval_velocity(uint64 id, I face, U bary_u, V bary_v) {
    const mesh_t& m = detail::mesh_of(id);
    if (m.velocities.data == nullptr) return vec_t<3, float32>();
    const int64 f = (int64)face;
    const float32 u = float32(bary_u), v = float32(bary_v);
    return *address(m.velocities, detail::mesh_index(m, 3 * f)) * u +
           *address(m.velocities, detail::mesh_index(m, 3 * f + 1)) * v +
           *address(m.velocities, detail::mesh_index(m, 3 * f + 2)) * (1.0f - u - v);
}
template <typename I, typename U, typename V>
TREADLE_FUNC void adj_mesh_eval_velocity(uint64 id, I face, U, V, uint64&, I&, U& adj_u, V& adj_v,
                                         const vec_t<3, float32>& adj_ret) {
    const mesh_t& m = detail::mesh_of(id);
    if (m.velocities.data == nullptr) return;
    const int64 f = (int64)face;
    const vec_t<3, float32> c = *address(m.velocities, detail::mesh_index(m, 3 * f + 2));
    adj_u += U(dot(adj_ret, *address(m.velocities, detail::mesh_index(m, 3 * f)) - c));
    adj_v += V(dot(adj_ret, *address(m.velocities, detail::mesh_index(m, 3 * f + 1)) - c));
}
template <typename I> TREADLE_FUNC vec_t<3, float32> mesh_eval_face_normal(uint64 id, I face) {
    return detail::face_normal(detail::mesh_of(id), (int32)face);
}

// ------------------------------------------------------------------------------------------------ traversals
namespace detail {
struct mesh_hit_t {
    int32 face;
    float32 u, v;
    float32 d2;  // squared distance (point queries) or t (rays)
};

// Closest (furthest == false) or furthest point of the mesh to p among faces strictly within (beyond) `limit`.
TREADLE_FUNC bool mesh_extreme_point(const mesh_t& m, const v3& p, float32 limit, bool furthest, mesh_hit_t& h) {
    const bvh_t& t = m.bvh;
    h.face = -1, h.u = h.v = 0.0f;
    float32 best = limit < 0.0f ? 0.0f : limit * limit;
    if (t.num_nodes == 0) return false;
    // Nodes are keyed by the squared distance that bounds what they can still offer (negated for furthest
    // queries, so that smaller is better in both), kept on the stack: popped nodes that can no longer improve on
    // the best face are skipped without touching them again.
    float32 bound = furthest ? -best : best;
    int32 stack[64];
    float32 key[64];
    int32 top = 0;
    stack[top] = 0;
    key[top++] = furthest ? -geo::box_far2(t.nodes[0].lo, t.nodes[0].hi, p) : geo::box_dist2(t.nodes[0].lo, t.nodes[0].hi, p);
    while (top) {
        --top;
        if (!(key[top] < bound)) continue;
        const bvh_node_t& node = t.nodes[stack[top]];
        if (node.b < 0) {
            for (int32 s = node.a; s < node.a - node.b; ++s) {
                const float32* b = t.slot_bounds + 6 * (int64)s;
                const float32 k = furthest ? -geo::box_far2(b, b + 3, p) : geo::box_dist2(b, b + 3, p);
                if (!(k < bound)) continue;
                const int32 f = t.items[s];
                v3 a, bb, c;
                mesh_face(m, f, a, bb, c);
                if (geo::triangle_degenerate(a, bb, c)) continue;
                if (furthest) {  // distance is convex: the furthest point of a triangle is a vertex
                    const float32 da = geo::len2(a - p), db = geo::len2(bb - p), dc = geo::len2(c - p);
                    const float32 d = da >= db && da >= dc ? da : (db >= dc ? db : dc);
                    if (d > best) {
                        best = d, bound = -d, h.face = f;
                        h.u = d == da ? 1.0f : 0.0f;
                        h.v = d != da && d == db ? 1.0f : 0.0f;
                    }
                } else {
                    float32 u, v;
                    const float32 d = geo::closest_point_triangle(a, bb, c, p, u, v);
                    if (d < best) best = d, bound = d, h.face = f, h.u = u, h.v = v;
                }
            }
        } else if (top <= 62) {
            const bvh_node_t& l = t.nodes[node.a];
            const bvh_node_t& r = t.nodes[node.b];
            const float32 kl = furthest ? -geo::box_far2(l.lo, l.hi, p) : geo::box_dist2(l.lo, l.hi, p);
            const float32 kr = furthest ? -geo::box_far2(r.lo, r.hi, p) : geo::box_dist2(r.lo, r.hi, p);
            const bool left_first = kl <= kr;  // the more promising child is popped first
            const float32 k_far = left_first ? kr : kl, k_near = left_first ? kl : kr;
            if (k_far < bound) key[top] = k_far, stack[top++] = left_first ? node.b : node.a;
            if (k_near < bound) key[top] = k_near, stack[top++] = left_first ? node.a : node.b;
        }
    }
    h.d2 = best;
    return h.face >= 0;
}

// Closest ray hit (any == false) or any hit (any == true) with 0 <= t < max_t; `count` instead counts every hit
// with t >= 0 (returned in h.face).
TREADLE_FUNC bool mesh_ray(const mesh_t& m, const v3& o, const v3& d, float32 max_t, int32 root, bool any, bool count,
                           mesh_hit_t& h) {
    const bvh_t& t = m.bvh;
    h.face = count ? 0 : -1, h.u = h.v = 0.0f, h.d2 = max_t;
    if (t.num_nodes == 0) return false;
    const geo::ray_pre ray = geo::prepare_ray(o, d);
    float32 best = count ? __builtin_inff() : max_t;
    int32 stack[64];
    float32 enter[64];  // entry t of each stacked node: popped nodes beyond the best hit are skipped untested
    int32 top = 0;
    const int32 r0 = mesh_root(m, root);
    enter[0] = geo::ray_box(t.nodes[r0].lo, t.nodes[r0].hi, ray, best);
    stack[top++] = r0;
    while (top) {
        --top;
        if (!(enter[top] >= 0.0f && enter[top] <= best)) continue;
        const bvh_node_t& node = t.nodes[stack[top]];
        if (node.b < 0) {
            for (int32 s = node.a; s < node.a - node.b; ++s) {
                const float32* b = t.slot_bounds + 6 * (int64)s;
                if (geo::ray_box(b, b + 3, ray, best) < 0.0f) continue;
                const int32 f = t.items[s];
                v3 a, bb, c;
                mesh_face(m, f, a, bb, c);
                float32 th, u, v;
                if (!geo::ray_triangle(a, bb, c, o, d, th, u, v) || th < 0.0f) continue;
                if (count) {
                    ++h.face;
                } else if (th < best) {
                    best = th, h.face = f, h.u = u, h.v = v, h.d2 = th;
                    if (any) return true;
                }
            }
        } else if (top <= 62) {
            const bvh_node_t& l = t.nodes[node.a];
            const bvh_node_t& r = t.nodes[node.b];
            const float32 tl = geo::ray_box(l.lo, l.hi, ray, best);
            const float32 tr = geo::ray_box(r.lo, r.hi, ray, best);
            const bool left_first = tl >= 0.0f && (tr < 0.0f || tl <= tr);  // the nearer hit is popped first
            const float32 t_far = left_first ? tr : tl, t_near = left_first ? tl : tr;
            if (t_far >= 0.0f) enter[top] = t_far, stack[top++] = left_first ? node.b : node.a;
            if (t_near >= 0.0f) enter[top] = t_near, stack[top++] = left_first ? node.a : node.b;
        }
    }
    return h.face >= 0 && !count;
}

// Sign from three axis-aligned rays: a ray whose closest hit is on a face's back side votes inside; a miss votes
// outside; the majority wins.
TREADLE_FUNC float32 sign_rays(const mesh_t& m, const v3& p) {
    int32 inside = 0;
    for (int a = 0; a < 3; ++a) {
        v3 d;
        d.c[a] = 1.0f;
        mesh_hit_t h;
        if (mesh_ray(m, p, d, __builtin_inff(), 0, false, false, h) && dot(d, face_normal(m, h.face)) > 0.0f)
            ++inside;
    }
    return inside >= 2 ? -1.0f : 1.0f;
}

// Angle-weighted normal of the faces around point v (computed when a query needs it, so refit stays cheap).
TREADLE_FUNC v3 vertex_pseudo_normal(const mesh_t& m, int32 v) {
    v3 n;
    for (int32 i = m.vertex_corners_start[v]; i < m.vertex_corners_start[v + 1]; ++i) {
        const int32 corner = m.vertex_corners[i], f = corner / 3, k = corner % 3;
        v3 x[3];
        mesh_face(m, f, x[0], x[1], x[2]);
        const v3 e1 = unit(x[(k + 1) % 3] - x[k]), e2 = unit(x[(k + 2) % 3] - x[k]);
        float32 c = dot(e1, e2);
        c = c < -1.0f ? -1.0f : (c > 1.0f ? 1.0f : c);
        n += unit(cross(x[1] - x[0], x[2] - x[0])) * acos(c);
    }
    return n;
}

// The other face on the edge (a, b) of face f, or -1 (a boundary edge).
TREADLE_FUNC int32 edge_neighbour(const mesh_t& m, int32 f, int32 a, int32 b) {
    for (int32 i = m.vertex_corners_start[a]; i < m.vertex_corners_start[a + 1]; ++i) {
        const int32 g = m.vertex_corners[i] / 3;
        if (g == f) continue;
        for (int k = 0; k < 3; ++k)
            if (mesh_index(m, 3 * (int64)g + k) == b) return g;
    }
    return -1;
}

// Sign from the angle-weighted pseudo-normal of the closest feature (vertex, edge or face) of the closest point.
TREADLE_FUNC float32 sign_normal(const mesh_t& m, const v3& p, const mesh_hit_t& h, float32 epsilon) {
    v3 x[3];
    mesh_face(m, h.face, x[0], x[1], x[2]);
    const v3 cp = x[0] * h.u + x[1] * h.v + x[2] * (1.0f - h.u - h.v);
    const float32 tol = epsilon * m.avg_edge, tol2 = tol * tol;
    v3 n = face_normal(m, h.face);
    bool found = false;
    for (int k = 0; k < 3 && !found; ++k) {
        if (geo::len2(cp - x[k]) <= tol2) {
            n = vertex_pseudo_normal(m, mesh_index(m, 3 * (int64)h.face + k));
            found = true;
        }
    }
    for (int k = 0; k < 3 && !found; ++k) {
        const v3 e = x[(k + 1) % 3] - x[k];
        const float32 el2 = geo::len2(e);
        const float32 s = el2 > 0.0f ? geo::clamp01(dot(cp - x[k], e) / el2) : 0.0f;
        if (geo::len2(cp - (x[k] + e * s)) <= tol2) {
            const int32 other = edge_neighbour(m, h.face, mesh_index(m, 3 * (int64)h.face + k),
                                               mesh_index(m, 3 * (int64)h.face + (k + 1) % 3));
            if (other >= 0) n = n + face_normal(m, other);
            found = true;
        }
    }
    return dot(p - cp, n) < 0.0f ? -1.0f : 1.0f;
}

// Sign from the parity of crossings along n_sample rays around (1, 1, 1), perturbed deterministically.
TREADLE_FUNC float32 sign_parity(const mesh_t& m, const v3& p, int32 n_sample, float32 scale) {
    int32 odd = 0;
    uint32 s = 0x9e3779b9u;
    for (int32 i = 0; i < n_sample; ++i) {
        v3 d(1.0f, 1.0f, 1.0f);
        for (int k = 0; k < 3; ++k) {
            s = s * 747796405u + 2891336453u;
            uint32 w = ((s >> ((s >> 28) + 4u)) ^ s) * 277803737u;
            w = (w >> 22) ^ w;
            d.c[k] += scale * ((float32)(w >> 8) * (2.0f / 16777216.0f) - 1.0f);
        }
        mesh_hit_t h;
        mesh_ray(m, p, d, 0.0f, 0, false, true, h);
        odd += h.face & 1;
    }
    return 2 * odd >= n_sample ? -1.0f : 1.0f;
}

// Solid angle of triangle (a, b, c) seen from p, over 4 pi.
TREADLE_FUNC float32 triangle_winding(const v3& a0, const v3& b0, const v3& c0, const v3& p) {
    const v3 a = a0 - p, b = b0 - p, c = c0 - p;
    const float32 la = sqrt(dot(a, a)), lb = sqrt(dot(b, b)), lc = sqrt(dot(c, c));
    const float32 num = dot(a, cross(b, c));
    const float32 den = la * lb * lc + dot(a, b) * lc + dot(a, c) * lb + dot(b, c) * la;
    return atan2(num, den) * (float32)(0.5 / 3.14159265358979323846);
}

// Generalised winding number: exact near the point, the node's dipole when farther than accuracy * its radius.
TREADLE_FUNC float32 winding_number(const mesh_t& m, const v3& p, float32 accuracy) {
    const bvh_t& t = m.bvh;
    float32 w = 0.0f;
    int32 stack[64];
    int32 top = 0;
    if (t.num_nodes) stack[top++] = 0;
    while (top) {
        const int32 n = stack[--top];
        const bvh_node_t& node = t.nodes[n];
        const float32* wd = m.winding + 8 * (int64)n;
        const v3 c(wd[3], wd[4], wd[5]);
        const v3 r = c - p;
        const float32 dist2 = dot(r, r);
        if (dist2 > accuracy * accuracy * wd[7] * wd[7] && dist2 > 0.0f) {
            w += dot(r, v3(wd[0], wd[1], wd[2])) / (4.0f * 3.14159265f * dist2 * sqrt(dist2));
        } else if (node.b < 0) {
            for (int32 s = node.a; s < node.a - node.b; ++s) {
                v3 a, b, cc;
                mesh_face(m, t.items[s], a, b, cc);
                w += triangle_winding(a, b, cc, p);
            }
        } else if (top <= 62) {
            stack[top++] = node.a;
            stack[top++] = node.b;
        }
    }
    return w;
}

enum { SIGN_NONE = 0, SIGN_RAYS = 1, SIGN_NORMAL = 2, SIGN_PARITY = 3, SIGN_WINDING = 4 };

// Closest point and, when a face is found, its sign by method `kind` (parameters a, b); sign 0 otherwise.
TREADLE_FUNC bool mesh_point_query(uint64 id, const v3& p, float32 max_dist, int kind, float32 a, float32 b,
                                   mesh_hit_t& h, float32& sign) {
    const mesh_t& m = mesh_of(id);
    const bool found = mesh_extreme_point(m, p, max_dist, false, h);
    sign = 0.0f;
    if (!found) return false;
    if (kind == SIGN_RAYS || (kind == SIGN_WINDING && m.winding == nullptr))
        sign = sign_rays(m, p);
    else if (kind == SIGN_NORMAL)
        sign = sign_normal(m, p, h, a);
    else if (kind == SIGN_PARITY)
        sign = sign_parity(m, p, (int32)a, b);
    else if (kind == SIGN_WINDING)
        sign = winding_number(m, p, a) > b ? -1.0f : 1.0f;
    return true;
}

template <typename R> TREADLE_FUNC R point_result(bool found, float32 sign, const mesh_hit_t& h) {
    R r;
    r.result = found;
    r.sign = sign;
    r.face = h.face;
    r.u = h.u;
    r.v = h.v;
    return r;
}

template <typename R> TREADLE_FUNC R point_query(uint64 id, const v3& p, float32 d, int kind, float32 a, float32 b) {
    mesh_hit_t h;
    float32 sign;
    const bool found = mesh_point_query(id, p, d, kind, a, b, h, sign);
    return point_result<R>(found, sign, h);
}

// Older forms: outputs are written only when a face is found.
TREADLE_FUNC bool point_query_out(uint64 id, const v3& p, float32 d, int kind, float32 a, float32 b, float32* inside,
                                  int32& face, float32& u, float32& v) {
    mesh_hit_t h;
    float32 sign;
    if (!mesh_point_query(id, p, d, kind, a, b, h, sign)) return false;
    if (inside) *inside = sign;
    face = h.face, u = h.u, v = h.v;
    return true;
}
}  // namespace detail

// ------------------------------------------------------------------------------------------------ point queries
template <typename R, typename F> TREADLE_FUNC R mesh_query_point(uint64 id, const vec_t<3, float32>& p, F max_dist) {
    return detail::point_query<R>(id, p, float32(max_dist), detail::SIGN_RAYS, 0.0f, 0.0f);
}
template <typename R, typename F>
TREADLE_FUNC R mesh_query_point_no_sign(uint64 id, const vec_t<3, float32>& p, F max_dist) {
    return detail::point_query<R>(id, p, float32(max_dist), detail::SIGN_NONE, 0.0f, 0.0f);
}
template <typename R, typename F, typename E = float32>
TREADLE_FUNC R mesh_query_point_sign_normal(uint64 id, const vec_t<3, float32>& p, F max_dist, E epsilon = E(1e-3f)) {
    return detail::point_query<R>(id, p, float32(max_dist), detail::SIGN_NORMAL, float32(epsilon), 0.0f);
}
template <typename R, typename F, typename N = int32, typename S = float32>
TREADLE_FUNC R mesh_query_point_sign_parity(uint64 id, const vec_t<3, float32>& p, F max_dist, N n_sample = N(1),
                                            S perturbation_scale = S(0.1f)) {
    return detail::point_query<R>(id, p, float32(max_dist), detail::SIGN_PARITY, float32(n_sample),
                                  float32(perturbation_scale));
}
template <typename R, typename F, typename A = float32, typename T = float32>
TREADLE_FUNC R mesh_query_point_sign_winding_number(uint64 id, const vec_t<3, float32>& p, F max_dist,
                                                    A accuracy = A(2.0f), T threshold = T(0.5f)) {
    return detail::point_query<R>(id, p, float32(max_dist), detail::SIGN_WINDING, float32(accuracy),
                                  float32(threshold));
}
template <typename R, typename F>
TREADLE_FUNC R mesh_query_furthest_point_no_sign(uint64 id, const vec_t<3, float32>& p, F min_dist) {
    detail::mesh_hit_t h;
    const bool found = detail::mesh_extreme_point(detail::mesh_of(id), p, float32(min_dist), true, h);
    return detail::point_result<R>(found, 0.0f, h);
}

template <typename F>
TREADLE_FUNC bool mesh_query_point(uint64 id, const vec_t<3, float32>& p, F max_dist, float32& inside, int32& face,
                                   float32& u, float32& v) {
    return detail::point_query_out(id, p, float32(max_dist), detail::SIGN_RAYS, 0.0f, 0.0f, &inside, face, u, v);
}
template <typename F>
TREADLE_FUNC bool mesh_query_point_no_sign(uint64 id, const vec_t<3, float32>& p, F max_dist, int32& face, float32& u,
                                           float32& v) {
    return detail::point_query_out(id, p, float32(max_dist), detail::SIGN_NONE, 0.0f, 0.0f, nullptr, face, u, v);
}
template <typename F, typename E = float32>
TREADLE_FUNC bool mesh_query_point_sign_normal(uint64 id, const vec_t<3, float32>& p, F max_dist, float32& inside,
                                               int32& face, float32& u, float32& v, E epsilon = E(1e-3f)) {
    return detail::point_query_out(id, p, float32(max_dist), detail::SIGN_NORMAL, float32(epsilon), 0.0f, &inside,
                                   face, u, v);
}
template <typename F, typename N = int32, typename S = float32>
TREADLE_FUNC bool mesh_query_point_sign_parity(uint64 id, const vec_t<3, float32>& p, F max_dist, float32& inside,
                                               int32& face, float32& u, float32& v, N n_sample = N(1),
                                               S perturbation_scale = S(0.1f)) {
    return detail::point_query_out(id, p, float32(max_dist), detail::SIGN_PARITY, float32(n_sample),
                                   float32(perturbation_scale), &inside, face, u, v);
}
template <typename F, typename A = float32, typename T = float32>
TREADLE_FUNC bool mesh_query_point_sign_winding_number(uint64 id, const vec_t<3, float32>& p, F max_dist,
                                                       float32& inside, int32& face, float32& u, float32& v,
                                                       A accuracy = A(2.0f), T threshold = T(0.5f)) {
    return detail::point_query_out(id, p, float32(max_dist), detail::SIGN_WINDING, float32(accuracy),
                                   float32(threshold), &inside, face, u, v);
}
template <typename F>
TREADLE_FUNC bool mesh_query_furthest_point_no_sign(uint64 id, const vec_t<3, float32>& p, F min_dist, int32& face,
                                                    float32& u, float32& v) {
    detail::mesh_hit_t h;
    if (!detail::mesh_extreme_point(detail::mesh_of(id), p, float32(min_dist), true, h)) return false;
    face = h.face, u = h.u, v = h.v;
    return true;
}

// ------------------------------------------------------------------------------------------------ rays
template <typename R, typename F, typename I = int32>
TREADLE_FUNC R mesh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, F max_t,
                              I root = I(-1)) {
    const mesh_t& m = detail::mesh_of(id);
    detail::mesh_hit_t h;
    R r;
    r.result = detail::mesh_ray(m, start, dir, float32(max_t), (int32)root, false, false, h);
    r.face = h.face;
    r.t = r.result ? h.d2 : 0.0f;
    r.u = h.u;
    r.v = h.v;
    r.normal = r.result ? detail::face_normal(m, h.face) : vec_t<3, float32>();
    r.sign = r.result ? (dot(dir, r.normal) < 0.0f ? 1.0f : -1.0f) : 0.0f;
    return r;
}
template <typename F, typename I = int32>
TREADLE_FUNC bool mesh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, F max_t,
                                 float32& t, float32& u, float32& v, float32& sign, vec_t<3, float32>& normal,
                                 int32& face, I root = I(-1)) {
    const mesh_t& m = detail::mesh_of(id);
    detail::mesh_hit_t h;
    if (!detail::mesh_ray(m, start, dir, float32(max_t), (int32)root, false, false, h)) return false;
    t = h.d2, u = h.u, v = h.v, face = h.face;
    normal = detail::face_normal(m, h.face);
    sign = dot(dir, normal) < 0.0f ? 1.0f : -1.0f;
    return true;
}
template <typename F, typename I = int32>
TREADLE_FUNC bool mesh_query_ray_anyhit(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir,
                                        F max_t, I root = I(-1)) {
    detail::mesh_hit_t h;
    return detail::mesh_ray(detail::mesh_of(id), start, dir, float32(max_t), (int32)root, true, false, h);
}
template <typename I = int32>
TREADLE_FUNC int32 mesh_query_ray_count_intersections(uint64 id, const vec_t<3, float32>& start,
                                                      const vec_t<3, float32>& dir, I root = I(-1)) {
    detail::mesh_hit_t h;
    detail::mesh_ray(detail::mesh_of(id), start, dir, 0.0f, (int32)root, false, true, h);
    return h.face;
}

// ------------------------------------------------------------------------------------------------ boxes, spheres
TREADLE_FUNC bvh_query_t mesh_query_aabb(uint64 id, const vec_t<3, float32>& low, const vec_t<3, float32>& high) {
    return bvh_query_aabb(id, low, high);
}
template <typename F>
TREADLE_FUNC bvh_query_t mesh_query_sphere(uint64 id, const vec_t<3, float32>& center, F radius) {
    bvh_query_t q = detail::bvh_query_start(id, BVH_QUERY_MESH_SPHERE, center, center, float32(radius), -1);
    q.mesh = (const void*)id;
    return q;
}

// Closest point of the face within r of c (a degenerate face: its longest edge).
TREADLE_FUNC bool mesh_face_in_sphere(const void* mesh, int32 face, const vec_t<3, float32>& c, float32 r) {
    const mesh_t& m = *(const mesh_t*)mesh;
    vec_t<3, float32> a, b, d;
    detail::mesh_face(m, face, a, b, d);
    float32 d2;
    if (geo::triangle_degenerate(a, b, d)) {
        const vec_t<3, float32> e[3][2] = {{a, b}, {b, d}, {d, a}};
        int k = 0;
        for (int i = 1; i < 3; ++i)
            if (geo::len2(e[i][1] - e[i][0]) > geo::len2(e[k][1] - e[k][0])) k = i;
        float32 s, t;
        d2 = geo::closest_segments(e[k][0], e[k][1], c, c, 0.0f, s, t);
    } else {
        float32 u, v;
        d2 = geo::closest_point_triangle(a, b, d, c, u, v);
    }
    return d2 <= r * r;
}

// ------------------------------------------------------------------------------------------------ build, refit
namespace detail {
// Face bounds into the BVH's item bounds, and the mean edge length.
TREADLE_FUNC void mesh_update(mesh_t& m) {
    float32* ib = const_cast<float32*>(m.bvh.item_bounds);
    float64 edges = 0.0;
    for (int32 f = 0; f < m.num_faces; ++f) {
        v3 x[3];
        mesh_face(m, f, x[0], x[1], x[2]);
        float32* b = ib + 6 * (int64)f;
        float32 e = 0.0f;
        for (int a = 0; a < 3; ++a) {
            b[a] = min(min(x[0].c[a], x[1].c[a]), x[2].c[a]);
            b[3 + a] = max(max(x[0].c[a], x[1].c[a]), x[2].c[a]);
            e += sqrt(geo::len2(x[(a + 1) % 3] - x[a]));
        }
        edges += e;
    }
    m.avg_edge = m.num_faces > 0 ? (float32)(edges / (3.0 * m.num_faces)) : 0.0f;
}

// Per node: area vector, area-weighted centroid, area and a bounding radius around the centroid.
TREADLE_FUNC void mesh_winding_refit(mesh_t& m) {
    const bvh_t& t = m.bvh;
    for (int32 n = t.num_nodes - 1; n >= 0; --n) {
        const bvh_node_t& node = t.nodes[n];
        float32* w = m.winding + 8 * (int64)n;
        v3 N, C;
        float32 A = 0.0f, R = 0.0f;
        if (node.b < 0) {
            for (int32 s = node.a; s < node.a - node.b; ++s) {
                v3 a, b, c;
                mesh_face(m, t.items[s], a, b, c);
                const v3 av = cross(b - a, c - a) * 0.5f;
                const float32 area = sqrt(dot(av, av));
                N += av;
                C += (a + b + c) * (area / 3.0f);
                A += area;
            }
            C = A > 0.0f ? C * (1.0f / A) : v3(0.5f * (node.lo[0] + node.hi[0]), 0.5f * (node.lo[1] + node.hi[1]),
                                                0.5f * (node.lo[2] + node.hi[2]));
            for (int32 s = node.a; s < node.a - node.b; ++s) {
                v3 x[3];
                mesh_face(m, t.items[s], x[0], x[1], x[2]);
                for (int k = 0; k < 3; ++k)
                    R = max(R, sqrt(geo::len2(x[k] - C)));
            }
        } else {
            const float32* l = m.winding + 8 * (int64)node.a;
            const float32* r = m.winding + 8 * (int64)node.b;
            N = v3(l[0] + r[0], l[1] + r[1], l[2] + r[2]);
            A = l[6] + r[6];
            const v3 cl(l[3], l[4], l[5]), cr(r[3], r[4], r[5]);
            C = A > 0.0f ? (cl * l[6] + cr * r[6]) * (1.0f / A) : (cl + cr) * 0.5f;
            R = max(sqrt(geo::len2(cl - C)) + l[7], sqrt(geo::len2(cr - C)) + r[7]);
        }
        w[0] = N.c[0], w[1] = N.c[1], w[2] = N.c[2], w[3] = C.c[0], w[4] = C.c[1], w[5] = C.c[2], w[6] = A, w[7] = R;
    }
}
}  // namespace detail

TREADLE_FUNC int32 mesh_build_serial(uint64 id) {
    mesh_t& m = *(mesh_t*)id;
    detail::mesh_update(m);
    const int32 n = bvh_build_serial(id);
    if (m.winding) detail::mesh_winding_refit(m);
    return n;
}

TREADLE_FUNC int32 mesh_refit_serial(uint64 id) {
    mesh_t& m = *(mesh_t*)id;
    detail::mesh_update(m);
    const int32 n = bvh_refit_serial(id);
    if (m.winding) detail::mesh_winding_refit(m);
    return n;
}

}  // namespace treadle
