package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** Contexts, closing, and objects outliving what created them. */
class LifecycleTest {
  @Test
  void contextReportsItsSettings() {
    try (Context ctx = Context.builder().backend(Backend.CPU).threads(1).seed(1234).build()) {
      assertEquals(Backend.CPU, ctx.backend());
      assertEquals(1, ctx.threads());
      assertEquals(1234, ctx.seed());
      assertTrue(ctx.deviceName().startsWith("CPU"), ctx.deviceName());
      ctx.synchronize();
    }
    try (Context auto = Context.create()) {
      assertFalse(auto.backend() == Backend.AUTO, "AUTO resolves to a real backend");
    }
    // Seeds are 64-bit patterns: the top bit survives the trip through Java's signed long.
    try (Context big = Context.cpu(1, -1L)) {
      assertEquals(-1L, big.seed());
    }
    assertTrue(Context.libraryVersion().matches("\\d+\\.\\d+\\.\\d+"), Context.libraryVersion());
    assertTrue(Context.buildInfo().contains(Context.libraryVersion()), Context.buildInfo());
    assertTrue(Context.cudaDeviceCount() >= 0);
  }

  @Test
  void cudaWithoutADeviceIsAClearError() {
    if (Context.cudaDeviceCount() > 0) {
      return; // covered by the C tests on GPU machines
    }
    SparsefacException e = assertThrows(SparsefacException.class,
        () -> Context.builder().backend(Backend.CUDA).build());
    assertTrue(e.status() == Status.UNSUPPORTED || e.status() == Status.DEVICE, e.getMessage());
    assertFalse(e.getMessage().isEmpty());
    assertEquals(Status.INVALID_ARGUMENT, assertThrows(SparsefacException.class,
        () -> Context.builder().threads(-3).build()).status());
  }

  @Test
  void cpuContextsHaveNoStream() {
    try (Context ctx = Context.cpu(1, 0)) {
      assertEquals(0L, ctx.stream());
      ctx.setStream(0);
      SparsefacException e = assertThrows(SparsefacException.class, () -> ctx.setStream(0x1234L));
      assertEquals(Status.UNSUPPORTED, e.status());
      assertTrue(e.getMessage().contains("no device streams"), e.getMessage());
      assertEquals(0L, ctx.stream());
    }
  }

  @Test
  void cudaContextStream() {
    assumeTrue(Context.cudaDeviceCount() > 0, "no CUDA device");
    try (Context gpu = Context.builder().backend(Backend.CUDA).build()) {
      long own = gpu.stream();
      assertTrue(own != 0L, "a CUDA context has a stream of its own");
      gpu.setStream(own); // its own stream, by handle
      gpu.setStream(0);
      assertEquals(own, gpu.stream());
    }
  }

