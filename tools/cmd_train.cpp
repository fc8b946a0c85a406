// sparsefac train: fit an ALS, implicit ALS or SGD model to a rating file and save it.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <vector>

#include "commands.h"
#include "data_io.h"
#include "progress_bar.h"

namespace sfac_cli {
namespace {

struct TrainCommand {
  ContextOptions context;
  ReadOptions read;
  std::string algorithm, input, output, validation, solver, regularization, factor_dtype, schedule,
      reorder, progress = "auto";
  int rank = 32, iterations = 15, cg_steps = 3, workers = 0;
  double lambda = 0.05, alpha = 40.0, learning_rate = 0.08, decay = 0.3, holdout = 0.0;
  bool biases = false, no_scale = false, deterministic = false, force = false;
};

// Options that only some algorithms use; giving one to another algorithm is a usage error.
struct Restriction {
  const char* option;
  const char* algorithms;
};
constexpr Restriction kRestrictions[] = {
    {"--alpha", "ials"},
    {"--lr", "sgd"},
    {"--decay", "sgd"},
    {"--no-scale", "sgd"},
    {"--workers", "sgd"},   // the CUDA trainer's; the CPU runs one worker per thread
    {"--schedule", "sgd"},  // the CUDA trainer's; the CPU runs conflict-free blocks
    {"--solver", "als/ials"},
    {"--cg-steps", "als/ials"},
    {"--regularization", "als/ials"},
    {"--reorder", "als/ials"},
    {"--biases", "als/sgd"},
};

void check_restrictions(const CLI::App& cmd, const std::string& algorithm) {
  for (const Restriction& r : kRestrictions) {
    const std::string allowed = std::string("/") + r.algorithms + "/";
    if (cmd.count(r.option) > 0 && allowed.find("/" + algorithm + "/") == std::string::npos) {
      throw CLI::ValidationError(
          r.option, std::string("applies to ") + r.algorithms + " only, not to " + algorithm);
    }
  }
}

// The model file must be writable before any work is done: a run of hours must not end at an
// unwritable path, and an existing model is replaced only when the caller says so.
void check_output(const std::string& path, bool force) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::exists(status)) {
    if (fs::is_directory(status)) throw CLI::ValidationError("--output", path + " is a directory");
    if (!force) {
      throw CLI::ValidationError("--output", path + " exists; pass --force to overwrite it");
    }
    if (::access(path.c_str(), W_OK) != 0) {
      fail(SFAC_ERR_IO, "--output", "cannot write " + path + ": " + std::strerror(errno));
    }
    return;
  }
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  if (!fs::is_directory(dir, error)) {
    fail(SFAC_ERR_IO, "--output", "cannot write " + path + ": no directory " + dir);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    fail(SFAC_ERR_IO, "--output",
         "cannot write " + path + ": directory " + dir + ": " + std::strerror(errno));
  }
}

// The entries of `test` whose user (row) and item (column) have ratings in `train`, so that a
// held-out split scores the same kind of ratings as a --validation file, whose ids must occur
// in the training file.
Sparse without_cold_entries(sfac_context* ctx, const sfac_sparse* train, const sfac_sparse* test,
                            int64_t* dropped) {
  int64_t rows = 0, cols = 0, nnz = 0;
  SFAC_CLI_CHECK(sfac_sparse_get_shape(train, &rows, &cols, nullptr));
  std::vector<int64_t> row_offsets(static_cast<size_t>(rows) + 1),
      col_offsets(static_cast<size_t>(cols) + 1);
  SFAC_CLI_CHECK(sfac_sparse_download_csr(
      train, row_offsets.data(), static_cast<int64_t>(row_offsets.size()), nullptr, nullptr, 0));
  SFAC_CLI_CHECK(sfac_sparse_download_csc(
      train, col_offsets.data(), static_cast<int64_t>(col_offsets.size()), nullptr, nullptr, 0));
  SFAC_CLI_CHECK(sfac_sparse_get_shape(test, nullptr, nullptr, &nnz));
  std::vector<int32_t> r(static_cast<size_t>(nnz)), c(static_cast<size_t>(nnz));
  std::vector<float> v(static_cast<size_t>(nnz));
  SFAC_CLI_CHECK(
      sfac_sparse_download_coo(test, r.data(), c.data(), v.data(), static_cast<int64_t>(v.size())));
  int64_t kept = 0;
  for (int64_t e = 0; e < nnz; ++e) {
    if (row_offsets[r[e] + 1] == row_offsets[r[e]] || col_offsets[c[e] + 1] == col_offsets[c[e]]) {
      continue;
    }
    r[kept] = r[e];
    c[kept] = c[e];
    v[kept] = v[e];
    ++kept;
  }
  *dropped = nnz - kept;
  sfac_sparse* raw = nullptr;
  SFAC_CLI_CHECK(sfac_sparse_create_coo(ctx, rows, cols, kept, r.data(), c.data(), v.data(),
                                        SFAC_SPARSE_DEFAULT, &raw));
  return Sparse(raw);
}

