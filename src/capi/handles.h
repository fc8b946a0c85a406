// The structs behind the public opaque handles, and the checks every entry point applies.
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend.h"
#include "core/context.h"
#include "core/error.h"
#include "core/idmap.h"
#include "sparsefac/sparsefac.h"

// A type tag in each handle catches NULL, the wrong type and (best effort) destroyed handles.
struct sfac_context {
  static constexpr uint32_t kMagic = 0x53464358;  // "SFCX"
  static constexpr const char* kName = "sfac_context";
  uint32_t magic = kMagic;
  sfac::Context impl;
};

struct sfac_sparse {
  static constexpr uint32_t kMagic = 0x53465350;  // "SFSP"
  static constexpr const char* kName = "sfac_sparse";
  uint32_t magic = kMagic;
  std::unique_ptr<sfac::SparseMatrix> impl;
};

struct sfac_dense {
  static constexpr uint32_t kMagic = 0x53464453;  // "SFDS"
  static constexpr const char* kName = "sfac_dense";
  uint32_t magic = kMagic;
  std::unique_ptr<sfac::DenseMatrix> impl;
};

struct sfac_idmap {
  static constexpr uint32_t kMagic = 0x5346494d;  // "SFIM"
  static constexpr const char* kName = "sfac_idmap";
  uint32_t magic = kMagic;
  sfac::IdMap impl;
};

struct sfac_sddmm_plan {
  static constexpr uint32_t kMagic = 0x53465044;  // "SFPD"
  static constexpr const char* kName = "sfac_sddmm_plan";
  uint32_t magic = kMagic;
  std::unique_ptr<sfac::SddmmPlan> impl;
};

namespace sfac::capi {

// Returns the handle's object or throws SFAC_ERR_INVALID_HANDLE naming the argument.
template <typename Handle>
Handle& checked(Handle* handle, const char* arg) {
  SFAC_REQUIRE(handle != nullptr, SFAC_ERR_INVALID_HANDLE, arg, " is NULL");
  SFAC_REQUIRE(handle->magic == Handle::kMagic, SFAC_ERR_INVALID_HANDLE, arg, " is not a live ",
               Handle::kName, " (destroyed, or a handle of another type)");
  return *handle;
}

template <typename Handle>
const Handle& checked(const Handle* handle, const char* arg) {
  return checked(const_cast<Handle*>(handle), arg);
}

// Throws SFAC_ERR_INVALID_ARGUMENT when a required pointer is NULL.
inline void require_pointer(const void* pointer, const char* arg) {
  SFAC_REQUIRE(pointer != nullptr, SFAC_ERR_INVALID_ARGUMENT, arg, " is NULL");
}

// Destroys a handle created by the library; NULL is fine.
template <typename Handle>
void destroy(Handle* handle, const char* arg) {
  if (handle == nullptr) return;
  checked(handle, arg);
  handle->magic = 0;
  delete handle;
}

}  // namespace sfac::capi
