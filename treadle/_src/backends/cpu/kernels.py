"""CPU kernel instances: a compiler instance with its CPU build, and the batched loading of modules.

:class:`CpuKernelInstance` adds to the compiler's :class:`~treadle._src.compiler.instance.KernelInstance` (lower,
emit, fingerprint) what running it on the CPU needs: the built library (``built``, from ``build.py``), the bound
entry points (``entry``, ``backward_entry``), the checked-mode error reader, and the warm-start state (``warm``: an
entry of the warm-start index, ``warm.py``). CUDA launches and the interpreter read only the compiler's part.

:func:`load_module` builds every kernel of a module that the cache lacks in one batch (one translation unit per
compile options), :func:`load_backward` the backward passes of several instances, and :func:`module_hash` keys what
a module's kernels compile to now.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
from typing import Any

from .... import config
from ...compiler import emit_adjoint, fingerprint
from ...compiler.instance import KernelInstance
from ...core.errors import CheckedModeError, TreadleError, checked_mode_message
from ...runtime import warm_index
from . import build, warm


class CpuKernelInstance(KernelInstance):
    """A kernel instance with its CPU build: C++ block and cache key, and once loaded, its entry points."""

    def __init__(self, kernel: Any, types: tuple[Any, ...], options: Any = None) -> None:
        super().__init__(kernel, types, options)
        self.built: Any = None
        self._entry: Any = None
        self._bind_pending = False
        #: set when the instance was found in the warm-start index: launch metadata recorded with its binary
        self.warm: dict[str, Any] | None = None
        self._warm_fp: str | None = None
        self.checked_error: Any = None
        self._bwd_built: Any = None
        self._bwd_options: Any = None
        #: dropped-gradient warnings of a backward pass built ahead of need, issued when the gradient is asked for
        self._bwd_warnings: list[str] = []
        #: the backward pass's warm-start key while its build is to be recorded, the texts of its warnings, and
        #: whether ``_bwd_built`` came from the warm-start index (a library with no source)
        self._bwd_fp: str | None = None
        self._bwd_texts: list[str] = []
        self._bwd_warm = False
        self.backward_entry: Any = None
        #: the CPU launch plan (``launch.py``), made at the first launch
        self.plan: Any = None

    @property
    def entry(self) -> Any:
        """The compiled forward entry point (``None`` until loaded).

        A kernel found in the warm-start index has a built, verified library, which is loaded (``dlopen``) only
        when the entry point is first needed: loading a module whose kernels are all cached costs no library loads.
        """
        if self._entry is None and self._bind_pending:
            with self.kernel.module.lock:
                if self._bind_pending:
                    try:
                        self.bind()
                    finally:  # cleared only now: another thread that saw it set waits for the lock, then the entry
                        self._bind_pending = False
        return self._entry

    @entry.setter
    def entry(self, value: Any) -> None:
        self._entry = value

    @property
    def loaded(self) -> bool:
        """Whether the entry point is bound or ready to bind at first use (nothing left to compile)."""
        return self._entry is not None or self._bind_pending

    def defer_bind(self) -> None:
        """Bind the entry point at its first use (the instance's library is built and verified)."""
        self._bind_pending = True

    @property
    def launch_ndim(self) -> int:
        """The launch dimensionality (from the warm-start entry while the kernel is not lowered)."""
        if self._ir is None and self.warm is not None:
            return int(self.warm["launch_ndim"])
        return KernelInstance.launch_ndim.fget(self)  # type: ignore[attr-defined,no-any-return]

    @launch_ndim.setter
    def launch_ndim(self, value: int) -> None:
        self._launch_ndim = value

    def order_dependent(self) -> bool:
        """Whether results depend on the order threads run in (recorded in the warm-start index)."""
        if self._ir is None and self.warm is not None:
            return bool(self.warm["order_dependent"])
        return super().order_dependent()

    def heavy_threads(self) -> bool:
        """Whether small launches are probed for long threads (recorded in the warm-start index)."""
        if self._ir is None and self.warm is not None:
            return bool(self.warm.get("heavy_threads", False))
        return super().heavy_threads()

    def access_facts(self) -> tuple[set[int], set[int], set[int], set[int]]:
        """The array-access facts a recording tape reads (from the warm-start entry while the kernel is not lowered)."""
        if self._access is None and self._ir is None and self.warm is not None:
            acc = self.warm.get("access")
            if (isinstance(acc, list) and len(acc) == 4
                    and all(isinstance(p, list) and all(type(i) is int for i in p) for p in acc)):
                self._access = (set(acc[0]), set(acc[1]), set(acc[2]), set(acc[3]))
        return super().access_facts()

    def prepare(self, loop_compiler: bool = True) -> None:
        """Emit C++ and compute the cache key (once); a kernel found in the warm-start index skips both.

        ``loop_compiler=False`` keeps the default compiler for kernels with loops (and skips the index).
        """
        if self.built is None:
            fp = warm.warm_key(self) if loop_compiler else None
            if fp is not None:
                entry = warm_index.lookup(fp)
                if entry is not None:
                    b = build.Built("", entry["symbol"], entry["key"], None, self.kernel.key)
                    b.lib_path = entry["lib_path"]
                    self.warm = entry
                    self.built = b
                    self.options = self.options.with_cxx(entry.get("cxx"))
                    return
                self._warm_fp = fp
            if loop_compiler:
                self.options = build.kernel_options(self.ir, self.deps, self.options)
            self.built = build.prepare(self.ir, self.deps, self.options, self.kernel.key)

    def bind(self) -> None:
        """Bind the forward entry point (a damaged cache entry is dropped and built again, once)."""
        try:
            fn = build.load_symbol(self.built.lib_path, self.built.symbol)
        except (OSError, AttributeError) as e:
            from ...runtime.cache import get_cache

            cache = get_cache()
            cache._discard(cache.root / "ref" / f"k_{self.built.key}.ref")
            if self.warm is not None:  # a warm-index hit carries no source: emit it the normal way
                self.warm = None
                self.built = None
                self.prepare()
                self._warm_fp = None
            build.compile_batch([self.built], self.options)
            try:
                fn = build.load_symbol(self.built.lib_path, self.built.symbol)
            except (OSError, AttributeError):
                raise TreadleError(f"cannot load the compiled kernel '{self.kernel.key}': {e}") from None
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32]
        self.entry = fn
        if self._warm_fp is not None:
            b = self.built
            warm_index.record(self._warm_fp, b.key, b.lib_path, b.symbol,
                              {"launch_ndim": self.launch_ndim, "order_dependent": self.order_dependent(),
                               "heavy_threads": self.heavy_threads(), "name": b.name, "cxx": self.options.cxx, "access": self.access_facts()})
            self._warm_fp = None
        if self.options.mode == "debug":
            err = build.load_library(self.built.lib_path).treadle_checked_error
            err.restype = ctypes.c_int
            err.argtypes = [ctypes.c_void_p]
            self.checked_error = err

    def backward_built(self) -> Any:
        """The emitted backward pass (created on first use: forward-only programs never pay for it)."""
        if self._bwd_built is None:
            if not self.kernel.enable_backward:
                raise TreadleError(f"kernel '{self.kernel.key}' was defined with enable_backward=False, so it has "
                                   "no adjoint; remove that option (kernel, module or wp.config) to differentiate it")
            if self._bwd_fp is None and self._backward_from_warm_index():
                return self._bwd_built
            texts: list[str] = []
            try:  # the warnings are collected to be recorded with the build, then issued (or deferred) as before
                with emit_adjoint.deferred_dropped_warnings() as texts:
                    self._bwd_built = build.prepare_adjoint(self.ir, self.deps, self.backward_options(),
                                                            self.kernel.key)
            finally:
                emit_adjoint.pass_on_dropped(texts)
            self._bwd_texts = list(texts)
        return self._bwd_built

    def _backward_from_warm_index(self) -> bool:
        """Take the backward pass from the warm-start index (no lowering, no emitting); else remember its key."""
        fp = warm.warm_key(self, backward=True)
        if fp is None:
            return False
        entry = warm_index.lookup(fp)
        if entry is None:
            self._bwd_fp = fp
            return False
        texts = entry.get("warnings", [])
        b = build.Built("", entry["symbol"], entry["key"], name=f"{self.kernel.key} (backward)", kind="backward")
        b.lib_path = entry["lib_path"]
        self._bwd_built, self._bwd_warm = b, True
        self._bwd_options = self.backward_options().with_cxx(entry.get("cxx"))
        if isinstance(texts, list):
            self._bwd_warnings.extend(t for t in texts if isinstance(t, str))
        return True

    def bind_warm_backward(self) -> bool:
        """Bind a backward pass found in the warm-start index; a damaged library is dropped (emitted again later)."""
        if not self._bwd_warm or self.backward_entry is not None:
            return self.backward_entry is not None
        try:
            _bind_backward(self, self._bwd_built)
            return True
        except (OSError, AttributeError):
            from ...runtime.cache import get_cache

            cache = get_cache()
            cache._discard(cache.root / "ref" / f"k_{self._bwd_built.key}.ref")
            self._bwd_built, self._bwd_warm, self._bwd_options = None, False, None
            return False

    def backward_options(self) -> Any:
        """The compile options of the backward pass (``build.adjoint_options``).

        After a failed build with the loop compiler, the forward's options.
        """
        if self._bwd_options is None:
            self._bwd_options = build.adjoint_options(self.options)
        return self._bwd_options

    def backward_with_forward_compiler(self) -> Any:
        """Emit the backward pass again for the forward's compile options (after the loop compiler failed on it)."""
        self._bwd_options, self._bwd_built = self.options, None
        return self.backward_built()

    def ensure_backward(self) -> Any:
        """The backward entry point, compiled or fetched from the cache."""
        fn = self.backward_entry
        if fn is None and self._bwd_warm:
            with self.kernel.module.lock:
                self.bind_warm_backward()
            fn = self.backward_entry
        if fn is None or self._bwd_warnings:
            load_backward([self])
            fn = self.backward_entry
        return fn

    def issue_backward_warnings(self) -> None:
        """Issue the warnings of a backward pass that was emitted before its gradient was asked for."""
        texts, self._bwd_warnings = self._bwd_warnings, []
        for text in texts:
            emit_adjoint.warn_dropped_text(text, stacklevel=4)

    def check_errors(self) -> None:
        """In checked mode: raise the first failed runtime check of the last launch, at the user's line."""
        err = self.checked_error
        if err is None:
            return
        buf = (ctypes.c_longlong * 8)()
        if not err(ctypes.addressof(buf)):
            return
        text = checked_mode_message(list(buf), self.built.locs, self.kernel.key)
        raise CheckedModeError(text)

    def ensure_loaded(self) -> None:
        """Build (or find in the cache) and bind the forward entry point; a non-generic kernel loads its module.

        Under the module's lock: threads launching the same new kernel (or instance of a generic one) at once build
        it once, and none sees it half-built.
        """
        if self.entry is not None:
            return
        with self.kernel.module.lock:
            self._ensure_loaded_locked()

    def _ensure_loaded_locked(self) -> None:
        if self.entry is None:
            self.prepare()
            if self.built.error is not None:
                raise self.built.error
            grads = gradients_expected(self.kernel.module)
            if self.kernel.is_generic:
                load_instances([self], with_backward=grads)
            else:
                self.kernel.module.load()
                if self.entry is None and self.built.error is None:
                    load_instances([self], with_backward=grads)
            if self.built.error is not None:
                raise self.built.error


