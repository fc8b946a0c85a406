package org.sparsefac;

/**
 * A libsparsefac call failed. {@link #status()} says why; {@link #getMessage()} is the library's
 * own message (it names the offending argument, index or file line). When an
 * {@link EpochListener} threw, the status is {@link Status#CALLBACK} and the listener's exception
 * is the cause.
 */
public class SparsefacException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status status;

  public SparsefacException(Status status, String message) {
    this(status, message, null);
  }

  public SparsefacException(Status status, String message, Throwable cause) {
    super(message, cause);
    this.status = java.util.Objects.requireNonNull(status, "status");
  }

  public Status status() {
    return status;
  }

  /** "org.sparsefac.SparsefacException (OUT_OF_RANGE): row index 7 ..." */
  @Override
  public String toString() {
    return getClass().getName() + " (" + status + "): " + getMessage();
  }

  /** The exception of a failed native call, with the message the library left on this thread. */
  static SparsefacException fromNative(int code, Throwable cause) {
    return new SparsefacException(Status.of(code), Native.sfac_last_error(), cause);
  }

  /** Throws unless {@code code} is success. */
  static void check(int code) {
    if (code != sfac_status.SFAC_OK) {
      throw fromNative(code, null);
    }
  }
}
