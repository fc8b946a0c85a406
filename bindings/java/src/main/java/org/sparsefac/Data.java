package org.sparsefac;

import org.sparsefac.NativeHandle.Lease;

/** Synthetic data with a known answer, and train/test splits. */
public final class Data {
  private Data() {}

  public enum Feedback {
    /** Ratings = planted dot product + Gaussian noise: the planted model's RMSE is the noise. */
    EXPLICIT(sfac_feedback.SFAC_FEEDBACK_EXPLICIT),
    /** Positive counts where the planted affinity is in the top third. */
    IMPLICIT(sfac_feedback.SFAC_FEEDBACK_IMPLICIT);

    final int code;

    Feedback(int code) {
      this.code = code;
    }
  }

  /** Generated ratings and the planted factors they come from. Closing closes all three. */
  public record Synthetic(SparseMatrix ratings, DenseMatrix userFactors, DenseMatrix itemFactors)
      implements AutoCloseable {
    @Override
    public void close() {
      ratings.close();
      userFactors.close();
      itemFactors.close();
    }
  }

  /** The two halves of a split. Closing closes both. */
  public record Split(SparseMatrix train, SparseMatrix test) implements AutoCloseable {
    @Override
    public void close() {
      train.close();
      test.close();
    }
  }

  /**
   * About {@code nnz} distinct (user, item) cells with power-law degrees (skew in [0, 1), 0 =
   * uniform), seeded by the context's seed.
   */
  public static Synthetic synthesize(Context ctx, Feedback feedback, long users, long items,
      long nnz, long rank, double noise, double skew) {
    long[] r = new long[1];
    long[] u = new long[1];
    long[] v = new long[1];
    try (Lease ctxL = ctx.lease()) {
      SparsefacException.check(Native.sfac_synthesize_ratings(ctxL.address, feedback.code, users,
          items, nnz, rank, noise, skew, r, u, v));
    }
    return new Synthetic(new SparseMatrix(r[0]), new DenseMatrix(u[0]), new DenseMatrix(v[0]));
  }

  /** Each nonzero goes to test with probability {@code testFraction}. */
  public static Split splitRandom(SparseMatrix ratings, double testFraction, long seed) {
    long[] train = new long[1];
    long[] test = new long[1];
    try (Lease ratingsL = ratings.lease()) {
      SparsefacException.check(
          Native.sfac_split_random(ratingsL.address, testFraction, seed, train, test));
    }
    return new Split(new SparseMatrix(train[0]), new SparseMatrix(test[0]));
  }

  /** k random ratings of every user with more than k go to test. */
  public static Split splitLeaveKOut(SparseMatrix ratings, long k, long seed) {
    long[] train = new long[1];
    long[] test = new long[1];
    try (Lease ratingsL = ratings.lease()) {
      SparsefacException.check(
          Native.sfac_split_leave_k_out(ratingsL.address, k, seed, train, test));
    }
    return new Split(new SparseMatrix(train[0]), new SparseMatrix(test[0]));
  }
}
