#include "cuda/cuda_check.h"
#include "cuda/kernels/common/grid_stride.cuh"
#include "cuda/kernels/sddmm/sddmm_common.cuh"
#include "cuda/kernels/sddmm/sddmm_finish.cuh"

namespace sfac::cuda::kernels {
namespace {

__global__ void sddmm_finish(SddmmArgs args, const float* dots) {
  for_each_index(args.nnz, [&](int64_t e) { detail::store(args, e, dots[e]); });
}

__global__ void narrow_offsets(const int64_t* in, int64_t n, int32_t* out) {
  for_each_index(n, [&](int64_t i) { out[i] = static_cast<int32_t>(in[i]); });
}

}  // namespace

void launch_sddmm_finish(const SddmmArgs& args, const float* dots, cudaStream_t stream) {
  if (args.nnz == 0) return;
  sddmm_finish<<<blocks_for(args.nnz), 256, 0, stream>>>(args, dots);
  SFAC_CUDA_CHECK_LAUNCH();
}

void launch_narrow_offsets(const int64_t* in, int64_t n, int32_t* out, cudaStream_t stream) {
  if (n == 0) return;
  narrow_offsets<<<blocks_for(n), 256, 0, stream>>>(in, n, out);
  SFAC_CUDA_CHECK_LAUNCH();
}

}  // namespace sfac::cuda::kernels
