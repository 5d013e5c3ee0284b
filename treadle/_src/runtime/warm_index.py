"""Warm start: from a kernel's Python source straight to its cached binary, without lowering or emitting.

The kernel cache (``runtime/cache.py``) is keyed by the generated C++; finding that key means parsing, lowering
and emitting every kernel, which costs milliseconds per kernel at each process start. This index maps a
*source fingerprint* to the kernel key, its library and the little launch metadata the runtime needs, so a
process whose kernels are all cached loads their libraries directly.

The fingerprint covers everything lowering reads:

- the kernel's file (its full text: any edit of the file misses), qualified name, first line, decorator options;
- every free name the kernel's code uses (``co_names`` of its code and nested code, closure cells), resolved as the
  frontend resolves them, by value: numbers and strings, ``@func`` functions (their files, overloads, custom
  adjoints and replays, native snippets, recursively), ``@struct`` layouts, vector/matrix types, enum members,
  attributes of referenced modules and classes named in the code;
- the parameter types, compile options, module options and the code-generation settings of ``wp.config``;
- the compiler identity, the native headers and Treadle's own sources (names, sizes and modification times).

A value it cannot describe (an arbitrary object, a kernel defined in an ``exec`` string) makes the kernel skip
the index: it then takes the normal path, which is always correct. Entries live in ``<cache>/warm/`` as small JSON
files written atomically; an entry whose library changed (size, modification time, inode) since it was recorded is
ignored.
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import hashlib
import json
import operator
import os
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ... import config
from .cache import get_cache, unsafe_reason

FORMAT = "treadle-warm-2"

#: ``wp.config`` settings that cannot change generated code (everything else is part of the fingerprint).
_CONFIG_IGNORED = frozenset({"quiet", "verbose", "log_level", "num_threads", "print_launches", "verify_cuda",
                             "kernel_cache_dir", "cache_kernels", "dump_dir", "deterministic", "native_launch"})

_STDLIB_MODULES = frozenset({"builtins", "math", "cmath", "operator", "typing", "enum", "numbers"})


class Unfingerprintable(Exception):
    """A kernel depends on something the index cannot describe: it takes the normal path."""


# ---------------------------------------------------------------------------------------------- files, sources
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


_toolkit_sig: str | None = None

#: The parts of Treadle that decide what a kernel compiles to (frontend, builtins, types, emitters, backends).
_CODEGEN_PARTS = ("_src/compiler", "_src/builtins", "_src/lang", "_src/backends", "_src/geometry", "config.py",
                  "_src/runtime/warm_index.py")


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


def sources_signature(root: str, parts: tuple[str, ...] = _CODEGEN_PARTS) -> str:
    """A digest of the names, sizes and modification times of the ``.py`` files of ``parts`` of directory ``root``."""
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


def treadle_signature() -> str:
    """Names, sizes and modification times of Treadle's code-generating sources (once per process).

    The native headers are covered by ``pipeline.header_hash``. One ``stat`` per source file (an edit in place
    changes no directory, so nothing cheaper is safe), with as little Python around each as possible: every warm
    start pays for it.
    """
    global _toolkit_sig
    if _toolkit_sig is None:
        # the ``treadle`` package
        _toolkit_sig = sources_signature(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return _toolkit_sig


def forget_signature() -> None:
    """Take :func:`treadle_signature` again on next use (tests)."""
    global _toolkit_sig
    _toolkit_sig = None


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
        scalars, Function, Kernel, Struct, ArrayT, OpaqueType, TupleT, composite_base, array, np = _types()
        if isinstance(v, types.ModuleType):
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
        if isinstance(v, Kernel):
            self.add(f"K:{v.module.name}:{v.key}")
            self.function(v.func, depth=depth)
            return
        if isinstance(v, Function):
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
        if isinstance(v, array):
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
            self.stable(v, f"TR:{owner}:{v.__qualname__}")  # part of Treadle: covered by treadle_signature()
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


_TYPES: tuple[Any, ...] | None = None


def _types() -> tuple[Any, ...]:
    global _TYPES
    if _TYPES is None:
        import numpy as np

        from ..lang.array import array
        from ..lang.function import Function
        from ..lang.kernel import Kernel
        from ..types import scalars
        from ..types.struct import Struct
        from ..types.typesys import ArrayT, OpaqueType, TupleT
        from ..types.vector import composite_base

        _TYPES = (scalars, Function, Kernel, Struct, ArrayT, OpaqueType, TupleT, composite_base, array, np)
    return _TYPES


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


_MODULES: tuple[Any, ...] | None = None


def _modules() -> tuple[Any, ...]:
    """``backends.cpu``, ``compiler.pipeline`` and ``warm_env`` (imported once: no import statement per kernel)."""
    global _MODULES
    if _MODULES is None:
        from ..compiler import pipeline
        from . import native as cpu
        from . import warm_env

        _MODULES = (cpu, pipeline, warm_env)
    return _MODULES


_batch = threading.local()


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Fingerprints taken inside share their settings part (computed once per distinct compile options).

    ``Module.load`` fingerprints its kernels in one go, with no user code running in between: the settings
    (Treadle's sources, headers, compiler, ``wp.config``) cannot change from one kernel to the next there.
    """
    outer = getattr(_batch, "memo", None)
    if outer is None:
        _batch.memo = {}
    try:
        yield
    finally:
        if outer is None:
            _batch.memo = None


