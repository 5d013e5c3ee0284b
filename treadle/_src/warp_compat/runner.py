"""``python -m treadle.warp_compat``: run a Warp program, unchanged, with ``import warp`` resolved to Treadle.

The program runs as it would under ``python script.py`` / ``python -m module`` / ``python -c code``: the same
``sys.argv``, ``sys.path[0]``, ``__main__`` module attributes, exit code, and a traceback without the runner's own
frames.
"""

from __future__ import annotations

import io
import os
import runpy
import sys
import types
from importlib.machinery import SourceFileLoader

from .alias import install_warp_alias

USAGE = """\
usage: python -m treadle.warp_compat script.py [args ...]
       python -m treadle.warp_compat -m package.module [args ...]
       python -m treadle.warp_compat -c "code" [args ...]
       python -m treadle.warp_compat --list

Runs a program written for NVIDIA Warp with `import warp` (and the warp.* submodules Treadle
provides) resolved to Treadle, in this process and in the Python processes it starts.
A warp.* submodule Treadle does not provide fails at import with ModuleNotFoundError.
--list prints the warp.* submodules Treadle provides.
"""

# Frames of the runner and of runpy are not the program's; a traceback that reaches the top is shown without them,
# as `python script.py` would show it.
_OWN_FILES = {os.path.abspath(__file__), os.path.abspath(runpy.__file__ or "")}


def _strip_own_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        own = filename in _OWN_FILES or filename == "<frozen runpy>"
        if not own and os.path.basename(filename) == "__main__.py":
            own = os.path.basename(os.path.dirname(filename)) == "warp_compat"
        if not own:
            break
        tb = tb.tb_next
    return tb


def _new_main(**attrs: object) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__dict__.update({"__builtins__": __builtins__, "__package__": None, "__spec__": None})
    module.__dict__.update(attrs)
    return module


def _exec_in_new_main(code: types.CodeType, module: types.ModuleType) -> None:
    previous = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    # The runner's own __main__ stays referenced for as long as its frames run.
    _exec_in_new_main.previous_main = previous  # type: ignore[attr-defined]
    exec(code, module.__dict__)


def _run_script(path: str, args: list[str]) -> None:
    full = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    if os.path.isdir(full) or (os.path.isfile(full) and not full.endswith((".py", ".pyw"))):
        # A directory or zip archive with a __main__.py: runpy implements python's rules for those.
        sys.argv = [path, *args]
        sys.path[0] = full
        runpy.run_path(full, run_name="__main__")
        return
    try:
        with io.open_code(full) as f:
            source = f.read()
    except OSError as e:
        sys.stderr.write(f"{sys.executable}: can't open file {full!r}: [Errno {e.errno}] {e.strerror}\n")
        raise SystemExit(2) from None
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.realpath(full))
    from .alias import set_examples_root

    set_examples_root(full)
    code = compile(source, full, "exec", dont_inherit=True)
    module = _new_main(__file__=full, __cached__=None, __loader__=SourceFileLoader("__main__", full))
    _exec_in_new_main(code, module)


def _run_module(name: str, args: list[str]) -> None:
    sys.argv = ["-m", *args]
    sys.path[0] = os.getcwd()
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _run_code(source: str, args: list[str]) -> None:
    sys.argv = ["-c", *args]
    sys.path[0] = ""
    code = compile(source, "<string>", "exec", dont_inherit=True)
    _exec_in_new_main(code, _new_main(__loader__=None))


def main(argv: list[str] | None = None) -> None:
    """Run the program named on the command line (see :data:`USAGE`); exit as it exits.

    Args:
        argv: the runner's arguments (default ``sys.argv[1:]``).

    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        raise SystemExit(0 if argv else 2)
    if argv[0] == "--list":
        from .alias import provided_submodules

        print("\n".join(["warp", *provided_submodules()]))
        return
    mode, target, rest = "script", argv[0], argv[1:]
    if argv[0] in ("-m", "-c"):
        if len(argv) < 2:
            sys.stderr.write(f"Argument expected for the {argv[0]} option\n{USAGE}")
            raise SystemExit(2)
        mode, target, rest = argv[0], argv[1], argv[2:]
    elif argv[0] == "--":
        if len(argv) < 2:
            sys.stderr.write(USAGE)
            raise SystemExit(2)
        target, rest = argv[1], argv[2:]
    elif argv[0].startswith("-"):
        sys.stderr.write(f"unknown option {argv[0]}\n{USAGE}")
        raise SystemExit(2)

    install_warp_alias(subprocesses=True)
    try:
        if mode == "-m":
            _run_module(target, rest)
        elif mode == "-c":
            _run_code(target, rest)
        else:
            _run_script(target, rest)
    except SystemExit:
        raise
    except BaseException as exc:
        tb = _strip_own_frames(exc.__traceback__)
        if tb is None and mode == "-m" and isinstance(exc, ImportError):
            # runpy could not find or load the module itself: report it as `python -m` does.
            sys.stderr.write(f"{sys.executable}: {exc}\n")
            raise SystemExit(1) from None
        if isinstance(exc, KeyboardInterrupt):
            raise exc.with_traceback(tb) from None
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        raise SystemExit(1) from None
