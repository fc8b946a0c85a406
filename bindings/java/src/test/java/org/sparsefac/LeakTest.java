package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * 10k create/close cycles of every kind of object, listeners included, must not grow the
 * process: resident memory (VmRSS of /proc/self/status) is compared after a warm-up and after the
 * cycles. One cycle allocates about 60 KB of native memory: leaving a single 2000-entry matrix
 * open per cycle grows the process by about 170 MB, far above the bound, which only leaves room
 * for JIT and heap noise (measured: a few MB once warm).
 */
@Tag("leak")
class LeakTest {
  static final int CYCLES = Integer.getInteger("sparsefac.leakCycles", 10_000);
  static final int WARMUP = Integer.getInteger("sparsefac.leakWarmup", 15_000);
  static final long BOUND_KB = 16 * 1024;

  static long rssKb() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmRSS:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    }
    throw new IllegalStateException("no VmRSS in /proc/self/status");
  }

  static final int[] ROWS = new int[2000];
  static final int[] COLS = new int[2000];
  static final float[] VALUES = new float[2000];

  static {
    for (int t = 0; t < ROWS.length; t++) {
      ROWS[t] = t / 20;
      COLS[t] = t % 20 * 3;
      VALUES[t] = 1 + t % 5;
    }
  }

  static Path csv;

  static void cycle(int i) {
    try (Context ctx = Context.cpu(1, i);
        SparseMatrix s = SparseMatrix.fromCoo(ctx, 100, 60, ROWS, COLS, VALUES);
        SparseMatrix p = s.withValues(null);
        DenseMatrix a = DenseMatrix.zeros(ctx, 100, 16);
        DenseMatrix b = DenseMatrix.zeros(ctx, 60, 16);
        Sddmm.Plan plan = Sddmm.plan(ctx, s, 16, Sddmm.Algorithm.AUTO)) {
      Sddmm.compute(ctx, Sddmm.Mode.RESIDUAL, 1f, a, b, s, 0f, p, plan);
      if (i % 10 == 0) {
        // Training with a listener (a JNI global reference each time), one failing with a
        // caught exception, and a trainer.
        TrainOptions options = TrainOptions.builder(Algorithm.ALS).rank(2).iterations(1)
                                   .validation(s).listener(e -> false).build();
        try (Model m = Model.train(ctx, s, options);
            Trainer t = new Trainer(ctx, s, options);
            Model snapshot = t.model()) {
          assertEquals(1, t.run(1));
          m.recommend(0, 3, s);
          snapshot.predict(1, 1);
        }
        TrainOptions failing = TrainOptions.builder(Algorithm.ALS).rank(2).iterations(1)
                                   .listener(e -> {
                                     throw new RuntimeException("cycle " + i);
                                   }).build();
        assertThrows(SparsefacException.class, () -> Model.train(ctx, s, failing));
        // Files with id maps (native maps copied into Java and freed), synthetic data, splits.
        try (LabeledMatrix read = SparseMatrix.readWithIds(ctx, csv, FileFormat.CSV);
            Data.Synthetic data =
                Data.synthesize(ctx, Data.Feedback.EXPLICIT, 50, 40, 400, 2, 0.1, 0.0);
            Data.Split split = Data.splitRandom(data.ratings(), 0.2, i)) {
          assertEquals(3, read.rowIds().size());
          assertEquals(data.ratings().nnz(), split.train().nnz() + split.test().nnz());
        }
        assertThrows(SparsefacException.class,
            () -> SparseMatrix.read(ctx, csv.resolveSibling("missing.csv"), FileFormat.CSV));
      }
      // A rejected input must not leak what the call had allocated so far.
      assertThrows(SparsefacException.class,
          () -> SparseMatrix.fromCoo(ctx, 100, 60, COLS, ROWS, VALUES));
    }
  }

  @Test
  void objectsNobodyClosedAreFreedOnceUnreachable() throws Exception {
    // Each matrix holds ~24 KB of native memory and a few bytes of heap: 10k unclosed ones are
    // ~240 MB unless the Cleaner frees them after the garbage collector finds them unreachable.
    try (Context ctx = Context.cpu(1, 0)) {
      for (int i = 0; i < 2000; i++) {
        SparseMatrix.fromCoo(ctx, 100, 60, ROWS, COLS, VALUES);
      }
      settle();
      long before = rssKb();
      for (int i = 0; i < CYCLES; i++) {
        SparseMatrix.fromCoo(ctx, 100, 60, ROWS, COLS, VALUES).nnz();
        if (i % 500 == 0) {
          System.gc();
        }
      }
      settle();
      long after = rssKb();
      System.out.printf("unclosed: %d matrices, VmRSS %d kB -> %d kB (%+d kB)%n", CYCLES, before,
          after, after - before);
      assertTrue(after - before < BOUND_KB, "VmRSS grew by " + (after - before) + " kB");
    }
  }

  /** Lets the collector find unreachable objects and the Cleaner thread free them. */
  private static void settle() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(100);
    }
  }

  @Test
  void tenThousandCreateCloseCyclesDoNotGrowTheProcess(@TempDir Path dir) throws IOException {
    csv = dir.resolve("ratings.csv");
    Files.writeString(csv, "user,item,rating\n10,1,4\n20,2,3\n30,1,5\n");
    // Resident memory keeps growing for the first ~10k cycles (JIT, heap and allocator
    // warm-up) whatever is leaked or not, then stays flat: measure after that.
    for (int i = 0; i < WARMUP; i++) {
      cycle(i);
    }
    System.gc();
    long before = rssKb();
    long start = System.nanoTime();
    for (int i = 0; i < CYCLES; i++) {
      cycle(i);
    }
    System.gc();
    long after = rssKb();
    System.out.printf("leak test: %d cycles in %.1f s, VmRSS %d kB -> %d kB (%+d kB)%n", CYCLES,
        (System.nanoTime() - start) / 1e9, before, after, after - before);
    assertTrue(after - before < BOUND_KB,
        "VmRSS grew by " + (after - before) + " kB over " + CYCLES + " cycles");
  }
}
