"""Tile linear algebra and FFTs: products, Cholesky factorizations, triangular and Cholesky solves, FFTs.

``tile_matmul``, ``tile_cholesky``, the triangular and Cholesky solves (each with its in-place form), ``tile_fft``
and ``tile_ifft``.

The native side is ``treadle/native/tile_linalg.h`` and ``tile_fft.h`` (register-blocked GEMM, right-looking
Cholesky, row-AXPY substitution, Stockham FFT). Every out-of-place operation is differentiable, the in-place forms are
not (their input is overwritten), and the FFTs are (their adjoint is the opposite unnormalized transform).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import scalars
from ..types.typesys import TileT, is_float, is_int, is_vector, length_of, scalar_of, type_str
from .registry import NoMatch, Param, need
from .tile_common import TileSig, make_tile, need_tile, tile_builtin

#: Element types of matrix products (the operands and the accumulator may each be any of them).
MATMUL_DTYPES = (scalars.float16, scalars.float32, scalars.float64)
#: Element types of the product's operands: also bfloat16, converted to float32 as the product reads it.
MATMUL_IN_DTYPES = (scalars.float16, scalars.bfloat16, scalars.float32, scalars.float64)
#: Element types of the factorizations and solves.
SOLVE_DTYPES = (scalars.float32, scalars.float64)
#: The longest transform of a length that is not a power of two (those use a direct O(N^2) DFT).
MAX_DFT_LENGTH = 4096


def _float_scalar(t: Any, what: str) -> None:
    need(t is not None and scalars.is_scalar_type(t) and (is_float(t) or is_int(t)),
         f"'{what}' must be a float scalar, got {type_str(t) if t is not None else 'a compile-time value'}")


def _matrix(t: Any, what: str, dtypes: Sequence[Any]) -> TileT:
    tile = need_tile(t, what)
    need(tile.ndim == 2, f"'{what}' must be a 2-D tile, got shape {tile.shape}")
    need(tile.dtype in dtypes, f"'{what}' must hold {' or '.join(type_str(d) for d in dtypes)}, got "
         f"{type_str(tile.dtype)}")
    return tile


def _fill_mode(value: Any) -> int:
    need(value in ("lower", "upper"), f"fill_mode must be the compile-time string 'lower' or 'upper', got {value!r}")
    return 1 if value == "upper" else 0


# ------------------------------------------------------------------------------------------------ tile_matmul
def _matmul_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    # Entries: a, b, out (None when absent), alpha, beta, precision.
    for t in types[:3]:
        need(not (isinstance(t, TileT) and is_vector(t.dtype) and length_of(t.dtype) == 2),
             "tile_matmul does not support complex tiles (tiles of vec2): multiply the real and imaginary parts "
             "as separate float tiles")
    a = _matrix(types[0], "a", MATMUL_IN_DTYPES)
    b = _matrix(types[1], "b", MATMUL_IN_DTYPES)
    need(a.shape[1] == b.shape[0], f"tile_matmul: the inner extents differ: a has shape {a.shape} and b has shape "
         f"{b.shape} (a's columns must equal b's rows)")
    has_out = types[2] is not None
    _float_scalar(types[3], "alpha")
    _float_scalar(types[4], "beta")
    precision = consts[5]
    need(precision in ("default", "tf32"), f"precision must be the string literal 'default' or 'tf32', got "
         f"{precision!r}")
    shape = (a.shape[0], b.shape[1])
    bf16_out = (types[2].dtype if has_out else a.dtype) == scalars.bfloat16
    need(not bf16_out, "tile_matmul does not support a bfloat16 'out' tile: the accumulator must be float16, float32 "
         "or float64 (pass an out tile of one of those)")
    if has_out:
        out = _matrix(types[2], "out", MATMUL_DTYPES)
        need(out.shape == shape, f"tile_matmul: out has shape {out.shape}, but a @ b has shape {shape}")
        ret: TileT = out
    else:
        ret = make_tile(a.dtype, shape, "shared")
    # Reported at the call as a CodegenTypeError (a TypeError, as the reference raises).
    need(precision != "tf32" or all(t.dtype == scalars.float32 for t in (a, b, ret)),
         "precision='tf32' needs float32 tiles for a, b and out")
    return ret


tile_builtin(
    "tile_matmul", rule=_matmul_rule,
    signature="tile_matmul(a, b, out=None, alpha=1.0, beta=1.0, precision='default')",
    params=(Param("a"), Param("b"), Param("out", None, inout=True), Param("alpha", 1.0), Param("beta", 1.0),
            Param("precision", "default", static=True)),
    doc="""The matrix product of two tiles, returned in a new tile or accumulated into ``out``.

    ``c = tile_matmul(a, b)`` returns ``alpha * a @ b`` in a new tile of a's dtype;
    ``tile_matmul(a, b, out, alpha, beta)`` updates ``out`` in place to ``alpha * a @ b + beta * out`` (``out`` is
    read only when ``beta`` is nonzero, and accumulation uses out's dtype).

    ``a`` has shape ``(M, K)`` and ``b`` ``(K, N)``; each of ``a``, ``b`` and ``out`` may hold float16, float32 or
    float64. ``out`` must not alias ``a`` or ``b``. Gradients reach ``a``, ``b`` and the previous contents of ``out``
    (scaled by ``beta``, none when ``beta`` is zero); ``alpha`` and ``beta`` receive none. ``precision`` is
    ``"default"`` or ``"tf32"`` (float32 tiles only; the CPU computes in float32 either way).

    On the CPU the product is a register-blocked, vectorized GEMM over the tiles.""",
)


# ------------------------------------------------------------------------------------------------ Cholesky
def _square(t: Any, what: str) -> TileT:
    tile = _matrix(t, what, SOLVE_DTYPES)
    need(tile.shape[0] == tile.shape[1], f"'{what}' must be a square tile, got shape {tile.shape}")
    return tile


def _cholesky_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = _square(types[0], "A")
    return TileSig(ret=a.with_(storage="shared"), template=(_fill_mode(consts[1]),))


def _cholesky_inplace_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    a = _square(types[0], "A")
    return TileSig(ret=a, template=(_fill_mode(consts[1]),))


_FILL_DOC = """``fill_mode`` (a compile-time ``"lower"`` or ``"upper"``) selects ``L`` with ``L @ L^T = A`` or ``U`` with
    ``U^T @ U = A``; only that triangle of ``A`` is read and the other triangle of the factor is zero. ``A`` must be
    symmetric positive definite (otherwise the factor holds NaN); dtypes float32 and float64."""

tile_builtin(
    "tile_cholesky", rule=_cholesky_rule, signature="tile_cholesky(A, fill_mode='lower')",
    params=(Param("A"), Param("fill_mode", "lower", static=True)),
    doc=f"""The Cholesky factor of a square tile, in a new tile.

    {_FILL_DOC} Gradients are with respect to the read triangle of ``A`` (an off-diagonal entry there stands for both
    symmetric entries).""",
)
tile_builtin(
    "tile_cholesky_inplace", rule=_cholesky_inplace_rule, signature="tile_cholesky_inplace(A, fill_mode='lower')",
    params=(Param("A", inout=True), Param("fill_mode", "lower", static=True)), differentiable=False,
    doc=f"""Factor a square tile in place: ``A`` is replaced by its Cholesky factor (not differentiable).

    {_FILL_DOC}""",
)


# ------------------------------------------------------------------------------------------------ solves
def _rhs(m: TileT, y: Any, what: str) -> TileT:
    rhs = need_tile(y, what)
    need(rhs.ndim in (1, 2), f"'{what}' must be a 1-D or 2-D tile, got shape {rhs.shape}")
    need(rhs.shape[0] == m.shape[0], f"'{what}' has shape {rhs.shape}, but the matrix has shape {m.shape} (its first "
         f"extent must be {m.shape[0]})")
    need(rhs.dtype == m.dtype, f"'{what}' holds {type_str(rhs.dtype)} but the matrix holds {type_str(m.dtype)}")
    return rhs


def _solve_rule(matrix: str, rhs: str, fill: bool, inplace: bool) -> Any:
    def rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
        m = _square(types[0], matrix)
        y = _rhs(m, types[1], rhs)
        template = (_fill_mode(consts[2]),) if fill else ()
        return TileSig(ret=y if inplace else y.with_(storage="shared"), template=template)

    return rule


_RHS_DOC = """The right-hand side is a 1-D tile of shape ``(M,)`` or a 2-D tile of shape ``(M, NRHS)`` (all columns
    solved at once), of the matrix's dtype (float32 or float64)."""

for _name, _m, _r, _what in (("tile_lower_solve", "L", "y", "``L z = y`` for a lower-triangular ``L`` (only its lower "
                              "triangle and diagonal are read)"),
                             ("tile_upper_solve", "U", "z", "``U x = z`` for an upper-triangular ``U`` (only its "
                              "upper triangle and diagonal are read)")):
    tile_builtin(
        _name, rule=_solve_rule(_m, _r, False, False), signature=f"{_name}({_m}, {_r})",
        params=(Param(_m), Param(_r)),
        doc=f"""Solve {_what} and return the solution in a new tile.

    {_RHS_DOC} Gradients reach the right-hand side and the read triangle of ``{_m}``.""",
    )
    tile_builtin(
        f"{_name}_inplace", rule=_solve_rule(_m, _r, False, True), signature=f"{_name}_inplace({_m}, {_r})",
        params=(Param(_m), Param(_r, inout=True)), differentiable=False,
        doc=f"""Solve {_what} in place: ``{_r}`` is replaced by the solution (not differentiable).

    {_RHS_DOC}""",
    )

tile_builtin(
    "tile_cholesky_solve", rule=_solve_rule("L", "y", True, False),
    signature="tile_cholesky_solve(L, y, fill_mode='lower')",
    params=(Param("L"), Param("y"), Param("fill_mode", "lower", static=True)),
    doc=f"""Solve ``A x = y`` given A's Cholesky factor and return ``x`` in a new tile.

    With ``fill_mode="lower"`` ``L`` is the factor with ``L @ L^T = A``; with ``"upper"`` it holds ``U`` with
    ``U^T @ U = A``. Only that triangle is read. {_RHS_DOC} Gradients reach ``y`` and the factor's triangle.""",
)
tile_builtin(
    "tile_cholesky_solve_inplace", rule=_solve_rule("L", "y", True, True),
    signature="tile_cholesky_solve_inplace(L, y, fill_mode='lower')",
    params=(Param("L"), Param("y", inout=True), Param("fill_mode", "lower", static=True)), differentiable=False,
    doc=f"""Solve ``A x = y`` in place given A's Cholesky factor: ``y`` is replaced by ``x`` (not differentiable).

    ``fill_mode`` has the meaning of :func:`tile_cholesky_solve`'s. {_RHS_DOC}""",
)


# ------------------------------------------------------------------------------------------------ FFT
def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _fft_rule(types: Sequence[Any], consts: Sequence[Any]) -> Any:
    t = need_tile(types[0], "inout")
    need(is_vector(t.dtype) and length_of(t.dtype) == 2 and scalar_of(t.dtype) in SOLVE_DTYPES,
         f"the FFT needs a tile of vec2f or vec2d (complex numbers as (real, imaginary)), got {type_str(t.dtype)}")
    need(t.ndim >= 2, f"the FFT needs a tile of at least 2 dimensions (batches of transforms along the last one), "
         f"got shape {t.shape}")
    need(t.storage == "register", "the FFT needs a tile with register storage, got a shared tile")
    n = t.shape[-1]
    if not _is_pow2(n) and n > MAX_DFT_LENGTH:
        raise NoMatch(f"FFT length {n} is not a power of two; other lengths are supported up to {MAX_DFT_LENGTH}")
    return t


for _name, _kind, _sign in (("tile_fft", "forward", "-"), ("tile_ifft", "inverse", "+")):
    tile_builtin(
        _name, rule=_fft_rule, signature=f"{_name}(inout)", params=(Param("inout", inout=True),),
        doc=f"""The {_kind} FFT of a tile of complex numbers along its last dimension, in place.

    Every leading index is an independent batch: ``X[k] = sum_n x[n] * exp({_sign}2*pi*i*k*n/N)``, unnormalized,
    bins in numpy.fft's order.

    The tile holds vec2f or vec2d (component 0 real, 1 imaginary), has at least two dimensions and register storage.
    Any power-of-two length is supported, other lengths up to 4096 (a direct DFT). The adjoint is the opposite
    transform of the incoming gradient, not divided by ``N``.""",
    )
