"""The fingerprint of what lowering reads: the compiler's stage that names a kernel instance without lowering it.

A warm start maps this fingerprint (with the backend's own settings: ``backends/cpu/warm.py``) to the kernel's cached
binary (``runtime/warm_index.py``), so a process whose kernels are all cached never parses, lowers or emits them.
It covers everything lowering reads:

- the kernel's file (its full text: any edit of the file misses), qualified name, first line, decorator options;
- every free name the kernel's code uses (``co_names`` of its code and nested code, closure cells), resolved as the
  frontend resolves them, by value: numbers and strings, ``@func`` functions (their files, overloads, custom
  adjoints and replays, native snippets, recursively), ``@struct`` layouts, vector/matrix types, enum members,
  attributes of referenced modules and classes named in the code;
- the parameter types, module options and the code-generation settings of ``wp.config``.

Kernels, functions and arrays are recognised by their protocols (``_treadle_kernel_``, ``_treadle_function_``,
``_treadle_array_``), not by the front end's classes. A value it cannot describe (an arbitrary object, a kernel
defined in an ``exec`` string) makes :func:`fingerprint` return ``None``: the kernel then takes the normal path,
which is always correct. Treadle's own functions and classes are described by identity, and Treadle's lowering
sources by :func:`lowering_sources` (names, sizes and modification times of the files of :data:`LOWERING_PARTS`),
part of every fingerprint; a backend adds the sources of its own build (``backends/cpu/warm.py``).
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import hashlib
import operator
import os
import threading
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import config
from ..types import scalars
from ..types.arrays import is_array_object
from ..types.struct import Struct
from ..types.typesys import ArrayT, OpaqueType, TileStackT, TupleT
from ..types.vector import composite_base

#: ``wp.config`` settings that cannot change generated code (everything else is part of the fingerprint).
_CONFIG_IGNORED = frozenset({"quiet", "verbose", "log_level", "num_threads", "print_launches", "verify_cuda",
                             "kernel_cache_dir", "cache_kernels", "dump_dir", "deterministic", "native_launch"})

_STDLIB_MODULES = frozenset({"builtins", "math", "cmath", "operator", "typing", "enum", "numbers"})


#: The parts of Treadle that lowering and emission read: the error and ABI layer, types, builtins, the compiler, the
#: front end, the geometry types and functions, and the configuration.
LOWERING_PARTS = ("_src/core", "_src/types", "_src/builtins", "_src/compiler", "_src/lang", "_src/geometry",
                  "config.py")

#: the ``treadle`` package directory
TREADLE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _add_sources(path: str, add: Any) -> None:
    """``name:size:mtime`` of each ``.py`` file under directory ``path``, sorted, descending into subpackages.

    ``os.listdir`` and ``os.stat`` on plain strings: the least Python around the one ``stat`` per file.
    """
    stat = os.stat
    names = os.listdir(path)
    names.sort()
    for name in names:
        if name.endswith(".py"):
            st = stat(f"{path}/{name}")  # follows links, as the import system does
            add(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        elif "." not in name and name != "__pycache__":
            sub = f"{path}/{name}"
            try:
                st = os.lstat(sub)
            except OSError:
                continue
            if st.st_mode & 0o170000 == 0o040000:  # a directory (not a link to one)
                add(name + "/")
                _add_sources(sub, add)
                add("..")


def sources_signature(root: str, parts: tuple[str, ...]) -> str:
    """A digest of the names, sizes and modification times of the ``.py`` files of ``parts`` of directory ``root``.

    One ``stat`` per source file (an edit in place changes no directory, so nothing cheaper is safe), with as little
    Python around each as possible: every warm start pays for it.
    """
    seen: list[str] = []
    add = seen.append
    for part in parts:
        path = f"{root}/{part}"
        add(part)
        try:
            st = os.stat(path)
        except OSError:
            add("-")
            continue
        if st.st_mode & 0o170000 == 0o040000:  # a directory
            _add_sources(path, add)
        else:
            add(f"{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(seen).encode()).hexdigest()


_lowering_sig: str | None = None


def lowering_sources() -> str:
    """:func:`sources_signature` of Treadle's :data:`LOWERING_PARTS` (taken once per process)."""
    global _lowering_sig
    if _lowering_sig is None:
        _lowering_sig = sources_signature(TREADLE_ROOT, LOWERING_PARTS)
    return _lowering_sig


