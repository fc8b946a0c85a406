#include "core/model_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/resident_model.h"

namespace sfac {
namespace {

// Checks every value before the first is copied: a rejected call leaves the model as it was.
void set_factors(std::vector<float>& dst, const float* factors, int64_t rows, int64_t rank,
                 const char* side) {
  const auto size = static_cast<int64_t>(dst.size());
  if (size == 0) return;
  SFAC_REQUIRE(factors != nullptr, SFAC_ERR_INVALID_ARGUMENT, "factors is NULL (expected ", rows,
               " x ", rank, " ", side, " factors)");
  const float* bad =
      std::find_if(factors, factors + size, [](float v) { return !std::isfinite(v); });
  if (bad != factors + size) {
    const int64_t e = bad - factors;
    fail(SFAC_ERR_INVALID_VALUE, "factors[", e, "] = ", *bad, " (", side, " ", e / rank,
         ", column ", e % rank, ") is not finite");
  }
  std::copy(factors, factors + size, dst.begin());
}

}  // namespace

void host_error_sums(const Model& model, const SparseMatrix& ratings, int num_threads,
                     double* squared, double* absolute) {
  const int64_t nnz = ratings.nnz();
  std::vector<int64_t> offsets(static_cast<size_t>(ratings.rows()) + 1);
  std::vector<int32_t> cols(static_cast<size_t>(nnz));
  std::vector<float> values(static_cast<size_t>(nnz));
  ratings.download_csr(offsets.data(), cols.data(), values.data());
  double sq = 0.0, abs = 0.0;
#pragma omp parallel for num_threads(num_threads) schedule(static) reduction(+ : sq, abs)
  for (int64_t u = 0; u < model.users; ++u) {
    for (int64_t e = offsets[u]; e < offsets[u + 1]; ++e) {
      const double err = double{values[e]} - model.predict(u, cols[e]);
      sq += err * err;
      abs += std::abs(err);
    }
  }
  *squared = sq;
  *absolute = abs;
}

ErrorMetrics evaluate(const Model& model, const SparseMatrix& ratings, int num_threads,
                      Backend* backend) {
  SFAC_REQUIRE(ratings.rows() == model.users && ratings.cols() == model.items,
               SFAC_ERR_SHAPE_MISMATCH, "ratings are ", ratings.rows(), " x ", ratings.cols(),
               " but the model has ", model.users, " users x ", model.items, " items");
  if (ratings.nnz() == 0) return {};
  double sq = 0.0, abs = 0.0;
  std::shared_ptr<ResidentModel> resident;
  if (backend) resident = model.resident.get(*backend, model);
  if (!resident || !resident->error_sums(ratings, &sq, &abs)) {
    host_error_sums(model, ratings, num_threads, &sq, &abs);
  }
  const auto n = static_cast<double>(ratings.nnz());
  return {std::sqrt(sq / n), abs / n};
}

void set_user_factors(Model& model, const float* factors) {
  set_factors(model.user_factors, factors, model.users, model.rank, "user");
  model.resident.reset();
}

void set_item_factors(Model& model, const float* factors) {
  set_factors(model.item_factors, factors, model.items, model.rank, "item");
  model.resident.reset();
}

void require_array(const void* pointer, const char* name, int64_t count, const char* count_name) {
  SFAC_REQUIRE(count >= 0, SFAC_ERR_INVALID_ARGUMENT, count_name, " = ", count, " must be >= 0");
  SFAC_REQUIRE(count == 0 || pointer != nullptr, SFAC_ERR_INVALID_ARGUMENT, name, " is NULL but ",
               count_name, " = ", count);
}

void require_ids(const int32_t* ids, int64_t count, int64_t limit, const char* name,
                 const char* what) {
  for (int64_t i = 0; i < count; ++i) {
    SFAC_REQUIRE(ids[i] >= 0 && ids[i] < limit, SFAC_ERR_OUT_OF_RANGE, name, "[", i, "] = ", ids[i],
                 " is out of range for a model with ", limit, " ", what);
  }
}

}  // namespace sfac
