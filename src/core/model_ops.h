// What a trained model answers: predictions, error metrics, rankings, similar items, fold-in.
//
// Every function validates all of its inputs before it writes anything, so a failed call leaves
// the outputs and the model as they were. Sparse arguments (exclude, test, ratings) are checked
// for shape here; the C shim checks their handles and backends.
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "core/model.h"

namespace sfac {

// Root mean square and mean absolute error of the model on the nonzeros of `ratings`.
struct ErrorMetrics {
  double rmse = 0.0;
  double mae = 0.0;
};
// `backend` (the model's; null = the host) computes them where it keeps a copy of the model
// that serves the call (ResidentModel::error_sums), each prediction as Model::predict makes it.
ErrorMetrics evaluate(const Model& model, const SparseMatrix& ratings, int num_threads,
                      Backend* backend = nullptr);
// evaluate's sums of squared and absolute errors computed on the host.
void host_error_sums(const Model& model, const SparseMatrix& ratings, int num_threads,
                     double* squared, double* absolute);

// Replaces the user (items) factors with users x rank (items x rank) finite floats, and drops
// the backend's copy of the model.
void set_user_factors(Model& model, const float* factors);
void set_item_factors(Model& model, const float* factors);

// scores[i] = model.predict(users[i], items[i]).
void predict(const Model& model, int64_t count, const int32_t* users, const int32_t* items,
             float* scores, int num_threads);

// Top-n lists (see sfac_model_recommend). Scores are what predict returns (biases included);
// ties are broken by the lower item id, so results do not depend on the thread count. A
// duplicate in allowed_items is one candidate. allowed_items == nullptr with allowed_count == 0
// means no allow-list; a non-null allowed_items with allowed_count == 0 allows nothing.
// `backend` (the model's; nullptr = the host only) serves the call from its copy of the model
// (Model::resident) where it keeps one and serves this call; otherwise the host scores.
void recommend(const Model& model, int64_t count, const int32_t* users, int n,
               const SparseMatrix* exclude, int64_t allowed_count, const int32_t* allowed_items,
               int32_t* out_items, float* out_scores, int num_threads, Backend* backend);

// The n users (side SFAC_AXIS_ROWS) or items most similar to each query of the same side by
// cosine (a row with all-zero factors has similarity 0 to every row) or inner product of the
// factors, the query itself excluded. Same layout, tie-breaking and `backend` as recommend;
// similar_items is (SFAC_AXIS_COLS, SFAC_SIMILARITY_COSINE). Messages name the arrays `ids`
// and `out_ids` as the caller's API does (similar_items: items, out_items).
void similar(const Model& model, sfac_axis side, sfac_similarity similarity, int64_t count,
             const int32_t* ids, int n, int32_t* out_ids, float* out_scores, int num_threads,
             Backend* backend, const char* ids_name = "ids", const char* out_name = "out_ids");
inline void similar_items(const Model& model, int64_t count, const int32_t* items, int n,
                          int32_t* out_items, float* out_scores, int num_threads,
                          Backend* backend) {
  similar(model, SFAC_AXIS_COLS, SFAC_SIMILARITY_COSINE, count, items, n, out_items, out_scores,
          num_threads, backend, "items", "out_items");
}

// Ranking quality at k, averaged over the users with at least one nonzero in `test`. For such a
// user with test items T and top-k list L (the user's `exclude` nonzeros never ranked; L is
// shorter than k only when fewer candidates exist) and binary relevance rel_p = [L_p in T]:
//   precision = hits / k
//   recall    = hits / |T|                 (not hits / min(k, |T|))
//   ndcg      = DCG / IDCG, DCG = sum_p rel_p / log2(p + 2), IDCG the DCG of min(k, |T|) hits
//   map       = (sum_p rel_p * precision@(p + 1)) / min(k, |T|)
// A test item that is also excluded still counts in |T| (it can never be hit). With no test
// user every metric is 0.
struct RankingMetrics {
  double precision = 0.0;
  double recall = 0.0;
  double ndcg = 0.0;
  double map = 0.0;
};
// `backend` (the model's; null = the host) provides the lists where it serves recommend for
// them (ResidentModel::recommend); the metrics are computed from them on the host.
RankingMetrics ranking_metrics(const Model& model, const SparseMatrix* exclude,
                               const SparseMatrix& test, int k, int num_threads,
                               Backend* backend = nullptr);

// Fold-in: the user row that minimizes the model's training objective with the item side fixed
// (see sfac_model_recalculate_user). Explicit models (ALS, SGD): least squares on the ratings
// minus global mean and item bias, unknowns [x, b_u] when the model has biases. IALS: the
// Hu-Koren-Volinsky system (Y^T Y + sum alpha r y y^T + reg I) x = sum (1 + alpha r) y, ratings
// >= 0. reg = lambda_user, times the number of ratings under SFAC_REG_WEIGHTED. Duplicate items
// are SFAC_ERR_DUPLICATE_ENTRY; no ratings give zero factors (the regularized optimum). The
// model's fold-in solver decides how (Cholesky, or CG steps from the row of `user` when it is
// >= 0, else from zero).
struct FoldIn {
  std::vector<float> factors;  // rank entries
  float bias = 0.0f;           // 0 when the model has no biases
};
FoldIn fold_in(const Model& model, int64_t user, int64_t count, const int32_t* items,
               const float* ratings, int num_threads);
// Stores a fold-in result as the model's row for `user` (in range), and drops the backend's
// copy of the model.
void set_user_row(Model& model, int64_t user, const FoldIn& row);

// Fold-in of `count` users in one call (sfac_model_recalculate_users): user i's ratings are
// entries [offsets[i], offsets[i + 1]) of items and ratings; row i of the result is what
// fold_in gives for them (user users[i], or -1 where users is null). check_fold_in_batch
// validates the call's shape first (offsets from 0 and non-decreasing, the arrays given, users
// (may be null) in [-1, users) and distinct where >= 0). fold_in_batch then validates the rows
// (items in range and distinct within a user, ratings as fold_in takes them; of several bad
// rows, the first is reported: check_fold_in_rows), on the device where `backend` (the model's;
// null = the host) keeps a copy of the model that serves the call, and solves them there, else
// on the host; a non-finite solution is SFAC_ERR_INVALID_VALUE naming its row.
struct FoldInBatch {
  std::vector<float> factors;  // count x rank
  std::vector<float> biases;   // count entries, zeros when the model has no biases
};
void check_fold_in_batch(const Model& model, int64_t count, const int32_t* users,
                         const int64_t* offsets, const int32_t* items, const float* ratings);
void check_fold_in_rows(const Model& model, int64_t count, const int64_t* offsets,
                        const int32_t* items, const float* ratings, int num_threads);
FoldInBatch fold_in_batch(const Model& model, int64_t count, const int32_t* users,
                          const int64_t* offsets, const int32_t* items, const float* ratings,
                          int num_threads, Backend* backend);
// Stores row i of a batch as the model's row for users[i] where users[i] >= 0 (checked), and
// drops the backend's copy of the model if any row changed; users null stores nothing.
void set_user_rows(Model& model, int64_t count, const int32_t* users, const FoldInBatch& rows);

// Shared argument checks of the model operations (they throw sfac::Error).
// SFAC_ERR_INVALID_ARGUMENT unless count >= 0 and, when count > 0, pointer is non-null.
void require_array(const void* pointer, const char* name, int64_t count, const char* count_name);
// SFAC_ERR_OUT_OF_RANGE naming the first ids[i] outside [0, limit): "users[3] = 20000 is out
// of range for a model with 20000 users".
void require_ids(const int32_t* ids, int64_t count, int64_t limit, const char* name,
                 const char* what);

}  // namespace sfac
