// The C API entry points that take arrays (create from COO, CSR and CSC) with fuzzed shapes,
// counts, indices, offsets and values (NaN and Inf included): a status and a message, or a
// matrix whose arrays read back within its shape; never a crash or undefined behaviour. The
// arrays are as long as the counts passed with them say (the API's contract); their contents come
// from the input. CSR and CSC pass a fuzzed nnz (the offsets' total shifted by the input's nnz
// byte), and the index and value arrays are exactly that long: a count that disagrees with the
// offsets must be SFAC_ERR_INVALID_ARGUMENT before any array is read past it (ASan watches).
// The matrix read back must fit its arrays: download with short capacities is
// SFAC_ERR_BUFFER_TOO_SMALL and writes nothing.
#include <cstring>
#include <vector>

#include "fuzz_common.h"

namespace {

// Reads the input front to back; zeros once it runs out.
struct Reader {
  const uint8_t* p;
  size_t left;
  template <typename T>
  T take() {
    T value{};
    const size_t n = left < sizeof(T) ? left : sizeof(T);
    std::memcpy(&value, p, n);
    p += n;
    left -= n;
    return value;
  }
  template <typename T>
  std::vector<T> take_array(int64_t count) {
    std::vector<T> out(static_cast<size_t>(count));
    for (auto& x : out) x = take<T>();
    return out;
  }
};

// A matrix created from `count` entries: at most that many nonzeros (fewer when duplicates are
// summed), and they download within its shape.
void check_matrix(sfac_sparse* m, int64_t count) {
  int64_t rows = 0, cols = 0, nnz = 0;
  sfac_sparse_get_shape(m, &rows, &cols, &nnz);
  if (nnz < 0 || nnz > count) __builtin_trap();
  std::vector<int64_t> offsets(static_cast<size_t>(rows) + 1, -1);
  std::vector<int32_t> indices(static_cast<size_t>(nnz), -1);
  std::vector<float> values(static_cast<size_t>(nnz), -1.0f);
  const auto offsets_capacity = static_cast<int64_t>(offsets.size());
  const auto capacity = static_cast<int64_t>(indices.size());
  // One element short: refused, with a message, and nothing written.
  if (nnz > 0 &&
      (sfac_sparse_download_csr(m, offsets.data(), offsets_capacity, indices.data(), values.data(),
                                capacity - 1) != SFAC_ERR_BUFFER_TOO_SMALL ||
       sfac_last_error()[0] == '\0' || offsets[0] != -1 || indices[0] != -1 ||
       values[0] != -1.0f)) {
    __builtin_trap();
  }
  if (sfac_sparse_download_csr(m, offsets.data(), offsets_capacity, indices.data(), values.data(),
                               capacity) != SFAC_OK) {
    __builtin_trap();
  }
  if (offsets[0] != 0 || offsets[rows] != nnz) __builtin_trap();
  for (int64_t e = 0; e < nnz; ++e) {
    if (indices[e] < 0 || indices[e] >= cols || values[e] != values[e]) __builtin_trap();
  }
  sfac_sparse_destroy(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  const uint8_t kind = in.take<uint8_t>();
  // Shapes up to 2^16 (or negative): the arrays must stay small enough to allocate here.
  const int64_t rows = in.take<int16_t>(), cols = in.take<int16_t>();
  const int64_t nnz = in.take<int8_t>();
  const uint32_t flags = in.take<uint8_t>() & 0x3;  // a known and an unknown bit
  sfac_context* ctx = sfac_fuzz::context();
  // A failure must leave *out as it was: start from a pointer the library never returns.
  static int untouched_marker = 0;
  sfac_sparse* const untouched = reinterpret_cast<sfac_sparse*>(&untouched_marker);
  sfac_sparse* m = untouched;
  sfac_status st = SFAC_OK;
  int64_t count = nnz;    // the entries the call is told its arrays hold
  bool mismatch = false;  // a count that contradicts the offsets: SFAC_ERR_INVALID_ARGUMENT
  const bool null_values = (kind & 0x4) != 0;
  switch (kind % 3) {
    case 0: {
      const int64_t n = nnz < 0 ? 0 : nnz;
      const auto r = in.take_array<int32_t>(n), c = in.take_array<int32_t>(n);
      const auto v = in.take_array<float>(n);
      st = sfac_sparse_create_coo(ctx, rows, cols, nnz, r.data(), c.data(),
                                  null_values ? nullptr : v.data(), flags, &m);
      break;
    }
    default: {
      // CSR (kind 1) or CSC (kind 2): offsets over the compressed side, then its entries. The
      // count passed is offsets.back() + the nnz byte (0: consistent), and the index and value
      // arrays hold exactly that many entries (none for a negative count).
      const bool csr = kind % 3 == 1;
      const int64_t outer = csr ? rows : cols;
      auto offsets = in.take_array<int64_t>(outer < 0 ? 1 : outer + 1);
      if (offsets.back() > 4096) offsets.back() %= 4097;
      const int64_t total = offsets.back();  // <= 4096; adding the byte cannot overflow
      count = total < 0 ? nnz : total + nnz;
      mismatch = count < 0 || (outer >= 0 && total != count);
      const int64_t n = count < 0 ? 0 : count;
      const auto indices = in.take_array<int32_t>(n);
      const auto v = in.take_array<float>(n);
      const float* values = null_values ? nullptr : v.data();
      st = csr ? sfac_sparse_create_csr(ctx, rows, cols, offsets.data(), indices.data(), values,
                                        count, flags, &m)
               : sfac_sparse_create_csc(ctx, rows, cols, offsets.data(), indices.data(), values,
                                        count, flags, &m);
      break;
    }
  }
  if (st == SFAC_OK) {
    if (mismatch || m == untouched || m == nullptr) __builtin_trap();
    check_matrix(m, count);
  } else if (m != untouched || sfac_last_error()[0] == '\0' ||
             (mismatch && st != SFAC_ERR_INVALID_ARGUMENT)) {
    __builtin_trap();  // a failure writes no output and always says why
  }
  return 0;
}
