"""The :class:`BsrMatrix` type, its kernel-side types (:func:`bsr_matrix_t`), :func:`bsr_zeros`, kernel lookups.

The lookups are :func:`bsr_block_index` and :func:`bsr_row_index`.

Storage (the reference's layout): ``offsets`` (at least ``nrow + 1`` ints) delimits each row's storage, ``columns``
and ``values`` hold one column index and one block per stored slot. A *compact* matrix has ``row_counts = None``
and every slot of ``offsets[r]:offsets[r + 1]`` is active; a *padded* matrix keeps spare capacity in each row and
``row_counts[r]`` says how many of the row's slots are active (the first ones). The host-side ``nnz`` is an upper
bound of the stored slots used to size launches: operations that build a topology on the device leave it at the
bound they allocated for (the triplet count, say) rather than read the exact count back, so that they never wait
for the device; :meth:`BsrMatrix.nnz_sync` reads ``offsets[nrow]`` when an exact count is needed.

Every operation of this package launches kernels over these arrays (rows, slots or triplets as threads), so they
run on any device; only a few size queries (documented where they happen) read a count back to the host.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

import treadle as wp

from ..runtime.graph import capturing
from ..runtime.recording import suspend_tapes as no_tape

# ``no_tape`` is used across this package: kernels that build topologies are never recorded on a Tape (they have no
# adjoint, and reuse their scratch arrays in place, which a Tape would rightly refuse to differentiate through).

#: Status code of a sparse matrix whose last operations all succeeded (:meth:`BsrMatrix.status_sync`).
BSR_STATUS_SUCCESS = 0
#: Status code set when an operation writing into a padded matrix found a row without enough capacity (the row is
#: then left empty).
BSR_STATUS_ROW_CAPACITY_EXCEEDED = 1

_STATUS_MESSAGES = {BSR_STATUS_SUCCESS: "success", BSR_STATUS_ROW_CAPACITY_EXCEEDED: "row capacity exceeded"}

Topology = Literal["compact", "masked", "padded"]

_BlockType = typing.TypeVar("_BlockType")


class BsrError(wp.TreadleError, ValueError):
    """A sparse-matrix operation got operands that do not fit (shapes, block types, devices, topologies)."""


class BsrTypeError(wp.TreadleError, TypeError):
    """A sparse-matrix operation got an argument of the wrong kind or data type."""


# -- block types ------------------------------------------------------------------------------------------------------


def type_name(t: Any) -> str:
    """Short name of a Treadle dtype."""
    return getattr(t, "__name__", str(t))


def check_block_type(block_type: Any, what: str = "block_type") -> Any:
    """The Treadle block type for ``block_type`` (a scalar or matrix type; Python ``float``/``int`` map to 32 bits).

    Raises:
        BsrError: for vectors, quaternions, structs and other non-block types.
    """
    if block_type is float:
        return wp.float32
    if block_type is int:
        return wp.int32
    if wp.types.type_is_matrix(block_type) or (wp.types.type_is_scalar(block_type) and block_type is not bool):
        return block_type
    raise BsrError(f"BsrMatrix block type must be either warp matrix or scalar; got {type_name(block_type)}")


def block_shape_of(block_type: Any) -> tuple[int, int]:
    """``(rows, cols)`` of a block type (``(1, 1)`` for scalars)."""
    if wp.types.type_is_matrix(block_type):
        r, c = block_type._shape_
        return int(r), int(c)
    return 1, 1


def scalar_of(block_type: Any) -> Any:
    """The scalar type of a block type."""
    return wp.types.type_scalar_type(block_type)


def make_block_type(shape: tuple[int, int], scalar: Any) -> Any:
    """The block type of a new matrix of blocks ``shape``: the scalar itself for 1x1 blocks, else a matrix type."""
    if tuple(shape) == (1, 1):
        return scalar
    return wp.types.matrix(shape=(int(shape[0]), int(shape[1])), dtype=scalar)


def vector_type(length: int, scalar: Any) -> Any:
    """The type of one block-row of a vector operand: the scalar for length 1, else a vector type."""
    if length == 1:
        return scalar
    return wp.types.vector(length=int(length), dtype=scalar)


def block_key(block_type: Any) -> tuple[Any, ...]:
    """A hashable key identifying a block type up to equality (``wp.mat22`` and ``matrix((2, 2), float32)``)."""
    return (block_shape_of(block_type), scalar_of(block_type), wp.types.type_is_matrix(block_type))


# -- host helpers -----------------------------------------------------------------------------------------------------


def check_capture(what: str) -> None:
    """Raise if the calling thread is capturing a graph: ``what`` needs a count on the host."""
    if capturing():
        raise RuntimeError(f"{what} needs a device-to-host readback, which cannot happen while a graph is being "
                           "captured; run it once outside the capture, or pass the sizes it would read")


def read_int(a: Any, index: int, what: str) -> int:
    """``a[index]`` on the host (one element copied back; an error while capturing a graph)."""
    check_capture(what)
    return int(a[index:index + 1].numpy()[0])


def check_int_array(name: str, a: Any, fn: str) -> None:
    """Raise unless ``a`` is a one-dimensional int32 Treadle array."""
    if not isinstance(a, wp.array):
        raise BsrTypeError(f"{fn}(): {name} must be a treadle array of int32, got {type(a).__name__}")
    if a.dtype != wp.int32:
        raise BsrTypeError(f"{fn}(): {name} must be an int32 array, got {type_name(a.dtype)}")
    if a.ndim != 1:
        raise BsrError(f"{fn}(): {name} must be one-dimensional, got shape {a.shape}")


def check_devices(fn: str, **arrays: Any) -> Any:
    """The common device of ``arrays`` (``None`` entries skipped); a clear error naming the two that differ."""
    first_name, first = None, None
    for name, a in arrays.items():
        if a is None:
            continue
        if first is None:
            first_name, first = name, a
        elif a.device != first.device:
            raise BsrError(f"{fn}(): {first_name} is on device '{first.device}' but {name} is on device "
                           f"'{a.device}'; move one of them with .to(device)")
    return None if first is None else first.device


def overlaps(a: Any, b: Any) -> bool:
    """Whether the memory of two arrays may overlap (``False`` when either is ``None`` or empty)."""
    if a is None or b is None or a.ptr is None or b.ptr is None or a.size == 0 or b.size == 0:
        return False
    if a.device != b.device:
        return False

    def span(x: Any) -> tuple[int, int]:
        extent = sum((int(s) - 1) * abs(int(st)) for s, st in zip(x.shape, x.strides))
        return int(x.ptr), int(x.ptr) + extent + wp.types.type_size_in_bytes(x.dtype)

    a0, a1 = span(a)
    b0, b1 = span(b)
    return a0 < b1 and b0 < a1


# -- kernels ------------------------------------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _uniform_offsets(capacity: int, offsets: wp.array(dtype=int)):
    r = wp.tid()
    offsets[r] = r * capacity


@wp.kernel(enable_backward=False)
def _capacity_counts(capacity: wp.array(dtype=int), nrow: int, counts: wp.array(dtype=int)):
    r = wp.tid()
    if r < nrow:
        counts[r] = wp.max(capacity[r], 0)
    else:
        counts[r] = 0


@wp.kernel(enable_backward=False)
def _uncompress_rows(offsets: wp.array(dtype=int), row_counts: wp.array(dtype=int), has_counts: int, nrow: int,
                     nnz: int, out: wp.array(dtype=int)):
    r = wp.tid()
    beg = offsets[r]
    cap_end = offsets[r + 1]
    end = cap_end
    if has_counts != 0:
        end = beg + row_counts[r]
    if r == 0:
        for b in range(0, wp.min(beg, nnz)):
            out[b] = -1
    if r == nrow - 1:
        for b in range(wp.max(cap_end, 0), nnz):
            out[b] = -1
    for b in range(wp.max(beg, 0), wp.min(cap_end, nnz)):
        if b < end:
            out[b] = r
        else:
            out[b] = -1


@wp.kernel(enable_backward=False)
def _fill_int(out: wp.array(dtype=int), value: int):
    out[wp.tid()] = value


# -- kernel-side lookups (public @func) ---------------------------------------------------------------------------------


@wp.func
def bsr_row_index(offsets: wp.array(dtype=int), row_count: int, block_index: int) -> int:
    """Row of the stored block ``block_index`` of a compact matrix, or -1 when it lies past ``offsets[row_count]``.

    A binary search of ``offsets`` (usable in kernels and functions).
    """
    if block_index < 0 or block_index >= offsets[row_count]:
        return -1
    lo = 0
    hi = row_count
    while hi - lo > 1:
        mid = (lo + hi) / 2
        if offsets[mid] <= block_index:
            lo = mid
        else:
            hi = mid
    return lo


@wp.func
def bsr_row_index(offsets: wp.array(dtype=int), row_count: int, block_index: int,  # noqa: F811 - overload
                  row_counts: wp.array(dtype=int)) -> int:
    """Row holding the active slot ``block_index`` of a padded matrix (``-1`` for slack or out-of-range slots)."""
    r = bsr_row_index(offsets, row_count, block_index)
    if r >= 0:
        if block_index >= offsets[r] + row_counts[r]:
            return -1
    return r


@wp.func
def bsr_block_index(row: int, col: int, bsr_offsets: wp.array(dtype=int), bsr_columns: wp.array(dtype=int)) -> int:
    """Index of block ``(row, col)`` of a compact matrix in ``bsr_columns``/``values``, or -1 if it is not stored.

    A binary search of the row's columns, which every construction function of :mod:`treadle.sparse` keeps sorted.
    """
    if row < 0:
        return -1
    lo = bsr_offsets[row]
    hi = bsr_offsets[row + 1]
    while lo < hi:
        mid = (lo + hi) / 2
        c = bsr_columns[mid]
        if c < col:
            lo = mid + 1
        else:
            hi = mid
    if lo < bsr_offsets[row + 1]:
        if bsr_columns[lo] == col:
            return lo
    return -1


@wp.func
def bsr_block_index(row: int, col: int, bsr_offsets: wp.array(dtype=int),  # noqa: F811 - overload
                    bsr_columns: wp.array(dtype=int), bsr_row_counts: wp.array(dtype=int)) -> int:
    """Index of the active block ``(row, col)`` of a padded matrix (only ``row_counts[row]`` slots searched), or -1."""
    if row < 0:
        return -1
    lo = bsr_offsets[row]
    end = lo + bsr_row_counts[row]
    hi = end
    while lo < hi:
        mid = (lo + hi) / 2
        c = bsr_columns[mid]
        if c < col:
            lo = mid + 1
        else:
            hi = mid
    if lo < end:
        if bsr_columns[lo] == col:
            return lo
    return -1


# -- struct types -------------------------------------------------------------------------------------------------------

_STRUCTS: dict[tuple[Any, ...], Any] = {}


def bsr_matrix_t(dtype: Any) -> Any:
    """The kernel-argument type of a :class:`BsrMatrix` with blocks of ``dtype`` (a Treadle ``@struct`` type).

    A kernel parameter annotated ``A: bsr_matrix_t(wp.mat33)`` receives a matrix of that block type; in the kernel it
    has the fields ``nrow``, ``ncol``, ``nnz``, ``offsets``, ``row_counts`` (a null array for compact matrices),
    ``columns`` and ``values``. The same type object is returned for equal block types.

    Args:
        dtype: the block type, a scalar or a matrix type.
    """
    block_type = check_block_type(dtype, "dtype")
    key = block_key(block_type)
    st = _STRUCTS.get(key)
    if st is None:
        name = f"BsrMatrix_{type_name(block_type)}"
        annotations = {
            "nrow": wp.int32,
            "ncol": wp.int32,
            "nnz": wp.int32,
            "offsets": wp.array(dtype=wp.int32),
            "row_counts": wp.array(dtype=wp.int32),
            "columns": wp.array(dtype=wp.int32),
            "values": wp.array(dtype=block_type),
        }
        cls = type(name, (), {"__annotations__": annotations, "__module__": __name__, "__qualname__": name,
                              "__doc__": f"Kernel-side view of a BsrMatrix with {type_name(block_type)} blocks."})
        st = wp.struct(cls)
        _STRUCTS[key] = st
    return st


# -- the matrix ----------------------------------------------------------------------------------------------------------


#: The operations that matrices delegate to modules above this one (operators, transposes, copies), registered by
#: :mod:`.operators` when the package is imported: this module stays at the bottom of the package's imports.
_OPERATIONS: dict[str, typing.Callable[..., Any]] = {}


def register_operations(**fns: typing.Callable[..., Any]) -> None:
    """Register the functions that :class:`MatrixOperators` and :class:`BsrMatrix` methods delegate to."""
    _OPERATIONS.update(fns)


def operation(name: str) -> typing.Callable[..., Any]:
    """The registered implementation of one delegated matrix operation."""
    try:
        return _OPERATIONS[name]
    except KeyError:  # only reachable if the package's __init__ (which imports .operators) was bypassed
        raise RuntimeError(f"sparse matrix operation {name!r} is not registered (import treadle.sparse)") from None


def transposed_block_type(block_type: Any) -> Any:
    """The block type of a transposed matrix."""
    if not wp.types.type_is_matrix(block_type):
        return block_type
    r, c = block_shape_of(block_type)
    return wp.types.matrix(shape=(c, r), dtype=scalar_of(block_type))


class MatrixOperators:
    """The arithmetic operators of matrices and matrix expressions (implemented in :mod:`.operators`)."""

    def __add__(self, y: Any) -> Any:
        return operation("add")(self, y, 1.0)

    def __radd__(self, x: Any) -> Any:
        return operation("add")(x, self, 1.0) if isinstance(x, MatrixOperators) else NotImplemented

    def __sub__(self, y: Any) -> Any:
        return operation("add")(self, y, -1.0)

    def __rsub__(self, x: Any) -> Any:
        return operation("add")(x, self, -1.0) if isinstance(x, MatrixOperators) else NotImplemented

    def __mul__(self, s: Any) -> Any:
        return operation("mul")(self, s)

    def __rmul__(self, s: Any) -> Any:
        return operation("mul")(self, s)

    def __truediv__(self, s: Any) -> Any:
        return operation("truediv")(self, s)

    def __neg__(self) -> Any:
        return operation("neg")(self)

    def __matmul__(self, y: Any) -> Any:
        return operation("matmul")(self, y)

    def __rmatmul__(self, x: Any) -> Any:
        return operation("rmatmul")(self, x)


class BsrMatrix(MatrixOperators, typing.Generic[_BlockType]):
    """A block-sparse row matrix (a CSR matrix when its blocks are scalars).

    Made by :func:`bsr_zeros`, :func:`bsr_from_triplets`, :func:`bsr_diag`, :func:`bsr_copy` and the operators, not
    by calling the class. Passed to a kernel whose parameter is annotated ``bsr_matrix_t(block_type)``, it arrives
    as that struct.

    Attributes:
        nrow (int): number of rows of blocks.
        ncol (int): number of columns of blocks.
        nnz (int): host-side upper bound of the stored block slots, used to size launches; may exceed the active
            block count after a topology change (see :meth:`nnz_sync`). The arrays may be longer still.
        offsets (array of int): at least ``nrow + 1`` entries; row ``r`` stores its blocks from ``offsets[r]`` up
            to (not including) ``offsets[r + 1]``.
        row_counts (array of int or None): for padded matrices, the number of active blocks of each row (the first
            slots of the row's storage); ``None`` for compact matrices, where every stored slot is active.
        columns (array of int): the block column of each stored slot (at least ``nnz`` entries). Slots outside
            the active ranges are not part of the matrix.
        values (array of blocks): the block of each stored slot (at least ``nnz`` entries).
    """

    nrow: int
    ncol: int
    nnz: int
    offsets: Any
    row_counts: Any
    columns: Any
    values: Any

    def __init__(self) -> None:
        self.nrow = 0
        self.ncol = 0
        self.nnz = 0
        self.offsets = None
        self.row_counts = None
        self.columns = None
        self.values = None
        self._status: Any = None
        self._ctype_view: Any = None
        self._recorded_topology = False

    # -- properties ------------------------------------------------------------------------------------------------
    @property
    def dtype(self) -> Any:
        """Block type (a scalar type for CSR matrices, else a matrix type)."""
        return self.values.dtype

    @property
    def scalar_type(self) -> Any:
        """Scalar type of the block coefficients (the block type itself for CSR matrices)."""
        return scalar_of(self.values.dtype)

    @property
    def block_shape(self) -> tuple[int, int]:
        """Shape ``(rows, cols)`` of one block (``(1, 1)`` for CSR matrices)."""
        return block_shape_of(self.values.dtype)

    @property
    def block_size(self) -> int:
        """Number of coefficients of one block (``rows * cols``)."""
        r, c = self.block_shape
        return r * c

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the whole matrix in coefficients: ``(nrow * block rows, ncol * block cols)``."""
        r, c = self.block_shape
        return self.nrow * r, self.ncol * c

    @property
    def device(self) -> Any:
        """Device the matrix's arrays live on."""
        return self.values.device

    @property
    def requires_grad(self) -> bool:
        """Whether the matrix takes part in adjoint computations (its ``values`` have a gradient)."""
        return bool(self.values.requires_grad)

    @property
    def scalar_values(self) -> Any:
        """The ``values`` array seen as a 3-d array of scalars ``(len(values), block rows, block cols)``."""
        return scalar_view(self.values)

    # -- kernel argument protocol ------------------------------------------------------------------------------------
    @property
    def _struct_type_(self) -> Any:
        return bsr_matrix_t(self.values.dtype)

    def __ctype__(self) -> Any:
        st = self._struct_type_
        view = self._ctype_view
        if view is None or view._struct_type_ is not st:
            view = st()
            self._ctype_view = view
        view.nrow = int(self.nrow)
        view.ncol = int(self.ncol)
        view.nnz = int(self.nnz)
        view.offsets = self.offsets
        view.row_counts = self.row_counts
        view.columns = self.columns
        view.values = self.values
        return view.__ctype__()

    # -- counts and status -----------------------------------------------------------------------------------------
    def nnz_sync(self) -> int:
        """Read ``offsets[nrow]`` back from the device and make it the host-side ``nnz``; return it.

        For a compact matrix this is the number of stored (active) blocks; for a padded one, the total row capacity.

        Raises:
            NotImplementedError: while a graph capture that recorded a topology update of this matrix is in progress
                (the count exists only once the graph runs).
        """
        if capturing() and self._recorded_topology:
            raise NotImplementedError("nnz_sync() cannot read the block count while a graph capture that recorded a "
                                      "topology update of this matrix is in progress; read it after launching the "
                                      "graph")
        if not capturing():
            self._recorded_topology = False
        self.nnz = int(self.offsets[self.nrow:self.nrow + 1].numpy()[0])
        return self.nnz

    def copy_nnz_async(self) -> None:
        """Start copying ``offsets[nrow]`` to the host (deprecated: prefer :meth:`nnz_sync`).

        Treadle reads the count when :meth:`nnz_sync` is called, so this only exists for programs that call it; it
        does not change ``nnz``.
        """

    def notify_nnz_changed(self, nnz: int | None = None, nnz_capacity: int | None = None) -> None:
        """Tell the matrix that its ``offsets`` or ``nnz`` were changed outside :mod:`treadle.sparse`.

        Sets the host-side ``nnz`` (read from ``offsets[nrow]`` unless given) and grows ``columns`` and ``values``
        (keeping their contents) when they hold fewer than ``nnz_capacity`` (default: ``nnz``) slots.

        Args:
            nnz: new upper bound of the stored blocks; must be at least ``offsets[nrow]``.
            nnz_capacity: storage to make room for; must be at least ``offsets[nrow]``.
        """
        if nnz is None:
            if nnz_capacity is not None:
                nnz = int(nnz_capacity)
            else:
                nnz = read_int(self.offsets, self.nrow, "notify_nnz_changed() without nnz")
        self.nnz = int(nnz)
        cap = self.nnz if nnz_capacity is None else max(int(nnz_capacity), self.nnz)
        reserve(self, cap, keep=True)

    def _ensure_status(self) -> Any:
        if self._status is None or self._status.device != self.offsets.device:
            self._status = wp.zeros(1, dtype=int, device=self.offsets.device)
        return self._status

    def _status_if_any(self) -> Any:
        return self._status

    def status_sync(self) -> int:
        """Return the status code of the operations applied so far (sticky: only :meth:`clear_status` resets it).

        :data:`BSR_STATUS_SUCCESS` (0), or :data:`BSR_STATUS_ROW_CAPACITY_EXCEEDED` when an operation writing into
        padded storage found a row too small.

        Raises:
            NotImplementedError: while a graph is being captured (the status is written when the graph runs).
        """
        if capturing():
            raise NotImplementedError("status_sync() cannot read the status during a CPU APIC graph capture: "
                                      "operations recorded in the capture set it only when the graph runs; read it "
                                      "after launching the graph")
        if self._status is None:
            return BSR_STATUS_SUCCESS
        return int(self._status.numpy()[0])

    def status_message(self) -> str:
        """A readable description of :meth:`status_sync`'s code."""
        code = self.status_sync()
        return _STATUS_MESSAGES.get(code, f"unknown status {code}")

    def clear_status(self) -> None:
        """Reset the status to :data:`BSR_STATUS_SUCCESS`."""
        if self._status is not None:
            self._status.zero_()

    # -- helpers ---------------------------------------------------------------------------------------------------
    def uncompress_rows(self, out: Any = None) -> Any:
        """The row of each stored slot ``0 .. nnz - 1`` (``-1`` for slots outside every row's active range).

        For a compact matrix after :meth:`nnz_sync`, ``uncompress_rows()[:nnz]`` with ``columns[:nnz]`` and
        ``values[:nnz]`` is the matrix in coordinate form.

        Args:
            out: int32 array of at least ``nnz`` entries on the matrix's device to write into (its first ``nnz``
                entries); allocated when omitted.
        """
        nnz = int(self.nnz)
        if out is None:
            out = wp.empty(nnz, dtype=int, device=self.device)
        else:
            check_int_array("out", out, "uncompress_rows")
            check_devices("uncompress_rows", matrix=self.offsets, out=out)
            if out.shape[0] < nnz:
                raise BsrError(f"uncompress_rows(): out holds {out.shape[0]} entries, the matrix has nnz={nnz}")
        if nnz == 0:
            return out
        if self.nrow == 0:
            with no_tape():
                wp.launch(_fill_int, nnz, inputs=[out, -1], device=self.device)
            return out
        rc = self.row_counts
        with no_tape():
            wp.launch(_uncompress_rows, self.nrow, device=self.device,
                      inputs=[self.offsets, rc, int(rc is not None), self.nrow, nnz, out])
        return out

    def transpose(self) -> BsrMatrix:
        """A transposed copy of the matrix (see :func:`bsr_transposed`)."""
        return operation("bsr_transposed")(self)

    def __repr__(self) -> str:
        def arr(a: Any) -> str:
            return "None" if a is None else f"array(shape={tuple(a.shape)}, dtype={type_name(a.dtype)})"

        return (f"BsrMatrix_{type_name(self.dtype)}(nrow={self.nrow}, ncol={self.ncol}, nnz={self.nnz}, "
                f"offsets={arr(self.offsets)}, row_counts={arr(self.row_counts)}, columns={arr(self.columns)}, "
                f"values={arr(self.values)})")

    # in-place operators update this matrix
    def __iadd__(self, y: Any) -> Any:
        return operation("iadd")(self, y)

    def __isub__(self, y: Any) -> Any:
        return operation("isub")(self, y)

    def __imul__(self, s: Any) -> Any:
        return operation("imul")(self, s)

    def __imatmul__(self, y: Any) -> Any:
        return operation("imatmul")(self, y)


def _reinterpret(a: Any, dtype: Any, shape: tuple[int, ...]) -> Any:
    """A view of the contiguous array ``a`` with another element type and shape, its gradient viewed alike.

    Views keep the memory they look at alive.
    """
    if not a.is_contiguous:
        raise BsrError("the values array must be contiguous to be reinterpreted")
    same = wp.types.types_equal(a.dtype, dtype)
    v = a.reshape(shape) if same else a.view(dtype).reshape(shape)
    if a.grad is not None and v.grad is None:
        g = a.grad
        v.grad = g.reshape(shape) if same else g.view(dtype).reshape(shape)
    return v


def scalar_view(values: Any) -> Any:
    """A 3-d scalar view ``(n, block rows, block cols)`` of a contiguous 1-d array of blocks (gradient included)."""
    r, c = block_shape_of(values.dtype)
    return _reinterpret(values, scalar_of(values.dtype), (values.shape[0], r, c))


# -- allocation ---------------------------------------------------------------------------------------------------------


def new_matrix(nrow: int, ncol: int, block_type: Any, device: Any, requires_grad: bool = False) -> BsrMatrix:
    """An empty compact matrix (zero offsets, no stored blocks)."""
    m = BsrMatrix()
    m.nrow, m.ncol, m.nnz = int(nrow), int(ncol), 0
    m.offsets = wp.zeros(m.nrow + 1, dtype=int, device=device)
    m.columns = wp.empty(0, dtype=int, device=device)
    m.values = wp.empty(0, dtype=block_type, device=device, requires_grad=requires_grad)
    return m


def reserve(m: BsrMatrix, capacity: int, keep: bool = False) -> None:
    """Grow ``columns`` and ``values`` to hold at least ``capacity`` slots (contents kept when ``keep``)."""
    capacity = int(capacity)
    device = m.offsets.device
    if m.columns is None or m.columns.shape[0] < capacity:
        cols = wp.empty(capacity, dtype=int, device=device)
        if keep and m.columns is not None and m.columns.shape[0] > 0:
            wp.copy(cols, m.columns, count=m.columns.shape[0])
        m.columns = cols
    if m.values is None or m.values.shape[0] < capacity:
        rg = m.values.requires_grad if m.values is not None else False
        vals = wp.empty(capacity, dtype=m.values.dtype, device=device, requires_grad=rg)
        if keep and m.values.shape[0] > 0:
            wp.copy(vals, m.values, count=m.values.shape[0])
        m.values = vals


def set_padded_offsets(m: BsrMatrix, row_capacity: Any, nnz_capacity: int | None, fn: str) -> int:
    """Lay out padded storage in ``m.offsets`` from a uniform or per-row capacity; return the storage size."""
    device = m.offsets.device
    if isinstance(row_capacity, wp.array):
        check_int_array("row_capacity", row_capacity, fn)
        check_devices(fn, matrix=m.offsets, row_capacity=row_capacity)
        if row_capacity.shape[0] != m.nrow:
            raise BsrError(f"{fn}(): row_capacity has {row_capacity.shape[0]} entries for {m.nrow} rows")
        counts = wp.empty(m.nrow + 1, dtype=int, device=device)
        with no_tape():
            wp.launch(_capacity_counts, m.nrow + 1, inputs=[row_capacity, m.nrow, counts], device=device)
            wp.utils.array_scan(counts, m.offsets, inclusive=False)
        if nnz_capacity is None:
            return read_int(m.offsets, m.nrow, f"{fn}() with a per-row row_capacity array and no nnz_capacity")
        return int(nnz_capacity)
    cap = int(row_capacity)
    if cap < 0:
        raise BsrError(f"{fn}(): row_capacity must be non-negative, got {cap}")
    with no_tape():
        wp.launch(_uniform_offsets, m.nrow + 1, inputs=[cap, m.offsets], device=device)
    total = cap * m.nrow
    return total if nnz_capacity is None else max(int(nnz_capacity), total)


def check_topology(topology: Any, allowed: tuple[str, ...], fn: str) -> str:
    """Validate a ``topology=`` argument."""
    if topology not in allowed:
        raise BsrError(f"{fn}(): topology must be one of {', '.join(repr(t) for t in allowed)}, got {topology!r}")
    return str(topology)


def bsr_zeros(rows_of_blocks: int, cols_of_blocks: int, block_type: Any, device: Any = None, *,
              topology: Literal["compact", "padded"] | None = None, row_capacity: Any = None,
              nnz_capacity: int | None = None) -> BsrMatrix:
    """Create an empty (all-zero) BSR matrix, or CSR matrix when ``block_type`` is a scalar type.

    Args:
        rows_of_blocks: number of rows of blocks.
        cols_of_blocks: number of columns of blocks.
        block_type: type of one block: a scalar type for CSR matrices, a matrix type (``wp.mat33``,
            ``wp.types.matrix(shape=(2, 3), dtype=wp.float64)``) for BSR matrices.
        device: device to allocate on (default: the current device).
        topology: ``"compact"`` (no spare storage) or ``"padded"`` (``row_capacity`` slots reserved per row, with
            ``row_counts`` all zero). Defaults to ``"padded"`` when ``row_capacity`` is given, else ``"compact"``.
        row_capacity: slots reserved per row of a padded matrix: one integer for every row, or an int32 array of
            ``rows_of_blocks`` entries.
        nnz_capacity: slots to allocate in ``columns`` and ``values`` (at least the total row capacity). With a
            per-row capacity array it avoids reading the total back to the host.

    Returns:
        The new matrix. A padded matrix's ``nnz`` is its storage size.
    """
    block_type = check_block_type(block_type)
    nrow, ncol = int(rows_of_blocks), int(cols_of_blocks)
    if nrow < 0 or ncol < 0:
        raise BsrError(f"bsr_zeros(): the numbers of rows and columns of blocks must be non-negative, got "
                       f"{nrow} x {ncol}")
    if topology is None:
        topology = "padded" if row_capacity is not None else "compact"
    topology = check_topology(topology, ("compact", "padded"), "bsr_zeros")
    device = wp.get_device(device)
    m = new_matrix(nrow, ncol, block_type, device)
    if topology == "padded":
        cap = set_padded_offsets(m, 0 if row_capacity is None else row_capacity, nnz_capacity, "bsr_zeros")
        m.row_counts = wp.zeros(nrow, dtype=int, device=device)
        m._ensure_status()
        reserve(m, cap)
        m.nnz = cap
    elif nnz_capacity is not None:
        reserve(m, int(nnz_capacity))
    return m


def row_end_args(m: BsrMatrix) -> tuple[Any, int]:
    """``(row_counts, has_counts)`` kernel arguments describing the active range of each row."""
    return m.row_counts, int(m.row_counts is not None)


def block_view(values: Any, block_type: Any) -> Any:
    """A 1-d view with ``block_type`` elements of a contiguous 3-d scalar array ``(n, rows, cols)``, gradient too."""
    return _reinterpret(values, block_type, (values.shape[0],))
