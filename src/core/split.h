// Train/test splits of a sparse matrix's nonzeros.
#pragma once

#include <cstdint>
#include <utility>

#include "core/host_csr.h"

namespace sfac {

class SparseMatrix;

// Each nonzero goes to the second matrix with probability test_fraction.
std::pair<HostCsr, HostCsr> split_random(const SparseMatrix& ratings, double test_fraction,
                                         uint64_t seed);
// k random nonzeros of each row with more than k go to the second matrix.
std::pair<HostCsr, HostCsr> split_leave_k_out(const SparseMatrix& ratings, int64_t k,
                                              uint64_t seed);

}  // namespace sfac
