"""Kernels, modules and the ``@kernel`` / ``@func`` / ``constant`` decorators: declarations only.

A :class:`Kernel` holds what its decorator declares (function, key, module, options, parameter names and types);
its instances for concrete types are the CPU backend's :class:`~treadle._src.backends.cpu.kernels.CpuKernelInstance`,
which runs the compiler's stages (``compiler/instance.py``) and builds and loads them. :class:`Module` groups the
kernels and functions loaded together (``backends/cpu/kernels.py: load_module``).
"""

from __future__ import annotations

import inspect
import itertools
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

from ... import config
from ..backends.cpu.kernels import CpuKernelInstance, load_module, module_hash
from ..compiler.source import remember_source
from ..core.errors import CodegenError
from ..runtime.native import CompileOptions
from ..types import scalars
from ..types.typesys import contains_any, is_composite, normalize_annotation
from .function import Function

AnyT = Any
# ``@func`` keeps the decorated function's signature for static type checkers (its two call forms)
_P = ParamSpec("_P")
_R = TypeVar("_R")


class ModuleOptions(dict):  # type: ignore[type-arg]
    """Options set on a module; unset ones read the global ``wp.config`` value at the time they are used."""

    _DEFAULTS = {"enable_backward": "enable_backward", "max_unroll": "max_unroll", "mode": "mode",
                 "optimization_level": "optimization_level", "lineinfo": "lineinfo"}
    _FIXED = {"fast_math": False, "fuse_fp": True, "block_dim": 256, "cuda_output": None}

    def __missing__(self, key: str) -> Any:
        if key in self._DEFAULTS:
            return getattr(config, self._DEFAULTS[key])
        if key in self._FIXED:
            return self._FIXED[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key in self:
            return self[key]
        if key in self._DEFAULTS or key in self._FIXED:
            return self.__missing__(key)
        return default


class Module:
    """The kernels and functions of one Python module (or a ``module="unique"`` kernel); the unit of loading."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kernels: list[Kernel] = []
        self.functions: dict[str, Function] = {}
        self.options: ModuleOptions = ModuleOptions()
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<treadle module {self.name!r}>"

    def option(self, name: str, default: Any) -> Any:
        """The module option ``name`` (set by ``wp.set_module_options``), or ``default`` when it is unset."""
        value = self.options.get(name, default)
        return default if value is None else value

    def hash_module(self) -> str:
        """A hash of what this module's kernels compile to now (their code, options and compiler).

        Every kernel (each instance of a generic one) is lowered and emitted afresh, nothing is compiled or loaded,
        so a changed global, function target, ``wp.static`` value or option changes the hash, and the same source
        in another module gives the same hash. A kernel that does not build raises its error.
        """
        return module_hash(self)

    def load(self, device: Any = None, block_dim: Any = None) -> None:
        """Compile (or fetch from the cache) every non-generic kernel of this module in one batch."""
        load_module(self)


class ModuleRegistry:
    """All modules by name (one registry per process; ``reset`` for tests)."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        self.lock = threading.Lock()

    def get(self, name: str) -> Module:
        m = self.modules.get(name)
        if m is None:
            with self.lock:  # threads defining kernels of one module at once get the same module
                m = self.modules.get(name)
                if m is None:
                    m = Module(name)
                    self.modules[name] = m
        return m


_registry: ModuleRegistry | None = None


_REGISTRY_LOCK = threading.Lock()


def modules() -> ModuleRegistry:
    """The process-wide module registry (created lazily, once)."""
    global _registry
    if _registry is None:
        with _REGISTRY_LOCK:
            if _registry is None:
                _registry = ModuleRegistry()
    return _registry


def get_module(name: Any) -> Module:
    """The :class:`Module` with this name (a string or a Python module object)."""
    if not isinstance(name, str):
        name = getattr(name, "__name__", str(name))
    return modules().get(name)


class Kernel:
    """A function decorated with ``@kernel``."""

    _treadle_kernel_ = True

    def __init__(self, func: Callable[..., Any], key: str | None = None, module: Any = None,
                 options: dict[str, Any] | None = None, enable_backward: bool | None = None,
                 code_transformers: Any = None) -> None:
        fn = func
        remember_source(fn)  # lowered lazily: keep the source in case its file is gone by then
        if key is None:
            key = getattr(fn, "__qualname__", fn.__name__)
        if not isinstance(module, Module):
            module = get_module(_module_name(fn, module))
        self.func = fn
        self.key = key
        self.module = module
        self.options = dict(options or {})
        if enable_backward is not None:
            self.options["enable_backward"] = enable_backward
        self._src: Any = None
        # closure cells as they are now (the source, parsed on first use, resolves free names in this snapshot)
        self._closure: dict[str, Any] | None = None
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = getattr(fn, "__module__", None)
        self.param_names: list[str] = []
        self.param_types: list[Any] = []
        self.defaults: dict[str, Any] = {}
        self.instances: dict[Any, CpuKernelInstance] = {}
        self._error: Exception | None = None
        if not self._fast_signature(fn):
            self._parse_signature()
        self.is_generic = any(contains_any(t) for t in self.param_types)
        with module.lock:  # a kernel another thread defines in this module at the same time is kept too
            module.kernels = [x for x in module.kernels if x.key != key] + [self]

    @property
    def src(self) -> Any:
        """The parsed source (:class:`~..compiler.source.FuncSource`), created on first use."""
        if self._src is None:
            from ..compiler.source import FuncSource

            src = FuncSource(self.func)
            if self._closure is not None:
                src.closure = dict(self._closure)
            self._src = src
        return self._src

    @property
    def adj(self) -> Any:
        """The kernel's parsed source (``adj.source``: its text, ``adj.tree``: its AST), as the reference exposes."""
        return self.src

    def _fast_signature(self, fn: Callable[..., Any]) -> bool:
        """Parameters from the code object and evaluated annotations, without parsing the source.

        Returns False (the source is then parsed) for string annotations, missing annotations (reported with the
        parameter's line), keyword-only or variadic parameters.
        """
        code = getattr(fn, "__code__", None)
        if code is None or code.co_kwonlyargcount or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            return False
        names = list(code.co_varnames[:code.co_argcount])
        anns = getattr(fn, "__annotations__", None) or {}
        raw = [anns.get(n, inspect.Parameter.empty) for n in names]
        if any(a is inspect.Parameter.empty or isinstance(a, str) for a in raw):
            return False
        defaults = fn.__defaults__ or ()
        self.param_names = names
        self.param_types = [normalize_annotation(a) for a in raw]
        self.defaults = dict(zip(names[len(names) - len(defaults):], defaults)) if defaults else {}
        if fn.__closure__:
            closure: dict[str, Any] = {}
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:  # empty cell: assigned later in the enclosing scope
                    from ..compiler.source import MISSING

                    closure[name] = MISSING
            self._closure = closure
        return True

    def _parse_signature(self) -> None:
        from ..compiler.source import MISSING

        self.param_names, self.param_types, self.defaults = [], [], {}
        for p, node in zip(self.src.signature.parameters.values(), self.src.tree.args.args):
            self.param_names.append(p.name)
            ann = self.src.eval_annotation(node.annotation, p.annotation)
            if ann is MISSING:
                raise CodegenError(f"parameter '{p.name}' of kernel '{self.key}' has no type annotation",
                                   self.src.loc(node), f"annotate it, e.g. '{p.name}: wp.array(dtype=float)'")
            self.param_types.append(normalize_annotation(ann))
            if p.default is not inspect.Parameter.empty:
                self.defaults[p.name] = p.default

    @property
    def name(self) -> str:
        """The kernel's key (by default the function's qualified name)."""
        return self.key

    @property
    def enable_backward(self) -> bool:
        """Whether the kernel has a backward pass: its own option, else its module's, else ``wp.config``."""
        return bool(self.options.get("enable_backward", self.module.option("enable_backward",
                                                                            config.enable_backward)))

    def compile_options(self) -> Any:
        """The C++ compile options of this kernel (mode, optimization level, extra flags, NaN checks)."""
        mode = self.options.get("mode", self.module.option("mode", config.mode))
        fp = self.verify_fp()
        if fp and mode == "release":
            mode = "debug"  # verify_fp reports through the checked-mode machinery
        return CompileOptions(mode=mode, opt_level=self.module.option("optimization_level",
                                                                      config.optimization_level),
                              extra=list(config.cpu_compiler_flags), verify_fp=fp)

    def verify_fp(self) -> bool:
        """``verify_fp`` for this kernel (kernel option, else module option, else ``wp.config.verify_fp``)."""
        return bool(self.options.get("verify_fp", self.module.option("verify_fp", config.verify_fp)))

    def get_instance(self, types: tuple[Any, ...] | None) -> CpuKernelInstance:
        """The instance for concrete types (``None``: the declared types of a non-generic kernel)."""
        key_types = tuple(self.param_types) if types is None else types
        mode_key = (key_types, self.options.get("mode", self.module.option("mode", config.mode)))
        if config.verify_fp or self.options.get("verify_fp") or self.module.option("verify_fp", False):
            mode_key += (self.verify_fp(),)
        inst = self.instances.get(mode_key)
        if inst is None:
            with self.module.lock:  # one instance per key when threads ask at once; loads iterate under this lock
                inst = self.instances.get(mode_key)
                if inst is None:
                    inst = CpuKernelInstance(self, key_types)
                    self.instances[mode_key] = inst
        return inst

    def add_overload(self, types: list[Any]) -> CpuKernelInstance:
        """Instantiate a generic kernel for explicit types (``wp.overload``)."""
        key = tuple(normalize_annotation(t) for t in types)
        inst = self.get_instance(key)
        self.__dict__.setdefault("_explicit_overloads", {})[key] = inst
        return inst

    @property
    def overloads(self) -> dict[tuple[Any, ...], CpuKernelInstance]:
        """The instances added with ``wp.overload``, by argument types."""
        return dict(self.__dict__.get("_explicit_overloads", {}))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"kernel '{self.key}' cannot be called directly; launch it with wp.launch({self.__name__}, "
                        "dim, inputs=[...])")

    def __repr__(self) -> str:
        return f"<treadle kernel {self.key}>"


