"""Texture samples compared with the reference's CPU sampler (warp-lang, when installed)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import treadle as wp

warp = pytest.importorskip("warp", reason="warp-lang is not installed (comparison with the reference)")
warp.config.quiet = True


@warp.kernel
def _theirs(t: warp.Texture2D, c: warp.array(dtype=warp.vec2), lod: float, out: warp.array(dtype=float)):
    i = warp.tid()
    out[i] = warp.texture_sample(t, c[i], dtype=float, lod=lod)


@wp.kernel
def _ours(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), lod: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], lod)


def test_samples_match_the_reference():
    rng = np.random.default_rng(0)
    coords = rng.uniform(-1.2, 2.2, (400, 2)).astype(np.float32)
    for dtype, (fm, am, mip, norm) in itertools.product(
            (np.float32, np.uint8, np.int16),
            itertools.product((0, 1), (0, 1, 2, 3), (1, 0), (True, False))):
        if mip != 1 and not norm:
            continue
        data = (rng.standard_normal((9, 13)) * 40).astype(dtype) if dtype != np.uint8 else \
            rng.integers(0, 255, (9, 13)).astype(np.uint8)
        kw = dict(filter_mode=fm, address_mode=am, num_mip_levels=mip, normalized_coords=norm)
        t_ours = wp.Texture2D(data, **{**kw, "filter_mode": wp.TextureFilterMode(fm),
                                       "address_mode": wp.TextureAddressMode(am)})
        t_theirs = warp.Texture2D(data, device="cpu", **{**kw, "filter_mode": warp.TextureFilterMode(fm),
                                                         "address_mode": warp.TextureAddressMode(am)})
        c = coords if norm else coords * np.array([13, 9], np.float32)
        for lod in (0.0, 0.7, 1.5) if mip != 1 else (0.0,):
            a = wp.zeros(len(c), dtype=float)
            wp.launch(_ours, len(c), inputs=[t_ours, wp.array(c, dtype=wp.vec2), lod, a])
            b = warp.zeros(len(c), dtype=float, device="cpu")
            warp.launch(_theirs, len(c), inputs=[t_theirs, warp.array(c, dtype=warp.vec2, device="cpu"), lod, b],
                        device="cpu")
            # float32 rounding: the two samplers order their products differently
            scale = float(np.abs(data.astype(np.float64)).max()) / (255.0 if dtype == np.uint8 else 32767.0 if
                                                                    dtype == np.int16 else 1.0)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=2e-6 * max(scale, 1.0),
                                       err_msg=f"{dtype.__name__} {kw} lod={lod}")
