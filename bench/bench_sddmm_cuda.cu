// SDDMM on the GPU: libsparsefac (public API, CUDA backend) against cusparseSDDMM on the same
// device data, in one process. Pattern-only semantics for both (P = A B^T at the nonzeros of S),
// as cuSPARSE computes it. Prints time, GFLOP/s, the ratio to cuSPARSE and the fraction of the
// memory floor (12 nnz + 4 K (M + N)) bytes / measured device copy bandwidth. Both libraries
// queue on one stream (sfac_context_set_stream, cusparseSetStream); times are the median over
// --reps of a batch of 5 calls between two CUDA events, divided by 5. gath_ms / gath16: a plain
// gather of B's float32 / 16-bit rows (see plain_gather); max_x / max16 = cusp_ms over it. The
// summary adds the geometric means with each case at the better of ours and its plain gather:
// what this suite allows a kernel that gathers each nonzero's B row once from where it sits.
// The default run is the suite (its cases at K = 32, 128, 512), over which the geometric means
// are taken, plus the cases that look for cliffs: the ranks 48, 100 and 200 (not powers of
// two; at 100 a bfloat16 row is 200 bytes, not a multiple of 16) and the dense mid-size pattern
// dense4k. Over all of them it prints the smallest speedup and the largest ratio of the
// bfloat16 time to the float32 time of the same case.
//
//   bench_sddmm_cuda [--cases ml20m,netflix,...,dense4k] [--k 32,48,100,128,200,512]
//                    [--reps 10] [--alg auto|nnz|row|tiled|cusparse]
#include <cuda_runtime.h>
#include <cusparse.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/unique.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_cuda_common.cuh"
#include "bench_flags.h"
#include "sparsefac/sparsefac.h"

namespace {

using namespace bench;

// A plain gather, the reference for what gathering B costs on this pattern: read each nonzero's
// column index and B row (`vecs` raw 16-byte vectors, so it serves float32 and 16-bit rows
// alike) and write a 4-byte result, with no A and no arithmetic but an xor. G lanes per
// nonzero, 4 vectors per lane. Where the B bytes dominate (K >= 128) no design that gathers B
// once per nonzero can be much faster; at K = 32 per-nonzero overheads dominate and the group
// kernel (chunked index loads, several steps of loads in flight) beats it.
template <int G>
__global__ void plain_gather(const int32_t* cols, const uint4* b, int64_t nnz, int vecs,
                             uint32_t* out) {
  constexpr int kPerWarp = 32 / G, V = 4;
  const int lane = threadIdx.x % 32, group = lane / G, slot = lane % G;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t base = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32 * kPerWarp; base < nnz;
       base += warps * kPerWarp) {
    const int64_t e = base + group;
    const bool valid = e < nnz;
    const uint4* row = b + int64_t{valid ? __ldg(cols + e) : 0} * vecs;
    uint32_t acc = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (slot + v * G < vecs) {
        const uint4 x = __ldg(row + slot + v * G);
        acc ^= x.x ^ x.y ^ x.z ^ x.w;
      }
    }
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) {
      acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
    }
    if (slot == 0 && valid) out[e] = acc;
  }
}

// Launches plain_gather for rows of `vecs` 16-byte vectors (4 to 128).
void launch_plain_gather(const int32_t* cols, const void* b, int64_t nnz, int vecs, uint32_t* out,
                         cudaStream_t stream) {
  const int g = std::max(1, vecs / 4);
  const int64_t warps = (nnz + 32 / g - 1) / (32 / g);
  const int blocks = static_cast<int>(std::min<int64_t>((warps + 7) / 8, 1 << 20));
  const auto* bv = static_cast<const uint4*>(b);
  switch (g) {
    case 1:
      plain_gather<1><<<blocks, 256, 0, stream>>>(cols, bv, nnz, vecs, out);
      break;
    case 2:
      plain_gather<2><<<blocks, 256, 0, stream>>>(cols, bv, nnz, vecs, out);
      break;
    case 4:
      plain_gather<4><<<blocks, 256, 0, stream>>>(cols, bv, nnz, vecs, out);
      break;
    case 8:
      plain_gather<8><<<blocks, 256, 0, stream>>>(cols, bv, nnz, vecs, out);
      break;
    case 16:
      plain_gather<16><<<blocks, 256, 0, stream>>>(cols, bv, nnz, vecs, out);
      break;
    default:
      plain_gather<32><<<blocks, 256, 0, stream>>>(cols, bv, nnz, vecs, out);
      break;
  }
  CHECK_CUDA(cudaGetLastError());
}

