package org.sparsefac;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A sparse float matrix (int32 indices, entries sorted by row then column). The library copies
 * every array passed in; arrays returned are fresh copies.
 */
public final class SparseMatrix extends NativeHandle {
  /** What to do with a (row, col) given twice. */
  public enum Duplicates {
    ERROR(sfac_sparse_flags.SFAC_SPARSE_DEFAULT),
    SUM(sfac_sparse_flags.SFAC_SPARSE_SUM_DUPLICATES);

    final int flag;

    Duplicates(int flag) {
      this.flag = flag;
    }
  }

  /** A side of the matrix, for {@link #degreeOrder}. */
  public enum Axis {
    ROWS(sfac_axis.SFAC_AXIS_ROWS),
    COLS(sfac_axis.SFAC_AXIS_COLS);

    final int code;

    Axis(int code) {
      this.code = code;
    }
  }

  /** Triplets: entry t is (rowIndices[t], colIndices[t], values[t]). */
  public record Coo(int[] rowIndices, int[] colIndices, float[] values) {}

  /**
   * Compressed rows (CSR: offsets per row, column indices) or columns (CSC: offsets per column,
   * row indices).
   */
  public record Compressed(long[] offsets, int[] indices, float[] values) {}

  SparseMatrix(long address) {
    super(address, a -> Native.sfac_sparse_destroy(a), "SparseMatrix");
  }

  static SparseMatrix adopt(long[] out) {
    return new SparseMatrix(out[0]);
  }

  /** From COO triplets in any order; {@code values} null makes a pattern (all ones). */
  public static SparseMatrix fromCoo(Context ctx, long rows, long cols, int[] rowIndices,
      int[] colIndices, float[] values) {
    return fromCoo(ctx, rows, cols, rowIndices, colIndices, values, Duplicates.ERROR);
  }

  public static SparseMatrix fromCoo(Context ctx, long rows, long cols, int[] rowIndices,
      int[] colIndices, float[] values, Duplicates duplicates) {
    Objects.requireNonNull(rowIndices, "rowIndices");
    Objects.requireNonNull(colIndices, "colIndices");
    int nnz = rowIndices.length;
    Shapes.requireLength(colIndices, nnz, "colIndices", "one per rowIndices entry");
    if (values != null) {
      Shapes.requireLength(values, nnz, "values", "one per rowIndices entry");
    }
    long[] out = new long[1];
    try (Lease ctxL = ctx.lease()) {
      SparsefacException.check(Native.sfac_sparse_create_coo(ctxL.address, rows, cols, nnz,
          rowIndices, colIndices, values, duplicates.flag, out));
    }
    return adopt(out);
  }

  /** From CSR: rowOffsets has rows + 1 entries; nnz = rowOffsets[rows]. */
  public static SparseMatrix fromCsr(Context ctx, long rows, long cols, long[] rowOffsets,
      int[] colIndices, float[] values) {
    return fromCompressed(ctx, rows, cols, rowOffsets, colIndices, values, true);
  }

  /** From CSC: colOffsets has cols + 1 entries; nnz = colOffsets[cols]. */
  public static SparseMatrix fromCsc(Context ctx, long rows, long cols, long[] colOffsets,
      int[] rowIndices, float[] values) {
    return fromCompressed(ctx, rows, cols, colOffsets, rowIndices, values, false);
  }

  private static SparseMatrix fromCompressed(Context ctx, long rows, long cols, long[] offsets,
      int[] indices, float[] values, boolean byRow) {
    Objects.requireNonNull(offsets, "offsets");
    Objects.requireNonNull(indices, "indices");
    String side = byRow ? "rows" : "cols";
    long outer = byRow ? rows : cols;
    if (outer < 0) {
      throw new SparsefacException(Status.INVALID_ARGUMENT, side + " = " + outer + " must be >= 0");
    }
    Shapes.requireLength(offsets, Shapes.length(outer + 1, side + " + 1"),
        byRow ? "rowOffsets" : "colOffsets", side + " + 1");
    long nnz = offsets[offsets.length - 1];
    if (nnz >= 0 && nnz <= Integer.MAX_VALUE) {
      Shapes.requireLength(indices, (int) nnz, byRow ? "colIndices" : "rowIndices",
          "the last offset");
      if (values != null) {
        Shapes.requireLength(values, (int) nnz, "values", "the last offset");
      }
    } // else: the library rejects the offsets with its own message
    // The entries passed: the real length of the index array (values, when given, has as many:
    // checked above); the library checks it against the last offset.
    long count = indices.length;
    long[] out = new long[1];
    try (Lease c = ctx.lease()) {
      SparsefacException.check(byRow
              ? Native.sfac_sparse_create_csr(
                  c.address, rows, cols, offsets, indices, values, count, 0, out)
              : Native.sfac_sparse_create_csc(
                  c.address, rows, cols, offsets, indices, values, count, 0, out));
    }
    return adopt(out);
  }

