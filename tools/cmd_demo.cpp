// sparsefac demo: the README's main job. Synthesizes ratings from a planted model, trains
// explicit ALS and SGD against the known noise floor, recommends, and shows SDDMM and file I/O.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "commands.h"

namespace sfac_cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct DemoOptions {
  ContextOptions context;
  // About 100 ratings per user: enough that a rank-8 model can be estimated close to the
  // noise floor, as on MovieLens-like data.
  int64_t users = 10000, items = 3000, nnz = 1000000;
  int rank = 8;
  double noise = 0.5;
  double skew = 0.3;
};

int print_epoch(int epoch, double loss, double validation_rmse, double seconds, void* floor) {
  std::printf("  epoch %2d   loss %.4f   held-out RMSE %.4f   (noise floor %.4f)   %.2f s\n", epoch,
              loss, validation_rmse, *static_cast<double*>(floor), seconds);
  std::fflush(stdout);
  return 0;
}

Model train(sfac_context* ctx, sfac_algorithm algorithm, const char* name, const DemoOptions& o,
            const sfac_sparse* train_set, const sfac_sparse* test_set, int iterations,
            double lambda) {
  sfac_train_options* raw = nullptr;
  SFAC_CLI_CHECK(sfac_train_options_create(algorithm, &raw));
  TrainOptions options(raw);
  SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, o.rank));
  SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_ITERATIONS, iterations));
  SFAC_CLI_CHECK(sfac_train_options_set_double(raw, SFAC_OPT_LAMBDA, lambda));
  SFAC_CLI_CHECK(sfac_train_options_set_validation(raw, test_set));
  double floor = o.noise;
  SFAC_CLI_CHECK(sfac_train_options_set_callback(raw, print_epoch, &floor));
  std::printf("\n%s, rank %d, lambda %g:\n", name, o.rank, lambda);
  const auto start = Clock::now();
  sfac_model* model = nullptr;
  SFAC_CLI_CHECK(sfac_train(ctx, train_set, raw, &model));
  Model owner(model);
  double rmse = 0.0;
  SFAC_CLI_CHECK(sfac_model_evaluate(model, test_set, &rmse, nullptr));
  std::printf("  => held-out RMSE %.4f = %.1f%% above the noise floor, %.1f s in all\n", rmse,
              100.0 * (rmse / o.noise - 1.0), seconds_since(start));
  return owner;
}

void show_recommendations(const sfac_model* model, const sfac_sparse* seen) {
  const int32_t user = 0;
  const int n = 5;
  int32_t items[n];
  float scores[n];
  SFAC_CLI_CHECK(sfac_model_recommend(model, 1, &user, n, seen, 0, nullptr, items, scores, n));
  std::printf("\ntop-%d recommendations for user %d (already rated items excluded):\n", n, user);
  for (int i = 0; i < n; ++i) std::printf("  item %6d   score %+.3f\n", items[i], scores[i]);
}

void show_sddmm(sfac_context* ctx, const sfac_sparse* ratings, const sfac_dense* users,
                const sfac_dense* items, double noise) {
  sfac_sparse* raw = nullptr;
  SFAC_CLI_CHECK(sfac_sparse_create_like(ratings, nullptr, &raw));
  Sparse residual(raw);
  const auto start = Clock::now();
  SFAC_CLI_CHECK(sfac_sddmm(ctx, SFAC_SDDMM_RESIDUAL, 1.0f, users, items, ratings, 0.0f,
                            residual.get(), nullptr));
  const double t = seconds_since(start);
  int64_t nnz = 0;
  SFAC_CLI_CHECK(sfac_sparse_get_shape(residual.get(), nullptr, nullptr, &nnz));
  std::vector<float> r(static_cast<size_t>(nnz));
  SFAC_CLI_CHECK(sfac_sparse_download_csr(residual.get(), nullptr, 0, nullptr, r.data(),
                                          static_cast<int64_t>(r.size())));
  double sq = 0.0;
  for (float x : r) sq += double{x} * x;
  const double rmse = std::sqrt(sq / static_cast<double>(std::max<int64_t>(nnz, 1)));
  std::printf(
      "\nSDDMM residual of the planted model over all %lld ratings: RMSE %.4f "
      "(noise %.4f), %.1f ms\n",
      static_cast<long long>(nnz), rmse, noise, 1e3 * t);
  if (std::abs(rmse - noise) > 0.05 * noise + 1e-3) {
    throw std::runtime_error("planted residual RMSE is far from the noise floor");
  }
}

