// SGD matrix factorization on the CUDA backend and on the CPU backend, side by side, through the
// public C API: epoch time, update throughput and held-out RMSE per epoch on the same data.
//
// Cases (--scale multiplies users, items and ratings; at small scales the ratings are capped at
// a quarter of the cells, and the printed nnz is what the generator kept):
//   netflix   480189 x  17770,  99,072,112 ratings
//   yahoo    1000990 x 624961, 250,000,000 ratings
// Explicit ratings from sfac_synthesize_ratings on a CPU context (planted rank 16, noise 0.5,
// the planted part times --signal (1: unit variance; 0.704 gives a mean predictor RMSE of about
// 0.864, the issue's cuMF_SGD data), power-law degrees of skew --skew on both sides, one retry with more draws when the generator
// falls more than 2% short, as bench_als), split by sfac_split_random into train and a 1% test
// set; both are uploaded into the CUDA context, so each backend's model is evaluated against a
// matrix of its own context (the header does not promise that sfac_model_evaluate takes one of
// another). Without a usable CUDA device only the CPU is timed.
//
// Options (printed per case): the SGD defaults with rank, lambda, learning rate alpha and decay
// beta of gamma_t = alpha / (1 + beta t^1.5) (defaults: cuMF_SGD's Netflix settings), biases and
// factor dtype set (one CUDA row per --factor-dtype; the CPU row trains float32 factors);
// --device-memory-limit (a list: one CUDA row per limit, 0 = none) goes to the CUDA trainer
// only; a row under a limit is labelled with it (cu16@2G: float16 storage, 2e9 bytes).
//
// Per backend and rank: sfac_trainer_create (setup_ms), then --epochs (CUDA) or --cpu-epochs
// (CPU) single-epoch sfac_trainer_run(t, 1) calls, each timed with steady_clock up to
// sfac_context_synchronize (the time then holds all of the epoch's device work, whether or not
// the trainer waits for it before returning). There is no warm-up epoch: every SGD epoch changes
// the model, so a discarded one would shift the RMSE curve and the time to target. After each
// epoch, untimed, the held-out RMSE of sfac_trainer_get_model. Reported: median and min epoch ms;
// updates/s = train nnz / median epoch; effective bandwidth = updates/s x bytes per update, with
//   bytes per update = 8 (4-byte item index + 4-byte rating) + 4 k s
//   (read and write p_u and q_v; k = rank, s = 4 for float32 factors, 2 for 16-bit),
// the user index and bias terms left out (amortized over a row, or small beside 4 k s); its
// fraction of --peak-gbs. It counts every factor access as memory traffic, so it can pass the
// DRAM peak where factor rows are served from cache (a user's row across its ratings, an item
// side that fits in L2): it measures update throughput in bytes, not DRAM traffic. Also the RMSE
// after the first, every 5th and the last epoch; the training seconds (timed epochs only) to the
// first epoch with RMSE <= --target-rmse (0: to the best RMSE seen); for CUDA the ratios CUDA / CPU
// of the median epoch and of the time to target. The mean predictor's RMSE (the training mean for
// every test rating) gives the scale.
//
//   bench_sgd [--cases netflix,yahoo] [--ranks 128] [--scale 1] [--epochs 20] [--cpu-epochs 2]
//             [--lambda 0.05] [--lr 0.08] [--decay 0.3] [--biases 0] [--target-rmse 0]
//             [--peak-gbs 3350] [--device-memory-limit 0] [--skew 0.6] [--signal 1]
//             [--threads 0] [--device 0] [--seed 1] [--factor-dtype float32,float16,bfloat16 (a list)]
//             [--schedule hogwild,wavefront (a list: one CUDA row each, SFAC_OPT_SGD_SCHEDULE)]
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench_check.h"
#include "bench_flags.h"
#include "bench_training.h"
#include "sparsefac/sparsefac.h"