  /**
   * Reads a rating or Matrix Market file; ids are used as indices. Parse errors name the file and
   * the line ({@link Status#PARSE}); an unreadable file is {@link Status#IO}.
   */
  public static SparseMatrix read(Context ctx, Path path, FileFormat format,
      ReadOption... options) {
    long[] out = new long[1];
    try (Lease ctxL = ctx.lease()) {
      SparsefacException.check(Native.sfac_read_sparse(ctxL.address, path.toString(), format.code,
          ReadOption.flags(options), out, null, null));
    }
    return adopt(out);
  }

  /** Reads a file and maps each side's distinct ids to 0..n-1 in ascending id order. */
  public static LabeledMatrix readWithIds(Context ctx, Path path, FileFormat format,
      ReadOption... options) {
    long[] out = new long[1];
    long[] rowMap = new long[1];
    long[] colMap = new long[1];
    try (Lease ctxL = ctx.lease()) {
      SparsefacException.check(Native.sfac_read_sparse(ctxL.address, path.toString(), format.code,
          ReadOption.flags(options) | sfac_read_flags.SFAC_READ_REMAP_IDS, out, rowMap, colMap));
    }
    SparseMatrix matrix = adopt(out);
    try {
      IdMap rows;
      try {
        rows = IdMap.take(rowMap[0]);
      } catch (RuntimeException e) {
        Native.sfac_idmap_destroy(colMap[0]);
        throw e;
      }
      return new LabeledMatrix(matrix, rows, IdMap.take(colMap[0]));
    } catch (RuntimeException e) {
      matrix.close();
      throw e;
    }
  }

