package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The C API's capacities and counts (libsparsefac 0.2). The public API always passes each
 * array's real length, so a short buffer cannot happen there; these tests call the package-private
 * SWIG layer with deliberately short arrays (and their true lengths as capacities) to check that
 * the library refuses to write, and that the refusal surfaces as a {@link SparsefacException}
 * with {@link Status#BUFFER_TOO_SMALL} and the library's message.
 */
class BufferCapacityTest {
  // The 3 x 4 matrix of SparseMatrixTest: rows 0 and 2 hold two entries each.
  static final int[] ROWS = SparseMatrixTest.ROWS;
  static final int[] COLS = SparseMatrixTest.COLS;
  static final float[] VALUES = SparseMatrixTest.VALUES;

  /**
   * Runs a native call that must find {@code array} too small: BUFFER_TOO_SMALL, turned by the
   * binding into its exception with the library's message naming the array, what it needs and
   * the capacity given.
   */
  static SparsefacException assertTooSmall(IntSupplier call, String array, long needed,
      long capacity) {
    int code = call.getAsInt();
    assertEquals(sfac_status.SFAC_ERR_BUFFER_TOO_SMALL, code, Native.sfac_last_error());
    SparsefacException e =
        assertThrows(SparsefacException.class, () -> SparsefacException.check(code));
    assertEquals(Status.BUFFER_TOO_SMALL, e.status());
    assertEquals(13, e.status().code());
    assertEquals(Native.sfac_last_error(), e.getMessage(), "the library's own message");
    assertEquals(array + " needs " + needed + " elements but its capacity is " + capacity,
        e.getMessage());
    assertTrue(e.toString().contains("(BUFFER_TOO_SMALL)"), e.toString());
    return e;
  }

  static int[] ints(int n) {
    int[] a = new int[n];
    Arrays.fill(a, -7);
    return a;
  }

  static long[] longs(int n) {
    long[] a = new long[n];
    Arrays.fill(a, -7);
    return a;
  }

  static float[] floats(int n) {
    float[] a = new float[n];
    Arrays.fill(a, -7f);
    return a;
  }

  @Test
  void shortSparseBuffersAreRefusedUntouched() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS, VALUES);
        NativeHandle.Lease self = m.lease()) {
      long a = self.address;

      // COO: the three arrays share one capacity; the one given is the real length of each.
      int[] rowIndices = ints(4);
      int[] colIndices = ints(4);
      float[] values = floats(3);
      assertTooSmall(() -> Native.sfac_sparse_download_coo(a, rowIndices, colIndices, values,
          Shapes.capacity(rowIndices, colIndices, values)), "row_indices", 4, 3);
      assertArrayEquals(ints(4), rowIndices, "nothing written");
      assertArrayEquals(ints(4), colIndices, "nothing written");
      assertArrayEquals(floats(3), values, "nothing written");
      assertTooSmall(() -> Native.sfac_sparse_download_coo(a, null, null, values, values.length),
          "values", 4, 3);

      // CSR/CSC: the offsets have their own capacity.
      long[] rowOffsets = longs(3);
      assertTooSmall(() -> Native.sfac_sparse_download_csr(a, rowOffsets, rowOffsets.length,
          new int[4], new float[4], 4), "row_offsets", 4, 3);
      assertArrayEquals(longs(3), rowOffsets, "nothing written");
      int[] cscRows = ints(2);
      assertTooSmall(() -> Native.sfac_sparse_download_csc(a, new long[5], 5, cscRows, null,
          cscRows.length), "row_indices", 4, 2);
      assertArrayEquals(ints(2), cscRows, "nothing written");

      int[] order = ints(3);
      assertTooSmall(() -> Native.sfac_sparse_degree_order(a, sfac_axis.SFAC_AXIS_COLS, order,
          order.length), "order", 4, 3);
      assertArrayEquals(ints(3), order, "nothing written");

      // BALS with 2 x 3 tiles: 4 tiles, 2 * 4 + 1 segment offsets.
      long[] segPtr = longs(8);
      assertTooSmall(() -> Native.sfac_sparse_download_bals(a, 2, 3,
          sfac_bals_flags.SFAC_BALS_DEFAULT, null, 0, null, 0, segPtr, segPtr.length, null, null,
          0, null, 0, null, 0), "seg_ptr", 9, 8);
      assertArrayEquals(longs(8), segPtr, "nothing written");
      int[] colOrder = ints(3);
      assertTooSmall(() -> Native.sfac_sparse_download_bals(a, 2, 3,
          sfac_bals_flags.SFAC_BALS_REORDER, null, 0, null, 0, null, 0, null, null, 0,
          new int[3], 3, colOrder, colOrder.length), "col_order", 4, 3);
      assertArrayEquals(ints(3), colOrder, "nothing written");

      // A negative capacity is a bad argument, not a short buffer.
      SparsefacException negative = assertThrows(SparsefacException.class,
          () -> SparsefacException.check(
              Native.sfac_sparse_download_coo(a, null, null, new float[4], -1)));
      assertEquals(Status.INVALID_ARGUMENT, negative.status(), negative.getMessage());

      // The public API passes the real lengths, which are exactly enough.
      assertArrayEquals(new float[] {1f, 2f, 3f, 4f}, m.values());
      assertArrayEquals(new long[] {0, 2, 2, 4}, m.toCsr().offsets());
    }
  }

  @Test
  void countsMustMatchTheOffsets() {
    try (Context ctx = Context.cpu(1, 0); NativeHandle.Lease c = ctx.lease()) {
      long[] offsets = {0, 2, 2, 4};
      int[] indices = {1, 3, 0, 2};
      long[] out = new long[1];
      SparsefacException csr = assertThrows(SparsefacException.class,
          () -> SparsefacException.check(Native.sfac_sparse_create_csr(c.address, 3, 4, offsets,
              indices, null, 3, 0, out)));
      assertEquals(Status.INVALID_ARGUMENT, csr.status());
      assertTrue(csr.getMessage().contains("but nnz = 3"), csr.getMessage());
      SparsefacException csc = assertThrows(SparsefacException.class,
          () -> SparsefacException.check(Native.sfac_sparse_create_csc(c.address, 4, 3, offsets,
              indices, null, 5, 0, out)));
      assertEquals(Status.INVALID_ARGUMENT, csc.status());
      assertEquals(0, out[0], "nothing created");

      try (SparseMatrix m = SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS, VALUES)) {
        Bals b = m.toBals(2, 3, false);
        SparsefacException tileCols = assertThrows(SparsefacException.class,
            () -> SparsefacException.check(Native.sfac_sparse_create_bals(c.address, 3, 4, 2, 3,
                b.tilePtr(), b.tileCol(), b.tileCol().length - 1, b.segPtr(), b.segCol(),
                b.values(), b.segCol().length, null, null, out)));
        assertEquals(Status.INVALID_ARGUMENT, tileCols.status());
        assertTrue(tileCols.getMessage().contains("tile_col_count"), tileCols.getMessage());
        SparsefacException nnz = assertThrows(SparsefacException.class,
            () -> SparsefacException.check(Native.sfac_sparse_create_bals(c.address, 3, 4, 2, 3,
                b.tilePtr(), b.tileCol(), b.tileCol().length, b.segPtr(), b.segCol(),
                b.values(), b.segCol().length + 1, null, null, out)));
        assertEquals(Status.INVALID_ARGUMENT, nnz.status());
        assertTrue(nnz.getMessage().contains("but nnz = 5"), nnz.getMessage());
        assertEquals(0, out[0], "nothing created");
        // The public API passes the arrays' lengths, which match.
        try (SparseMatrix back = SparseMatrix.fromBals(ctx, 3, 4, b)) {
          assertArrayEquals(m.values(), back.values());
        }
      }
    }
  }

  @Test
  void shortDenseAndModelBuffersAreRefusedUntouched() {
    int users = 3;
    int items = 4;
    int rank = 2;
    try (Context ctx = Context.cpu(1, 5);
        DenseMatrix d = DenseMatrix.of(ctx, 2, 3, new float[] {1f, 2f, 3f, 4f, 5f, 6f});
        SparseMatrix ratings = SparseMatrix.fromCoo(ctx, users, items, ROWS, COLS, VALUES);
        Model model = Model.train(ctx, ratings, TrainOptions.builder(Algorithm.ALS).rank(rank)
            .iterations(1).useBiases(true).build());
        NativeHandle.Lease dl = d.lease();
        NativeHandle.Lease ml = model.lease()) {
      float[] data = floats(5);
      assertTooSmall(() -> Native.sfac_dense_download(dl.address, data, data.length), "data", 6,
          5);
      assertArrayEquals(floats(5), data, "nothing written");

      long a = ml.address;
      float[] userFactors = floats(users * rank - 1);
      assertTooSmall(() -> Native.sfac_model_get_user_factors(a, userFactors, userFactors.length),
          "out", users * rank, users * rank - 1);
      assertArrayEquals(floats(users * rank - 1), userFactors, "nothing written");
      float[] itemFactors = floats(items * rank - 1);
      assertTooSmall(() -> Native.sfac_model_get_item_factors(a, itemFactors, itemFactors.length),
          "out", items * rank, items * rank - 1);

      int[] has = new int[1];
      float[] mean = floats(1);
      float[] userBiases = floats(users);
      float[] itemBiases = floats(items - 1);
      assertTooSmall(() -> Native.sfac_model_get_biases(a, has, mean, userBiases,
          userBiases.length, itemBiases, itemBiases.length), "item_biases", items, items - 1);
      assertArrayEquals(floats(users), userBiases, "nothing written");
      assertArrayEquals(floats(1), mean, "nothing written");

      int[] topItems = ints(3);
      float[] topScores = floats(4);
      assertTooSmall(() -> Native.sfac_model_recommend(a, 2, new int[] {0, 2}, 2, 0, 0, null,
          topItems, topScores, Shapes.capacity(topItems, topScores)), "out_items", 4, 3);
      assertArrayEquals(ints(3), topItems, "nothing written");
      float[] similarScores = floats(3);
      assertTooSmall(() -> Native.sfac_model_similar_items(a, 2, new int[] {1, 3}, 2, null,
          similarScores, similarScores.length), "out_scores", 4, 3);
      assertArrayEquals(floats(3), similarScores, "nothing written");

      float[] before = model.userFactorsFlat();
      float[] factors = floats(rank - 1);
      float[] bias = floats(1);
      assertTooSmall(() -> Native.sfac_model_recalculate_user(a, 0, 2, new int[] {0, 1},
          new float[] {1f, 2f}, factors, factors.length, bias), "factors", rank, rank - 1);
      assertArrayEquals(floats(rank - 1), factors, "nothing written");
      assertArrayEquals(floats(1), bias, "nothing written");
      assertArrayEquals(before, model.userFactorsFlat(), "the model is unchanged");

      // The public API passes the real lengths, which are exactly enough.
      assertEquals(6, d.toArray().length);
      assertEquals(items, model.biases().orElseThrow().itemBiases().length);
      assertEquals(rank, model.foldIn(new int[] {0, 1}, new float[] {1f, 2f}).factors().length);
      assertEquals(2, model.recommend(new int[] {0, 2}, 2, null, null).size());
      assertEquals(2, model.similarItems(new int[] {1, 3}, 2).size());
    }
  }

  @Test
  void shortIdBufferIsRefusedUntouched(@TempDir Path dir) throws IOException {
    Path csv = dir.resolve("ratings.csv");
    Files.writeString(csv, "user,item,rating\n1234,7,4.5\n99,7,3\n1234,12,1\n");
    try (Context ctx = Context.cpu(1, 0); NativeHandle.Lease c = ctx.lease()) {
      long[] out = new long[1];
      long[] rowMap = new long[1];
      long[] colMap = new long[1];
      SparsefacException.check(Native.sfac_read_sparse(c.address, csv.toString(),
          FileFormat.CSV.code, sfac_read_flags.SFAC_READ_REMAP_IDS, out, rowMap, colMap));
      try (SparseMatrix m = SparseMatrix.adopt(out)) {
        long[] ids = longs(1);
        assertTooSmall(() -> Native.sfac_idmap_get_ids(rowMap[0], ids, ids.length),
            "original_ids", 2, 1);
        assertArrayEquals(longs(1), ids, "nothing written");
        long[] all = new long[2];
        SparsefacException.check(Native.sfac_idmap_get_ids(rowMap[0], all, all.length));
        assertArrayEquals(new long[] {99, 1234}, all);
        assertEquals(2, m.rows());
      } finally {
        Native.sfac_idmap_destroy(rowMap[0]);
        Native.sfac_idmap_destroy(colMap[0]);
      }
    }
  }
}