sfac_algorithm algorithm_of(const std::string& name) {
  return name == "ials" ? SFAC_ALGO_IALS : name == "sgd" ? SFAC_ALGO_SGD : SFAC_ALGO_ALS;
}

TrainOptions make_options(const CLI::App& cmd, const TrainCommand& o) {
  sfac_train_options* raw = nullptr;
  SFAC_CLI_CHECK(sfac_train_options_create(algorithm_of(o.algorithm), &raw));
  TrainOptions options(raw);
  // Only what was given on the command line: the library's defaults stand for the rest.
  const auto given = [&cmd](const char* name) { return cmd.count(name) > 0; };
  if (given("--rank")) SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_RANK, o.rank));
  if (given("--iters")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_ITERATIONS, o.iterations));
  }
  if (given("--lambda")) {
    SFAC_CLI_CHECK(sfac_train_options_set_double(raw, SFAC_OPT_LAMBDA, o.lambda));
  }
  if (given("--alpha")) {
    SFAC_CLI_CHECK(sfac_train_options_set_double(raw, SFAC_OPT_IMPLICIT_ALPHA, o.alpha));
  }
  if (given("--solver")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(
        raw, SFAC_OPT_ALS_SOLVER, o.solver == "cg" ? SFAC_SOLVER_CG : SFAC_SOLVER_CHOLESKY));
  }
  if (given("--cg-steps")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_ALS_CG_STEPS, o.cg_steps));
  }
  if (given("--regularization")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(
        raw, SFAC_OPT_ALS_REGULARIZATION,
        o.regularization == "plain" ? SFAC_REG_PLAIN : SFAC_REG_WEIGHTED));
  }
  if (given("--factor-dtype")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_FACTOR_DTYPE,
                                              o.factor_dtype == "float16"    ? SFAC_DTYPE_FLOAT16
                                              : o.factor_dtype == "bfloat16" ? SFAC_DTYPE_BFLOAT16
                                                                             : SFAC_DTYPE_FLOAT32));
  }
  if (given("--reorder")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_ALS_REORDER,
                                              o.reorder == "none"     ? SFAC_REORDER_NONE
                                              : o.reorder == "degree" ? SFAC_REORDER_DEGREE
                                                                      : SFAC_REORDER_AUTO));
  }
  if (o.biases) SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_USE_BIASES, 1));
  if (given("--lr")) {
    SFAC_CLI_CHECK(sfac_train_options_set_double(raw, SFAC_OPT_SGD_LEARNING_RATE, o.learning_rate));
  }
  if (given("--decay")) {
    SFAC_CLI_CHECK(sfac_train_options_set_double(raw, SFAC_OPT_SGD_DECAY, o.decay));
  }
  if (o.no_scale) SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_SGD_SCALE_RATINGS, 0));
  if (given("--workers")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_SGD_WORKERS, o.workers));
  }
  if (given("--schedule")) {
    SFAC_CLI_CHECK(sfac_train_options_set_int(
        raw, SFAC_OPT_SGD_SCHEDULE,
        o.schedule == "wavefront" ? SFAC_SGD_WAVEFRONT : SFAC_SGD_HOGWILD));
  }
  if (o.deterministic) SFAC_CLI_CHECK(sfac_train_options_set_int(raw, SFAC_OPT_DETERMINISTIC, 1));
  return options;
}

