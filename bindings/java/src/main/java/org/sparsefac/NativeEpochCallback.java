package org.sparsefac;

/**
 * What the JNI trampoline calls (method onEpoch, signature (IDDD)I): 0 goes on, a positive value
 * stops early; exceptions are caught by the trampoline and kept for {@link ListenerState}.
 */
final class NativeEpochCallback {
  private final EpochListener listener;

  NativeEpochCallback(EpochListener listener) {
    this.listener = listener;
  }

  int onEpoch(int epoch, double trainLoss, double validationRmse, double seconds) {
    return listener.onEpoch(new EpochStats(epoch, trainLoss, validationRmse, seconds)) ? 1 : 0;
  }
}