def load_instances(insts: list[CpuKernelInstance], with_backward: bool = False) -> None:
    """Compile what the cache lacks, in one translation unit per compile options, then bind entry points.

    With ``with_backward``, the backward passes of the instances (those that have one) are built in the same
    parallel batch as the forward passes (:func:`gradients_expected` says when).
    """
    by_opts: dict[str, list[CpuKernelInstance]] = {}
    for inst in insts:
        by_opts.setdefault(inst.options.key(), []).append(inst)
    batches: list[tuple[list[Any], Any]] = []
    for group in by_opts.values():
        builts = [inst.built for inst in group if inst.warm is None]  # warm-index hits have their library
        if builts:
            batches.append((builts, group[0].options))
    bwd = _speculative_backward(insts) if with_backward else []
    bwd_opts: dict[str, list[CpuKernelInstance]] = {}
    for inst in bwd:
        bwd_opts.setdefault(inst.backward_options().key(), []).append(inst)
    for group in bwd_opts.values():
        batches.append(([inst._bwd_built for inst in group], group[0].backward_options()))
    build.compile_batches(batches)
    for inst in insts:
        if inst.built.error is not None and inst.options.cxx is not None:
            # the loop compiler (see NativeCompiler.loop_compiler) rejected it: build it with the default one
            inst.options = inst.options.with_cxx(None)
            inst.built, inst._warm_fp = None, None
            inst.prepare(loop_compiler=False)
            build.compile_batch([inst.built], inst.options)
        if inst.built.error is None:
            if inst.warm is not None:
                inst.defer_bind()  # a verified binary found through the warm-start index: loaded at first use
            else:
                inst.bind()
    for inst in bwd:
        b = inst._bwd_built
        if b.error is None and inst.built.error is None:
            _bind_backward(inst, b)
        else:  # built again, alone and with the fallbacks, if the backward pass is ever asked for
            inst._bwd_built = None
            inst._bwd_options = None


