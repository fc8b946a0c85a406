// sparsefac demo: the README's main job. Synthesizes planted ratings, checks the planted
// model's SDDMM residual against the noise floor, and times SDDMM and file I/O.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "commands.h"
#include "synthetic.h"

namespace sfac_cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct DemoOptions {
  ContextOptions context;
  int64_t rows = 100000, cols = 20000, nnz = 1000000;
  int rank = 16;
  float noise = 0.5f;
  int repeats = 5;
};

Dense make_dense(sfac_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& data) {
  sfac_dense* raw = nullptr;
  SFAC_CLI_CHECK(sfac_dense_create(ctx, rows, cols, SFAC_DTYPE_FLOAT32, data.data(), &raw));
  return Dense(raw);
}

// Median wall time of `repeats` SDDMM calls with a reused plan.
double time_sddmm(sfac_context* ctx, sfac_sddmm_mode mode, const sfac_dense* a,
                  const sfac_dense* b, const sfac_sparse* s, sfac_sparse* p,
                  const sfac_sddmm_plan* plan, int repeats) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    SFAC_CLI_CHECK(sfac_sddmm(ctx, mode, 1.0f, a, b, s, 0.0f, p, plan));
    SFAC_CLI_CHECK(sfac_context_synchronize(ctx));
    times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void run_demo(const DemoOptions& o) {
  Context ctx = make_context(o.context);
  const char* device = nullptr;
  SFAC_CLI_CHECK(sfac_context_get_device_name(ctx.get(), &device));
  std::printf("libsparsefac %s demo on %s\n\n", sfac_version_string(), device);

  auto start = Clock::now();
  const PlantedRatings data =
      make_planted_ratings(o.rows, o.cols, o.nnz, o.rank, o.noise, 0.6f, o.context.seed);
  const auto nnz = static_cast<int64_t>(data.value.size());
  std::printf("data      %lld x %lld, %lld ratings (power-law degrees), planted rank %d, "
              "noise sigma %.3f  [%.2f s]\n",
              static_cast<long long>(o.rows), static_cast<long long>(o.cols),
              static_cast<long long>(nnz), o.rank, o.noise, seconds_since(start));

  start = Clock::now();
  sfac_sparse* raw = nullptr;
  SFAC_CLI_CHECK(sfac_sparse_create_coo(ctx.get(), o.rows, o.cols, nnz, data.row.data(),
                                        data.col.data(), data.value.data(), 0, &raw));
  Sparse ratings(raw);
  SFAC_CLI_CHECK(sfac_sparse_create_like(ratings.get(), nullptr, &raw));
  Sparse residual(raw);
  Dense users = make_dense(ctx.get(), o.rows, o.rank, data.user_factors);
  Dense items = make_dense(ctx.get(), o.cols, o.rank, data.item_factors);
  std::printf("upload    sparse + factors  [%.2f s]\n", seconds_since(start));

  // The planted model's residual r_ij - u_i.v_j is pure noise: its RMSE must be sigma.
  sfac_sddmm_plan* plan_raw = nullptr;
  SFAC_CLI_CHECK(sfac_sddmm_plan_create(ctx.get(), ratings.get(), o.rank, SFAC_SDDMM_ALG_AUTO,
                                        &plan_raw));
  Plan plan(plan_raw);
  const double t = time_sddmm(ctx.get(), SFAC_SDDMM_RESIDUAL, users.get(), items.get(),
                              ratings.get(), residual.get(), plan.get(), o.repeats);
  std::vector<float> r(static_cast<size_t>(nnz));
  SFAC_CLI_CHECK(sfac_sparse_download_csr(residual.get(), nullptr, nullptr, r.data()));
  double sq = 0.0;
  for (float x : r) sq += double{x} * x;
  const double rmse = nnz > 0 ? std::sqrt(sq / static_cast<double>(nnz)) : 0.0;
  std::printf("residual  RMSE of the planted model %.4f vs noise floor %.4f  "
              "(SDDMM residual, K=%d: %.2f ms)\n\n",
              rmse, o.noise, o.rank, 1e3 * t);

  std::printf("SDDMM throughput, pattern mode, median of %d (plan reused):\n", o.repeats);
  std::printf("  %6s  %10s  %10s  %12s\n", "K", "time ms", "GFLOP/s", "algorithm");
  std::mt19937_64 rng(o.context.seed + 1);
  std::normal_distribution<float> dist;
  for (int k : {16, 64, 256}) {
    std::vector<float> a(static_cast<size_t>(o.rows * k)), b(static_cast<size_t>(o.cols * k));
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    Dense da = make_dense(ctx.get(), o.rows, k, a), db = make_dense(ctx.get(), o.cols, k, b);
    SFAC_CLI_CHECK(
        sfac_sddmm_plan_create(ctx.get(), ratings.get(), k, SFAC_SDDMM_ALG_AUTO, &plan_raw));
    Plan pk(plan_raw);
    sfac_sddmm_algorithm alg = SFAC_SDDMM_ALG_AUTO;
    SFAC_CLI_CHECK(sfac_sddmm_plan_get_algorithm(pk.get(), &alg));
    const double tk = time_sddmm(ctx.get(), SFAC_SDDMM_PATTERN, da.get(), db.get(),
                                 ratings.get(), residual.get(), pk.get(), o.repeats);
    std::printf("  %6d  %10.2f  %10.2f  %12s\n", k, 1e3 * tk,
                2.0 * k * static_cast<double>(nnz) / tk / 1e9,
                alg == SFAC_SDDMM_ALG_NNZ_SPLIT ? "nnz-split" : "row-split");
  }

  // File round trip through Matrix Market.
  const auto path = std::filesystem::temp_directory_path() /
                    ("sparsefac-demo-" + std::to_string(o.context.seed) + ".mtx");
  start = Clock::now();
  SFAC_CLI_CHECK(sfac_write_matrix_market(ratings.get(), path.c_str()));
  const double write_s = seconds_since(start);
  start = Clock::now();
  SFAC_CLI_CHECK(
      sfac_read_sparse(ctx.get(), path.c_str(), SFAC_FORMAT_AUTO, 0, &raw, nullptr, nullptr));
  Sparse reread(raw);
  const double read_s = seconds_since(start);
  int64_t reread_nnz = 0;
  SFAC_CLI_CHECK(sfac_sparse_get_shape(reread.get(), nullptr, nullptr, &reread_nnz));
  std::filesystem::remove(path);
  std::printf("\nfiles     Matrix Market write %.2f s, read %.2f s (%lld entries back)\n", write_s,
              read_s, static_cast<long long>(reread_nnz));
  if (reread_nnz != nnz) throw std::runtime_error("Matrix Market round trip lost entries");
  if (std::abs(rmse - o.noise) > 0.05 * o.noise + 1e-3) {
    throw std::runtime_error("planted residual RMSE is far from the noise floor");
  }
  std::printf("demo OK\n");
}

}  // namespace

void register_demo(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Synthesize planted ratings and run SDDMM and file I/O on them");
  cmd->add_option("--rows", o->rows, "Users")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--cols", o->cols, "Items")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--nnz", o->nnz, "Ratings")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--rank", o->rank, "Planted rank")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--noise", o->noise, "Noise sigma")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Timed repetitions")->check(CLI::PositiveNumber)->capture_default_str();
  add_context_options(*cmd, o->context);
  cmd->callback([o] { run_demo(*o); });
}

}  // namespace sfac_cli
