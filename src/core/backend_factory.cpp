#include "core/backend.h"
#include "core/cuda_probe.h"
#include "core/error.h"
#include "cpu/cpu_backend.h"

#include <exception>

namespace sfac {

std::shared_ptr<Backend> create_backend(sfac_backend kind, int device, int num_threads) {
  SFAC_REQUIRE(kind == SFAC_BACKEND_AUTO || kind == SFAC_BACKEND_CPU || kind == SFAC_BACKEND_CUDA,
               SFAC_ERR_INVALID_ARGUMENT, "unknown backend ", static_cast<int>(kind));
  SFAC_REQUIRE(device >= 0, SFAC_ERR_INVALID_ARGUMENT, "device = ", device, " must be >= 0");
  SFAC_REQUIRE(num_threads >= 0, SFAC_ERR_INVALID_ARGUMENT, "num_threads = ", num_threads,
               " must be >= 0 (0 = all cores)");
  if (kind == SFAC_BACKEND_CUDA) {
    SFAC_REQUIRE(cuda_compiled_in(), SFAC_ERR_UNSUPPORTED,
                 "this build of libsparsefac has no CUDA backend (configure with "
                 "-DSPARSEFAC_CUDA=ON)");
    const int devices = cuda_device_count();
    SFAC_REQUIRE(devices > 0, SFAC_ERR_DEVICE, "no CUDA device is available (no driver or GPU)");
    SFAC_REQUIRE(device < devices, SFAC_ERR_OUT_OF_RANGE, "device = ", device, " but only ",
                 devices, " CUDA device(s) exist");
    return create_cuda_backend(device, num_threads);
  }
  auto host = std::make_shared<cpu::CpuBackend>(num_threads);
  if (kind == SFAC_BACKEND_AUTO && cuda_compiled_in() && device < cuda_device_count()) {
    // A device that exists but cannot be used (no memory, a broken driver) leaves AUTO on the
    // CPU too: AUTO never fails for want of a GPU.
    try {
      std::shared_ptr<Backend> cuda = create_cuda_backend(device, num_threads);
      cuda->set_host_fallback(std::move(host));
      return cuda;
    } catch (const std::exception&) {
    }
  }
  return host;
}

}  // namespace sfac
