#include "core/error.h"
#include "cuda/cuda_cusparse_sddmm.h"
#include "cuda/cuda_dense.h"
#include "cuda/cuda_sddmm.h"

namespace sfac::cuda {
namespace {

size_t element_size(kernels::ElemType elem) { return elem == kernels::ElemType::F32 ? 4 : 2; }

}  // namespace

CudaTiledPlan::CudaTiledPlan(std::shared_ptr<Backend> backend, const void* pattern_id,
                             const CudaPattern& pattern, int64_t k, const TileChoice& choice,
                             int device, cudaStream_t stream)
    : SddmmPlan(pattern_id, k, SFAC_SDDMM_ALG_TILED),
      backend_(std::move(backend)),
      cells_f32_only_(choice.cells_f32_only),
      b_elements_(pattern.cols * k),
      min_b_bytes_(choice.min_b_bytes),
      l2_bytes_(choice.l2_bytes),
      dense_k_ok_(k >= choice.min_dense_k),
      tiling_(kernels::plan_band_tiling(pattern.rows, pattern.cols)) {
  if (choice.bands && kernels::band_tiling_pays(tiling_, pattern.rows, pattern.nnz)) {
    kernels::build_band_tables(pattern.offsets.data(), pattern.indices.data(), pattern.rows,
                               tiling_, tables_, stream);
    has_bands_ = true;
  }
  if (choice.cells && kernels::cells_pay(pattern.rows, pattern.cols, pattern.nnz)) {
    has_cells_ =
        kernels::build_cell_tables(pattern.offsets.data(), pattern.indices.data(), pattern.rows,
                                   pattern.cols, pattern.nnz, device, cells_, cell_tables_, stream);
  }
  if (choice.dense && kernels::dense_tiles_pay(pattern.rows, pattern.cols, pattern.nnz)) {
    dense_.bands = kernels::dense_bands(pattern.cols);
    dense_starts_ =
        DeviceBuffer<int32_t>(static_cast<size_t>(pattern.rows * (dense_.bands + 1)), stream);
    kernels::build_seg_starts(pattern.offsets.data(), pattern.indices.data(), pattern.rows,
                              kernels::kDenseTile, dense_.bands, dense_starts_.data(), stream);
    dense_.seg_start = dense_starts_.data();
    has_dense_ = true;
  }
  // The band order runs after the cells and the dense tiles (see run_cuda_sddmm): not worth
  // building where those already serve float32 and 16-bit factors alike.
  const bool served_ahead = has_cells_ && (dense_applies() || !cells_f32_only_);
  const int64_t l2_band_cols = kernels::l2_band_columns(
      pattern.rows, pattern.cols, pattern.nnz, k * int64_t{sizeof(float)}, choice.l2_bytes);
  if (l2_band_cols > 0 && !served_ahead) {
    kernels::build_l2_band_order(pattern.indices.data(), pattern.rows_of_nonzeros(stream),
                                 pattern.nnz, pattern.cols, l2_band_cols, l2_, l2_tables_, stream);
    has_l2_ = true;
  }
  if (choice.corner_density > 0.0 && !dense_applies() && !has_cells_) {
    has_corners_ = kernels::build_corner_tables(pattern.offsets.data(), pattern.indices.data(),
                                                pattern.rows_of_nonzeros(stream), pattern.rows,
                                                pattern.cols, pattern.nnz, choice.corner_density,
                                                corners_, corner_tables_, stream);
  }
  if (has_dense_ || has_corners_) kernels::allow_tile_shared_memory();
}

CudaTiledPlan::~CudaTiledPlan() {
  static_cast<const CudaBackend&>(*backend_).own_waits_for_current_noexcept();
}

const kernels::L2BandOrder* CudaTiledPlan::l2_order(kernels::ElemType elem) const {
  const int64_t size = static_cast<int64_t>(element_size(elem));
  const bool runs = kernels::l2_band_order_runs(elem == kernels::ElemType::F32, k() * size,
                                                b_elements_ * size, l2_bytes_);
  return has_l2_ && runs ? &l2_ : nullptr;
}

const kernels::BandTiling* CudaTiledPlan::bands(kernels::ElemType elem) const {
  const int64_t b_bytes = b_elements_ * static_cast<int64_t>(element_size(elem));
  if (!has_bands_ || b_bytes <= min_b_bytes_) return nullptr;
  return &tiling_;
}

kernels::ElemType elem_type(sfac_dtype dtype) {
  switch (dtype) {
    case SFAC_DTYPE_FLOAT16:
      return kernels::ElemType::F16;
    case SFAC_DTYPE_BFLOAT16:
      return kernels::ElemType::BF16;
    default:
      return kernels::ElemType::F32;
  }
}

kernels::SddmmOp to_op(sfac_sddmm_mode mode) {
  switch (mode) {
    case SFAC_SDDMM_SCALED:
      return kernels::SddmmOp::Scaled;
    case SFAC_SDDMM_PATTERN:
      return kernels::SddmmOp::Pattern;
    case SFAC_SDDMM_RESIDUAL:
      return kernels::SddmmOp::Residual;
  }
  fail(SFAC_ERR_INVALID_ARGUMENT, "unknown sddmm mode ", static_cast<int>(mode));
}

namespace {

// A plan of the library's own kernels (every algorithm but CUSPARSE). The caller holds the
// device and the own stream's order.
std::unique_ptr<SddmmPlan> make_own_plan(CudaBackend& backend, const CudaSparseMatrix& s, int64_t k,
                                         sfac_sddmm_algorithm algorithm) {
  const int64_t l2_bytes = backend.l2_bytes();
  TileChoice choice;  // explicit TILED: the defaults
  choice.l2_bytes = l2_bytes;
  if (algorithm == SFAC_SDDMM_ALG_AUTO) {
    // The nonzero-split kernel balances any row-length distribution and reuses A across a row
    // from registers; its B rows come from L2. Only when B outgrows L2 do its gathers go to
    // DRAM; then staging B once per band tile wins (measured on an H100, 50 MB L2, 100k x 100k at
    // 1%: B of 102 MB, 32.3 vs 56.9 ms), and the L2 band order below wins more where it applies.
    // Dense patterns run 16-bit factors on tensor-core tiles once K amortizes a tile's fixed
    // costs: 2k x 2k at 4%, bfloat16, 23 vs 30 us at K = 512, but 14 vs 12 at K = 128
    // (docs/perf-notes.md). Sparser power-law patterns may still have dense corners (tiles at
    // least 3% dense once rows and columns are ranked by degree), which pay from the same K:
    // Netflix shape, bfloat16, K = 512 14.3 -> 10.7 ms (10.9 from 2%), but K = 128 3.5 -> 3.8-4.0
    // ms (a tile's fixed costs), and not on the Yahoo shape, whose dense tiles hold only ~10% of
    // its nonzeros.
    choice.min_b_bytes = 3 * l2_bytes / 2;
    choice.min_dense_k = 256;
    choice.corner_density = k >= choice.min_dense_k ? 0.03 : 0.0;
    choice.bands =
        s.cols() * k * static_cast<int64_t>(sizeof(float)) > choice.min_b_bytes &&
        kernels::band_tiling_pays(kernels::plan_band_tiling(s.rows(), s.cols()), s.rows(), s.nnz());
    choice.dense = k >= choice.min_dense_k && kernels::dense_tiles_pay(s.rows(), s.cols(), s.nnz());
    // Patterns a few percent dense run float32 factors on cells once K is wide enough for the
    // gathers of B to be the bound: 2k x 2k at 4%, 21 vs 26 us at K = 256, 33 vs 46 at K = 512,
    // but 15 vs 12 us at K = 128 (docs/perf-notes.md).
    choice.cells = k >= kernels::kMinCellK && kernels::cells_pay(s.rows(), s.cols(), s.nnz());
    choice.cells_f32_only = true;
    // The L2 band order (sddmm_l2_bands.cuh) where it pays: B beyond L2 (Yahoo shape, float32 K
    // = 128: 34.8 -> 17.1 ms; uniform 100k x 100k at 1%, K = 512: 25.8 ms against the band
    // tiles' 32.3, bfloat16 14.2 against 22.7), or float32 rows of 512 bytes or more (Netflix
    // shape, K = 128: 5.79 -> 4.71 ms). It replaces the band tiles where it applies.
    const bool l2_order = kernels::l2_band_columns(s.rows(), s.cols(), s.nnz(),
                                                   k * int64_t{sizeof(float)}, l2_bytes) > 0;
    choice.l2_bytes = l2_order ? l2_bytes : 0;
    if (l2_order) choice.bands = false;
    const bool tiles = choice.bands || choice.cells || choice.dense || l2_order;
    if (!tiles && choice.corner_density > 0.0) {
      // Whether the pattern has dense corners is known once their tables are built.
      auto plan =
          std::make_unique<CudaTiledPlan>(backend.shared_from_this(), s.pattern_id(), s.pattern(),
                                          k, choice, backend.device(), backend.own_stream());
      if (plan->has_corners()) return plan;
    }
    algorithm = tiles ? SFAC_SDDMM_ALG_TILED : SFAC_SDDMM_ALG_NNZ_SPLIT;
  }
  if (algorithm == SFAC_SDDMM_ALG_TILED) {
    auto plan =
        std::make_unique<CudaTiledPlan>(backend.shared_from_this(), s.pattern_id(), s.pattern(), k,
                                        choice, backend.device(), backend.own_stream());
    // Calls the tiles do not serve run the nonzero split, which needs each nonzero's row.
    if (!plan->bands(kernels::ElemType::F32) || !plan->bands(kernels::ElemType::BF16))
      s.pattern().rows_of_nonzeros(backend.own_stream());
    return plan;
  }
  if (algorithm == SFAC_SDDMM_ALG_NNZ_SPLIT) s.pattern().rows_of_nonzeros(backend.own_stream());
  return std::make_unique<SddmmPlan>(s.pattern_id(), k, algorithm);
}

}  // namespace

bool cusparse_predicted_faster(int64_t rows, int64_t cols, int64_t nnz, int64_t k) {
  // Patterns of a few million nonzeros at least 3% dense, from K = 48: there cuSPARSE's tiles,
  // which reuse B's rows across nonzeros, beat the library's kernels in float32; at K = 32 and
  // on the sparser suite patterns the library's kernels win (measured in docs/perf-notes.md).
  if (rows <= 0 || cols <= 0 || nnz > (int64_t{1} << 23) || k < 48) return false;
  return static_cast<double>(nnz) >= 0.03 * static_cast<double>(rows) * static_cast<double>(cols);
}

std::unique_ptr<SddmmPlan> make_cuda_sddmm_plan(CudaBackend& backend, const SparseMatrix& pattern,
                                                int64_t k, sfac_sddmm_algorithm algorithm) {
  const auto& s = dynamic_cast<const CudaSparseMatrix&>(pattern);
  DeviceGuard guard(backend.device());
  OwnStreamWork order(backend);  // the plan's tables are built on (and owned by) the own stream
  if (algorithm == SFAC_SDDMM_ALG_CUSPARSE ||
      (algorithm == SFAC_SDDMM_ALG_AUTO && cusparse_takes(s) &&
       cusparse_predicted_faster(s.rows(), s.cols(), s.nnz(), k))) {
    return std::make_unique<CusparseSddmmPlan>(backend.shared_from_this(), s, k,
                                               make_own_plan(backend, s, k, SFAC_SDDMM_ALG_AUTO));
  }
  return make_own_plan(backend, s, k, algorithm);
}

void run_cuda_sddmm(const CudaBackend& backend, const SddmmCall& call) {
  DeviceGuard guard(backend.device());
  const auto& a = dynamic_cast<const CudaDenseMatrix&>(call.a);
  const auto& b = dynamic_cast<const CudaDenseMatrix&>(call.b);
  const auto& s = dynamic_cast<const CudaSparseMatrix&>(call.s);
  auto& p = dynamic_cast<CudaSparseMatrix&>(call.p);
  SFAC_REQUIRE(a.dtype() == b.dtype(), SFAC_ERR_UNSUPPORTED,
               "a and b must have the same dtype (mixed factor storage is not supported)");
  // Operands made by another context of this device (one that may be gone: objects outlive
  // their context) are ordered through that context's current stream: this call runs after
  // what it queued there, and what it queues next runs after this call.
  ForeignOrder foreign(backend, {&a.backend(), &b.backend(), &s.backend(), &p.backend()});
  const cudaStream_t stream = backend.stream();
  kernels::SddmmArgs args{};
  args.a = a.data();
  args.b = b.data();
  args.elem = elem_type(a.dtype());
  args.op = to_op(call.mode);
  args.row_offsets = s.pattern().offsets.data();
  args.cols = s.pattern().indices.data();
  args.s = s.values();
  args.p = p.values();
  args.rows = s.rows();
  args.nnz = s.nnz();
  args.k = a.stride();  // a and b: the same cols and dtype, so the same stride
  args.alpha = call.alpha;
  args.beta = call.beta;
  args.dependent_launch = backend.dependent_launch();
  const SddmmPlan* own_plan = &call.plan;
  if (call.plan.algorithm() == SFAC_SDDMM_ALG_CUSPARSE) {
    const auto& plan = static_cast<const CusparseSddmmPlan&>(call.plan);
    if (args.elem == kernels::ElemType::F32) {
      plan.run(backend, args, s.cols(), stream);
      return;
    }
    own_plan = &plan.others();
  }
  if (own_plan->algorithm() == SFAC_SDDMM_ALG_TILED) {
    const auto& plan = static_cast<const CudaTiledPlan&>(*own_plan);
    const kernels::DenseTiling* dense = plan.dense(args.elem);
    if (dense && kernels::launch_sddmm_dense_tiles(args, *dense, s.cols(), stream)) return;
    const kernels::CellTiling* cells = plan.cells(args.elem);
    if (cells && kernels::launch_sddmm_cells(args, *cells, s.cols(), stream)) return;
    const kernels::CornerTiling* corners = plan.corners(args.elem);
    if (corners && kernels::launch_sddmm_corner_tiles(args, *corners, s.cols(), stream)) {
      kernels::SddmmArgs rest = args;  // the nonzeros in no corner tile
      rest.cols = corners->residual_cols;
      rest.row_of = corners->residual_rows;
      rest.positions = corners->residual_pos;
      rest.nnz = corners->residual;
      kernels::launch_sddmm_nnz_split(rest, stream);
      return;
    }
    if (const kernels::L2BandOrder* l2 = plan.l2_order(args.elem)) {
      kernels::SddmmArgs banded = args;  // every nonzero, band by band
      banded.cols = l2->cols;
      banded.row_of = l2->rows;
      banded.positions = l2->positions;
      kernels::launch_sddmm_nnz_split(banded, stream);
      return;
    }
    const kernels::BandTiling* bands = plan.bands(args.elem);
    if (bands) return kernels::launch_sddmm_tiled(args, *bands, s.cols(), stream);
  }
  if (own_plan->algorithm() == SFAC_SDDMM_ALG_ROW_SPLIT) {
    kernels::launch_sddmm_row_split(args, stream);
  } else {
    // NNZ_SPLIT, and TILED calls no tile kernel serves (pattern too sparse, factors of another
    // element type).
    if (s.pattern().rows_built()) {
      args.row_of = s.pattern().rows_of_nonzeros(stream);
    } else {
      OwnStreamWork order(backend);  // built once, owned by the pattern
      args.row_of = s.pattern().rows_of_nonzeros(backend.own_stream());
    }
    kernels::launch_sddmm_nnz_split(args, stream);
  }
}

}  // namespace sfac::cuda
