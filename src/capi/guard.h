// Every extern "C" body is wrapped in SFAC_API_BEGIN / SFAC_API_END: exceptions never cross
// the C boundary; they become a status and a thread-local message.
#pragma once

#include "sparsefac/sparsefac.h"

namespace sfac::capi {

// Maps the exception in flight to a status and records its message.
sfac_status handle_current_exception() noexcept;

// Records a message for the calling thread.
void set_last_error(const char* message) noexcept;

}  // namespace sfac::capi

#define SFAC_API_BEGIN try {
#define SFAC_API_END                                 \
  }                                                  \
  catch (...) {                                      \
    return ::sfac::capi::handle_current_exception(); \
  }                                                  \
  return SFAC_OK;
