"""``Tape``: records launches and replays their adjoints in reverse order.

Overwrite safety is on by default. The backward pass of a launch replays it with the arrays' contents at
``backward()`` time, so when a recorded launch (or a later one, or a copy) overwrote an array whose values that
backward pass needs, its gradients could be wrong. Whether they are depends on *which elements* were overwritten
and read, so the check is made on the gradients themselves: the array's contents as the launch read them are kept
(copied before the first write that follows the read; before the launch itself when it writes the array too), and
``backward()`` runs that launch's adjoint with the current contents and again with the kept ones. Equal gradients
(a launch that writes other elements than the ones an earlier launch read, as in level-by-level updates of one
array) proceed; different ones raise :class:`OverwriteError` naming the array and both kernels (the gradients of
the launches after it in recording order are then already accumulated). A launch that overwrote an array itself
and read, of the elements it changed, only values it had written (a chain walked root first in one array) is
recognised by running it again from its starting contents with those elements altered: unchanged outputs show the
old values were never read, and its adjoint runs with the current contents. Opt out with
``Tape(check_overwrites=False)`` or ``wp.config.verify_autograd_array_access = False``. Without overwrites the
check costs a few dictionary updates per recorded launch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import config
from ..core.errors import TreadleError
from ..runtime.recording import active_tape, pop_tape, push_tape


class OverwriteError(TreadleError):
    """A recorded launch's input was overwritten before ``Tape.backward()``."""


@dataclasses.dataclass
class _Recorded:
    kernel: Any
    dim: Any
    inputs: list[Any]
    outputs: list[Any]
    device: Any
    reads: list[tuple[Any, str, int]]
    inst: Any = None
    #: id(array) -> its contents as this launch read them (kept once the array is written afterwards)
    kept: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Func:
    """A recorded Python callback (``record_func``, ``wp.copy``/``clone``/``assign``) and the arrays it uses."""

    backward: Callable[[], None]
    arrays: list[Any]
    name: str = "func"
    inputs: list[Any] = dataclasses.field(default_factory=list)
    outputs: list[Any] = dataclasses.field(default_factory=list)

    def __call__(self) -> None:
        self.backward()


def _arrays_in(value: Any, out: list[Any]) -> list[Any]:
    """The arrays of a launch argument: the array itself, or the array fields of a struct (recursively)."""
    from ..lang.array import array

    if isinstance(value, array):
        out.append(value)
        return out
    refs = getattr(value, "_refs", None)
    if isinstance(refs, dict) and hasattr(value, "_struct_type_"):
        out.extend(a for a in refs.values() if isinstance(a, array))
        for child in getattr(value, "_children", {}).values():
            _arrays_in(child, out)
    return out


def _struct_adjoint(value: Any) -> Any:
    """An instance of ``value``'s struct type whose array fields are the gradients of ``value``'s array fields."""
    adj = value._struct_type_()
    for name, kind in value._struct_type_._kinds.items():
        if kind == "array":
            a = value._refs.get(name)
            g = getattr(a, "grad", None) if a is not None else None
            if g is not None:
                setattr(adj, name, g)
        elif kind == "struct":
            setattr(adj, name, _struct_adjoint(getattr(value, name)))
    return adj


def _add_np(d: np.ndarray, s: np.ndarray) -> None:
    """``d += s`` in place for NumPy views: field by field for structs, ``or`` for booleans."""
    if d.dtype.names:
        for name in d.dtype.names:
            _add_np(d[name], s[name])
    elif d.dtype == np.bool_:
        d |= s
    else:
        d += s


def _add_into(dest: Any, src: Any, consume: bool = False) -> None:
    """``dest += src`` for two arrays of the same shape and dtype (any device; views allowed).

    With ``consume``, ``src`` is zeroed first (a copy's destination gradient is passed on to the source).
    Overlapping views are handled exactly: ``src`` is read in full before anything is written.
    """
    host = dest.device.allocator.host_accessible and src.device.allocator.host_accessible
    s = src._host_numpy() if host else src.numpy()
    incoming = s.copy()
    if consume:
        if host:
            s[...] = np.zeros((), dtype=s.dtype)
        else:
            src.zero_()
    if host:
        _add_np(dest._host_numpy(), incoming)
        return
    total = dest.numpy().copy()
    _add_np(total, incoming)
    dest.assign(total)


