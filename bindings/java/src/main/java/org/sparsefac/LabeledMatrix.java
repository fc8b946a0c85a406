package org.sparsefac;

/**
 * A matrix read with {@link SparseMatrix#readWithIds}: row i is the file's id
 * {@code rowIds().id(i)}, column j is {@code colIds().id(j)}. Closing it closes the matrix.
 */
public record LabeledMatrix(SparseMatrix matrix, IdMap rowIds, IdMap colIds)
    implements AutoCloseable {
  @Override
  public void close() {
    matrix.close();
  }
}
