// One ALS epoch on the CUDA backend and on the CPU backend, side by side, through the public C
// API.
//
// Cases (--scale multiplies users, items and ratings; at small scales the ratings are capped at
// a quarter of the cells, and the printed nnz is what the generator kept):
//   netflix  explicit ALS,  480189 x  17770, 99,072,112 ratings, ranks 32,64,100,128
//   ml20m    implicit ALS,  138493 x  26744, 20,000,263 ratings, ranks 64,128,256
//   lastfm   implicit ALS,  358868 x 292385, 17,500,000 ratings, ranks 64,128,256
// The ratings come from sfac_synthesize_ratings on a CPU context (planted rank 16, noise 0.5,
// power-law degrees of skew --skew on both sides, the value of the other benchmarks' suites;
// when the generator's duplicate draws leave it more than 2% short of the target it is run once
// more with proportionally more draws), and the same CSR is uploaded into a CUDA context.
// Without a usable CUDA device only the CPU is timed.
//
// Per backend and rank: sfac_trainer_create with the algorithm's default options (rank, solver
// and explicit ALS's biases set; printed per case), one warm-up sfac_trainer_run(t, 1) (the
// first epoch carries one-time setup; setup_ms = trainer creation + warm-up), then --epochs
// (CUDA) or --cpu-epochs (CPU) timed single-epoch runs with steady_clock; the CUDA trainer
// synchronizes at the end of each epoch, so wall time is the epoch's time. Every epoch also
// includes the library's O((users + items) k) finiteness check of the factors. Reported: median
// and min epoch ms, TFLOP/s against the fp32 FLOP floor of one epoch (both half-sweeps), the
// floor's time at the peak of --peak-tflops and epoch / floor, and for CUDA the speedup over the
// CPU's median.
//
// FLOP floor per epoch, k = rank (+1 for explicit ALS with --biases 1), m users, n items:
//   Gram 2 nnz k (k+1) + right-hand sides 4 nnz k + Cholesky (m+n) k^3/3
//   (+ implicit: Y^T Y of each fixed side, 2 (m+n) k^2).
// With --solver cg it is the same formula (a reference for comparison, not a floor of CG).
// --reorder sets SFAC_OPT_ALS_REORDER for both backends: degree trains on the users and items
// renumbered by degree, most ratings first (BALS's reordering, which puts the rows that many
// segments share next to each other); auto, the library's default, does so on CUDA only.
//
//   bench_als [--cases netflix,ml20m,lastfm] [--ranks per case] [--scale 1] [--epochs 3]
//             [--cpu-epochs 1] [--cpu-warmup 1] [--solver cholesky|cg] [--biases 0]
//             [--peak-tflops 60] [--skew 0.6] [--threads 0] [--device 0] [--seed 1]
//             [--factor-dtype float32|float16|bfloat16] [--reorder auto]
#include <algorithm>
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
  sfac_feedback feedback;
  int64_t users, items, nnz;
  const char* ranks;  // default --ranks
};

const Case kCases[] = {
    {"netflix", SFAC_FEEDBACK_EXPLICIT, 480189, 17770, 99072112, "32,64,100,128"},
    {"ml20m", SFAC_FEEDBACK_IMPLICIT, 138493, 26744, 20000263, "64,128,256"},
    {"lastfm", SFAC_FEEDBACK_IMPLICIT, 358868, 292385, 17500000, "64,128,256"},
};

constexpr int64_t kPlantedRank = 16;
constexpr double kNoise = 0.5;
constexpr int64_t kMaxRank = 4096;  // the CUDA trainer itself stops at 2048 unknowns

const char* kUsage =
    "[--cases netflix,ml20m,lastfm] [--ranks list (netflix 32,64,100,128; ml20m and lastfm "
    "64,128,256)] [--scale 1 (users, items and ratings)] [--epochs 3 (timed CUDA epochs)] "
    "[--cpu-epochs 1 (timed CPU epochs; 0 = no CPU)] [--cpu-warmup 1 (0|1)] "
    "[--solver cholesky|cg] [--biases 0 (0|1, explicit ALS)] [--peak-tflops 60 (fp32 "
    "non-tensor peak of an H100 SXM; sets floor_ms)] [--skew 0.6] [--threads 0 (all)] "
    "[--device 0] [--seed 1] [--factor-dtype float32|float16|bfloat16 (SFAC_OPT_FACTOR_DTYPE)] "
    "[--reorder auto|none|degree (SFAC_OPT_ALS_REORDER)]";

