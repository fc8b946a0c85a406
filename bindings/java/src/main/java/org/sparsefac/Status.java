package org.sparsefac;

/** Why a libsparsefac call failed (the C library's status codes, minus success). */
public enum Status {
  INVALID_ARGUMENT(sfac_status.SFAC_ERR_INVALID_ARGUMENT),
  INVALID_HANDLE(sfac_status.SFAC_ERR_INVALID_HANDLE),
  OUT_OF_RANGE(sfac_status.SFAC_ERR_OUT_OF_RANGE),
  SHAPE_MISMATCH(sfac_status.SFAC_ERR_SHAPE_MISMATCH),
  INVALID_VALUE(sfac_status.SFAC_ERR_INVALID_VALUE),
  DUPLICATE_ENTRY(sfac_status.SFAC_ERR_DUPLICATE_ENTRY),
  OUT_OF_MEMORY(sfac_status.SFAC_ERR_OUT_OF_MEMORY),
  DEVICE(sfac_status.SFAC_ERR_DEVICE),
  IO(sfac_status.SFAC_ERR_IO),
  PARSE(sfac_status.SFAC_ERR_PARSE),
  UNSUPPORTED(sfac_status.SFAC_ERR_UNSUPPORTED),
  NOT_CONVERGED(sfac_status.SFAC_ERR_NOT_CONVERGED),
  BUFFER_TOO_SMALL(sfac_status.SFAC_ERR_BUFFER_TOO_SMALL),
  CALLBACK(sfac_status.SFAC_ERR_CALLBACK),
  INTERNAL(sfac_status.SFAC_ERR_INTERNAL);

  private final int code;

  Status(int code) {
    this.code = code;
  }

  /** The C library's numeric status ({@code sfac_status}). */
  public int code() {
    return code;
  }

  /** The status of a numeric code; codes newer than this binding map to {@link #INTERNAL}. */
  static Status of(int code) {
    for (Status s : values()) {
      if (s.code == code) {
        return s;
      }
    }
    return INTERNAL;
  }
}