  @Test
  void everyUseAfterCloseThrowsIllegalState() {
    Context ctx = Context.cpu(1, 0);
    SparseMatrix m = SparseMatrix.fromCoo(ctx, 2, 2, new int[] {0}, new int[] {1}, null);
    DenseMatrix d = DenseMatrix.zeros(ctx, 2, 1);
    Model model;
    try (Data.Synthetic data =
             Data.synthesize(ctx, Data.Feedback.EXPLICIT, 20, 10, 100, 2, 0.1, 0.0)) {
      model = Model.train(ctx, data.ratings(),
          TrainOptions.builder(Algorithm.ALS).rank(2).iterations(1).build());
    }
    Trainer trainer;
    try (SparseMatrix r = SparseMatrix.fromCoo(ctx, 2, 2, new int[] {0, 1}, new int[] {1, 0},
             new float[] {1f, 2f})) {
      trainer = new Trainer(ctx, r, TrainOptions.builder(Algorithm.ALS).rank(1).build());
    }
    // Matrices, models and trainers keep what they need alive: the context can go first.
    ctx.close();
    assertTrue(ctx.isClosed());
    assertEquals(1, m.nnz());
    assertEquals(2, d.rows());
    assertEquals(2, model.rank());
    assertEquals(1, trainer.run(1), "the trainer kept its ratings");

    m.close();
    d.close();
    model.close();
    trainer.close();
    // Closing twice is harmless.
    m.close();
    ctx.close();
    trainer.close();

    assertThrows(IllegalStateException.class, ctx::threads);
    assertThrows(IllegalStateException.class, ctx::stream);
    assertThrows(IllegalStateException.class, () -> ctx.setStream(0));
    assertThrows(IllegalStateException.class, m::nnz);
    assertThrows(IllegalStateException.class, m::toCoo);
    assertThrows(IllegalStateException.class, d::toArray);
    assertThrows(IllegalStateException.class, () -> model.predict(0, 0));
    assertThrows(IllegalStateException.class, () -> model.save(java.nio.file.Path.of("x.sfm")));
    assertThrows(IllegalStateException.class, () -> trainer.run(1));
    assertThrows(IllegalStateException.class,
        () -> SparseMatrix.fromCoo(ctx, 1, 1, new int[0], new int[0], null));
    try (Context live = Context.cpu(1, 0);
        DenseMatrix a = DenseMatrix.zeros(live, 2, 1)) {
      IllegalStateException closedInput = assertThrows(IllegalStateException.class,
          () -> Sddmm.compute(live, Sddmm.Mode.SCALED, a, d, m));
      assertTrue(closedInput.getMessage().contains("closed"), closedInput.getMessage());
      // A closed validation matrix is caught before anything reaches the library.
      TrainOptions.Builder b = TrainOptions.builder(Algorithm.ALS).validation(m);
      assertThrows(IllegalStateException.class, b::build);
    }
  }

  @Test
  void closingWhatARunningCallUsesRetiresItAfterTheCall() {
    try (Data.Synthetic data = synthetic()) {
      Context ctx = Context.cpu(1, 3);
      SparseMatrix ratings = data.ratings().withValues(data.ratings().values());
      Trainer[] trainer = new Trainer[1];
      int[] epochs = {0};
      // The listener closes the context, the ratings and the trainer itself mid-run: the run
      // finishes its epoch with them, and only later uses fail.
      TrainOptions options = TrainOptions.builder(Algorithm.ALS).rank(2).listener(e -> {
        epochs[0]++;
        ctx.close();
        ratings.close();
        trainer[0].close();
        return false;
      }).build();
      trainer[0] = new Trainer(ctx, ratings, options);
      assertEquals(1, trainer[0].run(1));
      assertEquals(1, epochs[0]);
      assertTrue(trainer[0].isClosed() && ratings.isClosed() && ctx.isClosed());
      assertThrows(IllegalStateException.class, () -> trainer[0].run(1));
      assertThrows(IllegalStateException.class, ratings::nnz);

      // The same with one-shot training: the model still comes back.
      SparseMatrix again = data.ratings().withValues(null);
      try (Context live = Context.cpu(1, 3);
          Model m = Model.train(live, again, TrainOptions.builder(Algorithm.ALS).rank(2)
                                                 .iterations(2).listener(e -> {
                                                   again.close();
                                                   return false;
                                                 }).build())) {
        assertEquals(2, m.rank());
      }
      assertTrue(again.isClosed());
    }
  }

  private static Data.Synthetic synthetic() {
    try (Context ctx = Context.cpu(1, 0)) {
      return Data.synthesize(ctx, Data.Feedback.EXPLICIT, 30, 20, 200, 2, 0.1, 0.0);
    }
  }

  @Test
  void outputsAreCopiesAndInputsAreCopiedIn() {
    try (Context ctx = Context.cpu(1, 0)) {
      float[] values = {1f, 2f};
      try (SparseMatrix m = SparseMatrix.fromCoo(ctx, 2, 2, new int[] {0, 1}, new int[] {0, 1},
               values)) {
        values[0] = 100f; // the library copied the input
        float[] out = m.values();
        assertArrayEquals(new float[] {1f, 2f}, out);
        out[1] = -5f; // and hands out copies
        assertArrayEquals(new float[] {1f, 2f}, m.values());
      }
    }
  }
}