// What the epoch callback reports to: a progress bar on a terminal, plain lines otherwise.
struct Monitor {
  int total = 0;
  bool has_validation = false;
  ProgressBar* bar = nullptr;
  int epochs = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();
  double validation_rmse = std::numeric_limits<double>::quiet_NaN();
  double best_rmse = std::numeric_limits<double>::infinity();
  int best_epoch = 0;
};

int on_epoch(int epoch, double loss, double validation_rmse, double seconds, void* user_data) {
  try {
    Monitor& m = *static_cast<Monitor*>(user_data);
    m.epochs = epoch;
    m.loss = loss;
    m.validation_rmse = validation_rmse;
    if (validation_rmse < m.best_rmse) {
      m.best_rmse = validation_rmse;
      m.best_epoch = epoch;
    }
    char metrics[96];
    if (m.bar) {
      if (m.has_validation) {
        std::snprintf(metrics, sizeof metrics, "loss %.4f  val_rmse %.4f", loss, validation_rmse);
      } else {
        std::snprintf(metrics, sizeof metrics, "loss %.4f", loss);
      }
      m.bar->update(epoch, metrics);
    } else {
      if (m.has_validation) {
        std::snprintf(metrics, sizeof metrics, " val_rmse %.4f", validation_rmse);
      } else {
        metrics[0] = '\0';
      }
      std::printf("epoch %d/%d loss %.4f%s %.2fs\n", epoch, m.total, loss, metrics, seconds);
      std::fflush(stdout);
    }
    return 0;
  } catch (...) {
    return -1;  // never let an exception cross the C API; the library reports SFAC_ERR_CALLBACK
  }
}

