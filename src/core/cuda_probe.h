// What the library can learn about CUDA without requiring a driver: safe on machines without
// a GPU or built without CUDA (then there are no devices).
#pragma once

#include <string>

namespace sfac {

bool cuda_compiled_in();
// Number of usable devices; 0 when there is no driver, no device or no CUDA in this build.
int cuda_device_count() noexcept;
// Name of a device, or "" when it cannot be queried.
std::string cuda_device_name(int device);
// The CUDA architectures compiled in, e.g. "80;90", or "" without CUDA.
const char* cuda_architectures();

}  // namespace sfac
