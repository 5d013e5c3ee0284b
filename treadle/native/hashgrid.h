// Hash grid neighbour queries (`hash_grid_query`, `hash_grid_query_next`, `hash_grid_point_id`).
//
// The grid itself is built by Python (treadle/_src/geometry/hash_grid.py) from Treadle kernels: points are binned
// into cells of width `cell_width` (the build radius), cell coordinates wrap around modulo (dim_x, dim_y, dim_z),
// points are sorted by cell and each cell records its [start, end) range in the sorted order. Sorted copies of the
// points (and their groups) sit next to the ranges so that a query reads memory in cell order.
//
// A kernel refers to a grid by its id: the address of a `hash_grid_t` that the Python object owns.
// Queries visit the cells overlapped by the box [p - r, p + r] (each physical cell once, even when the box spans a
// whole period of the wrapped grid) and skip the candidates that cannot be neighbours: those farther than r from p
// in the grid's periodic metric (period dim * cell_width per axis; a small relative slack keeps every point that a
// caller's own `length(p - q) <= r` test would accept). The periodic metric keeps the reference behaviour that
// points of aliased cells are candidates, which periodic-domain code relies on, while a plain Euclidean test in the
// caller still sees exactly the points within r.
#pragma once
#include "vec.h"

namespace treadle {

struct hash_grid_t {
    int32 dim[3];
    int32 num_points;           // points in the last build (0 before any build)
    float64 cell_width;
    float64 inv_cell_width;
    const int32* point_ids;     // sorted position -> original point index
    const int32* cell_starts;   // per cell: first sorted position (dim_x * dim_y * dim_z entries)
    const int32* cell_ends;     // per cell: one past the last sorted position (start == end: empty)
    const void* sorted_points;  // vec3 of `dtype` in sorted order
    const int32* sorted_groups; // group of each sorted point, or null when built without groups
    int32 dtype;                // 0: float16, 1: float32, 2: float64
    int32 reserved;             // points the buffers hold (hash_grid_point_id is -1 when nothing was reserved)
};

namespace detail {
// Arithmetic type of a query: half computes in float.
template <typename T> struct hash_compute { typedef T type; };
template <> struct hash_compute<half> { typedef float32 type; };

TREADLE_FUNC int32 hash_wrap(int32 i, int32 n) {
    const int32 m = i % n;
    return m < 0 ? m + n : m;
}

// floor(x) as an int, clamped far away from overflow.
template <typename C> TREADLE_FUNC int32 hash_cell_coord(C x) {
    const double d = (double)x;
    if (!(d > -1.0e9)) return -1000000000;
    if (d > 1.0e9) return 1000000000;
    const int32 i = (int32)d;
    return (d < (double)i) ? i - 1 : i;
}
}  // namespace detail

template <typename T> struct hash_grid_query_t {
    typedef typename detail::hash_compute<T>::type C;
    const hash_grid_t* grid;
    C px, py, pz, r2;
    C period[3], inv_period[3];
    int32 lo[3], hi[3];   // cell range (unwrapped), or [0, dim) on an axis that spans a period
    int32 cell[3];        // current cell
    int32 cur, end;       // remaining sorted positions of the current cell
    int32 group;
    int32 use_group;
    int32 done;
};

namespace detail {
template <typename T> TREADLE_FUNC void hash_grid_enter_cell(hash_grid_query_t<T>& q) {
    const hash_grid_t& g = *q.grid;
    const int32 x = hash_wrap(q.cell[0], g.dim[0]), y = hash_wrap(q.cell[1], g.dim[1]),
                z = hash_wrap(q.cell[2], g.dim[2]);
    const int64 c = ((int64)z * g.dim[1] + y) * g.dim[0] + x;
    q.cur = g.cell_starts[c];
    q.end = g.cell_ends[c];
}

// Odometer over the cell range, x fastest; false when the range is exhausted.
template <typename T> TREADLE_FUNC bool hash_grid_advance_cell(hash_grid_query_t<T>& q) {
    for (int a = 0; a < 3; ++a) {
        if (q.cell[a] < q.hi[a]) {
            ++q.cell[a];
            return true;
        }
        q.cell[a] = q.lo[a];
    }
    return false;
}

// The periodic image of d closest to 0.
template <typename C> TREADLE_FUNC C hash_min_image(C d, C period, C inv_period) {
    return d - period * floor(d * inv_period + C(0.5));
}

template <typename C> TREADLE_FUNC void hash_load_point(const hash_grid_t& g, int32 s, C& x, C& y, C& z) {
    if (g.dtype == 1) {
        const float32* p = (const float32*)g.sorted_points + 3 * (int64)s;
        x = C(p[0]), y = C(p[1]), z = C(p[2]);
    } else if (g.dtype == 2) {
        const float64* p = (const float64*)g.sorted_points + 3 * (int64)s;
        x = C(p[0]), y = C(p[1]), z = C(p[2]);
    } else {
        const half* p = (const half*)g.sorted_points + 3 * (int64)s;
        x = C(float32(p[0])), y = C(float32(p[1])), z = C(float32(p[2]));
    }
}
}  // namespace detail

template <typename T, typename R>
TREADLE_FUNC hash_grid_query_t<T> hash_grid_query(uint64 id, const vec_t<3, T>& p, R radius, int32 group) {
    typedef typename detail::hash_compute<T>::type C;
    hash_grid_query_t<T> q = {};
    q.grid = (const hash_grid_t*)id;
    q.done = 1;
    if (q.grid == nullptr || q.grid->num_points <= 0) return q;
    const hash_grid_t& g = *q.grid;
    const C r0 = C(float64(radius)), r = r0 > C(0) ? r0 : C(0);
    q.px = C(p.c[0]), q.py = C(p.c[1]), q.pz = C(p.c[2]);
    // Slack of a few ulps (relative) so that rounding in the caller's own distance test never drops a point.
    q.r2 = r * r * C(1.00001) + C(1e-30);
    const C pc[3] = {q.px, q.py, q.pz};
    const C inv = C(g.inv_cell_width);
    for (int a = 0; a < 3; ++a) {
        int32 lo = detail::hash_cell_coord((pc[a] - r) * inv);
        int32 hi = detail::hash_cell_coord((pc[a] + r) * inv);
        if ((int64)hi - (int64)lo + 1 >= g.dim[a]) lo = 0, hi = g.dim[a] - 1;
        q.lo[a] = lo, q.hi[a] = hi, q.cell[a] = lo;
        q.period[a] = C(g.cell_width * g.dim[a]);
        q.inv_period[a] = C(1.0 / (g.cell_width * g.dim[a]));
    }
    q.group = group;
    q.use_group = g.sorted_groups != nullptr ? 1 : 0;
    q.done = 0;
    detail::hash_grid_enter_cell(q);
    return q;
}

template <typename T, typename R>
TREADLE_FUNC hash_grid_query_t<T> hash_grid_query(uint64 id, const vec_t<3, T>& p, R radius) {
    hash_grid_query_t<T> q = hash_grid_query(id, p, radius, 0);
    q.use_group = 0;
    return q;
}

template <typename T> TREADLE_FUNC bool hash_grid_query_next(hash_grid_query_t<T>& q, int32& index) {
    typedef typename detail::hash_compute<T>::type C;
    if (q.done) return false;
    const hash_grid_t& g = *q.grid;
    while (true) {
        while (q.cur < q.end) {
            const int32 s = q.cur++;
            if (q.use_group && g.sorted_groups[s] != q.group) continue;
            C x, y, z;
            detail::hash_load_point(g, s, x, y, z);
            const C dx = detail::hash_min_image(x - q.px, q.period[0], q.inv_period[0]);
            const C dy = detail::hash_min_image(y - q.py, q.period[1], q.inv_period[1]);
            const C dz = detail::hash_min_image(z - q.pz, q.period[2], q.inv_period[2]);
            if (dx * dx + dy * dy + dz * dz <= q.r2) {
                index = g.point_ids[s];
                return true;
            }
        }
        if (!detail::hash_grid_advance_cell(q)) {
            q.done = 1;
            return false;
        }
        detail::hash_grid_enter_cell(q);
    }
}

TREADLE_FUNC int32 hash_grid_point_id(uint64 id, int32 index) {
    const hash_grid_t* g = (const hash_grid_t*)id;
    if (g == nullptr || g->reserved <= 0 || index < 0 || index >= g->num_points) return -1;
    return g->point_ids[index];
}

}  // namespace treadle
