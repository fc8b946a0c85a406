#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/device_pool.h"
#include "cuda/kernels/sddmm_cells.cuh"
#include "cuda/kernels/sddmm_corner.cuh"
#include "cuda/kernels/sddmm_dense_tiles.cuh"
#include "cuda/kernels/sddmm_kernels.cuh"
#include "cuda/kernels/sddmm_l2_bands.cuh"
#include "cuda/kernels/sddmm_tiled.cuh"
#include "cuda/kernels/sparse_convert.cuh"
#include "cuda/kernels/sparse_reorder.cuh"

namespace sfac::cuda {
namespace {

// An immutable CSR pattern on the device, plus the COO row array and the CSC view, each built
// on the device on first use.
struct CudaPattern {
  int64_t rows = 0, cols = 0, nnz = 0;
  DeviceBuffer<int64_t> offsets;
  DeviceBuffer<int32_t> indices;

  const int32_t* rows_of_nonzeros(cudaStream_t stream) const {
    std::call_once(row_of_once_, [&] {
      DeviceBuffer<int32_t> r(static_cast<size_t>(nnz), stream);
      kernels::launch_expand_rows(offsets.data(), rows, r.data(), stream);
      row_of_ = std::move(r);
      rows_built_.store(true, std::memory_order_release);
    });
    return row_of_.data();
  }
  bool rows_built() const { return rows_built_.load(std::memory_order_acquire); }

  struct Csc {
    DeviceBuffer<int64_t> offsets;
    DeviceBuffer<int32_t> indices;
    DeviceBuffer<int64_t> csr_position;
  };
  const Csc& csc(cudaStream_t stream) const {
    std::call_once(csc_once_, [&] {
      const int32_t* row_of = rows_of_nonzeros(stream);
      Csc c{DeviceBuffer<int64_t>(static_cast<size_t>(cols) + 1, stream),
            DeviceBuffer<int32_t>(static_cast<size_t>(nnz), stream),
            DeviceBuffer<int64_t>(static_cast<size_t>(nnz), stream)};
      kernels::build_csc(indices.data(), row_of, cols, nnz, c.offsets.data(), c.indices.data(),
                         c.csr_position.data(), stream);
      csc_ = std::move(c);
    });
    return csc_;
  }

 private:
  mutable std::once_flag row_of_once_, csc_once_;
  mutable std::atomic<bool> rows_built_{false};
  mutable DeviceBuffer<int32_t> row_of_;
  mutable Csc csc_;
};

class CudaSparseMatrix final : public SparseMatrix {
 public:
  CudaSparseMatrix(std::shared_ptr<Backend> backend, std::shared_ptr<const CudaPattern> pattern,
                   DeviceBuffer<float> values)
      : SparseMatrix(std::move(backend), pattern->rows, pattern->cols, pattern->nnz),
        pattern_(std::move(pattern)),
        values_(std::move(values)) {}

  const CudaPattern& pattern() const { return *pattern_; }
  const float* values() const { return values_.data(); }
  float* values() { return values_.data(); }

  const void* pattern_id() const override { return pattern_.get(); }

  bool same_pattern(const SparseMatrix& other) const override {
    if (other.pattern_id() == pattern_id()) return true;
    if (other.rows() != rows() || other.cols() != cols() || other.nnz() != nnz()) return false;
    if (const auto* o = dynamic_cast<const CudaSparseMatrix*>(&other);
        o && o->backend().device() == backend().device()) {
      // Compared where the patterns live: no transfer to the host in an sddmm call.
      DeviceGuard guard(backend().device());
      const CudaPattern &x = *pattern_, &y = o->pattern();
      return kernels::equal_arrays(x.offsets.data(), y.offsets.data(), rows() + 1, stream()) &&
             kernels::equal_arrays(x.indices.data(), y.indices.data(), nnz(), stream());
    }
    std::vector<int64_t> a_off(rows() + 1), b_off(rows() + 1);
    std::vector<int32_t> a_idx(nnz()), b_idx(nnz());
    download_csr(a_off.data(), a_idx.data(), nullptr);
    other.download_csr(b_off.data(), b_idx.data(), nullptr);
    return a_off == b_off && a_idx == b_idx;
  }

