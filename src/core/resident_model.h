// A backend's own copy of a model for inference, and the per-model cache that builds it once.
//
// Inference on a model is served where its backend keeps the factors (a CUDA context: device
// memory) so that every call does not ship users x rank and items x rank floats across; a host
// backend has no copy and the core scores on the host. The core validates every request before
// it reaches a ResidentModel, so implementations check nothing and cannot leave a half-written
// result behind a failed argument check.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

namespace sfac {

class Backend;
class SparseMatrix;
struct Model;

// One validated sfac_model_recommend call with at least one user (see sfac::recommend for the
// semantics). `allowed`: sorted, distinct, at least one item; nullptr = every item is a
// candidate. An empty allow-list never gets here (the core answers it: nothing is allowed).
// `exclude` (may be null) is of the model's backend and shape, its rows' columns sorted.
struct RecommendRequest {
  int64_t count;
  const int32_t* users;
  int n;
  const SparseMatrix* exclude;
  const int32_t* allowed;
  int64_t allowed_count;
  int32_t* out_items;  // count * n, host memory
  float* out_scores;   // count * n, host memory
};

// One validated sfac_model_similar call with at least one query.
struct SimilarRequest {
  bool users;   // users against users, else items against items
  bool cosine;  // cosine, else the inner product
  int64_t count;
  const int32_t* ids;
  int n;
  int32_t* out_ids;   // count * n, host memory
  float* out_scores;  // count * n, host memory
};

// One sfac_model_recalculate_users call with at least one rating (see sfac::fold_in_batch),
// its offsets and users validated: `model` is the model the copy was made from, its ratings are
// host arrays.
struct FoldInRequest {
  const Model& model;
  int64_t count;
  const int64_t* offsets;  // count + 1
  const int32_t* items;
  const float* ratings;
  // Whether the rows' ids and ratings were checked (check_fold_in_rows). Where not, a copy that
  // serves the call checks them first: ids in range and increasing within each row (the usual
  // sorted CSR row), ratings finite (not negative for implicit feedback); where any row is not
  // so it writes nothing and answers kCheckRowsFirst.
  bool rows_checked;
  // With the CG solver (model.fold_in_solver), row i starts from the model's row users[i] where
  // that is >= 0, else from zero; null: every row from zero.
  const int32_t* users;
  float* out_factors;  // count x rank, host memory
  float* out_biases;   // count entries, host memory: each row's bias, 0 without biases
};

// What a copy did with a fold-in request.
enum class FoldInAnswer {
  kDeclined,        // not served, nothing written: the host solves the call
  kSolved,          // the rows are written
  kCheckRowsFirst,  // a row may fail the checks: the host checks them, then asks again
};

// A backend's copy of a model's factors and biases, made from the model as it was when built
// (the cache below drops it when they change). Each call returns false where the backend does
// not serve it, having written nothing; the core then computes on the host. What it writes
// follows the host's contract: row r for request row r, best first, ties by the lower item id,
// scores as predict returns them (cosine for similar items), rows padded with -1 / -INFINITY.
class ResidentModel {
 public:
  virtual ~ResidentModel() = default;
  virtual bool recommend(const RecommendRequest& request) = 0;
  virtual bool similar(const SimilarRequest& request) = 0;
  // Rows that are not finite are returned as computed: the core checks them.
  virtual FoldInAnswer fold_in(const FoldInRequest& request) {
    (void)request;
    return FoldInAnswer::kDeclined;
  }
  // The sums of squared and of absolute errors of the model's predictions (each as
  // Model::predict makes it) on the nonzeros of `ratings` (the model's shape, at least one
  // nonzero), in fp64.
  virtual bool error_sums(const SparseMatrix& ratings, double* squared, double* absolute) {
    (void)ratings;
    (void)squared;
    (void)absolute;
    return false;
  }
};

// The resident copy of one model: built by its backend on the first inference call, shared by
// concurrent (const) calls, dropped by reset() whenever the model's factors or biases change.
// A backend that keeps no copy (nullptr) is asked once, not on every call, until reset().
//
// Copying or moving yields an empty cache: a model copy must never serve its calls from the
// original's copy (the factors of either may change alone, and a copy may be bound to another
// backend), and a device copy is cheap to rebuild compared with keeping two models in sync.
class ResidentCache {
 public:
  ResidentCache() = default;
  ResidentCache(const ResidentCache&) noexcept {}
  ResidentCache(ResidentCache&&) noexcept {}
  // Assigning to a model replaces its factors: its own copy is stale from then on.
  ResidentCache& operator=(const ResidentCache&) noexcept {
    reset();
    return *this;
  }
  ResidentCache& operator=(ResidentCache&&) noexcept {
    reset();
    return *this;
  }

  // The copy `backend` keeps of `model`, built now if none was asked for since the last reset
  // (null: the backend keeps none). A model has one backend: the cache does not check which
  // backend built its copy. A build that throws leaves the cache empty, so the next call retries.
  std::shared_ptr<ResidentModel> get(Backend& backend, const Model& model);
  // Drops the copy (callers still holding it finish with it); the next get() builds a new one.
  void reset() noexcept;

 private:
  std::mutex mutex_;  // get() holds it while building: concurrent first calls build one copy
  std::shared_ptr<ResidentModel> copy_;
  bool built_ = false;  // whether the backend was asked since the last reset (copy_ may be null)
};

}  // namespace sfac
