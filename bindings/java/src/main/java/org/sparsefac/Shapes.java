package org.sparsefac;

/** Length and shape checks done in Java, where the arrays' lengths are known. */
final class Shapes {
  private Shapes() {}

  static int length(long n, String what) {
    if (n < 0 || n > Integer.MAX_VALUE - 8) {
      throw new SparsefacException(Status.OUT_OF_RANGE,
          what + " = " + n + " does not fit in a Java array");
    }
    return (int) n;
  }

  /**
   * The capacity, in elements, to pass with arrays a native call writes into: the length of the
   * shortest non-null one (0 when all are null, which the library then ignores). Always the real
   * length of what is passed, so the library's capacity check guards the JNI buffers.
   */
  static long capacity(Object... arrays) {
    long capacity = -1;
    for (Object array : arrays) {
      if (array != null) {
        int length = java.lang.reflect.Array.getLength(array);
        capacity = capacity < 0 ? length : Math.min(capacity, length);
      }
    }
    return Math.max(capacity, 0);
  }

  static void requireLength(Object array, int length, String name, String expected) {
    int actual = java.lang.reflect.Array.getLength(array);
    if (actual != length) {
      throw new SparsefacException(Status.SHAPE_MISMATCH,
          name + " has " + actual + " entries, expected " + length + " (" + expected + ")");
    }
  }

  /** Row-major copy of a rectangular float[rows][cols]. */
  static float[] flatten(float[][] rows, int cols, String name) {
    float[] flat = new float[length((long) rows.length * cols, name + " size")];
    for (int i = 0; i < rows.length; i++) {
      if (rows[i] == null || rows[i].length != cols) {
        throw new SparsefacException(Status.SHAPE_MISMATCH, name + "[" + i + "] has "
            + (rows[i] == null ? "no" : Integer.toString(rows[i].length)) + " entries, expected "
            + cols);
      }
      System.arraycopy(rows[i], 0, flat, i * cols, cols);
    }
    return flat;
  }

  static float[][] unflatten(float[] flat, int rows, int cols) {
    float[][] out = new float[rows][];
    for (int i = 0; i < rows; i++) {
      out[i] = java.util.Arrays.copyOfRange(flat, i * cols, (i + 1) * cols);
    }
    return out;
  }
}
