"""Textures: sampling against a NumPy sampler (filters, address modes, formats, channels, mip levels), gradients
against finite differences, textures in structs and annotations, and the host API with its errors."""

from __future__ import annotations

import itertools
import typing

import numpy as np
import pytest

import treadle as wp

F, A = wp.TextureFilterMode, wp.TextureAddressMode
NORM = {np.uint8: 255.0, np.int8: 127.0, np.uint16: 65535.0, np.int16: 32767.0}


def _addr(i, n, mode):
    """(index, inside) after an address mode (BORDER: outside reads zero)."""
    if mode == A.WRAP:
        return i % n, np.ones_like(i, bool)
    if mode == A.MIRROR:
        m = i % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m), np.ones_like(i, bool)
    if mode == A.BORDER:
        return np.clip(i, 0, n - 1), (i >= 0) & (i < n)
    return np.clip(i, 0, n - 1), np.ones_like(i, bool)


def _float_texels(a):
    a = np.asarray(a)
    for t, d in NORM.items():
        if a.dtype == t:
            return np.maximum(a.astype(np.float64) / d, -1.0)
    return a.astype(np.float64)


def ref_level(tex: np.ndarray, coord: np.ndarray, filt, modes, normalized, base_shape) -> np.ndarray:
    """One level (array (spatial..., C) of floats) at coordinates (N, ndim) in u, v, w order."""
    ndim = tex.ndim - 1
    sizes = [tex.shape[ndim - 1 - a] for a in range(ndim)]  # width, height, depth
    x = [coord[:, a] * (sizes[a] if normalized else sizes[a] / base_shape[a]) for a in range(ndim)]
    if filt == F.CLOSEST:
        corners = [((0,) * ndim, 1.0)]
        i0 = [np.floor(xa).astype(np.int64) for xa in x]
        f = [np.zeros_like(xa) for xa in x]
    else:
        corners = [(bits, None) for bits in itertools.product((0, 1), repeat=ndim)]
        i0 = [np.floor(xa - 0.5).astype(np.int64) for xa in x]
        f = [xa - 0.5 - i for xa, i in zip(x, i0)]
    out = np.zeros((len(coord), tex.shape[-1]))
    for bits, _ in corners:
        w = np.ones(len(coord))
        idx, ok = [], np.ones(len(coord), bool)
        for a in range(ndim):
            j, inside = _addr(i0[a] + bits[a], sizes[a], modes[a])
            idx.append(j)
            ok &= inside
            if filt == F.LINEAR:
                w = w * np.where(bits[a], f[a], 1.0 - f[a])
        vals = tex[tuple(reversed(idx))]
        out += (w * ok)[:, None] * vals
    return out


def ref_mips(tex: np.ndarray, levels: int) -> list[np.ndarray]:
    out = [tex]
    for _ in range(1, levels):
        cur = out[-1]
        nd = cur.ndim - 1
        half = [max(1, n // 2) for n in cur.shape[:nd]]
        parts = []
        for offs in itertools.product(*[(0, 1) if n > 1 else (0,) for n in cur.shape[:nd]]):
            parts.append(cur[tuple(slice(o, o + 2 * h, 2) if n > 1 else slice(0, 1)
                                   for o, n, h in zip(offs, cur.shape[:nd], half))].astype(np.float64))
        m = sum(parts) / len(parts)
        out.append(m.astype(cur.dtype) if cur.dtype.kind == "f" else np.rint(m).astype(cur.dtype))
    return out


@wp.kernel
def s1(t: wp.Texture1D, c: wp.array(dtype=float), lod: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], lod)


@wp.kernel
def s2(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), lod: float, out: wp.array(dtype=float),
       out_uv: wp.array(dtype=float)):
    i = wp.tid()
    p = c[i]
    out[i] = wp.texture_sample(t, p, lod)
    out_uv[i] = wp.texture_sample(t, p[0], p[1], lod)


