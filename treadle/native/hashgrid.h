// Hash grid neighbour queries (`hash_grid_query`, `hash_grid_query_next`, `hash_grid_point_id`).
//
// The grid is built by Python (treadle/_src/geometry/hash_grid.py) from Treadle kernels: points are binned into cells
// of width `cell_width` (the build radius), cell coordinates wrap around modulo (dim_x, dim_y, dim_z), cells are
// numbered x fastest, points are sorted by cell and each non-empty cell records its [start, end) range in the sorted
// order (interleaved in one array; empty cells hold [0, 0)). Sorted copies of the points (and groups) sit next to the
// ranges, coordinates stored axis by axis, so that a query reads memory in cell order and its distance filter
// vectorizes. A kernel refers to a grid by its id: the address of a `hash_grid_t` owned by the Python object.
//
// A query walks rows of cells, not cells: cells along x are consecutive in the sorted order, so the cells of one row
// (two runs when the row wraps around) are one contiguous range of sorted points. Rows that the query sphere misses
// are skipped and each row is trimmed to the cells the sphere overlaps. Candidates are filtered 32 at a time without
// branches on the (unpredictable) distance test; the survivors are bits of a mask handed out one by one.
//
// What a query returns: every point within r of p in the grid's periodic metric (period dim * cell_width per axis),
// plus a small relative slack so that a caller's own `length(p - q) <= r` test never sees fewer points. The periodic
// metric keeps the reference behaviour that points of aliased cells are candidates (periodic-domain code relies on
// it), while a plain Euclidean test in the caller still sees exactly the points within r.
#pragma once
#include "array.h"
#include "vec.h"

// The query's helpers are forced inline so that the query state stays in registers inside the caller's loop.
#if defined(TREADLE_CUDA)
#define TREADLE_HASH_INLINE __host__ __device__ __forceinline__
#else
#define TREADLE_HASH_INLINE inline __attribute__((always_inline))
#endif

