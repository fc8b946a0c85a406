package org.sparsefac;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads libsparsefac_jni.so once: from java.library.path when it is there (a build tree or an
 * installed library), else from the copy bundled in the jar, extracted next to the libsparsefac
 * it was built against (the JNI library finds it through its $ORIGIN run path, and it is loaded
 * first so the soname is already resolved).
 */
final class NativeLibrary {
  static final String JNI_NAME = "sparsefac_jni";
  private static final String[] BUNDLED = {"libsparsefac.so.0", "libsparsefac_jni.so"};
  private static boolean loaded;

  private NativeLibrary() {}

  static synchronized void load() {
    if (loaded) {
      return;
    }
    try {
      System.loadLibrary(JNI_NAME);
    } catch (UnsatisfiedLinkError fromPath) {
      try {
        loadBundled();
      } catch (IOException | UnsatisfiedLinkError fromJar) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(
            "libsparsefac: cannot load " + System.mapLibraryName(JNI_NAME)
                + " from java.library.path (" + fromPath.getMessage() + ") nor from the jar ("
                + fromJar.getMessage() + ")");
        error.addSuppressed(fromPath);
        error.addSuppressed(fromJar);
        throw error;
      }
    }
    loaded = true;
  }

  /** The jar's resource folder for this platform, e.g. /org/sparsefac/native/linux-x86_64/. */
  static String platformFolder() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x86_64")) {
      arch = "x86_64";
    } else if (arch.equals("arm64")) {
      arch = "aarch64";
    }
    String system = os.startsWith("linux") ? "linux" : os.replaceAll("[^a-z0-9]", "");
    return "/org/sparsefac/native/" + system + "-" + arch + "/";
  }

  private static void loadBundled() throws IOException {
    String folder = platformFolder();
    Path dir = Files.createTempDirectory("sparsefac-jni-");
    try {
      Path[] files = new Path[BUNDLED.length];
      for (int i = 0; i < BUNDLED.length; i++) {
        try (InputStream in = NativeLibrary.class.getResourceAsStream(folder + BUNDLED[i])) {
          if (in == null) {
            throw new IOException("the jar has no " + folder + BUNDLED[i]);
          }
          files[i] = dir.resolve(BUNDLED[i]);
          Files.copy(in, files[i], StandardCopyOption.REPLACE_EXISTING);
        }
      }
      for (Path file : files) {
        System.load(file.toAbsolutePath().toString());
      }
    } finally {
      // Mapped libraries stay usable once unlinked, so nothing is left behind in /tmp.
      for (String name : BUNDLED) {
        Files.deleteIfExists(dir.resolve(name));
      }
      Files.deleteIfExists(dir);
    }
  }
}