namespace {

using bench::check;
using bench::copy_to;
using bench::median;
using bench::number;

struct Case {
  const char* name;
  int64_t users, items, nnz;
};

const Case kCases[] = {
    {"netflix", 480189, 17770, 99072112},
    {"yahoo", 1000990, 624961, 250000000},
};

constexpr int64_t kPlantedRank = 16;
constexpr double kNoise = 0.5;
constexpr double kTestFraction = 0.01;
constexpr int64_t kMaxRank = 4096;

const char* kUsage =
    "[--cases netflix,yahoo] [--ranks 128 (list)] [--scale 1 (users, items and ratings)] "
    "[--epochs 20 (timed CUDA epochs)] [--cpu-epochs 2 (timed CPU epochs; 0 = no CPU)] "
    "[--lambda 0.05] [--lr 0.08 (alpha)] [--decay 0.3 (beta)] [--biases 0 (0|1)] "
    "[--target-rmse 0 (0 = time to the best RMSE)] [--peak-gbs 3350 (HBM3 of an H100 SXM)] "
    "[--device-memory-limit 0 (list of bytes, CUDA trainer; 0 = none)] [--skew 0.6] "
    "[--signal 1 (std of the planted part)] [--threads 0 (all)] "
    "[--device 0] [--seed 1] [--factor-dtype float32 (list of float32, float16, bfloat16: one CUDA "
    "row each; SFAC_OPT_FACTOR_DTYPE)] [--schedule hogwild (list of hogwild, wavefront: one CUDA "
    "row each)]";

[[noreturn]] void usage_error(const char* program, const std::string& why) {
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program, why.c_str(), program, kUsage);
  std::exit(2);
}

// A number in [0, hi]: lambda, decay and the target may be 0, which Flags::positive refuses.
double non_negative(bench::Flags& flags, const char* program, const char* name, double fallback,
                    double hi) {
  const std::string kNotGiven = "\x01";
  const std::string text = flags.text(name, kNotGiven);
  if (text == kNotGiven) return fallback;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno != 0 || !(x >= 0.0) || !(x <= hi)) {
    char range[64];
    std::snprintf(range, sizeof range, "[0, %g]", hi);
    usage_error(program,
                std::string("flag ") + name + ": '" + text + "' is not a number in " + range);
  }
  return x;
}

struct Result {
  bool ran = false;
  std::string note;  // why it did not run (or stopped)
  double setup_ms = NAN, median_ms = NAN, min_ms = NAN;
  std::vector<double> epoch_ms, rmse;  // per epoch
};

// Creates a trainer and times `epochs` single epochs, evaluating on `test` after each.
// UNSUPPORTED and OUT_OF_MEMORY become a note on the row; any other failure stops the program.
Result time_backend(sfac_context* ctx, const sfac_sparse* train, const sfac_sparse* test,
                    sfac_train_options* options, int64_t memory_limit, int epochs) {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  Result r;
  auto soft = [&r](sfac_status status, const char* what) {
    if (status == SFAC_OK) return true;
    if (status != SFAC_ERR_UNSUPPORTED && status != SFAC_ERR_OUT_OF_MEMORY) check(status, what);
    r.note = std::string(what) + ": " + sfac_status_string(status) + ": " + sfac_last_error();
    return false;
  };
  check(sfac_train_options_set_int(options, SFAC_OPT_DEVICE_MEMORY_LIMIT, memory_limit),
        "device memory limit");
  const auto t0 = Clock::now();
  sfac_trainer* trainer = nullptr;
  if (!soft(sfac_trainer_create(ctx, train, options, &trainer), "trainer")) return r;
  r.setup_ms = ms(Clock::now() - t0);
  for (int e = 0; e < epochs; ++e) {
    const auto start = Clock::now();
    if (!soft(sfac_trainer_run(trainer, 1, nullptr), "epoch") ||
        !soft(sfac_context_synchronize(ctx), "epoch")) {
      break;
    }
    r.epoch_ms.push_back(ms(Clock::now() - start));
    sfac_model* model = nullptr;
    double rmse = NAN;
    if (!soft(sfac_trainer_get_model(trainer, &model), "model")) break;
    check(sfac_model_evaluate(model, test, &rmse, nullptr), "evaluate");
    sfac_model_destroy(model);
    r.rmse.push_back(rmse);
  }
  sfac_trainer_destroy(trainer);
  r.ran = r.epoch_ms.size() == static_cast<size_t>(epochs);
  if (!r.epoch_ms.empty()) {
    r.median_ms = median(r.epoch_ms);
    r.min_ms = *std::min_element(r.epoch_ms.begin(), r.epoch_ms.end());
  }
  return r;
}

