package org.sparsefac;

/**
 * Called after every training epoch, on the training thread. Return true to go on, false to stop
 * early (training then ends successfully). An exception thrown here aborts training: the call
 * fails with a {@link SparsefacException} of status {@link Status#CALLBACK} whose cause is that
 * exception.
 */
@FunctionalInterface
public interface EpochListener {
  boolean onEpoch(EpochStats stats);
}
