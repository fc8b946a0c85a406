// Test hooks (testing_api.h).
#include "capi/testing_api.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/fault_hooks.h"
#include "core/model_ops.h"
#include "core/resident_model.h"

namespace {

struct ResidentCounts {
  std::atomic<int64_t> builds{0};
  std::atomic<int64_t> served{0};
};

// A host snapshot standing in for a device copy. It checks what the core promises a
// ResidentModel, so that a core that sends an unvalidated or empty request fails the test.
class SnapshotModel final : public sfac::ResidentModel {
 public:
  SnapshotModel(const sfac::Model& model, int threads, bool serve,
                std::shared_ptr<ResidentCounts> counts)
      : snapshot_(model), threads_(threads), serve_(serve), counts_(std::move(counts)) {}

  bool recommend(const sfac::RecommendRequest& r) override {
    SFAC_REQUIRE(r.count > 0 && r.users && r.n >= 1 && r.out_items && r.out_scores,
                 SFAC_ERR_INTERNAL, "resident recommend: empty or unvalidated request");
    const int32_t* end = r.allowed + r.allowed_count;
    const bool allow_list_ok = r.allowed ? r.allowed_count > 0 && std::is_sorted(r.allowed, end) &&
                                               std::adjacent_find(r.allowed, end) == end
                                         : r.allowed_count == 0;
    SFAC_REQUIRE(allow_list_ok, SFAC_ERR_INTERNAL,
                 "resident recommend: the allow-list is not sorted, distinct and non-empty");
    if (!serve_) return false;
    sfac::recommend(snapshot_, r.count, r.users, r.n, r.exclude, r.allowed_count, r.allowed,
                    r.out_items, r.out_scores, threads_, nullptr);
    ++counts_->served;
    return true;
  }

  bool similar(const sfac::SimilarRequest& r) override {
    SFAC_REQUIRE(r.count > 0 && r.ids && r.n >= 1 && r.out_ids && r.out_scores,
                 SFAC_ERR_INTERNAL, "resident similar: empty or unvalidated request");
    if (!serve_) return false;
    sfac::similar(snapshot_, r.users ? SFAC_AXIS_ROWS : SFAC_AXIS_COLS,
                  r.cosine ? SFAC_SIMILARITY_COSINE : SFAC_SIMILARITY_INNER_PRODUCT, r.count,
                  r.ids, r.n, r.out_ids, r.out_scores, threads_, nullptr);
    ++counts_->served;
    return true;
  }

  sfac::FoldInAnswer fold_in(const sfac::FoldInRequest& r) override {
    SFAC_REQUIRE(r.count > 0 && r.offsets && r.offsets[r.count] > 0 && r.out_factors &&
                     r.out_biases,
                 SFAC_ERR_INTERNAL, "resident fold_in: empty or unvalidated request");
    if (!serve_) return sfac::FoldInAnswer::kDeclined;
    if (!r.rows_checked) return sfac::FoldInAnswer::kCheckRowsFirst;
    sfac::Model model = snapshot_;  // with the solver the model has now (a serving setting)
    model.fold_in_solver = r.model.fold_in_solver;
    model.fold_in_cg_steps = r.model.fold_in_cg_steps;
    const sfac::FoldInBatch rows = sfac::fold_in_batch(model, r.count, r.users, r.offsets,
                                                       r.items, r.ratings, threads_, nullptr);
    std::copy(rows.factors.begin(), rows.factors.end(), r.out_factors);
    std::copy(rows.biases.begin(), rows.biases.end(), r.out_biases);
    ++counts_->served;
    return sfac::FoldInAnswer::kSolved;
  }

  bool error_sums(const sfac::SparseMatrix& ratings, double* squared, double* absolute) override {
    SFAC_REQUIRE(ratings.nnz() > 0 && ratings.rows() == snapshot_.users &&
                     ratings.cols() == snapshot_.items && squared && absolute,
                 SFAC_ERR_INTERNAL, "resident error_sums: empty or unvalidated request");
    if (!serve_) return false;
    sfac::host_error_sums(snapshot_, ratings, threads_, squared, absolute);
    ++counts_->served;
    return true;
  }

 private:
  const sfac::Model snapshot_;
  const int threads_;
  const bool serve_;
  const std::shared_ptr<ResidentCounts> counts_;
};

// The model's backend, but for the resident copies it makes.
class HookedBackend final : public sfac::Backend {
 public:
  HookedBackend(std::shared_ptr<sfac::Backend> inner, int mode)
      : inner_(std::move(inner)), mode_(mode), counts_(std::make_shared<ResidentCounts>()) {}

