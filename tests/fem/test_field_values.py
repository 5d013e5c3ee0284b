"""Exact dof-mapper round trips and attribute access to implicit-field values."""

import numpy as np
import pytest

import treadle as wp
import treadle.fem as fem

wp.init()


@pytest.mark.parametrize("mapping", list(fem.SymmetricTensorMapper.Mapping))
@pytest.mark.parametrize("dtype", [wp.mat22, wp.mat33])
def test_symmetric_mapper_unit_dofs_round_trip_exactly(mapping: fem.SymmetricTensorMapper.Mapping, dtype: type) -> None:
    mapper = fem.SymmetricTensorMapper(dtype, mapping=mapping)
    D = mapper.dof_dtype
    for k in range(D._length_):
        e = np.zeros(D._length_, dtype=np.float32)
        e[k] = 1.0
        m = np.array(mapper.dof_to_value(D(e)))
        np.testing.assert_array_equal(np.array(mapper.value_to_dof(dtype(m.reshape(-1)))), e)
        assert abs(0.5 * np.sum(m.astype(np.float64) ** 2) - 1.0) < 1e-6


@wp.func
def _scaled(x: wp.vec2, scale: float):
    return scale * x[0]


def test_implicit_field_values_are_attributes() -> None:
    geo = fem.Grid2D(res=wp.vec2i(1))
    f = fem.ImplicitField(fem.Cells(geo), func=_scaled, values={"scale": 2.0})
    assert f.values.scale == 2.0 and f.values["scale"] == 2.0
    f.values.scale = 3.0
    assert f.eval_arg_value().scale == 3.0
    with pytest.raises(AttributeError):
        f.values.other = 1.0
