"""NanoVDB grids as bytes: layout facts, parsing with full validation, and the ``.nvdb`` file container.

A NanoVDB grid is one contiguous, pointer-free buffer (all offsets are relative), laid out breadth first::

    GridData (672 B) | TreeData (64 B) | RootData + tiles | upper nodes | lower nodes | leaves | blind data

The root holds a table of tiles keyed by the coordinate's top bits (each tile is a value or a 4096^3 upper node);
an upper node has 32^3 entries (a value or a 128^3 lower node), a lower node 16^3 entries (a value or an 8^3 leaf),
a leaf 512 voxel values and an active mask. Index grids (``Index``, ``OnIndex``) store, instead of values, the
position of each voxel's value in an external array.

The byte offsets of every field follow from C struct layout rules applied to each value type (``_layout``): the
node headers are fixed, the statistics (minimum, maximum, average, standard deviation) follow them at the value
type's alignment, and tables start at 32-byte boundaries. Kernels read grids through these offsets without checks
(``treadle/native/volume.h``), so :func:`parse_grid` validates every offset a kernel could follow before a grid is
used: a damaged buffer is rejected with an error naming its source, never read out of bounds.

Files (``.nvdb``) hold segments: a 16-byte header (magic, version, grid count, codec), then per grid a 176-byte
metadata record and the grid's name, then the grids, each stored raw, zlib-compressed (``zip``: a ``uint64`` byte
count and a zlib stream) or Blosc-compressed (``blosc``: chunks of at most 1 GiB, each a ``uint64`` byte count and a
Blosc frame). A file may also be a raw grid buffer.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

MAGIC_NUMB = 0x304244566F6E614E  # "NanoVDB0": grids and file headers of older writers
MAGIC_GRID = 0x314244566F6E614E  # "NanoVDB1": a grid
MAGIC_FILE = 0x324244566F6E614E  # "NanoVDB2": a file header


def make_version(major: int, minor: int, patch: int) -> int:
    """NanoVDB's packed version number (11 bits major, 11 bits minor, 10 bits patch)."""
    return (major << 21) | (minor << 10) | patch


def version_str(v: int) -> str:
    """``"32.7.0"`` for a packed version."""
    return f"{(v >> 21) & 0x7FF}.{(v >> 10) & 0x7FF}.{v & 0x3FF}"


MAJOR_VERSION = 32
VERSION = make_version(32, 7, 0)

GRID_SIZE = 672
TREE_SIZE = 64
BLIND_META_SIZE = 288
FILE_HEADER_SIZE = 16
FILE_META_SIZE = 176
ALIGN = 32
CODECS = {"none": 0, "zip": 1, "blosc": 2}
BLOSC_CHUNK = 1 << 30

# GridData field offsets
OFF_MAGIC, OFF_CHECKSUM, OFF_VERSION, OFF_FLAGS = 0, 8, 16, 20
OFF_GRID_INDEX, OFF_GRID_COUNT, OFF_GRID_SIZE, OFF_NAME = 24, 28, 32, 40
OFF_MAP, OFF_WORLD_BBOX, OFF_VOXEL_SIZE, OFF_CLASS, OFF_TYPE = 296, 560, 608, 632, 636
OFF_BLIND_OFFSET, OFF_BLIND_COUNT, OFF_DATA0, OFF_DATA1, OFF_DATA2 = 640, 648, 652, 656, 664
NAME_SIZE = 256

FLAG_HAS_BBOX = 1 << 1
FLAG_BREADTH_FIRST = 1 << 5

CLASS_UNKNOWN, CLASS_LEVEL_SET, CLASS_FOG_VOLUME, CLASS_INDEX_GRID = 0, 1, 2, 8

# Grid type codes (NanoVDB's GridType enum) and their names.
TYPE_NAMES = ("?", "float", "double", "int16", "int32", "int64", "Vec3f", "Vec3d", "Mask", "Half", "uint32", "bool",
              "RGBA8", "Float4", "Float8", "Float16", "FloatN", "Vec4f", "Vec4d", "Index", "OnIndex", "IndexMask",
              "OnIndexMask", "PointIndex", "Vec3u8", "Vec3u16", "uint8")
