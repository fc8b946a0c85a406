// What the CUDA benchmarks share: error checks, the suite's synthetic patterns (power-law or
// uniform, ids shuffled; generated on the device) and the measured device copy bandwidth that
// the memory floors divide by.
#pragma once

#include <cuda_runtime.h>
#include <cusparse.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/unique.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "sparsefac/sparsefac.h"

namespace bench {

#define CHECK_CUDA(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_SFAC(call)                                                    \
  do {                                                                      \
    sfac_status s_ = (call);                                                \
    if (s_ != SFAC_OK) {                                                    \
      std::fprintf(stderr, "%s:%d %s: %s: %s\n", __FILE__, __LINE__, #call, \
                   sfac_status_string(s_), sfac_last_error());              \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

#define CHECK_SPARSE(call)                                              \
  do {                                                                  \
    cusparseStatus_t s_ = (call);                                       \
    if (s_ != CUSPARSE_STATUS_SUCCESS) {                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, \
                   cusparseGetErrorString(s_));                         \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)

struct Case {
  const char* name;
  int64_t rows, cols, nnz;
  double skew;        // 0 = uniform
  bool rmat = false;  // R-MAT draws instead (rows = cols = a power of two; skew unused)
};

const Case kCases[] = {
    {"ml20m", 138493, 26744, 20000000, 0.6},
    {"netflix", 480189, 17770, 99000000, 0.6},
    {"yahoo", 1000990, 624961, 250000000, 0.6},
    {"graph1m", 1000000, 1000000, 10000000, 0.5},
    {"uni100k", 100000, 100000, 100000000, 0.0},
    {"uni2k", 2000, 2000, 160000, 0.0},
    // A small, fairly dense pattern (10% of the cells), where a per-nonzero kernel has little
    // to gain over cuSPARSE's dense-like tiles.
    {"dense4k", 4000, 4000, 1600000, 0.0},
    // Not in the default suite: a graph with hubs, to see how each library copes with rows of
    // tens of thousands of nonzeros (graph1m's densest row has ~10k).
    {"rmat1m", 1 << 20, 1 << 20, 10000000, 0.0, true},
};

// The issue's suite, the default of the benchmarks that run it. The other cases of kCases run
// only when named.
constexpr char kSuiteCases[] = "ml20m,netflix,graph1m,uni100k,uni2k,yahoo";
// Its ranks, over which its geometric means are taken.
constexpr char kSuiteRanks[] = "32,128,512";

// "[--cases <the suite> (also: <the other cases>)]", for a benchmark's usage line.
inline std::string suite_cases_usage() {
  const std::vector<std::string> suite = split(kSuiteCases);
  std::vector<std::string> others;
  for (const Case& c : kCases) {
    if (std::find(suite.begin(), suite.end(), c.name) == suite.end()) others.push_back(c.name);
  }
  return std::string("[--cases ") + kSuiteCases +
         (others.empty() ? "" : " (also: " + join(others, ",") + ")") + "]";
}

__device__ uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// Power-law (density ~ x^-skew) row and column draws through shuffled id permutations.
__global__ void draw_keys(int64_t n, int64_t rows, int64_t cols, double skew, uint64_t seed,
                          const int32_t* row_perm, const int32_t* col_perm, int64_t* keys) {
  const double exponent = 1.0 / (1.0 - skew);
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < n;
       t += int64_t{gridDim.x} * blockDim.x) {
    const double u1 = (mix(seed ^ (2 * t)) >> 11) * 0x1.0p-53;
    const double u2 = (mix(seed ^ (2 * t + 1)) >> 11) * 0x1.0p-53;
    int64_t r = static_cast<int64_t>(rows * pow(u1, exponent));
    int64_t c = static_cast<int64_t>(cols * pow(u2, exponent));
    r = row_perm[min(r, rows - 1)];
    c = col_perm[min(c, cols - 1)];
    keys[t] = r * cols + c;
  }
}

// R-MAT (Graph500 quadrant probabilities 0.57 / 0.19 / 0.19 / 0.05, no noise): each of the
// log2(n) levels picks a quadrant, so a few rows and columns become hubs. About 3% of the
// draws repeat at this size, hence the smaller oversampling.
__global__ void draw_rmat_keys(int64_t n, int64_t side, uint64_t seed, const int32_t* row_perm,
                               const int32_t* col_perm, int64_t* keys) {
  constexpr double a = 0.57, b = 0.19, c = 0.19;
  int levels = 0;
  while ((int64_t{1} << levels) < side) ++levels;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < n;
       t += int64_t{gridDim.x} * blockDim.x) {
    int64_t r = 0, col = 0;
    for (int level = 0; level < levels; ++level) {
      const double u = (mix(seed ^ (64 * t + level)) >> 11) * 0x1.0p-53;
      r = 2 * r + (u >= a + b);
      col = 2 * col + ((u >= a && u < a + b) || u >= a + b + c);
    }
    keys[t] = int64_t{row_perm[r]} * side + col_perm[col];
  }
}

__global__ void split_keys(int64_t n, int64_t cols, const int64_t* keys, int32_t* r, int32_t* c) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < n;
       t += int64_t{gridDim.x} * blockDim.x) {
    r[t] = static_cast<int32_t>(keys[t] / cols);
    c[t] = static_cast<int32_t>(keys[t] % cols);
  }
}