def forget_sources() -> None:
    """Take :func:`lowering_sources` again on next use (tests)."""
    global _lowering_sig
    _lowering_sig = None


class Unfingerprintable(Exception):
    """A kernel depends on something the fingerprint cannot describe: it takes the normal path."""


_file_memo: dict[str, tuple[int, int, str]] = {}


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (remembered per process under its size and modification time)."""
    try:
        st = os.stat(path)
    except OSError:
        raise Unfingerprintable(f"no source file {path!r}") from None
    hit = _file_memo.get(path)
    if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
        return hit[2]
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        raise Unfingerprintable(f"cannot read {path!r}") from None
    _file_memo[path] = (st.st_mtime_ns, st.st_size, digest)
    return digest


def _code_names(code: types.CodeType, out: set[str]) -> set[str]:
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


# ---------------------------------------------------------------------------------------------- values
#: id -> (value, description) for values described by identity alone (types, Treadle's and built-in functions, enum
#: members): a class's or function's description never changes while it exists
_STABLE: dict[int, tuple[Any, str]] = {}


class _Fingerprinter:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.seen: dict[int, int] = {}

    def add(self, s: str) -> None:
        self.parts.append(s)

    def stable(self, v: Any, s: str) -> None:
        """Add ``s``, the description of ``v`` that depends on its identity alone (remembered for the process)."""
        self.parts.append(s)
        _STABLE[id(v)] = (v, s)  # ``v`` is held: its id is not reused while the entry exists

    def function(self, fn: Any, closure: dict[str, Any] | None = None, depth: int = 0) -> None:
        """A Python function by its file, position, free names and defaults."""
        code = getattr(fn, "__code__", None)
        if code is None:
            raise Unfingerprintable(f"no code object for {fn!r}")
        file = code.co_filename
        if not os.path.isabs(file):
            raise Unfingerprintable(f"no source file for {fn!r}")
        self.add(f"F:{getattr(fn, '__module__', '')}:{fn.__qualname__}:{file}:{code.co_firstlineno}:"
                 f"{file_digest(file)}")
        names = _code_names(code, set())
        if closure is None:
            closure = {}
            for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:
                    closure[name] = _EMPTY
        for name in code.co_freevars:
            self.add(f"c:{name}")
            self.value(closure.get(name, _EMPTY), names, depth + 1)
        g = fn.__globals__
        for name in sorted(names):
            if name in closure:
                continue
            if name in g:
                self.add(f"g:{name}")
                self.value(g[name], names, depth + 1)
            elif hasattr(builtins, name):
                self.add(f"b:{name}")
        for d in fn.__defaults__ or ():
            self.add("d")
            self.value(d, names, depth + 1)

    def value(self, v: Any, names: set[str], depth: int) -> None:
        if depth > 8:
            raise Unfingerprintable("references nest too deeply")
        if v is None or type(v) in (bool, int, float, str, bytes, complex):
            self.add(f"{type(v).__name__}:{v!r}")
            return
        if v is _EMPTY:
            self.add("empty")
            return
        key = id(v)
        hit = _STABLE.get(key)
        if hit is not None and hit[0] is v:  # described before in this process, by identity alone
            self.parts.append(hit[1])
            return
        if key in self.seen:
            self.add(f"@{self.seen[key]}")
            return
        self.seen[key] = len(self.parts)
        self._value(v, names, depth)

    def _value(self, v: Any, names: set[str], depth: int) -> None:
        if isinstance(v, types.ModuleType):
            v = vars(v).get("_treadle_target", v)  # ``warp`` under the alias: a view of the treadle module
            mod = v.__name__
            self.add(f"M:{mod}")
            if mod in _STDLIB_MODULES:
                return
            d = vars(v)
            if "__getattr__" in d and not mod.startswith("treadle"):
                raise Unfingerprintable(f"module {mod} resolves attributes dynamically")
            for n in sorted(names):
                if n in d:
                    self.add(f"a:{n}")
                    self.value(d[n], names, depth + 1)
            return
        vt = type(v)
        if getattr(vt, "_treadle_kernel_", False) is True:  # a @kernel (the front end's Kernel)
            self.add(f"K:{v.module.name}:{v.key}")
            self.function(v.func, depth=depth)
            return
        if getattr(vt, "_treadle_function_", False) is True:  # a @func (the front end's Function)
            self.add(f"FN:{v.module}:{v.key}:{v.native_snippet!r}")
            for fn in [fd.fn for fd in v.overloads] + list(v._pending):
                self.function(fn, depth=depth)
            for extra in (*(v.custom_grads or [v.custom_grad]), v.custom_replay):
                if extra is None:
                    self.add("-")
                else:
                    self.function(extra, depth=depth)
            return
        if isinstance(v, Struct):
            self.add(f"ST:{v.native_name}:{v.hash}")
            return
        if isinstance(v, ArrayT):
            self.add(f"AT:{v.ndim}:{int(getattr(v, 'indexed', False))}")  # indexed arrays are another C++ type
            self.value(v.dtype, names, depth + 1)
            return
        if isinstance(v, TupleT):
            self.add("TT")
            for t in v.types:
                self.value(t, names, depth + 1)
            return
        if isinstance(v, TileStackT):
            self.add(f"TS:{v.capacity}")
            self.value(v.dtype, names, depth + 1)
            return
        if isinstance(v, OpaqueType):
            self.stable(v, f"OT:{v.__name__}:{getattr(v, 'cname', '')}")
            return
        if isinstance(v, type):
            if scalars.is_scalar_type(v):
                self.stable(v, f"S:{v.__name__}")
                return
            if issubclass(v, composite_base):
                params = ",".join(p.__name__ if isinstance(p, type) else str(p)
                                  for p in getattr(v, "_wp_type_params_", ()))
                self.stable(v, f"V:{v.__module__}:{v.__qualname__}:{getattr(v, '_wp_generic_type_str_', '')}({params})")
                return
        if isinstance(v, enum.Enum):
            self.stable(v, f"E:{type(v).__module__}:{type(v).__qualname__}:{v.value!r}")
            return
        if isinstance(v, (scalars.scalar_base, composite_base)):
            t = type(v)
            self.value(t, names, depth + 1)
            self.add(f"v:{v!r}")
            return
        if isinstance(v, (tuple, list)) and len(v) <= 256:
            self.add(f"{type(v).__name__}[{len(v)}]")
            for x in v:
                self.value(x, names, depth + 1)
            return
        if isinstance(v, np.generic):
            self.add(f"N:{v.dtype.str}:{v!r}")
            return
        if is_array_object(v):
            if getattr(v, "ptr", None):
                raise Unfingerprintable("an array value")
            self.add(f"AA:{v.ndim}:{getattr(v, 'shape', None)!r}")
            self.value(v.dtype, names, depth + 1)
            return
        owner: Any = None
        if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType)):
            owner = getattr(v, "__module__", None)
        if isinstance(v, types.BuiltinFunctionType) or (isinstance(v, type) and owner in _STDLIB_MODULES):
            self.stable(v, f"B:{owner}:{getattr(v, '__qualname__', getattr(v, '__name__', ''))}")
            return
        if isinstance(v, (type, types.FunctionType)) and isinstance(owner, str) and owner.split(".")[0] == "treadle":
            self.stable(v, f"TR:{owner}:{v.__qualname__}")  # part of Treadle: covered by lowering_sources()
            return
        if isinstance(v, types.FunctionType):
            self.function(v, depth=depth)
            return
        if isinstance(v, type) and isinstance(owner, str):
            # a user class named in kernel code (constants as class attributes): its file and the named attributes
            self.add(f"C:{owner}:{v.__qualname__}")
            m = __import__("sys").modules.get(owner)
            path = getattr(m, "__file__", None)
            if not path:
                raise Unfingerprintable(f"class {v.__qualname__} has no source file")
            self.add(file_digest(path))
            for n in sorted(names):
                if hasattr(v, n):
                    self.add(f"a:{n}")
                    self.value(getattr(v, n), names, depth + 1)
            return
        tmod = type(v).__module__
        if tmod.split(".")[0] == "treadle" and type(v).__qualname__ in ("_Adjoint", "GenericComposite"):
            self.add(f"TI:{type(v).__qualname__}:{v!r}")
            return
        raise Unfingerprintable(f"cannot describe a {type(v).__qualname__} value")


class _Empty:
    def __repr__(self) -> str:
        return "<empty cell>"


_EMPTY = _Empty()


_config_memo: dict[Any, str] = {}
# (names, values, (position, copy) of each list value) of ``wp.config`` at the last call, and its text: the values
# are held, so an identity that matches is the same object (no address reused); lists are compared by content too
_config_last: tuple[tuple[str, ...], tuple[Any, ...], tuple[tuple[int, tuple[Any, ...]], ...], str] | None = None


def _config_state() -> str:
    """The code-generation settings of ``wp.config`` as text (remembered per distinct set of values)."""
    global _config_last
    d = vars(config)
    names, values = tuple(d), tuple(d.values())
    last = _config_last
    if (last is not None and names == last[0] and len(values) == len(last[1])
            and all(map(operator.is_, values, last[1])) and all(tuple(values[i]) == c for i, c in last[2])):
        return last[3]
    raw = tuple((n, tuple(v) if isinstance(v, list) else v) for n, v in d.items()
                if not n.startswith("_") and n not in _CONFIG_IGNORED
                and (v is None or type(v) in (bool, int, float, str, list, tuple)))
    try:
        hit = _config_memo.get(raw)
    except TypeError:  # an unhashable list element
        hit = None
    if hit is None:
        hit = ";".join(f"{n}={v!r}" for n, v in sorted(raw, key=lambda x: x[0]))
        with contextlib.suppress(TypeError):
            _config_memo[raw] = hit
    _config_last = (names, values, tuple((i, tuple(v)) for i, v in enumerate(values) if type(v) is list), hit)
    return hit


_batch = threading.local()


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Fingerprints taken inside share the parts that do not depend on the kernel (see :func:`batch_memo`).

    A module load fingerprints its kernels in one go, with no user code running in between: the settings
    (``wp.config``, and what a backend adds: Treadle's sources, headers, compiler) cannot change from one kernel to
    the next there.
    """
    outer = getattr(_batch, "memo", None)
    if outer is None:
        _batch.memo = {}
    try:
        yield
    finally:
        if outer is None:
            _batch.memo = None


