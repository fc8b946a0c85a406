package org.sparsefac;

/**
 * The native side of an {@link EpochListener}: a global reference the C callback trampoline
 * calls through, and the exception it caught. Lives as long as the native object that may call
 * it (a trainer, or one sfac_train call).
 */
final class ListenerState extends NativeHandle {
  private ListenerState(long address) {
    super(address, a -> {
      Native.sfac_java_listener_destroy(a);
      return 0;
    }, "listener");
  }

  /** null for no listener. */
  static ListenerState of(EpochListener listener) {
    if (listener == null) {
      return null;
    }
    long address = Native.sfac_java_listener_create(new NativeEpochCallback(listener));
    if (address == 0) {
      throw new SparsefacException(Status.OUT_OF_MEMORY, "cannot allocate the listener state");
    }
    return new ListenerState(address);
  }

  /**
   * The exception of a failed native call, with what the listener threw (if any) as cause. The
   * caller holds {@code listener}, the lease of the state passed to that call.
   */
  static SparsefacException failure(int code, Lease listener) {
    String message = Native.sfac_last_error();
    Throwable cause =
        listener.address == 0 ? null : Native.sfac_java_listener_take_error(listener.address);
    return new SparsefacException(Status.of(code), message, cause);
  }
}
