#include <algorithm>
#include <cstdint>
#include <memory>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/model_ops.h"

using sfac::capi::checked;
using sfac::capi::require_capacity;
using sfac::capi::require_pointer;

namespace {

int threads_of(const sfac_model& m) { return m.backend ? m.backend->num_threads() : 1; }

// A sparse argument of a model operation: a live handle from a context with the model's
// backend and device.
const sfac::SparseMatrix& matrix_arg(const sfac_sparse* matrix, const char* name,
                                     const sfac_model& model) {
  const sfac::SparseMatrix& s = *checked(matrix, name).impl;
  SFAC_REQUIRE(!model.backend || s.backend().compatible_with(*model.backend),
               SFAC_ERR_INVALID_ARGUMENT, name,
               " belongs to a context with another backend or device than the model");
  return s;
}

const sfac::SparseMatrix* optional_matrix_arg(const sfac_sparse* matrix, const char* name,
                                              const sfac_model& model) {
  return matrix ? &matrix_arg(matrix, name, model) : nullptr;
}

// The capacity of recommend's and similar items' outputs: count * n entries each (count and n
// themselves are checked by the call).
void require_result_capacity(int64_t count, int n, const int32_t* out_items,
                             const float* out_scores, int64_t capacity) {
  if (count < 0 || n < 0) return;
  const int64_t needed =
      n == 0 ? 0 : (count > INT64_MAX / n ? INT64_MAX : count * static_cast<int64_t>(n));
  require_capacity(out_items, capacity, needed, "out_items");
  require_capacity(out_scores, capacity, needed, "out_scores");
}

}  // namespace

extern "C" {

sfac_status sfac_model_destroy(sfac_model* model) {
  SFAC_API_BEGIN
  sfac::capi::destroy(model, "model");
  SFAC_API_END
}

sfac_status sfac_model_copy(const sfac_model* model, sfac_context* ctx, sfac_model** out) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  const auto& backend = ctx ? checked(ctx, "ctx").impl.backend : m.backend;
  require_pointer(out, "out");
  auto copy = std::make_unique<sfac_model>();
  copy->backend = backend;
  copy->impl = m.impl;    // factors and biases; the resident copy stays with `model`
  *out = copy.release();  // only now: a failed copy leaves *out untouched
  SFAC_API_END
}

sfac_status sfac_model_get_shape(const sfac_model* model, int64_t* users, int64_t* items,
                                 int64_t* rank) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  if (users) *users = m.users;
  if (items) *items = m.items;
  if (rank) *rank = m.rank;
  SFAC_API_END
}

sfac_status sfac_model_get_algorithm(const sfac_model* model, sfac_algorithm* out) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  require_pointer(out, "out");
  *out = m.algorithm;
  SFAC_API_END
}

sfac_status sfac_model_get_user_factors(const sfac_model* model, float* out, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  require_capacity(out, capacity, static_cast<int64_t>(m.user_factors.size()), "out");
  if (m.user_factors.empty()) return SFAC_OK;
  require_pointer(out, "out");
  std::copy(m.user_factors.begin(), m.user_factors.end(), out);
  SFAC_API_END
}

sfac_status sfac_model_get_item_factors(const sfac_model* model, float* out, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  require_capacity(out, capacity, static_cast<int64_t>(m.item_factors.size()), "out");
  if (m.item_factors.empty()) return SFAC_OK;
  require_pointer(out, "out");
  std::copy(m.item_factors.begin(), m.item_factors.end(), out);
  SFAC_API_END
}

sfac_status sfac_model_get_biases(const sfac_model* model, int* has_biases, float* global_mean,
                                  float* user_biases, int64_t user_capacity, float* item_biases,
                                  int64_t item_capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  require_pointer(has_biases, "has_biases");
  if (m.has_biases) {
    require_capacity(user_biases, user_capacity, static_cast<int64_t>(m.user_bias.size()),
                     "user_biases");
    require_capacity(item_biases, item_capacity, static_cast<int64_t>(m.item_bias.size()),
                     "item_biases");
  }
  *has_biases = m.has_biases ? 1 : 0;
  if (!m.has_biases) return SFAC_OK;
  if (global_mean) *global_mean = m.global_mean;
  if (user_biases) std::copy(m.user_bias.begin(), m.user_bias.end(), user_biases);
  if (item_biases) std::copy(m.item_bias.begin(), m.item_bias.end(), item_biases);
  SFAC_API_END
}

sfac_status sfac_model_evaluate(const sfac_model* model, const sfac_sparse* ratings, double* rmse,
                                double* mae) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  const auto& r = *checked(ratings, "ratings").impl;
  const sfac::ErrorMetrics metrics =
      sfac::evaluate(m.impl, r, m.backend->num_threads(), m.backend.get());
  if (rmse) *rmse = metrics.rmse;
  if (mae) *mae = metrics.mae;
  SFAC_API_END
}

sfac_status sfac_model_set_user_factors(sfac_model* model, const float* factors) {
  SFAC_API_BEGIN
  sfac::set_user_factors(checked(model, "model").impl, factors);
  SFAC_API_END
}

sfac_status sfac_model_set_item_factors(sfac_model* model, const float* factors) {
  SFAC_API_BEGIN
  sfac::set_item_factors(checked(model, "model").impl, factors);
  SFAC_API_END
}

sfac_status sfac_model_predict(const sfac_model* model, int64_t count, const int32_t* users,
                               const int32_t* items, float* scores) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  sfac::predict(m.impl, count, users, items, scores, threads_of(m));
  SFAC_API_END
}