  const std::shared_ptr<sfac::Backend>& inner() const { return inner_; }
  const ResidentCounts& counts() const { return *counts_; }

  std::unique_ptr<sfac::ResidentModel> make_resident_model(const sfac::Model& model) override {
    ++counts_->builds;
    if (mode_ == SFAC_TESTING_RESIDENT_NONE) return nullptr;
    return std::make_unique<SnapshotModel>(model, num_threads(),
                                           mode_ == SFAC_TESTING_RESIDENT_SERVE, counts_);
  }

  sfac_backend kind() const override { return inner_->kind(); }
  int device() const override { return inner_->device(); }
  const std::string& device_name() const override { return inner_->device_name(); }
  int num_threads() const override { return inner_->num_threads(); }
  std::unique_ptr<sfac::SparseMatrix> make_sparse(sfac::HostCsr csr) override {
    return inner_->make_sparse(std::move(csr));
  }
  std::unique_ptr<sfac::DenseMatrix> make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                                const float* data) override {
    return inner_->make_dense(rows, cols, dtype, data);
  }
  std::unique_ptr<sfac::SddmmPlan> make_sddmm_plan(const sfac::SparseMatrix& pattern, int64_t k,
                                                   sfac_sddmm_algorithm algorithm) override {
    return inner_->make_sddmm_plan(pattern, k, algorithm);
  }
  void sddmm(const sfac::SddmmCall& call) override { inner_->sddmm(call); }
  std::unique_ptr<sfac::Trainer> make_trainer(const sfac::SparseMatrix& ratings,
                                              const sfac::TrainOptions& options,
                                              uint64_t seed) override {
    return inner_->make_trainer(ratings, options, seed);
  }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::shared_ptr<sfac::Backend> inner_;
  int mode_;
  std::shared_ptr<ResidentCounts> counts_;
};

}  // namespace

extern "C" SFAC_API int sfac_testing_fail_device_allocation(int64_t nth) {
  return sfac::testing::arm_device_allocation_failure(nth) ? 1 : 0;
}

extern "C" SFAC_API int sfac_testing_allow_16bit_top_n(int allow) {
  return sfac::testing::allow_16bit_top_n(allow != 0) ? 1 : 0;
}

extern "C" SFAC_API int sfac_testing_allow_two_pass_top_n(int allow) {
  return sfac::testing::allow_two_pass_top_n(allow != 0) ? 1 : 0;
}

extern "C" SFAC_API int sfac_testing_allow_warpgroup_top_n_scan(int allow) {
  return sfac::testing::allow_warpgroup_top_n_scan(allow != 0) ? 1 : 0;
}

extern "C" SFAC_API int64_t sfac_testing_warpgroup_top_n_scans(void) {
  return sfac::testing::warpgroup_top_n_scans();
}

extern "C" SFAC_API void sfac_testing_two_pass_top_n_counts(int64_t* listed, int64_t* left) {
  int64_t a = 0, b = 0;
  sfac::testing::two_pass_top_n_counts(&a, &b);
  if (listed != nullptr) *listed = a;
  if (left != nullptr) *left = b;
}

extern "C" SFAC_API sfac_status sfac_testing_resident_hook(sfac_model* model, int mode) {
  SFAC_API_BEGIN
  auto& m = sfac::capi::checked(model, "model");
  SFAC_REQUIRE(mode >= SFAC_TESTING_RESIDENT_NONE && mode <= SFAC_TESTING_RESIDENT_DECLINE,
               SFAC_ERR_INVALID_ARGUMENT, "mode = ", mode, " is not a SFAC_TESTING_RESIDENT_*");
  std::shared_ptr<sfac::Backend> inner = m.backend;
  if (const auto* hooked = dynamic_cast<const HookedBackend*>(inner.get())) inner = hooked->inner();
  m.backend = std::make_shared<HookedBackend>(std::move(inner), mode);
  m.impl.resident.reset();  // a copy the old backend made is not the new backend's
  SFAC_API_END
}

extern "C" SFAC_API sfac_status sfac_testing_resident_counts(const sfac_model* model,
                                                             int64_t* builds, int64_t* served) {
  SFAC_API_BEGIN
  const auto& m = sfac::capi::checked(model, "model");
  const auto* hooked = dynamic_cast<const HookedBackend*>(m.backend.get());
  SFAC_REQUIRE(hooked, SFAC_ERR_INVALID_ARGUMENT, "model has no sfac_testing_resident_hook");
  if (builds) *builds = hooked->counts().builds.load();
  if (served) *served = hooked->counts().served.load();
  SFAC_API_END
}
