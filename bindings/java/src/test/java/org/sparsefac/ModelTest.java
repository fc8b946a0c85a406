package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** Model queries against references computed in Java from the model's own factors. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ModelTest {
  static final int USERS = 300;
  static final int ITEMS = 200;
  static final int RANK = 4;

  Context ctx;
  Data.Synthetic data;
  Data.Split split;
  Model model;
  Model biased;
  SparseMatrix.Compressed train;

  @BeforeAll
  void train() {
    ctx = Context.cpu(2, 17);
    data = Data.synthesize(ctx, Data.Feedback.EXPLICIT, USERS, ITEMS, 9000, RANK, 0.1, 0.2);
    split = Data.splitRandom(data.ratings(), 0.2, 8);
    model = Model.train(ctx, split.train(),
        TrainOptions.builder(Algorithm.ALS).rank(RANK).iterations(8).build());
    biased = Model.train(ctx, split.train(),
        TrainOptions.builder(Algorithm.ALS).rank(RANK).iterations(5).useBiases(true).build());
    train = split.train().toCsr();
  }

  @AfterAll
  void close() {
    biased.close();
    model.close();
    split.close();
    data.close();
    ctx.close();
  }

  static double dot(float[] x, int i, float[] y, int j) {
    double d = 0;
    for (int k = 0; k < RANK; k++) {
      d += (double) x[i * RANK + k] * y[j * RANK + k];
    }
    return d;
  }

  Set<Integer> seen(int user) {
    Set<Integer> items = new HashSet<>();
    for (long t = train.offsets()[user]; t < train.offsets()[user + 1]; t++) {
      items.add(train.indices()[(int) t]);
    }
    return items;
  }

  @Test
  void predictAndEvaluateMatchTheFactors() {
    float[] p = model.userFactorsFlat();
    float[] q = model.itemFactorsFlat();
    assertEquals(USERS * RANK, p.length);
    assertArrayEquals(p, Shapes.flatten(model.userFactors(), RANK, "p"));
    assertFalse(model.biases().isPresent());
    int[] users = {0, 5, 299, 17};
    int[] items = {0, 199, 3, 17};
    float[] scores = model.predict(users, items);
    for (int t = 0; t < users.length; t++) {
      assertEquals(dot(p, users[t], q, items[t]), scores[t], 1e-5);
    }

    Biases b = biased.biases().orElseThrow();
    float[] bp = biased.userFactorsFlat();
    float[] bq = biased.itemFactorsFlat();
    assertEquals(USERS, b.userBiases().length);
    assertEquals(b.globalMean() + b.userBiases()[5] + b.itemBiases()[7] + dot(bp, 5, bq, 7),
        biased.predict(5, 7), 1e-5);

    SparseMatrix.Coo test = split.test().toCoo();
    double se = 0;
    double ae = 0;
    float[] predicted = model.predict(test.rowIndices(), test.colIndices());
    for (int t = 0; t < predicted.length; t++) {
      double err = test.values()[t] - predicted[t];
      se += err * err;
      ae += Math.abs(err);
    }
    Evaluation e = model.evaluate(split.test());
    assertEquals(Math.sqrt(se / predicted.length), e.rmse(), 1e-5);
    assertEquals(ae / predicted.length, e.mae(), 1e-5);
  }

  @Test
  void recommendExcludesSeenItemsAndMatchesBruteForce() {
    float[] p = model.userFactorsFlat();
    float[] q = model.itemFactorsFlat();
    int n = 10;
    int[] users = {0, 1, 42, 123, 299};
    List<TopItems> all = model.recommend(users, n, split.train(), null);
    assertEquals(users.length, all.size());
    for (TopItems top : all) {
      int u = top.query();
      Set<Integer> seen = seen(u);
      assertEquals(n, top.size());
      double worstReturned = Double.POSITIVE_INFINITY;
      Set<Integer> returned = new HashSet<>();
      for (int r = 0; r < n; r++) {
        int item = top.items()[r];
        assertFalse(seen.contains(item), "user " + u + " already rated item " + item);
        assertTrue(returned.add(item), "item repeated");
        assertEquals(dot(p, u, q, item), top.scores()[r], 1e-5);
        if (r > 0) {
          assertTrue(top.scores()[r] <= top.scores()[r - 1], "best first");
        }
        worstReturned = Math.min(worstReturned, top.scores()[r]);
      }
      // Brute force: no unseen, unreturned item scores above the worst returned one.
      for (int i = 0; i < ITEMS; i++) {
        if (!seen.contains(i) && !returned.contains(i)) {
          assertTrue(dot(p, u, q, i) <= worstReturned + 1e-5, "item " + i + " was skipped");
        }
      }
    }
    // Without exclusion the seen items compete; with allowed items only those come back.
    TopItems free = model.recommend(0, ITEMS);
    assertEquals(ITEMS, free.size());
    TopItems allowed = model.recommend(new int[] {0}, 5, null, new int[] {3, 1, 4}).get(0);
    assertEquals(3, allowed.size(), "fewer candidates than n: the -1 slots are dropped");
    assertEquals(Set.of(1, 3, 4), Set.of(allowed.items()[0], allowed.items()[1],
        allowed.items()[2]));

    SparsefacException range = assertThrows(SparsefacException.class,
        () -> model.recommend(USERS, 5));
    assertEquals(Status.OUT_OF_RANGE, range.status());
  }

  @Test
  void similarItemsMatchBruteForceCosine() {
    float[] q = model.itemFactorsFlat();
    int item = 7;
    TopItems top = model.similarItems(item, 5);
    assertEquals(5, top.size());
    double[] cos = new double[ITEMS];
    for (int j = 0; j < ITEMS; j++) {
      cos[j] = dot(q, item, q, j) / Math.sqrt(dot(q, item, q, item) * dot(q, j, q, j));
    }
    for (int r = 0; r < 5; r++) {
      assertNotEquals(item, top.items()[r]);
      assertEquals(cos[top.items()[r]], top.scores()[r], 1e-4);
    }
    Set<Integer> returned = new HashSet<>();
    for (int j : top.items()) {
      returned.add(j);
    }
    for (int j = 0; j < ITEMS; j++) {
      if (j != item && !returned.contains(j)) {
        assertTrue(cos[j] <= top.scores()[4] + 1e-4, "item " + j + " was skipped");
      }
    }
  }

  @Test
  void rankingMetricsAgreeWithRecommend() {
    int k = 5;
    RankingMetrics m = model.rankingMetrics(split.train(), split.test(), k);
    SparseMatrix.Compressed test = split.test().toCsr();
    double precision = 0;
    double recall = 0;
    int counted = 0;
    for (int u = 0; u < USERS; u++) {
      int from = (int) test.offsets()[u];
      int to = (int) test.offsets()[u + 1];
      if (from == to) {
        continue;
      }
      Set<Integer> held = new HashSet<>();
      for (int t = from; t < to; t++) {
        held.add(test.indices()[t]);
      }
      int hits = 0;
      for (int item : model.recommend(u, k, split.train()).items()) {
        hits += held.contains(item) ? 1 : 0;
      }
      precision += (double) hits / k;
      recall += (double) hits / held.size();
      counted++;
    }
    assertEquals(precision / counted, m.precision(), 1e-9);
    assertEquals(recall / counted, m.recall(), 1e-9);
    assertTrue(m.ndcg() >= 0 && m.ndcg() <= 1 && m.map() >= 0 && m.map() <= 1, m.toString());
  }

  @Test
  void saveAndLoadGiveAnIdenticalModel(@TempDir Path dir) throws IOException {
    for (Model original : new Model[] {model, biased}) {
      Path file = dir.resolve("model.sfm");
      original.save(file);
      try (Model loaded = Model.load(ctx, file)) {
        assertEquals(original.algorithm(), loaded.algorithm());
        assertArrayEquals(original.userFactorsFlat(), loaded.userFactorsFlat());
        assertArrayEquals(original.itemFactorsFlat(), loaded.itemFactorsFlat());
        assertEquals(original.biases().isPresent(), loaded.biases().isPresent());
        if (original.biases().isPresent()) {
          assertArrayEquals(original.biases().get().itemBiases(),
              loaded.biases().get().itemBiases());
          assertEquals(original.biases().get().globalMean(), loaded.biases().get().globalMean());
        }
        int[] users = {0, 1, 2, 250};
        int[] items = {0, 10, 100, 199};
        assertArrayEquals(original.predict(users, items), loaded.predict(users, items));
      }
    }
    Path libmf = dir.resolve("model.libmf");
    model.exportLibmf(libmf);
    List<String> lines = Files.readAllLines(libmf);
    assertTrue(lines.stream().filter(l -> l.startsWith("p")).count() == USERS, "P lines");
    assertTrue(lines.stream().filter(l -> l.startsWith("q")).count() == ITEMS, "Q lines");

    // Truncated and foreign files are errors, never crashes.
    Path good = dir.resolve("good.sfm");
    model.save(good);
    byte[] bytes = Files.readAllBytes(good);
    Path truncated = dir.resolve("truncated.sfm");
    Files.write(truncated, java.util.Arrays.copyOf(bytes, bytes.length / 2));
    SparsefacException t = assertThrows(SparsefacException.class, () -> Model.load(ctx, truncated));
    assertTrue(t.status() == Status.PARSE || t.status() == Status.IO, t.getMessage());
    Path corrupted = dir.resolve("corrupted.sfm");
    bytes[bytes.length - 9] ^= 0x40;
    Files.write(corrupted, bytes);
    assertEquals(Status.PARSE,
        assertThrows(SparsefacException.class, () -> Model.load(ctx, corrupted)).status());
    Path foreign = dir.resolve("foreign.sfm");
    Files.writeString(foreign, "definitely not a model\n");
    assertEquals(Status.PARSE,
        assertThrows(SparsefacException.class, () -> Model.load(ctx, foreign)).status());
    assertEquals(Status.IO,
        assertThrows(SparsefacException.class, () -> model.save(dir.resolve("no/such/dir.sfm")))
            .status());
  }

  @Test
  void foldInReproducesATrainingUser() {
    SparseMatrix ratings = split.train();
    TrainOptions options = TrainOptions.builder(Algorithm.ALS).rank(RANK).build();
    try (Trainer trainer = new Trainer(ctx, ratings, options)) {
      trainer.run(5);
      try (Model before = trainer.model()) {
        trainer.run(1);
        try (Model after = trainer.model()) {
          // The next epoch's user half-sweep solves every user against before's item factors:
          // exactly what a fold-in of that user's ratings computes.
          float[] next = after.userFactorsFlat();
          for (int u : new int[] {0, 3, 77, 150, 299}) {
            int from = (int) train.offsets()[u];
            int to = (int) train.offsets()[u + 1];
            int[] items = java.util.Arrays.copyOfRange(train.indices(), from, to);
            float[] values = java.util.Arrays.copyOfRange(train.values(), from, to);
            FoldIn f = before.foldIn(items, values);
            assertTrue(Float.isNaN(f.bias()));
            double diff = 0;
            double norm = 0;
            for (int k = 0; k < RANK; k++) {
              diff += Math.pow(f.factors()[k] - next[u * RANK + k], 2);
              norm += Math.pow(next[u * RANK + k], 2);
            }
            assertTrue(Math.sqrt(diff / norm) < 1e-3,
                "user " + u + ": relative difference " + Math.sqrt(diff / norm));

            float[] unchanged = before.userFactorsFlat();
            FoldIn stored = before.recalculateUser(u, items, values);
            assertArrayEquals(f.factors(), stored.factors());
            float[] now = before.userFactorsFlat();
            for (int k = 0; k < RANK; k++) {
              assertEquals(stored.factors()[k], now[u * RANK + k]);
              unchanged[u * RANK + k] = now[u * RANK + k];
            }
            assertArrayEquals(unchanged, now, "only user " + u + "'s row changes");
          }
        }
      }
    }
    SparsefacException e = assertThrows(SparsefacException.class,
        () -> model.foldIn(new int[] {0, ITEMS}, new float[] {1f, 2f}));
    assertEquals(Status.OUT_OF_RANGE, e.status());
    assertEquals(Status.SHAPE_MISMATCH, assertThrows(SparsefacException.class,
        () -> model.foldIn(new int[] {0, 1}, new float[] {1f})).status());
    assertEquals(Status.INVALID_VALUE, assertThrows(SparsefacException.class,
        () -> model.foldIn(new int[] {0}, new float[] {Float.NaN})).status());
  }

  @Test
  void readsRunConcurrentlyAndTrainingWorksOnAnyThread() throws Exception {
    int[] users = new int[USERS];
    int[] items = new int[USERS];
    for (int u = 0; u < USERS; u++) {
      users[u] = u;
      items[u] = (u * 7) % ITEMS;
    }
    float[] expected = model.predict(users, items);
    List<int[]> expectedTop = model.recommend(users, 5, split.train(), null).stream()
                                  .map(TopItems::items).toList();
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
    try {
      List<java.util.concurrent.Future<Boolean>> results = new java.util.ArrayList<>();
      for (int t = 0; t < 4; t++) {
        results.add(pool.submit(() -> {
          for (int r = 0; r < 50; r++) {
            if (!java.util.Arrays.equals(expected, model.predict(users, items))) {
              return false;
            }
            List<TopItems> top = model.recommend(users, 5, split.train(), null);
            for (int u = 0; u < USERS; u++) {
              if (!java.util.Arrays.equals(expectedTop.get(u), top.get(u).items())) {
                return false;
              }
            }
          }
          return true;
        }));
      }
      // A listener runs on whichever thread trains.
      java.util.concurrent.Future<Thread> trainedOn = pool.submit(() -> {
        Thread[] seen = new Thread[1];
        try (Model m = Model.train(ctx, split.train(),
                 TrainOptions.builder(Algorithm.ALS).rank(2).iterations(2).listener(e -> {
                   seen[0] = Thread.currentThread();
                   return false;
                 }).build())) {
          assertEquals(2, m.rank());
        }
        return seen[0];
      });
      for (java.util.concurrent.Future<Boolean> r : results) {
        assertTrue(r.get(), "a concurrent read disagreed with the single-threaded result");
      }
      Thread trainer = trainedOn.get();
      assertTrue(trainer != null && trainer != Thread.currentThread());
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void settingFactorsChangesPredictions() {
    try (Model copy = Model.load(ctx, saved())) {
      float[][] p = copy.userFactors();
      float[][] q = copy.itemFactors();
      for (float[] row : p) {
        java.util.Arrays.fill(row, 1f);
      }
      for (float[] row : q) {
        java.util.Arrays.fill(row, 0.5f);
      }
      copy.setUserFactors(p);
      copy.setItemFactors(q);
      assertEquals(RANK * 0.5f, copy.predict(3, 4), 1e-6);
      assertEquals(Status.SHAPE_MISMATCH, assertThrows(SparsefacException.class,
          () -> copy.setUserFactors(new float[3])).status());
      float[] nan = new float[ITEMS * RANK];
      nan[5] = Float.NaN;
      assertEquals(Status.INVALID_VALUE,
          assertThrows(SparsefacException.class, () -> copy.setItemFactors(nan)).status());
    }
  }

  private Path saved() {
    try {
      Path file = Files.createTempFile("sparsefac-model", ".sfm");
      file.toFile().deleteOnExit();
      model.save(file);
      return file;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
