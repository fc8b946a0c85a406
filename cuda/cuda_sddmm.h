// SDDMM on the CUDA backend: the TILED plan and its tables, the AUTO policy that chooses among
// the kernels, and the dispatch of a call to them.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "core/backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_sparse.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm/sddmm_cells.cuh"
#include "cuda/kernels/sddmm/sddmm_corner.cuh"
#include "cuda/kernels/sddmm/sddmm_dense_tiles.cuh"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"
#include "cuda/kernels/sddmm/sddmm_l2_bands.cuh"
#include "cuda/kernels/sddmm/sddmm_tiled.cuh"
#include "cuda/sddmm_planning.h"

namespace sfac::cuda {

// Which tile kernels a TILED plan builds tables for, and the regimes it runs them in. The
// defaults are explicit TILED's: every tile kernel, every element type, any K.
struct TileChoice {
  bool bands = true, cells = true, dense = true;
  bool cells_f32_only = false;
  int64_t min_b_bytes = -1;  // bands only for factors whose B is larger
  int64_t min_dense_k = 0;   // dense tiles only from this K
  double corner_density = kernels::kMinDenseTileDensity;  // 0: no corner tables
  // L2 band order for a device with `l2_bytes` of L2 (0: none), where it pays (see
  // sddmm_planning.h).
  int64_t l2_bytes = 0;
};

// A TILED plan owns the tables of the tiled kernels it may run (see sddmm_tiled.cuh,
// sddmm_cells.cuh, sddmm_dense_tiles.cuh and sddmm_corner.cuh): band tiles where their table is
// no larger than the pattern itself, cells where the pattern is a few percent dense, dense
// tensor-core tiles for 16-bit factors where it is dense enough, or else for its dense corners
// (tiles at least `corner_density` dense once rows and columns are ranked by degree), and the
// nonzeros in L2 band order where B outgrows L2 or float32 rows are wide (sddmm_l2_bands.cuh).
// Calls none serves run the nonzero-split kernel. A plan that AUTO chose runs the bands only for
// factors whose B exceeds `min_b_bytes`, the cells only for float32 factors (`cells_f32_only`), and
// the dense tiles only from K = `min_dense_k` (the regimes they win in, see make_cuda_sddmm_plan).
class CudaTiledPlan final : public SddmmPlan {
 public:
  CudaTiledPlan(std::shared_ptr<Backend> backend, const void* pattern_id,
                const CudaPattern& pattern, int64_t k, const TileChoice& choice, int device,
                cudaStream_t stream);
  ~CudaTiledPlan() override;

  bool has_corners() const { return has_corners_; }
  // Null where the L2 band order does not serve factors of this element type.
  const kernels::L2BandOrder* l2_order(kernels::ElemType elem) const;

  // Null when the band tiles do not serve factors of this element type.
  const kernels::BandTiling* bands(kernels::ElemType elem) const;
  // Null for patterns sparser than kMinCellDensity, and for 16-bit factors in an AUTO plan (they
  // run the dense tiles from K = 256 and gather faster than the cells below).
  const kernels::CellTiling* cells(kernels::ElemType elem) const {
    if (!has_cells_ || (cells_f32_only_ && elem != kernels::ElemType::F32)) return nullptr;
    return &cells_;
  }
  // Null for float32 factors (tensor cores would round them), sparse patterns, and K below
  // `min_dense_k`.
  const kernels::DenseTiling* dense(kernels::ElemType elem) const {
    return dense_applies() && elem != kernels::ElemType::F32 ? &dense_ : nullptr;
  }
  // Null for float32 factors and patterns without dense corners.
  const kernels::CornerTiling* corners(kernels::ElemType elem) const {
    return has_corners_ && elem != kernels::ElemType::F32 ? &corners_ : nullptr;
  }

 private:
  // Declared first, destroyed last: the buffers are freed on the backend's stream, which must
  // outlive them even when the context is destroyed before the plan.
  std::shared_ptr<Backend> backend_;
  bool cells_f32_only_;
  int64_t b_elements_;
  int64_t min_b_bytes_;
  int64_t l2_bytes_;
  bool dense_k_ok_;
  bool has_bands_ = false, has_cells_ = false, has_dense_ = false, has_corners_ = false;
  kernels::BandTables tables_;
  kernels::BandTiling tiling_;
  kernels::CellTables cell_tables_;
  kernels::CellTiling cells_;
  DeviceBuffer<int32_t> dense_starts_;
  kernels::DenseTiling dense_;
  kernels::CornerTables corner_tables_;
  kernels::CornerTiling corners_;
  bool has_l2_ = false;
  kernels::L2BandTables l2_tables_;
  kernels::L2BandOrder l2_;

  bool dense_applies() const { return has_dense_ && dense_k_ok_; }
};

// The kernels' element type for a factor dtype, and their op for an sddmm mode.
kernels::ElemType elem_type(sfac_dtype dtype);
kernels::SddmmOp to_op(sfac_sddmm_mode mode);

// AUTO's rule for the CUSPARSE algorithm: whether cusparseSDDMM is predicted to beat the
// library's own kernels on float32 factors for this pattern shape and K.
bool cusparse_predicted_faster(int64_t rows, int64_t cols, int64_t nnz, int64_t k);

// CudaBackend::make_sddmm_plan: `pattern` is a CudaSparseMatrix of `backend`. AUTO resolves to
// CUSPARSE where cusparse_predicted_faster says so (16-bit factors then run the plan AUTO would
// have made otherwise), else to the library's kernels.
std::unique_ptr<SddmmPlan> make_cuda_sddmm_plan(CudaBackend& backend, const SparseMatrix& pattern,
                                                int64_t k, sfac_sddmm_algorithm algorithm);

// CudaBackend::sddmm: the call has been validated (shapes, patterns, plan); its operands are
// CUDA objects of the backend's device.
void run_cuda_sddmm(const CudaBackend& backend, const SddmmCall& call);

}  // namespace sfac::cuda
