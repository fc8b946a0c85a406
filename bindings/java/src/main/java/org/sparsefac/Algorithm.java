package org.sparsefac;

/** Matrix factorization algorithms. */
public enum Algorithm {
  /** Explicit-feedback ALS: least squares on the observed ratings. */
  ALS(sfac_algorithm.SFAC_ALGO_ALS),
  /** Implicit-feedback ALS (Hu-Koren-Volinsky): all cells, confidence-weighted. */
  IALS(sfac_algorithm.SFAC_ALGO_IALS),
  /** Stochastic gradient descent on the observed ratings. */
  SGD(sfac_algorithm.SFAC_ALGO_SGD);

  final int code;

  Algorithm(int code) {
    this.code = code;
  }

  static Algorithm of(int code) {
    for (Algorithm a : values()) {
      if (a.code == code) {
        return a;
      }
    }
    throw new SparsefacException(Status.INTERNAL, "unknown algorithm code " + code);
  }
}
