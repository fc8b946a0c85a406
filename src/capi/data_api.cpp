#include "capi/guard.h"
#include "capi/handles.h"
#include "core/split.h"
#include "core/synthetic.h"

using sfac::capi::adopt_sparse;
using sfac::capi::checked;
using sfac::capi::require_pointer;

namespace {

sfac_status publish_split(sfac::Backend& backend, std::pair<sfac::HostCsr, sfac::HostCsr> parts,
                          sfac_sparse** train, sfac_sparse** test) {
  auto train_handle = adopt_sparse(backend, std::move(parts.first));
  auto test_handle = adopt_sparse(backend, std::move(parts.second));
  *train = train_handle.release();
  *test = test_handle.release();
  return SFAC_OK;
}

}  // namespace

extern "C" {

sfac_status sfac_synthesize_ratings(sfac_context* ctx, sfac_feedback feedback, int64_t users,
                                    int64_t items, int64_t nnz, int64_t rank, double noise,
                                    double skew, sfac_sparse** ratings, sfac_dense** user_factors,
                                    sfac_dense** item_factors) {
  SFAC_API_BEGIN
  auto& c = checked(ctx, "ctx");
  require_pointer(ratings, "ratings");
  auto& backend = *c.impl.backend;
  sfac::PlantedData data = sfac::synthesize(feedback, users, items, nnz, rank, noise, skew,
                                            c.impl.seed, backend.num_threads());
  auto r = adopt_sparse(backend, std::move(data.ratings));
  std::unique_ptr<sfac_dense> u, v;
  if (user_factors) {
    u = std::make_unique<sfac_dense>();
    u->impl = backend.make_dense(users, rank, SFAC_DTYPE_FLOAT32, data.user_factors.data());
  }
  if (item_factors) {
    v = std::make_unique<sfac_dense>();
    v->impl = backend.make_dense(items, rank, SFAC_DTYPE_FLOAT32, data.item_factors.data());
  }
  *ratings = r.release();
  if (user_factors) *user_factors = u.release();
  if (item_factors) *item_factors = v.release();
  SFAC_API_END
}

sfac_status sfac_split_random(const sfac_sparse* ratings, double test_fraction, uint64_t seed,
                              sfac_sparse** train, sfac_sparse** test) {
  SFAC_API_BEGIN
  const auto& m = *checked(ratings, "ratings").impl;
  require_pointer(train, "train");
  require_pointer(test, "test");
  return publish_split(m.backend(), sfac::split_random(m, test_fraction, seed), train, test);
  SFAC_API_END
}

sfac_status sfac_split_leave_k_out(const sfac_sparse* ratings, int64_t k, uint64_t seed,
                                   sfac_sparse** train, sfac_sparse** test) {
  SFAC_API_BEGIN
  const auto& m = *checked(ratings, "ratings").impl;
  require_pointer(train, "train");
  require_pointer(test, "test");
  return publish_split(m.backend(), sfac::split_leave_k_out(m, k, seed), train, test);
  SFAC_API_END
}

}  // extern "C"
