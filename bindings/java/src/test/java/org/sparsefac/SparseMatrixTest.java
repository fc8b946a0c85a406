package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SparseMatrixTest {
  // A 3 x 4 matrix given out of order:
  //   [0 1 0 2]
  //   [0 0 0 0]
  //   [3 0 4 0]
  static final int[] ROWS = {2, 0, 2, 0};
  static final int[] COLS = {2, 3, 0, 1};
  static final float[] VALUES = {4f, 2f, 3f, 1f};

  @Test
  void cooCsrCscRoundTrip() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS, VALUES)) {
      assertEquals(3, m.rows());
      assertEquals(4, m.cols());
      assertEquals(4, m.nnz());
      SparseMatrix.Coo coo = m.toCoo();
      assertArrayEquals(new int[] {0, 0, 2, 2}, coo.rowIndices());
      assertArrayEquals(new int[] {1, 3, 0, 2}, coo.colIndices());
      assertArrayEquals(new float[] {1f, 2f, 3f, 4f}, coo.values());
      SparseMatrix.Compressed csr = m.toCsr();
      assertArrayEquals(new long[] {0, 2, 2, 4}, csr.offsets());
      assertArrayEquals(new int[] {1, 3, 0, 2}, csr.indices());
      SparseMatrix.Compressed csc = m.toCsc();
      assertArrayEquals(new long[] {0, 1, 2, 3, 4}, csc.offsets());
      assertArrayEquals(new int[] {2, 0, 2, 0}, csc.indices());
      assertArrayEquals(new float[] {3f, 1f, 4f, 2f}, csc.values());

      try (SparseMatrix fromCsr =
               SparseMatrix.fromCsr(ctx, 3, 4, csr.offsets(), csr.indices(), csr.values());
           SparseMatrix fromCsc =
               SparseMatrix.fromCsc(ctx, 3, 4, csc.offsets(), csc.indices(), csc.values())) {
        assertArrayEquals(coo.values(), fromCsr.values());
        assertArrayEquals(coo.values(), fromCsc.values());
        assertArrayEquals(coo.colIndices(), fromCsc.toCoo().colIndices());
      }
      m.setValues(new float[] {5f, 6f, 7f, 8f});
      assertArrayEquals(new float[] {5f, 6f, 7f, 8f}, m.values());
      try (SparseMatrix pattern = SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS, null)) {
        assertArrayEquals(new float[] {1f, 1f, 1f, 1f}, pattern.values());
      }
    }
  }

  @Test
  void emptyMatricesWork() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix empty = SparseMatrix.fromCoo(ctx, 5, 3, new int[0], new int[0], new float[0]);
        SparseMatrix noRows = SparseMatrix.fromCsr(ctx, 0, 3, new long[] {0}, new int[0], null)) {
      assertEquals(0, empty.nnz());
      assertEquals(5, empty.rows());
      assertArrayEquals(new long[6], empty.toCsr().offsets());
      assertEquals(0, empty.values().length);
      assertEquals(0, noRows.rows());
    }
  }

  @Test
  void duplicatesAreAnErrorUnlessSummed() {
    int[] rows = {0, 1, 0};
    int[] cols = {1, 1, 1};
    float[] values = {1f, 2f, 3f};
    try (Context ctx = Context.cpu(1, 0)) {
      SparsefacException e = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCoo(ctx, 2, 2, rows, cols, values));
      assertEquals(Status.DUPLICATE_ENTRY, e.status());
      try (SparseMatrix m = SparseMatrix.fromCoo(ctx, 2, 2, rows, cols, values,
               SparseMatrix.Duplicates.SUM)) {
        assertArrayEquals(new float[] {4f, 2f}, m.values());
      }
    }
  }

  @Test
  void badInputGivesPreciseErrors() {
    try (Context ctx = Context.cpu(1, 0)) {
      SparsefacException nan = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS, new float[] {1f, Float.NaN, 2f, 3f}));
      assertEquals(Status.INVALID_VALUE, nan.status());

      SparsefacException range = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCoo(ctx, 3, 4, new int[] {0, 3}, new int[] {0, 0}, null));
      assertEquals(Status.OUT_OF_RANGE, range.status());
      assertEquals(Native.sfac_last_error(), range.getMessage(), "the library's own message");
      assertEquals("row_indices[1] = 3 is out of range for a matrix with 3 rows",
          range.getMessage());

      SparsefacException negative = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCoo(ctx, 3, 4, new int[] {0, -1}, new int[] {0, 0}, null));
      assertEquals(Status.OUT_OF_RANGE, negative.status());

      SparsefacException lengths = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCoo(ctx, 3, 4, ROWS, new int[] {0, 1}, VALUES));
      assertEquals(Status.SHAPE_MISMATCH, lengths.status());
      assertTrue(lengths.getMessage().contains("colIndices has 2 entries, expected 4"),
          lengths.getMessage());

      SparsefacException offsets = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCsr(ctx, 3, 4, new long[] {0, 2, 1, 2}, new int[] {0, 1},
              null));
      assertEquals(Status.INVALID_ARGUMENT, offsets.status(), offsets.getMessage());

      SparsefacException shortOffsets = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCsr(ctx, 3, 4, new long[] {0, 2}, new int[] {0, 1}, null));
      assertEquals(Status.SHAPE_MISMATCH, shortOffsets.status());

      try (SparseMatrix m = SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS, VALUES)) {
        assertThrows(SparsefacException.class, () -> m.setValues(new float[3]));
        SparsefacException inf = assertThrows(SparsefacException.class,
            () -> m.setValues(new float[] {1f, 2f, Float.POSITIVE_INFINITY, 3f}));
        assertEquals(Status.INVALID_VALUE, inf.status());
        assertArrayEquals(new float[] {1f, 2f, 3f, 4f}, m.values(), "a failed call changes nothing");
      }
      SparsefacException dense = assertThrows(SparsefacException.class,
          () -> DenseMatrix.of(ctx, 2, 2, new float[] {1f, 2f, 3f}));
      assertEquals(Status.SHAPE_MISMATCH, dense.status());
      SparsefacException denseNan = assertThrows(SparsefacException.class,
          () -> DenseMatrix.of(ctx, 1, 2, new float[] {1f, Float.NaN}));
      assertEquals(Status.INVALID_VALUE, denseNan.status());
      assertThrows(NullPointerException.class,
          () -> SparseMatrix.fromCoo(ctx, 3, 4, null, COLS, VALUES));
    }
  }

  @Test
  void denseRoundTrip() {
    try (Context ctx = Context.cpu(1, 0);
        DenseMatrix d = DenseMatrix.of(ctx, new float[][] {{1f, 2f, 3f}, {4f, 5f, 6f}})) {
      assertEquals(2, d.rows());
      assertEquals(3, d.cols());
      assertEquals(DenseMatrix.Storage.FLOAT32, d.storage());
      assertArrayEquals(new float[] {1f, 2f, 3f, 4f, 5f, 6f}, d.toArray());
      d.upload(new float[] {6f, 5f, 4f, 3f, 2f, 1f});
      assertArrayEquals(new float[] {3f, 2f, 1f}, d.toRows()[1]);
    }
  }

  @Test
  void filesRoundTripAndReportLines(@TempDir Path dir) throws IOException {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 3, 4, ROWS, COLS,
            new float[] {4.25f, 1e-7f, -3f, 0.1f})) {
      Path mtx = dir.resolve("m.mtx");
      m.writeMatrixMarket(mtx);
      try (SparseMatrix back = SparseMatrix.read(ctx, mtx, FileFormat.AUTO)) {
        assertEquals(3, back.rows());
        assertEquals(4, back.cols());
        assertArrayEquals(m.values(), back.values(), "full float precision");
      }
    }

    Path csv = dir.resolve("ratings.csv");
    Files.writeString(csv, "user,item,rating\n1234,7,4.5\n99,7,3\n1234,12,1\n");
    try (Context ctx = Context.cpu(1, 0);
        LabeledMatrix labeled = SparseMatrix.readWithIds(ctx, csv, FileFormat.CSV)) {
      assertEquals(2, labeled.matrix().rows());
      assertEquals(2, labeled.matrix().cols());
      assertArrayEquals(new long[] {99, 1234}, labeled.rowIds().ids());
      assertEquals(1, labeled.rowIds().indexOf(1234));
      assertEquals(-1, labeled.rowIds().indexOf(5));
      assertEquals(12, labeled.colIds().id(1));
      SparseMatrix.Coo coo = labeled.matrix().toCoo();
      assertArrayEquals(new int[] {0, 1, 1}, coo.rowIndices());
      assertArrayEquals(new int[] {0, 0, 1}, coo.colIndices());
      assertArrayEquals(new float[] {3f, 4.5f, 1f}, coo.values());
    }

    Path bad = dir.resolve("bad.csv");
    Files.writeString(bad, "user,item,rating\n1,2,3\n4,5\n");
    try (Context ctx = Context.cpu(1, 0)) {
      SparsefacException parse = assertThrows(SparsefacException.class,
          () -> SparseMatrix.read(ctx, bad, FileFormat.CSV));
      assertEquals(Status.PARSE, parse.status());
      assertTrue(parse.getMessage().contains("bad.csv:3"), parse.getMessage());

      SparsefacException missing = assertThrows(SparsefacException.class,
          () -> SparseMatrix.read(ctx, dir.resolve("no-such-file.mtx"), FileFormat.AUTO));
      assertEquals(Status.IO, missing.status());
      assertTrue(missing.getMessage().contains("no-such-file.mtx"), missing.getMessage());

      SparsefacException directory = assertThrows(SparsefacException.class,
          () -> SparseMatrix.read(ctx, dir, FileFormat.TRIPLETS));
      assertEquals(Status.IO, directory.status(), directory.getMessage());
    }
  }

  // Row counts 1, 3, 0, 3, 1; column counts 2, 1, 2, 3; values 1..8 in row-major order.
  static final int[] DEGREE_ROWS = {0, 1, 1, 1, 3, 3, 3, 4};
  static final int[] DEGREE_COLS = {3, 0, 2, 3, 0, 1, 2, 3};
  static final float[] DEGREE_VALUES = {1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f};

  @Test
  void degreeOrderIsByCountWithTiesInIndexOrder() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 5, 4, DEGREE_ROWS, DEGREE_COLS, DEGREE_VALUES);
        SparseMatrix empty = SparseMatrix.fromCoo(ctx, 0, 3, new int[0], new int[0], null)) {
      assertArrayEquals(new int[] {1, 3, 0, 4, 2}, m.degreeOrder(SparseMatrix.Axis.ROWS));
      assertArrayEquals(new int[] {3, 0, 2, 1}, m.degreeOrder(SparseMatrix.Axis.COLS));
      assertEquals(0, empty.degreeOrder(SparseMatrix.Axis.ROWS).length);
      assertArrayEquals(new int[] {0, 1, 2}, empty.degreeOrder(SparseMatrix.Axis.COLS));
      assertThrows(NullPointerException.class, () -> m.degreeOrder(null));
    }
  }

  @Test
  void permuteMovesEveryEntryWithItsValue() {
    int[] rowOrder = {2, 4, 0, 3, 1};
    int[] colOrder = {1, 3, 0, 2};
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 5, 4, DEGREE_ROWS, DEGREE_COLS, DEGREE_VALUES);
        SparseMatrix p = m.permute(rowOrder, colOrder)) {
      assertEquals(5, p.rows());
      assertEquals(4, p.cols());
      assertEquals(8, p.nnz());
      float[][] before = dense(m);
      float[][] after = dense(p);
      // Entry (rowOrder[r], colOrder[c]) is now (r, c), with its value.
      for (int r = 0; r < 5; r++) {
        for (int c = 0; c < 4; c++) {
          assertEquals(before[rowOrder[r]][colOrder[c]], after[r][c], "(" + r + ", " + c + ")");
        }
      }
      // Exactly: entry (1, 0) = 2 went to (4, 2), entry (0, 3) = 1 to (2, 1), ...
      SparseMatrix.Coo coo = p.toCoo();
      assertArrayEquals(new int[] {1, 2, 3, 3, 3, 4, 4, 4}, coo.rowIndices());
      assertArrayEquals(new int[] {1, 1, 0, 2, 3, 1, 2, 3}, coo.colIndices());
      assertArrayEquals(new float[] {8f, 1f, 6f, 5f, 7f, 4f, 2f, 3f}, coo.values());

      try (SparseMatrix rowsOnly = m.permute(rowOrder, null);
          SparseMatrix colsOnly = m.permute(null, colOrder);
          SparseMatrix byDegree = m.permute(m.degreeOrder(SparseMatrix.Axis.ROWS),
              m.degreeOrder(SparseMatrix.Axis.COLS))) {
        float[][] rows = dense(rowsOnly);
        float[][] cols = dense(colsOnly);
        for (int r = 0; r < 5; r++) {
          for (int c = 0; c < 4; c++) {
            assertEquals(before[rowOrder[r]][c], rows[r][c]);
            assertEquals(before[r][colOrder[c]], cols[r][c]);
          }
        }
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, byDegree.degreeOrder(SparseMatrix.Axis.ROWS));
        assertArrayEquals(new int[] {0, 1, 2, 3}, byDegree.degreeOrder(SparseMatrix.Axis.COLS));
      }
      assertArrayEquals(DEGREE_VALUES, m.values(), "the source is unchanged");
    }
  }

  @Test
  void permuteRowsAndBack() {
    float[] data = {1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f, 9f, 10f};
    int[] order = {3, 0, 4, 2, 1};
    int[] inverse = new int[order.length];
    for (int r = 0; r < order.length; r++) {
      inverse[order[r]] = r;
    }
    try (Context ctx = Context.cpu(1, 0);
        DenseMatrix d = DenseMatrix.of(ctx, 5, 2, data);
        DenseMatrix p = d.permuteRows(order);
        DenseMatrix back = p.permuteRows(inverse)) {
      assertEquals(5, p.rows());
      assertEquals(2, p.cols());
      assertEquals(DenseMatrix.Storage.FLOAT32, p.storage());
      assertArrayEquals(new float[] {7f, 8f, 1f, 2f, 9f, 10f, 5f, 6f, 3f, 4f}, p.toArray());
      assertArrayEquals(data, back.toArray());
      assertArrayEquals(data, d.toArray(), "the source is unchanged");
    }
  }

  @Test
  void nonPermutationsAreRejected() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 3, 2, new int[] {0, 1, 2},
            new int[] {0, 1, 1}, new float[] {1f, 2f, 3f});
        DenseMatrix d = DenseMatrix.of(ctx, 3, 2, new float[] {1f, 2f, 3f, 4f, 5f, 6f})) {
      SparsefacException repeat = assertThrows(SparsefacException.class,
          () -> m.permute(new int[] {0, 0, 1}, null));
      assertEquals(Status.INVALID_ARGUMENT, repeat.status());
      assertTrue(repeat.getMessage().contains("row_order[1] = 0 repeats row_order[0]"),
          repeat.getMessage());
      SparsefacException cols = assertThrows(SparsefacException.class,
          () -> m.permute(null, new int[] {1, 1}));
      assertEquals(Status.INVALID_ARGUMENT, cols.status());
      assertTrue(cols.getMessage().contains("repeats"), cols.getMessage());
      SparsefacException outside = assertThrows(SparsefacException.class,
          () -> m.permute(new int[] {0, 3, 1}, null));
      assertEquals(Status.INVALID_ARGUMENT, outside.status());
      assertTrue(outside.getMessage().contains("is outside"), outside.getMessage());
      SparsefacException length = assertThrows(SparsefacException.class,
          () -> m.permute(new int[] {0, 1}, null));
      assertEquals(Status.SHAPE_MISMATCH, length.status());
      assertTrue(length.getMessage().contains("rowOrder has 2 entries, expected 3"),
          length.getMessage());

      SparsefacException dense = assertThrows(SparsefacException.class,
          () -> d.permuteRows(new int[] {0, 0, 1}));
      assertEquals(Status.INVALID_ARGUMENT, dense.status());
      assertTrue(dense.getMessage().contains("order[1] = 0 repeats order[0]"),
          dense.getMessage());
      assertEquals(Status.SHAPE_MISMATCH,
          assertThrows(SparsefacException.class, () -> d.permuteRows(new int[] {0, 1})).status());
      assertThrows(NullPointerException.class, () -> d.permuteRows(null));
      assertArrayEquals(new int[] {0, 1, 2}, m.toCoo().rowIndices(), "nothing changed");
    }
  }

  // docs/bals-format.md's worked example: 5 x 6, tiles of 2 x 3.
  static final int[] BALS_ROWS = {0, 0, 0, 1, 1, 1, 2, 4, 4, 4};
  static final int[] BALS_COLS = {0, 2, 4, 0, 1, 3, 5, 1, 2, 3};
  static final float[] BALS_VALUES = {1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f, 9f, 10f};

  @Test
  void balsLayoutRoundTrip() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 5, 6, BALS_ROWS, BALS_COLS, BALS_VALUES)) {
      Bals b = m.toBals(2, 3, false);
      assertEquals(2, b.tileRows());
      assertEquals(3, b.tileCols());
      assertEquals(6, b.tiles());
      assertEquals(10, b.nnz());
      assertArrayEquals(new long[] {0, 3, 5, 5, 6, 8, 9}, b.tilePtr());
      assertArrayEquals(new int[] {0, 2, 1, 4, 3, 5, 1, 2, 3}, b.tileCol());
      assertArrayEquals(new long[] {0, 2, 4, 5, 6, 6, 6, 7, 7, 9, 9, 10, 10}, b.segPtr());
      assertArrayEquals(new int[] {0, 1, 0, 2, 0, 1, 0, 0, 1, 0}, b.segCol());
      assertArrayEquals(new float[] {1f, 2f, 4f, 5f, 3f, 6f, 7f, 8f, 9f, 10f}, b.values());
      assertArrayEquals(new int[] {0, 1, 2, 3, 4}, b.rowOrder());
      assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5}, b.colOrder());

      Bals r = m.toBals(2, 3, true);
      assertArrayEquals(new int[] {0, 1, 4, 2, 3}, r.rowOrder());
      assertArrayEquals(m.degreeOrder(SparseMatrix.Axis.ROWS), r.rowOrder());
      assertArrayEquals(m.degreeOrder(SparseMatrix.Axis.COLS), r.colOrder());

      Bals chosen = m.toBals();
      assertEquals(5, chosen.tileRows());
      assertEquals(6, chosen.tileCols());
      assertEquals(1, chosen.tiles());

      SparseMatrix.Compressed csr = m.toCsr();
      for (Bals layout : new Bals[] {b, r, chosen, m.toBals(1, 1, true), m.toBals(4, 5, true)}) {
        try (SparseMatrix back = SparseMatrix.fromBals(ctx, 5, 6, layout)) {
          SparseMatrix.Compressed again = back.toCsr();
          assertArrayEquals(csr.offsets(), again.offsets());
          assertArrayEquals(csr.indices(), again.indices());
          assertArrayEquals(csr.values(), again.values());
        }
      }
      // values null: a pattern; orders null: identities.
      try (SparseMatrix pattern = SparseMatrix.fromBals(ctx, 5, 6, new Bals(2, 3, b.tilePtr(),
          b.tileCol(), b.segPtr(), b.segCol(), null, null, null))) {
        assertArrayEquals(csr.indices(), pattern.toCsr().indices());
        assertArrayEquals(new float[] {1f, 1f, 1f, 1f, 1f, 1f, 1f, 1f, 1f, 1f}, pattern.values());
      }
    }
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix empty = SparseMatrix.fromCoo(ctx, 4, 3, new int[0], new int[0], null);
        SparseMatrix back = SparseMatrix.fromBals(ctx, 4, 3, empty.toBals())) {
      assertEquals(0, back.nnz());
      assertEquals(4, back.rows());
    }
  }

  @Test
  void badBalsInputGivesPreciseErrors() {
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix m = SparseMatrix.fromCoo(ctx, 5, 6, BALS_ROWS, BALS_COLS, BALS_VALUES)) {
      Bals b = m.toBals(2, 3, false);
      int[] tileCol = b.tileCol().clone();
      tileCol[3] = 7; // tile 1 covers columns 3..5
      SparsefacException column = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromBals(ctx, 5, 6, new Bals(2, 3, b.tilePtr(), tileCol, b.segPtr(),
              b.segCol(), b.values(), b.rowOrder(), b.colOrder())));
      assertEquals(Status.OUT_OF_RANGE, column.status());
      assertTrue(column.getMessage().contains("tile_col[3] = 7"), column.getMessage());

      int[] segCol = b.segCol().clone();
      segCol[4] = 2; // tile 1 lists 2 columns
      SparsefacException local = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromBals(ctx, 5, 6, new Bals(2, 3, b.tilePtr(), b.tileCol(),
              b.segPtr(), segCol, b.values(), null, null)));
      assertEquals(Status.OUT_OF_RANGE, local.status());
      assertTrue(local.getMessage().contains("seg_col[4]"), local.getMessage());

      float[] values = b.values().clone();
      values[1] = Float.NaN;
      SparsefacException nan = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromBals(ctx, 5, 6, new Bals(2, 3, b.tilePtr(), b.tileCol(),
              b.segPtr(), b.segCol(), values, null, null)));
      assertEquals(Status.INVALID_VALUE, nan.status());

      SparsefacException length = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromBals(ctx, 5, 6, new Bals(2, 3, b.tilePtr(), b.tileCol(),
              java.util.Arrays.copyOf(b.segPtr(), 12), b.segCol(), b.values(), null, null)));
      assertEquals(Status.SHAPE_MISMATCH, length.status());
      assertTrue(length.getMessage().contains("segPtr has 12 entries, expected 13"),
          length.getMessage());

      SparsefacException tiles = assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromBals(ctx, 5, 6, new Bals(0, 3, b.tilePtr(), b.tileCol(),
              b.segPtr(), b.segCol(), b.values(), null, null)));
      assertEquals(Status.INVALID_ARGUMENT, tiles.status());
      assertTrue(tiles.getMessage().contains("tile_rows"), tiles.getMessage());

      assertEquals(Status.INVALID_ARGUMENT,
          assertThrows(SparsefacException.class, () -> m.toBals(-1, 3, false)).status());
      assertEquals(Status.INVALID_ARGUMENT,
          assertThrows(SparsefacException.class, () -> m.toBals(1L << 40, 1, false)).status());
      assertThrows(NullPointerException.class, () -> SparseMatrix.fromBals(ctx, 5, 6, null));
    }
  }

  /** The matrix as a dense array, built from its triplets. */
  static float[][] dense(SparseMatrix m) {
    float[][] out = new float[(int) m.rows()][(int) m.cols()];
    SparseMatrix.Coo coo = m.toCoo();
    for (int t = 0; t < coo.values().length; t++) {
      out[coo.rowIndices()[t]][coo.colIndices()[t]] = coo.values()[t];
    }
    return out;
  }
}
