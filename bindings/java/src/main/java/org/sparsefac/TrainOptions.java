package org.sparsefac;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.sparsefac.NativeHandle.Lease;

/**
 * Immutable training settings. Options left unset keep the library's defaults for the algorithm
 * (e.g. rank 32, 15 ALS / 20 SGD iterations); an option the algorithm does not use is ignored.
 *
 * <pre>{@code
 * TrainOptions opts = TrainOptions.builder(Algorithm.ALS).rank(8).iterations(10).lambda(0.05)
 *     .listener(stats -> { System.out.println(stats); return true; }).build();
 * }</pre>
 */
public final class TrainOptions {
  /** ALS regularization: PLAIN adds lambda*I, WEIGHTED lambda*n_u*I (ALS-WR). */
  public enum Regularization {
    PLAIN(sfac_regularization.SFAC_REG_PLAIN),
    WEIGHTED(sfac_regularization.SFAC_REG_WEIGHTED);

    final int code;

    Regularization(int code) {
      this.code = code;
    }
  }

  /** ALS linear solver: exact Cholesky or warm-started conjugate gradient. */
  public enum Solver {
    CHOLESKY(sfac_solver.SFAC_SOLVER_CHOLESKY),
    CG(sfac_solver.SFAC_SOLVER_CG);

    final int code;

    Solver(int code) {
      this.code = code;
    }
  }

  /**
   * How ALS and implicit ALS number users and items while training. DEGREE trains on a copy of
   * the ratings with users and items renumbered by rating count, most first, so that the rows
   * many users read lie together (faster on a CUDA device; the copy lives as long as the
   * training). NONE trains on the ratings as given. AUTO (the default) is DEGREE on a CUDA
   * context and NONE on the CPU. Either way the model, loss and validation keep the caller's ids,
   * and the factors differ only by the order of floating-point sums.
   */
  public enum Reorder {
    NONE(sfac_reorder.SFAC_REORDER_NONE),
    DEGREE(sfac_reorder.SFAC_REORDER_DEGREE),
    AUTO(sfac_reorder.SFAC_REORDER_AUTO);

    final int code;

    Reorder(int code) {
      this.code = code;
    }
  }

  /**
   * How SGD workers on a CUDA device share the items. Each worker owns its users either way.
   * HOGWILD (the default, faster) updates items without locks, and two workers on one item at
   * once lose one's update; WAVEFRONT locks ranges of items so that no update is lost, at the
   * cost of fewer workers and shorter runs per user.
   */
  public enum SgdSchedule {
    HOGWILD(sfac_sgd_schedule.SFAC_SGD_HOGWILD),
    WAVEFRONT(sfac_sgd_schedule.SFAC_SGD_WAVEFRONT);

    final int code;

    SgdSchedule(int code) {
      this.code = code;
    }
  }

  private final Algorithm algorithm;
  private final Map<Integer, Long> ints;
  private final Map<Integer, Double> doubles;
  private final SparseMatrix validation;
  private final EpochListener listener;

  private TrainOptions(Builder b) {
    this.algorithm = b.algorithm;
    this.ints = Map.copyOf(b.ints);
    this.doubles = Map.copyOf(b.doubles);
    this.validation = b.validation;
    this.listener = b.listener;
  }

  public static Builder builder(Algorithm algorithm) {
    return new Builder(algorithm);
  }

  public Algorithm algorithm() {
    return algorithm;
  }

  public EpochListener listener() {
    return listener;
  }

  public SparseMatrix validation() {
    return validation;
  }

  /** Native options with these settings (the listener is attached by the caller). */
  long toNative() {
    long[] out = new long[1];
    SparsefacException.check(Native.sfac_train_options_create(algorithm.code, out));
    long options = out[0];
    try {
      for (Map.Entry<Integer, Long> e : ints.entrySet()) {
        SparsefacException.check(Native.sfac_train_options_set_int(options, e.getKey(),
            e.getValue()));
      }
      for (Map.Entry<Integer, Double> e : doubles.entrySet()) {
        SparsefacException.check(Native.sfac_train_options_set_double(options, e.getKey(),
            e.getValue()));
      }
      if (validation != null) {
        // The native options keep the matrix alive from here on.
        try (Lease v = validation.lease()) {
          SparsefacException.check(Native.sfac_train_options_set_validation(options, v.address));
        }
      }
      return options;
    } catch (RuntimeException e) {
      Native.sfac_train_options_destroy(options);
      throw e;
    }
  }

  /**
   * Native options with a listener's state attached (address 0: none); they hold its address, so
   * the caller keeps the lease for as long as the options or what is made from them may call it.
   */
  long toNative(Lease listener) {
    long options = toNative();
    int code = Native.sfac_train_options_set_callback(options, listener.address);
    if (code != sfac_status.SFAC_OK) {
      SparsefacException e = SparsefacException.fromNative(code, null);
      Native.sfac_train_options_destroy(options);
      throw e;
    }
    return options;
  }

  public static final class Builder {
    private final Algorithm algorithm;
    private final Map<Integer, Long> ints = new LinkedHashMap<>();
    private final Map<Integer, Double> doubles = new LinkedHashMap<>();
    private SparseMatrix validation;
    private EpochListener listener;

    private Builder(Algorithm algorithm) {
      this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
    }

    private Builder setInt(int option, long value) {
      ints.put(option, value);
      return this;
    }

    private Builder setDouble(int option, double value) {
      doubles.put(option, value);
      return this;
    }

    /** Factor length k (>= 1). */
    public Builder rank(int rank) {
      return setInt(sfac_option.SFAC_OPT_RANK, rank);
    }