struct HostCsr {
  std::vector<int64_t> offsets;
  std::vector<int32_t> cols;
};

inline HostCsr make_pattern(const Case& cs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> rp(cs.rows), cp(cs.cols);
  std::iota(rp.begin(), rp.end(), 0);
  std::iota(cp.begin(), cp.end(), 0);
  std::shuffle(rp.begin(), rp.end(), rng);
  std::shuffle(cp.begin(), cp.end(), rng);
  thrust::device_vector<int32_t> drp(rp), dcp(cp);
  // Oversample so that about nnz distinct cells remain after removing repeats.
  const double density = double(cs.nnz) / (double(cs.rows) * double(cs.cols));
  const double oversample = cs.rmat ? 1.04 : cs.skew > 0 ? 1.15 : 1.0 + density;
  const int64_t draws = static_cast<int64_t>(cs.nnz * oversample);
  thrust::device_vector<int64_t> keys(draws);
  if (cs.rmat) {
    draw_rmat_keys<<<4096, 256>>>(draws, cs.rows, seed, thrust::raw_pointer_cast(drp.data()),
                                  thrust::raw_pointer_cast(dcp.data()),
                                  thrust::raw_pointer_cast(keys.data()));
  } else {
    draw_keys<<<4096, 256>>>(
        draws, cs.rows, cs.cols, cs.skew, seed, thrust::raw_pointer_cast(drp.data()),
        thrust::raw_pointer_cast(dcp.data()), thrust::raw_pointer_cast(keys.data()));
  }
  CHECK_CUDA(cudaGetLastError());
  thrust::sort(keys.begin(), keys.end());
  const int64_t n =
      std::min<int64_t>(thrust::unique(keys.begin(), keys.end()) - keys.begin(), cs.nnz);
  thrust::device_vector<int32_t> r(n), c(n);
  split_keys<<<4096, 256>>>(n, cs.cols, thrust::raw_pointer_cast(keys.data()),
                            thrust::raw_pointer_cast(r.data()), thrust::raw_pointer_cast(c.data()));
  CHECK_CUDA(cudaGetLastError());
  std::vector<int32_t> hr(n);
  HostCsr csr;
  csr.cols.resize(n);
  thrust::copy(r.begin(), r.end(), hr.begin());
  thrust::copy(c.begin(), c.end(), csr.cols.begin());
  csr.offsets.assign(cs.rows + 1, 0);
  for (int32_t i : hr) ++csr.offsets[i + 1];
  std::partial_sum(csr.offsets.begin(), csr.offsets.end(), csr.offsets.begin());
  return csr;
}

// The benchmarks' factors: A (rows x k) then B (cols x k), uniform in [-1, 1) from one seeded
// generator, so every benchmark times the same data.
inline void random_factors(int64_t rows, int64_t cols, int64_t k, std::vector<float>& a,
                           std::vector<float>& b) {
  a.resize(rows * k);
  b.resize(cols * k);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : a) x = u(g);
  for (float& x : b) x = u(g);
}

// A device copy of a host vector (at least one element's worth of memory, so an empty vector
// still gets a valid pointer); the caller frees it with cudaFree.
template <typename T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, std::max<size_t>(1, v.size() * sizeof(T))));
  CHECK_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

inline double copy_bandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  CHECK_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  std::vector<float> ms;
  for (int i = 0; i < 10; ++i) {
    CHECK_CUDA(cudaEventRecord(e0));
    CHECK_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3);  // read + write
}