FLOAT, DOUBLE, INT32, INT64, VEC3F, VEC3D, UINT32, VEC4F, VEC4D, INDEX, ONINDEX = 1, 2, 4, 5, 6, 7, 10, 17, 18, 19, 20
INDEX_TYPES = (INDEX, ONINDEX)


def _up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


@dataclasses.dataclass(frozen=True)
class Layout:
    """Byte offsets of a grid type's nodes (relative to each node's start)."""

    code: int
    value_size: int       # bytes of one value (an index grid's tiles hold uint64 indices)
    numpy_value: str      # the value's NumPy dtype (scalar) ...
    components: int       # ... and its number of components
    root_background: int
    root_size: int
    tile_value: int
    tile_size: int
    table_stride: int
    upper_table: int
    upper_size: int
    lower_table: int
    lower_size: int
    leaf_table: int       # voxel values, or (index grids) the leaf's first index and prefix sums
    leaf_size: int

    @property
    def name(self) -> str:
        """NanoVDB's name of the grid type."""
        return TYPE_NAMES[self.code]

    @property
    def is_index(self) -> bool:
        """Whether the grid stores indices into external arrays instead of values."""
        return self.code in INDEX_TYPES


def _layout(code: int, scalar: str, n: int, stats: str) -> Layout:
    """The layout of value type ``n`` x ``scalar`` with statistics of type ``stats`` (C struct rules)."""
    ssize = np.dtype(scalar).itemsize
    vsize, valign = ssize * n, ssize
    stsize = np.dtype(stats).itemsize
    index = code in INDEX_TYPES

    def after_stats(start: int, values: int = 2) -> int:
        # ``values`` of the value type (minimum, maximum), then average and standard deviation (stats type)
        p = _up(start, valign) + values * vsize
        return _up(p, stsize) + 2 * stsize

    root_bg = _up(28, valign)  # after the index bbox (24 B) and the table size (4 B)
    root_size = _up(after_stats(28, 3), ALIGN)  # background, minimum, maximum, average, deviation
    tile_value = _up(20, valign)  # after key (8), child (8), state (4)
    tile_size = _up(tile_value + vsize, ALIGN)
    stride = _up(max(vsize, 8), max(valign, 8))  # union { value; int64 child offset }
    upper_table = _up(after_stats(24 + 8 + 2 * 4096) if not index else 24 + 8 + 2 * 4096 + 4 * 8, ALIGN)
    lower_table = _up(after_stats(24 + 8 + 2 * 512) if not index else 24 + 8 + 2 * 512 + 4 * 8, ALIGN)
    if index:
        leaf_table, leaf_size = 80, 96  # uint64 first index, uint64 prefix sums
    else:
        leaf_table = _up(after_stats(80), ALIGN)
        leaf_size = leaf_table + 512 * vsize
    return Layout(code, vsize, scalar, n, root_bg, root_size, tile_value, tile_size, stride,
                  upper_table, upper_table + 32768 * stride, lower_table, lower_table + 4096 * stride,
                  leaf_table, _up(leaf_size, ALIGN))


LAYOUTS: dict[int, Layout] = {
    FLOAT: _layout(FLOAT, "f4", 1, "f4"),
    DOUBLE: _layout(DOUBLE, "f8", 1, "f8"),
    INT32: _layout(INT32, "i4", 1, "f4"),
    INT64: _layout(INT64, "i8", 1, "f8"),
    UINT32: _layout(UINT32, "u4", 1, "f4"),
    VEC3F: _layout(VEC3F, "f4", 3, "f4"),
    VEC3D: _layout(VEC3D, "f8", 3, "f8"),
    VEC4F: _layout(VEC4F, "f4", 4, "f4"),
    VEC4D: _layout(VEC4D, "f8", 4, "f8"),
    INDEX: _layout(INDEX, "u8", 1, "u8"),
    ONINDEX: _layout(ONINDEX, "u8", 1, "u8"),
}


class NanoVDBError(ValueError):
    """A buffer or file that is not a valid NanoVDB grid (the message names the source and the problem)."""


def type_name(code: int) -> str:
    """NanoVDB's name of a grid type code."""
    return TYPE_NAMES[code] if 0 <= code < len(TYPE_NAMES) else f"<unknown type {code}>"


# ----------------------------------------------------------------------------------------------------------------
# Coordinates
# ----------------------------------------------------------------------------------------------------------------