def _speculative_backward(insts: list[CpuKernelInstance]) -> list[CpuKernelInstance]:
    """The instances whose backward pass can be emitted now (it is emitted; a kernel that fails is left out)."""
    out = []
    for inst in insts:
        if inst.backward_entry is not None or not inst.kernel.enable_backward:
            continue
        try:
            with emit_adjoint.deferred_dropped_warnings() as texts:
                inst.backward_built()
        except Exception:  # noqa: BLE001 - reported if that backward pass is ever asked for
            inst._bwd_built = None
            continue
        finally:
            inst._bwd_warnings.extend(texts)  # issued if and when the gradient is asked for
        if not inst._bwd_warm:  # one found in the warm-start index is bound at its first use
            out.append(inst)
    return out


def _bind_backward(inst: CpuKernelInstance, b: Any) -> None:
    fn = build.load_symbol(b.lib_path, b.symbol, "backward")
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32]
    inst.backward_entry = fn
    if inst._bwd_fp is not None and not inst._bwd_warm:  # found by the next process without lowering or emitting
        warm_index.record(inst._bwd_fp, b.key, b.lib_path, b.symbol,
                          {"launch_ndim": inst.launch_ndim, "order_dependent": inst.order_dependent(),
                           "name": b.name, "cxx": inst.backward_options().cxx, "warnings": inst._bwd_texts})
        inst._bwd_fp = None