// The --alg words and the plan algorithms they name; the same words label the alg column.
struct AlgorithmName {
  const char* word;
  sfac_sddmm_algorithm algorithm;
};
constexpr AlgorithmName kAlgorithmNames[] = {{"auto", SFAC_SDDMM_ALG_AUTO},
                                             {"nnz", SFAC_SDDMM_ALG_NNZ_SPLIT},
                                             {"row", SFAC_SDDMM_ALG_ROW_SPLIT},
                                             {"tiled", SFAC_SDDMM_ALG_TILED},
                                             {"cusparse", SFAC_SDDMM_ALG_CUSPARSE}};

std::vector<std::string> algorithm_words() {
  std::vector<std::string> words;
  for (const AlgorithmName& n : kAlgorithmNames) words.push_back(n.word);
  return words;
}

std::string algorithm_usage() { return " [--alg " + join(algorithm_words(), "|") + "]"; }

sfac_sddmm_algorithm algorithm_named(const std::string& word) {
  for (const AlgorithmName& n : kAlgorithmNames) {
    if (word == n.word) return n.algorithm;
  }
  return SFAC_SDDMM_ALG_AUTO;  // unreachable: Flags::choice accepted only the words above
}

const char* algorithm_word(sfac_sddmm_algorithm algorithm) {
  for (const AlgorithmName& n : kAlgorithmNames) {
    if (algorithm == n.algorithm) return n.word;
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv,
              suite_cases_usage() + " [--k 32,48,100,128,200,512] [--reps 10]" +
                  algorithm_usage());
  const std::vector<const Case*> suite =
      cases_named(flags.text("--cases", std::string(kSuiteCases) + ",dense4k"));
  const std::vector<int64_t> ks = flags.ranks("32,48,100,128,200,512");
  const int reps = flags.reps(10);
  const sfac_sddmm_algorithm algorithm =
      algorithm_named(flags.choice("--alg", "auto", algorithm_words()));
  flags.done();
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double bw = copy_bandwidth();
  std::printf("device %s, measured copy bandwidth %.0f GB/s, libsparsefac %s\n", prop.name,
              bw / 1e9, sfac_version_string());
  std::printf("%-8s %9s %9s %10s %4s %10s %10s %8s %8s %7s %7s %10s %8s %8s %8s %6s %8s %6s %s\n",
              "case", "M", "N", "nnz", "K", "ours_ms", "cusp_ms", "GFLOP/s", "speedup", "floor%",
              "cusp%", "bf16_ms", "bf16_x", "plan_ms", "gath_ms", "max_x", "gath16", "max16",
              "alg");
  sfac_context* ctx = nullptr;
  CHECK_SFAC(sfac_context_create(SFAC_BACKEND_CUDA, 0, 0, 1, &ctx));
  cusparseHandle_t handle;
  CHECK_SPARSE(cusparseCreate(&handle));
  // Both libraries queue their work on one stream, timed with events on it.
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_SFAC(sfac_context_set_stream(ctx, stream));
  CHECK_SPARSE(cusparseSetStream(handle, stream));
  // Per measured case: whether it belongs to the suite (its geometric means), and the ratios.
  struct Result {
    std::string name;
    int64_t k;
    bool in_suite;
    double speedup, bf16_speedup, gather_speedup, bf16_gather_speedup, bf16_over_f32;
  };
  std::vector<Result> results;
  const std::vector<std::string> suite_names = split(kSuiteCases);
  const std::vector<std::string> suite_ranks = split(kSuiteRanks);
  for (const Case* cs : suite) {
    const HostCsr pat = make_pattern(*cs, 42);
    const int64_t nnz = static_cast<int64_t>(pat.cols.size());
    sfac_sparse* s = nullptr;
    CHECK_SFAC(sfac_sparse_create_csr(ctx, cs->rows, cs->cols, pat.offsets.data(), pat.cols.data(),
                                      nullptr, nnz, 0, &s));
    sfac_sparse* p = nullptr;
    CHECK_SFAC(sfac_sparse_create_like(s, nullptr, &p));
    const CusparsePattern theirs_pattern(pat);
    uint32_t* d_gathered = nullptr;
    CHECK_CUDA(cudaMalloc(&d_gathered, nnz * 4));
    for (const int64_t k : ks) {
      std::vector<float> a, b;
      random_factors(cs->rows, cs->cols, k, a, b);
      sfac_dense *da = nullptr, *db = nullptr;
      CHECK_SFAC(sfac_dense_create(ctx, cs->rows, k, SFAC_DTYPE_FLOAT32, a.data(), &da));
      CHECK_SFAC(sfac_dense_create(ctx, cs->cols, k, SFAC_DTYPE_FLOAT32, b.data(), &db));
      sfac_sddmm_plan* plan = nullptr;
      const auto plan_start = std::chrono::steady_clock::now();
      CHECK_SFAC(sfac_sddmm_plan_create(ctx, s, k, algorithm, &plan));
      CHECK_SFAC(sfac_context_synchronize(ctx));
      const double plan_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start)
              .count();
      sfac_sddmm_algorithm chosen;
      CHECK_SFAC(sfac_sddmm_plan_get_algorithm(plan, &chosen));
      const int inner = 5;
      auto time_ours = [&](sfac_dense* x, sfac_dense* y) {
        return median_ms(reps, stream,
                         [&] {
                           for (int i = 0; i < inner; ++i) {
                             CHECK_SFAC(
                                 sfac_sddmm(ctx, SFAC_SDDMM_PATTERN, 1.0f, x, y, s, 0.0f, p, plan));
                           }
                         }) /
               inner;
      };
      // bfloat16 storage of the same factors (the issue's half-precision path).
      sfac_dense *ha = nullptr, *hb = nullptr;
      CHECK_SFAC(sfac_dense_create(ctx, cs->rows, k, SFAC_DTYPE_BFLOAT16, a.data(), &ha));
      CHECK_SFAC(sfac_dense_create(ctx, cs->cols, k, SFAC_DTYPE_BFLOAT16, b.data(), &hb));
      const double ours_bf16 = time_ours(ha, hb);
      sfac_dense_destroy(ha);
      sfac_dense_destroy(hb);
      const double ours = time_ours(da, db);  // last, so P holds the float32 result

      // cuSPARSE: A M x K row-major; B^T as a K x N column-major matrix (= our N x K rows).
      float* d_a = upload(a);
      float* d_b = upload(b);
      CusparseSddmm cusparse(handle, cs->rows, cs->cols, k, theirs_pattern, d_a, d_b);
      const double theirs = median_ms(reps, stream,
                                      [&] {
                                        for (int i = 0; i < inner; ++i) cusparse.run();
                                      }) /
                            inner;

      // The plain gather for float32 and 16-bit rows (K * 4 and K * 2 bytes) on the same pattern
      // and B buffer (see plain_gather).
      auto time_gather = [&](int64_t row_bytes) {
        if (row_bytes % 16 != 0 || row_bytes / 16 > 128) return 0.0;
        return median_ms(reps, stream,
                         [&] {
                           for (int i = 0; i < inner; ++i) {
                             launch_plain_gather(theirs_pattern.cols, d_b, nnz,
                                                 static_cast<int>(row_bytes / 16), d_gathered,
                                                 stream);
                           }
                         }) /
               inner;
      };
      const double gather32 = time_gather(4 * k), gather16 = time_gather(2 * k);

      // Same answer: compare a sample of values.
      std::vector<float> ours_v(nnz), theirs_v(nnz);
      CHECK_SFAC(sfac_sparse_download_csr(p, nullptr, 0, nullptr, ours_v.data(),
                                          static_cast<int64_t>(ours_v.size())));
      CHECK_CUDA(cudaStreamSynchronize(stream));  // a non-blocking stream: cudaMemcpy won't wait
      CHECK_CUDA(
          cudaMemcpy(theirs_v.data(), theirs_pattern.values, nnz * 4, cudaMemcpyDeviceToHost));
      double worst = 0.0;
      for (int64_t e = 0; e < nnz; e += std::max<int64_t>(1, nnz / 100000)) {
        worst = std::max(worst,
                         double(std::abs(ours_v[e] - theirs_v[e])) / (1.0 + std::abs(theirs_v[e])));
      }
      const double floor_bytes = 12.0 * nnz + 4.0 * k * (cs->rows + cs->cols);
      const double floor_ms = floor_bytes / bw * 1e3;
      const bool in_suite =
          std::find(suite_names.begin(), suite_names.end(), cs->name) != suite_names.end() &&
          std::find(suite_ranks.begin(), suite_ranks.end(), std::to_string(k)) !=
              suite_ranks.end();
      results.push_back({cs->name, k, in_suite, theirs / ours, theirs / ours_bf16,
                         theirs / (gather32 > 0 ? std::min(ours, gather32) : ours),
                         theirs / (gather16 > 0 ? std::min(ours_bf16, gather16) : ours_bf16),
                         ours_bf16 / ours});
      std::printf(
          "%-8s %9lld %9lld %10lld %4lld %10.3f %10.3f %8.0f %8.2f %6.1f%% %6.1f%% %10.3f %8.2f "
          "%8.1f %8.3f %6.2f %8.3f %6.2f %s%s\n",
          cs->name, (long long)cs->rows, (long long)cs->cols, (long long)nnz, (long long)k, ours,
          theirs, 2.0 * k * nnz / (ours * 1e6), theirs / ours, 100.0 * floor_ms / ours,
          100.0 * floor_ms / theirs, ours_bf16, theirs / ours_bf16, plan_ms, gather32,
          gather32 > 0 ? theirs / gather32 : 0.0, gather16, gather16 > 0 ? theirs / gather16 : 0.0,
          algorithm_word(chosen), worst > 1e-3 ? "  MISMATCH" : "");
      std::fflush(stdout);
      CHECK_CUDA(cudaFree(d_a));
      CHECK_CUDA(cudaFree(d_b));
      sfac_sddmm_plan_destroy(plan);
      sfac_dense_destroy(da);
      sfac_dense_destroy(db);
    }
    CHECK_CUDA(cudaFree(d_gathered));
    sfac_sparse_destroy(p);
    sfac_sparse_destroy(s);
  }
  // Geometric mean over the suite's cases, smallest over every case measured.
  auto summary = [&results](const char* what, double Result::*field) {
    double log_sum = 0.0, least = INFINITY;
    int suite_count = 0;
    std::string where;
    for (const Result& r : results) {
      if (r.in_suite) {
        log_sum += std::log(r.*field);
        ++suite_count;
      }
      if (r.*field < least) {
        least = r.*field;
        where = r.name + " K=" + std::to_string(r.k);
      }
    }
    std::printf("%s: geometric-mean speedup over cuSPARSE %.2fx over the %d suite cases; min %.2fx "
                "(%s) over all %zu\n",
                what, suite_count > 0 ? std::exp(log_sum / suite_count) : NAN, suite_count, least,
                where.c_str(), results.size());
  };
  summary("float32", &Result::speedup);
  summary("bfloat16", &Result::bf16_speedup);
  summary("float32, each case at min(ours, plain gather)", &Result::gather_speedup);
  summary("bfloat16, each case at min(ours, plain gather)", &Result::bf16_gather_speedup);
  if (!results.empty()) {
    const Result& worst = *std::max_element(
        results.begin(), results.end(),
        [](const Result& a, const Result& b) { return a.bf16_over_f32 < b.bf16_over_f32; });
    std::printf("largest bfloat16 / float32 time: %.2f (%s K=%lld)\n", worst.bf16_over_f32,
                worst.name.c_str(), static_cast<long long>(worst.k));
  }
  cusparseDestroy(handle);
  sfac_context_destroy(ctx);
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
