package org.sparsefac;

/**
 * A sparse matrix in the BALS tiled layout (docs/bals-format.md), as
 * {@link SparseMatrix#toBals} returns it and {@link SparseMatrix#fromBals} takes it. The
 * (reordered) matrix is cut into tiles of {@code tileRows x tileCols}, numbered row-major; row r
 * of tile t is segment {@code s = t * tileRows + r}.
 *
 * @param tileRows rows per tile (>= 1)
 * @param tileCols columns per tile (>= 1)
 * @param tilePtr tiles + 1 offsets of each tile's slice of {@code tileCol}
 * @param tileCol each tile's distinct (reordered) global columns, in order of first appearance;
 *     may be null when {@code tilePtr[tiles] == 0}
 * @param segPtr tiles * tileRows + 1 offsets of each segment in {@code segCol} and
 *     {@code values}
 * @param segCol nnz local columns: each nonzero's position in its tile's slice of
 *     {@code tileCol}; may be null when nnz is 0
 * @param values nnz values, tile by tile, segment by segment; null = all ones
 * @param rowOrder rows entries: the original row of each reordered row; null = identity
 * @param colOrder cols entries: the original column of each reordered column; null = identity
 */
public record Bals(long tileRows, long tileCols, long[] tilePtr, int[] tileCol, long[] segPtr,
    int[] segCol, float[] values, int[] rowOrder, int[] colOrder) {
  /** The number of tiles: {@code tilePtr.length - 1}. */
  public int tiles() {
    return tilePtr.length - 1;
  }

  /** The number of nonzeros: the last entry of {@code segPtr}. */
  public long nnz() {
    return segPtr[segPtr.length - 1];
  }
}
