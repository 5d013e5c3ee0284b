"""The ``dtype=`` forms of the volume and texture builtins (``volume_sample(..., dtype=wp.vec3d)``).

Their type rules take the value type as a constant argument whose type is ``None``: the frontend passes such
compile-time type arguments (by keyword or position, also next to by-reference outputs such as ``grad``, and
keyword arguments of multi-form builtins after the positional ones) to the rule, and no runtime value for them. The
rules themselves are checked directly too.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import treadle as wp
from treadle._src.builtins import REGISTRY
from treadle._src.builtins.registry import NOT_CONST, NoMatch
from treadle._src.core.errors import CodegenError, CodegenTypeError
from treadle._src.volume import nanovdb as nv

from .helpers import trilinear


def test_rules_take_the_dtype_constant():
    U64, V3 = wp.uint64, wp.vec3f
    b = REGISTRY.builtins["volume_sample"]
    for t in (wp.int32, wp.int64, wp.uint32, wp.float32, wp.float64, wp.vec3f, wp.vec3d, wp.vec4f, wp.vec4d):
        assert b.resolve([U64, V3, wp.int32, None], [NOT_CONST] * 3 + [t]).ret is t
    assert b.resolve([U64, V3, wp.int32, None], [NOT_CONST] * 3 + [float]).ret is wp.float32
    with pytest.raises(NoMatch, match="dtype must be one of"):
        b.rule([U64, V3, wp.int32, None], [NOT_CONST] * 3 + [wp.mat33])
    with pytest.raises(NoMatch, match="dtype= .* is required"):
        b.rule([U64, V3, wp.int32], [NOT_CONST] * 3)
    g = REGISTRY.builtins["volume_sample_grad"]
    assert g.resolve([U64, V3, wp.int32, wp.mat33, None], [NOT_CONST] * 4 + [wp.vec3f]).ret is wp.vec3f
    with pytest.raises(NoMatch, match="'grad' must be a mat33"):
        g.rule([U64, V3, wp.int32, wp.vec3f, None], [NOT_CONST] * 4 + [wp.vec3f])
    t = REGISTRY.builtins["texture_sample"]
    assert t.resolve([wp.Texture2D, wp.float32, wp.float32, wp.float32, None],
                     [NOT_CONST] * 4 + [wp.vec4f]).ret is wp.vec4f
    assert t.resolve([wp.Texture2D, wp.vec2f, None, wp.float32], [NOT_CONST, NOT_CONST, wp.vec2f, NOT_CONST]).template \
        == (wp.vec2f, 2)


@wp.kernel
def typed_samples(v: wp.array(dtype=wp.uint64), p: wp.vec3, out: wp.array(dtype=wp.vec4d)):
    out[0] = wp.vec4d(wp.float64(wp.volume_sample(v[0], p, wp.Volume.LINEAR, dtype=wp.float32)), 0.0, 0.0, 0.0)
    out[1] = wp.vec4d(wp.volume_sample(v[1], p, wp.Volume.LINEAR, dtype=wp.float64), 0.0, 0.0, 0.0)
    out[2] = wp.vec4d(wp.float64(wp.volume_sample(v[2], p, wp.Volume.CLOSEST, dtype=wp.int32)), 0.0, 0.0, 0.0)
    out[3] = wp.vec4d(wp.float64(wp.volume_sample(v[3], p, wp.Volume.CLOSEST, dtype=wp.int64)), 0.0, 0.0, 0.0)
    out[4] = wp.vec4d(wp.float64(wp.volume_lookup(v[4], 1, 1, 1, dtype=wp.uint32)), 0.0, 0.0, 0.0)
    a = wp.volume_sample(v[5], p, wp.Volume.LINEAR, dtype=wp.vec3f)
    out[5] = wp.vec4d(wp.float64(a[0]), wp.float64(a[1]), wp.float64(a[2]), 0.0)
    b = wp.volume_sample(v[6], p, wp.Volume.LINEAR, dtype=wp.vec3d)
    out[6] = wp.vec4d(b[0], b[1], b[2], 0.0)
    c = wp.volume_sample(v[7], p, wp.Volume.LINEAR, dtype=wp.vec4f)
    out[7] = wp.vec4d(wp.float64(c[0]), wp.float64(c[1]), wp.float64(c[2]), wp.float64(c[3]))
    out[8] = wp.volume_sample(v[8], p, wp.Volume.LINEAR, dtype=wp.vec4d)
    J = wp.mat33()
    s = wp.volume_sample_grad(v[5], p, wp.Volume.LINEAR, J, dtype=wp.vec3f)
    out[9] = wp.vec4d(wp.float64(J[0, 0]), wp.float64(J[1, 1]), wp.float64(J[2, 2]), wp.float64(s[0]))


def test_every_value_type_samples():
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((4, 5, 6, 4))
    p = np.array([1.3, 2.6, 3.4])
    vols, refs = [], []
    for t, comps in ((wp.float32, 1), (wp.float64, 1), (wp.int32, 1), (wp.int64, 1), (wp.uint32, 1), (wp.vec3f, 3),
                     (wp.vec3d, 3), (wp.vec4f, 4), (wp.vec4d, 4)):
        d = dense[..., :comps] if comps > 1 else dense[..., 0]
        if t in (wp.int32, wp.int64, wp.uint32):
            d = np.abs(np.round(d * 100))
        bg = t(*([0] * comps)) if comps > 1 else t(0)
        vol = wp.Volume.allocate(min=[0, 0, 0], max=[7, 7, 7], voxel_size=1.0, bg_value=bg)
        grid = np.zeros((8, 8, 8, comps))
        grid[:4, :5, :6] = d.reshape(4, 5, 6, comps)
        g = vol.array().numpy()
        parsed = nv.parse_grid(g, 0, "t")
        lay = parsed.layout
        view = g[parsed.node_base(0) + lay.leaf_table:parsed.node_base(0) + lay.leaf_table + 512 * lay.value_size]
        view[:] = grid.reshape(512, comps).astype(lay.numpy_value).view(np.uint8).reshape(-1)
        vols.append(vol)
        refs.append(grid)
    out = wp.zeros(10, dtype=wp.vec4d)
    wp.launch(typed_samples, 1, inputs=[wp.array([v.id for v in vols], dtype=wp.uint64), wp.vec3(*p), out])
    o = out.numpy()
    p32 = p.astype(np.float32).astype(np.float64)  # the kernel samples at float32 coordinates
    lin = lambda g: trilinear(g, 0.0, p32[None])[0]  # noqa: E731
    near = lambda g: g[tuple(np.floor(np.abs(p) + 0.5).astype(int))]  # noqa: E731
    np.testing.assert_allclose(o[0, 0], lin(refs[0])[0], rtol=1e-5)
    np.testing.assert_allclose(o[1, 0], lin(refs[1])[0], rtol=1e-12)
    assert o[2, 0] == near(refs[2])[0] and o[3, 0] == near(refs[3])[0] and o[4, 0] == refs[4][1, 1, 1, 0]
    np.testing.assert_allclose(o[5, :3], lin(refs[5]), rtol=1e-5)
    np.testing.assert_allclose(o[6, :3], lin(refs[6]), rtol=1e-12)
    np.testing.assert_allclose(o[7], lin(refs[7]), rtol=1e-5)
    np.testing.assert_allclose(o[8], lin(refs[8]), rtol=1e-12)
    eps = 1e-4
    for a in range(3):
        d = np.zeros(3)
        d[a] = eps
        fd = (trilinear(refs[5], 0.0, (p32 + d)[None])[0] - trilinear(refs[5], 0.0, (p32 - d)[None])[0]) / (2 * eps)
        np.testing.assert_allclose(o[9, a], fd[a], rtol=1e-3, atol=1e-4)


@wp.kernel
def tex_forms(t: wp.Texture2D, out: wp.array(dtype=wp.vec4)):
    out[0] = wp.texture_sample(t, wp.vec2(0.3, 0.6), dtype=wp.vec4)
    v = wp.texture_sample(t, 0.3, 0.6, dtype=wp.vec2, lod=0.0)
    out[1] = wp.vec4(v[0], v[1], 0.0, 0.0)
    out[2] = wp.vec4(wp.texture_sample(t, 0.3, 0.6, lod=0.0, dtype=float), 0.0, 0.0, 0.0)


def test_texture_dtype_and_lod_keywords():
    data = np.random.default_rng(1).random((3, 5, 4)).astype(np.float32)
    tex = wp.Texture2D(data)
    out = wp.zeros(3, dtype=wp.vec4)
    wp.launch(tex_forms, 1, inputs=[tex, out])
    o = out.numpy()
    np.testing.assert_allclose(o[1, :2], o[0, :2])
    np.testing.assert_allclose(o[2, 0], o[0, 0])


@wp.kernel
def bad_dtype(vid: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.volume_sample(vid, wp.vec3(0.0), wp.Volume.LINEAR, dtype=wp.mat33)[0, 0]  # <-


def test_unsupported_dtype_is_a_build_error_at_the_users_line():
    vol = wp.Volume.load_from_numpy(np.zeros((2, 2, 2), np.float32))
    with pytest.raises(CodegenError) as info:
        wp.launch(bad_dtype, 1, inputs=[vol.id, wp.zeros(1, dtype=float)])
    lines, first = inspect.getsourcelines(bad_dtype.func)
    assert info.value.loc.line == first + next(i for i, t in enumerate(lines) if "# <-" in t)
    assert "dtype must be one of" in str(info.value)


@wp.kernel
def positional_dtype(vid: wp.uint64, out: wp.array(dtype=float)):
    J = wp.vec3()
    out[0] = wp.volume_sample(vid, wp.vec3(0.5, 0.0, 0.0), wp.Volume.LINEAR, float)
    out[1] = wp.volume_sample_grad(vid, wp.vec3(0.5, 0.0, 0.0), wp.Volume.LINEAR, J, float)
    out[2] = J[0]


def test_dtype_given_positionally():
    vol = wp.Volume.load_from_numpy(np.array([[[1.0]], [[3.0]]], np.float32))
    out = wp.zeros(3, dtype=float)
    wp.launch(positional_dtype, 1, inputs=[vol.id, out])
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0, 2.0])


def test_type_argument_to_a_builtin_without_dtype_is_refused():
    @wp.kernel
    def sin_of_type(out: wp.array(dtype=float)):
        out[0] = wp.sin(float)

    @wp.kernel
    def grad_with_value_keyword(vid: wp.uint64, out: wp.array(dtype=float)):
        J = wp.vec3()
        out[0] = wp.volume_sample_grad(vid, wp.vec3(0.0), wp.Volume.LINEAR, J, dtype=float, extra=1.0)

    with pytest.raises(CodegenTypeError, match="'sin' does not take a type argument"):
        wp.launch(sin_of_type, 1, inputs=[wp.zeros(1, dtype=float)])
    with pytest.raises(CodegenTypeError, match="takes positional arguments only"):
        wp.launch(grad_with_value_keyword, 1, inputs=[wp.uint64(0), wp.zeros(1, dtype=float)])
