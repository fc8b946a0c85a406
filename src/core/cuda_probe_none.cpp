// cuda_probe for builds without CUDA.
#include "core/backend.h"
#include "core/cuda_probe.h"
#include "core/error.h"

namespace sfac {

bool cuda_compiled_in() { return false; }
int cuda_device_count() noexcept { return 0; }
std::string cuda_device_name(int) { return {}; }
const char* cuda_architectures() { return ""; }

std::shared_ptr<Backend> create_cuda_backend(int, int) {
  fail(SFAC_ERR_UNSUPPORTED, "this build of libsparsefac has no CUDA backend");
}

}  // namespace sfac
