"""Tests of the C++ header library ``treadle/native``.

The checks themselves live in C++ (``headers_test.cpp``, ``checked_test.cpp``); these tests build and run them,
compare printed output with the reference's format, compare float16 rounding with NumPy and the inverse error
functions with mpmath, and keep an eye on warnings. They skip when no C++ compiler is installed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
NATIVE = HERE.parent.parent / "treadle" / "native"
# The math-domain headers (other files in treadle/native, such as kernel_support.h, are host-side glue).
HEADERS = [
    NATIVE / name for name in ("treadle.h", "core.h", "scalar.h", "vec.h", "mat.h", "atomic.h", "array.h", "print.h")
]


def _find_cxx() -> str | None:
    for name in ("g++", "clang++", "c++"):
        path = shutil.which(name)
        if path:
            return path
    return None


CXX = _find_cxx()
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler found")

BASE_FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{NATIVE}"]


def _compile_cmd(src: Path, out: Path, *flags: str) -> list[str]:
    assert CXX is not None
    return [CXX, *BASE_FLAGS, *flags, str(src), "-o", str(out)]


def _check_build(proc: subprocess.Popen[str], what: str) -> None:
    _, err = proc.communicate()
    assert proc.returncode == 0, f"building {what} failed:\n{err}"


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Builds the two test programs in parallel (the main one takes several seconds)."""
    out = tmp_path_factory.mktemp("native")
    bins = {"main": out / "headers_test", "checked": out / "checked_test"}
    procs = [
        subprocess.Popen(
            _compile_cmd(HERE / "headers_test.cpp", bins["main"], "-O2", "-pthread"),
            stderr=subprocess.PIPE,
            text=True,
        ),
        subprocess.Popen(
            _compile_cmd(HERE / "checked_test.cpp", bins["checked"], "-O2", "-DTREADLE_CHECKED"),
            stderr=subprocess.PIPE,
            text=True,
        ),
    ]
    for proc, what in zip(procs, ("headers_test.cpp", "checked_test.cpp")):
        _check_build(proc, what)
    yield bins


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True)


def test_values_adjoints_half_layout_arrays_atomics(programs: dict[str, Path]) -> None:
    """All C++-side checks: values, finite-difference adjoints, float16, layouts, arrays, threaded atomics."""
    res = _run([str(programs["main"])])
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"\d+ checks, 0 failures", res.stdout), res.stdout


def test_checked_mode_reports_out_of_bounds(programs: dict[str, Path]) -> None:
    """With TREADLE_CHECKED, bad indices are reported and element 0 is used instead."""
    res = _run([str(programs["checked"])])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "checked: 0 failures" in res.stdout


# Vectors print each component followed by a space; the trailing spaces are part of the reference format.
EXPECTED_PRINT = "\n".join(
    [
        "1 2.5 3 ",
        "1 2 ",
        "3 4 ",
        "1.5",
        "3",
        "True",
        "False",
        "1 2 3 ",
        "0.5",
        "-3",
        "200",
        "-5",
        "18446744073709551615",
        "4000000000",
        "1e+20",
        "0.1",
        "0.333333",
        "1.23457e+08",
        "1e-07",
        "1.5 2 ",
        "0 0 0 ",
        "0 0 0 ",
        "0 0 0 ",
        "hello",
        "Error, expect_eq() failed:",
        "\t Expected: 2",
        "\t Actual: 1",
        "Error, expect_eq() failed:",
        "\t Expected: 1 3 ",
        "\t Actual: 1 2 ",
        "Error, expect_neq() failed:",
        "\t Expected: 1",
        "\t Actual: 1",
        "Error, expect_near() failed with tolerance 0.1",
        "    Expected: 2",
        "    Actual: 1",
        "    Absolute difference: 1",
        "Error, expect_near() failed with tolerance 0.1",
        "    Expected: 1 3 ",
        "    Actual: 1 2 ",
        "    Max absolute difference: 1",
        "5",
        "",
    ]
)