@wp.kernel
def s3(t: wp.Texture3D, c: wp.array(dtype=wp.vec3), lod: float, out: wp.array(dtype=float),
       out_uv: wp.array(dtype=float)):
    i = wp.tid()
    p = c[i]
    out[i] = wp.texture_sample(t, p, lod)
    out_uv[i] = wp.texture_sample(t, p[0], p[1], p[2], lod)


def _sample(tex, coords, lod=0.0):
    n = len(coords)
    out, out_uv = wp.zeros(n, dtype=float), wp.zeros(n, dtype=float)
    if tex.ndim == 1:
        wp.launch(s1, n, inputs=[tex, wp.array(coords[:, 0].astype(np.float32)), lod, out])
        return out.numpy()
    vec = wp.vec2 if tex.ndim == 2 else wp.vec3
    wp.launch(s2 if tex.ndim == 2 else s3, n, inputs=[tex, wp.array(coords.astype(np.float32), dtype=vec), lod, out,
                                                      out_uv])
    np.testing.assert_array_equal(out.numpy(), out_uv.numpy())  # both call forms
    return out.numpy()


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("filt", [F.CLOSEST, F.LINEAR])
@pytest.mark.parametrize("normalized", [True, False])
def test_filters_and_address_modes_match_numpy(ndim, filt, normalized):
    rng = np.random.default_rng(ndim)
    shape = (5, 4, 3)[:ndim][::-1]
    data = rng.standard_normal(shape).astype(np.float32)
    base = [shape[ndim - 1 - a] for a in range(ndim)]
    coords = rng.uniform(-1.3, 2.3, (300, ndim)) * (1.0 if normalized else np.array(base))
    for modes in itertools.product(list(A), repeat=ndim) if ndim < 3 else [(m, m, m) for m in A] + [
            (A.WRAP, A.BORDER, A.MIRROR)]:
        tex = {1: wp.Texture1D, 2: wp.Texture2D, 3: wp.Texture3D}[ndim](
            data, filter_mode=filt, address_mode=tuple(modes), normalized_coords=normalized)
        ref = ref_level(data[..., None].astype(np.float64), coords.astype(np.float32).astype(np.float64), filt, modes,
                        normalized, base)[:, 0]
        np.testing.assert_allclose(_sample(tex, coords), ref, rtol=1e-5, atol=1e-5, err_msg=str(modes))


@wp.kernel
def channels(t: wp.Texture2D, p: wp.vec2, o1: wp.array(dtype=float), o2: wp.array(dtype=wp.vec2),
             o4: wp.array(dtype=wp.vec4), size: wp.array(dtype=int)):
    o1[0] = wp.texture_sample(t, p)
    size[0] = t.width
    size[1] = t.height


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.float16, np.float32, np.int32,
                                   np.uint32])
