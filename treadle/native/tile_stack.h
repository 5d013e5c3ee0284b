// Tile stacks: a block's stack of up to CAP values (wp.tile_stack, tile_stack_push/pop/count/clear).
//
// A block is one logical thread on the CPU (and in Treadle's CUDA code), so a push offers at most one value and a
// pop hands out at most one: the stack is a plain array with a count. Slots are the array positions, so a pop
// returns the slot the value occupied. Stacks are places, not values: the builtins take them by reference, and
// @func parameters of stack type are references too.
#pragma once
#include "linalg.h"

namespace treadle {

template <typename T, int CAP> struct tile_stack_t {
    T data[CAP];
    int32 count;

    TREADLE_FUNC tile_stack_t() : count(0) {
        for (int k = 0; k < CAP; ++k)
            data[k] = T{};
    }
};

template <typename T, int CAP> TREADLE_FUNC tile_stack_t<T, CAP> tile_stack_init() { return tile_stack_t<T, CAP>(); }

// The slot written, or -1 when there is no value to push or no room (the value is dropped).
template <typename T, int CAP, typename V>
TREADLE_FUNC int32 tile_stack_push(tile_stack_t<T, CAP>& s, const V& value, bool has_value) {
    if (!has_value || s.count >= CAP)
        return -1;
    s.data[s.count] = value;
    return s.count++;
}

// (value, slot) of the top element, or (T{}, -1) on an empty stack.
template <typename T, int CAP> TREADLE_FUNC detail::ret2<T, int32> tile_stack_pop(tile_stack_t<T, CAP>& s) {
    detail::ret2<T, int32> r;
    if (s.count <= 0) {
        r.f0 = T{};
        r.f1 = -1;
        return r;
    }
    --s.count;
    r.f0 = s.data[s.count];
    r.f1 = s.count;
    return r;
}

template <typename T, int CAP> TREADLE_FUNC int32 tile_stack_count(const tile_stack_t<T, CAP>& s) { return s.count; }

template <typename T, int CAP> TREADLE_FUNC void tile_stack_clear(tile_stack_t<T, CAP>& s) { s.count = 0; }

}  // namespace treadle
