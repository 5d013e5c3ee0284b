"""The CPU backend's warm-start key: the compiler's fingerprint of a kernel with what its CPU build depends on.

The compiler fingerprints what lowering reads (``compiler/fingerprint.py``, Treadle's lowering sources included); a
CPU binary also depends on the sources of the CPU build (:data:`BUILD_PARTS`), the native headers
(``native.header_hash``), the compiler identity and flags, and the compiler chosen for kernels with loops.
:func:`warm_key` joins the two; the runtime's warm-start index (``runtime/warm_index.py``) maps the key to the cached
binary. :func:`treadle_signature` (lowering and build sources) is the digest the environment stamp covers
(``runtime/warm_env.py``, registered here).

The facts the backend's part needs (header digest, toolchain, CPU, loop compiler) come from the environment stamp's
memo when it matches (``runtime/warm_env.py``), so that a warm start does not derive them again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .... import config
from ...compiler import fingerprint
from ...runtime import warm_env, warm_index
from ...runtime.native import get_native_compiler, header_hash

#: The parts of Treadle that decide a CPU binary beyond lowering: this backend, the compile flags and toolchain, and
#: the index format (not the CUDA and interpreter backends: they never change a CPU binary).
BUILD_PARTS = ("_src/backends/cpu", "_src/runtime/native.py", "_src/runtime/toolchain.py", "_src/runtime/warm_index.py")

_build_sig: str | None = None


def build_sources() -> str:
    """:func:`~treadle._src.compiler.fingerprint.sources_signature` of :data:`BUILD_PARTS` (once per process)."""
    global _build_sig
    if _build_sig is None:
        _build_sig = fingerprint.sources_signature(fingerprint.TREADLE_ROOT, BUILD_PARTS)
    return _build_sig


def treadle_signature() -> str:
    """The digest of Treadle's sources that decide a CPU binary: lowering's and this backend's."""
    return hashlib.sha256(f"{fingerprint.lowering_sources()}\x00{build_sources()}".encode()).hexdigest()


def forget_signature() -> None:
    """Take the source digests again on next use (tests)."""
    global _build_sig
    _build_sig = None
    fingerprint.forget_sources()


warm_env.register_sources(lambda: treadle_signature(), lambda: forget_signature())


def settings(options: Any) -> str:
    """The part of every key that does not depend on the kernel: format, sources, headers, compiler, flags."""
    compiler = get_native_compiler()
    return "\x00".join((warm_index.FORMAT, config.version, build_sources(), header_hash(),
                         compiler.identity(options),
                         compiler.loop_compiler_signature()))  # kernels with loops may be built by another compiler


def warm_key(inst: Any, backward: bool = False) -> str | None:
    """The warm-start key of a CPU kernel instance's forward (or backward) pass, or ``None`` when unsafe.

    ``backward``: the key of the backward pass, built with ``inst.backward_options()``.

    None in checked mode, with kernel caching off or dumps asked for (those builds always take the normal path), and
    for kernels the compiler cannot fingerprint.
    """
    if not config.cache_kernels or config.dump or inst.options.mode == "debug":
        return None
    try:
        warm_env.prime()
        src = inst.fingerprint()
        if src is None:
            return None
        memo = fingerprint.batch_memo()
        o = inst.backward_options() if backward else inst.options
        if memo is None:
            part = settings(o)
        else:  # a module load: the settings cannot change from one kernel to the next
            key = ("cpu", o.mode, o.opt_level, tuple(o.extra), o.verify_fp, o.cxx)
            cached = memo.get(key)
            if cached is None:
                cached = memo[key] = settings(o)
            part = cached
        warm_env.remember()
    except Exception:  # noqa: BLE001 - a key problem must never break a launch: take the normal path
        return None
    tail = "\x00backward" if backward else ""
    return hashlib.sha256(f"{part}\x00{src}{tail}".encode()).hexdigest()


__all__ = ["BUILD_PARTS", "build_sources", "forget_signature", "settings", "treadle_signature", "warm_key"]
