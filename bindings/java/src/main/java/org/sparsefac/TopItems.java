package org.sparsefac;

/**
 * The best items for one query (a user for recommend, an item for similarItems), best first:
 * items[r] scored scores[r]. Fewer than n entries when there were fewer candidates.
 */
public record TopItems(int query, int[] items, float[] scores) {
  public int size() {
    return items.length;
  }
}