    /** Epochs run by {@link Model#train} (>= 0). */
    public Builder iterations(int iterations) {
      return setInt(sfac_option.SFAC_OPT_ITERATIONS, iterations);
    }

    /** Regularization of both user and item factors. */
    public Builder lambda(double lambda) {
      doubles.remove(sfac_option.SFAC_OPT_LAMBDA_USER);
      doubles.remove(sfac_option.SFAC_OPT_LAMBDA_ITEM);
      return setDouble(sfac_option.SFAC_OPT_LAMBDA, lambda);
    }

    public Builder lambdaUser(double lambda) {
      return setDouble(sfac_option.SFAC_OPT_LAMBDA_USER, lambda);
    }

    public Builder lambdaItem(double lambda) {
      return setDouble(sfac_option.SFAC_OPT_LAMBDA_ITEM, lambda);
    }

    /** Learn a global mean and user/item biases (ALS, SGD). */
    public Builder useBiases(boolean useBiases) {
      return setInt(sfac_option.SFAC_OPT_USE_BIASES, useBiases ? 1 : 0);
    }

    /** Initial factors ~ N(0, (scale / sqrt(rank))^2). */
    public Builder initScale(double scale) {
      return setDouble(sfac_option.SFAC_OPT_INIT_SCALE, scale);
    }

    /** Bit-reproducible results for a fixed seed and thread count. */
    public Builder deterministic(boolean deterministic) {
      return setInt(sfac_option.SFAC_OPT_DETERMINISTIC, deterministic ? 1 : 0);
    }

    public Builder regularization(Regularization regularization) {
      return setInt(sfac_option.SFAC_OPT_ALS_REGULARIZATION, regularization.code);
    }

    public Builder solver(Solver solver) {
      return setInt(sfac_option.SFAC_OPT_ALS_SOLVER, solver.code);
    }

    /** CG steps per row and half-sweep (ALS with {@link Solver#CG}). */
    public Builder cgSteps(int steps) {
      return setInt(sfac_option.SFAC_OPT_ALS_CG_STEPS, steps);
    }

    /**
     * How ALS and implicit ALS number users and items while training (default {@link
     * Reorder#AUTO}); SGD ignores it.
     */
    public Builder alsReorder(Reorder reorder) {
      return setInt(sfac_option.SFAC_OPT_ALS_REORDER,
          Objects.requireNonNull(reorder, "reorder").code);
    }

    /**
     * How the factors are stored while training (default {@link DenseMatrix.Storage#FLOAT32}),
     * for every algorithm and backend. With FLOAT16 or BFLOAT16, ALS and IALS round each solved
     * row to that type and the next half-sweep reads the rounded values; SGD rounds every row it
     * updates. Arithmetic stays float32; a CUDA trainer moves half the bytes (and ALS uses 16-bit
     * tensor cores). The model's factors are the stored values, except that SGD with {@link
     * #scaleRatings} on (its default) reports them times sqrt(scale).
     */
    public Builder factorStorage(DenseMatrix.Storage storage) {
      return setInt(sfac_option.SFAC_OPT_FACTOR_DTYPE,
          Objects.requireNonNull(storage, "storage").code);
    }

    /** Confidence c = 1 + alpha * r of implicit ALS. */
    public Builder implicitAlpha(double alpha) {
      return setDouble(sfac_option.SFAC_OPT_IMPLICIT_ALPHA, alpha);
    }

    /** SGD step size alpha of gamma_t = alpha / (1 + beta t^1.5). */
    public Builder learningRate(double rate) {
      return setDouble(sfac_option.SFAC_OPT_SGD_LEARNING_RATE, rate);
    }

    /** SGD schedule decay beta. */
    public Builder decay(double decay) {
      return setDouble(sfac_option.SFAC_OPT_SGD_DECAY, decay);
    }

    /** SGD on ratings divided by their standard deviation. */
    public Builder scaleRatings(boolean scale) {
      return setInt(sfac_option.SFAC_OPT_SGD_SCALE_RATINGS, scale ? 1 : 0);
    }

    /**
     * SGD workers that update at the same time on a CUDA device (0 to 2^24; 0, the default,
     * chooses as many as fit the device, at most one per 4096 ratings). More run faster but lose
     * more updates to collisions on popular items. The CPU backend ignores it: it runs one worker
     * per context thread. Out of range throws {@link Status#INVALID_ARGUMENT} when built.
     */
    public Builder sgdWorkers(int workers) {
      return setInt(sfac_option.SFAC_OPT_SGD_WORKERS, workers);
    }

    /**
     * How SGD workers on a CUDA device share the items (default {@link SgdSchedule#HOGWILD}).
     * Deterministic training runs its own block grid and the CPU backend conflict-free blocks,
     * whatever this says.
     */
    public Builder sgdSchedule(SgdSchedule schedule) {
      return setInt(sfac_option.SFAC_OPT_SGD_SCHEDULE,
          Objects.requireNonNull(schedule, "schedule").code);
    }

    /** Held-out ratings whose RMSE is reported to the listener each epoch (null clears). */
    public Builder validation(SparseMatrix validation) {
      this.validation = validation;
      return this;
    }

    /** Called after every epoch (null clears). */
    public Builder listener(EpochListener listener) {
      this.listener = listener;
      return this;
    }

    /** Checks every value against the library (its message on failure) and freezes them. */
    public TrainOptions build() {
      TrainOptions options = new TrainOptions(this);
      Native.sfac_train_options_destroy(options.toNative());
      return options;
    }
  }
}