def root_key(origins: np.ndarray) -> np.ndarray:
    """NanoVDB's 64-bit root-table key of coordinates (N, 3): 21 bits of each coordinate's top (32 - 12) bits."""
    u = origins.astype(np.int64).astype(np.uint32).astype(np.uint64) >> np.uint64(12)
    return u[:, 2] | (u[:, 1] << np.uint64(21)) | (u[:, 0] << np.uint64(42))


def internal_index(c: np.ndarray, total_log2: int, child_log2: int) -> np.ndarray:
    """Position of coordinates (N, 3) in an internal node's table (x slowest)."""
    w = total_log2 - child_log2
    m = (1 << total_log2) - 1
    q = (c.astype(np.int64) & m) >> child_log2
    return (q[:, 0] << (2 * w)) | (q[:, 1] << w) | q[:, 2]


# ----------------------------------------------------------------------------------------------------------------
# A parsed grid
# ----------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class BlindData:
    """One blind-data (feature) array of a grid."""

    name: str
    offset: int        # from the grid's start
    value_count: int
    value_size: int
    semantic: int
    data_class: int
    data_type: int


@dataclasses.dataclass
class Grid:
    """A validated NanoVDB grid inside a byte buffer (``buf[start:start + size]``)."""

    buf: np.ndarray
    start: int
    size: int
    layout: Layout
    grid_class: int
    grid_index: int
    grid_count: int
    name: str
    mat: np.ndarray            # index -> world, float64 (3, 3), row-major (world = mat @ ijk + translation)
    inv_mat: np.ndarray
    translation: np.ndarray
    voxel_size: np.ndarray
    world_bbox: np.ndarray     # (2, 3)
    value_count: int           # index grids: number of indices, background (0) included
    node_offsets: tuple[int, int, int, int]  # leaf, lower, upper, root: from the tree's start
    node_counts: tuple[int, int, int]        # leaf, lower, upper
    active_voxels: int
    blind: list[BlindData]

    @property
    def tree(self) -> int:
        """Offset of the tree data from the buffer's start."""
        return self.start + GRID_SIZE

    def node_base(self, level: int) -> int:
        """Buffer offset of the first node of a level (0 leaf, 1 lower, 2 upper, 3 root)."""
        return self.tree + self.node_offsets[level]

    def leaves(self) -> np.ndarray:
        """The leaf nodes as rows of bytes, shape (leaf count, leaf size)."""
        n, size = self.node_counts[0], self.layout.leaf_size
        base = self.node_base(0)
        return self.buf[base:base + n * size].reshape(n, size)

    def leaf_origins(self) -> np.ndarray:
        """Origins of the leaves (multiples of 8), int32 (N, 3), in the buffer's order."""
        rows = self.leaves()
        return np.ascontiguousarray(rows[:, :12]).view(np.int32).reshape(-1, 3) & np.int32(~7)

    def leaf_masks(self) -> np.ndarray:
        """The leaves' active masks, uint64 (N, 8) (bit n of the mask: voxel x * 64 + y * 8 + z)."""
        return np.ascontiguousarray(self.leaves()[:, 16:80]).view(np.uint64).reshape(-1, 8)

    def leaf_values(self) -> np.ndarray:
        """The leaves' voxel values, (N, 512[, components]) (value grids only)."""
        lay = self.layout
        rows = self.leaves()
        raw = np.ascontiguousarray(rows[:, lay.leaf_table:lay.leaf_table + 512 * lay.value_size])
        vals = raw.view(lay.numpy_value).reshape(len(rows), 512, lay.components)
        return vals[..., 0] if lay.components == 1 else vals

    def index_offsets(self) -> np.ndarray:
        """Index grids: each leaf's first index, uint64 (N,)."""
        return np.ascontiguousarray(self.leaves()[:, 80:88]).view(np.uint64).reshape(-1)

    def background(self) -> np.ndarray:
        """The background value as a NumPy array of the value's components."""
        lay = self.layout
        at = self.node_base(3) + lay.root_background
        dt = "u8" if lay.is_index else lay.numpy_value
        return np.frombuffer(self.buf, dtype=dt, count=lay.components, offset=at).copy()

    def voxel_count(self) -> int:
        """Indexable voxels: index grids: their indices (background excluded); others: leaf voxels."""
        if self.layout.is_index:
            return max(self.value_count - 1, 0)
        return self.node_counts[0] * 512

    def bytes(self) -> bytes:
        """The grid's bytes."""
        return self.buf[self.start:self.start + self.size].tobytes()


