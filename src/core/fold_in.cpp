// Fold-in (sfac_model_recalculate_user, sfac_model_recalculate_users): a user's row of the
// training objective, solved with the item side fixed, assembled exactly as the CPU ALS trainer assembles it so that folding in
// a training user reproduces what a user half-sweep would give.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/model_ops.h"
#include "core/resident_model.h"
#include "host/blas_threads.h"
#include "host/row_solver.h"

namespace sfac {
namespace {

// Implicit feedback is decided by the algorithm, not by alpha: IALS with alpha = 0 still fits
// every cell (gram term, target 1 on the observed ones).
bool is_implicit(const Model& m) { return m.algorithm == SFAC_ALGO_IALS; }

// Whether entries [begin, end) of a batch's row may fail its checks: an id out of range, a
// rating not finite (or negative for implicit feedback), or ids not increasing (maybe a
// repeat). One branch-free pass that the compiler vectorizes; rows it passes need no other.
bool may_fail(const int32_t* items, const float* ratings, int64_t begin, int64_t end,
              int64_t item_count, bool implicit) {
  const auto limit = static_cast<uint32_t>(std::min<int64_t>(item_count, INT32_MAX));
  unsigned fails = 0;
  for (int64_t j = begin; j < end; ++j) {
    const float r = ratings[j];
    fails |= static_cast<unsigned>(static_cast<uint32_t>(items[j]) >= limit) |
             static_cast<unsigned>(!(std::fabs(r) <= FLT_MAX)) |
             static_cast<unsigned>(implicit && r < 0.0f);
  }
  for (int64_t j = begin + 1; j < end; ++j)
    fails |= static_cast<unsigned>(items[j] <= items[j - 1]);
  return fails != 0;
}

// The checks of one user's ratings, entries [begin, end) of the call's arrays (messages name
// the call's indices).
void check_ratings(const Model& model, int64_t begin, int64_t end, const int32_t* items,
                   const float* ratings) {
  const bool implicit = is_implicit(model);
  for (int64_t j = begin; j < end; ++j) {
    SFAC_REQUIRE(std::isfinite(ratings[j]), SFAC_ERR_INVALID_VALUE, "ratings[", j,
                 "] = ", ratings[j], " is not finite");
    SFAC_REQUIRE(!implicit || ratings[j] >= 0.0f, SFAC_ERR_INVALID_VALUE, "ratings[", j,
                 "] = ", ratings[j], " is negative; implicit feedback needs ratings >= 0");
  }
  // Sorted (item, position) pairs: a repeated item shows up as equal neighbours.
  std::vector<std::pair<int32_t, int64_t>> order;
  order.reserve(static_cast<size_t>(end - begin));
  for (int64_t j = begin; j < end; ++j) order.emplace_back(items[j], j);
  std::sort(order.begin(), order.end());
  for (size_t j = 1; j < order.size(); ++j) {
    SFAC_REQUIRE(order[j].first != order[j - 1].first, SFAC_ERR_DUPLICATE_ENTRY, "items[",
                 order[j].second, "] = ", order[j].first, " repeats items[", order[j - 1].second,
                 "]");
  }
}

// What every user of one call shares: the model's objective and, for implicit feedback, Y^T Y.
struct FoldInSetup {
  bool implicit = false, biases = false;
  int64_t d = 0;  // unknowns: rank, plus the bias
  float alpha = 0.0f;
  std::vector<float> gram;  // rank x rank (implicit feedback)

