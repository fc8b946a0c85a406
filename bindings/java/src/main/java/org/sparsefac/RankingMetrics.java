package org.sparsefac;

/** Top-k ranking quality averaged over the users with held-out items. */
public record RankingMetrics(int k, double precision, double recall, double ndcg, double map) {}
