"""``tile_fft`` and ``tile_ifft`` in kernels: values against numpy.fft (powers of two and other lengths, 2-D and 3-D
tiles, vec2f and vec2d), gradients through ``wp.Tape`` against the transposed transform and finite differences, and
the bad-input errors at the user's line.
"""

# No `from __future__ import annotations`: kernels built in factories name the dtype, a closure variable, in their
# annotations, which must be evaluated when the kernel is defined.
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treadle as wp
from treadle._src.core.errors import CodegenTypeError

BATCH = 2


def _fft_kernel(shape: tuple[int, ...], vec: Any, inverse: bool) -> Any:
    fn = wp.tile_ifft if inverse else wp.tile_fft
    arr = {2: wp.array3d, 3: wp.array4d}[len(shape)]

    @wp.kernel(module=f"tile_fft_{'_'.join(map(str, shape))}_{vec.__name__}_{int(inverse)}")
    def fft(x: arr(dtype=vec), y: arr(dtype=vec)):
        i, _lane = wp.tid()
        t = wp.tile_load(x[i], shape=shape)
        fn(t)
        wp.tile_store(y[i], t)

    return fft


def _complex(a: np.ndarray) -> np.ndarray:
    return a[..., 0].astype(np.float64) + 1j * a[..., 1].astype(np.float64)


@pytest.mark.parametrize("shape", [(1, 1), (2, 4), (3, 16), (1, 128), (2, 3, 8), (2, 12), (1, 17)], ids=str)
@pytest.mark.parametrize("vec", [wp.vec2f, wp.vec2d], ids=lambda t: t.__name__)
@pytest.mark.parametrize("inverse", [False, True], ids=["fft", "ifft"])
def test_fft_values(device: str, shape: tuple[int, ...], vec: Any, inverse: bool) -> None:
    """Unnormalized transforms along the last dimension of every row match numpy.fft (ifft times N)."""
    n = shape[-1]
    np_t = np.float32 if vec == wp.vec2f else np.float64
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, (BATCH, *shape, 2)).astype(np_t)
    y = wp.zeros((BATCH, *shape), dtype=vec, device=device)
    wp.launch_tiled(_fft_kernel(shape, vec, inverse), dim=[BATCH], inputs=[wp.array(x, dtype=vec, device=device), y],
                    block_dim=64, device=device)
    z = _complex(x)
    want = np.fft.ifft(z, axis=-1) * n if inverse else np.fft.fft(z, axis=-1)
    tol = (1e-5 if vec == wp.vec2f else 1e-12) * max(1, n)
    assert np.max(np.abs(_complex(y.numpy()) - want)) <= tol


def test_fft_matches_the_reference_example(device: str) -> None:
    """The documented example: two batches of four real samples."""
    signal = np.zeros((1, 2, 4, 2), dtype=np.float32)
    signal[0, 0, :, 0] = [1.0, 2.0, 3.0, 4.0]
    signal[0, 1, :, 0] = [4.0, 3.0, 2.0, 1.0]
    y = wp.zeros((1, 2, 4), dtype=wp.vec2f, device=device)
    wp.launch_tiled(_fft_kernel((2, 4), wp.vec2f, False), dim=[1], inputs=[wp.array(signal, dtype=wp.vec2f,
                    device=device), y], block_dim=2, device=device)
    want = [[[10, 0], [-2, 2], [-2, 0], [-2, -2]], [[10, 0], [2, -2], [2, 0], [2, 2]]]
    assert np.allclose(y.numpy()[0], want, atol=1e-6)


