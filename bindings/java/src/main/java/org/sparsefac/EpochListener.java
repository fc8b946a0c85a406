package org.sparsefac;

/**
 * Called after every training epoch, on the training thread. Return true to stop early (training
 * then ends successfully), false to go on, as the epoch callbacks of the C API and of the Python,
 * Go and R bindings do. An exception thrown here aborts training: the call
 * fails with a {@link SparsefacException} of status {@link Status#CALLBACK} whose cause is that
 * exception.
 */
@FunctionalInterface
public interface EpochListener {
  boolean onEpoch(EpochStats stats);
}