  FoldInSetup(const Model& model, int num_threads)
      : implicit(is_implicit(model)),
        biases(!implicit && model.has_biases),
        d(biases ? model.rank + 1 : model.rank),
        alpha(static_cast<float>(model.implicit_alpha)) {
    if (!implicit) return;
    // Every unobserved cell pulls toward 0 through Y^T Y of all items.
    const int64_t rank = model.rank;
    gram.assign(static_cast<size_t>(rank * rank), 0.0f);
    if (model.items > 0 && rank > 0) {
      host::ScopedBlasThreads blas(num_threads);
      cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(rank),
                  static_cast<int>(model.items), 1.0f, model.item_factors.data(),
                  static_cast<int>(rank), 0.0f, gram.data(), static_cast<int>(rank));
    }
  }
};

// One user's row from `count` checked ratings: rank factors to `factors`, the bias to *bias
// (0 without biases). With the CG solver the steps start from the model's row `user` (>= 0),
// else from zero. Throws SFAC_ERR_INVALID_VALUE naming `which` for a non-finite solution.
void solve_user(const Model& model, const FoldInSetup& setup, int64_t user, int64_t count,
                const int32_t* items, const float* ratings, host::RowSolver& solver,
                float* factors, float* bias, const char* which) {
  const int64_t rank = model.rank, d = setup.d;
  *bias = 0.0f;
  // No data: the regularized optimum is zero (for implicit feedback too, where b = 0); the
  // trainer does the same for users without ratings.
  if (count == 0) {
    std::fill_n(factors, rank, 0.0f);
    return;
  }
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
    if (setup.biases) row[rank] = 1.0f;
    const float r = ratings[j];
    if (setup.implicit) {
      weights[j] = setup.alpha * r;
      targets[j] = r > 0.0f ? 1.0f + setup.alpha * r : 0.0f;
    } else {
      targets[j] = r - (setup.biases ? model.global_mean + model.item_bias[i] : 0.0f);
    }
  }

  const double scale = model.regularization == SFAC_REG_WEIGHTED ? static_cast<double>(count) : 1.0;
  host::RowSystem sys;
  sys.gram = setup.implicit ? setup.gram.data() : nullptr;
  sys.factors = fixed.data();
  sys.stride = d;
  sys.d = d;
  sys.cols = rows.data();
  sys.weights = setup.implicit ? weights.data() : nullptr;
  sys.targets = targets.data();
  sys.count = count;
  sys.reg = static_cast<float>(model.lambda_user * scale);

  std::vector<float> x(static_cast<size_t>(d), 0.0f);
  if (model.fold_in_solver == SFAC_SOLVER_CG) {
    if (user >= 0) {
      std::copy_n(model.user(user), rank, x.begin());
      if (setup.biases) x[rank] = model.user_bias[user];
    }
    solver.solve_cg(sys, x.data(), model.fold_in_cg_steps);
  } else {
    solver.solve_cholesky(sys, x.data());
  }
  const auto bad = std::find_if(x.begin(), x.end(), [](float v) { return !std::isfinite(v); });
  SFAC_REQUIRE(bad == x.end(), SFAC_ERR_INVALID_VALUE, "fold-in produced non-finite factors",
               which, " (ratings or factors too large for float)");
  std::copy_n(x.begin(), rank, factors);
  if (setup.biases) *bias = x[rank];
}

// The first failure among rows checked or solved in parallel: each thread keeps its own (its
// lowest row, since a thread stops at its first), and the lowest row's is raised, whatever the
// schedule.
struct RowFailure {
  int64_t row = INT64_MAX;
  sfac_status status = SFAC_OK;
  std::string message;
};

void raise_first(const std::vector<RowFailure>& failures) {
  const RowFailure& first = *std::min_element(
      failures.begin(), failures.end(),
      [](const RowFailure& a, const RowFailure& b) { return a.row < b.row; });
  if (first.status != SFAC_OK) throw Error(first.status, first.message);
}

}  // namespace

FoldIn fold_in(const Model& model, int64_t user, int64_t count, const int32_t* items,
               const float* ratings, int num_threads) {
  require_array(items, "items", count, "count");
  require_array(ratings, "ratings", count, "count");
  require_ids(items, count, model.items, "items", "items");
  check_ratings(model, 0, count, items, ratings);

  FoldIn out;
  out.factors.assign(static_cast<size_t>(model.rank), 0.0f);
  if (count == 0) return out;
  const FoldInSetup setup(model, num_threads);
  // A rank x rank solve: more BLAS threads would only add start-up cost.
  host::ScopedBlasThreads single(1);
  host::RowSolver solver(setup.d);
  solve_user(model, setup, user, count, items, ratings, solver, out.factors.data(), &out.bias,
             "");
  return out;
}

