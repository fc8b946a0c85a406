package org.sparsefac;

import java.lang.ref.Cleaner;
import java.util.function.LongUnaryOperator;

/**
 * One owned native object. Every native call holds a {@link Lease} on each object it passes, so
 * <ul>
 *   <li>close() while a call on another thread (or a listener's own training) is using the
 *       object retires it: that call finishes with it, the last lease frees it, and every later
 *       use throws IllegalStateException instead of touching freed memory;
 *   <li>the object stays reachable while a call uses its address, so the Cleaner that frees
 *       objects nobody closed never frees one in use.
 * </ul>
 * close() is idempotent. Relying on the Cleaner is a fallback: native memory is not visible to
 * the garbage collector, so close objects (try-with-resources).
 */
abstract class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  /** The address and its destructor: what the Cleaner runs, so it must not refer to the handle. */
  private static final class Resource implements Runnable {
    private final long address;
    private final LongUnaryOperator destroy;

    Resource(long address, LongUnaryOperator destroy) {
      this.address = address;
      this.destroy = destroy;
    }

    @Override
    public void run() {
      destroy.applyAsLong(address);
    }
  }

  private final long address;
  private final Cleaner.Cleanable cleanable;
  private final String kind;
  private int leases;
  private boolean closed;

  NativeHandle(long address, LongUnaryOperator destroy, String kind) {
    if (address == 0) {
      throw new SparsefacException(Status.INTERNAL, kind + ": the library returned no object");
    }
    this.address = address;
    this.kind = kind;
    this.cleanable = CLEANER.register(this, new Resource(address, destroy));
  }

  /** Use of the address for one native call; throws IllegalStateException after close(). */
  final Lease lease() {
    synchronized (this) {
      if (closed) {
        throw new IllegalStateException("this " + kind + " is closed");
      }
      leases++;
    }
    return new Lease(this, address);
  }

  /** A lease of an optional argument: address 0 for null. */
  static Lease leaseOf(NativeHandle object) {
    return object == null ? Lease.NONE : object.lease();
  }

  private void release() {
    boolean free;
    synchronized (this) {
      free = --leases == 0 && closed;
    }
    if (free) {
      cleanable.clean(); // runs the destructor at most once
    }
  }

  public final synchronized boolean isClosed() {
    return closed;
  }

  @Override
  public void close() {
    boolean free;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      free = leases == 0;
    }
    if (free) {
      cleanable.clean();
    }
  }

  /** An address in use; closing the lease ends the use (try-with-resources). */
  static final class Lease implements AutoCloseable {
    static final Lease NONE = new Lease(null, 0);

    final long address;
    private final NativeHandle owner;

    private Lease(NativeHandle owner, long address) {
      this.owner = owner;
      this.address = address;
    }

    @Override
    public void close() {
      if (owner != null) {
        owner.release();
      }
    }
  }
}