@pytest.mark.parametrize("inverse", [False, True], ids=["fft", "ifft"])
@pytest.mark.parametrize("n", [8, 6])
def test_fft_gradients(device: str, inverse: bool, n: int) -> None:
    """The gradient of sum(g * F(x)) is the opposite unnormalized transform of g; central differences agree."""
    shape = (2, n)
    kern = _fft_kernel(shape, wp.vec2d, inverse)
    rng = np.random.default_rng(9)
    x_np = rng.uniform(-1, 1, (BATCH, *shape, 2))
    g = rng.uniform(-1, 1, (BATCH, *shape, 2))
    x = wp.array(x_np, dtype=wp.vec2d, requires_grad=True, device=device)
    y = wp.zeros((BATCH, *shape), dtype=wp.vec2d, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(kern, dim=[BATCH], inputs=[x, y], block_dim=64, device=device)
    tape.backward(grads={y: wp.array(g, dtype=wp.vec2d, device=device)})
    gz = _complex(g)
    # F^T over (re, im) pairs: the opposite-sign transform, unnormalized.
    want = np.fft.fft(gz, axis=-1) if inverse else np.fft.ifft(gz, axis=-1) * n
    grad = x.grad.numpy()
    assert np.allclose(_complex(grad), want, atol=1e-12)

    def objective(xv: np.ndarray) -> float:
        out = wp.zeros((BATCH, *shape), dtype=wp.vec2d, device=device)
        wp.launch_tiled(kern, dim=[BATCH], inputs=[wp.array(xv, dtype=wp.vec2d, device=device), out], block_dim=64,
                        device=device)
        return float(np.sum(g * out.numpy()))

    for idx in [(0, 0, 0, 0), (1, 1, n - 1, 1), (0, 1, n // 2, 0)]:
        xp, xm = x_np.copy(), x_np.copy()
        xp[idx] += 1e-6
        xm[idx] -= 1e-6
        fd = (objective(xp) - objective(xm)) / 2e-6
        assert abs(grad[idx] - fd) < 1e-6 * (1 + abs(fd))


def test_fft_rejects_bad_tiles() -> None:
    """A tile of floats, a 1-D tile and a non-power-of-two length over 4096 are refused at the call."""

    @wp.kernel(module="tile_fft_bad1")
    def floats(x: wp.array2d(dtype=float)):
        t = wp.tile_load(x, shape=(2, 8))
        wp.tile_fft(t)
        wp.tile_store(x, t)

    @wp.kernel(module="tile_fft_bad2")
    def one_d(x: wp.array(dtype=wp.vec2f)):
        t = wp.tile_load(x, shape=8)
        wp.tile_ifft(t)
        wp.tile_store(x, t)

    @wp.kernel(module="tile_fft_bad3")
    def too_long(x: wp.array2d(dtype=wp.vec2f)):
        t = wp.tile_load(x, shape=(1, 4097))
        wp.tile_fft(t)
        wp.tile_store(x, t)

    with pytest.raises(CodegenTypeError, match="needs a tile of vec2f or vec2d"):
        wp.launch_tiled(floats, dim=[1], inputs=[wp.zeros((2, 8), dtype=float)], block_dim=64)
    with pytest.raises(CodegenTypeError, match="at least 2 dimensions"):
        wp.launch_tiled(one_d, dim=[1], inputs=[wp.zeros(8, dtype=wp.vec2f)], block_dim=64)
    with pytest.raises(CodegenTypeError, match="4097 is not a power of two"):
        wp.launch_tiled(too_long, dim=[1], inputs=[wp.zeros((1, 4097), dtype=wp.vec2f)], block_dim=64)


GXX_SCRIPT = """
import numpy as np
import treadle as wp

@wp.kernel(module="tile_fft_gxx")
def fft(x: wp.array3d(dtype=wp.vec2f), y: wp.array3d(dtype=wp.vec2f)):
    i, _lane = wp.tid()
    t = wp.tile_load(x[i], shape=(2, 8))
    wp.tile_fft(t)
    wp.tile_store(y[i], t)

x = np.random.default_rng(0).uniform(-1, 1, (3, 2, 8, 2)).astype(np.float32)
y = wp.zeros((3, 2, 8), dtype=wp.vec2f)
wp.launch_tiled(fft, dim=[3], inputs=[wp.array(x, dtype=wp.vec2f), y], block_dim=64)
got = y.numpy()
want = np.fft.fft(x[..., 0] + 1j * x[..., 1], axis=-1)
assert np.allclose(got[..., 0] + 1j * got[..., 1], want, atol=1e-5), "wrong transform"
print("ok")
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_fft_kernel_built_by_gxx(tmp_path: Path) -> None:
    """Kernels built by g++ -O3 transform correctly too (it exploits aliasing rules that clang++ leaves alone)."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, CXX="g++", TREADLE_CXX="g++", TREADLE_CACHE_PATH=str(tmp_path / "cache"),
               PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = tmp_path / "fft_gxx.py"  # a file: kernels need their source
    script.write_text(GXX_SCRIPT)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=root)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