def _u(fmt: str, buf: np.ndarray, at: int) -> tuple[Any, ...]:
    return struct.unpack_from("<" + fmt, buf, at)


def parse_grid(buf: np.ndarray, start: int = 0, source: str = "buffer") -> Grid:
    """Parse and validate the grid at ``buf[start:]`` (``buf``: a uint8 NumPy array); raises :class:`NanoVDBError`."""

    def bad(what: str) -> NanoVDBError:
        return NanoVDBError(f"{source}: not a valid NanoVDB grid: {what}")

    total = len(buf) - start
    if total < GRID_SIZE + TREE_SIZE:
        raise bad(f"{total} bytes, fewer than a grid header ({GRID_SIZE + TREE_SIZE} bytes)")
    magic, = _u("Q", buf, start + OFF_MAGIC)
    if magic not in (MAGIC_NUMB, MAGIC_GRID):
        raise bad(f"wrong magic number {magic:#018x} (expected 'NanoVDB0' or 'NanoVDB1')")
    version, flags, grid_index, grid_count = _u("IIII", buf, start + OFF_VERSION)
    if (version >> 21) != MAJOR_VERSION:
        raise bad(f"NanoVDB version {version_str(version)} is not supported (this reader reads version "
                  f"{MAJOR_VERSION}.x)")
    size, = _u("Q", buf, start + OFF_GRID_SIZE)
    if size > total or size < GRID_SIZE + TREE_SIZE:
        raise bad(f"grid size {size} does not fit the {total} bytes available (truncated?)")
    code, = _u("I", buf, start + OFF_TYPE)
    lay = LAYOUTS.get(code)
    if lay is None:
        raise bad(f"grid type {type_name(code)} ({code}) is not supported (supported: "
                  + ", ".join(type_name(c) for c in LAYOUTS) + ")")
    grid_class, = _u("I", buf, start + OFF_CLASS)
    raw_name = bytes(buf[start + OFF_NAME:start + OFF_NAME + NAME_SIZE])
    name = raw_name.split(b"\0", 1)[0].decode("utf-8", "replace")
    matf = np.array(_u("9d", buf, start + OFF_MAP + 88)).reshape(3, 3)
    invf = np.array(_u("9d", buf, start + OFF_MAP + 160)).reshape(3, 3)
    trans = np.array(_u("3d", buf, start + OFF_MAP + 232))
    if not (np.isfinite(matf).all() and np.isfinite(invf).all() and np.isfinite(trans).all()):
        raise bad("its index-to-world transform is not finite")
    world_bbox = np.array(_u("6d", buf, start + OFF_WORLD_BBOX)).reshape(2, 3)
    voxel_size = np.array(_u("3d", buf, start + OFF_VOXEL_SIZE))
    blind_offset, blind_count = _u("qI", buf, start + OFF_BLIND_OFFSET)
    data1, = _u("Q", buf, start + OFF_DATA1)

    tree = start + GRID_SIZE
    offs = _u("4Q", buf, tree)
    counts = _u("3I", buf, tree + 32)
    active, = _u("Q", buf, tree + 56)
    node_sizes = (lay.leaf_size, lay.lower_size, lay.upper_size)
    for level, what in enumerate(("leaf", "lower", "upper")):
        if counts[level] == 0:
            continue
        if offs[level] % 8 or GRID_SIZE + offs[level] + counts[level] * node_sizes[level] > size:
            raise bad(f"its {counts[level]} {what} nodes at offset {offs[level]} do not fit the grid's {size} bytes")
    root = tree + offs[3]
    if offs[3] % 8 or GRID_SIZE + offs[3] + lay.root_size > size:
        raise bad(f"its root node at offset {offs[3]} does not fit the grid's {size} bytes")
    tiles, = _u("I", buf, root + 24)
    if GRID_SIZE + offs[3] + lay.root_size + tiles * lay.tile_size > size:
        raise bad(f"its root table of {tiles} tiles does not fit the grid's {size} bytes")
    if lay.is_index and data1 > 2**40:
        raise bad(f"index count {data1} is implausible")

    g = Grid(buf, start, size, lay, grid_class, grid_index, grid_count, name, matf, invf, trans, voxel_size,
             world_bbox, int(data1), offs, counts, int(active), [])
    _check_children(g, tiles, bad)
    if lay.is_index:
        _check_index_leaves(g, bad)
    g.blind = _blind_data(g, blind_offset, blind_count, bad)
    return g


