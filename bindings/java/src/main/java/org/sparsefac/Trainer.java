package org.sparsefac;

import org.sparsefac.NativeHandle.Lease;

/**
 * Step-wise training for callers that own the loop: run some epochs, look at the loss, take a
 * snapshot {@link Model}, run more. Keeps the ratings (and the listener) alive until closed.
 */
public final class Trainer implements AutoCloseable {
  private final Handle trainer;
  private final ListenerState listener;

  private static final class Handle extends NativeHandle {
    Handle(long address) {
      super(address, a -> Native.sfac_trainer_destroy(a), "Trainer");
    }
  }

  public Trainer(Context ctx, SparseMatrix ratings, TrainOptions options) {
    ListenerState state = ListenerState.of(options.listener());
    try (Lease l = NativeHandle.leaseOf(state)) {
      long nativeOptions = options.toNative(l);
      try (Lease c = ctx.lease(); Lease r = ratings.lease()) {
        long[] out = new long[1];
        int code = Native.sfac_trainer_create(c.address, r.address, nativeOptions, out);
        if (code != sfac_status.SFAC_OK) {
          throw ListenerState.failure(code, l);
        }
        this.trainer = new Handle(out[0]);
      } finally {
        Native.sfac_train_options_destroy(nativeOptions);
      }
    } catch (RuntimeException e) {
      if (state != null) {
        state.close();
      }
      throw e;
    }
    this.listener = state;
  }

  /**
   * Runs up to {@code epochs} more epochs (fewer when the listener stops) and returns the total
   * number of epochs run so far.
   */
  public int run(int epochs) {
    try (Lease t = trainer.lease(); Lease l = NativeHandle.leaseOf(listener)) {
      int[] done = new int[1];
      int code = Native.sfac_trainer_run(t.address, epochs, done);
      if (code != sfac_status.SFAC_OK) {
        throw ListenerState.failure(code, l);
      }
      return done[0];
    }
  }

  /** Epochs run so far. */
  public int epochsDone() {
    return run(0);
  }

  /** The objective after the last epoch (per rating, regularization included); NaN before. */
  public double loss() {
    double[] out = new double[1];
    try (Lease t = trainer.lease()) {
      SparsefacException.check(Native.sfac_trainer_get_loss(t.address, out));
    }
    return out[0];
  }

  /** An independent snapshot of the current factors. */
  public Model model() {
    long[] out = new long[1];
    try (Lease t = trainer.lease()) {
      SparsefacException.check(Native.sfac_trainer_get_model(t.address, out));
    }
    return new Model(out[0]);
  }

  public boolean isClosed() {
    return trainer.isClosed();
  }

  @Override
  public void close() {
    trainer.close();
    // The native trainer holds the listener's address; a run still in progress on another thread
    // holds leases on both, so neither is freed before it returns.
    if (listener != null) {
      listener.close();
    }
  }
}
