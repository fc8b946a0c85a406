// The per-model cache of the copy a backend keeps for inference.
#include "core/resident_model.h"

#include "core/backend.h"

namespace sfac {

std::shared_ptr<ResidentModel> ResidentCache::get(Backend& backend, const Model& model) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!built_) {
    copy_ = backend.make_resident_model(model);
    built_ = true;  // only now: a build that threw is retried by the next call
  }
  return copy_;
}

void ResidentCache::reset() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  copy_.reset();
  built_ = false;
}

}  // namespace sfac
