"""Compile cost of ``treadle.h``: a one-kernel translation unit that includes it against an empty one.

``python benchmarks/header_compile.py`` compiles each (``-O3 -fPIC -shared``, with ``-fopenmp`` where the compiler
takes it) ``--reps`` times with every C++ compiler found (``g++``, ``clang++``) and prints the best times and the
difference: what including the native headers adds to every kernel library built without a precompiled header
(target: under 0.4 s). The machine may be shared and noisy: compare figures from the same run only.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NATIVE = Path(__file__).resolve().parent.parent / "treadle" / "native"

_TU = ('#include "treadle.h"\n'
       'extern "C" void kernel(treadle::array_t<float> a, treadle::array_t<treadle::vec_t<3, float>> v) {\n'
       "    treadle::store(a, 0, treadle::length(treadle::load(v, 1)) + treadle::sin(treadle::load(a, 1)));\n"
       "}\n")
_EMPTY = 'extern "C" void kernel(float* a) { a[0] = a[1]; }\n'


def best_time(cxx: str, src: Path, out: Path, flags: list[str], reps: int) -> float:
    """Best of ``reps`` wall-clock compile times of ``src`` (raises if the compiler fails)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        res = subprocess.run([cxx, "-std=c++17", f"-I{NATIVE}", *flags, str(src), "-o", str(out)],
                             capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if res.returncode != 0:
            raise RuntimeError(f"{cxx} failed on {src.name}:\n{res.stderr}")
    return min(times)


def main(argv: list[str] | None = None) -> int:
    """Measure and print one line per compiler."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tu, empty = tmp / "tiny.cpp", tmp / "empty.cpp"
        tu.write_text(_TU)
        empty.write_text(_EMPTY)
        for name in ("g++", "clang++"):
            cxx = shutil.which(name)
            if cxx is None:
                continue
            flags = ["-O3", "-fPIC", "-shared"]
            probe = subprocess.run([cxx, *flags, "-fopenmp", str(empty), "-o", str(tmp / "probe.so")],
                                   capture_output=True)
            if probe.returncode == 0:
                flags.append("-fopenmp")
            with_headers = best_time(cxx, tu, tmp / "out.so", flags, args.reps)
            baseline = best_time(cxx, empty, tmp / "out.so", flags, args.reps)
            print(f"{name}: treadle.h TU {with_headers:.3f} s, empty TU {baseline:.3f} s, headers add "
                  f"{with_headers - baseline:.3f} s (target < 0.4 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