// The suite cases named in a comma-separated list; exits with status 2 on an unknown name.
inline std::vector<const Case*> cases_named(const std::string& list) {
  std::vector<const Case*> out;
  for (const std::string& name : split(list)) {
    const Case* found = nullptr;
    for (const Case& c : kCases) {
      if (name == c.name) found = &c;
    }
    if (!found) {
      std::fprintf(stderr, "unknown case %s\n", name.c_str());
      std::exit(2);
    }
    out.push_back(found);
  }
  return out;
}

// cuSPARSE's own device copy of a pattern: 32-bit offsets and column indices (the suite's
// patterns fit 32 bits) and the values its SDDMM writes. Freed with the object.
struct CusparsePattern {
  explicit CusparsePattern(const HostCsr& pat)
      : nnz(static_cast<int64_t>(pat.cols.size())),
        offsets(upload(std::vector<int32_t>(pat.offsets.begin(), pat.offsets.end()))),
        cols(upload(pat.cols)) {
    CHECK_CUDA(cudaMalloc(&values, nnz * sizeof(float)));
  }
  CusparsePattern(const CusparsePattern&) = delete;
  CusparsePattern& operator=(const CusparsePattern&) = delete;
  ~CusparsePattern() {
    CHECK_CUDA(cudaFree(offsets));
    CHECK_CUDA(cudaFree(cols));
    CHECK_CUDA(cudaFree(values));
  }

  const int64_t nnz;
  int32_t* const offsets;
  int32_t* const cols;
  float* values = nullptr;
};

// cusparseSDDMM in float32 with pattern-only semantics (P = A B^T at S's nonzeros, written to
// `pattern.values`), its buffer sized and its preprocess run once: A is M x K row-major, B^T the
// K x N column-major matrix that our N x K rows are. `run()` queues one call on the handle's
// stream.
class CusparseSddmm {
 public:
  CusparseSddmm(cusparseHandle_t handle, int64_t rows, int64_t cols, int64_t k,
                const CusparsePattern& pattern, float* d_a, float* d_b)
      : handle_(handle) {
    CHECK_SPARSE(cusparseCreateDnMat(&a_, rows, k, k, d_a, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    CHECK_SPARSE(cusparseCreateDnMat(&b_, k, cols, k, d_b, CUDA_R_32F, CUSPARSE_ORDER_COL));
    CHECK_SPARSE(cusparseCreateCsr(&pattern_, rows, cols, pattern.nnz, pattern.offsets,
                                   pattern.cols, pattern.values, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    size_t buffer_size = 0;
    CHECK_SPARSE(cusparseSDDMM_bufferSize(handle_, kOp, kOp, &one_, a_, b_, &zero_, pattern_,
                                          CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &buffer_size));
    CHECK_CUDA(cudaMalloc(&buffer_, std::max<size_t>(buffer_size, 1)));
    CHECK_SPARSE(cusparseSDDMM_preprocess(handle_, kOp, kOp, &one_, a_, b_, &zero_, pattern_,
                                          CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buffer_));
  }
  CusparseSddmm(const CusparseSddmm&) = delete;
  CusparseSddmm& operator=(const CusparseSddmm&) = delete;
  ~CusparseSddmm() {
    cusparseDestroyDnMat(a_);
    cusparseDestroyDnMat(b_);
    cusparseDestroySpMat(pattern_);
    cudaFree(buffer_);
  }
  void run() {
    CHECK_SPARSE(cusparseSDDMM(handle_, kOp, kOp, &one_, a_, b_, &zero_, pattern_, CUDA_R_32F,
                               CUSPARSE_SDDMM_ALG_DEFAULT, buffer_));
  }

 private:
  static constexpr cusparseOperation_t kOp = CUSPARSE_OPERATION_NON_TRANSPOSE;
  cusparseHandle_t handle_;
  cusparseDnMatDescr_t a_ = nullptr, b_ = nullptr;
  cusparseSpMatDescr_t pattern_ = nullptr;
  void* buffer_ = nullptr;
  const float one_ = 1.0f, zero_ = 0.0f;
};

// Median over `reps` of a batch's time on `stream` between two CUDA events (after a warm-up
// batch): the device's timeline, including any gap the host leaves between launches.
template <typename F>
double median_ms(int reps, cudaStream_t stream, F&& batch) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  batch();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    CHECK_CUDA(cudaEventRecord(e0, stream));
    batch();
    CHECK_CUDA(cudaEventRecord(e1, stream));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace bench
