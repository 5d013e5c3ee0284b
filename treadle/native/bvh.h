// Bounding volume hierarchies: the tree layout, the builder and refit (run from one-thread Treadle kernels by
// treadle/_src/geometry/bvh.py), and the in-kernel queries `bvh_query_aabb/ray/sphere/capsule` + `bvh_query_next`.
//
// Layout: nodes are stored breadth first (children after their parent, so refit is one reverse sweep). A node holds
// its bounds and two ints: internal nodes the indices of their children, leaves `first` and `-count` of a range of
// leaf slots. `items[slot]` is the item index of a slot and `slot_bounds` holds the item bounds in slot order, so a
// leaf's items are tested from contiguous memory. A kernel refers to a tree by the address of its `bvh_t`.
//
// Builder: top-down, breadth first, binned SAH (16 bins on the widest centroid axis) or object median; past depth
// 32 it switches to object-median splits so that the depth, and with it the traversal stack, stays below 64. Items
// with groups are first sorted by group (Python); nodes spanning several groups split at a group boundary, and the
// first node that holds exactly one group is that group's root.
#pragma once
#include "geometry.h"

namespace treadle {

struct bvh_node_t {
    float32 lo[3];
    int32 a;  // internal: left child; leaf: first slot
    float32 hi[3];
    int32 b;  // internal: right child; leaf: -(number of slots)
};
static_assert(sizeof(bvh_node_t) == 32, "bvh_node_t layout");

struct bvh_t {
    bvh_node_t* nodes;          // capacity 2 * num_items
    int32* items;               // slot -> item
    float32* slot_bounds;       // 6 floats per slot (lo, hi), in slot order
    const float32* item_bounds; // 6 floats per item, in item order (written by Python before build / refit)
    int32* scratch;             // builder: 2 ints per node (range of the node being built)
    float32* centroids;         // builder: 3 floats per item
    const int32* group_ids;     // sorted distinct group ids (null without groups)
    const int32* group_starts;  // first slot of each group (+ total at the end)
    int32* group_roots;         // root node of each group
    int32 num_groups;
    int32 num_nodes;
    int32 num_items;
    int32 leaf_size;
    int32 constructor;          // 0: SAH, 1: median
    int32 pad;
};

// ------------------------------------------------------------------------------------------------ build
namespace detail {
TREADLE_FUNC float32 bvh_area(const float32* lo, const float32* hi) {
    const float32 dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    return dx < 0.0f ? 0.0f : dx * dy + dy * dz + dz * dx;
}
TREADLE_FUNC void bvh_empty_box(float32* lo, float32* hi) {
    for (int a = 0; a < 3; ++a)
        lo[a] = 3.0e38f, hi[a] = -3.0e38f;
}
TREADLE_FUNC void bvh_grow(float32* lo, float32* hi, const float32* b) {
    for (int a = 0; a < 3; ++a) {
        lo[a] = b[a] < lo[a] ? b[a] : lo[a];
        hi[a] = b[3 + a] > hi[a] ? b[3 + a] : hi[a];
    }
}
TREADLE_FUNC float32 bvh_centroid(const float32* b, int a) { return 0.5f * (b[a] + b[3 + a]); }
TREADLE_FUNC float32 bvh_c(const bvh_t& t, int32 item, int a) { return t.centroids[3 * (int64)item + a]; }

// Reorder items[s, e) so that the k-th smallest centroid along `axis` sits at s + k (quickselect).
TREADLE_FUNC void bvh_select(const bvh_t& t, int32* items, int32 s, int32 e, int32 k, int axis) {
    int32 lo = s, hi = e - 1;
    const int32 target = s + k;
    while (hi > lo) {
        const float32 pivot = bvh_c(t, items[(lo + hi) / 2], axis);
        int32 i = lo, j = hi;
        while (i <= j) {
            while (bvh_c(t, items[i], axis) < pivot) ++i;
            while (bvh_c(t, items[j], axis) > pivot) --j;
            if (i <= j) {
                const int32 t = items[i];
                items[i] = items[j], items[j] = t;
                ++i, --j;
            }
        }
        if (target <= j)
            hi = j;
        else if (target >= i)
            lo = i;
        else
            return;
    }
}

// Split items[s, e) (more than one item, one group): returns the first index of the right half.
TREADLE_FUNC int32 bvh_split(bvh_t& t, int32 s, int32 e, bool median) {
    const float32* ib = t.item_bounds;
    float32 clo[3], chi[3];
    for (int a = 0; a < 3; ++a)
        clo[a] = 3.0e38f, chi[a] = -3.0e38f;
    for (int32 i = s; i < e; ++i) {
        const float32* c = t.centroids + 3 * (int64)t.items[i];
        for (int a = 0; a < 3; ++a) {
            clo[a] = c[a] < clo[a] ? c[a] : clo[a];
            chi[a] = c[a] > chi[a] ? c[a] : chi[a];
        }
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a)
        if (chi[a] - clo[a] > chi[axis] - clo[axis]) axis = a;
    const float32 extent = chi[axis] - clo[axis];
    const int32 mid = s + (e - s) / 2;
    if (!(extent > 0.0f)) return mid;  // all centroids equal: split by count (order is arbitrary)
    if (median) {
        bvh_select(t, t.items, s, e, mid - s, axis);
        return mid;
    }
    const int NB = 16;
    int32 count[NB];
    float32 blo[NB][3], bhi[NB][3];
    for (int k = 0; k < NB; ++k) {
        count[k] = 0;
        bvh_empty_box(blo[k], bhi[k]);
    }
    const float32 scale = (float32)NB / extent;
    for (int32 i = s; i < e; ++i) {
        const float32* b = ib + 6 * (int64)t.items[i];
        int k = (int)((bvh_c(t, t.items[i], axis) - clo[axis]) * scale);
        k = k < 0 ? 0 : (k >= NB ? NB - 1 : k);
        ++count[k];
        bvh_grow(blo[k], bhi[k], b);
    }
    // cost of splitting after bin k: area(left) * n(left) + area(right) * n(right)
    float32 right_cost[NB];
    float32 lo[3], hi[3];
    bvh_empty_box(lo, hi);
    int32 n = 0;
    for (int k = NB - 1; k > 0; --k) {
        n += count[k];
        float32 b[6] = {blo[k][0], blo[k][1], blo[k][2], bhi[k][0], bhi[k][1], bhi[k][2]};
        if (count[k]) bvh_grow(lo, hi, b);
        right_cost[k] = bvh_area(lo, hi) * (float32)n;
    }
    bvh_empty_box(lo, hi);
    n = 0;
    int best = -1;
    float32 best_cost = 3.0e38f;
    for (int k = 0; k < NB - 1; ++k) {
        n += count[k];
        float32 b[6] = {blo[k][0], blo[k][1], blo[k][2], bhi[k][0], bhi[k][1], bhi[k][2]};
        if (count[k]) bvh_grow(lo, hi, b);
        if (n == 0 || n == e - s) continue;
        const float32 cost = bvh_area(lo, hi) * (float32)n + right_cost[k + 1];
        if (cost < best_cost) best_cost = cost, best = k;
    }
    if (best < 0) return mid;
    int32 i = s, j = e - 1;
    while (i <= j) {  // partition: bins <= best first
        int k = (int)((bvh_c(t, t.items[i], axis) - clo[axis]) * scale);
        k = k < 0 ? 0 : (k >= NB ? NB - 1 : k);
        if (k <= best) {
            ++i;
        } else {
            const int32 tmp = t.items[i];
            t.items[i] = t.items[j], t.items[j] = tmp;
            --j;
        }
    }
    return (i > s && i < e) ? i : mid;
}

// Index of the group holding slot s (group_starts is sorted).
TREADLE_FUNC int32 bvh_group_of(const bvh_t& t, int32 s) {
    int32 lo = 0, hi = t.num_groups - 1;
    while (lo < hi) {
        const int32 m = (lo + hi + 1) / 2;
        if (t.group_starts[m] <= s)
            lo = m;
        else
            hi = m - 1;
    }
    return lo;
}
}  // namespace detail

// Refit: slot bounds from the item bounds, then every node from its slots or children (one reverse sweep).
TREADLE_FUNC int32 bvh_refit_serial(uint64 id) {
    bvh_t& t = *(bvh_t*)id;
    for (int32 s = 0; s < t.num_items; ++s) {
        const float32* b = t.item_bounds + 6 * (int64)t.items[s];
        for (int k = 0; k < 6; ++k)
            t.slot_bounds[6 * (int64)s + k] = b[k];
    }
    for (int32 n = t.num_nodes - 1; n >= 0; --n) {
        bvh_node_t& node = t.nodes[n];
        detail::bvh_empty_box(node.lo, node.hi);
        if (node.b < 0) {
            for (int32 s = node.a; s < node.a - node.b; ++s)
                detail::bvh_grow(node.lo, node.hi, t.slot_bounds + 6 * (int64)s);
        } else {
            for (int k = 0; k < 2; ++k) {
                const bvh_node_t& ch = t.nodes[k == 0 ? node.a : node.b];
                const float32 b[6] = {ch.lo[0], ch.lo[1], ch.lo[2], ch.hi[0], ch.hi[1], ch.hi[2]};
                detail::bvh_grow(node.lo, node.hi, b);
            }
        }
    }
    return t.num_nodes;
}

// Build the tree over `items` (initialised by the caller, sorted by group when grouped); returns the node count.
TREADLE_FUNC int32 bvh_build_serial(uint64 id) {
    bvh_t& t = *(bvh_t*)id;
    const int32 n = t.num_items;
    t.num_nodes = 0;
    if (n <= 0) return 0;
    const int32 leaf = t.leaf_size > 0 ? t.leaf_size : 1;
    for (int32 i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a)
            t.centroids[3 * (int64)i + a] = detail::bvh_centroid(t.item_bounds + 6 * (int64)i, a);
    int32* range = t.scratch;  // per node: start, end (depth is implied by the breadth-first order)
    int32 count = 1, level_end = 1, depth = 0;
    range[0] = 0, range[1] = n;
    for (int32 g = 0; g < t.num_groups; ++g)
        t.group_roots[g] = -1;
    for (int32 i = 0; i < count; ++i) {
        if (i == level_end) ++depth, level_end = count;
        const int32 s = range[2 * i], e = range[2 * i + 1];
        int32 split = -1;
        bool single_group = true;
        if (t.num_groups > 1) {
            const int32 g0 = detail::bvh_group_of(t, s), g1 = detail::bvh_group_of(t, e - 1);
            if (g0 != g1) {
                single_group = false;
                split = t.group_starts[(g0 + g1 + 1) / 2];
            } else if (t.group_starts[g0] == s && t.group_starts[g0 + 1] == e) {
                t.group_roots[g0] = i;
            }
        } else if (t.num_groups == 1) {
            t.group_roots[0] = 0;
        }
        bvh_node_t& node = t.nodes[i];
        if (single_group && e - s <= leaf) {
            node.a = s, node.b = -(e - s);
            continue;
        }
        if (single_group) split = detail::bvh_split(t, s, e, t.constructor == 1 || depth >= 32);
        node.a = count, node.b = count + 1;
        range[2 * count] = s, range[2 * count + 1] = split;
        range[2 * count + 2] = split, range[2 * count + 3] = e;
        count += 2;
    }
    t.num_nodes = count;
    bvh_refit_serial(id);
    return count;
}

// ------------------------------------------------------------------------------------------------ queries
enum { BVH_QUERY_AABB = 0, BVH_QUERY_RAY = 1, BVH_QUERY_SPHERE = 2, BVH_QUERY_CAPSULE = 3, BVH_QUERY_MESH_SPHERE = 4 };

struct bvh_query_t {
    const bvh_t* bvh;
    const void* mesh;       // mesh sphere queries: the mesh whose triangles get the exact test
    int32 kind;
    float32 radius;
    vec_t<3, float32> a, b; // box lo/hi; ray or capsule start/dir; sphere center
    geo::ray_pre ray;       // ray and capsule queries
    int32 cur, end;         // slots of the current leaf still to test
    int32 top;              // traversal stack
    int32 stack[64];
};

// Exact test of a mesh face against a sphere (defined in mesh.h).
TREADLE_FUNC bool mesh_face_in_sphere(const void* mesh, int32 face, const vec_t<3, float32>& c, float32 r);

namespace detail {
TREADLE_FUNC bvh_query_t bvh_query_start(uint64 id, int32 kind, const vec_t<3, float32>& a,
                                         const vec_t<3, float32>& b, float32 radius, int32 root) {
    bvh_query_t q;
    q.bvh = (const bvh_t*)id;
    q.mesh = nullptr;
    q.kind = kind;
    q.radius = radius > 0.0f ? radius : 0.0f;
    q.a = a, q.b = b;
    q.ray = geo::prepare_ray(a, b);
    q.cur = q.end = 0;
    q.top = 0;
    if (q.bvh != nullptr && q.bvh->num_nodes > 0) {
        q.stack[0] = ~((root >= 0 && root < q.bvh->num_nodes) ? root : 0);  // untested: see bvh_query_next
        q.top = 1;
    }
    return q;
}

// Does the query reach the box? (ray and capsule queries: only up to max_dist)
TREADLE_FUNC bool bvh_query_hits(const bvh_query_t& q, const float32* lo, const float32* hi, float32 max_dist) {
    switch (q.kind) {
    case BVH_QUERY_AABB:
        return geo::box_overlap(lo, hi, q.a, q.b);
    case BVH_QUERY_RAY:
        return geo::ray_box(lo, hi, q.ray, max_dist) >= 0.0f;
    case BVH_QUERY_CAPSULE:
        return geo::ray_box(lo, hi, q.ray, max_dist, q.radius) >= 0.0f;
    default:  // spheres
        return geo::box_dist2(lo, hi, q.a) <= q.radius * q.radius;
    }
}
}  // namespace detail

template <typename R = int32>
TREADLE_FUNC bvh_query_t bvh_query_aabb(uint64 id, const vec_t<3, float32>& low, const vec_t<3, float32>& high,
                                        R root = -1) {
    return detail::bvh_query_start(id, BVH_QUERY_AABB, low, high, 0.0f, (int32)root);
}

template <typename R = int32>
TREADLE_FUNC bvh_query_t bvh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir,
                                       R root = -1) {
    return detail::bvh_query_start(id, BVH_QUERY_RAY, start, dir, 0.0f, (int32)root);
}

