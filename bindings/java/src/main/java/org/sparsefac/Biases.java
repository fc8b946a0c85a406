package org.sparsefac;

/** The bias terms of a model trained with {@code useBiases(true)}. */
public record Biases(float globalMean, float[] userBiases, float[] itemBiases) {}