  ~CudaSparseMatrix() override { cuda_backend().own_waits_for_current_noexcept(); }

  void download_csr(int64_t* offsets, int32_t* col_indices, float* values) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    if (offsets) pattern_->offsets.download(offsets, rows() + 1);
    if (col_indices) pattern_->indices.download(col_indices, nnz());
    if (values) values_.download(values, nnz());
  }

  void download_coo(int32_t* row_indices, int32_t* col_indices, float* values) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    if (row_indices) {
      const int32_t* row_of = pattern_->rows_of_nonzeros(stream());
      SFAC_CUDA_TRY(cudaMemcpyAsync(row_indices, row_of, nnz() * sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, stream()));
      SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));
    }
    download_csr(nullptr, col_indices, values);
  }

  void download_csc(int64_t* offsets, int32_t* row_indices, float* values) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    const CudaPattern::Csc& csc = pattern_->csc(stream());
    if (offsets) csc.offsets.download(offsets, cols() + 1);
    if (row_indices) csc.indices.download(row_indices, nnz());
    if (values) {
      DeviceBuffer<float> permuted(static_cast<size_t>(nnz()), stream());
      kernels::gather(values_.data(), csc.csr_position.data(), nnz(), permuted.data(), stream());
      permuted.download(values, nnz());
    }
  }

  void set_values(const float* values) override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    values_.upload(values, nnz());
  }

  std::unique_ptr<SparseMatrix> create_like(const float* values) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    DeviceBuffer<float> v(static_cast<size_t>(nnz()), stream());
    if (values) {
      v.upload(values, nnz());
      SFAC_CUDA_TRY(cudaStreamSynchronize(stream()));  // `values` may die after the call
    } else if (nnz() > 0) {
      SFAC_CUDA_TRY(cudaMemsetAsync(v.data(), 0, nnz() * sizeof(float), stream()));
    }
    return std::make_unique<CudaSparseMatrix>(backend_ptr(), pattern_, std::move(v));
  }

  void degree_order(sfac_axis axis, int32_t* order) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork ordered(cuda_backend());
    const int64_t n = axis == SFAC_AXIS_ROWS ? rows() : cols();
    DeviceBuffer<int32_t> ids(static_cast<size_t>(n), stream());
    if (axis == SFAC_AXIS_ROWS) {
      kernels::order_rows_by_degree(pattern_->offsets.data(), n, ids.data(), nullptr, stream());
    } else {
      kernels::order_cols_by_degree(pattern_->indices.data(), nnz(), n, ids.data(), nullptr,
                                    stream());
    }
    ids.download(order, static_cast<size_t>(n));
  }

  // Whole rows gathered in the new order with their columns renumbered, then each row's columns
  // sorted again (kernels::permute_csr): no sort across rows.
  std::unique_ptr<SparseMatrix> permuted(const int32_t* row_order,
                                         const int32_t* col_order) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork ordered(cuda_backend());
    DeviceBuffer<int32_t> d_row_order, col_rank;
    if (row_order) {
      d_row_order = DeviceBuffer<int32_t>(static_cast<size_t>(rows()), stream());
      d_row_order.upload(row_order, static_cast<size_t>(rows()));
    }
    if (col_order) col_rank = ranks(col_order, cols());
    auto pattern = std::make_shared<CudaPattern>();
    pattern->rows = rows();
    pattern->cols = cols();
    pattern->nnz = nnz();
    DeviceBuffer<float> values;
    kernels::permute_csr(pattern_->offsets.data(), pattern_->indices.data(), values_.data(), rows(),
                         nnz(), row_order ? d_row_order.data() : nullptr,
                         col_order ? col_rank.data() : nullptr, pattern->offsets, pattern->indices,
                         values, stream());
    return std::make_unique<CudaSparseMatrix>(backend_ptr(), std::move(pattern), std::move(values));
  }

 private:
  const CudaBackend& cuda_backend() const { return static_cast<const CudaBackend&>(backend()); }
  // The matrix's own work (transfers, conversions) runs on the backend's own stream.
  cudaStream_t stream() const { return cuda_backend().own_stream(); }

  // rank[order[i]] = i on the device, for a host permutation `order` of n entries.
  DeviceBuffer<int32_t> ranks(const int32_t* order, int64_t n) const {
    DeviceBuffer<int32_t> d_order(static_cast<size_t>(n), stream());
    DeviceBuffer<int32_t> rank(static_cast<size_t>(n), stream());
    d_order.upload(order, static_cast<size_t>(n));
    kernels::invert_permutation(d_order.data(), n, rank.data(), stream());
    return rank;
  }

  std::shared_ptr<const CudaPattern> pattern_;
  DeviceBuffer<float> values_;
};