def test_texel_formats(dtype):
    rng = np.random.default_rng(0)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        data = rng.integers(max(info.min, -2**20), min(info.max, 2**20), (6, 7), endpoint=True).astype(dtype)
        data[0, 0], data[0, 1] = info.min if info.min > -2**31 else -2**20, min(info.max, 2**20)
    else:
        data = rng.standard_normal((6, 7)).astype(dtype)
    closest = dtype in (np.int32, np.uint32)
    tex = wp.Texture2D(data, filter_mode=F.CLOSEST if closest else F.LINEAR)
    assert tex.dtype is wp.dtype_from_numpy(dtype) and tex.filter_mode == (F.CLOSEST if closest else F.LINEAR)
    coords = rng.uniform(0, 1, (200, 2))
    ref = ref_level(_float_texels(data)[..., None], coords.astype(np.float32).astype(np.float64), tex.filter_mode,
                    (A.CLAMP, A.CLAMP), True, [7, 6])[:, 0]
    np.testing.assert_allclose(_sample(tex, coords), ref, rtol=2e-5, atol=2e-6)
    o1, o2, o4, size = wp.zeros(1, dtype=float), wp.zeros(1, dtype=wp.vec2), wp.zeros(1, dtype=wp.vec4), wp.zeros(2,
                                                                                                                  dtype=int)
    wp.launch(channels, 1, inputs=[tex, wp.vec2(0.3, 0.4), o1, o2, o4, size])
    assert size.numpy().tolist() == [7, 6]


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_mip_levels_and_lod(ndim):
    rng = np.random.default_rng(7)
    shape = (7, 5, 6)[:ndim][::-1]
    data = rng.integers(0, 255, shape).astype(np.uint8)
    full = {1: wp.Texture1D, 2: wp.Texture2D, 3: wp.Texture3D}[ndim]
    for mip_filter in (F.CLOSEST, F.LINEAR):
        tex = full(data, num_mip_levels=0, filter_mode=F.LINEAR, mip_filter_mode=mip_filter,
                   address_mode=A.WRAP)
        levels = int(np.floor(np.log2(max(shape)))) + 1
        assert tex.num_mip_levels == levels and tex.is_mipmapped
        mips = [_float_texels(m) for m in ref_mips(data[..., None], levels)]
        base = [shape[ndim - 1 - a] for a in range(ndim)]
        coords = rng.uniform(-0.5, 1.5, (100, ndim))
        c = coords.astype(np.float32).astype(np.float64)
        per_level = [ref_level(m, c, F.LINEAR, (A.WRAP,) * ndim, True, base)[:, 0] for m in mips]
        for lod in (-1.0, 0.0, 0.3, 0.5, 1.0, 1.7, 10.0):
            got = _sample(tex, coords, lod)
            lc = min(max(lod, 0.0), levels - 1)
            if mip_filter == F.CLOSEST:
                want = per_level[min(int(np.floor(lc + 0.5)), levels - 1)]
            else:
                l0 = int(np.floor(lc))
                l1 = min(l0 + 1, levels - 1)
                want = per_level[l0] + (lc - l0) * (per_level[l1] - per_level[l0])
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"lod {lod}")


