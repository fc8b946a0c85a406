// Degree reordering on the GPU against the CPU backend (OpenMP, all cores), in one process on the
// same patterns: sfac_sparse_degree_order by rows and by columns, sfac_sparse_permute of both
// sides, and sfac_dense_permute_rows of a rows x K float32 factor. Each time is the median over
// --reps of the call's wall time until its result is complete (the order back on the host, or
// the new matrix built: sfac_context_synchronize), which is what a caller waits for. floor% =
// the bytes the operation must move at least / measured device copy bandwidth: the order reads
// the row offsets or the column indices; the permute reads and writes every column index and
// value plus the offsets; the dense permute reads and writes the factor once.
//
//   bench_reorder_cuda [--cases ml20m,netflix,...] [--k 128] [--reps 10]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_cuda_common.cuh"
#include "bench_flags.h"
#include "sparsefac/sparsefac.h"

namespace {

using namespace bench;

// Median wall time of `op` over `reps` runs after one warm-up run, in milliseconds.
double median_wall_ms(int reps, const std::function<void()>& op) {
  op();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Side {
  sfac_context* ctx = nullptr;
  sfac_sparse* s = nullptr;
  sfac_dense* a = nullptr;
};

Side upload(sfac_backend backend, const Case& cs, const HostCsr& pat, int64_t k,
            const std::vector<float>& values, const std::vector<float>& factor) {
  Side side;
  CHECK_SFAC(sfac_context_create(backend, 0, 0, 1, &side.ctx));
  CHECK_SFAC(sfac_sparse_create_csr(side.ctx, cs.rows, cs.cols, pat.offsets.data(), pat.cols.data(),
                                    values.data(), static_cast<int64_t>(pat.cols.size()), 0,
                                    &side.s));
  CHECK_SFAC(sfac_dense_create(side.ctx, cs.rows, k, SFAC_DTYPE_FLOAT32, factor.data(), &side.a));
  return side;
}

void release(Side& side) {
  CHECK_SFAC(sfac_dense_destroy(side.a));
  CHECK_SFAC(sfac_sparse_destroy(side.s));
  CHECK_SFAC(sfac_context_destroy(side.ctx));
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv, suite_cases_usage() + " [--k 128] [--reps 10]");
  const std::vector<const Case*> suite = cases_named(flags.text("--cases", kSuiteCases));
  const int64_t k = flags.rank(128);
  const int reps = flags.reps(10);
  flags.done();
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double bw = copy_bandwidth();
  std::printf("device %s, measured copy bandwidth %.0f GB/s, libsparsefac %s, K = %lld\n",
              prop.name, bw / 1e9, sfac_version_string(), static_cast<long long>(k));
  std::printf("%-8s %9s %9s %10s %-16s %10s %10s %8s %7s %s\n", "case", "M", "N", "nnz",
              "operation", "cuda_ms", "cpu_ms", "speedup", "floor%", "same");
  std::vector<double> speedups;
  for (const Case* cs : suite) {
    const HostCsr pat = make_pattern(*cs, 42);
    const int64_t nnz = static_cast<int64_t>(pat.cols.size());
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> values(nnz), factor(cs->rows * k);
    for (float& v : values) v = u(rng);
    for (float& v : factor) v = u(rng);
    Side gpu = upload(SFAC_BACKEND_CUDA, *cs, pat, k, values, factor);
    Side cpu = upload(SFAC_BACKEND_CPU, *cs, pat, k, values, factor);

    std::vector<int32_t> rows_gpu(cs->rows), rows_cpu(cs->rows), cols_gpu(cs->cols),
        cols_cpu(cs->cols);
    struct Op {
      const char* name;
      std::function<void(Side&, bool)> run;
      double floor_bytes;
      std::function<bool()> same;  // the two backends' results agree
    };
    const auto order = [&](sfac_axis axis, std::vector<int32_t>& on_gpu,
                           std::vector<int32_t>& on_cpu) {
      return [&, axis](Side& side, bool is_gpu) {
        std::vector<int32_t>& out = is_gpu ? on_gpu : on_cpu;
        CHECK_SFAC(
            sfac_sparse_degree_order(side.s, axis, out.data(), static_cast<int64_t>(out.size())));
      };
    };
    const auto permute = [&](Side& side, bool) {
      sfac_sparse* out = nullptr;
      CHECK_SFAC(sfac_sparse_permute(side.s, rows_cpu.data(), cols_cpu.data(), &out));
      CHECK_SFAC(sfac_context_synchronize(side.ctx));
      CHECK_SFAC(sfac_sparse_destroy(out));
    };
    const auto permute_dense = [&](Side& side, bool) {
      sfac_dense* out = nullptr;
      CHECK_SFAC(sfac_dense_permute_rows(side.a, rows_cpu.data(), &out));
      CHECK_SFAC(sfac_context_synchronize(side.ctx));
      CHECK_SFAC(sfac_dense_destroy(out));
    };
    const double offsets = 8.0 * (cs->rows + 1);
    const Op ops[] = {
        {"degree_order(r)", order(SFAC_AXIS_ROWS, rows_gpu, rows_cpu), offsets,
         [&] { return rows_gpu == rows_cpu; }},
        {"degree_order(c)", order(SFAC_AXIS_COLS, cols_gpu, cols_cpu), 4.0 * nnz,
         [&] { return cols_gpu == cols_cpu; }},
        {"permute(r, c)", permute, 2.0 * (8.0 * nnz + offsets), nullptr},
        {"permute_rows(A)", permute_dense, 2.0 * 4.0 * cs->rows * k, nullptr},
    };
    for (const Op& op : ops) {
      const double gpu_ms = median_wall_ms(reps, [&] { op.run(gpu, true); });
      const double cpu_ms = median_wall_ms(reps, [&] { op.run(cpu, false); });
      const double speedup = cpu_ms / gpu_ms;
      speedups.push_back(speedup);
      const char* same = op.same ? (op.same() ? "yes" : "NO") : "-";
      std::printf("%-8s %9lld %9lld %10lld %-16s %10.3f %10.3f %8.2f %6.1f%% %s\n", cs->name,
                  static_cast<long long>(cs->rows), static_cast<long long>(cs->cols),
                  static_cast<long long>(nnz), op.name, gpu_ms, cpu_ms, speedup,
                  100.0 * op.floor_bytes / bw / (gpu_ms * 1e-3), same);
      std::fflush(stdout);
      if (op.same && !op.same()) {
        std::fprintf(stderr, "%s %s: the backends' orders differ\n", cs->name, op.name);
        return 1;
      }
    }
    release(gpu);
    release(cpu);
  }
  double log_sum = 0.0;
  for (double s : speedups) log_sum += std::log(s);
  std::printf("geometric-mean speedup of the GPU over the CPU backend: %.2fx over %zu operations\n",
              std::exp(log_sum / static_cast<double>(speedups.size())), speedups.size());
  return 0;
}
