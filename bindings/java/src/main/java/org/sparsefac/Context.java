package org.sparsefac;

/**
 * A backend (CPU or CUDA) with its resources and the seed of every random choice made through
 * it. Matrices and models keep what they need of their context alive, so a context may be closed
 * before them.
 *
 * <pre>{@code
 * try (Context ctx = Context.builder().backend(Backend.CPU).threads(4).seed(42).build()) { ... }
 * }</pre>
 */
public final class Context extends NativeHandle {
  private Context(long address) {
    super(address, a -> Native.sfac_context_destroy(a), "Context");
  }

  /** A context on the CPU with all cores and seed 0. */
  public static Context create() {
    return builder().build();
  }

  /** A CPU context with {@code threads} threads (0 = all cores) and the given seed. */
  public static Context cpu(int threads, long seed) {
    return builder().backend(Backend.CPU).threads(threads).seed(seed).build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The backend this context resolved to (never {@link Backend#AUTO}). */
  public Backend backend() {
    int[] out = new int[1];
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_get_backend(c.address, out));
    }
    return Backend.of(out[0]);
  }

  /** E.g. "CPU (8 threads)" or the GPU's name. */
  public String deviceName() {
    String[] out = new String[1];
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_get_device_name(c.address, out));
    }
    return out[0];
  }

  public int threads() {
    int[] out = new int[1];
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_get_num_threads(c.address, out));
    }
    return out[0];
  }

  public long seed() {
    long[] out = new long[1];
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_get_seed(c.address, out));
    }
    return out[0];
  }

  /** Waits for queued device work and reports asynchronous device faults. */
  public void synchronize() {
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_synchronize(c.address));
    }
  }

  /**
   * CUDA contexts: queues the context's device work ({@link Sddmm} and the like) on
   * {@code stream}, a {@code cudaStream_t} of the context's device passed as its address (what
   * JCuda's {@code cudaStream_t.getNativePointer()} returns), so that it is ordered with the
   * caller's own work on that stream; 0 makes it the context's own stream again, the default.
   * Work the context queued on the previous stream runs before anything it queues on the new
   * one; uploads, downloads, plan creation and closing objects stay ordered with the current
   * stream (their memory belongs to the context's own stream). The stream must stay valid until
   * it is replaced or the context and its objects are closed. Not thread-safe against other
   * calls on the same context.
   *
   * @param stream the address of a {@code cudaStream_t} of the context's device, or 0
   * @throws SparsefacException with {@link Status#UNSUPPORTED} when a CPU context is given a
   *     stream other than 0
   */
  public void setStream(long stream) {
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_set_stream(c.address, stream));
    }
  }

  /**
   * The stream the context's device work is queued on, as the address of its
   * {@code cudaStream_t}: its own stream unless {@link #setStream(long)} chose another; 0 for
   * CPU contexts. Recording an event on it after a call marks the call's completion.
   */
  public long stream() {
    long[] out = new long[1];
    try (Lease c = lease()) {
      SparsefacException.check(Native.sfac_context_get_stream(c.address, out));
    }
    return out[0];
  }

  /** Version of the loaded native library, e.g. "0.1.0". */
  public static String libraryVersion() {
    return Native.sfac_version_string();
  }

  /** JSON description of the native build: version, backends, CUDA architectures. */
  public static String buildInfo() {
    return Native.sfac_build_info();
  }

  /** Usable CUDA devices (0 without CUDA support or driver). */
  public static int cudaDeviceCount() {
    int[] out = new int[1];
    SparsefacException.check(Native.sfac_cuda_device_count(out));
    return out[0];
  }

  /** Settings of a new context; defaults: AUTO backend, device 0, all cores, seed 0. */
  public static final class Builder {
    private Backend backend = Backend.AUTO;
    private int device;
    private int threads;
    private long seed;

    private Builder() {}

    public Builder backend(Backend backend) {
      this.backend = java.util.Objects.requireNonNull(backend, "backend");
      return this;
    }

    /** CUDA device ordinal; ignored by the CPU backend. */
    public Builder device(int device) {
      this.device = device;
      return this;
    }

    /** Host threads for CPU work; 0 = all cores. */
    public Builder threads(int threads) {
      this.threads = threads;
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    public Context build() {
      long[] out = new long[1];
      SparsefacException.check(
          Native.sfac_context_create(backend.code, device, threads, seed, out));
      return new Context(out[0]);
    }
  }
}