void check_fold_in_batch(const Model& model, int64_t count, const int32_t* users,
                         const int64_t* offsets, const int32_t* items, const float* ratings) {
  SFAC_REQUIRE(count >= 0, SFAC_ERR_INVALID_ARGUMENT, "count = ", count, " must be >= 0");
  SFAC_REQUIRE(offsets != nullptr, SFAC_ERR_INVALID_ARGUMENT,
               "offsets is NULL (it holds count + 1 entries)");
  SFAC_REQUIRE(offsets[0] == 0, SFAC_ERR_INVALID_ARGUMENT, "offsets[0] = ", offsets[0],
               " must be 0");
  for (int64_t i = 0; i < count; ++i) {
    SFAC_REQUIRE(offsets[i + 1] >= offsets[i], SFAC_ERR_INVALID_ARGUMENT, "offsets[", i + 1,
                 "] = ", offsets[i + 1], " is below offsets[", i, "] = ", offsets[i]);
  }
  const int64_t total = offsets[count];
  require_array(items, "items", total, "offsets[count]");
  require_array(ratings, "ratings", total, "offsets[count]");
  if (users == nullptr) return;
  std::vector<std::pair<int32_t, int64_t>> order;
  for (int64_t i = 0; i < count; ++i) {
    SFAC_REQUIRE(users[i] >= -1 && users[i] < model.users, SFAC_ERR_OUT_OF_RANGE, "users[", i,
                 "] = ", users[i], " is out of range for a model with ", model.users,
                 " users (-1 folds in a new user)");
    if (users[i] >= 0) order.emplace_back(users[i], i);
  }
  std::sort(order.begin(), order.end());
  for (size_t j = 1; j < order.size(); ++j) {
    SFAC_REQUIRE(order[j].first != order[j - 1].first, SFAC_ERR_DUPLICATE_ENTRY, "users[",
                 order[j].second, "] = ", order[j].first, " repeats users[", order[j - 1].second,
                 "]");
  }
}

void check_fold_in_rows(const Model& model, int64_t count, const int64_t* offsets,
                        const int32_t* items, const float* ratings, int num_threads) {
  // Rows in parallel (a batch of thousands of users is checked in a fraction of its solve).
  // A row that may_fail passes (ids in range and increasing, the usual sorted CSR row; ratings
  // valid) is good. Others are checked in detail: their ids, then their ratings, then repeats,
  // found by marking each item with its position in the row (marks cleared after the row), in
  // an array of the model's items made only for such rows. The lowest failing row is reported.
  const bool implicit = is_implicit(model);
  const int threads = static_cast<int>(std::clamp<int64_t>(count, 1, std::max(num_threads, 1)));
  std::vector<RowFailure> failures(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    RowFailure& failure = failures[static_cast<size_t>(omp_get_thread_num())];
    std::vector<int64_t> mark;  // item -> position in the current row, -1 when absent
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < count; ++i) {
      if (failure.status != SFAC_OK) continue;
      const int64_t begin = offsets[i], end = offsets[i + 1];
      if (!may_fail(items, ratings, begin, end, model.items, implicit)) continue;
      auto fail = [&](sfac_status status, std::string message) {
        failure = {i, status, std::move(message)};
      };
      int64_t j = begin;
      for (; j < end && items[j] >= 0 && items[j] < model.items; ++j) {
      }
      if (j < end) {
        fail(SFAC_ERR_OUT_OF_RANGE, cat("items[", j, "] = ", items[j],
                                        " is out of range for a model with ", model.items,
                                        " items"));
        continue;
      }
      for (j = begin; j < end && std::isfinite(ratings[j]) && (!implicit || ratings[j] >= 0.0f);
           ++j) {
      }
      if (j < end) {
        fail(SFAC_ERR_INVALID_VALUE,
             std::isfinite(ratings[j])
                 ? cat("ratings[", j, "] = ", ratings[j],
                       " is negative; implicit feedback needs ratings >= 0")
                 : cat("ratings[", j, "] = ", ratings[j], " is not finite"));
        continue;
      }
      if (mark.empty()) mark.assign(static_cast<size_t>(model.items), -1);
      for (j = begin; j < end && mark[items[j]] < 0; ++j) mark[items[j]] = j;
      if (j < end) {
        fail(SFAC_ERR_DUPLICATE_ENTRY, cat("items[", j, "] = ", items[j], " repeats items[",
                                           mark[items[j]], "]"));
      }
      for (int64_t e = begin; e < j; ++e) mark[items[e]] = -1;
    }
  }
  raise_first(failures);
}

