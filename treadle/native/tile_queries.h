// The tiled geometry queries: a block traverses one BVH (or mesh AABB) query together, and each step hands every
// thread of the block one result in a (block_dim,) tile. On the CPU a block is one thread, so a step is one
// bvh_query_next (bvh.h) and the tile holds that result or -1. tile_query_valid stays true until a step finds
// nothing, as the reference specifies (true initially, false after an all-negative batch).
#pragma once

namespace treadle {

struct bvh_query_tiled_t {
    bvh_query_t q;
    bool valid;
};

namespace detail {
TREADLE_FUNC bvh_query_tiled_t tiled(const bvh_query_t& q) {
    bvh_query_tiled_t r;
    r.q = q;
    r.valid = true;
    return r;
}
}  // namespace detail

TREADLE_FUNC bvh_query_tiled_t tile_bvh_query_aabb(uint64 id, const vec_t<3, float32>& low,
                                                   const vec_t<3, float32>& high) {
    return detail::tiled(bvh_query_aabb(id, low, high));
}
TREADLE_FUNC bvh_query_tiled_t tile_bvh_query_ray(uint64 id, const vec_t<3, float32>& start,
                                                  const vec_t<3, float32>& dir) {
    return detail::tiled(bvh_query_ray(id, start, dir));
}
TREADLE_FUNC bvh_query_tiled_t tile_mesh_query_aabb(uint64 id, const vec_t<3, float32>& low,
                                                    const vec_t<3, float32>& high) {
    return detail::tiled(mesh_query_aabb(id, low, high));
}
TREADLE_FUNC tile_t<int32, 1, 1> tile_bvh_query_next(bvh_query_tiled_t& query) {
    tile_t<int32, 1, 1> r;
    int32 index = -1;
    if (!query.valid || !bvh_query_next(query.q, index)) {
        index = -1;
        query.valid = false;
    }
    r.data[0] = index;
    return r;
}
TREADLE_FUNC bool tile_query_valid(const bvh_query_tiled_t& query) { return query.valid; }

}  // namespace treadle
