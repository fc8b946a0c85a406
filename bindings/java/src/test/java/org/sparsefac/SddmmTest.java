package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** SDDMM against a plain triple loop on random inputs. */
class SddmmTest {
  static final int M = 57;
  static final int N = 43;
  static final int K = 13;

  /** Random distinct cells of an M x N matrix, sorted by (row, col) as the library stores them. */
  static int[][] randomPattern(Random rng, int nnz) {
    TreeSet<Long> cells = new TreeSet<>();
    while (cells.size() < nnz) {
      cells.add((long) rng.nextInt(M) * N + rng.nextInt(N));
    }
    int[] rows = new int[nnz];
    int[] cols = new int[nnz];
    int t = 0;
    for (long cell : cells) {
      rows[t] = (int) (cell / N);
      cols[t] = (int) (cell % N);
      t++;
    }
    return new int[][] {rows, cols};
  }

  static float[] randomFloats(Random rng, int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) rng.nextGaussian();
    }
    return v;
  }

  /** The reference: P_t for every nonzero t in double precision. */
  static double[] reference(Sddmm.Mode mode, float alpha, float[] a, float[] b, int[] rows,
      int[] cols, float[] s, float beta, float[] p) {
    double[] out = new double[rows.length];
    for (int t = 0; t < rows.length; t++) {
      double d = 0;
      for (int k = 0; k < K; k++) {
        d += (double) a[rows[t] * K + k] * b[cols[t] * K + k];
      }
      double f = switch (mode) {
        case SCALED -> alpha * d * s[t];
        case PATTERN -> alpha * d;
        case RESIDUAL -> alpha * (s[t] - d);
      };
      out[t] = f + (beta == 0 ? 0 : beta * (double) p[t]);
    }
    return out;
  }

  @Test
  void everyModeMatchesTheTripleLoop() {
    Random rng = new Random(11);
    int[][] pattern = randomPattern(rng, 600);
    float[] s = randomFloats(rng, 600);
    float[] p0 = randomFloats(rng, 600);
    float[] a = randomFloats(rng, M * K);
    float[] b = randomFloats(rng, N * K);
    try (Context ctx = Context.cpu(2, 1);
        SparseMatrix sm = SparseMatrix.fromCoo(ctx, M, N, pattern[0], pattern[1], s);
        DenseMatrix da = DenseMatrix.of(ctx, M, K, a);
        DenseMatrix db = DenseMatrix.of(ctx, N, K, b);
        Sddmm.Plan plan = Sddmm.plan(ctx, sm, K, Sddmm.Algorithm.AUTO)) {
      assertNotEquals(Sddmm.Algorithm.AUTO, plan.algorithm());
      for (Sddmm.Mode mode : Sddmm.Mode.values()) {
        for (float beta : new float[] {0f, 0.5f}) {
          try (SparseMatrix p = sm.withValues(p0)) {
            Sddmm.compute(ctx, mode, 1.5f, da, db, sm, beta, p, plan);
            double[] want = reference(mode, 1.5f, a, b, pattern[0], pattern[1], s, beta, p0);
            float[] got = p.values();
            for (int t = 0; t < want.length; t++) {
              assertEquals(want[t], got[t], 1e-4 * (1 + Math.abs(want[t])),
                  mode + " beta " + beta + " nonzero " + t);
            }
          }
        }
      }
      // Without a plan, through the allocating overload, with each CPU algorithm.
      for (Sddmm.Algorithm alg : new Sddmm.Algorithm[] {Sddmm.Algorithm.ROW_SPLIT,
               Sddmm.Algorithm.NNZ_SPLIT}) {
        try (Sddmm.Plan explicit = Sddmm.plan(ctx, sm, K, alg)) {
          assertEquals(alg, explicit.algorithm());
        }
      }
      try (SparseMatrix p = Sddmm.compute(ctx, Sddmm.Mode.PATTERN, da, db, sm)) {
        double[] want =
            reference(Sddmm.Mode.PATTERN, 1f, a, b, pattern[0], pattern[1], s, 0f, p0);
        float[] got = p.values();
        for (int t = 0; t < want.length; t++) {
          assertEquals(want[t], got[t], 1e-4 * (1 + Math.abs(want[t])));
        }
        // The pattern is S's.
        SparseMatrix.Coo coo = p.toCoo();
        assertArrayEquals(pattern[0], coo.rowIndices());
        assertArrayEquals(pattern[1], coo.colIndices());
      }
    }
  }

  @Test
  void mismatchedShapesAreRejectedWithTheLibraryMessage() {
    Random rng = new Random(3);
    int[][] pattern = randomPattern(rng, 50);
    try (Context ctx = Context.cpu(1, 1);
        SparseMatrix sm = SparseMatrix.fromCoo(ctx, M, N, pattern[0], pattern[1], null);
        DenseMatrix da = DenseMatrix.zeros(ctx, M, K);
        DenseMatrix wrongK = DenseMatrix.zeros(ctx, N, K + 1);
        DenseMatrix wrongN = DenseMatrix.zeros(ctx, N + 1, K)) {
      for (DenseMatrix b : new DenseMatrix[] {wrongK, wrongN}) {
        SparsefacException e = assertThrows(SparsefacException.class,
            () -> Sddmm.compute(ctx, Sddmm.Mode.SCALED, da, b, sm));
        assertEquals(Status.SHAPE_MISMATCH, e.status());
        assertFalse(e.getMessage().isEmpty());
        assertTrue(e.toString().contains("SHAPE_MISMATCH"), e.toString());
      }
      assertThrows(SparsefacException.class, () -> Sddmm.plan(ctx, sm, 0, Sddmm.Algorithm.AUTO));
    }
  }
}