def _settings(options: Any) -> str:
    """The part of every fingerprint that does not depend on the kernel: format, sources, toolchain, settings."""
    cpu, pipeline, _ = _modules()
    backend = cpu.get_cpu_backend()
    return "\x00".join((FORMAT, config.version, treadle_signature(), pipeline.header_hash(),
                         backend.identity(options),
                         backend.loop_compiler_signature(),  # kernels with loops may be built by another compiler
                         _config_state()))


def fingerprint(inst: Any) -> str | None:
    """The warm-start fingerprint of a kernel instance, or ``None`` when it cannot be taken safely."""
    if not config.cache_kernels or config.dump or inst.options.mode == "debug":
        return None
    kernel = inst.kernel
    try:
        _, _, warm_env = _modules()
        warm_env.prime()
        fp = _Fingerprinter()
        memo = getattr(_batch, "memo", None)
        if memo is None:
            fp.add(_settings(inst.options))
        else:
            o = inst.options
            key = (o.mode, o.opt_level, tuple(o.extra), o.verify_fp, o.cxx)
            settings = memo.get(key)
            if settings is None:
                settings = memo[key] = _settings(o)
            fp.add(settings)
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
        warm_env.remember()
    except Unfingerprintable:
        return None
    except Exception:  # noqa: BLE001 - a fingerprint problem must never break a launch: take the normal path
        return None
    return hashlib.sha256("\x00".join(fp.parts).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- the index
_HEX_DIGITS = frozenset("0123456789abcdef")


def _hex(s: Any, lo: int, hi: int) -> bool:
    """Whether ``s`` is lowercase hexadecimal of ``lo`` to ``hi`` digits (no regular expression to compile at start)."""
    return isinstance(s, str) and lo <= len(s) <= hi and _HEX_DIGITS.issuperset(s)


def _root() -> str:
    return str(get_cache().root)


def _read_trusted(path: str) -> str | None:
    """A cache file's text, if it is ours and not writable by group or others (the kernel cache's own rule)."""
    try:
        fd = os.open(path, os.O_RDONLY)  # no file object: these small reads are on every warm start's path
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if unsafe_reason(path, st) is not None:
            return None
        chunks = []
        while True:
            want = max(st.st_size + 1, 4096)
            b = os.read(fd, want)
            chunks.append(b)
            if len(b) < want:  # the end of a regular file (cache files are replaced, never appended to)
                break
        return b"".join(chunks).decode()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def lookup(fp: str) -> dict[str, Any] | None:
    """The recorded entry for ``fp`` when its library is still the one recorded, else ``None``."""
    root = _root()
    text = _read_trusted(os.path.join(root, "warm", f"w_{fp[:40]}.json"))
    if text is None:
        return None
    try:
        entry = json.loads(text)
        if entry.get("format") != FORMAT or entry.get("fp") != fp:
            return None
        name, key = entry["lib"], entry["key"]
        # a library name inside the cache's library directory, a full-width key
        if not (isinstance(name, str) and name.startswith("b_") and name.endswith(".so") and _hex(name[2:-3], 16, 64)
                and _hex(key, 64, 64)):
            return None
        lib = os.path.join(root, "lib", name)
        st = os.stat(lib)
        if [st.st_size, st.st_mtime_ns, st.st_ino] != entry["stat"] or unsafe_reason(lib, st) is not None:
            return None
        # the kernel cache still points this kernel at that library (not cleared, found damaged or rebuilt)
        if _read_trusted(os.path.join(root, "ref", f"k_{key}.ref")) != entry["ref"]:
            return None
        entry["lib_path"] = Path(lib)
    except (OSError, KeyError, TypeError, ValueError, AttributeError):
        return None
    return entry


def record(fp: str, inst: Any, order_dependent: bool) -> None:
    """Remember a bound kernel instance under ``fp`` (best effort: failures only cost the next warm start)."""
    built = inst.built
    lib = built.lib_path
    if lib is None:
        return
    with contextlib.suppress(OSError, TypeError, ValueError):
        from .cache import _make_private_dir

        cache = get_cache()
        if cache.lookup(built.key) != lib:  # verified (owner, permissions, checksum) once, when the entry is written
            return
        st = os.stat(lib)
        ref = (cache.root / "ref" / f"k_{built.key}.ref").read_text()
        entry = {"format": FORMAT, "fp": fp, "key": built.key, "symbol": built.symbol, "lib": lib.name, "ref": ref,
                 "stat": [st.st_size, st.st_mtime_ns, st.st_ino], "launch_ndim": int(inst.launch_ndim),
                 "order_dependent": bool(order_dependent), "name": built.name, "cxx": inst.options.cxx}
        d = cache.root / "warm"
        _make_private_dir(d)
        path = d / f"w_{fp[:40]}.json"
        tmp = d / f"{path.name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(entry))
        os.replace(tmp, path)


__all__ = ["fingerprint", "lookup", "record", "file_digest", "treadle_signature", "Unfingerprintable"]