// Host conversions between float and the bits of float16 / bfloat16 (round to nearest even).
uint16_t to_half_bits(float x, sfac_dtype dtype) {
  if (dtype == SFAC_DTYPE_FLOAT16) return static_cast<__half_raw>(__float2half_rn(x)).x;
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x;
}

float from_half_bits(uint16_t bits, sfac_dtype dtype) {
  if (dtype == SFAC_DTYPE_FLOAT16) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}

// Dense factors stored as float32, float16 or bfloat16 (converted on upload, round to nearest
// even); kernels read the storage type and compute in float32.
class CudaDenseMatrix final : public DenseMatrix {
 public:
  CudaDenseMatrix(std::shared_ptr<Backend> backend, int64_t rows, int64_t cols, sfac_dtype dtype,
                  cudaStream_t stream)
      : DenseMatrix(std::move(backend), rows, cols, dtype),
        bytes_(static_cast<size_t>(rows * cols) * element_size(dtype), stream) {}

  ~CudaDenseMatrix() override { cuda_backend().own_waits_for_current_noexcept(); }

  static size_t element_size(sfac_dtype dtype) { return dtype == SFAC_DTYPE_FLOAT32 ? 4 : 2; }

  const void* data() const { return bytes_.data(); }
  void* data() { return bytes_.data(); }

  void upload(const float* data) override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    const int64_t n = rows() * cols();
    if (dtype() == SFAC_DTYPE_FLOAT32) {
      bytes_.upload(reinterpret_cast<const uint8_t*>(data), n * sizeof(float));
      return;
    }
    std::vector<uint16_t> half(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      half[i] = to_half_bits(data[i], dtype());
      SFAC_REQUIRE(std::isfinite(from_half_bits(half[i], dtype())), SFAC_ERR_INVALID_VALUE, "data[",
                   i, "] = ", data[i], " overflows ",
                   dtype() == SFAC_DTYPE_FLOAT16 ? "float16" : "bfloat16");
    }
    bytes_.upload(reinterpret_cast<const uint8_t*>(half.data()), n * sizeof(uint16_t));
    SFAC_CUDA_TRY(cudaStreamSynchronize(cuda_backend().own_stream()));
  }

  void download(float* data) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork order(cuda_backend());
    const int64_t n = rows() * cols();
    if (dtype() == SFAC_DTYPE_FLOAT32) {
      bytes_.download(reinterpret_cast<uint8_t*>(data), n * sizeof(float));
      return;
    }
    std::vector<uint16_t> half(static_cast<size_t>(n));
    bytes_.download(reinterpret_cast<uint8_t*>(half.data()), n * sizeof(uint16_t));
    for (int64_t i = 0; i < n; ++i) data[i] = from_half_bits(half[i], dtype());
  }

  std::unique_ptr<DenseMatrix> permuted_rows(const int32_t* order) const override {
    DeviceGuard guard(backend().device());
    OwnStreamWork ordered(cuda_backend());
    cudaStream_t stream = cuda_backend().own_stream();
    auto out = std::make_unique<CudaDenseMatrix>(backend().shared_from_this(), rows(), cols(),
                                                 dtype(), stream);
    DeviceBuffer<int32_t> d_order(static_cast<size_t>(rows()), stream);
    d_order.upload(order, static_cast<size_t>(rows()));
    kernels::gather_rows(data(), d_order.data(), rows(),
                         cols() * static_cast<int64_t>(element_size(dtype())), out->data(), stream);
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // `order` may die after the call
    return out;
  }

 private:
  const CudaBackend& cuda_backend() const { return static_cast<const CudaBackend&>(backend()); }

  DeviceBuffer<uint8_t> bytes_;
};

