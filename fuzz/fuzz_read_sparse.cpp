// Every rating-file reader (Matrix Market, triplets, MovieLens .dat, CSV, and AUTO detection by
// extension and content) on arbitrary bytes: a status and a message, or a matrix whose arrays
// can be read back; never a crash, a leak or undefined behaviour. The first byte chooses the
// format (bits 0-2), the flags (bits 3-5) and the file's extension (bits 6-7).
#include <vector>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* const kExtensions[4] = {".mtx", ".txt", ".dat", ".csv"};
  const uint8_t control = data[0];
  const auto format = static_cast<sfac_file_format>(control % 6);  // 5: an unknown format
  uint32_t flags = 0;
  if (control & 0x08) flags |= SFAC_READ_REMAP_IDS;
  if (control & 0x10) flags |= SFAC_READ_ONE_BASED;
  if (control & 0x20) flags |= SFAC_SPARSE_SUM_DUPLICATES;
  const std::string path = sfac_fuzz::write_scratch(data + 1, size - 1, kExtensions[control >> 6]);
  sfac_sparse* m = nullptr;
  sfac_idmap *rows_map = nullptr, *cols_map = nullptr;
  if (sfac_read_sparse(sfac_fuzz::context(), path.c_str(), format, flags, &m, &rows_map,
                       &cols_map) == SFAC_OK) {
    int64_t rows = 0, cols = 0, nnz = 0;
    sfac_sparse_get_shape(m, &rows, &cols, &nnz);
    std::vector<int32_t> r(static_cast<size_t>(nnz)), c(static_cast<size_t>(nnz));
    std::vector<float> v(static_cast<size_t>(nnz));
    // A matrix that was read downloads into arrays of its nnz.
    const sfac_status st =
        sfac_sparse_download_coo(m, r.data(), c.data(), v.data(), static_cast<int64_t>(v.size()));
    if (st != SFAC_OK) __builtin_trap();
    for (int64_t e = 0; e < nnz; ++e) {
      if (r[e] < 0 || r[e] >= rows || c[e] < 0 || c[e] >= cols || v[e] != v[e]) __builtin_trap();
    }
    sfac_sparse_destroy(m);
  } else if (sfac_last_error()[0] == '\0') {
    __builtin_trap();  // every failure carries a message
  }
  sfac_idmap_destroy(rows_map);
  sfac_idmap_destroy(cols_map);
  return 0;
}
