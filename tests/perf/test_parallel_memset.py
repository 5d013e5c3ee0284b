"""Large host memsets (``zero_()`` of big arrays and gradients) run on the thread pool and touch exactly their bytes."""

from __future__ import annotations

import numpy as np
import pytest

import treadle as wp
from treadle._src.runtime import memory, threadpool


@wp.kernel
def _noop(a: wp.array(dtype=wp.int8)):
    wp.tid()


@pytest.fixture(autouse=True)
def runtime_loaded():
    wp.launch(_noop, 1, inputs=[wp.zeros(1, dtype=wp.int8)])  # the pool is loaded by the first launch
    assert threadpool._HOLDER.runtime is not None


@pytest.mark.parametrize("nt", [1, 2, 3])
@pytest.mark.parametrize("size", [memory.PARALLEL_MEMSET_BYTES - 1, memory.PARALLEL_MEMSET_BYTES,
                                  memory.PARALLEL_MEMSET_BYTES + 3, 5 * 2**20 + 123])
def test_zero_of_a_contiguous_slice_clears_exactly_its_bytes(size, nt):
    rng = np.random.default_rng(size)
    data = rng.integers(1, 127, size + 2, dtype=np.int8)
    a = wp.array(data, dtype=wp.int8)
    with wp.config.override(num_threads=nt):
        a[1:-1].zero_()  # an unaligned start and length
    got = a.numpy()
    assert got[0] == data[0] and got[-1] == data[-1]
    assert not got[1:-1].any()


def test_any_byte_value():
    a = wp.zeros(3 * 2**20 + 5, dtype=wp.uint8)
    with wp.config.override(num_threads=2):
        a.device.allocator.memset(a.ptr, 0x1AB, a.size)  # the byte of the value, as memset does
    assert (a.numpy() == 0xAB).all()


def test_the_pool_does_it_only_with_several_threads():
    a = wp.zeros(2**20)
    with wp.config.override(num_threads=2):
        assert threadpool.parallel_memset(a.ptr, 0, a.size * 4)
    with wp.config.override(num_threads=1):
        assert not threadpool.parallel_memset(a.ptr, 0, a.size * 4)


@wp.kernel
def _square_sum(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] * x[i])


def test_tape_zero_clears_a_large_gradient():
    n = 2**20
    x = wp.array(np.full(n, 2.0, np.float32), dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_square_sum, n, inputs=[x, out])
    tape.backward(loss=out)
    assert (x.grad.numpy() == 4.0).all()
    with wp.config.override(num_threads=2):
        tape.zero()
    assert not x.grad.numpy().any() and out.grad.numpy()[0] == 0.0