size_t element_size(kernels::ElemType elem) { return elem == kernels::ElemType::F32 ? 4 : 2; }

// Which tile kernels a TILED plan builds tables for, and the regimes it runs them in. The
// defaults are explicit TILED's: every tile kernel, every element type, any K.
struct TileChoice {
  bool bands = true, cells = true, dense = true;
  bool cells_f32_only = false;
  int64_t min_b_bytes = -1;  // bands only for factors whose B is larger
  int64_t min_dense_k = 0;   // dense tiles only from this K
  double corner_density = kernels::kMinDenseTileDensity;  // 0: no corner tables
  // L2 band order for a device with `l2_bytes` of L2 (0: none), where it pays (see
  // sddmm_l2_bands.cuh).
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
// the dense tiles only from K = `min_dense_k` (the regimes they win in, see make_sddmm_plan).
class CudaTiledPlan final : public SddmmPlan {
 public:
  CudaTiledPlan(std::shared_ptr<Backend> backend, const void* pattern_id,
                const CudaPattern& pattern, int64_t k, const TileChoice& choice, int device,
                cudaStream_t stream)
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
      has_cells_ = kernels::build_cell_tables(pattern.offsets.data(), pattern.indices.data(),
                                              pattern.rows, pattern.cols, pattern.nnz, device,
                                              cells_, cell_tables_, stream);
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
    // The band order runs after the cells and the dense tiles (see sddmm): not worth building
    // where those already serve float32 and 16-bit factors alike (K whole 16-byte vectors for
    // both, else their launches decline).
    const bool served_ahead = has_cells_ && (dense_applies() || !cells_f32_only_) && k % 8 == 0;
    const int64_t l2_band_cols = kernels::l2_band_columns(
        pattern.rows, pattern.cols, pattern.nnz, k * int64_t{sizeof(float)}, choice.l2_bytes);
    if (l2_band_cols > 0 && !served_ahead) {
      kernels::build_l2_band_order(pattern.indices.data(), pattern.rows_of_nonzeros(stream),
                                   pattern.nnz, pattern.cols, l2_band_cols, l2_, l2_tables_,
                                   stream);
      has_l2_ = true;
    }
    if (choice.corner_density > 0.0 && !dense_applies() && !has_cells_ && k % 8 == 0) {
      has_corners_ = kernels::build_corner_tables(pattern.offsets.data(), pattern.indices.data(),
                                                  pattern.rows_of_nonzeros(stream), pattern.rows,
                                                  pattern.cols, pattern.nnz, choice.corner_density,
                                                  corners_, corner_tables_, stream);
    }
    if (has_dense_ || has_corners_) kernels::allow_tile_shared_memory();
  }
  ~CudaTiledPlan() override {
    static_cast<const CudaBackend&>(*backend_).own_waits_for_current_noexcept();
  }

  bool has_corners() const { return has_corners_; }
  // Null where the L2 band order does not serve factors of this element type.
  const kernels::L2BandOrder* l2_order(kernels::ElemType elem) const {
    const int64_t size = static_cast<int64_t>(element_size(elem));
    const bool runs = kernels::l2_band_order_runs(elem == kernels::ElemType::F32, k() * size,
                                                  b_elements_ * size, l2_bytes_);
    return has_l2_ && runs ? &l2_ : nullptr;
  }

  // Null when the band tiles do not serve factors of this element type.
  const kernels::BandTiling* bands(kernels::ElemType elem) const {
    const int64_t b_bytes = b_elements_ * static_cast<int64_t>(element_size(elem));
    if (!has_bands_ || b_bytes <= min_b_bytes_) return nullptr;
    return &tiling_;
  }
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

}  // namespace

DeviceGuard::DeviceGuard(int device) {
  SFAC_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device) SFAC_CUDA_TRY(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    (void)cudaSetDevice(previous_);
  }
}