def gradients_expected(module: Any) -> bool:
    """Whether the kernels of ``module`` being loaded now will be differentiated, so build their backward passes too.

    True while a ``wp.Tape`` records on this thread (the launch that loads the module is being recorded) and once a
    backward pass of any kernel of the module was asked for. A program that never records a launch nor asks for a
    gradient never builds a backward pass.
    """
    if getattr(module, "_gradients_seen", False):
        return True
    from ...runtime.recording import active_tape

    return active_tape() is not None


def load_backward(insts: list[CpuKernelInstance]) -> None:
    """Compile the backward passes of several kernel instances in one batch and bind their entry points.

    Holds the locks of the instances' modules (taken in one order, so two threads never wait on each other): a
    backward pass two threads need at once is built once, and none binds it half-built.
    """
    for inst in insts:
        if inst._bwd_warnings:
            inst.issue_backward_warnings()
    todo = list({id(i): i for i in insts if i.backward_entry is None}.values())
    if not todo:
        return
    mods = sorted({id(i.kernel.module): i.kernel.module for i in todo}.items())
    with contextlib.ExitStack() as stack:
        for _, m in mods:
            stack.enter_context(m.lock)
            m._gradients_seen = True  # the module's kernels loaded from now on get their backward pass with them
        _load_backward_locked([i for i in todo if i.backward_entry is None])


