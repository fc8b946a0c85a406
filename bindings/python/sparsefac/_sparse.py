"""SparseMatrix (COO/CSR/CSC arrays, scipy.sparse, files) and IdMap."""

import os
from typing import NamedTuple, Tuple

import numpy as np

from . import _core
from ._context import resolve
from ._lib import Handle, as_float32, as_int32, as_int64, as_order, call, enum_value, shared_length

FORMATS = {"auto": _core.SFAC_FORMAT_AUTO, "matrix_market": _core.SFAC_FORMAT_MATRIX_MARKET,
           "triplets": _core.SFAC_FORMAT_TRIPLETS,
           "movielens_dat": _core.SFAC_FORMAT_MOVIELENS_DAT, "csv": _core.SFAC_FORMAT_CSV}

AXES = {"rows": _core.SFAC_AXIS_ROWS, "cols": _core.SFAC_AXIS_COLS}


def _flags(sum_duplicates):
    return _core.SFAC_SPARSE_SUM_DUPLICATES if sum_duplicates else _core.SFAC_SPARSE_DEFAULT


def _shape2(shape):
    if shape is None or len(shape) != 2:
        raise ValueError(f"shape must be (rows, cols), got {shape!r}")
    return int(shape[0]), int(shape[1])


def _checked_values(values, nnz, name="values"):
    if values is None:
        return None
    vals = as_float32(values, name).reshape(-1)
    if vals.size != nnz:
        raise ValueError(f"{name} has {vals.size} entries, expected {nnz}")
    return vals


class Bals(NamedTuple):
    """A matrix in the BALS tiled layout (docs/bals-format.md), as `SparseMatrix.to_bals`
    returns it and `SparseMatrix.from_bals` takes it. Tiles of tile_rows x tile_cols are
    numbered row-major over the (reordered) matrix; segment s = t * tile_rows + r is row r of
    tile t.

    tile_ptr  int64, tiles + 1: offsets of each tile's slice of tile_col
    tile_col  int32: each tile's distinct (reordered) global columns, in order of first
              appearance
    seg_ptr   int64, tiles * tile_rows + 1: offsets of each segment in seg_col and values
    seg_col   int32, nnz: each nonzero's local column (position in its tile's slice)
    values    float32, nnz
    row_order int32, rows: original row of each reordered row (identity without reordering)
    col_order int32, cols: original column of each reordered column
    """

    shape: Tuple[int, int]
    tile_rows: int
    tile_cols: int
    tile_ptr: np.ndarray
    tile_col: np.ndarray
    seg_ptr: np.ndarray
    seg_col: np.ndarray
    values: np.ndarray
    row_order: np.ndarray
    col_order: np.ndarray

    @property
    def tiles(self):
        return self.tile_ptr.size - 1

    @property
    def nnz(self):
        return int(self.seg_ptr[-1])


def _checked_length(arr, expected, name, what):
    if arr is not None and arr.size != expected:
        raise ValueError(f"{name} has {arr.size} entries, expected {what} = {expected}")
    return arr


def is_scipy_sparse(obj):
    try:
        import scipy.sparse as sp
    except ImportError:
        return False
    return sp.issparse(obj)


