"""Bad input to the sparse-matrix functions: each is a clear error raised from the call that made it."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import treadle as wp


def _raised_at_call(excinfo: pytest.ExceptionInfo, fn_name: str) -> None:
    """The traceback passes through this test's call of ``fn_name`` (the user's line)."""
    frames = traceback.extract_tb(excinfo.tb)
    assert any(f.filename == __file__ and fn_name in (f.line or "") for f in frames), frames


def _csr(device="cpu", n=3):
    return wp.sparse.bsr_from_triplets(n, n, wp.array(np.arange(n, dtype=np.int32), dtype=int, device=device),
                                       wp.array(np.arange(n, dtype=np.int32), dtype=int, device=device),
                                       wp.array(np.ones(n, dtype=np.float32), dtype=float, device=device))


def test_bad_block_types():
    with pytest.raises(ValueError, match="matrix or scalar; got vec3f") as e:
        wp.sparse.bsr_zeros(2, 2, wp.vec3)
    _raised_at_call(e, "bsr_zeros")
    with pytest.raises(ValueError, match="matrix or scalar"):
        wp.sparse.bsr_diag(wp.vec3(1.0, 2.0, 3.0), rows_of_blocks=2)
    with pytest.raises(ValueError, match="non-negative"):
        wp.sparse.bsr_zeros(-1, 2, float)
    with pytest.raises(ValueError, match="topology"):
        wp.sparse.bsr_zeros(2, 2, float, topology="masked")


def test_bad_triplets():
    A = wp.sparse.bsr_zeros(3, 3, wp.mat33)
    r = wp.array([0, 1], dtype=int)
    with pytest.raises(TypeError, match="int32$") as e:
        wp.sparse.bsr_set_from_triplets(A, wp.array([0.0, 1.0], dtype=float), r, None)
    _raised_at_call(e, "bsr_set_from_triplets")
    with pytest.raises(ValueError, match="same length, got 2 and 1"):
        wp.sparse.bsr_set_from_triplets(A, r, r[:1], None)
    with pytest.raises(ValueError, match=r"block shape \(3, 3\)"):
        wp.sparse.bsr_set_from_triplets(A, r, r, wp.array(np.ones((2, 2, 2)), dtype=float))
    with pytest.raises(ValueError, match="Scalar type of values array"):
        wp.sparse.bsr_set_from_triplets(A, r, r, wp.array(np.ones((2, 3, 3)), dtype=wp.float64))
    with pytest.raises(ValueError, match="Values array type"):
        wp.sparse.bsr_set_from_triplets(A, r, r, wp.zeros(2, dtype=wp.mat22))
    with pytest.raises(ValueError, match="values has 1 entries for 2 triplets"):
        wp.sparse.bsr_set_from_triplets(A, r, r, wp.zeros(1, dtype=wp.mat33))
    with pytest.raises(ValueError, match="row capacity"):
        wp.sparse.bsr_set_from_triplets(A, r, r, None, topology="padded")
    with pytest.raises(TypeError, match="dest must be a BsrMatrix"):
        wp.sparse.bsr_set_from_triplets(np.zeros((3, 3)), r, r, None)


def test_mismatched_operands():
    A = _csr()
    B = wp.sparse.bsr_zeros(3, 3, wp.mat22)
    with pytest.raises(ValueError, match="same block type") as e:
        wp.sparse.bsr_axpy(A, B)
    _raised_at_call(e, "bsr_axpy")
    with pytest.raises(ValueError, match="same number of rows and columns"):
        wp.sparse.bsr_axpy(A, _csr(n=4))
    with pytest.raises(ValueError, match="Incompatible block sizes"):
        wp.sparse.bsr_mm(B, A)
    with pytest.raises(ValueError, match="Incompatible number of rows/columns"):
        wp.sparse.bsr_mm(A, _csr(n=4))
    with pytest.raises(ValueError, match="same scalar type"):
        wp.sparse.bsr_mm(A, wp.sparse.bsr_copy(A, scalar_type=wp.float64))
    with pytest.raises(ValueError, match="Incompatible 'x'") as e:
        wp.sparse.bsr_mv(A, wp.zeros(4, dtype=float))
    _raised_at_call(e, "bsr_mv")
    with pytest.raises(ValueError, match="Incompatible 'x'"):
        wp.sparse.bsr_mv(A, wp.zeros(3, dtype=wp.float64))
    with pytest.raises(ValueError, match="Incompatible 'y'"):
        wp.sparse.bsr_mv(A, wp.zeros(3, dtype=float), wp.zeros(2, dtype=float))
    with pytest.raises(ValueError, match="Destination block shape"):
        wp.sparse.bsr_set_transpose(wp.sparse.bsr_zeros(3, 3, wp.types.matrix((2, 3), float)),
                                    wp.sparse.bsr_zeros(3, 3, wp.types.matrix((2, 3), float)))
    with pytest.raises(ValueError, match="Incompatible dest and src block shapes"):
        wp.sparse.bsr_copy(B, block_shape=(3, 3))
    with pytest.raises(ValueError, match="does not evenly divide"):
        wp.sparse.bsr_copy(wp.sparse.bsr_zeros(3, 3, wp.mat22), block_shape=(4, 4))
    with pytest.raises(TypeError, match="BsrMatrix or a matrix expression"):
        wp.sparse.bsr_copy(np.eye(3))
    with pytest.raises(ValueError, match="square blocks"):
        wp.sparse.bsr_identity(2, wp.types.matrix((2, 3), float))


@pytest.mark.skipif(not wp.is_cuda_available(), reason="needs a CUDA device: mixes a CPU and a GPU matrix")
def test_devices_differ():
    A = _csr("cpu")
    B = _csr("cuda:0")
    with pytest.raises(ValueError, match="on device"):
        wp.sparse.bsr_axpy(A, B)


def test_devices_differ_in_checks():
    # the device check on its own (no GPU needed): arrays that report different devices
    from treadle._src.sparse.matrix import check_devices

    class Fake:
        device = "cuda:7"

    with pytest.raises(ValueError, match="x is on device 'cpu' but y is on device 'cuda:7'"):
        check_devices("bsr_mv", x=wp.zeros(2), y=Fake())
