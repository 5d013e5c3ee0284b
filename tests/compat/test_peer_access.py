"""Peer access between devices: ``is/set_peer_access_enabled``, the memory-pool forms, the scoped forms, ``check_p2p``.

Access is only defined between CUDA devices: on anything else the queries answer False, enabling raises
``ValueError`` at the caller's line and disabling does nothing, as the reference specifies. The CUDA forms run on a
machine with CUDA devices.
"""

from __future__ import annotations

import pytest

import treadle as wp
from treadle._src.utils import check_p2p

QUERIES = [wp.is_peer_access_supported, wp.is_peer_access_enabled, wp.is_mempool_access_supported,
           wp.is_mempool_access_enabled]
SETTERS = [(wp.set_peer_access_enabled, "Peer access"), (wp.set_mempool_access_enabled, "Memory pool access")]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.__name__)
def test_queries_on_the_cpu_are_false(query):
    assert query("cpu", "cpu") is False
    assert query(wp.get_device("cpu"), None) is False  # None: the default device (the CPU here, or a GPU)


@pytest.mark.parametrize("setter,what", SETTERS, ids=lambda s: getattr(s, "__name__", ""))
def test_enabling_access_to_the_cpu_raises_and_disabling_does_nothing(setter, what):
    setter("cpu", "cpu", False)
    with pytest.raises(ValueError, match=f"{what} is only supported between CUDA devices"):
        setter("cpu", "cpu", True)
    assert not wp.is_peer_access_enabled("cpu", "cpu") and not wp.is_mempool_access_enabled("cpu", "cpu")


@pytest.mark.parametrize("scoped", [wp.ScopedPeerAccess, wp.ScopedMempoolAccess], ids=lambda c: c.__name__)
def test_scoped_forms_set_and_restore(scoped):
    with scoped("cpu", "cpu", enable=False) as s:
        assert s.target_device.is_cpu and s.enable is False
    with pytest.raises(ValueError, match="only supported between CUDA devices"):
        with scoped("cpu", "cpu"):  # enable=True by default: refused on entry, the block never runs
            raise AssertionError("the block ran")


def test_bad_device_names_are_refused():
    with pytest.raises((ValueError, RuntimeError), match="nosuch"):
        wp.is_peer_access_supported("nosuch:7", "cpu")


def test_check_p2p_holds_with_fewer_than_two_cuda_devices():
    devices = [wp.get_cuda_device(i) for i in range(wp.get_cuda_device_count())]
    pairs_ok = all(wp.is_peer_access_supported(a, b) for a in devices for b in devices if a != b)
    assert check_p2p() is pairs_ok
    if len(devices) < 2:
        assert check_p2p() is True


@pytest.mark.skipif(wp.get_cuda_device_count() < 1, reason="needs a CUDA device")
def test_a_cuda_device_accesses_itself():
    d = wp.get_cuda_device(0)
    assert wp.is_peer_access_supported(d, d) and wp.is_peer_access_enabled(d, d)
    wp.set_peer_access_enabled(d, d, True)  # the same context: nothing to enable
    assert not wp.is_peer_access_supported(d, "cpu") and not wp.is_peer_access_enabled("cpu", d)
    if d.is_mempool_supported:
        assert wp.is_mempool_access_supported(d, d) and wp.is_mempool_access_enabled(d, d)


@pytest.mark.skipif(wp.get_cuda_device_count() < 2, reason="needs two CUDA devices")
def test_peer_access_between_two_devices_round_trips():
    a, b = wp.get_cuda_device(0), wp.get_cuda_device(1)
    if not wp.is_peer_access_supported(a, b):
        with pytest.raises(RuntimeError, match="cannot access"):
            wp.set_peer_access_enabled(a, b, True)
        return
    before = wp.is_peer_access_enabled(a, b)
    with wp.ScopedPeerAccess(a, b, True):
        assert wp.is_peer_access_enabled(a, b)
    assert wp.is_peer_access_enabled(a, b) is before
    if wp.is_mempool_access_supported(a, b):
        with wp.ScopedMempoolAccess(a, b, True):
            assert wp.is_mempool_access_enabled(a, b)
        with wp.ScopedMempoolAccess(a, b, False):
            assert not wp.is_mempool_access_enabled(a, b)