def _check_children(g: Grid, tiles: int, bad: Any) -> None:
    """Every child offset a lookup can follow lands exactly on a node of the next level (no stray reads)."""
    lay, buf = g.layout, g.buf
    root = g.node_base(3)
    tile_rows = np.frombuffer(buf, dtype=np.uint8, count=tiles * lay.tile_size,
                              offset=root + lay.root_size).reshape(tiles, lay.tile_size)
    children = np.ascontiguousarray(tile_rows[:, 8:16]).view(np.int64).reshape(-1)
    _check_targets(root + children[children != 0], g.node_base(2), lay.upper_size, g.node_counts[2],
                   "root tile", "upper", bad)
    for level, (count, size, table, entries, mask_at, what, child_what) in (
            (2, (g.node_counts[2], lay.upper_size, lay.upper_table, 32768, 32 + 4096, "upper node", "lower")),
            (1, (g.node_counts[1], lay.lower_size, lay.lower_table, 4096, 32 + 512, "lower node", "leaf"))):
        if count == 0:
            continue
        base = g.node_base(level)
        nodes = buf[base:base + count * size].reshape(count, size)
        masks = np.ascontiguousarray(nodes[:, mask_at:mask_at + entries // 8])
        bits = np.unpackbits(masks, axis=1, bitorder="little").astype(bool)
        if not bits.any():
            continue
        table_bytes = nodes[:, table:table + entries * lay.table_stride].reshape(count, entries, lay.table_stride)
        offsets = np.ascontiguousarray(table_bytes[:, :, :8]).view(np.int64).reshape(count, entries)
        node_idx, _ = np.nonzero(bits)
        targets = base + node_idx.astype(np.int64) * size + offsets[bits]
        _check_targets(targets, g.node_base(level - 1), (lay.lower_size, lay.leaf_size)[2 - level],
                       g.node_counts[level - 1], what, child_what, bad)


def _check_targets(targets: np.ndarray, base: int, size: int, count: int, parent: str, child: str, bad: Any) -> None:
    if targets.size == 0:
        return
    rel = targets - base
    ok = (rel >= 0) & (rel < count * size) & (rel % size == 0)
    if not ok.all():
        first = int(targets[~ok][0])
        raise bad(f"a {parent} points at byte {first}, which is not one of the {count} {child} nodes")


def _check_index_leaves(g: Grid, bad: Any) -> None:
    if g.node_counts[0] == 0:
        return
    first = g.index_offsets()
    if g.layout.code == ONINDEX:
        count = np.array([int(np.bitwise_count(m).sum()) if hasattr(np, "bitwise_count") else
                          sum(bin(int(w)).count("1") for w in m) for m in g.leaf_masks()], dtype=np.uint64)
    else:
        count = np.full(len(first), 512, dtype=np.uint64)
    end = first + count
    if (end > np.uint64(g.value_count)).any() or ((first == 0) & (count > 0)).any():
        raise bad(f"its leaf indices exceed its index count {g.value_count}")


def _blind_data(g: Grid, offset: int, count: int, bad: Any) -> list[BlindData]:
    out: list[BlindData] = []
    if count == 0:
        return out
    if offset < GRID_SIZE or offset + count * BLIND_META_SIZE > g.size:
        raise bad(f"its {count} blind-data records at offset {offset} do not fit the grid")
    for i in range(count):
        at = g.start + offset + i * BLIND_META_SIZE
        data_offset, value_count, value_size, semantic, data_class, data_type = _u("qQIIII", g.buf, at)
        raw = bytes(g.buf[at + 32:at + 32 + 256])
        name = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        begin = offset + i * BLIND_META_SIZE + data_offset
        if begin < 0 or begin + value_count * value_size > g.size:
            raise bad(f"its blind-data array {i} ({value_count} x {value_size} bytes) does not fit the grid")
        out.append(BlindData(name, begin, value_count, value_size, semantic, data_class, data_type))
    return out


def parse_grids(buf: np.ndarray, source: str) -> list[Grid]:
    """All grids of a buffer of consecutive grids."""
    grids = []
    at = 0
    while at < len(buf):
        g = parse_grid(buf, at, source)
        grids.append(g)
        at += g.size
        if len(buf) - at < GRID_SIZE:
            break
    return grids


# ----------------------------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------------------------

def _decompress(codec: int, data: memoryview, at: int, size: int, source: str) -> tuple[bytes, int]:
    """Grid bytes (``size`` of them) stored at ``data[at:]`` with ``codec``; returns them and the end offset."""

    def need(n: int, what: str) -> None:
        if at + n > len(data):
            raise NanoVDBError(f"{source}: truncated NanoVDB file: {what} needs {n} bytes at offset {at}, only "
                               f"{max(len(data) - at, 0)} remain")

    if codec == 0:
        need(size, "a grid")
        return bytes(data[at:at + size]), at + size
    if codec == 1:
        need(8, "a compressed grid's size")
        n, = struct.unpack_from("<Q", data, at)
        at += 8
        need(n, "a zip-compressed grid")
        try:
            out = zlib.decompress(bytes(data[at:at + n]))
        except zlib.error as e:
            raise NanoVDBError(f"{source}: corrupted zip-compressed grid in NanoVDB file ({e})") from None
        if len(out) != size:
            raise NanoVDBError(f"{source}: a zip-compressed grid holds {len(out)} bytes, its header says {size}")
        return out, at + n
    if codec == 2:
        try:
            import blosc  # type: ignore[import-not-found]
        except ImportError:
            raise ImportError(f"{source}: this NanoVDB file is Blosc-compressed; reading it needs the 'blosc' package "
                              "(pip install blosc)") from None
        parts = []
        left = size
        while left > 0:
            need(8, "a Blosc chunk's size")
            n, = struct.unpack_from("<Q", data, at)
            at += 8
            need(n, "a Blosc chunk")
            try:
                chunk = blosc.decompress(bytes(data[at:at + n]))
            except Exception as e:  # blosc raises plain exceptions for damaged frames
                raise NanoVDBError(f"{source}: corrupted Blosc chunk in NanoVDB file ({e})") from None
            if len(chunk) != min(left, BLOSC_CHUNK):
                raise NanoVDBError(f"{source}: a Blosc chunk holds {len(chunk)} bytes, expected {min(left, BLOSC_CHUNK)}")
            parts.append(chunk)
            at += n
            left -= len(chunk)
        return b"".join(parts), at
    raise NanoVDBError(f"{source}: unknown NanoVDB codec {codec} (0: none, 1: zip, 2: blosc)")


def read_file_bytes(data: bytes | memoryview, source: str) -> np.ndarray:
    """The grids of a ``.nvdb`` file (or of a raw grid buffer) as one buffer of consecutive, validated grids."""
    mv = memoryview(data).cast("B")
    if len(mv) < 8:
        raise NanoVDBError(f"{source}: not a NanoVDB file ({len(mv)} bytes)")
    magic, = struct.unpack_from("<Q", mv, 0)
    # A file header has its version right after the magic number; a grid has its checksum there.
    file_version = struct.unpack_from("<I", mv, 8)[0] if len(mv) >= 12 else 0
    grid_version = struct.unpack_from("<I", mv, OFF_VERSION)[0] if len(mv) >= 20 else 0
    if magic == MAGIC_GRID or (magic == MAGIC_NUMB and file_version >> 21 != MAJOR_VERSION
                               and grid_version >> 21 == MAJOR_VERSION):
        # a raw grid buffer (grids one after another, no file header)
        buf = np.frombuffer(bytes(mv), dtype=np.uint8).copy()
        grids = parse_grids(buf, source)
        return buf[:sum(g.size for g in grids)]
    if magic not in (MAGIC_NUMB, MAGIC_FILE):
        raise NanoVDBError(f"{source}: not a NanoVDB file (magic number {magic:#018x})")
    parts: list[bytes] = []
    at = 0
    while at < len(mv):
        if len(mv) - at < FILE_HEADER_SIZE:
            raise NanoVDBError(f"{source}: truncated NanoVDB file: {len(mv) - at} trailing bytes are not a segment "
                               "header")
        magic, version, count, codec = struct.unpack_from("<QIHH", mv, at)
        if magic not in (MAGIC_NUMB, MAGIC_FILE):
            raise NanoVDBError(f"{source}: corrupted NanoVDB file: bad segment magic {magic:#018x} at offset {at}")
        if (version >> 21) != MAJOR_VERSION:
            raise NanoVDBError(f"{source}: NanoVDB file version {version_str(version)} is not supported (this "
                               f"reader reads version {MAJOR_VERSION}.x)")
        if count == 0:
            raise NanoVDBError(f"{source}: corrupted NanoVDB file: a segment with no grids at offset {at}")
        at += FILE_HEADER_SIZE
        metas = []
        for _ in range(count):
            if at + FILE_META_SIZE > len(mv):
                raise NanoVDBError(f"{source}: truncated NanoVDB file: grid metadata at offset {at}")
            grid_size, file_size = struct.unpack_from("<QQ", mv, at)
            name_size, = struct.unpack_from("<I", mv, at + 136)
            at += FILE_META_SIZE + name_size
            if at > len(mv):
                raise NanoVDBError(f"{source}: truncated NanoVDB file: a grid name of {name_size} bytes")
            metas.append((grid_size, file_size))
        for grid_size, file_size in metas:
            if grid_size < GRID_SIZE + TREE_SIZE or grid_size > 2**40:
                raise NanoVDBError(f"{source}: corrupted NanoVDB file: implausible grid size {grid_size}")
            grid, end = _decompress(codec, mv, at, grid_size, source)
            if codec == 0 and end - at != file_size:
                raise NanoVDBError(f"{source}: corrupted NanoVDB file: a grid of {grid_size} bytes is stored in "
                                   f"{file_size} bytes")
            parts.append(grid)
            at = end
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
    grids = parse_grids(buf, source)
    renumber(buf, grids)
    return buf


def renumber(buf: np.ndarray, grids: list[Grid]) -> None:
    """Set each grid's index and count to its place in the buffer (as readers of multi-grid files do)."""
    for i, g in enumerate(grids):
        struct.pack_into("<II", buf, g.start + OFF_GRID_INDEX, i, len(grids))
        g.grid_index, g.grid_count = i, len(grids)


def file_bytes(grids: list[Grid], codec: str = "none") -> Iterator[bytes]:
    """The pieces of a one-segment ``.nvdb`` file holding ``grids``."""
    if codec not in CODECS:
        raise ValueError(f"unknown NanoVDB codec {codec!r}; use one of {', '.join(CODECS)}")
    code = CODECS[codec]
    stored = [_compress(code, g.bytes()) for g in grids]
    yield struct.pack("<QIHH", MAGIC_NUMB, VERSION, len(grids), code)
    for g, data in zip(grids, stored):
        name = g.name.encode() + b"\0"
        lo, hi = _index_bbox(g)
        meta = struct.pack("<QQQQII6d6i3dI4I3IHHI", g.size, len(data), 0, g.active_voxels, g.layout.code, g.grid_class,
                           *g.world_bbox.reshape(-1), *lo, *hi, *g.voxel_size, len(name),
                           g.node_counts[0], g.node_counts[1], g.node_counts[2], 1, 0, 0, 0, code, 0, VERSION)
        assert len(meta) == FILE_META_SIZE
        yield meta + name
    yield from stored


def _index_bbox(g: Grid) -> tuple[tuple[int, ...], tuple[int, ...]]:
    root = g.node_base(3)
    v = _u("6i", g.buf, root)
    return v[:3], v[3:]


def _compress(code: int, data: bytes) -> bytes:
    if code == 0:
        return data
    if code == 1:
        z = zlib.compress(data)
        return struct.pack("<Q", len(z)) + z
    try:
        import blosc
    except ImportError:
        raise ImportError("saving a Blosc-compressed NanoVDB file needs the 'blosc' package (pip install blosc)") from None
    out = []
    for i in range(0, len(data), BLOSC_CHUNK):
        c = blosc.compress(data[i:i + BLOSC_CHUNK], typesize=4, clevel=9, cname="lz4")
        out.append(struct.pack("<Q", len(c)) + c)
    return b"".join(out)