CudaBackend::CudaBackend(int device, int num_threads)
    : device_(device), num_threads_(num_threads > 0 ? num_threads : omp_get_max_threads()) {
  DeviceGuard guard(device);
  cudaDeviceProp prop{};
  SFAC_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  name_ = prop.name;
  l2_bytes_ = prop.l2CacheSize;
  dependent_launch_ = prop.major >= 9;
  SFAC_CUDA_TRY(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  stream_ = own_stream_;
  SFAC_CUDA_TRY(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
}

CudaBackend::~CudaBackend() {
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_);
  if (stream_ != own_stream_) (void)cudaStreamSynchronize(stream_);
  (void)cudaStreamSynchronize(own_stream_);
  (void)cudaEventDestroy(order_event_);
  (void)cudaStreamDestroy(own_stream_);
  // The last object of this context is gone: what the library's pool caches for the device goes
  // back to it (other contexts on the device keep their blocks in use).
  release_cached_memory(device_);
  (void)cudaSetDevice(previous);
}

cudaError_t CudaBackend::order(cudaStream_t first, cudaStream_t then) const noexcept {
  const cudaError_t recorded = cudaEventRecord(order_event_, first);
  return recorded != cudaSuccess ? recorded : cudaStreamWaitEvent(then, order_event_, 0);
}

void CudaBackend::own_waits_for_current() const {
  if (stream_ != own_stream_) SFAC_CUDA_TRY(order(stream_, own_stream_));
}

void CudaBackend::own_waits_for_current_noexcept() const noexcept {
  if (stream_ != own_stream_) (void)order(stream_, own_stream_);
}

void CudaBackend::current_waits_for_own() const noexcept {
  if (stream_ != own_stream_) (void)order(own_stream_, stream_);
}

void CudaBackend::set_stream(void* stream) {
  DeviceGuard guard(device_);
  const cudaStream_t next = stream ? static_cast<cudaStream_t>(stream) : own_stream_;
  if (next == stream_) return;
  if (next != own_stream_) {
    int device = -1;
    SFAC_REQUIRE(cudaStreamGetDevice(next, &device) == cudaSuccess, SFAC_ERR_INVALID_ARGUMENT,
                 "stream is not a valid CUDA stream");
    SFAC_REQUIRE(device == device_, SFAC_ERR_INVALID_ARGUMENT, "stream belongs to CUDA device ",
                 device, " but the context uses device ", device_);
  }
  // Whatever the context queued on the previous stream runs before anything on the next one.
  SFAC_CUDA_TRY(order(stream_, next));
  stream_ = next;
}

std::unique_ptr<SparseMatrix> CudaBackend::make_sparse(HostCsr csr) {
  DeviceGuard guard(device_);
  auto pattern = std::make_shared<CudaPattern>();
  pattern->rows = csr.rows;
  pattern->cols = csr.cols;
  pattern->nnz = csr.nnz();
  pattern->offsets = DeviceBuffer<int64_t>(csr.offsets.size(), own_stream_);
  pattern->offsets.upload(csr.offsets.data(), csr.offsets.size());
  pattern->indices = DeviceBuffer<int32_t>(csr.indices.size(), own_stream_);
  pattern->indices.upload(csr.indices.data(), csr.indices.size());
  DeviceBuffer<float> values(csr.values.size(), own_stream_);
  values.upload(csr.values.data(), csr.values.size());
  // The host vectors die at return: the copies must have left them.
  SFAC_CUDA_TRY(cudaStreamSynchronize(own_stream_));
  return std::make_unique<CudaSparseMatrix>(shared_from_this(), std::move(pattern),
                                            std::move(values));
}

// Sorted and deduplicated on the device (the transfer of 12 bytes per nonzero plus a radix sort
// beats the host's per-row sorts on large inputs); same result and messages as the host path.
std::unique_ptr<SparseMatrix> CudaBackend::make_sparse_from_coo(
    int64_t rows, int64_t cols, int64_t nnz, const int32_t* row_indices, const int32_t* col_indices,
    const float* values, DuplicatePolicy duplicates) {
  DeviceGuard guard(device_);
  auto pattern = std::make_shared<CudaPattern>();
  pattern->rows = rows;
  pattern->cols = cols;
  DeviceBuffer<float> csr_values;
  kernels::DuplicateEntry duplicate;
  if (!kernels::csr_from_coo(row_indices, col_indices, values, nnz, rows,
                             duplicates == DuplicatePolicy::Sum, pattern->offsets, pattern->indices,
                             csr_values, duplicate, own_stream_)) {
    fail_duplicate_entry(duplicate.row, duplicate.col, duplicate.first, duplicate.second);
  }
  pattern->nnz = static_cast<int64_t>(pattern->indices.size());
  return std::make_unique<CudaSparseMatrix>(shared_from_this(), std::move(pattern),
                                            std::move(csr_values));
}

std::unique_ptr<DenseMatrix> CudaBackend::make_dense(int64_t rows, int64_t cols, sfac_dtype dtype,
                                                     const float* data) {
  DeviceGuard guard(device_);
  auto m = std::make_unique<CudaDenseMatrix>(shared_from_this(), rows, cols, dtype, own_stream_);
  if (data) {
    m->upload(data);  // ordered with the current stream itself
  } else if (rows * cols > 0) {
    OwnStreamWork ordered(*this);
    // All-zero bits are 0.0 in float32, float16 and bfloat16 alike.
    SFAC_CUDA_TRY(cudaMemsetAsync(m->data(), 0, rows * cols * CudaDenseMatrix::element_size(dtype),
                                  own_stream_));
  }
  return m;
}

std::unique_ptr<SddmmPlan> CudaBackend::make_sddmm_plan(const SparseMatrix& pattern, int64_t k,
                                                        sfac_sddmm_algorithm algorithm) {
  const auto& s = dynamic_cast<const CudaSparseMatrix&>(pattern);
  DeviceGuard guard(device_);
  OwnStreamWork order(*this);  // the plan's tables are built on (and owned by) the own stream
  TileChoice choice;           // explicit TILED: the defaults
  choice.l2_bytes = l2_bytes_;
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
    choice.min_b_bytes = 3 * l2_bytes_ / 2;
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
                                                   k * int64_t{sizeof(float)}, l2_bytes_) > 0;
    choice.l2_bytes = l2_order ? l2_bytes_ : 0;
    if (l2_order) choice.bands = false;
    const bool tiles = choice.bands || choice.cells || choice.dense || l2_order;
    if (!tiles && choice.corner_density > 0.0) {
      // Whether the pattern has dense corners is known once their tables are built.
      auto plan = std::make_unique<CudaTiledPlan>(shared_from_this(), s.pattern_id(), s.pattern(),
                                                  k, choice, device_, own_stream_);
      if (plan->has_corners()) return plan;
    }
    algorithm = tiles ? SFAC_SDDMM_ALG_TILED : SFAC_SDDMM_ALG_NNZ_SPLIT;
  }
  if (algorithm == SFAC_SDDMM_ALG_TILED) {
    auto plan = std::make_unique<CudaTiledPlan>(shared_from_this(), s.pattern_id(), s.pattern(), k,
                                                choice, device_, own_stream_);
    // Calls the tiles do not serve run the nonzero split, which needs each nonzero's row.
    if (!plan->bands(kernels::ElemType::F32) || !plan->bands(kernels::ElemType::BF16))
      s.pattern().rows_of_nonzeros(own_stream_);
    return plan;
  }
  if (algorithm == SFAC_SDDMM_ALG_NNZ_SPLIT) s.pattern().rows_of_nonzeros(own_stream_);
  return std::make_unique<SddmmPlan>(pattern.pattern_id(), k, algorithm);
}

