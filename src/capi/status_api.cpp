// Status names, the per-thread error message, version and build information.
#include <new>
#include <stdexcept>
#include <string>

#include "capi/guard.h"
#include "core/cuda_probe.h"
#include "core/error.h"

namespace {

thread_local std::string t_last_error;

}  // namespace

namespace sfac::capi {

void set_last_error(const char* message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();  // out of memory while reporting: keep the status, drop the text
  }
}

sfac_status handle_current_exception() noexcept {
  try {
    throw;
  } catch (const sfac::Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of host memory");
    return SFAC_ERR_OUT_OF_MEMORY;
  } catch (const std::length_error&) {
    // std::vector's answer to a size beyond what it can address.
    set_last_error("out of host memory: requested allocation is too large");
    return SFAC_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(sfac::cat("internal error: ", e.what()).c_str());
    return SFAC_ERR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return SFAC_ERR_INTERNAL;
  }
}

}  // namespace sfac::capi

extern "C" {

const char* sfac_status_string(sfac_status status) {
  switch (status) {
    case SFAC_OK:
      return "ok";
    case SFAC_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case SFAC_ERR_INVALID_HANDLE:
      return "invalid handle";
    case SFAC_ERR_OUT_OF_RANGE:
      return "out of range";
    case SFAC_ERR_SHAPE_MISMATCH:
      return "shape mismatch";
    case SFAC_ERR_INVALID_VALUE:
      return "invalid value";
    case SFAC_ERR_DUPLICATE_ENTRY:
      return "duplicate entry";
    case SFAC_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case SFAC_ERR_DEVICE:
      return "device error";
    case SFAC_ERR_IO:
      return "I/O error";
    case SFAC_ERR_PARSE:
      return "parse error";
    case SFAC_ERR_UNSUPPORTED:
      return "unsupported";
    case SFAC_ERR_NOT_CONVERGED:
      return "not converged";
    case SFAC_ERR_BUFFER_TOO_SMALL:
      return "buffer too small";
    case SFAC_ERR_CALLBACK:
      return "callback error";
    case SFAC_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* sfac_last_error(void) { return t_last_error.c_str(); }

void sfac_clear_last_error(void) { t_last_error.clear(); }

const char* sfac_version_string(void) { return SFAC_VERSION_STRING; }

int sfac_version_number(void) { return SFAC_VERSION_NUMBER; }

const char* sfac_build_info(void) {
  static const std::string info =
      sfac::cat("{\"version\":\"", SFAC_VERSION_STRING, "\",\"backends\":[\"cpu\"",
                sfac::cuda_compiled_in() ? ",\"cuda\"" : "", "],\"cuda_architectures\":\"",
                sfac::cuda_architectures(), "\",\"openmp\":true,\"blas\":\"openblas\"}");
  return info.c_str();
}

}  // extern "C"