_unique_counter = itertools.count(1)


def _module_name(fn: Callable[..., Any], module: Any) -> str:
    if module is None:
        return getattr(fn, "__module__", "__main__") or "__main__"
    if module == "unique":  # ``next`` on a count is atomic: kernels defined in several threads get their own
        return f"{getattr(fn, '__module__', '__main__')}.{fn.__qualname__}.unique{next(_unique_counter)}"
    if isinstance(module, str):
        return module
    if isinstance(module, Module):  # wp.Module("name") made by the user: kernels and functions go into that object
        reg = modules().modules
        old = reg.get(module.name)
        if old is not module:
            if old is not None:
                module.kernels = old.kernels + [k for k in module.kernels if k not in old.kernels]
                module.functions = {**old.functions, **module.functions}
                for k in module.kernels:
                    k.module = module
            reg[module.name] = module
        return module.name
    return getattr(module, "__name__", str(module))


def kernel(f: Callable[..., Any] | None = None, *, enable_backward: bool | None = None, module: Any = None,
           name: str | None = None, launch_bounds: Any = None, module_options: dict[str, Any] | None = None,
           **options: Any) -> Any:
    """Decorate a Python function as a kernel launched over a grid of threads with :func:`launch`.

    Parameters must be annotated (``a: wp.array(dtype=float)``, ``x: float``). ``module="unique"`` gives the
    kernel a module of its own; ``enable_backward`` controls adjoint generation.
    """
    if name is not None and not (name.isidentifier() and name.isascii()):
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier (letters, digits and '_', not "
                         "starting with a digit)")
    abi = options.get("entry_point_abi", "warp")
    if abi not in ("warp", "external_constant_params"):
        raise ValueError(f"entry_point_abi must be 'warp' or 'external_constant_params', got {abi!r}")
    if abi == "external_constant_params" and enable_backward is not False:
        raise ValueError("entry_point_abi='external_constant_params' requires enable_backward=False (the entry "
                         "point has no adjoint)")

    def wrap(fn: Callable[..., Any]) -> Kernel:
        mod = get_module(_module_name(fn, module))
        if module_options:
            mod.options.update(module_options)
        key = name or getattr(fn, "__qualname__", fn.__name__)
        opts = options if launch_bounds is None else {**options, "launch_bounds": launch_bounds}  # CUDA entry
        return Kernel(fn, key, mod, opts, enable_backward)

    return wrap if f is None else wrap(f)


