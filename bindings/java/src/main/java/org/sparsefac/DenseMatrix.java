package org.sparsefac;

import java.util.Objects;

/** A dense row-major matrix (e.g. the factors A and B of {@link Sddmm}). */
public final class DenseMatrix extends NativeHandle {
  /** Storage type; FLOAT16/BFLOAT16 are GPU storage (arithmetic in float32). */
  public enum Storage {
    FLOAT32(sfac_dtype.SFAC_DTYPE_FLOAT32),
    FLOAT16(sfac_dtype.SFAC_DTYPE_FLOAT16),
    BFLOAT16(sfac_dtype.SFAC_DTYPE_BFLOAT16);

    final int code;

    Storage(int code) {
      this.code = code;
    }

    static Storage of(int code) {
      for (Storage s : values()) {
        if (s.code == code) {
          return s;
        }
      }
      throw new SparsefacException(Status.INTERNAL, "unknown dtype code " + code);
    }
  }

  DenseMatrix(long address) {
    super(address, a -> Native.sfac_dense_destroy(a), "DenseMatrix");
  }

  /** A rows x cols float32 matrix from row-major data (rows * cols finite floats). */
  public static DenseMatrix of(Context ctx, long rows, long cols, float[] data) {
    return create(ctx, rows, cols, Storage.FLOAT32, Objects.requireNonNull(data, "data"));
  }

  /** A matrix from the rows of a rectangular array. */
  public static DenseMatrix of(Context ctx, float[][] rows) {
    Objects.requireNonNull(rows, "rows");
    int cols = rows.length == 0 || rows[0] == null ? 0 : rows[0].length;
    return of(ctx, rows.length, cols, Shapes.flatten(rows, cols, "rows"));
  }

  public static DenseMatrix zeros(Context ctx, long rows, long cols) {
    return create(ctx, rows, cols, Storage.FLOAT32, null);
  }

  /** data may be null (zeros); otherwise rows * cols floats, converted to the storage type. */
  public static DenseMatrix create(Context ctx, long rows, long cols, Storage storage,
      float[] data) {
    if (data != null && rows >= 0 && cols >= 0) {
      Shapes.requireLength(data, Shapes.length(rows * cols, "rows * cols"), "data", "rows * cols");
    }
    long[] out = new long[1];
    try (Lease ctxL = ctx.lease()) {
      SparsefacException.check(
          Native.sfac_dense_create(ctxL.address, rows, cols, storage.code, data, out));
    }
    return new DenseMatrix(out[0]);
  }

  public long rows() {
    long[] r = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_get_shape(self.address, r, null));
    }
    return r[0];
  }

  public long cols() {
    long[] c = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_get_shape(self.address, null, c));
    }
    return c[0];
  }

  public Storage storage() {
    int[] out = new int[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_get_dtype(self.address, out));
    }
    return Storage.of(out[0]);
  }

  /** Replaces the contents with rows * cols finite floats (row-major). */
  public void upload(float[] data) {
    Objects.requireNonNull(data, "data");
    Shapes.requireLength(data, size(), "data", "rows * cols");
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_upload(self.address, data));
    }
  }

  /** The contents, row-major. */
  public float[] toArray() {
    float[] data = new float[size()];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_download(self.address, data, data.length));
    }
    return data;
  }

  /** The contents as rows. */
  public float[][] toRows() {
    long[] r = new long[1];
    long[] c = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_get_shape(self.address, r, c));
    }
    return Shapes.unflatten(toArray(), (int) r[0], (int) c[0]);
  }

  /**
   * A new matrix of the same storage type whose row r is row {@code order[r]} of this one;
   * order must hold every row index exactly once ({@link Status#INVALID_ARGUMENT} otherwise,
   * naming the first repeated or outside index). The inverse permutation
   * ({@code inverse[order[r]] = r}) undoes it, e.g. to return factors trained on a permuted
   * matrix to the original numbering.
   */
  public DenseMatrix permuteRows(int[] order) {
    Objects.requireNonNull(order, "order");
    Shapes.requireLength(order, Shapes.length(rows(), "rows"), "order", "rows");
    long[] out = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_permute_rows(self.address, order, out));
    }
    return new DenseMatrix(out[0]);
  }

  private int size() {
    long[] r = new long[1];
    long[] c = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_dense_get_shape(self.address, r, c));
    }
    return Shapes.length(r[0] * c[0], "rows * cols");
  }
}