def test_print_format_matches_reference(programs: dict[str, Path]) -> None:
    """print/expect_* output is byte-identical to what the reference prints for the same values."""
    res = _run([str(programs["main"]), "print"])
    assert res.returncode == 0, res.stderr
    assert res.stdout == EXPECTED_PRINT


def test_half_conversion_matches_numpy(programs: dict[str, Path], tmp_path: Path) -> None:
    """float32 -> float16 and float64 -> float16 round to nearest even exactly as NumPy does."""
    rng = np.random.default_rng(7)
    # a regular sweep of all float32 bit patterns plus random ones, and random float64 values around the half range
    f_bits = np.concatenate(
        [np.arange(0, 2**32, 4099, dtype=np.uint64), rng.integers(0, 2**32, 200_000, dtype=np.uint64)]
    ).astype(np.uint32)
    f32 = f_bits.view(np.float32)
    exps = rng.uniform(-30.0, 20.0, 300_000)
    f64 = np.concatenate(
        [
            rng.choice([-1.0, 1.0], exps.size) * np.exp2(exps) * rng.uniform(1.0, 2.0, exps.size),
            np.array([0.0, -0.0, np.inf, -np.inf, 65504.0, 65519.999, 65520.0, 2.0**-25, 2.0**-24, 1e-300]),
        ]
    )
    inp = tmp_path / "in.bin"
    out = tmp_path / "out.bin"
    with open(inp, "wb") as fh:
        fh.write(np.uint32(f32.size).tobytes())
        fh.write(f32.tobytes())
        fh.write(np.uint32(f64.size).tobytes())
        fh.write(f64.tobytes())
    res = _run([str(programs["main"]), "half", str(inp), str(out)])
    assert res.returncode == 0, res.stderr
    got = np.fromfile(out, dtype=np.uint16)
    with np.errstate(over="ignore"):
        want = np.concatenate([f32.astype(np.float16), f64.astype(np.float16)]).view(np.uint16)
    got_nan = np.isnan(got.view(np.float16))
    want_nan = np.isnan(want.view(np.float16))
    assert np.array_equal(got_nan, want_nan)
    mismatch = np.flatnonzero((got != want) & ~want_nan)
    assert mismatch.size == 0, f"{mismatch.size} mismatches, first input index {mismatch[:5]}"


