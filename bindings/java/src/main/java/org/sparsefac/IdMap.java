package org.sparsefac;

import java.util.HashMap;
import java.util.Map;

/**
 * The original ids of a file's rows or columns: index i of the matrix is id {@link #id(int)},
 * ids in ascending order. A plain Java value (no native resources).
 */
public final class IdMap {
  private final long[] ids;
  private final Map<Long, Integer> index;

  IdMap(long[] ids) {
    this.ids = ids;
    this.index = new HashMap<>(ids.length * 2);
    for (int i = 0; i < ids.length; i++) {
      index.put(ids[i], i);
    }
  }

  public int size() {
    return ids.length;
  }

  /** The file's id of matrix index {@code index}. */
  public long id(int index) {
    return ids[index];
  }

  /** The matrix index of a file id, or -1 when the id was not in the file. */
  public int indexOf(long id) {
    return index.getOrDefault(id, -1);
  }

  /** All ids, by matrix index (a copy). */
  public long[] ids() {
    return ids.clone();
  }

  /** Reads a native map into Java and frees it. */
  static IdMap take(long map) {
    try {
      long[] size = new long[1];
      SparsefacException.check(Native.sfac_idmap_get_size(map, size));
      long[] ids = new long[Shapes.length(size[0], "id map size")];
      SparsefacException.check(Native.sfac_idmap_get_ids(map, ids, ids.length));
      return new IdMap(ids);
    } finally {
      Native.sfac_idmap_destroy(map);
    }
  }
}