namespace treadle {

struct hash_grid_t {
    int32 dim[3];
    int32 num_points;           // points in the last build (0 before any build)
    float64 cell_width;
    float64 inv_cell_width;
    const int32* point_ids;     // sorted position -> original point index
    const int32* cell_ranges;   // per cell: [start, end) in the sorted order, interleaved (2 * cells entries)
    const void* sorted_points;  // coordinates of `dtype` in sorted order, by axis: x[0..stride), y[...], z[...]
                                // (stride >= num_points + 32: filters read whole batches of 32)
    int64 stride;
    const int32* sorted_groups; // group of each sorted point, or null when built without groups
    int32 dtype;                // 0: float16, 1: float32, 2: float64
    int32 reserved;             // points the buffers hold (hash_grid_point_id is -1 when nothing was reserved)
    float64 lower[3], upper[3]; // bounding box of the points (decides whether a query can meet periodic images)
};

namespace detail {
// Arithmetic type of a query: half computes in float.
template <typename T> struct hash_compute { typedef T type; };
template <> struct hash_compute<half> { typedef float32 type; };
template <typename T> struct hash_dtype_code { static constexpr int32 value = 1; };
template <> struct hash_dtype_code<half> { static constexpr int32 value = 0; };
template <> struct hash_dtype_code<float64> { static constexpr int32 value = 2; };

TREADLE_FUNC int32 hash_wrap(int64 i, int32 n) {
    const int32 m = (int32)i % n;  // |i| <= 1e9 (hash_cell_coord clamps): 32-bit division suffices
    return m < 0 ? m + n : m;
}

// (w + d) mod n for 0 <= w < n, 0 <= d < n.
TREADLE_FUNC int32 hash_add_wrap(int32 w, int32 d, int32 n) {
    const int32 s = w + d;
    return s >= n ? s - n : s;
}

// floor(x) as an integer, clamped far away from overflow (NaN goes to the low end).
TREADLE_FUNC int64 hash_cell_coord(float64 x) {
    if (!(x > -1.0e9)) return -1000000000;
    if (x > 1.0e9) return 1000000000;
    return (int64)floor(x);
}

// Distance from coordinate x to the cell [c w, (c + 1) w].
TREADLE_FUNC float64 hash_axis_gap(float64 x, int64 c, float64 w) {
    const float64 lo = (float64)c * w, hi = lo + w;
    return x < lo ? lo - x : (x > hi ? x - hi : 0.0);
}

// Index of the lowest set bit (x != 0).
TREADLE_FUNC int32 hash_ctz(uint32 x) {
#if defined(__CUDA_ARCH__)
    return __ffs((int)x) - 1;
#else
    return __builtin_ctz(x);
#endif
}

// The periodic image of d closest to 0.
template <typename C> TREADLE_FUNC C hash_min_image(C d, C period) {
    return d - period * floor(d / period + C(0.5));
}
}  // namespace detail

template <typename T> struct hash_grid_query_t {
    typedef typename detail::hash_compute<T>::type C;
    const hash_grid_t* grid;
    float32 pf[3];        // the query point relative to the box's first cell, radius^2 and cell size (row trimming)
    float32 rf2, w, inv_w, trim_y, trim_z;
    C p[3];               // and in the compute precision, for the distance filter
    C r2;
    C period[3];
    C half_period;        // smallest half period: only larger offsets can hide a periodic image
    int32 images;         // whether some point is farther than half a period from p (else no image tests)
    int64 lo[3];          // first cell of the box on each axis (unwrapped)
    int32 wlo[3];         // and wrapped
    int32 n[3];           // cells of the box on each axis (== dim: the axis is covered whole)
    int32 j, k;           // current row: cells lo[1] + j, lo[2] + k
    int32 x0, nx;         // current row's first wrapped x cell and length, after trimming
    int32 seg;            // next run of the current row (0, 1; 2: row done)
    int32 cur, end;       // unfiltered sorted positions of the current run
    int32 base;           // sorted position of bit 0 of the masks
    uint32 near, image;   // filtered candidates waiting to be handed out (see hash_grid_fill)
    int32 group;
    int32 use_group;
    int32 generic;        // the grid's points are not of type T
    int32 done;
};

namespace detail {
template <typename C> TREADLE_FUNC void hash_load_point(const hash_grid_t& g, int32 s, C* x) {
    for (int a = 0; a < 3; ++a) {
        const int64 i = a * g.stride + s;
        if (g.dtype == 1)
            x[a] = C(((const float32*)g.sorted_points)[i]);
        else if (g.dtype == 2)
            x[a] = C(((const float64*)g.sorted_points)[i]);
        else
            x[a] = C(float32(((const half*)g.sorted_points)[i]));
    }
}

// Sorted range covered by cells [c, c + n) of one row (consecutive cell numbers): from the first non-empty cell's
// start to the last non-empty cell's end.
TREADLE_HASH_INLINE void hash_run_range(const int32* ranges, int64 c, int32 n, int32& cur, int32& end) {
    cur = 0, end = 0;
    int32 i = 0;
    for (; i < n; ++i) {
        const int32 s = ranges[2 * (c + i)], e = ranges[2 * (c + i) + 1];
        if (e > s) {
            cur = s, end = e;
            break;
        }
    }
    for (int32 m = n - 1; m > i; --m) {
        const int32 s = ranges[2 * (c + m)], e = ranges[2 * (c + m) + 1];
        if (e > s) {
            end = e;
            break;
        }
    }
}

// Trim the current row (j, k) to the x cells the query sphere overlaps; false if it misses the row. Float math
// with a margin: trimming only narrows the box's cell range (computed exactly in float64), so it must never cut a
// cell that the sphere touches.
template <typename T> TREADLE_HASH_INLINE bool hash_grid_trim_row(hash_grid_query_t<T>& q) {
    const hash_grid_t& g = *q.grid;
    int64 lo = q.lo[0], hi = q.lo[0] + q.n[0] - 1;
    if (q.n[1] < g.dim[1] || q.n[2] < g.dim[2]) {
        const float32 w = q.w, inv = q.inv_w;
        const float32 y = q.pf[1] - (float32)q.j * w, z = q.pf[2] - (float32)q.k * w;
        const float32 dy = max(max(-y, y - w), 0.0f) * q.trim_y;  // gap to the row's cell (0 if the axis is whole)
        const float32 dz = max(max(-z, z - w), 0.0f) * q.trim_z;
        const float32 rx2 = q.rf2 - dy * dy - dz * dz;
        if (rx2 < 0.0f) return false;
        const float32 rx = sqrt(rx2) * 1.0001f + 1e-4f * w;
        const int64 tlo = (int64)floor((q.pf[0] - rx) * inv), thi = (int64)floor((q.pf[0] + rx) * inv);
        if (q.n[0] < g.dim[0]) {
            lo = q.lo[0] + (tlo > 0 ? tlo : 0);
            hi = q.lo[0] + (thi < q.n[0] - 1 ? thi : q.n[0] - 1);
        }
    }
    const int64 n = hi - lo + 1;
    if (n >= g.dim[0]) {
        q.x0 = 0, q.nx = g.dim[0];
    } else {
        q.nx = (int32)n;
        q.x0 = hash_add_wrap(q.wlo[0], (int32)(lo - q.lo[0]), g.dim[0]);
    }
    return q.nx > 0;
}

// Load the next non-empty run (row by row); false when the rows are exhausted.
template <typename T> TREADLE_HASH_INLINE bool hash_grid_next_run(hash_grid_query_t<T>& q) {
    const hash_grid_t& g = *q.grid;
    while (true) {
        if (q.seg >= 2 || (q.seg == 1 && q.x0 + q.nx <= g.dim[0])) {  // row done: next one
            q.seg = 0;
            if (++q.j >= q.n[1]) {
                q.j = 0;
                if (++q.k >= q.n[2]) return false;
            }
        }
        if (q.seg == 0 && !hash_grid_trim_row(q)) {
            q.seg = 2;
            continue;
        }
        const int32 y = hash_add_wrap(q.wlo[1], q.j, g.dim[1]), z = hash_add_wrap(q.wlo[2], q.k, g.dim[2]);
        const int64 row = ((int64)z * g.dim[1] + y) * g.dim[0];
        const int32 first = q.seg == 0 ? q.x0 : 0;
        const int32 count = q.seg == 0 ? (q.x0 + q.nx <= g.dim[0] ? q.nx : g.dim[0] - q.x0) : q.x0 + q.nx - g.dim[0];
        ++q.seg;
        hash_run_range(g.cell_ranges, row + first, count, q.cur, q.end);
        if (q.end > q.cur) return true;
    }
}

// Filter the next batch (up to 32 candidates) of the current run into bit masks: `near` marks points within r,
// `image` points farther than r that may still be periodic images (an offset beyond half a period on some axis),
// tested exactly when handed out. The loops have no branches, so they vectorize.
template <typename T> TREADLE_HASH_INLINE void hash_grid_fill(hash_grid_query_t<T>& q) {
    typedef typename detail::hash_compute<T>::type C;
    const hash_grid_t& g = *q.grid;
    const int32 s0 = q.cur;
    const int32 n = q.end - s0 > 32 ? 32 : q.end - s0;
    const C px = q.p[0], py = q.p[1], pz = q.p[2], r2 = q.r2, hp2 = q.half_period * q.half_period;
    uint32 near = 0, image = 0;
    if (!q.generic && !detail::is_same<T, half>::value) {
        // Always 32 lanes (the arrays are padded), so the loops vectorize without a remainder; lanes >= n are
        // masked off below.
        const T* xs = (const T*)g.sorted_points + s0;
        const T* ys = xs + g.stride;
        const T* zs = ys + g.stride;
        if (q.images) {
            for (int32 i = 0; i < 32; ++i) {
                const C dx = C(xs[i]) - px, dy = C(ys[i]) - py, dz = C(zs[i]) - pz;
                const C ax = dx * dx, ay = dy * dy, az = dz * dz;
                near |= (uint32)(ax + ay + az <= r2) << i;
                image |= (uint32)((ax > hp2) | (ay > hp2) | (az > hp2)) << i;
            }
        } else {
            for (int32 i = 0; i < 32; ++i) {
                const C dx = C(xs[i]) - px, dy = C(ys[i]) - py, dz = C(zs[i]) - pz;
                near |= (uint32)(dx * dx + dy * dy + dz * dz <= r2) << i;
            }
        }
        const uint32 valid = n == 32 ? 0xffffffffu : (1u << n) - 1u;
        near &= valid, image &= valid;
    } else {
        for (int32 i = 0; i < n; ++i) {
            C x[3];
            hash_load_point(g, s0 + i, x);
            const C dx = x[0] - px, dy = x[1] - py, dz = x[2] - pz;
            const C ax = dx * dx, ay = dy * dy, az = dz * dz;
            near |= (uint32)(ax + ay + az <= r2) << i;
            image |= (uint32)((ax > hp2) | (ay > hp2) | (az > hp2)) << i;
        }
    }
    if (q.use_group) {
        uint32 same = 0;
        for (int32 i = 0; i < n; ++i)
            same |= (uint32)(g.sorted_groups[s0 + i] == q.group) << i;
        near &= same, image &= same;
    }
    q.base = s0;
    q.near = near;
    q.image = image & ~near;
    q.cur = s0 + n;
}

// Exact periodic (minimum image) distance test of sorted point s.
template <typename T> TREADLE_FUNC bool hash_grid_image_near(const hash_grid_query_t<T>& q, int32 s) {
    typedef typename detail::hash_compute<T>::type C;
    C x[3];
    hash_load_point(*q.grid, s, x);
    C d2 = C(0);
    for (int a = 0; a < 3; ++a) {
        const C d = hash_min_image(x[a] - q.p[a], q.period[a]);
        d2 += d * d;
    }
    return d2 <= q.r2;
}
}  // namespace detail

template <typename T, typename R>
TREADLE_HASH_INLINE hash_grid_query_t<T> hash_grid_query(uint64 id, const vec_t<3, T>& p, R radius, int32 group) {
    typedef typename detail::hash_compute<T>::type C;
    hash_grid_query_t<T> q = {};
    q.grid = (const hash_grid_t*)id;
    q.done = 1;
    if (q.grid == nullptr || q.grid->num_points <= 0) return q;
    const hash_grid_t& g = *q.grid;
    const float64 r = float64(radius) > 0.0 ? float64(radius) : 0.0;
    // Cells in float64, exactly as the build computes them, with the radius widened a hair so that a neighbour at
    // distance r whose own test rounds the other way is still visited.
    const float64 rr = r * (1.0 + 1e-6) + 1e-300;
    C min_period = C(0);
    for (int a = 0; a < 3; ++a) {
        const float64 pd = float64(p.c[a]);
        q.p[a] = C(pd);
        const int64 lo = detail::hash_cell_coord((pd - rr) * g.inv_cell_width);
        const int64 hi = detail::hash_cell_coord((pd + rr) * g.inv_cell_width);
        // rows are trimmed in float32 relative to the box's first cell (small numbers, no cancellation)
        q.pf[a] = (float32)(pd - (float64)lo * g.cell_width);
        q.lo[a] = lo;
        q.wlo[a] = detail::hash_wrap(lo, g.dim[a]);
        q.n[a] = hi - lo + 1 >= g.dim[a] ? g.dim[a] : (int32)(hi - lo + 1);
        q.period[a] = C(g.cell_width * g.dim[a]);
        min_period = a == 0 || q.period[a] < min_period ? q.period[a] : min_period;
    }
    q.half_period = min_period * C(0.5);
    // Every point lies in [lower, upper]: if none can be more than half a period away from p on any axis, no
    // candidate is a periodic image and the filter skips that test.
    q.images = 0;
    for (int a = 0; a < 3; ++a) {
        const float64 pa = float64(p.c[a]);
        const float64 far = max(g.upper[a] - pa, pa - g.lower[a]);
        if (!(far < 0.5 * float64(min_period))) q.images = 1;
    }
    // trimming radius^2 with an absolute margin of 1e-4 cell: float rounding (or FMA contraction) of the gaps must
    // never cut a row the sphere touches (notably for radius 0)
    q.rf2 = (float32)(rr * rr + 1e-8 * g.cell_width * g.cell_width);
    q.w = (float32)g.cell_width, q.inv_w = (float32)g.inv_cell_width;
    q.trim_y = q.n[1] < g.dim[1] ? 1.0f : 0.0f;
    q.trim_z = q.n[2] < g.dim[2] ? 1.0f : 0.0f;
    q.r2 = C(r * r * 1.00001);  // slack: rounding in the caller's own distance test never drops a point
    q.group = group;
    q.use_group = g.sorted_groups != nullptr ? 1 : 0;
    q.generic = g.dtype != detail::hash_dtype_code<T>::value;
    q.done = detail::hash_grid_next_run(q) ? 0 : 1;
    return q;
}

template <typename T, typename R>
TREADLE_HASH_INLINE hash_grid_query_t<T> hash_grid_query(uint64 id, const vec_t<3, T>& p, R radius) {
    hash_grid_query_t<T> q = hash_grid_query(id, p, radius, 0);
    q.use_group = 0;
    return q;
}

template <typename T> TREADLE_HASH_INLINE bool hash_grid_query_next(hash_grid_query_t<T>& q, int32& index) {
    if (q.done) return false;
    while (true) {
        if (q.near) {
            const int32 s = q.base + detail::hash_ctz(q.near);
            q.near &= q.near - 1;
            index = q.grid->point_ids[s];
            return true;
        }
        while (q.image) {  // rare: candidates of aliased cells
            const int32 s = q.base + detail::hash_ctz(q.image);
            q.image &= q.image - 1;
            if (detail::hash_grid_image_near(q, s)) {
                index = q.grid->point_ids[s];
                return true;
            }
        }
        if (q.cur < q.end) {
            detail::hash_grid_fill(q);
            continue;
        }
        if (!detail::hash_grid_next_run(q)) {
            q.done = 1;
            return false;
        }
    }
}

// ------------------------------------------------------------------------------------------------ build steps
// Run by one-thread kernels of hash_grid.py, so that a build is kernel launches only (graph capture replays it).

// Stable LSD radix sort of packed[0, n) by bits [32, 32 + key_bits) -- the cell keys; the lower halves (point
// indices, written in ascending order) keep their order within a cell.
TREADLE_FUNC int32 hash_sort_serial(const array_t<int64>& packed, const array_t<int64>& scratch, int32 n,
                                    int32 key_bits) {
    int64* src = packed.data;
    int64* dst = scratch.data;
    int32 count[2048];
    for (int32 shift = 32; shift < 32 + key_bits; shift += 11) {
        for (int32 b = 0; b < 2048; ++b)
            count[b] = 0;
        for (int32 i = 0; i < n; ++i)
            ++count[(src[i] >> shift) & 2047];
        int32 sum = 0;
        for (int32 b = 0; b < 2048; ++b) {
            const int32 c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (int32 i = 0; i < n; ++i)
            dst[count[(src[i] >> shift) & 2047]++] = src[i];
        int64* t = src;
        src = dst, dst = t;
    }
    if (src != packed.data)
        for (int32 i = 0; i < n; ++i)
            packed.data[i] = src[i];
    return n;
}

// Bounding box of the sorted points into the descriptor (non-finite coordinates: unbounded).
TREADLE_FUNC int32 hash_grid_bounds_serial(uint64 id) {
    hash_grid_t& g = *(hash_grid_t*)id;
    for (int a = 0; a < 3; ++a) {
        float64 lo = 1.0e308, hi = -1.0e308;
        bool finite = true;
        for (int32 s = 0; s < g.num_points; ++s) {
            float64 x[3];
            detail::hash_load_point(g, s, x);
            finite = finite && x[a] - x[a] == 0.0;
            lo = x[a] < lo ? x[a] : lo;
            hi = x[a] > hi ? x[a] : hi;
        }
        g.lower[a] = finite ? lo : -1.0e308;
        g.upper[a] = finite ? hi : 1.0e308;
    }
    return g.num_points;
}

TREADLE_FUNC int32 hash_grid_point_id(uint64 id, int32 index) {
    const hash_grid_t* g = (const hash_grid_t*)id;
    if (g == nullptr || g->reserved <= 0 || index < 0 || index >= g->num_points) return -1;
    return g->point_ids[index];
}

}  // namespace treadle

#undef TREADLE_HASH_INLINE
