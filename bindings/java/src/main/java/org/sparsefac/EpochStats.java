package org.sparsefac;

/**
 * Progress after one training epoch: epoch counts from 1; trainLoss is the objective on the
 * training ratings (regularization included); validationRmse is NaN without a validation matrix.
 */
public record EpochStats(int epoch, double trainLoss, double validationRmse, double seconds) {}
