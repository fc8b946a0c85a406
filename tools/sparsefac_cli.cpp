// sparsefac: command-line front end of libsparsefac.
#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "commands.h"

namespace sfac_cli {

Context make_context(const ContextOptions& options, bool announce) {
  const sfac_backend backend = options.backend == "cpu"    ? SFAC_BACKEND_CPU
                               : options.backend == "cuda" ? SFAC_BACKEND_CUDA
                                                           : SFAC_BACKEND_AUTO;
  sfac_context* ctx = nullptr;
  SFAC_CLI_CHECK(sfac_context_create(backend, options.device, options.threads, options.seed, &ctx));
  Context out(ctx);
  // On stderr: stdout carries the command's data.
  if (announce) std::fprintf(stderr, "sparsefac: %s\n", backend_description(ctx).c_str());
  return out;
}

std::string backend_description(const sfac_context* ctx) {
  sfac_backend resolved = SFAC_BACKEND_CPU;
  const char* device = nullptr;
  SFAC_CLI_CHECK(sfac_context_get_backend(ctx, &resolved));
  SFAC_CLI_CHECK(sfac_context_get_device_name(ctx, &device));
  return backend_name(resolved) + " backend: " + device;
}

std::string backend_name(sfac_backend backend) {
  switch (backend) {
    case SFAC_BACKEND_CPU:
      return "cpu";
    case SFAC_BACKEND_CUDA:
      return "cuda";
    case SFAC_BACKEND_AUTO:
      return "auto";
  }
  return "unknown";
}

namespace {

CLI::Validator number_check(const char* name, bool (*accept)(double), const char* requirement) {
  return CLI::Validator(
      [accept, requirement](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        return accept(value) ? std::string() : text + " must be " + requirement;
      },
      name);
}

}  // namespace

CLI::Validator non_negative_number() {
  return number_check("NONNEGATIVE", [](double v) { return v >= 0.0; }, ">= 0");
}

CLI::Validator positive_number() {
  return number_check("POSITIVE", [](double v) { return v > 0.0; }, "> 0");
}

void add_context_options(CLI::App& app, ContextOptions& options) {
  app.add_option("--backend", options.backend, "Backend: auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--device", options.device, "CUDA device ordinal")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads (0 = all cores)")
      ->check(non_negative_number())
      ->capture_default_str();
  app.add_option("--seed", options.seed, "Random seed")->capture_default_str();
}

}  // namespace sfac_cli

int main(int argc, char** argv) {
  CLI::App app{"sparsefac — sparse matrix factorization (SDDMM, SGD, ALS) on CPU and CUDA"};
  app.set_version_flag("--version", std::string("sparsefac ") + sfac_version_string());
  app.require_subcommand(1);
  sfac_cli::register_info(app);
  sfac_cli::register_demo(app);
  sfac_cli::register_convert(app);
  sfac_cli::register_train(app);
  sfac_cli::register_eval(app);
  sfac_cli::register_predict(app);
  sfac_cli::register_recommend(app);
  sfac_cli::register_similar(app);
  // An unknown command would otherwise read "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands(nullptr)) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->check_name(argv[1]);
    }
    if (!known) {
      std::fprintf(stderr,
                   "sparsefac: unknown command '%s' (commands: %s)\n"
                   "Run with --help for more information.\n",
                   argv[1], names.c_str());
      return 1;
    }
  }
  // Exit codes: 0 success (and --help, --version), 1 usage error, 2 the library (or a data file
  // the tool reads itself) reported an error.
  try {
    app.parse(argc, argv);  // runs the chosen subcommand's callback
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  } catch (const sfac_cli::CallError& e) {
    std::fprintf(stderr, "sparsefac: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsefac: %s\n", e.what());
    return 1;
  }
  return 0;
}