namespace {

class ForeignOrder {
 public:
  ForeignOrder(const CudaBackend& self, std::initializer_list<const Backend*> owners)
      : self_(self) {
    for (const Backend* owner : owners) {
      const auto* cuda = static_cast<const CudaBackend*>(owner);
      if (cuda == &self_ || std::find(foreign_.begin(), foreign_.end(), cuda) != foreign_.end())
        continue;
      foreign_.push_back(cuda);
      SFAC_CUDA_TRY(self_.order(cuda->stream(), self_.stream()));
    }
  }
  ~ForeignOrder() {
    for (const CudaBackend* cuda : foreign_) (void)self_.order(self_.stream(), cuda->stream());
  }
  ForeignOrder(const ForeignOrder&) = delete;
  ForeignOrder& operator=(const ForeignOrder&) = delete;

 private:
  const CudaBackend& self_;
  std::vector<const CudaBackend*> foreign_;
};

}  // namespace

void CudaBackend::sddmm(const SddmmCall& call) {
  DeviceGuard guard(device_);
  const auto& a = dynamic_cast<const CudaDenseMatrix&>(call.a);
  const auto& b = dynamic_cast<const CudaDenseMatrix&>(call.b);
  const auto& s = dynamic_cast<const CudaSparseMatrix&>(call.s);
  auto& p = dynamic_cast<CudaSparseMatrix&>(call.p);
  SFAC_REQUIRE(a.dtype() == b.dtype(), SFAC_ERR_UNSUPPORTED,
               "a and b must have the same dtype (mixed factor storage is not supported)");
  // Operands made by another context of this device (one that may be gone: objects outlive
  // their context) are ordered through that context's current stream: this call runs after
  // what it queued there, and what it queues next runs after this call.
  ForeignOrder foreign(*this, {&a.backend(), &b.backend(), &s.backend(), &p.backend()});
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
  args.k = a.cols();
  args.alpha = call.alpha;
  args.beta = call.beta;
  args.dependent_launch = dependent_launch_;
  if (call.plan.algorithm() == SFAC_SDDMM_ALG_TILED) {
    const auto& plan = static_cast<const CudaTiledPlan&>(call.plan);
    const kernels::DenseTiling* dense = plan.dense(args.elem);
    if (dense && kernels::launch_sddmm_dense_tiles(args, *dense, s.cols(), stream_)) return;
    const kernels::CellTiling* cells = plan.cells(args.elem);
    if (cells && kernels::launch_sddmm_cells(args, *cells, s.cols(), stream_)) return;
    const kernels::CornerTiling* corners = plan.corners(args.elem);
    if (corners && kernels::launch_sddmm_corner_tiles(args, *corners, s.cols(), stream_)) {
      kernels::SddmmArgs rest = args;  // the nonzeros in no corner tile
      rest.cols = corners->residual_cols;
      rest.row_of = corners->residual_rows;
      rest.positions = corners->residual_pos;
      rest.nnz = corners->residual;
      kernels::launch_sddmm_nnz_split(rest, stream_);
      return;
    }
    if (const kernels::L2BandOrder* l2 = plan.l2_order(args.elem)) {
      kernels::SddmmArgs banded = args;  // every nonzero, band by band
      banded.cols = l2->cols;
      banded.row_of = l2->rows;
      banded.positions = l2->positions;
      kernels::launch_sddmm_nnz_split(banded, stream_);
      return;
    }
    const kernels::BandTiling* bands = plan.bands(args.elem);
    if (bands && kernels::launch_sddmm_tiled(args, *bands, s.cols(), stream_)) return;
  }
  if (call.plan.algorithm() == SFAC_SDDMM_ALG_ROW_SPLIT) {
    kernels::launch_sddmm_row_split(args, stream_);
  } else {
    // NNZ_SPLIT, and TILED calls no tile kernel serves (pattern too sparse, K not whole
    // 16-byte vectors, factors of another element type).
    if (s.pattern().rows_built()) {
      args.row_of = s.pattern().rows_of_nonzeros(stream_);
    } else {
      OwnStreamWork order(*this);  // built once, owned by the pattern
      args.row_of = s.pattern().rows_of_nonzeros(own_stream_);
    }
    kernels::launch_sddmm_nnz_split(args, stream_);
  }
}

std::unique_ptr<Trainer> CudaBackend::make_trainer(const SparseMatrix&, const TrainOptions&,
                                                   uint64_t) {
  fail(SFAC_ERR_UNSUPPORTED,
       "training on the CUDA backend is not implemented yet; "
       "use a CPU context for sfac_train");
}

void CudaBackend::synchronize() {
  DeviceGuard guard(device_);
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (stream_ != own_stream_) SFAC_CUDA_TRY(cudaStreamSynchronize(own_stream_));
}

}  // namespace sfac::cuda

namespace sfac {

std::shared_ptr<Backend> create_cuda_backend(int device, int num_threads) {
  return std::make_shared<cuda::CudaBackend>(device, num_threads);
}

}  // namespace sfac
