package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class TrainingTest {
  static final double NOISE = 0.5;

  @Test
  void alsHeldOutRmseIsNearThePlantedNoise() {
    List<EpochStats> epochs = new ArrayList<>();
    try (Context ctx = Context.cpu(2, 5);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 1000, 600, 60_000, 4, NOISE, 0.3);
        Data.Split split = Data.splitRandom(data.ratings(), 0.1, 3)) {
      assertEquals(1000, split.train().rows());
      assertEquals(split.train().nnz() + split.test().nnz(), data.ratings().nnz());
      TrainOptions options = TrainOptions.builder(Algorithm.ALS)
                                 .rank(4)
                                 .iterations(8)
                                 .lambda(0.02)
                                 .validation(split.test())
                                 .listener(s -> {
                                   epochs.add(s);
                                   return false;
                                 })
                                 .build();
      try (Model model = Model.train(ctx, split.train(), options)) {
        assertEquals(Algorithm.ALS, model.algorithm());
        assertEquals(1000, model.users());
        assertEquals(600, model.items());
        assertEquals(4, model.rank());
        double rmse = model.evaluate(split.test()).rmse();
        System.out.printf("ALS held-out RMSE %.4f (planted noise %.2f)%n", rmse, NOISE);
        assertTrue(rmse < 1.1 * NOISE, "held-out RMSE " + rmse + " vs noise " + NOISE);
        assertTrue(rmse > 0.9 * NOISE, "below the noise floor is impossible: " + rmse);
        assertTrue(model.evaluate(split.train()).rmse() < rmse, "training error below held-out");

        assertEquals(8, epochs.size());
        for (int e = 0; e < epochs.size(); e++) {
          assertEquals(e + 1, epochs.get(e).epoch());
          assertTrue(epochs.get(e).seconds() >= 0);
        }
        assertEquals(rmse, epochs.get(7).validationRmse(), 1e-6);
        assertTrue(epochs.get(7).validationRmse() < epochs.get(0).validationRmse());
      }
    }
  }

  @Test
  void sgdAndImplicitAlsLearn() {
    try (Context ctx = Context.cpu(2, 9);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 500, 300, 30_000, 4, 0.3, 0.0);
        Data.Split split = Data.splitRandom(data.ratings(), 0.1, 4);
        Model sgd = Model.train(ctx, split.train(),
            TrainOptions.builder(Algorithm.SGD).rank(4).iterations(30).lambda(0.02).build())) {
      double rmse = sgd.evaluate(split.test()).rmse();
      System.out.printf("SGD held-out RMSE %.4f (planted noise 0.30)%n", rmse);
      // Planted dot products have unit variance: predicting 0 would score about 1.04.
      assertTrue(rmse < 1.2 * 0.3, "SGD held-out RMSE " + rmse + " vs noise 0.3");
    }
    try (Context ctx = Context.cpu(2, 9);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.IMPLICIT, 500, 400, 30_000, 4, 1.0, 0.0);
        Data.Split split = Data.splitLeaveKOut(data.ratings(), 2, 5);
        Model ials = Model.train(ctx, split.train(),
            TrainOptions.builder(Algorithm.IALS).rank(4).iterations(10).build())) {
      assertEquals(Algorithm.IALS, ials.algorithm());
      RankingMetrics m = ials.rankingMetrics(split.train(), split.test(), 10);
      // A random ranking finds each held-out item with probability 10 / (unseen items).
      SparseMatrix.Compressed train = split.train().toCsr();
      SparseMatrix.Compressed test = split.test().toCsr();
      double random = 0;
      int users = 0;
      for (int u = 0; u < 500; u++) {
        if (test.offsets()[u + 1] > test.offsets()[u]) {
          random += 10.0 / (400 - (train.offsets()[u + 1] - train.offsets()[u]));
          users++;
        }
      }
      random /= users;
      System.out.printf("IALS recall@10 %.4f, random ranking %.4f%n", m.recall(), random);
      assertTrue(m.recall() > 3 * random, "implicit ALS " + m + ", random recall " + random);
    }
  }

  @Test
  void listenerStopsEarlyAndTrainerCountsEpochs() {
    try (Context ctx = Context.cpu(1, 2);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 100, 80, 2000, 3, 0.1, 0.0)) {
      List<Integer> seen = new ArrayList<>();
      TrainOptions stopAtThree = TrainOptions.builder(Algorithm.ALS)
                                     .rank(3)
                                     .iterations(10)
                                     .listener(s -> {
                                       seen.add(s.epoch());
                                       return s.epoch() >= 3;  // stop
                                     })
                                     .build();
      try (Model m = Model.train(ctx, data.ratings(), stopAtThree)) {
        assertEquals(List.of(1, 2, 3), seen);
        assertEquals(3, m.rank());
      }
      seen.clear();
      try (Trainer trainer = new Trainer(ctx, data.ratings(), stopAtThree)) {
        assertTrue(Double.isNaN(trainer.loss()), "no loss before the first epoch");
        assertEquals(2, trainer.run(2));
        assertEquals(3, trainer.run(5), "the listener stops at epoch 3");
        assertEquals(3, trainer.epochsDone());
        assertTrue(trainer.loss() > 0 && trainer.loss() < 10, "loss " + trainer.loss());
        try (Model m = trainer.model()) {
          assertEquals(3, m.rank());
        }
      }
      assertEquals(List.of(1, 2, 3), seen);
    }
  }

  @Test
  void aThrowingListenerAbortsTrainingWithItsExceptionAsCause() {
    IllegalStateException boom = new IllegalStateException("listener failed at epoch 2");
    try (Context ctx = Context.cpu(1, 2);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 100, 80, 2000, 3, 0.1, 0.0)) {
      int[] calls = {0};
      TrainOptions options = TrainOptions.builder(Algorithm.SGD)
                                 .rank(3)
                                 .iterations(10)
                                 .listener(s -> {
                                   calls[0]++;
                                   if (s.epoch() == 2) {
                                     throw boom;
                                   }
                                   return false;
                                 })
                                 .build();
      SparsefacException e = assertThrows(SparsefacException.class,
          () -> Model.train(ctx, data.ratings(), options));
      assertEquals(Status.CALLBACK, e.status());
      assertSame(boom, e.getCause());
      assertEquals(2, calls[0], "training stopped at the failing epoch");

      calls[0] = 0;
      try (Trainer trainer = new Trainer(ctx, data.ratings(), options)) {
        SparsefacException again = assertThrows(SparsefacException.class, () -> trainer.run(5));
        assertEquals(Status.CALLBACK, again.status());
        assertSame(boom, again.getCause());
        assertEquals(2, calls[0]);
      }

      // Errors (not only exceptions) are caught too.
      TrainOptions assertion = TrainOptions.builder(Algorithm.ALS)
                                   .rank(3)
                                   .iterations(3)
                                   .listener(s -> {
                                     throw new AssertionError("checked in a listener");
                                   })
                                   .build();
      SparsefacException err = assertThrows(SparsefacException.class,
          () -> Model.train(ctx, data.ratings(), assertion));
      assertTrue(err.getCause() instanceof AssertionError);
    }
  }

  /** True if x is exactly a value of IEEE half precision. */
  static boolean isFloat16(float x) {
    if (Math.abs(x) > 65504f) {
      return false;
    }
    int exponent = Math.max(Math.getExponent(x), -14);  // subnormals: steps of 2^-24
    float scaled = Math.scalb(x, 10 - exponent);  // 10 bits after the leading one
    return scaled == Math.rint(scaled);
  }

  @Test
  void sixteenBitFactorStorageTrainsAls() {
    try (Context ctx = Context.cpu(2, 6);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 300, 200, 20_000, 4, 0.1, 0.0);
        Data.Split split = Data.splitRandom(data.ratings(), 0.2, 5)) {
      Function<DenseMatrix.Storage, TrainOptions> als = storage
          -> TrainOptions.builder(Algorithm.ALS)
                 .rank(4)
                 .iterations(8)
                 .factorStorage(storage)
                 .build();
      try (Model full = Model.train(ctx, split.train(), als.apply(DenseMatrix.Storage.FLOAT32));
          Model half = Model.train(ctx, split.train(), als.apply(DenseMatrix.Storage.FLOAT16));
          Model brain =
              Model.train(ctx, split.train(), als.apply(DenseMatrix.Storage.BFLOAT16))) {
        double fullRmse = full.evaluate(split.test()).rmse();
        double halfRmse = half.evaluate(split.test()).rmse();
        double brainRmse = brain.evaluate(split.test()).rmse();
        System.out.printf("held-out RMSE: float32 storage %.5f, float16 %.5f, bfloat16 %.5f%n",
            fullRmse, halfRmse, brainRmse);
        assertTrue(halfRmse < 1.02 * fullRmse, "float16 " + halfRmse + " vs " + fullRmse);
        assertTrue(brainRmse < 1.05 * fullRmse, "bfloat16 " + brainRmse + " vs " + fullRmse);
        // Every factor is a value of the storage type (and float32 storage is not).
        float[] halfUser = half.userFactorsFlat();
        for (int i = 0; i < halfUser.length; i++) {
          assertTrue(isFloat16(halfUser[i]), "user factor " + i + " = " + halfUser[i]);
        }
        for (float x : brain.userFactorsFlat()) {
          assertEquals(0, Float.floatToRawIntBits(x) & 0xffff, "bfloat16 factor " + x);
        }
        boolean anyWider = false;
        for (float x : full.userFactorsFlat()) {
          anyWider |= !isFloat16(x);
        }
        assertTrue(anyWider, "float32 storage gave float16 values only");
      }
    }
  }

  @Test
  void sixteenBitFactorStorageTrainsSgd() {
    try (Context ctx = Context.cpu(2, 6);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 300, 200, 20_000, 4, 0.1, 0.0);
        Data.Split split = Data.splitRandom(data.ratings(), 0.2, 5)) {
      // Without rating scaling the model's factors are exactly the stored values. Deterministic:
      // the threaded schedule's result depends on timing.
      Function<DenseMatrix.Storage, TrainOptions> sgd = storage
          -> TrainOptions.builder(Algorithm.SGD)
                 .rank(4)
                 .iterations(20)
                 .lambda(0.02)
                 .deterministic(true)
                 .scaleRatings(false)
                 .factorStorage(storage)
                 .build();
      try (Model full = Model.train(ctx, split.train(), sgd.apply(DenseMatrix.Storage.FLOAT32));
          Model half = Model.train(ctx, split.train(), sgd.apply(DenseMatrix.Storage.FLOAT16))) {
        double fullRmse = full.evaluate(split.test()).rmse();
        double halfRmse = half.evaluate(split.test()).rmse();
        System.out.printf("SGD held-out RMSE: float32 storage %.5f, float16 %.5f%n", fullRmse,
            halfRmse);
        assertTrue(halfRmse < 1.05 * fullRmse, "float16 " + halfRmse + " vs " + fullRmse);
        float[] user = half.userFactorsFlat();
        for (int i = 0; i < user.length; i++) {
          assertTrue(isFloat16(user[i]), "user factor " + i + " = " + user[i]);
        }
        float[] item = half.itemFactorsFlat();
        for (int i = 0; i < item.length; i++) {
          assertTrue(isFloat16(item[i]), "item factor " + i + " = " + item[i]);
        }
      }
    }
  }

  @Test
  void sgdWorkersIsACudaSettingTheCpuTrainsWith() {
    try (Context ctx = Context.cpu(2, 3);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 200, 150, 8_000, 3, 0.1, 0.0);
        Model model = Model.train(ctx, data.ratings(),
            TrainOptions.builder(Algorithm.SGD).rank(3).iterations(3).sgdWorkers(64).build())) {
      assertEquals(Algorithm.SGD, model.algorithm());
      assertEquals(3, model.rank());
      assertTrue(Double.isFinite(model.evaluate(data.ratings()).rmse()));
    }
    // 0 (automatic) and the largest count are valid values.
    TrainOptions.builder(Algorithm.SGD).sgdWorkers(0).build();
    TrainOptions.builder(Algorithm.SGD).sgdWorkers(1 << 24).build();
    for (int bad : new int[] {-1, (1 << 24) + 1}) {
      SparsefacException e = assertThrows(SparsefacException.class,
          () -> TrainOptions.builder(Algorithm.SGD).sgdWorkers(bad).build());
      assertEquals(Status.INVALID_ARGUMENT, e.status());
      assertTrue(e.getMessage().contains("SFAC_OPT_SGD_WORKERS (option 203)"), e.getMessage());
    }
  }

  @Test
  void sgdScheduleIsACudaSettingTheCpuTrainsWith() {
    try (Context ctx = Context.cpu(2, 3);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 200, 150, 8_000, 3, 0.1, 0.0)) {
      for (TrainOptions.SgdSchedule schedule : TrainOptions.SgdSchedule.values()) {
        try (Model model = Model.train(ctx, data.ratings(),
                 TrainOptions.builder(Algorithm.SGD).rank(3).iterations(3).sgdSchedule(schedule)
                     .build())) {
          assertEquals(Algorithm.SGD, model.algorithm());
          assertTrue(Double.isFinite(model.evaluate(data.ratings()).rmse()), schedule.name());
        }
      }
    }
    // The enum leaves no invalid value to pass but null, which is named.
    NullPointerException e = assertThrows(NullPointerException.class,
        () -> TrainOptions.builder(Algorithm.SGD).sgdSchedule(null));
    assertEquals("schedule", e.getMessage());
  }

  @Test
  void alsReorderChangesOnlyTheSummationOrder() {
    // Skewed degrees, so that the degree order is far from the identity; implicit (positive)
    // ratings, so that both algorithms train on them.
    try (Context ctx = Context.cpu(2, 4);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.IMPLICIT, 120, 80, 2_000, 3, 1.0, 0.5)) {
      for (Algorithm algorithm : new Algorithm[] {Algorithm.ALS, Algorithm.IALS}) {
        Function<TrainOptions.Reorder, TrainOptions> als = reorder
            -> TrainOptions.builder(algorithm)
                   .rank(3)
                   .iterations(6)
                   .lambda(0.1)
                   .alsReorder(reorder)
                   .build();
        try (Model none = Model.train(ctx, data.ratings(), als.apply(TrainOptions.Reorder.NONE));
            Model degree =
                Model.train(ctx, data.ratings(), als.apply(TrainOptions.Reorder.DEGREE));
            Model auto = Model.train(ctx, data.ratings(), als.apply(TrainOptions.Reorder.AUTO))) {
          assertAgree(none.userFactorsFlat(), degree.userFactorsFlat(), algorithm + " users");
          assertAgree(none.itemFactorsFlat(), degree.itemFactorsFlat(), algorithm + " items");
          // The CPU's automatic choice is no renumbering: the very same sums.
          assertArrayEquals(none.userFactorsFlat(), auto.userFactorsFlat());
        }
      }
    }
    // Agreeing factors alone would not tell a dropped option from a working one.
    for (TrainOptions.Reorder reorder : TrainOptions.Reorder.values()) {
      long options = TrainOptions.builder(Algorithm.ALS).alsReorder(reorder).build().toNative();
      try {
        long[] value = new long[1];
        SparsefacException.check(Native.sfac_train_options_get_int(options,
            sfac_option.SFAC_OPT_ALS_REORDER, value));
        assertEquals(reorder.code, value[0], reorder.name());
      } finally {
        Native.sfac_train_options_destroy(options);
      }
    }
    NullPointerException e = assertThrows(NullPointerException.class,
        () -> TrainOptions.builder(Algorithm.ALS).alsReorder(null));
    assertEquals("reorder", e.getMessage());
  }

  /** Equal up to float rounding: within 1e-4 of the largest magnitude. */
  static void assertAgree(float[] want, float[] got, String what) {
    assertEquals(want.length, got.length, what);
    float scale = 0;
    for (float x : want) {
      scale = Math.max(scale, Math.abs(x));
    }
    for (int i = 0; i < want.length; i++) {
      assertEquals(want[i], got[i], 1e-4 * scale, what + " " + i);
    }
  }

  @Test
  void badOptionsAreRejectedWhenBuilt() {
    SparsefacException rank = assertThrows(SparsefacException.class,
        () -> TrainOptions.builder(Algorithm.ALS).rank(0).build());
    assertEquals(Status.INVALID_ARGUMENT, rank.status());
    assertTrue(rank.getMessage().contains("0 is out of range"), rank.getMessage());
    SparsefacException lambda = assertThrows(SparsefacException.class,
        () -> TrainOptions.builder(Algorithm.ALS).lambda(Double.NaN).build());
    assertFalse(lambda.getMessage().isEmpty());
    try (Context ctx = Context.cpu(1, 0);
        SparseMatrix ratings = SparseMatrix.fromCoo(ctx, 3, 3, new int[] {0, 1},
            new int[] {1, 2}, new float[] {1f, 2f});
        SparseMatrix wrongShape = SparseMatrix.fromCoo(ctx, 4, 3, new int[] {0}, new int[] {1},
            new float[] {1f})) {
      TrainOptions options =
          TrainOptions.builder(Algorithm.ALS).rank(2).validation(wrongShape).build();
      SparsefacException shape = assertThrows(SparsefacException.class,
          () -> Model.train(ctx, ratings, options));
      assertEquals(Status.SHAPE_MISMATCH, shape.status());
    }
  }
}
