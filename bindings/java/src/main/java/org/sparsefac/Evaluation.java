package org.sparsefac;

/** Rating-prediction error on a set of ratings. */
public record Evaluation(double rmse, double mae) {}
