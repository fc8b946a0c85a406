package org.sparsefac;

import java.util.Objects;
import org.sparsefac.NativeHandle.Lease;

/**
 * Sampled dense-dense matrix multiplication: at every nonzero (i, j) of S, with
 * d = dot(A[i,:], B[j,:]) (A is M x K, B is N x K, S is M x N):
 * <ul>
 *   <li>SCALED: P_ij = alpha * d * S_ij + beta * P_ij
 *   <li>PATTERN: P_ij = alpha * d + beta * P_ij
 *   <li>RESIDUAL: P_ij = alpha * (S_ij - d) + beta * P_ij
 * </ul>
 * P must have S's pattern (S itself or {@link SparseMatrix#withValues}).
 */
public final class Sddmm {
  private Sddmm() {}

  public enum Mode {
    SCALED(sfac_sddmm_mode.SFAC_SDDMM_SCALED),
    PATTERN(sfac_sddmm_mode.SFAC_SDDMM_PATTERN),
    RESIDUAL(sfac_sddmm_mode.SFAC_SDDMM_RESIDUAL);

    final int code;

    Mode(int code) {
      this.code = code;
    }
  }

  public enum Algorithm {
    AUTO(sfac_sddmm_algorithm.SFAC_SDDMM_ALG_AUTO),
    ROW_SPLIT(sfac_sddmm_algorithm.SFAC_SDDMM_ALG_ROW_SPLIT),
    NNZ_SPLIT(sfac_sddmm_algorithm.SFAC_SDDMM_ALG_NNZ_SPLIT),
    TILED(sfac_sddmm_algorithm.SFAC_SDDMM_ALG_TILED),
    CUSPARSE(sfac_sddmm_algorithm.SFAC_SDDMM_ALG_CUSPARSE);

    final int code;

    Algorithm(int code) {
      this.code = code;
    }

    static Algorithm of(int code) {
      for (Algorithm a : values()) {
        if (a.code == code) {
          return a;
        }
      }
      throw new SparsefacException(Status.INTERNAL, "unknown SDDMM algorithm code " + code);
    }
  }

  /** The analysis of one pattern for one K, reusable by every call on that pattern. */
  public static final class Plan extends NativeHandle {
    private Plan(long address) {
      super(address, a -> Native.sfac_sddmm_plan_destroy(a), "Sddmm.Plan");
    }

    /** What AUTO resolved to. */
    public Algorithm algorithm() {
      int[] out = new int[1];
      try (Lease self = lease()) {
        SparsefacException.check(Native.sfac_sddmm_plan_get_algorithm(self.address, out));
      }
      return Algorithm.of(out[0]);
    }
  }

  public static Plan plan(Context ctx, SparseMatrix pattern, long k, Algorithm algorithm) {
    long[] out = new long[1];
    try (Lease ctxL = ctx.lease(); Lease patternL = pattern.lease()) {
      SparsefacException.check(
          Native.sfac_sddmm_plan_create(ctxL.address, patternL.address, k, algorithm.code, out));
    }
    return new Plan(out[0]);
  }

  /** P = f(A B^T, S) in place (see the class comment); plan may be null. */
  public static void compute(Context ctx, Mode mode, float alpha, DenseMatrix a, DenseMatrix b,
      SparseMatrix s, float beta, SparseMatrix p, Plan plan) {
    Objects.requireNonNull(mode, "mode");
    try (Lease ctxL = ctx.lease(); Lease aL = a.lease(); Lease bL = b.lease();
        Lease sL = s.lease(); Lease pL = p.lease(); Lease planL = NativeHandle.leaseOf(plan)) {
      SparsefacException.check(Native.sfac_sddmm(ctxL.address, mode.code, alpha, aL.address,
          bL.address, sL.address, beta, pL.address, planL.address));
    }
  }

  /** A new matrix P with S's pattern and P_ij = f(A B^T, S) (alpha 1, beta 0). */
  public static SparseMatrix compute(Context ctx, Mode mode, DenseMatrix a, DenseMatrix b,
      SparseMatrix s) {
    SparseMatrix p = s.withValues(null);
    try {
      compute(ctx, mode, 1.0f, a, b, s, 0.0f, p, null);
      return p;
    } catch (RuntimeException e) {
      p.close();
      throw e;
    }
  }
}
