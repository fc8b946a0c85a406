package org.sparsefac;

/** Where a {@link Context} runs its work. */
public enum Backend {
  /** CUDA when built with it and it covers the workload, else the CPU (today: the CPU). */
  AUTO(sfac_backend.SFAC_BACKEND_AUTO),
  CPU(sfac_backend.SFAC_BACKEND_CPU),
  /** An NVIDIA GPU (SDDMM; training answers {@link Status#UNSUPPORTED} for now). */
  CUDA(sfac_backend.SFAC_BACKEND_CUDA);

  final int code;

  Backend(int code) {
    this.code = code;
  }

  static Backend of(int code) {
    for (Backend b : values()) {
      if (b.code == code) {
        return b;
      }
    }
    throw new SparsefacException(Status.INTERNAL, "unknown backend code " + code);
  }
}
