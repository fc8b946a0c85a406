package org.sparsefac;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/** A trained factorization: users x rank and items x rank factors (and optional biases). */
public final class Model extends NativeHandle {
  Model(long address) {
    super(address, a -> Native.sfac_model_destroy(a), "Model");
  }

  /** Trains on {@code ratings} (users x items); the context's seed drives initialization. */
  public static Model train(Context ctx, SparseMatrix ratings, TrainOptions options) {
    try (ListenerState state = ListenerState.of(options.listener());
        Lease listener = NativeHandle.leaseOf(state)) {
      long nativeOptions = options.toNative(listener);
      try (Lease c = ctx.lease(); Lease r = ratings.lease()) {
        long[] out = new long[1];
        int code = Native.sfac_train(c.address, r.address, nativeOptions, out);
        if (code != sfac_status.SFAC_OK) {
          throw ListenerState.failure(code, listener);
        }
        return new Model(out[0]);
      } finally {
        Native.sfac_train_options_destroy(nativeOptions);
      }
    }
  }

  /**
   * Loads a model file written by {@link #save} (from any language). A truncated, corrupted or
   * foreign file is {@link Status#PARSE} or {@link Status#IO}.
   */
  public static Model load(Context ctx, Path path) {
    long[] out = new long[1];
    try (Lease ctxL = ctx.lease()) {
      SparsefacException.check(Native.sfac_model_load(ctxL.address, path.toString(), out));
    }
    return new Model(out[0]);
  }

