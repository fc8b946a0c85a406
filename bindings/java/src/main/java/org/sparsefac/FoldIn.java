package org.sparsefac;

/** A user's factors solved against fixed item factors; bias is NaN for a model without biases. */
public record FoldIn(float[] factors, float bias) {}
