package org.sparsefac;

/** Options of {@link SparseMatrix#read}. */
public enum ReadOption {
  /** Ids in triplet, MovieLens and CSV files start at 1 (Matrix Market always does). */
  ONE_BASED(sfac_read_flags.SFAC_READ_ONE_BASED),
  /** Repeated (row, col) entries are summed instead of being an error. */
  SUM_DUPLICATES(sfac_sparse_flags.SFAC_SPARSE_SUM_DUPLICATES);

  final int flag;

  ReadOption(int flag) {
    this.flag = flag;
  }

  static int flags(ReadOption... options) {
    int flags = 0;
    for (ReadOption o : options) {
      flags |= java.util.Objects.requireNonNull(o, "read option").flag;
    }
    return flags;
  }
}
