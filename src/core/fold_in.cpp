// Fold-in (sfac_model_recalculate_user): one user's row of the training objective, solved with
// the item side fixed, assembled exactly as the CPU ALS trainer assembles it so that folding in
// a training user reproduces what a user half-sweep would give.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/model_ops.h"
#include "host/blas_threads.h"
#include "host/row_solver.h"

namespace sfac {
namespace {

// Implicit feedback is decided by the algorithm, not by alpha: IALS with alpha = 0 still fits
// every cell (gram term, target 1 on the observed ones).
bool is_implicit(const Model& m) { return m.algorithm == SFAC_ALGO_IALS; }

void check_ratings(const Model& model, int64_t count, const int32_t* items, const float* ratings) {
  const bool implicit = is_implicit(model);
  for (int64_t j = 0; j < count; ++j) {
    SFAC_REQUIRE(std::isfinite(ratings[j]), SFAC_ERR_INVALID_VALUE, "ratings[", j,
                 "] = ", ratings[j], " is not finite");
    SFAC_REQUIRE(!implicit || ratings[j] >= 0.0f, SFAC_ERR_INVALID_VALUE, "ratings[", j,
                 "] = ", ratings[j], " is negative; implicit feedback needs ratings >= 0");
  }
  // Sorted (item, position) pairs: a repeated item shows up as equal neighbours.
  std::vector<std::pair<int32_t, int64_t>> order(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) order[j] = {items[j], j};
  std::sort(order.begin(), order.end());
  for (size_t j = 1; j < order.size(); ++j) {
    SFAC_REQUIRE(order[j].first != order[j - 1].first, SFAC_ERR_DUPLICATE_ENTRY, "items[",
                 order[j].second, "] = ", order[j].first, " repeats items[", order[j - 1].second,
                 "]");
  }
}

}  // namespace

FoldIn fold_in(const Model& model, int64_t count, const int32_t* items, const float* ratings,
               int num_threads) {
  require_array(items, "items", count, "count");
  require_array(ratings, "ratings", count, "count");
  require_ids(items, count, model.items, "items", "items");
  check_ratings(model, count, items, ratings);

  const int64_t rank = model.rank;
  FoldIn out;
  out.factors.assign(static_cast<size_t>(rank), 0.0f);
  // No data: the regularized optimum is zero (for implicit feedback too, where b = 0); the
  // trainer does the same for users without ratings.
  if (count == 0) return out;

  const bool implicit = is_implicit(model);
  const bool biases = !implicit && model.has_biases;
  const int64_t d = biases ? rank + 1 : rank;
  const auto alpha = static_cast<float>(model.implicit_alpha);

  // The fixed rows of this user's items only, [y_i, 1] with biases (the constant multiplies
  // the user bias), so the solver never walks the whole item matrix.
  std::vector<float> fixed(static_cast<size_t>(count * d));
  std::vector<int32_t> rows(static_cast<size_t>(count));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<float> weights(static_cast<size_t>(count)), targets(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    const int32_t i = items[j];
    float* row = fixed.data() + j * d;
    std::copy_n(model.item(i), rank, row);
    if (biases) row[rank] = 1.0f;
    const float r = ratings[j];
    if (implicit) {
      weights[j] = alpha * r;
      targets[j] = r > 0.0f ? 1.0f + alpha * r : 0.0f;
    } else {
      targets[j] = r - (biases ? model.global_mean + model.item_bias[i] : 0.0f);
    }
  }

  // Implicit feedback: every unobserved cell pulls toward 0 through Y^T Y of all items.
  std::vector<float> gram;
  if (implicit) {
    gram.assign(static_cast<size_t>(rank * rank), 0.0f);
    if (model.items > 0) {
      host::ScopedBlasThreads blas(num_threads);
      cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(rank),
                  static_cast<int>(model.items), 1.0f, model.item_factors.data(),
                  static_cast<int>(rank), 0.0f, gram.data(), static_cast<int>(rank));
    }
  }

  const double scale = model.regularization == SFAC_REG_WEIGHTED ? static_cast<double>(count) : 1.0;
  host::RowSystem sys;
  sys.gram = implicit ? gram.data() : nullptr;
  sys.factors = fixed.data();
  sys.stride = d;
  sys.d = d;
  sys.cols = rows.data();
  sys.weights = implicit ? weights.data() : nullptr;
  sys.targets = targets.data();
  sys.count = count;
  sys.reg = static_cast<float>(model.lambda_user * scale);

  std::vector<float> x(static_cast<size_t>(d), 0.0f);
  {
    // A rank x rank solve: more BLAS threads would only add start-up cost.
    host::ScopedBlasThreads single(1);
    host::RowSolver solver(d);
    solver.solve_cholesky(sys, x.data());
  }
  const auto bad = std::find_if(x.begin(), x.end(), [](float v) { return !std::isfinite(v); });
  SFAC_REQUIRE(bad == x.end(), SFAC_ERR_INVALID_VALUE,
               "fold-in produced non-finite factors (ratings or factors too large for float)");
  std::copy_n(x.begin(), rank, out.factors.begin());
  if (biases) out.bias = x[rank];
  return out;
}

void set_user_row(Model& model, int64_t user, const FoldIn& row) {
  std::copy(row.factors.begin(), row.factors.end(), model.user_factors.begin() + user * model.rank);
  if (model.has_biases) model.user_bias[user] = row.bias;
  model.resident.reset();
}

}  // namespace sfac