sfac_status sfac_model_ranking_metrics(const sfac_model* model, const sfac_sparse* exclude,
                                       const sfac_sparse* test, int k, double* precision,
                                       double* recall, double* ndcg, double* map) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  const sfac::SparseMatrix* skip = optional_matrix_arg(exclude, "exclude", m);
  const sfac::SparseMatrix& truth = matrix_arg(test, "test", m);
  const sfac::RankingMetrics r =
      sfac::ranking_metrics(m.impl, skip, truth, k, threads_of(m), m.backend.get());
  if (precision) *precision = r.precision;
  if (recall) *recall = r.recall;
  if (ndcg) *ndcg = r.ndcg;
  if (map) *map = r.map;
  SFAC_API_END
}

sfac_status sfac_model_recommend(const sfac_model* model, int64_t count, const int32_t* users,
                                 int n, const sfac_sparse* exclude, int64_t allowed_count,
                                 const int32_t* allowed_items, int32_t* out_items,
                                 float* out_scores, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  require_result_capacity(count, n, out_items, out_scores, capacity);
  const sfac::SparseMatrix* skip = optional_matrix_arg(exclude, "exclude", m);
  sfac::recommend(m.impl, count, users, n, skip, allowed_count, allowed_items, out_items,
                  out_scores, threads_of(m), m.backend.get());
  SFAC_API_END
}

sfac_status sfac_model_similar_items(const sfac_model* model, int64_t count, const int32_t* items,
                                     int n, int32_t* out_items, float* out_scores,
                                     int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  require_result_capacity(count, n, out_items, out_scores, capacity);
  sfac::similar_items(m.impl, count, items, n, out_items, out_scores, threads_of(m),
                      m.backend.get());
  SFAC_API_END
}

sfac_status sfac_model_similar(const sfac_model* model, sfac_axis side, sfac_similarity similarity,
                               int64_t count, const int32_t* ids, int n, int32_t* out_ids,
                               float* out_scores, int64_t capacity) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model");
  require_result_capacity(count, n, out_ids, out_scores, capacity);
  sfac::similar(m.impl, side, similarity, count, ids, n, out_ids, out_scores, threads_of(m),
                m.backend.get());
  SFAC_API_END
}

sfac_status sfac_model_recalculate_user(sfac_model* model, int32_t user, int64_t count,
                                        const int32_t* items, const float* ratings, float* factors,
                                        int64_t capacity, float* bias) {
  SFAC_API_BEGIN
  auto& m = checked(model, "model");
  SFAC_REQUIRE(user >= -1 && user < m.impl.users, SFAC_ERR_OUT_OF_RANGE, "user = ", user,
               " is out of range for a model with ", m.impl.users,
               " users (-1 folds in a new user)");
  require_pointer(factors, "factors");
  require_capacity(factors, capacity, m.impl.rank, "factors");
  const sfac::FoldIn row = sfac::fold_in(m.impl, user, count, items, ratings, threads_of(m));
  // Everything is validated and solved: from here on nothing can fail.
  if (user >= 0) sfac::set_user_row(m.impl, user, row);
  std::copy(row.factors.begin(), row.factors.end(), factors);
  if (bias && m.impl.has_biases) *bias = row.bias;
  SFAC_API_END
}

sfac_status sfac_model_recalculate_users(sfac_model* model, int64_t count, const int32_t* users,
                                         const int64_t* offsets, const int32_t* items,
                                         const float* ratings, float* out_factors,
                                         int64_t capacity, float* out_biases) {
  SFAC_API_BEGIN
  auto& m = checked(model, "model");
  sfac::check_fold_in_batch(m.impl, count, users, offsets, items, ratings);
  require_pointer(out_factors, "out_factors");
  const int64_t needed =
      m.impl.rank == 0 ? 0 : (count > INT64_MAX / m.impl.rank ? INT64_MAX : count * m.impl.rank);
  require_capacity(out_factors, capacity, needed, "out_factors");
  const sfac::FoldInBatch rows = sfac::fold_in_batch(m.impl, count, users, offsets, items,
                                                     ratings, threads_of(m), m.backend.get());
  // Everything is validated and solved: from here on nothing can fail.
  sfac::set_user_rows(m.impl, count, users, rows);
  std::copy(rows.factors.begin(), rows.factors.end(), out_factors);
  if (out_biases) std::copy(rows.biases.begin(), rows.biases.end(), out_biases);
  SFAC_API_END
}

sfac_status sfac_model_set_fold_in_solver(sfac_model* model, sfac_solver solver,
                                          int32_t cg_steps) {
  SFAC_API_BEGIN
  auto& m = checked(model, "model").impl;
  SFAC_REQUIRE(solver == SFAC_SOLVER_CHOLESKY || solver == SFAC_SOLVER_CG,
               SFAC_ERR_INVALID_ARGUMENT, "solver = ", static_cast<int>(solver),
               " is not an sfac_solver (SFAC_SOLVER_CHOLESKY = 0, SFAC_SOLVER_CG = 1)");
  SFAC_REQUIRE(cg_steps >= 1, SFAC_ERR_INVALID_ARGUMENT, "cg_steps = ", cg_steps,
               " must be >= 1");
  m.fold_in_solver = solver;
  m.fold_in_cg_steps = cg_steps;
  SFAC_API_END
}

sfac_status sfac_model_get_fold_in_solver(const sfac_model* model, sfac_solver* solver,
                                          int32_t* cg_steps) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  if (solver) *solver = m.fold_in_solver;
  if (cg_steps) *cg_steps = m.fold_in_cg_steps;
  SFAC_API_END
}

}  // extern "C"
