package org.sparsefac;

import java.util.function.LongUnaryOperator;

/**
 * One owned native object. close() frees it once (later calls do nothing); any use after close
 * is an IllegalStateException instead of a dangling pointer. Not safe to close while another
 * thread is using the same object.
 */
abstract class NativeHandle implements AutoCloseable {
  private long address;
  private final LongUnaryOperator destroy;
  private final String kind;

  NativeHandle(long address, LongUnaryOperator destroy, String kind) {
    if (address == 0) {
      throw new SparsefacException(Status.INTERNAL, kind + ": the library returned no object");
    }
    this.address = address;
    this.destroy = destroy;
    this.kind = kind;
  }

  /** The live address; throws IllegalStateException after close(). */
  final synchronized long handle() {
    if (address == 0) {
      throw new IllegalStateException("this " + kind + " is closed");
    }
    return address;
  }

  /** The address of an optional argument: 0 for null. */
  static long handleOf(NativeHandle object) {
    return object == null ? 0 : object.handle();
  }

  public final synchronized boolean isClosed() {
    return address == 0;
  }

  @Override
  public synchronized void close() {
    long a = address;
    address = 0;
    if (a != 0) {
      destroy.applyAsLong(a);
    }
  }
}