@overload
def func(f: Callable[_P, _R], *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Callable[_P, _R]: ...


@overload
def func(f: None = None, *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...


def func(f: Callable[..., Any] | None = None, *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Any:
    """Decorate a Python function as a function callable from kernels (and from Python, which runs it as is).

    Defining another ``@func`` with the same name in the same module adds an overload selected by argument types.
    ``inline`` (``True``/``False``/``None``) is the reference API's inlining hint: it is checked and kept as
    ``Function.inline``; the generated C++ leaves inlining to the compiler, which gives the same results.
    """
    if inline is not None and not isinstance(inline, bool):
        raise TypeError(f"wp.func(inline=...) takes True, False or None, got {inline!r}")

    def wrap(fn: Callable[..., Any]) -> Function:
        mod = get_module(_module_name(fn, module))
        key = name or getattr(fn, "__qualname__", fn.__name__)
        existing = mod.functions.get(key)
        if existing is not None and isinstance(existing, Function) and "<locals>" not in key:
            existing.add_overload(fn)
            return existing
        f_obj = Function(fn, key, mod.name)
        f_obj.inline = inline
        mod.functions[key] = f_obj
        return f_obj

    return wrap if f is None else wrap(f)


def constant(x: Any) -> Any:
    """Mark a module-level value as a kernel constant (its value is compiled into kernels that use it)."""
    if not (isinstance(x, (int, float, bool)) or isinstance(x, scalars.scalar_base) or is_composite(type(x))):
        raise TypeError(f"wp.constant() supports numbers, vectors and matrices, got {type(x).__name__}")
    return x


__all__ = ["Kernel", "Module", "kernel", "func", "constant", "get_module", "AnyT"]


def overload(kernel_or_fn: Any, arg_types: Any = None) -> Any:
    """Instantiate a generic kernel for concrete argument types.

    Forms: ``wp.overload(k, [wp.array(dtype=float), float])``, ``wp.overload(k, {"x": float})``, or as a decorator
    on a function with concrete annotations and the same name as an existing generic kernel.
    """
    if isinstance(kernel_or_fn, Kernel):
        k = kernel_or_fn
        if isinstance(arg_types, dict):
            types = [arg_types.get(n, t) for n, t in zip(k.param_names, k.param_types)]
        elif arg_types is not None:
            types = list(arg_types)
        else:
            raise TypeError("wp.overload(kernel, arg_types) needs a list or dict of argument types")
        if len(types) != len(k.param_names):
            raise TypeError(f"kernel '{k.key}' has {len(k.param_names)} parameters, got {len(types)} types")
        k.add_overload(types)
        return k
    fn = kernel_or_fn
    ret = inspect.signature(fn).return_annotation
    if ret not in (inspect.Signature.empty, None, type(None)) and not (
            isinstance(ret, str) and ret.replace(" ", "") in ("None", "type(None)", "NoneType", "types.NoneType")):
        raise TypeError("Return annotations are not allowed on @wp.overload stubs (kernels return nothing)")
    mod = get_module(_module_name(fn, None))
    key = getattr(fn, "__qualname__", fn.__name__)
    # The generic kernel of the same Python function name (its key may differ: @wp.kernel(name=...)).
    found = [k for k in mod.kernels if k.key == key or getattr(k.func, "__qualname__", None) == key]
    if len({id(k) for k in found}) > 1:
        keys = ", ".join(sorted(k.key for k in found))
        raise RuntimeError(f"Ambiguous kernel lookup for @wp.overload '{key}': several kernels ({keys}) were made "
                           "from this function; use wp.overload(kernel, arg_types) instead")
    generic = found[0] if found else None
    if generic is None:
        raise TypeError(f"@wp.overload: no generic kernel named '{key}' is defined before this overload")
    hints = [inspect.signature(fn).parameters[n].annotation for n in generic.param_names]
    generic.add_overload(hints)
    return generic


class ModuleBuildOptions:
    """Build options of a module (accepted for compatibility; see :func:`set_module_options`)."""

    def __init__(self, **options: Any) -> None:
        self.__dict__.update(options)


def static(expr: Any) -> Any:
    """Evaluate an expression when the kernel is built (inside kernels); in Python scope it returns ``expr``."""
    return expr


static._treadle_static_ = True  # type: ignore[attr-defined]


class _Adjoint:
    """``wp.adjoint[x]`` inside a ``@func_grad`` body: the adjoint of parameter ``x`` (accumulate into it)."""

    _treadle_adjoint_ = True

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("wp.adjoint[...] can only be used inside a @wp.func_grad function")

    def __repr__(self) -> str:
        return "wp.adjoint"


adjoint = _Adjoint()


def func_grad(forward: Any) -> Any:
    """Give a ``@func`` a hand-written adjoint.

    The decorated function takes the forward function's parameters followed by the adjoint of its return value,
    and accumulates into ``wp.adjoint[param]``::

        @wp.func_grad(safe_sqrt)
        def adj_safe_sqrt(x: float, adj_ret: float):
            if x > 0.0:
                wp.adjoint[x] += adj_ret / (2.0 * wp.sqrt(x))
    """
    if not isinstance(forward, Function):
        raise TypeError("@wp.func_grad(f) needs a @wp.func f")

    def deco(fn: Any) -> Any:
        forward.custom_grad = fn
        forward.custom_grads.append(fn)
        for fdef in forward.overloads:
            for inst in fdef.instances.values():
                inst._ir = None  # re-lower with the new adjoint
        return fn

    return deco


def func_replay(forward: Any) -> Any:
    """Give a ``@func`` a replacement used when the backward pass replays the forward computation."""
    if not isinstance(forward, Function):
        raise TypeError("@wp.func_replay(f) needs a @wp.func f")

    def deco(fn: Any) -> Any:
        forward.custom_replay = fn
        return fn

    return deco


class _GradOf:
    """``wp.grad(f)``: in kernels, calling it returns the gradient of ``f`` w.r.t. each argument."""

    def __init__(self, func: Any) -> None:
        self._treadle_grad_of_ = func

    def __call__(self, *args: Any) -> Any:
        raise RuntimeError("wp.grad(f)(...) can only be called inside a kernel or @wp.func")


def grad(func: Any) -> Any:
    """A callable computing the gradient of a scalar-valued ``@func`` or builtin (forward-only, in kernels)."""
    return _GradOf(func)


grad._treadle_compile_time_ = True  # type: ignore[attr-defined]


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None) -> Any:
    """Register a function implemented by a native C++ snippet.

    The decorated Python function is a typed stub (body ``...``); its parameter names are the variable names in
    the snippet, and arrays support ``a[i]`` there. ``adj_snippet`` accumulates into ``adj_<name>`` variables
    (``adj_ret`` holds the adjoint of the result); ``replay_snippet`` replaces ``snippet`` when the backward pass
    replays the forward computation.
    """

    def deco(fn: Any) -> Any:
        f = func(fn)
        f.native_snippet = (snippet, adj_snippet, replay_snippet)
        return f

    return deco