FoldInBatch fold_in_batch(const Model& model, int64_t count, const int32_t* users,
                          const int64_t* offsets, const int32_t* items, const float* ratings,
                          int num_threads, Backend* backend) {
  FoldInBatch out;
  out.factors.assign(static_cast<size_t>(count * model.rank), 0.0f);
  out.biases.assign(static_cast<size_t>(count), 0.0f);
  // A device copy checks the rows where it solves them (no pass over them here, no threads to
  // wake); the host checks them where it declines, or where a row may fail (the host's
  // messages name the first bad entry).
  bool rows_checked = false;
  auto check_rows = [&] {
    if (!rows_checked) check_fold_in_rows(model, count, offsets, items, ratings, num_threads);
    rows_checked = true;
  };
  if (backend && count > 0 && model.rank > 0 && offsets[count] > 0) {
    FoldInRequest request{
        model, count, offsets, items, ratings, false, users, out.factors.data(), out.biases.data()};
    const std::shared_ptr<ResidentModel> resident = model.resident.get(*backend, model);
    FoldInAnswer answer = resident ? resident->fold_in(request) : FoldInAnswer::kDeclined;
    if (answer == FoldInAnswer::kCheckRowsFirst) {
      check_rows();
      request.rows_checked = true;
      answer = resident->fold_in(request);
    }
    if (answer == FoldInAnswer::kSolved) {
      for (int64_t i = 0; i < count; ++i) {
        const float* row = out.factors.data() + i * model.rank;
        const bool finite = std::all_of(row, row + model.rank, [](float v) { return std::isfinite(v); });
        SFAC_REQUIRE(finite && std::isfinite(out.biases[i]), SFAC_ERR_INVALID_VALUE,
                     "fold-in produced non-finite factors for row ", i,
                     " (ratings or factors too large for float)");
      }
      return out;
    }
  }
  check_rows();
  if (count == 0 || model.rank == 0) return out;
  const FoldInSetup setup(model, num_threads);
  const int threads = static_cast<int>(std::clamp<int64_t>(count, 1, std::max(num_threads, 1)));
  // Each user's system is small: one BLAS thread per solve, users spread over the threads.
  host::ScopedBlasThreads single(1);
  std::vector<RowFailure> failures(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    host::RowSolver solver(setup.d);
    RowFailure& failure = failures[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 16)
    for (int64_t i = 0; i < count; ++i) {
      if (failure.status != SFAC_OK) continue;
      try {
        const std::string which = cat(" for row ", i);
        solve_user(model, setup, users ? users[i] : -1, offsets[i + 1] - offsets[i],
                   items + offsets[i], ratings + offsets[i], solver,
                   out.factors.data() + i * model.rank, out.biases.data() + i, which.c_str());
      } catch (const Error& e) {
        failure = {i, e.status(), e.what()};
      }
    }
  }
  raise_first(failures);
  return out;
}

void set_user_row(Model& model, int64_t user, const FoldIn& row) {
  std::copy(row.factors.begin(), row.factors.end(), model.user_factors.begin() + user * model.rank);
  if (model.has_biases) model.user_bias[user] = row.bias;
  model.resident.reset();
}

void set_user_rows(Model& model, int64_t count, const int32_t* users, const FoldInBatch& rows) {
  if (users == nullptr) return;
  bool changed = false;
  for (int64_t i = 0; i < count; ++i) {
    if (users[i] < 0) continue;
    std::copy_n(rows.factors.begin() + i * model.rank, model.rank,
                model.user_factors.begin() + users[i] * model.rank);
    if (model.has_biases) model.user_bias[users[i]] = rows.biases[i];
    changed = true;
  }
  if (changed) model.resident.reset();
}

}  // namespace sfac
