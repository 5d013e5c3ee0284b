"""The seams where an upper layer registers what a lower one needs: the array protocol, composite factories,
struct array fields declared with the compiler's ``ArrayT``, the interop layer's hooks, bare kernel names."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import treadle as wp
from treadle._src.backends import args
from treadle._src.compiler import lower_expr
from treadle._src.lang import array as array_mod
from treadle._src.types import arrays
from treadle._src.types.struct import struct
from treadle._src.types.typesys import ArrayT, is_array_annotation


def test_array_protocol_recognises_arrays_and_annotations() -> None:
    a = wp.zeros(3, dtype=float)
    ann = wp.array(dtype=wp.vec3)
    assert arrays.is_array_object(a) and arrays.is_array_object(ann)
    assert arrays.is_array_object(wp.indexedarray(a, [wp.array([0, 2], dtype=wp.int32)]))
    assert not arrays.is_array_object(np.zeros(3)) and not arrays.is_array_object(wp.array)
    assert is_array_annotation(ann) and not is_array_annotation(np.zeros(3))
    assert arrays.array_class() is wp.array


def test_array_class_registration_needs_the_protocol() -> None:
    class NotAnArray:
        pass

    with pytest.raises(TypeError, match="array protocol"):
        arrays.register_array_class(NotAnArray)
    assert arrays.array_class() is wp.array  # unchanged


def test_struct_array_fields_declared_with_arrayt_match_array_annotations() -> None:
    class WithArrayT:
        pts: ArrayT(wp.vec3)  # type: ignore[valid-type]
        ids: ArrayT(wp.int32, 2)  # type: ignore[valid-type]

    class WithAnnotation:
        pts: wp.array(dtype=wp.vec3)  # type: ignore[valid-type]
        ids: wp.array2d(dtype=wp.int32)  # type: ignore[valid-type]

    WithArrayT.__qualname__ = WithAnnotation.__qualname__ = "Fields"
    a, b = struct(WithArrayT), struct(WithAnnotation)
    assert a.hash == b.hash and a.native_name == b.native_name  # the same C++ struct
    inst = a()
    pts = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=wp.vec3)
    inst.pts = pts
    assert inst.pts is pts
    with pytest.raises(TypeError, match="dimension"):
        inst.ids = wp.zeros(4, dtype=wp.int32)  # a 1-d array for a 2-d field


def test_mesh_vars_show_array_annotations() -> None:
    points = wp.Mesh.vars["points"]
    assert isinstance(points, wp.array) and points.dtype is wp.vec3f and points.ndim == 1


@pytest.mark.parametrize("value", [wp.quat(0.0, 0.0, 0.0, 1.0), wp.quath(0.0, 0.0, 0.0, 1.0),
                                   wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0)),
                                   wp.transformd(wp.vec3d(1.0, 2.0, 3.0), wp.quatd(0.0, 0.0, 0.0, 1.0)),
                                   wp.mat22(1.0, 2.0, 3.0, 4.0), wp.vec2(1.0, 2.0)])
def test_composites_unpickle_through_registered_factories(value: object) -> None:
    back = pickle.loads(pickle.dumps(value))
    assert type(back) is type(value) and back == value


def test_unknown_composite_key_is_an_error() -> None:
    from treadle._src.types.vector import class_from_key

    with pytest.raises(ValueError, match="unknown composite"):
        class_from_key(("tile", 3))


def test_interop_registers_its_hooks() -> None:
    assert args.FOREIGN.coerce is not None and args.FOREIGN.array_type is not None
    p = array_mod.PROTOCOLS
    assert None not in (p.dlpack_export, p.dlpack_device, p.cuda_export, p.cuda_import)
    a = wp.zeros(4, dtype=float)
    assert a.__dlpack_device__() == (1, 0)
    assert not hasattr(a, "__cuda_array_interface__")  # a CPU array has none


def test_bare_kernel_names_come_from_the_registered_namespace() -> None:
    assert lower_expr._BARE_NAMES[0] is wp

    @wp.kernel(module="unique")
    def bare(out: wp.array(dtype=wp.vec3)):
        out[0] = vec3(1.0, 2.0, 3.0)  # noqa: F821 - resolved as the reference does, without the wp. prefix

    out = wp.zeros(1, dtype=wp.vec3)
    wp.launch(bare, 1, inputs=[out])
    assert out.numpy().tolist() == [[1.0, 2.0, 3.0]]