  public void save(Path path) {
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_save(self.address, path.toString()));
    }
  }

  /** Writes LIBMF's text model format. */
  public void exportLibmf(Path path) {
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_export_libmf(self.address, path.toString()));
    }
  }

  public int users() {
    return shape()[0];
  }

  public int items() {
    return shape()[1];
  }

  public int rank() {
    return shape()[2];
  }

  private int[] shape() {
    long[] u = new long[1];
    long[] i = new long[1];
    long[] k = new long[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_get_shape(self.address, u, i, k));
    }
    return new int[] {Shapes.length(u[0], "users"), Shapes.length(i[0], "items"),
        Shapes.length(k[0], "rank")};
  }

  public Algorithm algorithm() {
    int[] out = new int[1];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_get_algorithm(self.address, out));
    }
    return Algorithm.of(out[0]);
  }

  /** User factors, users x rank, row-major. */
  public float[] userFactorsFlat() {
    int[] s = shape();
    float[] out = new float[Shapes.length((long) s[0] * s[2], "users * rank")];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_get_user_factors(self.address, out, out.length));
    }
    return out;
  }

  /** Item factors, items x rank, row-major. */
  public float[] itemFactorsFlat() {
    int[] s = shape();
    float[] out = new float[Shapes.length((long) s[1] * s[2], "items * rank")];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_get_item_factors(self.address, out, out.length));
    }
    return out;
  }

  public float[][] userFactors() {
    int[] s = shape();
    return Shapes.unflatten(userFactorsFlat(), s[0], s[2]);
  }

  public float[][] itemFactors() {
    int[] s = shape();
    return Shapes.unflatten(itemFactorsFlat(), s[1], s[2]);
  }

  /** Replaces the user factors (users x rank finite floats, row-major). */
  public void setUserFactors(float[] factors) {
    int[] s = shape();
    Shapes.requireLength(Objects.requireNonNull(factors, "factors"), s[0] * s[2], "factors",
        "users * rank");
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_set_user_factors(self.address, factors));
    }
  }

  /** Replaces the item factors (items x rank finite floats, row-major). */
  public void setItemFactors(float[] factors) {
    int[] s = shape();
    Shapes.requireLength(Objects.requireNonNull(factors, "factors"), s[1] * s[2], "factors",
        "items * rank");
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_set_item_factors(self.address, factors));
    }
  }

  public void setUserFactors(float[][] factors) {
    setUserFactors(Shapes.flatten(Objects.requireNonNull(factors, "factors"), rank(), "factors"));
  }

  public void setItemFactors(float[][] factors) {
    setItemFactors(Shapes.flatten(Objects.requireNonNull(factors, "factors"), rank(), "factors"));
  }

  /** The biases, when the model was trained with them. */
  public Optional<Biases> biases() {
    int[] has = new int[1];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_model_get_biases(self.address, has, null, null, 0, null, 0));
    }
    if (has[0] == 0) {
      return Optional.empty();
    }
    int[] s = shape();
    float[] mean = new float[1];
    float[] user = new float[s[0]];
    float[] item = new float[s[1]];
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_get_biases(
          self.address, has, mean, user, user.length, item, item.length));
    }
    return Optional.of(new Biases(mean[0], user, item));
  }

  /** Predicted rating of (users[t], items[t]) for every t. */
  public float[] predict(int[] users, int[] items) {
    Objects.requireNonNull(users, "users");
    Objects.requireNonNull(items, "items");
    Shapes.requireLength(items, users.length, "items", "one per user");
    float[] scores = new float[users.length];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_model_predict(self.address, users.length, users, items, scores));
    }
    return scores;
  }

  public float predict(int user, int item) {
    return predict(new int[] {user}, new int[] {item})[0];
  }

  /** RMSE and MAE on the nonzeros of {@code ratings}. */
  public Evaluation evaluate(SparseMatrix ratings) {
    double[] rmse = new double[1];
    double[] mae = new double[1];
    try (Lease ratingsL = ratings.lease(); Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_model_evaluate(self.address, ratingsL.address, rmse, mae));
    }
    return new Evaluation(rmse[0], mae[0]);
  }

  /**
   * Precision, recall, NDCG and MAP at k of the top-k items (excluding each user's nonzeros in
   * {@code exclude}, which may be null) against each user's items in {@code test}.
   */
  public RankingMetrics rankingMetrics(SparseMatrix exclude, SparseMatrix test, int k) {
    double[] p = new double[1];
    double[] r = new double[1];
    double[] n = new double[1];
    double[] m = new double[1];
    try (Lease excludeL = NativeHandle.leaseOf(exclude); Lease testL = test.lease();
        Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_ranking_metrics(self.address,
          excludeL.address, testL.address, k, p, r, n, m));
    }
    return new RankingMetrics(k, p[0], r[0], n[0], m[0]);
  }

  /** The n best items for {@code user}. */
  public TopItems recommend(int user, int n) {
    return recommend(new int[] {user}, n, null, null).get(0);
  }

  /** The n best items for {@code user} that are not nonzeros of {@code exclude} (may be null). */
  public TopItems recommend(int user, int n, SparseMatrix exclude) {
    return recommend(new int[] {user}, n, exclude, null).get(0);
  }

  /**
   * The n best items for each user, never an item of that user's row in {@code exclude} (a users
   * x items matrix, e.g. the training ratings; may be null), only among {@code allowedItems} when
   * that is not null.
   */
  public List<TopItems> recommend(int[] users, int n, SparseMatrix exclude, int[] allowedItems) {
    Objects.requireNonNull(users, "users");
    int slots = topSlots(users.length, n);
    int[] items = new int[slots];
    float[] scores = new float[slots];
    try (Lease excludeL = NativeHandle.leaseOf(exclude); Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_recommend(self.address, users.length, users, n,
          excludeL.address, allowedItems == null ? 0 : allowedItems.length,
          allowedItems, items, scores, Shapes.capacity(items, scores)));
    }
    return split(users, n, items, scores);
  }

  /** The n items most similar to {@code item} (cosine of the factors), itself excluded. */
  public TopItems similarItems(int item, int n) {
    return similarItems(new int[] {item}, n).get(0);
  }

  public List<TopItems> similarItems(int[] items, int n) {
    Objects.requireNonNull(items, "items");
    int slots = topSlots(items.length, n);
    int[] outItems = new int[slots];
    float[] scores = new float[slots];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_model_similar_items(self.address, items.length, items, n, outItems, scores,
              Shapes.capacity(outItems, scores)));
    }
    return split(items, n, outItems, scores);
  }

  private static int topSlots(int count, int n) {
    if (n < 0) {
      throw new SparsefacException(Status.INVALID_ARGUMENT, "n = " + n + " must be >= 0");
    }
    return Shapes.length((long) count * n, "count * n");
  }

  /** Rows of the library's count x n layout, without the -1 slots beyond the candidates. */
  private static List<TopItems> split(int[] queries, int n, int[] items, float[] scores) {
    List<TopItems> out = new ArrayList<>(queries.length);
    for (int q = 0; q < queries.length; q++) {
      int size = 0;
      while (size < n && items[q * n + size] >= 0) {
        size++;
      }
      out.add(new TopItems(queries[q], java.util.Arrays.copyOfRange(items, q * n, q * n + size),
          java.util.Arrays.copyOfRange(scores, q * n, q * n + size)));
    }
    return out;
  }

  /**
   * Fold-in of an existing user: solves the user's factors from these ratings against the fixed
   * item factors with the training objective, stores them in the model and returns them.
   */
  public FoldIn recalculateUser(int user, int[] items, float[] ratings) {
    return foldIn(user, items, ratings);
  }

  /** Fold-in of a new user (the model is not changed). */
  public FoldIn foldIn(int[] items, float[] ratings) {
    return foldIn(-1, items, ratings);
  }

  private FoldIn foldIn(int user, int[] items, float[] ratings) {
    Objects.requireNonNull(items, "items");
    Objects.requireNonNull(ratings, "ratings");
    Shapes.requireLength(ratings, items.length, "ratings", "one per item");
    float[] factors = new float[rank()];
    float[] bias = {Float.NaN};
    int[] has = new int[1];
    try (Lease self = lease()) {
      SparsefacException.check(
          Native.sfac_model_get_biases(self.address, has, null, null, 0, null, 0));
    }
    try (Lease self = lease()) {
      SparsefacException.check(Native.sfac_model_recalculate_user(self.address, user, items.length,
          items, ratings, factors, factors.length, bias));
    }
    return new FoldIn(factors, has[0] != 0 ? bias[0] : Float.NaN);
  }
}