def test_erfinv_against_mpmath(programs: dict[str, Path]) -> None:
    """erfinv/erfcinv (float64 and float32) agree with high-precision values."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    xs = ["-0.999999", "-0.7", "-0.3", "1e-10", "0.1", "0.5", "0.9", "0.99", "0.999999999999"]
    zs = ["1e-300", "1e-100", "1e-20", "1e-5", "0.01", "0.3", "0.7", "1.3", "1.99"]
    res = _run([str(programs["main"]), "erf", *xs, *zs])
    assert res.returncode == 0, res.stderr
    rows = [list(map(float, line.split())) for line in res.stdout.splitlines()]

    def erfcinv_ref(z: float) -> float:
        zz = mpmath.mpf(z)  # the exact binary value
        y0 = mpmath.erfinv(1 - zz) if zz > mpmath.mpf("1e-50") else mpmath.sqrt(-mpmath.log(zz))
        # solve in log space: in the far tail erfc(y) - z is below any absolute tolerance
        return float(mpmath.findroot(lambda y: mpmath.log(mpmath.erfc(y)) - mpmath.log(zz), y0))

    for text, (e64, c64, e32, c32) in zip(xs + zs, rows):
        v = float(text)
        v32 = float(np.float32(v))
        if -1 < v < 1:
            assert e64 == pytest.approx(float(mpmath.erfinv(mpmath.mpf(v))), rel=4e-16), text
            if -1 < v32 < 1:
                assert e32 == pytest.approx(float(mpmath.erfinv(mpmath.mpf(v32))), rel=2e-7), text
        if 0 < v < 2:
            assert c64 == pytest.approx(erfcinv_ref(v), rel=4e-16), text
            if 0 < v32 < 2:
                assert c32 == pytest.approx(erfcinv_ref(v32), rel=2e-7), text


def test_unchecked_build_has_no_bounds_checks(tmp_path: Path) -> None:
    """Without TREADLE_CHECKED nothing refers to treadle_report_oob (the checks compile away)."""
    src = tmp_path / "unchecked.cpp"
    src.write_text(
        '#include "treadle.h"\n'
        "using namespace treadle;\n"
        'extern "C" float get(array_t<float> a, long long i, long long j) { return load(a, i, j); }\n'
        'extern "C" float comp(vec_t<3, float> v, int i) { return extract(v, i); }\n'
    )
    res = _run(_compile_cmd(src, tmp_path / "unchecked.so", "-O2", "-fPIC", "-shared", "-Wl,--no-undefined"))
    assert res.returncode == 0, res.stderr


def test_treadle_h_compiles_into_a_kernel_library(tmp_path: Path) -> None:
    """A one-kernel translation unit including treadle.h builds as kernel libraries are built (-O3, shared).

    Its compile time is a benchmark (``benchmarks/header_compile.py``), not a test: wall-clock thresholds fail on a
    busy machine.
    """
    tu = tmp_path / "tiny.cpp"
    tu.write_text(
        '#include "treadle.h"\n'
        'extern "C" void kernel(treadle::array_t<float> a, treadle::array_t<treadle::vec_t<3, float>> v) {\n'
        "    treadle::store(a, 0, treadle::length(treadle::load(v, 1)) + treadle::sin(treadle::load(a, 1)));\n"
        "}\n"
    )
    res = _run(_compile_cmd(tu, tmp_path / "out.so", "-O3", "-fPIC", "-shared"))
    assert res.returncode == 0, res.stderr
    lib = ctypes.CDLL(str(tmp_path / "out.so"))
    assert hasattr(lib, "kernel")


def test_headers_stay_small_and_nvrtc_friendly() -> None:
    """Headers stay under the line budget and include no C++ standard library headers (NVRTC has none)."""
    for h in HEADERS:
        text = h.read_text()
        assert len(text.splitlines()) <= 1500, h.name
        for inc in re.findall(r"#include\s*<([^>]+)>", text):
            assert inc == "stdio.h", f"{h.name} includes <{inc}>"
    core = (NATIVE / "core.h").read_text()
    assert re.search(r"#if !defined\(__CUDACC_RTC__\)\s*#include <stdio.h>", core)


def _load_nvrtc() -> ctypes.CDLL | None:
    """NVRTC from the nvidia-cuda-nvrtc wheel or the system, or None."""
    candidates: list[str] = []
    try:
        import nvidia.cuda_nvrtc as wheel  # type: ignore[import-not-found]

        for root in wheel.__path__:
            candidates += [str(p) for p in sorted(Path(root, "lib").glob("libnvrtc.so*")) if "builtins" not in p.name]
    except ImportError:
        pass
    found = ctypes.util.find_library("nvrtc")
    if found:
        candidates.append(found)
    for cand in candidates:
        try:
            return ctypes.CDLL(cand)
        except OSError:
            continue
    return None


@pytest.mark.parametrize("checked", [False, True], ids=["release", "checked"])
def test_cuda_branches_compile_with_nvrtc(checked: bool) -> None:
    """The __CUDA_ARCH__ code paths (atomics, half via PTX, printing) compile to a cubin with NVRTC."""
    nvrtc = _load_nvrtc()
    if nvrtc is None:
        pytest.skip("NVRTC not available")
    src = (HERE / "cuda_compile_test.cu").read_bytes()
    prog = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"cuda_compile_test.cu", 0, None, None) == 0
    opts = [b"-std=c++17", b"-arch=sm_80", f"-I{NATIVE}".encode()] + ([b"-DTREADLE_CHECKED"] if checked else [])
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, log.value.decode(errors="replace")