class SparseMatrix(Handle):
    """A sparse float32 matrix held by the library (on the context's device). Entries are kept
    sorted by (row, column). Build one with `from_coo`, `from_csr`, `from_csc`, `from_scipy`
    or `read`; get the data back with `to_coo`, `to_csr`, `to_csc` or `to_scipy`."""

    _destroy = staticmethod(_core.sfac_sparse_destroy)
    _kind = "SparseMatrix"

    def __init__(self, ptr, context):
        Handle.__init__(self, ptr)
        self.context = context
        self.row_ids = None  # IdMap when read with remap_ids=True
        self.col_ids = None

    # ---- construction ---------------------------------------------------------------------

    @classmethod
    def from_coo(cls, rows, cols, values=None, shape=None, sum_duplicates=False, context=None):
        """From triplets in any order. values=None makes a pattern matrix (all ones). shape
        defaults to (max row + 1, max col + 1)."""
        r = as_int32(rows, "rows")
        c = as_int32(cols, "cols")
        if r.size != c.size:
            raise ValueError(f"rows has {r.size} entries but cols has {c.size}")
        if shape is None:
            shape = (int(r.max()) + 1 if r.size else 0, int(c.max()) + 1 if c.size else 0)
        m, n = _shape2(shape)
        vals = _checked_values(values, r.size)
        ctx = resolve(context)
        ptr = call(_core.sfac_sparse_create_coo, ctx, m, n, r.size, r, c, vals,
                   _flags(sum_duplicates))
        return cls(ptr, ctx)

    @classmethod
    def from_csr(cls, indptr, indices, values, shape, sum_duplicates=False, context=None):
        """From CSR arrays: indptr (rows + 1), column indices, values (None = all ones)."""
        return cls._from_compressed(_core.sfac_sparse_create_csr, "rows", indptr, indices,
                                    values, shape, sum_duplicates, context)

    @classmethod
    def from_csc(cls, indptr, indices, values, shape, sum_duplicates=False, context=None):
        """From CSC arrays: indptr (cols + 1), row indices, values (None = all ones)."""
        return cls._from_compressed(_core.sfac_sparse_create_csc, "cols", indptr, indices,
                                    values, shape, sum_duplicates, context)

    @classmethod
    def _from_compressed(cls, create, major, indptr, indices, values, shape, sum_duplicates,
                         context):
        """CSR and CSC share everything but the C function and which side indptr runs over
        (`major`: "rows" or "cols")."""
        m, n = _shape2(shape)
        lines = m if major == "rows" else n
        offsets = as_int64(indptr, "indptr")
        if offsets.size != lines + 1:
            raise ValueError(f"indptr has {offsets.size} entries, "
                             f"expected {major} + 1 = {lines + 1}")
        idx = as_int32(indices, "indices")
        total = int(offsets[-1])
        if total > idx.size:
            raise ValueError(f"indptr[-1] = {total} exceeds the {idx.size} indices")
        vals = _checked_values(values, idx.size)
        if 0 <= total < idx.size:
            # Entries past indptr[-1] are unused (scipy allows them): pass only the used part,
            # whose length is then the nnz the library checks against indptr[-1].
            idx = idx[:total]
            vals = None if vals is None else vals[:total]
        ctx = resolve(context)
        return cls(call(create, ctx, m, n, offsets, idx, vals, shared_length(idx, vals),
                        _flags(sum_duplicates)), ctx)

    @classmethod
    def from_scipy(cls, matrix, context=None):
        """From any scipy.sparse matrix or array; duplicates are summed, as scipy does."""
        if not is_scipy_sparse(matrix):
            raise TypeError(f"expected a scipy.sparse matrix, got {type(matrix).__name__}")
        shape = matrix.shape
        if matrix.format == "csc":
            return cls.from_csc(matrix.indptr, matrix.indices, matrix.data, shape, True, context)
        if matrix.format != "csr":
            matrix = matrix.tocsr()
        return cls.from_csr(matrix.indptr, matrix.indices, matrix.data, shape, True, context)

    @classmethod
    def read(cls, path, format="auto", remap_ids=False, one_based=False, sum_duplicates=False,
             context=None):
        """Reads Matrix Market, triplet (LIBMF, MovieLens u.data), MovieLens ratings.dat or CSV
        ratings. With remap_ids=True each side's distinct ids become 0..n-1 and the matrix's
        `row_ids` / `col_ids` are IdMaps back to the file's ids."""
        fmt = enum_value("format", format, FORMATS)
        flags = _flags(sum_duplicates)
        if remap_ids:
            flags |= _core.SFAC_READ_REMAP_IDS
        if one_based:
            flags |= _core.SFAC_READ_ONE_BASED
        ctx = resolve(context)
        ptr, rmap, cmap = call(_core.sfac_read_sparse, ctx, os.fspath(path), fmt, flags)
        matrix = cls(ptr, ctx)
        matrix.row_ids = IdMap(rmap) if rmap is not None else None
        matrix.col_ids = IdMap(cmap) if cmap is not None else None
        return matrix

    @classmethod
    def from_bals(cls, bals, context=None):
        """From the BALS tiled layout: a `Bals` (as `to_bals` returns) or any object with its
        attributes (shape, tile_rows, tile_cols, tile_ptr, tile_col, seg_ptr, seg_col, values,
        row_order, col_order). values=None makes a pattern matrix (all ones); row_order /
        col_order None are identities; tile_col and seg_col may be None only when they would be
        empty. Every offset and index is checked by the library: the first violation raises
        (OutOfRangeError for an index outside its range, DuplicateEntryError for a repeated
        entry, InvalidValueError for a non-finite value, InvalidArgumentError otherwise), its
        message naming the array, the tile or segment and the position. The matrix is stored in
        the original numbering, like any other."""
        m, n = _shape2(getattr(bals, "shape", None))
        tile_rows, tile_cols = int(bals.tile_rows), int(bals.tile_cols)

        def optional(name, convert):
            value = getattr(bals, name, None)
            return None if value is None else convert(value, name)

        tile_ptr = as_int64(bals.tile_ptr, "tile_ptr")
        seg_ptr = as_int64(bals.seg_ptr, "seg_ptr")
        tile_col = optional("tile_col", as_int32)
        seg_col = optional("seg_col", as_int32)
        row_order = optional("row_order", as_int32)
        col_order = optional("col_order", as_int32)
        values = getattr(bals, "values", None)
        # The library checks the lengths of tile_col, seg_col and values passed below, not those
        # of the other arrays, and rejects shapes and tile sizes before reading any array: the
        # lengths are checked here (with Python's messages) for a valid grid.
        if m >= 0 and n >= 0 and tile_rows >= 1 and tile_cols >= 1:
            tiles = -(-m // tile_rows) * -(-n // tile_cols)
            _checked_length(tile_ptr, tiles + 1, "tile_ptr", "tiles + 1")
            _checked_length(seg_ptr, tiles * tile_rows + 1, "seg_ptr", "tiles * tile_rows + 1")
            listed, nnz = int(tile_ptr[-1]), int(seg_ptr[-1])
            if 0 <= listed <= nnz:  # else the library explains what is wrong with the offsets
                _checked_length(tile_col, listed, "tile_col", "tile_ptr[-1]")
            if nnz >= 0:
                _checked_length(seg_col, nnz, "seg_col", "seg_ptr[-1]")
                values = _checked_values(values, nnz)
            else:
                values = None if values is None else as_float32(values, "values").reshape(-1)
            _checked_length(row_order, m, "row_order", "rows")
            _checked_length(col_order, n, "col_order", "cols")
        else:
            values = None if values is None else as_float32(values, "values").reshape(-1)
        ctx = resolve(context)
        # The library checks these lengths (of the arrays really passed; 0 for an absent one)
        # against tile_ptr[tiles] and seg_ptr[tiles * tile_rows].
        ptr = call(_core.sfac_sparse_create_bals, ctx, m, n, tile_rows, tile_cols, tile_ptr,
                   tile_col, shared_length(tile_col), seg_ptr, seg_col, values,
                   shared_length(seg_col, values), row_order, col_order)
        return cls(ptr, ctx)

    def like(self, values=None):
        """A matrix with this pattern and its own values (row-major order; None = zeros)."""
        vals = _checked_values(values, self.nnz)
        return SparseMatrix(call(_core.sfac_sparse_create_like, self, vals), self.context)

    # ---- queries ---------------------------------------------------------------------------

    @property
    def shape(self):
        rows, cols, _ = call(_core.sfac_sparse_get_shape, self)
        return (rows, cols)

    @property
    def nnz(self):
        return call(_core.sfac_sparse_get_shape, self)[2]

    def to_coo(self):
        """(rows int32, cols int32, values float32), sorted by (row, column)."""
        nnz = self.nnz
        r = np.empty(nnz, np.int32)
        c = np.empty(nnz, np.int32)
        v = np.empty(nnz, np.float32)
        call(_core.sfac_sparse_download_coo, self, r, c, v, shared_length(r, c, v))
        return r, c, v

    def to_csr(self):
        """(indptr int64, indices int32, values float32)."""
        rows, _, nnz = call(_core.sfac_sparse_get_shape, self)
        return self._download_compressed(_core.sfac_sparse_download_csr, rows, nnz)

    def to_csc(self):
        """(indptr int64, indices int32, values float32), sorted by (column, row)."""
        _, cols, nnz = call(_core.sfac_sparse_get_shape, self)
        return self._download_compressed(_core.sfac_sparse_download_csc, cols, nnz)

    def _download_compressed(self, download, major, nnz):
        # CSR and CSC downloads differ only in the function and the offsets' length.
        p = np.empty(major + 1, np.int64)
        i = np.empty(nnz, np.int32)
        v = np.empty(nnz, np.float32)
        call(download, self, p, p.size, i, v, shared_length(i, v))
        return p, i, v

    def to_scipy(self, format="csr"):
        import scipy.sparse as sp

        if format == "csc":
            p, i, v = self.to_csc()
            return sp.csc_matrix((v, i, p), shape=self.shape)
        if format == "coo":
            r, c, v = self.to_coo()
            return sp.coo_matrix((v, (r, c)), shape=self.shape)
        if format != "csr":
            raise ValueError(f"format must be 'csr', 'csc' or 'coo', got {format!r}")
        p, i, v = self.to_csr()
        return sp.csr_matrix((v, i, p), shape=self.shape)

    def to_dense(self):
        r, c, v = self.to_coo()
        out = np.zeros(self.shape, np.float32)
        out[r, c] = v
        return out

    @property
    def values(self):
        """The values in row-major order (a copy)."""
        v = np.empty(self.nnz, np.float32)
        call(_core.sfac_sparse_download_coo, self, None, None, v, v.size)
        return v

    @values.setter
    def values(self, values):
        self.set_values(values)

    def set_values(self, values):
        """Replaces the nnz values (row-major order); they must be finite."""
        call(_core.sfac_sparse_set_values, self, _checked_values(values, self.nnz))

    # ---- reordering ------------------------------------------------------------------------

    def degree_order(self, axis="rows"):
        """The rows (axis="rows") or columns (axis="cols") ordered by nonzero count, most first,
        as an int32 array; equal counts keep index order, so the order is the same on every
        backend. Computed where the matrix lives. It is a permutation for `permute`."""
        code = enum_value("axis", axis, AXES)
        rows, cols, _ = call(_core.sfac_sparse_get_shape, self)
        out = np.empty(rows if code == _core.SFAC_AXIS_ROWS else cols, np.int32)
        call(_core.sfac_sparse_degree_order, self, code, out, out.size)
        return out

    def permute(self, row_order=None, col_order=None):
        """A new matrix with renumbered rows and columns: its row r is row row_order[r] of this
        one and its column c is column col_order[c], i.e. entry (row_order[r], col_order[c])
        moves to (r, c) with its value (like `dense[np.ix_(row_order, col_order)]`). Each order
        must hold every index of its side exactly once (else InvalidArgumentError); None keeps
        that side. Permute the factors to match with `DenseMatrix.permute_rows`. The new
        matrix has no `row_ids` / `col_ids`."""
        rows, cols, _ = call(_core.sfac_sparse_get_shape, self)
        r = None if row_order is None else as_order(row_order, rows, "row_order", "rows")
        c = None if col_order is None else as_order(col_order, cols, "col_order", "cols")
        return SparseMatrix(call(_core.sfac_sparse_permute, self, r, c), self.context)

    # ---- BALS tiled layout -----------------------------------------------------------------

    def to_bals(self, tile_rows=0, tile_cols=0, reorder=False):
        """The BALS tiled layout (docs/bals-format.md) as a `Bals`. tile_rows / tile_cols 0
        let the library choose (min(1024, rows) x min(256, cols)); the resolved sizes are in the
        result. reorder=True first renumbers rows and columns by degree, most first (row_order
        and col_order are then `degree_order("rows")` and `degree_order("cols")`; else
        identities). `SparseMatrix.from_bals` takes the result back."""
        flags = _core.SFAC_BALS_REORDER if reorder else _core.SFAC_BALS_DEFAULT
        rows, cols, nnz = call(_core.sfac_sparse_get_shape, self)
        sizes = np.zeros(4, np.int64)  # tile_rows, tile_cols, tiles, tile_col_count
        call(_core.sfac_sparse_bals_sizes, self, int(tile_rows), int(tile_cols), flags,
             sizes[0:1], sizes[1:2], sizes[2:3], sizes[3:4])
        tr, tc, tiles, listed = (int(x) for x in sizes)
        bals = Bals(shape=(rows, cols), tile_rows=tr, tile_cols=tc,
                    tile_ptr=np.empty(tiles + 1, np.int64), tile_col=np.empty(listed, np.int32),
                    seg_ptr=np.empty(tiles * tr + 1, np.int64), seg_col=np.empty(nnz, np.int32),
                    values=np.empty(nnz, np.float32), row_order=np.empty(rows, np.int32),
                    col_order=np.empty(cols, np.int32))
        call(_core.sfac_sparse_download_bals, self, tr, tc, flags,
             bals.tile_ptr, bals.tile_ptr.size, bals.tile_col, bals.tile_col.size,
             bals.seg_ptr, bals.seg_ptr.size, bals.seg_col, bals.values,
             shared_length(bals.seg_col, bals.values), bals.row_order, bals.row_order.size,
             bals.col_order, bals.col_order.size)
        return bals

    def write_matrix_market(self, path):
        call(_core.sfac_write_matrix_market, self, os.fspath(path))

    def __repr__(self):
        if self.closed:
            return "<sparsefac.SparseMatrix (closed)>"
        rows, cols, nnz = call(_core.sfac_sparse_get_shape, self)
        return f"<sparsefac.SparseMatrix {rows}x{cols}, nnz={nnz}>"


class IdMap(Handle):
    """Map from dense 0-based indices to a file's original ids (ascending)."""

    _destroy = staticmethod(_core.sfac_idmap_destroy)
    _kind = "IdMap"

    def __len__(self):
        return call(_core.sfac_idmap_get_size, self)

    @property
    def ids(self):
        """original id of every index, int64."""
        out = np.empty(len(self), np.int64)
        call(_core.sfac_idmap_get_ids, self, out, out.size)
        return out

    def lookup(self, original_ids):
        """Indices of these original ids; -1 for ids that did not occur in the file."""
        ids = as_int64(original_ids, "original_ids")
        out = np.empty(ids.size, np.int32)
        call(_core.sfac_idmap_lookup, self, ids.size, ids, out)
        return out

    def __repr__(self):
        if self.closed:
            return "<sparsefac.IdMap (closed)>"
        return f"<sparsefac.IdMap {len(self)} ids>"


def as_sparse(obj, context=None, name="matrix"):
    """SparseMatrix as is; scipy.sparse converted (on `context`)."""
    if isinstance(obj, SparseMatrix):
        obj._check_open()
        return obj
    if is_scipy_sparse(obj):
        return SparseMatrix.from_scipy(obj, context)
    if obj is None:
        raise TypeError(f"{name} must be a SparseMatrix or a scipy.sparse matrix, not None")
    raise TypeError(f"{name} must be a SparseMatrix or a scipy.sparse matrix, "
                    f"got {type(obj).__name__}")
