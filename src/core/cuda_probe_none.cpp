// cuda_probe for builds without CUDA.
#include "core/cuda_probe.h"

namespace sfac {

bool cuda_compiled_in() { return false; }
int cuda_device_count() noexcept { return 0; }
std::string cuda_device_name(int) { return {}; }
const char* cuda_architectures() { return ""; }

}  // namespace sfac