// The first epoch (from 1) whose RMSE is <= target (target 0: the first with the best RMSE),
// with the timed seconds up to it; epoch 0 when never reached.
struct Reach {
  int epoch = 0;
  double seconds = NAN, rmse = NAN;
};

Reach reach(const Result& r, double target) {
  Reach out;
  double best = INFINITY, seconds = 0.0;
  for (size_t e = 0; e < r.rmse.size(); ++e) {
    seconds += r.epoch_ms[e] * 1e-3;
    const bool hit = target > 0.0 ? r.rmse[e] <= target : r.rmse[e] < best;
    if (hit) {
      out = {static_cast<int>(e + 1), seconds, r.rmse[e]};
      best = r.rmse[e];
      if (target > 0.0) break;
    }
  }
  return out;
}

std::vector<float> values_of(const sfac_sparse* m) {
  int64_t nnz = 0;
  check(sfac_sparse_get_shape(m, nullptr, nullptr, &nnz), "shape");
  std::vector<float> v(static_cast<size_t>(nnz));
  check(sfac_sparse_download_csr(m, nullptr, 0, nullptr, v.data(), static_cast<int64_t>(v.size())),
        "download values");
  return v;
}

// RMSE on `test` of predicting the mean of `train` for every rating.
double mean_predictor_rmse(const sfac_sparse* train, const sfac_sparse* test, double* mean) {
  const std::vector<float> t = values_of(train);
  double sum = 0.0;
  for (const float x : t) sum += x;
  *mean = t.empty() ? 0.0 : sum / static_cast<double>(t.size());
  const std::vector<float> h = values_of(test);
  double sq = 0.0;
  for (const float x : h) sq += (x - *mean) * (x - *mean);
  return h.empty() ? NAN : std::sqrt(sq / static_cast<double>(h.size()));
}