def _load_backward_locked(todo: list[CpuKernelInstance]) -> None:
    if not todo:
        return
    by_opts: dict[str, list[CpuKernelInstance]] = {}
    for inst in todo:
        inst.ensure_loaded()
    todo = [i for i in todo if i.backward_entry is None]  # loading the module may have built them
    for inst in todo:
        inst.backward_built()
    todo = [i for i in todo if not i.bind_warm_backward()]  # found in the warm-start index
    for inst in todo:
        by_opts.setdefault(inst.backward_options().key(), []).append(inst)
    build.compile_batches([([inst.backward_built() for inst in group], group[0].backward_options())
                           for group in by_opts.values()])
    for group in by_opts.values():
        for inst in group:
            b = inst.backward_built()
            if b.error is not None and inst.backward_options().cxx != inst.options.cxx:
                b = inst.backward_with_forward_compiler()  # the loop compiler rejected it
                build.compile_batch([b], inst.options)
            if b.error is not None:
                raise b.error
            _bind_backward(inst, b)


def load_module(module: Any) -> None:
    """Compile (or fetch from the cache) every non-generic kernel of ``module`` in one batch.

    When :func:`gradients_expected`, their backward passes are built in the same batch.
    """
    with module.lock:
        pending: list[CpuKernelInstance] = []
        for k in module.kernels:
            if k.is_generic:
                pending.extend(inst for inst in k.instances.values() if not inst.loaded)
                continue
            try:
                inst = k.get_instance(None)
            except Exception:  # noqa: BLE001 - reported when that kernel itself is launched
                continue
            if not inst.loaded:
                pending.append(inst)
        ready: list[CpuKernelInstance] = []
        with fingerprint.batch():
            for inst in pending:
                try:
                    inst.prepare()
                    ready.append(inst)
                except Exception:  # noqa: BLE001 - reported when that kernel itself is launched
                    continue
            if ready:  # in the batch: the backward passes' warm-start keys reuse the forward's fingerprints
                load_instances(ready, with_backward=gradients_expected(module))


def module_hash(module: Any) -> str:
    """A hash of what ``module``'s kernels compile to now (their code, options and compiler).

    Every kernel (each instance of a generic one) is lowered and emitted afresh, nothing is compiled or loaded, so a
    changed global, function target, ``wp.static`` value or option changes the hash, and the same source in another
    module gives the same hash. A kernel that does not build raises its error.
    """
    h = hashlib.sha256()
    with config.override(line_directives=False):  # source file paths are not part of what the code does
        for k in sorted(module.kernels, key=lambda k: k.key):
            generic = k.is_generic
            type_sets = {inst.types for inst in k.instances.values()} if generic else {tuple(k.param_types)}
            for types in sorted(type_sets, key=repr):
                fresh = CpuKernelInstance(k, types)
                fresh.prepare(loop_compiler=False)  # no warm-start index: lowered from the current globals
                h.update(f"{k.key}:{fresh.built.key};".encode())
    return h.hexdigest()


__all__ = ["CpuKernelInstance", "gradients_expected", "load_backward", "load_instances", "load_module", "module_hash"]
