"""Host-side behaviour that Warp programs rely on: creation ``ndim=``, NumPy reading scalar types, 0-d data,
``| None`` annotations, C math in ``@func_native`` snippets, and a start-up that leaves optional packages alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

import treadle as wp

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("make", [wp.empty, wp.zeros, wp.ones, lambda shape, **kw: wp.full(shape, 2.0, **kw)])
def test_creation_accepts_ndim(make: typing.Callable[..., wp.array]) -> None:
    a = make((3, 2), dtype=wp.vec3, ndim=2)
    assert a.shape == (3, 2) and a.dtype is wp.vec3
    assert make(4, ndim=1).shape == (4,)
    with pytest.raises(ValueError, match="ndim=3 does not match shape"):
        make((3, 2), ndim=3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        make((3,), nmid=1)


def test_numpy_reads_scalar_types_as_dtypes() -> None:
    for t in (wp.bool, wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64,
              wp.float16, wp.float32, wp.float64):
        assert np.dtype(t) == wp.dtype_to_numpy(t)
    pairs = np.zeros((4, 2), dtype=wp.int32)
    assert pairs.dtype == np.int32
    pairs[:, 1] = np.arange(4)
    a = wp.array(pairs, dtype=wp.vec2i)
    assert a.shape == (4,) and a.numpy()[:, 1].tolist() == [0, 1, 2, 3]
    assert wp.float32(1.5).dtype == np.float32  # values too, as NumPy scalars have one


def test_bfloat16_dtype_is_found_on_first_use() -> None:
    code = ("import sys, treadle, numpy as np\n"
            "print('ml_dtypes' in sys.modules)\n"
            "dt = np.dtype(treadle.bfloat16)\n"
            "print(dt == treadle.bfloat16._np_, treadle.types.dtype_from_numpy(dt) is treadle.bfloat16)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first == "False"  # `import treadle` does not import ml_dtypes
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        assert second.startswith("True")  # raw 16-bit storage without it
    else:
        assert second == "True True"


def test_zero_dim_numpy_array_makes_one_element() -> None:
    a = wp.array(np.array(0.002), dtype=float)
    assert a.shape == (1,) and a.numpy()[0] == np.float32(0.002)
    b = wp.array(np.array(7))
    assert b.shape == (1,) and b.dtype is wp.int64 and b.numpy()[0] == 7
    with pytest.raises(TypeError, match="got scalar"):
        wp.array(2.0, dtype=float)  # a Python scalar is still not data
    with pytest.raises(TypeError, match="got scalar"):
        wp.array(np.array(2.0), dtype=wp.vec3)  # one number cannot fill a vector element


def test_list_of_tuples_and_isinstance() -> None:
    a = wp.array([(1, 2), (3, 4)], dtype=wp.vec2i)
    assert a.numpy().tolist() == [[1, 2], [3, 4]]
    assert isinstance(a, wp.array) and isinstance(wp.zeros(2), wp.array)


def test_optional_annotations() -> None:
    @wp.struct
    class S:
        x: float

    for ann in (wp.array(dtype=float), wp.array[wp.float32], wp.array2d[wp.vec3], wp.indexedarray(dtype=float, ndim=2),
                S, wp.Texture2D, wp.Texture3D):
        u = ann | None
        assert typing.get_args(u) == (ann, type(None))
        assert typing.get_args(None | ann) == (type(None), ann)

    def f(x: wp.array[bool] | None = None, s: S | None = None) -> None: ...

    hint = typing.get_type_hints(f, localns={"S": S})["x"]
    assert typing.get_origin(hint) is typing.Union and typing.get_args(hint)[0].dtype is wp.bool
    with pytest.raises(TypeError):
        wp.zeros(3) | None  # noqa: B018 - a concrete array is a value, not a type


_MATH = "return sqrtf(x) + fabsf(-x) + powf(x, 2.0f) + fminf(x, 1.0f) + floorf(x) + atan2f(x, 1.0f) + (float)sqrt((double)x);"


@wp.func_native(_MATH)
def _c_math(x: float) -> float: ...


@wp.kernel
def _apply_c_math(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = _c_math(a[i])


@pytest.mark.parametrize("cxx", ["", "g++"])
def test_func_native_snippet_calls_c_math(cxx: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if cxx and shutil.which(cxx) is None:
        pytest.skip(f"{cxx} is not installed")
    monkeypatch.setattr(wp.config, "cxx", cxx or None)
    x = np.array([4.0, 0.25, 2.5], dtype=np.float32)
    a = wp.array(x)
    wp.launch(_apply_c_math, 3, [a])
    expected = 2 * np.sqrt(x) + x + x**2 + np.minimum(x, 1) + np.floor(x) + np.arctan2(x, 1)
    np.testing.assert_allclose(a.numpy(), expected, rtol=1e-6)


# A radix-sortable key of a float (its bits, the sign flipped, the rest flipped for negatives), as snippets write it
_C_INTS = """
uint32_t i = reinterpret_cast<uint32_t&>(f);
uint32_t mask = (uint32_t)(-(int32_t)(i >> 31)) | 0x80000000u;
int64_t wide = (int64_t)(i ^ mask);
return (uint64_t)wide + (uint64_t)(uint8_t)1 + (uint64_t)(int16_t)0;
"""


@wp.func_native(_C_INTS)
def _float_key(f: float) -> wp.uint64: ...


@wp.kernel
def _apply_float_key(a: wp.array(dtype=float), out: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    out[i] = _float_key(a[i])


@pytest.mark.parametrize("cxx", ["", "g++"])
def test_func_native_snippet_uses_c_integer_types(cxx: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if cxx and shutil.which(cxx) is None:
        pytest.skip(f"{cxx} is not installed")
    monkeypatch.setattr(wp.config, "cxx", cxx or None)
    x = np.array([-2.5, -0.0, 0.0, 1e-30, 3.0, -1e30], dtype=np.float32)
    out = wp.zeros(len(x), dtype=wp.uint64)
    wp.launch(_apply_float_key, len(x), [wp.array(x), out])
    bits = x.view(np.uint32).astype(np.uint64)
    mask = np.where(bits >> 31 == 1, 0xFFFFFFFF, 0x80000000).astype(np.uint64)
    np.testing.assert_array_equal(out.numpy(), (bits ^ mask) + 1)
    assert np.all(np.diff(out.numpy()[np.argsort(x, kind="stable")].astype(np.int64)) >= 0)  # orders like floats


def test_start_up_leaves_optional_parts_for_first_use() -> None:
    code = ("import sys, treadle\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('ml_dtypes', 'torch', 'jax', 'paddle')\n"
            "         or m.startswith(('treadle._src.geometry.mesh', 'treadle._src.geometry.bvh', 'treadle._src.volume',\n"
            "                          'treadle._src.geometry.hash_grid', 'treadle._src.interop.torch',\n"
            "                          'treadle._src.interop.jax', 'treadle._src.interop.paddle'))]\n"
            "print(heavy)\n"
            "print(treadle.Mesh.__name__, treadle.Volume.__name__, treadle.from_torch.__name__, 'Mesh' in dir(treadle))\n"
            "print('treadle._src.geometry.mesh' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[]", "Mesh Volume from_torch True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        wp.NoSuchName  # noqa: B018