[[noreturn]] void usage_error(const char* program, const std::string& why) {
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program, why.c_str(), program, kUsage);
  std::exit(2);
}

// What one backend gave for one (case, rank).
struct Result {
  bool ran = false;
  std::string note;  // why it did not run
  double setup_ms = NAN, median_ms = NAN, min_ms = NAN;
  int epochs = 0;
};

// Creates a trainer, runs the warm-up epoch (if any) and times `epochs` single epochs.
// UNSUPPORTED and OUT_OF_MEMORY become a note on the row; any other failure stops the program.
Result time_backend(sfac_context* ctx, const sfac_sparse* ratings,
                    const sfac_train_options* options, bool warmup, int epochs) {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  Result r;
  auto soft = [&r](sfac_status status, const char* what) {
    if (status == SFAC_OK) return true;
    if (status != SFAC_ERR_UNSUPPORTED && status != SFAC_ERR_OUT_OF_MEMORY) check(status, what);
    r.note = std::string(what) + ": " + sfac_status_string(status) + ": " + sfac_last_error();
    return false;
  };
  const auto t0 = Clock::now();
  sfac_trainer* trainer = nullptr;
  if (!soft(sfac_trainer_create(ctx, ratings, options, &trainer), "trainer")) return r;
  if (warmup && !soft(sfac_trainer_run(trainer, 1, nullptr), "warm-up epoch")) {
    sfac_trainer_destroy(trainer);
    return r;
  }
  r.setup_ms = ms(Clock::now() - t0);
  std::vector<double> t;
  for (int e = 0; e < epochs; ++e) {
    const auto start = Clock::now();
    if (!soft(sfac_trainer_run(trainer, 1, nullptr), "epoch")) {
      sfac_trainer_destroy(trainer);
      return r;
    }
    t.push_back(ms(Clock::now() - start));
  }
  sfac_trainer_destroy(trainer);
  r.ran = true;
  r.epochs = epochs;
  r.median_ms = median(t);
  r.min_ms = *std::min_element(t.begin(), t.end());
  return r;
}

std::string describe_options(const sfac_train_options* o, sfac_algorithm algorithm) {
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
  const bool cg = get_i(SFAC_OPT_ALS_SOLVER) == SFAC_SOLVER_CG;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "%s lambda_user %g lambda_item %g regularization %s solver %s%s%s init_scale %g%s "
      "factor_dtype %s",
      algorithm == SFAC_ALGO_IALS ? "IALS" : "ALS", get_d(SFAC_OPT_LAMBDA_USER),
      get_d(SFAC_OPT_LAMBDA_ITEM),
      get_i(SFAC_OPT_ALS_REGULARIZATION) == SFAC_REG_WEIGHTED ? "weighted (lambda n_u)" : "plain",
      cg ? "cg" : "cholesky",
      cg ? (" (" + std::to_string(get_i(SFAC_OPT_ALS_CG_STEPS)) + " steps)").c_str() : "",
      algorithm == SFAC_ALGO_IALS ? (" alpha " + number(get_d(SFAC_OPT_IMPLICIT_ALPHA))).c_str()
                                  : "",
      get_d(SFAC_OPT_INIT_SCALE),
      algorithm == SFAC_ALGO_IALS
          ? ""
          : (" biases " + std::to_string(get_i(SFAC_OPT_USE_BIASES))).c_str(),
      get_i(SFAC_OPT_FACTOR_DTYPE) == SFAC_DTYPE_FLOAT16    ? "float16"
      : get_i(SFAC_OPT_FACTOR_DTYPE) == SFAC_DTYPE_BFLOAT16 ? "bfloat16"
                                                             : "float32");
  return buf;
}

