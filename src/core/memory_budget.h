// How much host memory one object built for a context may take. A file of a few bytes can
// declare a shape of hundreds of millions of rows, and building its CSR allocates per row
// before any entry is looked at: every creation path compares its estimate with the budget
// first and answers SFAC_ERR_OUT_OF_MEMORY instead of being killed by the kernel.
#pragma once

#include <cstdint>
#include <string>

namespace sfac {

// Bytes the process may still allocate: MemAvailable (Linux; free pages elsewhere), and no more
// than what the address-space limit leaves. INT64_MAX when neither is known.
int64_t available_host_memory();

// Throws SFAC_ERR_OUT_OF_MEMORY naming `what` when `bytes` exceed `limit` (a context's
// setting), or, with limit 0, the available host memory.
void require_host_memory(int64_t bytes, int64_t limit, const std::string& what);

// The host bytes of building a rows x cols sparse matrix with nnz entries from triplets (the
// CSR, the canonicalization's scratch and the backend's copy), rounded up; saturates at
// INT64_MAX.
int64_t sparse_build_bytes(int64_t rows, int64_t cols, int64_t nnz);

// The host bytes of a rows x cols float32 dense matrix; saturates at INT64_MAX.
int64_t dense_build_bytes(int64_t rows, int64_t cols);

}  // namespace sfac