  /** Writes a Matrix Market "coordinate real general" file in full float precision. */
  public void writeMatrixMarket(Path path) {
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_write_matrix_market(self.address, path.toString()));
    }
  }

  /** A matrix with this pattern and its own values (row-major order); null = zeros. */
  public SparseMatrix withValues(float[] values) {
    if (values != null) {
      Shapes.requireLength(values, nnzInt(), "values", "nnz of the pattern");
    }
    long[] out = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_sparse_create_like(self.address, values, out));
    }
    return adopt(out);
  }

  public long rows() {
    return shape()[0];
  }

  public long cols() {
    return shape()[1];
  }

  public long nnz() {
    return shape()[2];
  }

  private long[] shape() {
    long[] r = new long[1];
    long[] c = new long[1];
    long[] n = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_sparse_get_shape(self.address, r, c, n));
    }
    return new long[] {r[0], c[0], n[0]};
  }

  private int nnzInt() {
    return Shapes.length(nnz(), "nnz");
  }

  /** Triplets sorted by (row, column). */
  public Coo toCoo() {
    int nnz = nnzInt();
    Coo coo = new Coo(new int[nnz], new int[nnz], new float[nnz]);
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_sparse_download_coo(
              self.address, coo.rowIndices, coo.colIndices, coo.values,
              Shapes.capacity(coo.rowIndices, coo.colIndices, coo.values)));
    }
    return coo;
  }

  public Compressed toCsr() {
    long[] s = shape();
    int nnz = Shapes.length(s[2], "nnz");
    Compressed csr = new Compressed(
        new long[Shapes.length(s[0] + 1, "rows + 1")], new int[nnz], new float[nnz]);
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_sparse_download_csr(self.address, csr.offsets, csr.offsets.length,
              csr.indices, csr.values, Shapes.capacity(csr.indices, csr.values)));
    }
    return csr;
  }

  /** Entries sorted by (column, row). */
  public Compressed toCsc() {
    long[] s = shape();
    int nnz = Shapes.length(s[2], "nnz");
    Compressed csc = new Compressed(
        new long[Shapes.length(s[1] + 1, "cols + 1")], new int[nnz], new float[nnz]);
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_sparse_download_csc(self.address, csc.offsets, csc.offsets.length,
              csc.indices, csc.values, Shapes.capacity(csc.indices, csc.values)));
    }
    return csc;
  }

  /** The values in row-major order. */
  public float[] values() {
    float[] values = new float[nnzInt()];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_sparse_download_coo(self.address, null, null, values, values.length));
    }
    return values;
  }

  /** Replaces the values (nnz finite floats, row-major order). */
  public void setValues(float[] values) {
    Objects.requireNonNull(values, "values");
    Shapes.requireLength(values, nnzInt(), "values", "nnz");
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_sparse_set_values(self.address, values));
    }
  }

  /**
   * The rows ({@link Axis#ROWS}: rows entries) or columns ({@link Axis#COLS}: cols entries)
   * ordered by nonzero count, most first; equal counts keep index order, so the order is
   * deterministic and the same on every backend. Computed where the matrix lives. The result is
   * a permutation for {@link #permute}.
   */
  public int[] degreeOrder(Axis axis) {
    Objects.requireNonNull(axis, "axis");
    long[] s = shape();
    int[] order = axis == Axis.ROWS
        ? new int[Shapes.length(s[0], "rows")]
        : new int[Shapes.length(s[1], "cols")];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_sparse_degree_order(self.address, axis.code, order, order.length));
    }
    return order;
  }

  /**
   * A new matrix with renumbered rows and columns: its row r is row {@code rowOrder[r]} of this
   * one and its column c is column {@code colOrder[c]}, i.e. entry
   * ({@code rowOrder[r]}, {@code colOrder[c]}) moves to (r, c) with its value. Each order must
   * hold every index of its side exactly once ({@link Status#INVALID_ARGUMENT} otherwise, naming
   * the first repeated or outside index); null keeps that side's numbering. Permute the factors
   * to match with {@link DenseMatrix#permuteRows} (A by rowOrder, B by colOrder): {@link Sddmm}
   * on the permuted operands gives the permuted product.
   */
  public SparseMatrix permute(int[] rowOrder, int[] colOrder) {
    long[] s = shape();
    if (rowOrder != null) {
      Shapes.requireLength(rowOrder, Shapes.length(s[0], "rows"), "rowOrder", "rows");
    }
    if (colOrder != null) {
      Shapes.requireLength(colOrder, Shapes.length(s[1], "cols"), "colOrder", "cols");
    }
    long[] out = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_sparse_permute(self.address, rowOrder, colOrder, out));
    }
    return adopt(out);
  }

  /** The BALS layout with tiles chosen by the library, rows and columns in their order. */
  public Bals toBals() {
    return toBals(0, 0, false);
  }

  /**
   * The BALS tiled layout (docs/bals-format.md) with tiles of {@code tileRows x tileCols}
   * (0 = chosen by the library: min(1024, rows) x min(256, cols); the result holds the sizes
   * used). With {@code reorder}, rows and columns are first renumbered by degree, most first
   * ({@link Bals#rowOrder()} and {@link Bals#colOrder()} are then {@link #degreeOrder} of each
   * side); else both orders are identities. {@link #fromBals} takes the result back.
   * Negative tile sizes, or tiles so far from the matrix's size that the layout would exceed
   * the library's segment limit, are {@link Status#INVALID_ARGUMENT}.
   */
  public Bals toBals(long tileRows, long tileCols, boolean reorder) {
    int flags = reorder ? sfac_bals_flags.SFAC_BALS_REORDER : sfac_bals_flags.SFAC_BALS_DEFAULT;
    long[] s = shape();
    long[] tr = new long[1];
    long[] tc = new long[1];
    long[] tiles = new long[1];
    long[] listed = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_sparse_bals_sizes(
          self.address, tileRows, tileCols, flags, tr, tc, tiles, listed));
    }
    int nnz = Shapes.length(s[2], "nnz");
    long segments;
    try {
      segments = Math.multiplyExact(tiles[0], tr[0]);
    } catch (ArithmeticException e) {
      throw new SparsefacException(Status.OUT_OF_RANGE,
          "tiles * tileRows = " + tiles[0] + " * " + tr[0] + " does not fit in a Java array");
    }
    Bals bals = new Bals(tr[0], tc[0],
        new long[Shapes.length(tiles[0] + 1, "tiles + 1")],
        new int[Shapes.length(listed[0], "tile columns")],
        new long[Shapes.length(segments + 1, "tiles * tileRows + 1")],
        new int[nnz], new float[nnz],
        new int[Shapes.length(s[0], "rows")], new int[Shapes.length(s[1], "cols")]);
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_sparse_download_bals(self.address, tr[0], tc[0],
          flags, bals.tilePtr(), bals.tilePtr().length, bals.tileCol(), bals.tileCol().length,
          bals.segPtr(), bals.segPtr().length, bals.segCol(), bals.values(),
          Shapes.capacity(bals.segCol(), bals.values()), bals.rowOrder(),
          bals.rowOrder().length, bals.colOrder(), bals.colOrder().length));
    }
    return bals;
  }

  /**
   * From the BALS tiled layout of a {@code rows x cols} matrix (as {@link #toBals} returns it).
   * Array lengths are checked here ({@link Status#SHAPE_MISMATCH}); every offset and index is
   * checked by the library, which reports the first violation ({@link Status#OUT_OF_RANGE} for an
   * index out of range, {@link Status#DUPLICATE_ENTRY} for a repeated entry,
   * {@link Status#INVALID_VALUE} for a non-finite value, {@link Status#INVALID_ARGUMENT}
   * otherwise), naming the array, the tile or segment and the position. The matrix is stored in
   * the original numbering, like any other.
   */
  public static SparseMatrix fromBals(Context ctx, long rows, long cols, Bals bals) {
    Objects.requireNonNull(bals, "bals");
    Objects.requireNonNull(bals.tilePtr(), "tilePtr");
    Objects.requireNonNull(bals.segPtr(), "segPtr");
    long tr = bals.tileRows();
    long tc = bals.tileCols();
    // The library rejects a bad shape or tile size before reading any array; for a valid grid
    // the lengths, which it cannot see, are checked here.
    if (rows >= 0 && rows <= Integer.MAX_VALUE && cols >= 0 && cols <= Integer.MAX_VALUE
        && tr >= 1 && tc >= 1) {
      long tiles = ((rows + tr - 1) / tr) * ((cols + tc - 1) / tc);
      Shapes.requireLength(bals.tilePtr(), Shapes.length(tiles + 1, "tiles + 1"), "tilePtr",
          "tiles + 1");
      long segments = tr > (Long.MAX_VALUE - 1) / Math.max(tiles, 1) ? Long.MAX_VALUE - 1
          : tiles * tr;
      Shapes.requireLength(bals.segPtr(), Shapes.length(segments + 1, "tiles * tileRows + 1"),
          "segPtr", "tiles * tileRows + 1");
      long listed = bals.tilePtr()[bals.tilePtr().length - 1];
      long nnz = bals.segPtr()[bals.segPtr().length - 1];
      if (bals.tileCol() != null && listed >= 0 && listed <= nnz) {
        requireLength(bals.tileCol(), listed, "tileCol", "tilePtr[tiles]");
      }
      if (nnz >= 0) { // else the library explains what is wrong with segPtr
        if (bals.segCol() != null) {
          requireLength(bals.segCol(), nnz, "segCol", "segPtr[tiles * tileRows]");
        }
        if (bals.values() != null) {
          requireLength(bals.values(), nnz, "values", "segPtr[tiles * tileRows]");
        }
      }
      if (bals.rowOrder() != null) {
        Shapes.requireLength(bals.rowOrder(), (int) rows, "rowOrder", "rows");
      }
      if (bals.colOrder() != null) {
        Shapes.requireLength(bals.colOrder(), (int) cols, "colOrder", "cols");
      }
    }
    // The counts passed are the real lengths of the arrays (the library checks them against
    // tilePtr[tiles] and segPtr[tiles * tileRows]): tileCol's, and segCol's (values', when
    // segCol is null; checked above to match).
    long tileColCount = Shapes.capacity(bals.tileCol());
    long nnz = Shapes.capacity(bals.segCol() != null ? bals.segCol() : bals.values());
    long[] out = new long[1];
    try (Lease c = ctx.lease()) {
      SparsefacException.check(Native.sfac_sparse_create_bals(c.address, rows, cols, tr, tc,
          bals.tilePtr(), bals.tileCol(), tileColCount, bals.segPtr(), bals.segCol(),
          bals.values(), nnz, bals.rowOrder(), bals.colOrder(), out));
    }
    return adopt(out);
  }

  private static void requireLength(Object array, long length, String name, String expected) {
    if (length > Integer.MAX_VALUE) {
      throw new SparsefacException(Status.SHAPE_MISMATCH, name + " has "
          + java.lang.reflect.Array.getLength(array) + " entries, expected " + length + " ("
          + expected + ")");
    }
    Shapes.requireLength(array, (int) length, name, expected);
  }
}