// `ratings` (destroyed) with users and items renumbered by degree, most ratings first.
}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags(argc, argv, kUsage);
  const std::string case_list = flags.text("--cases", "netflix,ml20m,lastfm");
  // --ranks overrides every case's default list (looked up twice: once to see whether it is
  // given, then parsed and range-checked).
  const std::string kNotGiven = "\x01";
  const bool ranks_given = flags.text("--ranks", kNotGiven) != kNotGiven;
  const std::vector<int64_t> ranks_flag =
      ranks_given ? flags.integers("--ranks", "", 1, kMaxRank) : std::vector<int64_t>{};
  const double scale = flags.positive("--scale", 1.0, 4.0);
  const int epochs = static_cast<int>(flags.integer("--epochs", 3, 1, bench::Flags::kMaxReps));
  const int cpu_epochs =
      static_cast<int>(flags.integer("--cpu-epochs", 1, 0, bench::Flags::kMaxReps));
  const bool cpu_warmup = flags.integer("--cpu-warmup", 1, 0, 1) != 0;
  const bool cg = flags.choice("--solver", "cholesky", {"cholesky", "cg"}) == "cg";
  const bool biases = flags.integer("--biases", 0, 0, 1) != 0;
  const double peak_tflops = flags.positive("--peak-tflops", 60.0, 1e6);
  const double skew = flags.positive("--skew", 0.6, 0.99);
  const int threads = static_cast<int>(flags.integer("--threads", 0, 0, 4096));
  const int device = static_cast<int>(flags.integer("--device", 0, 0, 1023));
  const uint64_t seed = static_cast<uint64_t>(flags.integer("--seed", 1, 0, INT64_MAX));
  const std::string dtype_name =
      flags.choice("--factor-dtype", "float32", {"float32", "float16", "bfloat16"});
  const sfac_dtype factor_dtype = dtype_name == "float16"    ? SFAC_DTYPE_FLOAT16
                                  : dtype_name == "bfloat16" ? SFAC_DTYPE_BFLOAT16
                                                             : SFAC_DTYPE_FLOAT32;
  const std::string reorder_name = flags.choice("--reorder", "auto", {"auto", "none", "degree"});
  const sfac_reorder reorder = reorder_name == "none"     ? SFAC_REORDER_NONE
                               : reorder_name == "degree" ? SFAC_REORDER_DEGREE
                                                          : SFAC_REORDER_AUTO;
  flags.done();
  std::vector<const Case*> cases;
  for (const std::string& name : bench::split(case_list)) {
    const Case* found = nullptr;
    for (const Case& c : kCases) {
      if (name == c.name) found = &c;
    }
    if (!found) {
      usage_error(argv[0], "flag --cases: '" + name + "' is not one of netflix|ml20m|lastfm");
    }
    cases.push_back(found);
  }
  if (cases.empty()) usage_error(argv[0], "flag --cases needs at least one case");

  const bench::Contexts contexts = bench::open_contexts("bench_als", argc, argv, threads, device, seed);
  sfac_context* cpu = contexts.cpu;
  sfac_context* gpu = contexts.gpu;
  std::printf(
      "epoch_ms: median of %d CUDA / %d CPU single-epoch runs after %s; TFLOP/s against the "
      "fp32 FLOP floor\n(2 nnz k(k+1) + 4 nnz k + (m+n) k^3/3, implicit + 2 (m+n) k^2); "
      "floor_ms at %g TFLOP/s; x_floor = epoch / floor; speedup = CPU / CUDA median\n",
      epochs, cpu_epochs, cpu_warmup ? "one warm-up epoch" : "one CUDA warm-up epoch (CPU: none)",
      peak_tflops);
  std::fflush(stdout);

  for (const Case* c : cases) {
    const auto users = std::max<int64_t>(1, std::llround(static_cast<double>(c->users) * scale));
    const auto items = std::max<int64_t>(1, std::llround(static_cast<double>(c->items) * scale));
    int64_t target = std::max<int64_t>(1, std::llround(static_cast<double>(c->nnz) * scale));
    const bool capped = target > users * items / 4;
    if (capped) target = std::max<int64_t>(1, users * items / 4);
    const bool implicit = c->feedback == SFAC_FEEDBACK_IMPLICIT;
    const sfac_algorithm algorithm = implicit ? SFAC_ALGO_IALS : SFAC_ALGO_ALS;

    const auto s0 = std::chrono::steady_clock::now();
    int runs = 0;
    sfac_sparse* ratings = bench::synthesize(cpu, c->feedback, users, items, target, kPlantedRank,
                                             kNoise, skew, &runs);
    int64_t nnz = 0;
    check(sfac_sparse_get_shape(ratings, nullptr, nullptr, &nnz), "shape");
    sfac_sparse* gpu_ratings = gpu ? copy_to(gpu, ratings) : nullptr;
    const double synth_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();

    sfac_train_options* options = nullptr;
    check(sfac_train_options_create(algorithm, &options), "options");
    check(sfac_train_options_set_int(options, SFAC_OPT_ALS_SOLVER,
                                     cg ? SFAC_SOLVER_CG : SFAC_SOLVER_CHOLESKY),
          "solver");
    check(sfac_train_options_set_int(options, SFAC_OPT_FACTOR_DTYPE, factor_dtype), "dtype");
    check(sfac_train_options_set_int(options, SFAC_OPT_ALS_REORDER, reorder), "reorder");
    if (!implicit) {  // IALS has no biases
      check(sfac_train_options_set_int(options, SFAC_OPT_USE_BIASES, biases ? 1 : 0), "biases");
    }
    std::printf(
        "\n%s: %lld x %lld, %lld ratings (%s %lld%s), skew %g, data %.1f s (%d generator run%s)\n",
        c->name, static_cast<long long>(users), static_cast<long long>(items),
        static_cast<long long>(nnz), implicit ? "implicit; target" : "explicit; target",
        static_cast<long long>(target),
        capped ? ", capped at a quarter of the cells at this scale" : "", skew, synth_s, runs,
        runs == 1 ? "" : "s");
    std::printf("options: %s; reorder %s\n", describe_options(options, algorithm).c_str(),
                reorder_name.c_str());
    std::printf("%-8s %5s %-5s %7s %10s %10s %10s %9s %10s %8s %8s\n", "case", "rank", "back",
                "epochs", "setup_ms", "epoch_ms", "min_ms", "TFLOP/s", "floor_ms", "x_floor",
                "speedup");
    std::fflush(stdout);

    const std::vector<int64_t> ranks = ranks_given ? ranks_flag : [&] {
      std::vector<int64_t> out;
      for (const std::string& r : bench::split(c->ranks)) out.push_back(std::atoll(r.c_str()));
      return out;
    }();
    for (const int64_t rank : ranks) {
      check(sfac_train_options_set_int(options, SFAC_OPT_RANK, rank), "rank");
      const double k = static_cast<double>(rank + (biases && !implicit ? 1 : 0));
      const double sides = static_cast<double>(users + items), z = static_cast<double>(nnz);
      const double flops = 2.0 * z * k * (k + 1.0) + 4.0 * z * k + sides * k * k * k / 3.0 +
                           (implicit ? 2.0 * sides * k * k : 0.0);
      const double floor_ms = flops / (peak_tflops * 1e12) * 1e3;

      Result on_cpu, on_gpu;
      if (cpu_epochs > 0) {
        on_cpu = time_backend(cpu, ratings, options, cpu_warmup, cpu_epochs);
      } else {
        on_cpu.note = "skipped (--cpu-epochs 0)";
      }
      if (gpu) on_gpu = time_backend(gpu, gpu_ratings, options, true, epochs);

      auto row = [&](const char* backend, const Result& r, const Result* baseline) {
        std::printf("%-8s %5lld %-5s ", c->name, static_cast<long long>(rank), backend);
        if (!r.ran) {
          std::printf("%s\n", r.note.c_str());
          return;
        }
        std::printf("%7d %10.1f %10.2f %10.2f %9.3f %10.4g %8.1f ", r.epochs, r.setup_ms,
                    r.median_ms, r.min_ms, flops / (r.median_ms * 1e-3) * 1e-12, floor_ms,
                    r.median_ms / floor_ms);
        if (baseline && baseline->ran) {
          std::printf("%7.2fx\n", baseline->median_ms / r.median_ms);
        } else {
          std::printf("%8s\n", "-");
        }
      };
      if (gpu) row("cuda", on_gpu, &on_cpu);
      if (cpu_epochs > 0 || !gpu) row("cpu", on_cpu, nullptr);
      std::fflush(stdout);
    }
    sfac_train_options_destroy(options);
    sfac_sparse_destroy(gpu_ratings);
    sfac_sparse_destroy(ratings);
  }
  sfac_context_destroy(gpu);
  sfac_context_destroy(cpu);
  return 0;
}