void run_train(const CLI::App& cmd, const TrainCommand& o) {
  check_restrictions(cmd, o.algorithm);
  check_output(o.output, o.force);
  const bool use_bar =
      o.progress == "bar" || (o.progress == "auto" && ::isatty(::fileno(stdout)) == 1);
  Context ctx = make_context(o.context, false);
  TrainOptions options = make_options(cmd, o);

  Ratings ratings = read_ratings(ctx.get(), o.input, o.read);
  Sparse train_set = std::move(ratings.matrix), validation;
  if (ratings.nnz == 0) {
    fail(SFAC_ERR_INVALID_ARGUMENT, o.input, "no ratings to train on (the file has no data lines)");
  }
  std::string validation_note;
  if (o.holdout > 0.0) {
    sfac_sparse *train_raw = nullptr, *test_raw = nullptr;
    SFAC_CLI_CHECK(
        sfac_split_random(train_set.get(), o.holdout, o.context.seed, &train_raw, &test_raw));
    train_set.reset(train_raw);
    validation.reset(test_raw);
    int64_t dropped = 0;
    validation = without_cold_entries(ctx.get(), train_set.get(), validation.get(), &dropped);
    if (dropped > 0) {
      std::fprintf(stderr,
                   "sparsefac: note: %lld held-out ratings have users or items left without "
                   "training ratings by the split; skipped, as --validation skips unknown ids\n",
                   static_cast<long long>(dropped));
    }
    char note[64];
    std::snprintf(note, sizeof note, "--holdout %g", o.holdout);
    validation_note = note;
  } else if (!o.validation.empty()) {
    // The validation file speaks the training file's ids: map them to the training indices.
    const IdSpace space(ratings.rows, ratings.cols, ratings.row_ids, ratings.col_ids,
                        o.read.one_based);
    SpaceRatings v = read_in_space(ctx.get(), o.validation, o.read, space);
    if (v.dropped > 0) {
      std::fprintf(stderr,
                   "sparsefac: note: %lld of %lld ratings of %s have users or items that are not "
                   "in %s; skipped\n",
                   static_cast<long long>(v.dropped), static_cast<long long>(v.dropped + v.kept),
                   o.validation.c_str(), o.input.c_str());
    }
    validation = std::move(v.matrix);
    validation_note = o.validation;
  }
  if (validation)
    SFAC_CLI_CHECK(sfac_train_options_set_validation(options.get(), validation.get()));

  int64_t train_nnz = 0, validation_nnz = 0, rank = 0, iterations = 0;
  SFAC_CLI_CHECK(sfac_sparse_get_shape(train_set.get(), nullptr, nullptr, &train_nnz));
  if (validation) {
    SFAC_CLI_CHECK(sfac_sparse_get_shape(validation.get(), nullptr, nullptr, &validation_nnz));
  }
  SFAC_CLI_CHECK(sfac_train_options_get_int(options.get(), SFAC_OPT_RANK, &rank));
  SFAC_CLI_CHECK(sfac_train_options_get_int(options.get(), SFAC_OPT_ITERATIONS, &iterations));
  std::printf("%s: %lld users x %lld items, %lld training ratings", o.input.c_str(),
              static_cast<long long>(ratings.rows), static_cast<long long>(ratings.cols),
              static_cast<long long>(train_nnz));
  if (validation) {
    std::printf(", %lld validation ratings (%s)", static_cast<long long>(validation_nnz),
                validation_note.c_str());
  }
  std::printf("\n%s, rank %lld, %lld epochs, %s\n", o.algorithm.c_str(),
              static_cast<long long>(rank), static_cast<long long>(iterations),
              backend_description(ctx.get()).c_str());
  std::fflush(stdout);
  if (iterations == 0) {
    std::fprintf(stderr,
                 "sparsefac: warning: --iters 0: %s will hold the untrained starting factors\n",
                 o.output.c_str());
  }

  Monitor monitor;
  monitor.total = static_cast<int>(iterations);
  monitor.has_validation = static_cast<bool>(validation);
  std::optional<ProgressBar> bar;
  if (use_bar) monitor.bar = &bar.emplace("epoch", monitor.total, stdout);
  SFAC_CLI_CHECK(sfac_train_options_set_callback(options.get(), on_epoch, &monitor));
  const auto train_start = std::chrono::steady_clock::now();
  sfac_model* raw = nullptr;
  SFAC_CLI_CHECK(sfac_train(ctx.get(), train_set.get(), options.get(), &raw));
  Model model(raw);
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();
  if (bar) bar->finish();

  std::printf("trained %d epochs in %.2f s", monitor.epochs, train_seconds);
  if (monitor.epochs > 0) std::printf(": loss %.4f", monitor.loss);
  if (monitor.has_validation && monitor.epochs > 0) {
    std::printf(", val_rmse %.4f (best %.4f at epoch %d)", monitor.validation_rmse,
                monitor.best_rmse, monitor.best_epoch);
  }
  std::printf("\n");

  SFAC_CLI_CHECK(sfac_model_save(model.get(), o.output.c_str()));
  std::printf("saved %s (%s, %lld users x %lld items, rank %lld)", o.output.c_str(),
              o.algorithm.c_str(), static_cast<long long>(ratings.rows),
              static_cast<long long>(ratings.cols), static_cast<long long>(rank));
  const std::string user_map = user_map_path(o.output), item_map = item_map_path(o.output);
  if (o.read.remap) {
    save_id_map(user_map, ratings.row_ids);
    save_id_map(item_map, ratings.col_ids);
    std::printf("\nsaved id maps %s, %s (original ids of the user and item indices)",
                user_map.c_str(), item_map.c_str());
  } else {
    // Maps of an earlier model at this path would now be wrong: predict/recommend would use them.
    std::error_code ignored;
    std::filesystem::remove(user_map, ignored);
    std::filesystem::remove(item_map, ignored);
  }
  std::printf("\n");
}

}  // namespace