template <typename F, typename R = int32>
TREADLE_FUNC bvh_query_t bvh_query_sphere(uint64 id, const vec_t<3, float32>& center, F radius, R root = -1) {
    return detail::bvh_query_start(id, BVH_QUERY_SPHERE, center, center, float32(radius), (int32)root);
}

template <typename F, typename R = int32>
TREADLE_FUNC bvh_query_t bvh_query_capsule(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir,
                                           F radius, R root = -1) {
    return detail::bvh_query_start(id, BVH_QUERY_CAPSULE, start, dir, float32(radius), (int32)root);
}

// Traversal: a node on the stack has already been found to reach the query (its parent tested both children
// together, which reads the sibling pair from adjacent memory), except the start node, pushed as ~index and tested
// when popped (its test needs max_dist, which only `next` knows).
template <typename F = float32>
TREADLE_FUNC bool bvh_query_next(bvh_query_t& q, int32& index, F max_dist_in = F(__builtin_inff())) {
    const bvh_t* t = q.bvh;
    if (t == nullptr) return false;
    const float32 max_dist = float32(max_dist_in);
    while (true) {
        while (q.cur < q.end) {
            const int32 s = q.cur++;
            const float32* b = t->slot_bounds + 6 * (int64)s;
            if (!detail::bvh_query_hits(q, b, b + 3, max_dist)) continue;
            const int32 item = t->items[s];
            if (q.kind == BVH_QUERY_MESH_SPHERE && !mesh_face_in_sphere(q.mesh, item, q.a, q.radius)) continue;
            index = item;
            return true;
        }
        if (q.top == 0) return false;
        int32 ni = q.stack[--q.top];
        if (ni < 0) {
            ni = ~ni;
            if (!detail::bvh_query_hits(q, t->nodes[ni].lo, t->nodes[ni].hi, max_dist)) continue;
        }
        const bvh_node_t& node = t->nodes[ni];
        if (node.b < 0) {
            q.cur = node.a, q.end = node.a - node.b;
            continue;
        }
        const bvh_node_t& l = t->nodes[node.a];
        const bvh_node_t& r = t->nodes[node.b];
        const bool hit_l = detail::bvh_query_hits(q, l.lo, l.hi, max_dist);
        const bool hit_r = detail::bvh_query_hits(q, r.lo, r.hi, max_dist);
        if (hit_r && q.top < 64) q.stack[q.top++] = node.b;
        if (hit_l && q.top < 64) q.stack[q.top++] = node.a;
    }
}

template <typename G> TREADLE_FUNC int32 bvh_get_group_root(uint64 id, G group_in) {
    const bvh_t* t = (const bvh_t*)id;
    const int32 group = (int32)group_in;
    if (t == nullptr || t->num_groups <= 0 || t->group_ids == nullptr) return -1;
    int32 lo = 0, hi = t->num_groups - 1;
    while (lo <= hi) {
        const int32 m = (lo + hi) / 2;
        if (t->group_ids[m] == group) return t->group_roots[m];
        if (t->group_ids[m] < group)
            lo = m + 1;
        else
            hi = m - 1;
    }
    return -1;
}

}  // namespace treadle
