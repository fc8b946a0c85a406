#include <string>
#include <vector>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/host_csr.h"
#include "io/readers.h"

using sfac::capi::checked;
using sfac::capi::require_pointer;

namespace {

constexpr uint32_t kReadFlags =
    SFAC_SPARSE_SUM_DUPLICATES | SFAC_READ_REMAP_IDS | SFAC_READ_ONE_BASED;

std::unique_ptr<sfac_idmap> make_idmap(std::vector<int64_t> ids) {
  auto map = std::make_unique<sfac_idmap>();
  map->impl.ids = std::move(ids);
  return map;
}

}  // namespace

extern "C" {

sfac_status sfac_read_sparse(sfac_context* ctx, const char* path, sfac_file_format format,
                             uint32_t flags, sfac_sparse** out, sfac_idmap** row_ids,
                             sfac_idmap** col_ids) {
  SFAC_API_BEGIN
  auto& backend = *checked(ctx, "ctx").impl.backend;
  require_pointer(path, "path");
  require_pointer(out, "out");
  SFAC_REQUIRE((flags & ~kReadFlags) == 0, SFAC_ERR_INVALID_ARGUMENT, "flags = ", flags,
               " has unknown bits");
  SFAC_REQUIRE(format >= SFAC_FORMAT_AUTO && format <= SFAC_FORMAT_CSV, SFAC_ERR_INVALID_ARGUMENT,
               "unknown file format ", static_cast<int>(format));
  sfac::io::ReadOptions options;
  options.format = format;
  options.remap_ids = (flags & SFAC_READ_REMAP_IDS) != 0;
  options.one_based = (flags & SFAC_READ_ONE_BASED) != 0;
  sfac::io::Triplets t = sfac::io::read_triplets(path, options);
  const auto policy = (flags & SFAC_SPARSE_SUM_DUPLICATES) ? sfac::DuplicatePolicy::Sum
                                                           : sfac::DuplicatePolicy::Error;
  const int64_t nnz = static_cast<int64_t>(t.row.size());
  sfac::check_coo(t.rows, t.cols, nnz, t.row.data(), t.col.data(), t.value.data(),
                  backend.num_threads());
  // Build every output before publishing any, so a failure leaves no half-written outputs.
  std::unique_ptr<sfac_sparse> matrix;
  try {
    matrix = sfac::capi::adopt_sparse_from_coo(backend, t.rows, t.cols, nnz, t.row.data(),
                                               t.col.data(), t.value.data(), policy);
  } catch (const sfac::DuplicateEntryError& error) {
    // Input positions mean little to someone holding a file: name its lines instead. The
    // entries are not needed for that, and reading the file again wants their memory.
    t = sfac::io::Triplets();
    sfac::io::fail_duplicate_in_file(path, options, nnz, error);
  }
  std::unique_ptr<sfac_idmap> rmap, cmap;
  if (options.remap_ids) {
    if (row_ids) rmap = make_idmap(std::move(t.row_ids));
    if (col_ids) cmap = make_idmap(std::move(t.col_ids));
  }
  *out = matrix.release();
  if (row_ids) *row_ids = rmap.release();
  if (col_ids) *col_ids = cmap.release();
  SFAC_API_END
}

sfac_status sfac_write_matrix_market(const sfac_sparse* matrix, const char* path) {
  SFAC_API_BEGIN
  const auto& m = *checked(matrix, "matrix").impl;
  require_pointer(path, "path");
  std::vector<int64_t> offsets(static_cast<size_t>(m.rows()) + 1);
  std::vector<int32_t> indices(static_cast<size_t>(m.nnz()));
  std::vector<float> values(static_cast<size_t>(m.nnz()));
  m.download_csr(offsets.data(), indices.data(), values.data());
  sfac::io::write_matrix_market(path, m.rows(), m.cols(), offsets.data(), indices.data(),
                                values.data());
  SFAC_API_END
}

sfac_status sfac_idmap_destroy(sfac_idmap* map) {
  SFAC_API_BEGIN
  sfac::capi::destroy(map, "map");
  SFAC_API_END
}

sfac_status sfac_idmap_get_size(const sfac_idmap* map, int64_t* out) {
  SFAC_API_BEGIN
  const auto& m = checked(map, "map").impl;
  require_pointer(out, "out");
  *out = static_cast<int64_t>(m.ids.size());
  SFAC_API_END
}

sfac_status sfac_idmap_get_ids(const sfac_idmap* map, int64_t* original_ids, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(map, "map").impl;
  sfac::capi::require_capacity(original_ids, capacity, static_cast<int64_t>(m.ids.size()),
                               "original_ids");
  if (m.ids.empty()) return SFAC_OK;
  require_pointer(original_ids, "original_ids");
  std::copy(m.ids.begin(), m.ids.end(), original_ids);
  SFAC_API_END
}

sfac_status sfac_idmap_lookup(const sfac_idmap* map, int64_t count, const int64_t* original_ids,
                              int32_t* indices) {
  SFAC_API_BEGIN
  const auto& m = checked(map, "map").impl;
  SFAC_REQUIRE(count >= 0, SFAC_ERR_INVALID_ARGUMENT, "count = ", count, " must be >= 0");
  if (count == 0) return SFAC_OK;
  require_pointer(original_ids, "original_ids");
  require_pointer(indices, "indices");
  for (int64_t i = 0; i < count; ++i) indices[i] = m.lookup(original_ids[i]);
  SFAC_API_END
}

}  // extern "C"