void show_file_round_trip(sfac_context* ctx, const sfac_sparse* ratings, uint64_t seed) {
  const auto path =
      std::filesystem::temp_directory_path() / ("sparsefac-demo-" + std::to_string(seed) + ".mtx");
  auto start = Clock::now();
  SFAC_CLI_CHECK(sfac_write_matrix_market(ratings, path.c_str()));
  const double write_s = seconds_since(start);
  start = Clock::now();
  sfac_sparse* raw = nullptr;
  SFAC_CLI_CHECK(sfac_read_sparse(ctx, path.c_str(), SFAC_FORMAT_AUTO, 0, &raw, nullptr, nullptr));
  Sparse reread(raw);
  const double read_s = seconds_since(start);
  std::filesystem::remove(path);
  int64_t a = 0, b = 0;
  SFAC_CLI_CHECK(sfac_sparse_get_shape(ratings, nullptr, nullptr, &a));
  SFAC_CLI_CHECK(sfac_sparse_get_shape(reread.get(), nullptr, nullptr, &b));
  std::printf("Matrix Market round trip: write %.2f s, read %.2f s, %lld of %lld entries back\n",
              write_s, read_s, static_cast<long long>(b), static_cast<long long>(a));
  if (a != b) throw std::runtime_error("Matrix Market round trip lost entries");
}

void run_demo(const DemoOptions& o) {
  Context ctx = make_context(o.context, false);
  std::printf("libsparsefac %s demo, %s\n\n", sfac_version_string(),
              backend_description(ctx.get()).c_str());

  auto start = Clock::now();
  sfac_sparse* all_raw = nullptr;
  sfac_dense *users_raw = nullptr, *items_raw = nullptr;
  SFAC_CLI_CHECK(sfac_synthesize_ratings(ctx.get(), SFAC_FEEDBACK_EXPLICIT, o.users, o.items, o.nnz,
                                         o.rank, o.noise, o.skew, &all_raw, &users_raw,
                                         &items_raw));
  Sparse all(all_raw);
  Dense planted_users(users_raw), planted_items(items_raw);
  sfac_sparse *train_raw = nullptr, *test_raw = nullptr;
  SFAC_CLI_CHECK(sfac_split_random(all.get(), 0.1, o.context.seed, &train_raw, &test_raw));
  Sparse train_set(train_raw), test_set(test_raw);
  int64_t nnz = 0, test_nnz = 0;
  SFAC_CLI_CHECK(sfac_sparse_get_shape(all.get(), nullptr, nullptr, &nnz));
  SFAC_CLI_CHECK(sfac_sparse_get_shape(test_set.get(), nullptr, nullptr, &test_nnz));
  std::printf(
      "data: %lld users x %lld items, %lld ratings (power-law degrees) from a planted "
      "rank-%d model + noise sigma %.2f; %lld held out  [%.1f s]\n",
      static_cast<long long>(o.users), static_cast<long long>(o.items), static_cast<long long>(nnz),
      o.rank, o.noise, static_cast<long long>(test_nnz), seconds_since(start));

  Model als = train(ctx.get(), SFAC_ALGO_ALS, "explicit ALS (weighted lambda)", o, train_set.get(),
                    test_set.get(), 10, 0.03);
  train(ctx.get(), SFAC_ALGO_SGD, "SGD (batch Hogwild)", o, train_set.get(), test_set.get(), 40,
        0.03);
  show_recommendations(als.get(), train_set.get());
  show_sddmm(ctx.get(), all.get(), planted_users.get(), planted_items.get(), o.noise);
  show_file_round_trip(ctx.get(), all.get(), o.context.seed);
  std::printf("\ndemo OK\n");
}

}  // namespace

void register_demo(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Train ALS and SGD on synthetic planted ratings and recommend (about 1M ratings)");
  cmd->add_option("--users", o->users, "Users")->check(positive_number())->capture_default_str();
  cmd->add_option("--items", o->items, "Items")->check(positive_number())->capture_default_str();
  cmd->add_option("--nnz", o->nnz, "Ratings")->check(positive_number())->capture_default_str();
  cmd->add_option("--rank", o->rank, "Planted and trained rank")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--noise", o->noise, "Noise sigma")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--skew", o->skew, "Power-law skew of user/item degrees, in [0, 1)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  add_context_options(*cmd, o->context);
  cmd->callback([o] { run_demo(*o); });
}

}  // namespace sfac_cli
