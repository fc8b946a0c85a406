// Planted-model data generation (see sfac_synthesize_ratings).
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_csr.h"
#include "sparsefac/sparsefac.h"

namespace sfac {

struct PlantedData {
  HostCsr ratings;
  std::vector<float> user_factors;  // users x rank
  std::vector<float> item_factors;  // items x rank
};

PlantedData synthesize(sfac_feedback feedback, int64_t users, int64_t items, int64_t nnz,
                       int64_t rank, double noise, double skew, uint64_t seed, int num_threads);

}  // namespace sfac
