package org.sparsefac;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The cross-language model protocol shared by every binding (ctest xlang_save_java /
 * xlang_load_java, directory $SFAC_XLANG_DIR). save: a deterministic ALS model and the float32
 * bit patterns of its predictions for users 0..9 x items 0..9. load: every language's model
 * predicts exactly those bits here.
 */
@Tag("xlang")
class CrossLanguageTest {
  static Path dir() {
    String dir = System.getenv("SFAC_XLANG_DIR");
    assertTrue(dir != null && !dir.isEmpty(), "SFAC_XLANG_DIR is not set");
    return Path.of(dir);
  }

  static int[][] pairs() {
    int[] users = new int[100];
    int[] items = new int[100];
    for (int u = 0; u < 10; u++) {
      for (int i = 0; i < 10; i++) {
        users[u * 10 + i] = u;
        items[u * 10 + i] = i;
      }
    }
    return new int[][] {users, items};
  }

  @Test
  void save() throws IOException {
    Path dir = dir();
    Files.createDirectories(dir);
    try (Context ctx = Context.cpu(1, 7);
        Data.Synthetic data =
            Data.synthesize(ctx, Data.Feedback.EXPLICIT, 300, 200, 6000, 4, 0.1, 0.0);
        Model model = Model.train(ctx, data.ratings(), TrainOptions.builder(Algorithm.ALS)
                                                           .rank(4)
                                                           .iterations(5)
                                                           .deterministic(true)
                                                           .build())) {
      model.save(dir.resolve("java.sfm"));
      int[][] pairs = pairs();
      float[] scores = model.predict(pairs[0], pairs[1]);
      StringBuilder out = new StringBuilder();
      for (int t = 0; t < scores.length; t++) {
        out.append(pairs[0][t]).append(' ').append(pairs[1][t]).append(' ')
            .append(Integer.toUnsignedString(Float.floatToRawIntBits(scores[t]))).append('\n');
      }
      Files.writeString(dir.resolve("java.pred"), out);
    }
  }

  @Test
  void load() throws IOException {
    List<Path> models = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir(), "*.sfm")) {
      files.forEach(models::add);
    }
    assertFalse(models.isEmpty(), "no *.sfm in " + dir());
    int[][] pairs = pairs();
    try (Context ctx = Context.cpu(1, 0)) {
      for (Path file : models) {
        String name = file.getFileName().toString();
        Path pred = file.resolveSibling(name.substring(0, name.length() - 4) + ".pred");
        List<String> lines = Files.readAllLines(pred);
        assertEquals(100, lines.size(), pred + " lines");
        try (Model model = Model.load(ctx, file)) {
          float[] scores = model.predict(pairs[0], pairs[1]);
          for (int t = 0; t < 100; t++) {
            String[] f = lines.get(t).trim().split("\\s+");
            assertEquals(3, f.length, pred + ":" + (t + 1));
            int u = Integer.parseInt(f[0]);
            int i = Integer.parseInt(f[1]);
            int bits = Integer.parseUnsignedInt(f[2]);
            float mine = model.predict(u, i);
            assertEquals(bits, Float.floatToRawIntBits(mine), name + ": (" + u + ", " + i
                + ") predicted " + mine + ", its writer " + Float.intBitsToFloat(bits));
            if (u == pairs[0][t] && i == pairs[1][t]) {
              assertEquals(mine, scores[t], 0f, "batch and single predictions agree");
            }
          }
        }
        System.out.println("xlang: " + name + " matches its 100 predictions");
      }
    }
  }
}