void register_train(CLI::App& app) {
  auto o = std::make_shared<TrainCommand>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train an ALS, implicit ALS (ials) or SGD model on a rating file and save it");
  cmd->footer(
      "What to try first. Star ratings (explicit): als --biases, then --rank 50 --lambda 0.1 "
      "--iters 20, watching val_rmse with --holdout 0.1. Clicks, plays, purchases (implicit): "
      "ials --rank 64 --alpha 10 (up to 40), judged by eval's ranking metrics.");
  cmd->add_option("algorithm", o->algorithm, "als, ials or sgd")
      ->required()
      ->check(CLI::IsMember({"als", "ials", "sgd"}));
  cmd->add_option("input", o->input, "Rating file (users x items)")->required();
  cmd->add_option("-o,--output", o->output, "Model file to write (checked before training)")
      ->required();
  cmd->add_flag("--force", o->force, "Overwrite the model file if it exists");
  add_read_options(*cmd, o->read, true);
  cmd->add_option("--rank", o->rank, "Factor length k (default 32)")->check(CLI::Range(1, 65536));
  cmd->add_option("--iters", o->iterations, "Epochs (default 15 for als/ials, 20 for sgd)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--lambda", o->lambda, "Regularization (default 0.05, 0.01 for ials)")
      ->check(non_negative_number());
  cmd->add_option("--alpha", o->alpha, "ials: confidence c = 1 + alpha * r (default 40)")
      ->check(non_negative_number());
  cmd->add_option("--solver", o->solver, "als/ials: cholesky or cg (default cholesky)")
      ->check(CLI::IsMember({"cholesky", "cg"}));
  cmd->add_option("--cg-steps", o->cg_steps, "als/ials: CG steps per row (default 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--regularization", o->regularization,
                  "als/ials: plain or weighted lambda (default weighted for als, plain for ials)")
      ->check(CLI::IsMember({"plain", "weighted"}));
  cmd->add_option("--factor-dtype", o->factor_dtype,
                  "Factor storage while training: float32, float16 or bfloat16 (default "
                  "float32; 16-bit is faster on a GPU)")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
  cmd->add_option("--reorder", o->reorder,
                  "als/ials: number users and items while training by rating count (degree, "
                  "faster on a GPU), as given (none), or auto: degree on a GPU, none on the CPU "
                  "(default auto; the model keeps the input's ids)")
      ->check(CLI::IsMember({"auto", "none", "degree"}));
  cmd->add_flag("--biases", o->biases, "als/sgd: learn a global mean and user and item biases");
  cmd->add_option("--lr", o->learning_rate, "sgd: learning rate alpha (default 0.08)")
      ->check(positive_number());
  cmd->add_option("--decay", o->decay,
                  "sgd: beta of the schedule alpha / (1 + beta t^1.5) (default 0.3)")
      ->check(non_negative_number());
  cmd->add_flag("--no-scale", o->no_scale, "sgd: train on raw ratings, not ratings / stddev");
  cmd->add_option("--workers", o->workers,
                  "sgd: workers updating at once on a CUDA device (default 0 = as many as fit; "
                  "more are faster but lose more updates; the CPU runs one per thread)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--schedule", o->schedule,
                  "sgd: how CUDA workers share the items: hogwild, lock-free (default, "
                  "faster), or wavefront, locked item ranges that lose no update (the CPU "
                  "ignores it)")
      ->check(CLI::IsMember({"hogwild", "wavefront"}));
  cmd->add_flag("--deterministic", o->deterministic,
                "Bit-reproducible results for a fixed seed and thread count");
  CLI::Option* validation =
      cmd->add_option("--validation", o->validation,
                      "Held-out ratings (same ids as INPUT) reported as val_rmse each epoch");
  cmd->add_option("--holdout", o->holdout,
                  "Hold out this fraction of INPUT's ratings at random (seeded by --seed) and "
                  "report their val_rmse each epoch")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            char* end = nullptr;
            const double f = std::strtod(text.c_str(), &end);
            const bool ok = !text.empty() && *end == '\0' && f > 0.0 && f < 1.0;
            return ok ? "" : "must be a fraction in (0, 1), not " + text;
          },
          "FRACTION in (0, 1)"))
      ->excludes(validation);
  cmd->add_option("--progress", o->progress,
                  "bar (redrawn in place), plain (one line per epoch) or auto (bar on a terminal)")
      ->check(CLI::IsMember({"auto", "bar", "plain"}))
      ->capture_default_str();
  add_context_options(*cmd, o->context);
  cmd->callback([cmd, o] { run_train(*cmd, *o); });
}

}  // namespace sfac_cli