@wp.kernel
def grad_loss(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), lod: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.texture_sample(t, c[i], lod[0])
    out[i] = v * v


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((9, 11)).astype(np.float32)
    tex = wp.Texture2D(data, num_mip_levels=3, filter_mode=F.LINEAR, mip_filter_mode=F.LINEAR, address_mode=A.MIRROR)
    coords = rng.uniform(0.05, 0.95, (50, 2)).astype(np.float32)

    def run(c, lod, grad=False):
        ca = wp.array(c, dtype=wp.vec2, requires_grad=grad)
        la = wp.array([lod], dtype=float, requires_grad=grad)
        out = wp.zeros(len(c), dtype=float, requires_grad=grad)
        tape = wp.Tape()
        with tape:
            wp.launch(grad_loss, len(c), inputs=[tex, ca, la, out])
        if not grad:
            return out.numpy().astype(np.float64)
        tape.backward(grads={out: wp.ones(len(c), dtype=float)})
        return ca.grad.numpy(), float(la.grad.numpy()[0])

    lod = 0.6
    gc, gl = run(coords, lod, True)
    eps = 1e-3
    # away from the texel-centre lines of both levels blended (where the bilinear field has kinks)
    smooth = np.ones(len(coords), bool)
    for sizes in ((11, 9), (5, 4)):
        x = coords * np.array(sizes) - 0.5
        smooth &= (np.abs(x - np.round(x)) > 4 * eps * max(sizes)).all(axis=1)
    coords = coords[smooth]
    gc = gc[smooth]
    for a in range(2):
        d = np.zeros(2, np.float32)
        d[a] = eps
        fd = (run(coords + d, lod) - run(coords - d, lod)) / (2 * eps)
        np.testing.assert_allclose(gc[:, a], fd, rtol=3e-2, atol=3e-2)
    fd_lod = (run(coords, lod + eps).sum() - run(coords, lod - eps).sum()) / (2 * eps)
    _, gl = run(coords, lod, True)
    np.testing.assert_allclose(gl, fd_lod, rtol=2e-2, atol=2e-2)
    assert run(coords, 5.0, True)[1] == 0.0  # clamped lod: no gradient
    closest = wp.Texture2D(data, filter_mode=F.CLOSEST)
    ca = wp.array(coords, dtype=wp.vec2, requires_grad=True)
    out = wp.zeros(len(coords), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(grad_loss, len(coords), inputs=[closest, ca, wp.zeros(1, dtype=float), out])
    tape.backward(grads={out: wp.ones(len(coords), dtype=float)})
    np.testing.assert_array_equal(ca.grad.numpy(), 0.0)  # piecewise constant


@wp.struct
class Material:
    albedo: wp.Texture2D
    scale: float


class Annotated:
    """A plain class naming the texture types in annotations (as libraries do)."""

    t1: wp.Texture1D
    t3: wp.Texture3D


@wp.kernel
def shade(m: Material, out: wp.array(dtype=float)):
    out[0] = m.scale * wp.texture_sample(m.albedo, wp.vec2(0.25, 0.75)) + float(m.albedo.width)


def test_textures_in_structs_and_annotations():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = Material()
    m.albedo = wp.Texture2D(data, filter_mode=F.CLOSEST)
    m.scale = 2.0
    out = wp.zeros(1, dtype=float)
    wp.launch(shade, 1, inputs=[m, out])
    assert out.numpy()[0] == 2.0 * data[2, 1] + 4.0
    assert typing.get_type_hints(Annotated)["t1"] is wp.Texture1D
    t = wp.Texture(3, np.zeros((2, 3, 4), np.float32))
    assert isinstance(t, wp.Texture3D) and isinstance(t, wp.Texture) and not isinstance(t, wp.Texture2D)
    assert (t.width, t.height, t.depth, t.ndim) == (4, 3, 2, 3)


def test_host_api_and_errors():
    t = wp.Texture2D(width=8, height=4, num_channels=2, dtype=wp.uint8)
    assert (t.width, t.height, t.num_channels, t.dtype) == (8, 4, 2, wp.uint8)
    assert (t.address_mode_u, t.address_mode_v, t.normalized_coords) == (A.CLAMP, A.CLAMP, True)
    src = np.random.default_rng(0).integers(0, 255, (4, 8, 2)).astype(np.uint8)
    t.copy_from(src)
    back = np.zeros((4, 8, 2), np.uint8)
    t.copy_to(back)
    np.testing.assert_array_equal(back, src)
    arr = wp.zeros((4, 8, 2), dtype=wp.uint8)
    t.copy_to(arr)
    np.testing.assert_array_equal(arr.numpy(), src)
    am = wp.Texture2D(np.zeros((4, 4), np.float32), address_mode=(A.WRAP, A.BORDER), address_mode_u=A.MIRROR)
    assert (am.address_mode_u, am.address_mode_v) == (A.MIRROR, A.BORDER)
    for call, words in (
        (lambda: wp.Texture2D(np.zeros((4, 4, 3), np.float32)), "num_channels"),
        (lambda: wp.Texture2D(np.zeros((4, 4), np.float64)), "Unsupported texture dtype"),
        (lambda: wp.Texture2D(np.zeros((4, 4), np.int32), filter_mode=F.LINEAR), "CLOSEST"),
        (lambda: wp.Texture2D(width=8), "height"),
        (lambda: wp.Texture1D(np.zeros((4, 4, 4), np.float32)), "1D texture data"),
        (lambda: wp.Texture2D(np.zeros((4, 4), np.float32), num_mip_levels=5), "exceeds the maximum"),
        (lambda: t.copy_from(np.ones((3, 8, 2), np.uint8)), "Incompatible array shape"),
        (lambda: wp.Texture2D(np.zeros((4, 4), np.float32), address_mode=7), "address_mode"),
    ):
        with pytest.raises(ValueError, match=words):
            call()
    mip = wp.Texture2D(np.zeros((4, 4), np.float32), num_mip_levels=2)
    with pytest.raises(RuntimeError, match="immutable"):
        mip.copy_from(np.zeros((4, 4), np.float32))
