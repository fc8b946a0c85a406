// The structs behind the public opaque handles, and the checks every entry point applies.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/context.h"
#include "core/error.h"
#include "core/host_csr.h"
#include "core/idmap.h"
#include "core/memory_budget.h"
#include "core/model.h"
#include "core/train_options.h"
#include "core/trainer.h"
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
  std::shared_ptr<sfac::SparseMatrix> impl;  // shared: options and trainers may keep it alive
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

struct sfac_train_options {
  static constexpr uint32_t kMagic = 0x5346544f;  // "SFTO"
  static constexpr const char* kName = "sfac_train_options";
  uint32_t magic = kMagic;
  sfac::TrainOptions impl;
};

struct sfac_trainer {
  static constexpr uint32_t kMagic = 0x53465452;  // "SFTR"
  static constexpr const char* kName = "sfac_trainer";
  uint32_t magic = kMagic;
  std::shared_ptr<sfac::Backend> backend;
  std::shared_ptr<const sfac::SparseMatrix> ratings;  // the trainer reads it every epoch
  sfac::TrainOptions options;
  std::unique_ptr<sfac::Trainer> impl;
  int64_t epochs_done = 0;
  double loss = 0.0;         // NaN before the first epoch
  bool loss_current = true;  // false when epochs ran since `loss` was computed
};

struct sfac_model {
  static constexpr uint32_t kMagic = 0x53464d4f;  // "SFMO"
  static constexpr const char* kName = "sfac_model";
  uint32_t magic = kMagic;
  std::shared_ptr<sfac::Backend> backend;  // threads for model operations
  sfac::Model impl;
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

// A caller array's capacity (in elements) against the `needed` elements a call writes: for a
// non-NULL array, SFAC_ERR_INVALID_ARGUMENT when negative and SFAC_ERR_BUFFER_TOO_SMALL, naming
// the array and what it needs, when short. Called before anything is written.
inline void require_capacity(const void* array, int64_t capacity, int64_t needed,
                             const char* arg) {
  if (array == nullptr) return;
  SFAC_REQUIRE(capacity >= 0, SFAC_ERR_INVALID_ARGUMENT, "the capacity of ", arg, " = ", capacity,
               " must be >= 0");
  SFAC_REQUIRE(capacity >= needed, SFAC_ERR_BUFFER_TOO_SMALL, arg, " needs ", needed,
               " elements but its capacity is ", capacity);
}

// The caller's length of the arrays an offsets array indexes against offsets[n], for a rows x
// cols matrix whose shape is checked first (offsets[n] is read only within a valid shape; a
// NULL offsets array is the constructor's to report).
inline void require_offsets_total(int64_t rows, int64_t cols, const int64_t* offsets, int64_t n,
                                  int64_t nnz, const char* offsets_arg, const char* n_arg) {
  sfac::check_sparse_shape(rows, cols);
  SFAC_REQUIRE(nnz >= 0, SFAC_ERR_INVALID_ARGUMENT, "nnz = ", nnz, " must be >= 0");
  if (offsets == nullptr) return;
  SFAC_REQUIRE(offsets[n] == nnz, SFAC_ERR_INVALID_ARGUMENT, offsets_arg, "[", n_arg,
               "] = ", offsets[n], " but nnz = ", nnz,
               " (the length of the index and value arrays)");
}

// Throws SFAC_ERR_INVALID_VALUE naming arg[i] for the first non-finite of n values.
inline void require_finite(const float* values, int64_t n, const char* arg) {
  for (int64_t i = 0; i < n; ++i) {
    SFAC_REQUIRE(std::isfinite(values[i]), SFAC_ERR_INVALID_VALUE, arg, "[", i, "] = ", values[i],
                 " is not finite");
  }
}

// A new handle owning a backend's matrix.
inline std::unique_ptr<sfac_sparse> adopt_sparse(std::unique_ptr<sfac::SparseMatrix> matrix) {
  auto handle = std::make_unique<sfac_sparse>();
  handle->impl = std::move(matrix);
  return handle;
}

// A new handle owning the backend's matrix built from a validated host CSR.
inline std::unique_ptr<sfac_sparse> adopt_sparse(sfac::Backend& backend, sfac::HostCsr csr) {
  return adopt_sparse(backend.make_sparse(std::move(csr)));
}

// Throws SFAC_ERR_OUT_OF_MEMORY before a rows x cols matrix of nnz entries is built beyond the
// context's host memory budget.
inline void require_sparse_memory(const sfac::Backend& backend, int64_t rows, int64_t cols,
                                  int64_t nnz) {
  sfac::require_host_memory(sfac::sparse_build_bytes(rows, cols, nnz),
                            backend.host_memory_limit(),
                            "a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " sparse matrix of " + std::to_string(nnz) + " entries");
}

// A new handle owning the backend's matrix built from checked COO triplets (check_coo).
inline std::unique_ptr<sfac_sparse> adopt_sparse_from_coo(
    sfac::Backend& backend, int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices,
    const int32_t* col_indices, const float* values, sfac::DuplicatePolicy duplicates) {
  require_sparse_memory(backend, rows, cols, nnz);
  return adopt_sparse(
      backend.make_sparse_from_coo(rows, cols, nnz, row_indices, col_indices, values, duplicates));
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
