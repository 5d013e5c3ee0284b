"""Sample argument signatures tried against every registry builtin's type rule (shared by the registry tests).

``accepted_overloads()`` maps each builtin name to the sample signatures its type rule accepts: all scalar types;
vectors, matrices, quaternions, transforms and spatial types of every float precision; integer vectors. Used by
``test_registry_compile.py`` (every overload compiles) and ``test_registry_numeric.py`` (every overload computes
what a NumPy float64 reference computes). Computed once per process.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.builtins.registry import Lowering, NoMatch

_ARITY = re.compile(r"^expected [0-9][0-9 or-]* argument\(s\), got [0-9]+$")


def _families() -> dict[str, list[Any]]:
    out = {}
    for p, s in (("h", wp.float16), ("f", wp.float32), ("d", wp.float64)):
        names = ("vec2", "vec3", "vec4", "mat22", "mat33", "mat44", "quat", "transform", "spatial_vector",
                 "spatial_matrix")
        out[p] = [s] + [getattr(wp, n + p) for n in names]
    return out


INTS = [wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64, wp.bool,
        wp.vec2i, wp.vec3i, wp.vec4i]
EXTRA = [wp.int32, wp.uint32, wp.bool]


def _shaped() -> list[tuple[Any, ...]]:
    """Per float type: (scalar, scalar, vec2, vec3, mat23, mat32, vec5); per other integer 3-vector: (None, its
    scalar, None, None, the vector, None, None)."""
    out: list[tuple[Any, ...]] = []
    for st in (wp.float16, wp.float32, wp.float64):
        out.append((st, st, wp.vector(2, st), wp.vector(3, st), wp.matrix((2, 3), st), wp.matrix((3, 2), st),
                    wp.vector(5, st)))
    for v in (wp.vec3b, wp.vec3ub, wp.vec3s, wp.vec3us, wp.vec3ui, wp.vec3l, wp.vec3ul):
        out.append((None, v._wp_scalar_type_, None, None, v, None, None))
    return out


def _signatures() -> dict[int, list[tuple[Any, ...]]]:
    by_arity: dict[int, set[tuple[Any, ...]]] = {n: set() for n in range(7)}
    by_arity[0].add(())
    fams = _families()
    for t in sum(fams.values(), []) + INTS:
        by_arity[1].add((t,))
    for f in fams.values():
        s, v2, v3, v4, _m22, m33, _m44, q, tf = f[:9]
        by_arity[2].update(itertools.product(f + EXTRA, repeat=2))
        by_arity[3].update(itertools.product([s, v2, v3, v4, m33, q, tf] + EXTRA, repeat=3))
        by_arity[4].update(itertools.product([s, v3, q] + EXTRA[:2], repeat=4))
        by_arity[5].add((v3,) * 4 + (s,))
        by_arity[6].add((v3,) * 6)
    by_arity[2].update(itertools.product(INTS, repeat=2))
    by_arity[3].update((a, a, a) for a in INTS)
    for st, s2, v2, v3, m23, m32, v5 in _shaped():  # other shapes: alone, paired with themselves and scalars
        for t in (m23, m32, v5) if st is not None else (m23,):
            by_arity[1].add((t,))
            by_arity[2].update({(t, t), (t, s2), (s2, t)})
            by_arity[3].add((t, t, s2))
        if st is not None:
            by_arity[2].update({(m23, v3), (v2, m23), (m32, v2), (v3, m32), (m23, m32), (m32, m23), (v2, v3), (v3, v2)})
            by_arity[2].add((v5, v5))
    return {n: sorted(v, key=lambda sig: tuple(t.__name__ for t in sig)) for n, v in by_arity.items()}


def _probe(b: Any, sigs: dict[int, list[tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
    """The sample signatures builtin ``b``'s type rule accepts."""
    out = []
    for n, cands in sigs.items():
        if b.static_args and n:
            continue  # compile-time arguments (quat_identity(dtype=...)): only the default form here
        try:
            b.resolve([wp.float32] * n)
        except NoMatch as e:
            if _ARITY.match(str(e)):
                continue  # the rule rejects this argument count outright
        except Exception:  # noqa: BLE001 - a rule that needs other types; probe the samples
            pass
        for sig in cands:
            try:
                b.resolve(list(sig))
            except Exception:  # noqa: BLE001 - NoMatch, or a rule that cannot take these types at all
                continue
            out.append(sig)
    return out


@functools.lru_cache(maxsize=1)
def _accepted() -> dict[str, list[tuple[Any, ...]]]:
    sigs = _signatures()
    found: dict[str, list[tuple[Any, ...]]] = {}
    for name, b in sorted(REGISTRY.builtins.items()):
        if name.startswith("_") or b.lowering is not Lowering.CALL:
            continue
        accepted = _probe(b, sigs)
        if accepted:
            found[name] = accepted
    return found


def accepted_overloads() -> dict[str, list[tuple[Any, ...]]]:
    """Builtin name -> argument signatures its type rule accepts (among the samples); a fresh copy.

    Public builtins with a plain-call lowering only; see :func:`accepted_for` for others.
    """
    return {k: list(v) for k, v in _accepted().items()}


def accepted_for(names: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The same for the named builtins (internal ones too: ``_cmp_lt``, ``_not``)."""
    sigs = _signatures()
    found = {n: _probe(REGISTRY.builtins[n], sigs) for n in names}
    return {n: v for n, v in found.items() if v}


class TypeTable:
    """Types referenced by generated kernel source as ``T[i]`` (the module's ``T`` is set to :attr:`types`)."""

    def __init__(self) -> None:
        self.types: list[Any] = []
        self._index: dict[Any, int] = {}

    def ref(self, t: Any) -> str:
        """The source expression naming type ``t``."""
        if t not in self._index:
            self._index[t] = len(self.types)
            self.types.append(t)
        return f"T[{self._index[t]}]"