def _contents(a: Any) -> np.ndarray:
    """A copy of the array's elements."""
    return np.array(a.numpy(), copy=True)


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether two gradients agree (up to the rounding of atomics accumulated in another order)."""
    if x.dtype.names:
        return all(_same(x[n], y[n]) for n in x.dtype.names)
    if x.dtype.kind not in "fc":
        return bool(np.array_equal(x, y))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    scale = float(np.max(np.abs(x64), initial=0.0))
    return bool(np.allclose(x64, y64, rtol=1e-5, atol=1e-6 * scale, equal_nan=True))


def _window(a: Any, offset: int, count: int) -> Any:
    """Elements ``[offset, offset + count)`` of ``a`` in flat (row-major) order, as a view."""
    if a.ndim == 1:
        return a[offset:offset + count]
    return a.flatten()[offset:offset + count]


def _array_class() -> type:
    """``lang.array.array`` (imported at first use: ``lang`` imports this module while it loads)."""
    global _ARRAY
    if _ARRAY is None:
        from ..lang.array import array

        _ARRAY = array
    return _ARRAY


_ARRAY: Any = None


class Tape:
    """Records kernel launches (``with wp.Tape() as tape: ...``) so that ``tape.backward()`` computes gradients."""

    def __init__(self, check_overwrites: bool | None = None) -> None:
        self.launches: list[Any] = []
        self.scopes: list[tuple[Any, ...]] = []
        self.loss: Any = None
        self.check_overwrites = check_overwrites
        self._versions: dict[int, int] = {}
        #: id(array) -> (name, launch record) of its last recorded writer (a copy has no launch record)
        self._writer: dict[int, tuple[str, Any]] = {}
        #: id(array) -> recorded launches that read its values since it was last written (nothing kept for them yet)
        self._unkept: dict[int, list[_Recorded]] = {}
        self._arrays: dict[int, Any] = {}
        self._structs: dict[int, Any] = {}
        #: arrays whose read flag (``array._is_read``) this tape set: cleared by ``backward()`` and ``reset()``
        self._marked: dict[int, Any] = {}

    # Recording --------------------------------------------------------------------------------------------------
    def __enter__(self) -> Tape:
        if active_tape() is not None:
            raise RuntimeError("tapes cannot be nested: a wp.Tape is already recording on this thread")
        push_tape(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        pop_tape(self)

    def _checking(self) -> bool:
        if self.check_overwrites is not None:
            return self.check_overwrites
        return bool(config.verify_autograd_array_access)

    def _mark_read(self, a: Any) -> None:
        """Set ``a``'s read flag (and its parents', for views) on behalf of this tape."""
        a.mark_read(reader=id(self))
        self._marked[id(a)] = a

    def _clear_read_marks(self) -> None:
        """Withdraw this tape's read flags (another pending tape's stay set)."""
        for a in self._marked.values():
            a._unmark_read(id(self))
        self._marked.clear()

    def record_launch(self, kernel: Any, dim: Any, inputs: Any, outputs: Any, device: Any, inst: Any = None) -> None:
        """Record one launch (called by ``wp.launch`` while this tape is active)."""
        array = _array_class()
        args = list(inputs) + list(outputs)
        for a in args:
            if isinstance(a, array):
                self._arrays[id(a)] = a
            elif hasattr(a, "_struct_type_"):
                self._structs[id(a)] = a
                for x in _arrays_in(a, []):
                    self._arrays[id(x)] = x
        reads: list[tuple[Any, str, int]] = []
        if self._checking() and inst is not None:
            r, w, vr, st = inst.access_facts()
            names = kernel.param_names
            rec = _Recorded(kernel, dim, list(inputs), list(outputs), device, reads, inst)
            written = [a for i, a in enumerate(args) if i in w and isinstance(a, array)]
            for a in written:  # this launch is about to overwrite what earlier launches read: keep it for them
                self._keep_for_readers(a)
            for i in sorted(r):
                a = args[i] if i < len(args) else None
                if isinstance(a, array):
                    self._mark_read(a)
                    # only values the backward pass needs matter: a store's adjoint consumes the gradient of the
                    # element it overwrote, so gradients stay exact when other reads are overwritten
                    if i in vr:
                        reads.append((a, names[i], self._versions.get(id(a), 0)))
                        if any(x is a for x in written):  # the launch runs after this: keep what it reads now
                            rec.kept.setdefault(id(a), _contents(a))
                        else:
                            self._unkept.setdefault(id(a), []).append(rec)
            for a in written:
                self._versions[id(a)] = self._versions.get(id(a), 0) + 1
                self._writer[id(a)] = (kernel.key, rec)
            self.launches.append(rec)
            return
        self.launches.append(_Recorded(kernel, dim, list(inputs), list(outputs), device, reads, inst))

    def before_write(self, a: Any) -> None:
        """Called before a copy overwrites ``a`` (``wp.copy``, ``array.assign``): see :meth:`_keep_for_readers`."""
        if self._checking():
            self._keep_for_readers(a)

    def _keep_for_readers(self, a: Any) -> None:
        """Before ``a`` is written: give the recorded launches that read its values a copy of them."""
        readers = self._unkept.pop(id(a), None)
        if readers:
            contents = _contents(a)
            for rec in readers:
                rec.kept.setdefault(id(a), contents)

    def record_func(self, backward: Callable[[], None], arrays: list[Any], name: str = "func") -> None:
        """Record a Python callback that computes the adjoint of a custom operation on ``arrays``.

        ``tape.backward()`` calls it in reverse recording order; ``zero()`` clears the gradients of ``arrays``.
        """
        for a in arrays:
            self._arrays[id(a)] = a
        self.launches.append(_Func(backward, list(arrays), name, inputs=list(arrays)))

    def record_copy(self, dest: Any, src: Any, dest_offset: int = 0, src_offset: int = 0, count: int = 0) -> None:
        """Record ``wp.copy(dest, src, ...)`` (also ``clone`` and ``assign``).

        Its adjoint adds ``dest.grad`` into ``src.grad`` over the copied elements and then zeroes that part of
        ``dest.grad`` (the copy overwrote it), unless ``dest.retain_grad``. Nothing is recorded unless both arrays
        have gradient buffers.
        """
        from ..lang.array import array

        if not (isinstance(dest, array) and isinstance(src, array)):
            return
        if self._checking():
            self._mark_read(src)
        if dest.grad is None or src.grad is None:
            return
        if self._checking():  # the copy overwrote dest: earlier recorded readers of dest are checked
            self._versions[id(dest)] = self._versions.get(id(dest), 0) + 1
            self._writer[id(dest)] = ("copy", None)
        flat = count != 0 or dest_offset != 0 or src_offset != 0 or dest.shape != src.shape
        n = (count if count else src.size - src_offset) if flat else 0

        def backward() -> None:
            d, s_ = (_window(dest.grad, dest_offset, n), _window(src.grad, src_offset, n)) if flat else \
                (dest.grad, src.grad)
            # the copy overwrote dest: its gradient is passed on to src and consumed (unless retain_grad is set)
            _add_into(s_, d, consume=not getattr(dest, "retain_grad", False))

        self._arrays[id(dest)] = dest
        self._arrays[id(src)] = src
        self.launches.append(_Func(backward, [dest, src], "copy", inputs=[src], outputs=[dest]))

    def record_scope_begin(self, scope_name: str, metadata: Any = None) -> None:
        """Mark the start of a named group of launches (kept for visualisation)."""
        self.scopes.append((len(self.launches), scope_name, metadata if metadata is not None else {}))
        self._open_scopes = getattr(self, "_open_scopes", 0) + 1

    def record_scope_end(self, remove_scope_if_empty: bool = True) -> None:
        """Mark the end of the innermost scope (an empty scope is dropped unless asked otherwise)."""
        if getattr(self, "_open_scopes", 0) <= 0:
            raise RuntimeError("ended tape scope, but scope not present: record_scope_end() without a matching "
                               "record_scope_begin()")
        self._open_scopes -= 1
        if remove_scope_if_empty and self.scopes and self.scopes[-1][0] == len(self.launches) and \
                self.scopes[-1][1] is not None:
            self.scopes.pop()  # the matching begin, with nothing recorded since
            return
        self.scopes.append((len(self.launches), None, None))

    # Backward ---------------------------------------------------------------------------------------------------
    def _overwritten(self, rec: _Recorded) -> list[tuple[Any, str]]:
        """The arrays (and parameter names) whose values ``rec`` read and that were written afterwards."""
        return [(a, name) for a, name, version in rec.reads if self._versions.get(id(a), 0) != version]

    def _checked_adjoint(self, rec: _Recorded, run: Callable[[], None], overwritten: list[tuple[Any, str]]) -> None:
        """Run ``rec``'s adjoint; raise :class:`OverwriteError` if the overwritten values change its gradients.

        Arrays overwritten without their earlier contents kept (a write the tape did not see coming), and any
        overwrite while a graph is being captured, are reported without the comparison.
        """
        from ..runtime import graph

        unknown = [(a, name) for a, name in overwritten if id(a) not in rec.kept]
        if unknown:
            self._report(rec, *unknown[0], "")
        if graph.capturing():  # nothing runs while capturing: the gradients cannot be compared
            self._report(rec, *overwritten[0], " (gradients are not compared while a graph is being captured)")
        if self._reads_only_own_writes(rec, overwritten):
            run()
            return
        grads: dict[int, Any] = {}
        for a in rec.inputs + rec.outputs:
            for x in _arrays_in(a, []):
                if getattr(x, "grad", None) is not None:
                    grads.setdefault(id(x.grad), x.grad)
        before = {k: _contents(g) for k, g in grads.items()}
        run()
        now = {k: _contents(g) for k, g in grads.items()}
        for k, g in grads.items():
            g.assign(before[k])
        current = [(a, _contents(a)) for a, _ in overwritten]
        for a, _ in overwritten:
            a.assign(rec.kept[id(a)])
        try:
            run()
            exact = {k: _contents(g) for k, g in grads.items()}
        finally:
            for a, c in current:
                a.assign(c)
        for k, g in grads.items():
            g.assign(now[k])
        if all(_same(now[k], exact[k]) for k in grads):
            return
        self._report(rec, *overwritten[0], ", and its backward pass gives different gradients with the new values")

    def _reads_only_own_writes(self, rec: _Recorded, overwritten: list[tuple[Any, str]]) -> bool:
        """Whether ``rec`` overwrote these arrays itself and read, of the elements it changed, only its own writes.

        A launch that reads an element after writing it (a forward pass along a chain stored in one array: each link
        reads its parent's value, written earlier by the same thread) read what the array holds now, so its adjoint
        is exact with the current contents, while the contents before the launch are not what it read. This is told
        apart from a read of the old value (``x[i] = f(x[i])``) by running the launch again from its starting
        contents, once as they were and once with the changed elements replaced by other values: outputs that do
        not depend on those values show the old values were never read. Every array the launch touches is restored
        afterwards. Only floating-point arrays that no later launch or copy wrote qualify.
        """
        from ..lang.launch import launch

        for a, _ in overwritten:
            writer = self._writer.get(id(a), (None, None))[1]
            read_at = next(v for x, _n, v in rec.reads if x is a)
            if writer is not rec or self._versions.get(id(a), 0) != read_at + 1:
                return False
            if np.dtype(rec.kept[id(a)].dtype).kind != "f":
                return False
        touched: dict[int, Any] = {}
        for arg in rec.inputs + rec.outputs:
            for x in _arrays_in(arg, []):
                touched.setdefault(id(x), x)
        saved = {k: _contents(x) for k, x in touched.items()}
        starts = []
        for a, _ in overwritten:
            old, now = rec.kept[id(a)], saved[id(a)]
            changed = ~((old == now) | (np.isnan(old) & np.isnan(now)))
            other = old.copy()
            other[changed] = old[changed] * np.float32(1.75) + np.float32(3.25)  # any value the forward never saw
            starts.append((a, old, other))
        results = []
        try:
            for k in range(2):
                for x_id, x in touched.items():
                    x.assign(saved[x_id])
                for a, old, other in starts:
                    a.assign(old if k == 0 else other)
                launch(rec.kernel, rec.dim, rec.inputs, rec.outputs, device=rec.device, record_tape=False)
                results.append({x_id: _contents(x) for x_id, x in touched.items()})
        finally:
            for x_id, x in touched.items():
                x.assign(saved[x_id])
        return all(_same(results[0][k], results[1][k]) for k in touched)

    def _report(self, rec: _Recorded, a: Any, name: str, why: str) -> None:
        writer, writer_rec = self._writer.get(id(a), ("a later launch", None))
        by = "the launch itself" if writer_rec is rec else f"kernel '{writer}'"
        raise OverwriteError(
            f"array '{name}' read by kernel '{rec.kernel.key}' was overwritten by {by} later in the recorded "
            f"sequence{why}: its gradients would be wrong.\n"
            "fix: write results to a new array instead of updating one in place (e.g. double-buffer state per time "
            "step); or opt out of the check with wp.Tape(check_overwrites=False)"
        )

    def backward(self, loss: Any = None, grads: dict[Any, Any] | None = None) -> None:
        """Propagate adjoints backwards through the recorded launches.

        Args:
            loss: a one-element array whose gradient is seeded with 1.
            grads: alternatively, a mapping from output arrays to their seed gradients.
        """
        from ..lang.launch import launch

        checking = self._checking()
        if loss is not None:
            if loss.grad is None:
                raise TreadleError("the loss array has no gradient buffer: create it with requires_grad=True")
            loss.grad.fill_(1.0)
            self.loss = loss
        if grads:
            for arr, g in grads.items():
                if arr.grad is None:  # the seed becomes the array's gradient buffer (a copy unless it is an array)
                    arr.grad = g
                else:
                    arr.grad.assign(g)
        pending = [r for r in self.launches if isinstance(r, _Recorded)]
        from ..backends.cpu.kernels import load_backward

        load_backward([r.inst for r in pending if r.inst is not None])  # compile all backward passes in one batch
        for rec in reversed(self.launches):
            if not isinstance(rec, _Recorded):
                rec()
                continue
            overwritten = self._overwritten(rec) if checking else []
            if overwritten:
                self._checked_adjoint(rec, lambda r=rec: launch(r.kernel, r.dim, r.inputs, r.outputs, device=r.device,
                                                                adjoint=True, record_tape=False), overwritten)
                continue
            launch(rec.kernel, rec.dim, rec.inputs, rec.outputs, device=rec.device, adjoint=True, record_tape=False)
        self._clear_read_marks()  # the recorded reads are consumed

    # Gradients --------------------------------------------------------------------------------------------------
    @property
    def gradients(self) -> dict[Any, Any]:
        """Mapping from each recorded array that has a gradient buffer to that buffer.

        A recorded struct argument maps to an instance of its struct type whose array fields are the gradients of
        its array fields.
        """
        out: dict[Any, Any] = {a: a.grad for a in self._arrays.values() if getattr(a, "grad", None) is not None}
        for st in self._structs.values():
            out[st] = _struct_adjoint(st)
        return out

    def get_adjoint(self, a: Any) -> Any:
        """The gradient of ``a``: its gradient buffer for an array, an adjoint struct for a struct (or ``None``)."""
        if hasattr(a, "_struct_type_"):
            return _struct_adjoint(a)
        return getattr(a, "grad", None)

    def zero(self) -> None:
        """Set every recorded array's gradient to zero."""
        for a in self._arrays.values():
            g = getattr(a, "grad", None)
            if g is not None:
                g.zero_()

    def reset(self) -> None:
        """Zero the gradients and forget the recorded launches (``gradients`` keeps the arrays seen so far)."""
        self.zero()
        self.launches = []
        self.scopes = []
        self._versions.clear()
        self._writer.clear()
        self._unkept.clear()
        self._clear_read_marks()
        self._open_scopes = 0  # the recorded arrays stay known: ``gradients`` and ``zero()`` still reach them

    def visualize(self, filename: str | None = None, simplify_graph: bool = True, hide_readonly_arrays: bool = False,
                  array_labels: dict[Any, str] | None = None, choose_longest_node_name: bool = True,
                  ignore_graph_scopes: bool = False, track_inputs: list[Any] | None = None,
                  track_outputs: list[Any] | None = None, track_input_names: list[str] | None = None,
                  track_output_names: list[str] | None = None, graph_direction: str = "LR") -> str:
        """A GraphViz (dot) description of the recorded launches and the arrays they read and write.

        Launches are boxes, arrays ellipses labelled with ``array_labels[arr]`` or the kernel parameter names they
        were passed as; scopes (``record_scope_begin/end``) become clusters unless ``ignore_graph_scopes``.
        ``hide_readonly_arrays`` drops arrays that no recorded launch writes; ``track_inputs``/``track_outputs``
        (with optional names) highlight arrays. Returns the text and writes it to ``filename`` when given.
        """
        from ..lang.array import array

        labels: dict[int, set[str]] = {}
        written: set[int] = set()
        arrays: dict[int, Any] = {}
        nodes: list[tuple[str, str, list[int], list[int]]] = []  # (node id, label, reads, writes)
        keys: list[Any] = []  # what makes two consecutive launches "the same" for simplify_graph
        for i, rec in enumerate(self.launches):
            reads: list[int] = []
            writes: list[int] = []
            if isinstance(rec, _Recorded):
                names = list(rec.kernel.param_names)
                args = list(rec.inputs) + list(rec.outputs)
                n_in = len(rec.inputs)
                for k, a in enumerate(args):
                    found = _arrays_in(a, [])
                    for x in found:
                        arrays[id(x)] = x
                        if k < len(names):
                            labels.setdefault(id(x), set()).add(names[k])
                        (writes if k >= n_in else reads).append(id(x))
                nodes.append((f"l{i}", rec.kernel.key, reads, writes))
                keys.append((id(rec.kernel), tuple(id(a) if not isinstance(a, (int, float)) else a for a in args)))
            else:
                ins = [a for a in getattr(rec, "inputs", []) if isinstance(a, array)]
                outs = [a for a in getattr(rec, "outputs", []) if isinstance(a, array)]
                for x in ins + outs:
                    arrays[id(x)] = x
                writes = [id(x) for x in outs]
                nodes.append((f"l{i}", getattr(rec, "name", "func"), [id(x) for x in ins], writes))
                keys.append(None)
            written.update(writes)
        tracked: dict[int, tuple[str, str]] = {}
        for group, tnames, colour in ((track_inputs, track_input_names, "lightblue"),
                                     (track_outputs, track_output_names, "salmon")):
            for k, a in enumerate(group or []):
                arrays[id(a)] = a
                tracked[id(a)] = ((tnames[k] if tnames and k < len(tnames) else ""), colour)

        def label(aid: int) -> str:
            a = arrays[aid]
            if array_labels and a in array_labels:
                return str(array_labels[a])
            if tracked.get(aid, ("", ""))[0]:
                return tracked[aid][0]
            names = sorted(labels.get(aid, set()), key=len, reverse=choose_longest_node_name)
            base = names[0] if names else "array"
            return f"{base}\\n{getattr(a, 'shape', '')}"

        def esc(text: str) -> str:
            return text.replace('"', '\\"')

        shown = {aid for aid in arrays if not (hide_readonly_arrays and aid not in written and aid not in tracked)}
        out = ["digraph Tape {", f"  rankdir={graph_direction};", "  node [fontsize=10];"]
        for aid in sorted(shown):
            extra = f' style=filled fillcolor="{tracked[aid][1]}"' if aid in tracked else ""
            a = arrays[aid]
            tip = f"array: dtype={getattr(a.dtype, '__name__', a.dtype)}, shape={tuple(a.shape)}"
            out.append(f'  a{aid} [label="{esc(label(aid))}" tooltip="{esc(tip)}" shape=ellipse{extra}];')
        scope_at: dict[int, list[tuple[str, Any]]] = {}
        for pos, name, *_ in self.scopes:
            scope_at.setdefault(pos, []).append((name, None))
        repeats = [1] * len(nodes)
        if simplify_graph:  # runs of identical launches (same kernel, same arguments) become one node
            for i in range(len(nodes) - 1, 0, -1):
                if keys[i] is not None and keys[i] == keys[i - 1] and i not in scope_at:
                    repeats[i - 1] += repeats[i]
                    repeats[i] = 0
        depth = 0
        cluster = 0
        for i, (nid, text, _r, _w) in enumerate(nodes):
            if not ignore_graph_scopes:
                for name, _ in scope_at.get(i, []):
                    if name is None:
                        if depth:
                            out.append("  }")
                            depth -= 1
                    else:
                        out.append(f'  subgraph cluster_{cluster} {{ label="{esc(str(name))}"; style=rounded;')
                        cluster += 1
                        depth += 1
            if repeats[i]:
                rep_text = f"\\n(repeated {repeats[i]}x)" if repeats[i] > 1 else ""
                out.append(f'  {nid} [label="{esc(text)}{rep_text}" shape=box style=filled fillcolor=lightgray];')
        if not ignore_graph_scopes:
            for name, _ in scope_at.get(len(nodes), []):
                if name is None and depth:
                    out.append("  }")
                    depth -= 1
        out += ["  }"] * depth
        for (nid, _, reads, writes), r in zip(nodes, repeats):
            if not r:
                continue
            out += [f"  a{aid} -> {nid};" for aid in dict.fromkeys(reads) if aid in shown]
            out += [f"  {nid} -> a{aid};" for aid in dict.fromkeys(writes) if aid in shown]
        out.append("}")
        text = "\n".join(out)
        if filename:
            with open(filename, "w") as f:
                f.write(text)
        return text