def batch_memo() -> dict[Any, Any] | None:
    """The memo of the innermost :func:`batch` of this thread (``None`` outside one): shared parts by key."""
    return getattr(_batch, "memo", None)


def fingerprint(inst: Any) -> str | None:
    """The fingerprint of what lowering a kernel instance reads, or ``None`` when it cannot be taken safely.

    The kernel's module, name and decorator options, its module's options, parameter names and types, its function
    (file, free names resolved by value, closure), default values, and the code-generation settings of ``wp.config``.
    What a backend adds to it (its compiler, flags, headers) is the backend's part of a warm-start key. Inside a
    :func:`batch` it is taken once per instance (the forward and backward passes' keys share it).
    """
    memo = batch_memo()
    if memo is not None:
        hit = memo.get(("instance", id(inst)))
        if hit is not None:
            return hit[0]  # type: ignore[no-any-return]
    digest = _fingerprint(inst)
    if memo is not None:
        memo[("instance", id(inst))] = (digest, inst)  # the instance is kept, so that its id is not reused
    return digest


def _fingerprint(inst: Any) -> str | None:
    kernel = inst.kernel
    try:
        fp = _Fingerprinter()
        fp.add(lowering_sources())
        memo = batch_memo()
        if memo is None:
            fp.add(_config_state())
        else:  # no user code runs inside a batch: wp.config cannot change from one kernel to the next
            state = memo.get("config")
            if state is None:
                state = memo["config"] = _config_state()
            fp.add(state)
        fp.add(f"K:{kernel.module.name}:{kernel.key}:{sorted(kernel.options.items())!r}")
        fp.add(repr(sorted((k, repr(v)) for k, v in kernel.module.options.items())))
        fp.add(repr(list(kernel.param_names)))
        names: set[str] = set()
        for t in inst.types:
            fp.add("t")
            fp.value(t, names, 0)
        fp.function(kernel.func, closure=getattr(kernel, "_closure", None))
        for name, d in sorted(kernel.defaults.items()):
            fp.add(f"default:{name}")
            fp.value(d, names, 0)
    except Unfingerprintable:
        return None
    except Exception:  # noqa: BLE001 - a fingerprint problem must never break a launch: take the normal path
        return None
    return hashlib.sha256("\x00".join(fp.parts).encode()).hexdigest()


__all__ = ["LOWERING_PARTS", "Unfingerprintable", "batch", "batch_memo", "file_digest", "fingerprint",
           "forget_sources", "lowering_sources", "sources_signature"]