std::string describe_options(const sfac_train_options* o) {
  auto get_i = [o](sfac_option opt) {
    int64_t v = 0;
    check(sfac_train_options_get_int(o, opt, &v), "get option");
    return v;
  };
  auto get_d = [o](sfac_option opt) {
    double v = 0;
    check(sfac_train_options_get_double(o, opt, &v), "get option");
    return v;
  };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "SGD lambda_user %g lambda_item %g learning_rate %g decay %g scale_ratings %lld "
                "init_scale %g biases %lld deterministic %lld",
                get_d(SFAC_OPT_LAMBDA_USER), get_d(SFAC_OPT_LAMBDA_ITEM),
                get_d(SFAC_OPT_SGD_LEARNING_RATE), get_d(SFAC_OPT_SGD_DECAY),
                static_cast<long long>(get_i(SFAC_OPT_SGD_SCALE_RATINGS)),
                get_d(SFAC_OPT_INIT_SCALE), static_cast<long long>(get_i(SFAC_OPT_USE_BIASES)),
                static_cast<long long>(get_i(SFAC_OPT_DETERMINISTIC)));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags(argc, argv, kUsage);
  const std::string case_list = flags.text("--cases", "netflix,yahoo");
  const std::vector<int64_t> ranks = flags.integers("--ranks", "128", 1, kMaxRank);
  const double scale = flags.positive("--scale", 1.0, 4.0);
  const int epochs = static_cast<int>(flags.integer("--epochs", 20, 1, bench::Flags::kMaxReps));
  const int cpu_epochs =
      static_cast<int>(flags.integer("--cpu-epochs", 2, 0, bench::Flags::kMaxReps));
  const double lambda = non_negative(flags, argv[0], "--lambda", 0.05, 1e3);
  const double lr = flags.positive("--lr", 0.08, 1e3);
  const double decay = non_negative(flags, argv[0], "--decay", 0.3, 1e3);
  const bool biases = flags.integer("--biases", 0, 0, 1) != 0;
  const double target_rmse = non_negative(flags, argv[0], "--target-rmse", 0.0, 1e6);
  const double peak_gbs = flags.positive("--peak-gbs", 3350.0, 1e6);
  const std::vector<int64_t> memory_limits =
      flags.integers("--device-memory-limit", "0", 0, INT64_MAX);
  const double skew = flags.positive("--skew", 0.6, 0.99);
  const double signal = flags.positive("--signal", 1.0, 100.0);
  const int threads = static_cast<int>(flags.integer("--threads", 0, 0, 4096));
  const int device = static_cast<int>(flags.integer("--device", 0, 0, 1023));
  const uint64_t seed = static_cast<uint64_t>(flags.integer("--seed", 1, 0, INT64_MAX));
  const std::string dtype_list = flags.text("--factor-dtype", "float32");
  const std::string schedule_list = flags.text("--schedule", "hogwild");
  flags.done();
  // The CUDA rows: one per storage type; the CPU trains float32 factors only.
  std::vector<sfac_dtype> dtypes;
  for (const std::string& name : bench::split(dtype_list)) {
    if (name == "float32") {
      dtypes.push_back(SFAC_DTYPE_FLOAT32);
    } else if (name == "float16") {
      dtypes.push_back(SFAC_DTYPE_FLOAT16);
    } else if (name == "bfloat16") {
      dtypes.push_back(SFAC_DTYPE_BFLOAT16);
    } else {
      usage_error(argv[0], "--factor-dtype: unknown storage type '" + name + "'");
    }
  }
  if (dtypes.empty()) usage_error(argv[0], "--factor-dtype: empty list");
  std::vector<sfac_sgd_schedule> schedules;
  for (const std::string& name : bench::split(schedule_list)) {
    if (name == "hogwild") {
      schedules.push_back(SFAC_SGD_HOGWILD);
    } else if (name == "wavefront") {
      schedules.push_back(SFAC_SGD_WAVEFRONT);
    } else {
      usage_error(argv[0], "--schedule: unknown schedule '" + name + "'");
    }
  }
  if (schedules.empty()) usage_error(argv[0], "--schedule: empty list");
  std::vector<const Case*> cases;
  for (const std::string& name : bench::split(case_list)) {
    const Case* found = nullptr;
    for (const Case& c : kCases) {
      if (name == c.name) found = &c;
    }
    if (!found) usage_error(argv[0], "flag --cases: '" + name + "' is not one of netflix|yahoo");
    cases.push_back(found);
  }
  if (cases.empty()) usage_error(argv[0], "flag --cases needs at least one case");

  const bench::Contexts contexts = bench::open_contexts("bench_sgd", argc, argv, threads, device, seed);
  sfac_context* cpu = contexts.cpu;
  sfac_context* gpu = contexts.gpu;
  std::printf(
      "epoch_ms: median of %d CUDA / %d CPU single-epoch runs, no warm-up; Gupd/s = train nnz / "
      "median epoch;\nGB/s = Gupd/s x (8 + 4 k s) bytes per update (s = 4 for float32, 2 for "
      "16-bit storage), %%peak of %g GB/s; target: %s;\nback: cu32, cu16, cubf = CUDA with "
      "float32, float16, bfloat16 factors (w: wavefront schedule; @NG: under a device memory "
      "limit of N GB); cpu = "
      "CPU, float32;\nx_epoch, x_target = CUDA / CPU (median epoch, seconds to target)\n",
      epochs, cpu_epochs, peak_gbs,
      target_rmse > 0.0 ? ("first epoch with RMSE <= " + number(target_rmse)).c_str()
                        : "the best RMSE seen (ratios need --target-rmse)");
  std::fflush(stdout);

  std::vector<std::string> summary;
  for (const Case* c : cases) {
    const auto users = std::max<int64_t>(1, std::llround(static_cast<double>(c->users) * scale));
    const auto items = std::max<int64_t>(1, std::llround(static_cast<double>(c->items) * scale));
    int64_t target = std::max<int64_t>(1, std::llround(static_cast<double>(c->nnz) * scale));
    const bool capped = target > users * items / 4;
    if (capped) target = std::max<int64_t>(1, users * items / 4);

    const auto s0 = std::chrono::steady_clock::now();
    int runs = 0;
    sfac_sparse* ratings = bench::synthesize(cpu, SFAC_FEEDBACK_EXPLICIT, users, items, target,
                                             kPlantedRank, kNoise, skew, &runs, signal);
    sfac_sparse *train = nullptr, *test = nullptr;
    check(sfac_split_random(ratings, kTestFraction, seed, &train, &test), "split");
    sfac_sparse_destroy(ratings);
    int64_t nnz = 0, test_nnz = 0;
    check(sfac_sparse_get_shape(train, nullptr, nullptr, &nnz), "shape");
    check(sfac_sparse_get_shape(test, nullptr, nullptr, &test_nnz), "shape");
    sfac_sparse* gpu_train = gpu ? copy_to(gpu, train) : nullptr;
    sfac_sparse* gpu_test = gpu ? copy_to(gpu, test) : nullptr;
    const double synth_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    double mean = 0.0;
    const double mean_rmse = mean_predictor_rmse(train, test, &mean);

    sfac_train_options* options = nullptr;
    check(sfac_train_options_create(SFAC_ALGO_SGD, &options), "options");
    check(sfac_train_options_set_double(options, SFAC_OPT_LAMBDA, lambda), "lambda");
    check(sfac_train_options_set_double(options, SFAC_OPT_SGD_LEARNING_RATE, lr), "lr");
    check(sfac_train_options_set_double(options, SFAC_OPT_SGD_DECAY, decay), "decay");
    check(sfac_train_options_set_int(options, SFAC_OPT_USE_BIASES, biases ? 1 : 0), "biases");
    std::printf(
        "\n%s: %lld x %lld, %lld train + %lld test ratings (explicit; target %lld%s), skew %g, signal %g, "
        "data %.1f s (%d generator run%s)\n",
        c->name, static_cast<long long>(users), static_cast<long long>(items),
        static_cast<long long>(nnz), static_cast<long long>(test_nnz),
        static_cast<long long>(target),
        capped ? ", capped at a quarter of the cells at this scale" : "", skew, signal, synth_s, runs,
        runs == 1 ? "" : "s");
    std::printf("held-out RMSE of the mean predictor (training mean %.4f): %.4f; noise %g\n", mean,
                mean_rmse, kNoise);
    std::printf("options: %s\n", describe_options(options).c_str());
    std::printf("%-8s %5s %-9s %6s %9s %9s %9s %7s %8s %6s %7s %8s %6s %8s %8s\n", "case", "rank",
                "back", "epochs", "setup_ms", "epoch_ms", "min_ms", "Gupd/s", "GB/s", "%peak",
                "rmse", "target_s", "@epoch", "x_epoch", "x_target");
    std::fflush(stdout);

    for (const int64_t rank : ranks) {
      check(sfac_train_options_set_int(options, SFAC_OPT_RANK, rank), "rank");
      check(sfac_train_options_set_int(options, SFAC_OPT_FACTOR_DTYPE, SFAC_DTYPE_FLOAT32),
            "dtype");
      Result on_cpu;
      if (cpu_epochs > 0) {
        on_cpu = time_backend(cpu, train, test, options, 0, cpu_epochs);
      } else {
        on_cpu.note = "skipped (--cpu-epochs 0)";
      }
      const Reach cpu_reach = reach(on_cpu, target_rmse);

      auto row = [&](const char* backend, sfac_dtype dtype, const Result& r,
                     const Result* baseline) {
        const double bytes = 8.0 + 4.0 * static_cast<double>(rank) *
                                       (dtype == SFAC_DTYPE_FLOAT32 ? 4.0 : 2.0);
        char head[64];
        std::snprintf(head, sizeof head, "%-8s %5lld %-9s", c->name, static_cast<long long>(rank),
                      backend);
        if (!r.ran) {
          std::printf("%s %s\n", head, r.note.c_str());
          summary.push_back(std::string(head) + " not run");
          return;
        }
        const double gups = static_cast<double>(nnz) / (r.median_ms * 1e-3) * 1e-9;
        const Reach got = reach(r, target_rmse);
        char reached[32] = "       -      -";
        if (got.epoch > 0) {
          std::snprintf(reached, sizeof reached, "%8.3f %6d", got.seconds, got.epoch);
        }
        std::printf("%s %6zu %9.1f %9.2f %9.2f %7.3f %8.1f %5.1f%% %7.4f %s ", head,
                    r.epoch_ms.size(), r.setup_ms, r.median_ms, r.min_ms, gups, gups * bytes,
                    100.0 * gups * bytes / peak_gbs, r.rmse.back(), reached);
        const bool both = baseline && baseline->ran;
        if (both) {
          std::printf("%8.3f ", r.median_ms / baseline->median_ms);
        } else {
          std::printf("%8s ", "-");
        }
        if (both && target_rmse > 0.0 && got.epoch > 0 && cpu_reach.epoch > 0) {
          std::printf("%8.3f\n", got.seconds / cpu_reach.seconds);
        } else {
          std::printf("%8s\n", "-");
        }
        std::string curve;
        for (size_t e = 0; e < r.rmse.size(); ++e) {
          if (e == 0 || (e + 1) % 5 == 0 || e + 1 == r.rmse.size()) {
            char item[48];
            std::snprintf(item, sizeof item, "%s%zu %.4f", curve.empty() ? "" : ", ", e + 1,
                          r.rmse[e]);
            curve += item;
          }
        }
        std::printf("  %s held-out RMSE by epoch: %s\n", backend, curve.c_str());
        char line[160];
        std::snprintf(line, sizeof line, "%s %9.2f %7.3f %8.1f %7.4f %s", head, r.median_ms, gups,
                      gups * bytes, r.rmse.back(), reached);
        summary.push_back(line);
      };
      for (const sfac_dtype dtype : gpu ? dtypes : std::vector<sfac_dtype>()) {
        check(sfac_train_options_set_int(options, SFAC_OPT_FACTOR_DTYPE, dtype), "dtype");
        for (const sfac_sgd_schedule schedule : schedules) {
          check(sfac_train_options_set_int(options, SFAC_OPT_SGD_SCHEDULE, schedule), "schedule");
          for (const int64_t limit : memory_limits) {
            const Result on_gpu = time_backend(gpu, gpu_train, gpu_test, options, limit, epochs);
            std::string label = dtype == SFAC_DTYPE_FLOAT32   ? "cu32"
                                : dtype == SFAC_DTYPE_FLOAT16 ? "cu16"
                                                              : "cubf";
            if (schedule == SFAC_SGD_WAVEFRONT) label += "w";
            if (limit > 0) label += "@" + number(static_cast<double>(limit) * 1e-9) + "G";
            row(label.c_str(), dtype, on_gpu, &on_cpu);
          }
        }
        check(sfac_train_options_set_int(options, SFAC_OPT_SGD_SCHEDULE, SFAC_SGD_HOGWILD),
              "schedule");
      }
      if (cpu_epochs > 0 || !gpu) row("cpu", SFAC_DTYPE_FLOAT32, on_cpu, nullptr);
      std::fflush(stdout);
    }
    sfac_train_options_destroy(options);
    sfac_sparse_destroy(gpu_test);
    sfac_sparse_destroy(gpu_train);
    sfac_sparse_destroy(test);
    sfac_sparse_destroy(train);
  }

  std::printf("\nsummary (rmse after the last epoch; target_s, @epoch as above)\n");
  std::printf("%-8s %5s %-9s %9s %7s %8s %7s %8s %6s\n", "case", "rank", "back", "epoch_ms",
              "Gupd/s", "GB/s", "rmse", "target_s", "@epoch");
  for (const std::string& line : summary) std::printf("%s\n", line.c_str());
  sfac_context_destroy(gpu);
  sfac_context_destroy(cpu);
  return 0;
}
