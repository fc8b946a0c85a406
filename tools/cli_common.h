// Shared by the sparsefac subcommands: library calls that must succeed, handle types, backend
// names.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "sparsefac/sparsefac.h"

namespace sfac_cli {

// A failed library call, carrying the library's status and message to main().
struct CallError : std::runtime_error {
  sfac_status status;
  CallError(sfac_status s, const std::string& what) : std::runtime_error(what), status(s) {}
};

// Throws "function: status: message" (the function name of `call`, without its arguments).
inline void check(sfac_status status, const char* call) {
  if (status != SFAC_OK) {
    const std::string text(call);
    throw CallError(status, text.substr(0, text.find('(')) + ": " + sfac_status_string(status) +
                                ": " + sfac_last_error());
  }
}
#define SFAC_CLI_CHECK(call) ::sfac_cli::check((call), #call)

// A failure the tool itself detects in data (a file it parses, an id not in the model): reported
// like a library error, "what: status: message", exit code 2.
[[noreturn]] inline void fail(sfac_status status, const std::string& what,
                              const std::string& message) {
  throw CallError(status, what + ": " + sfac_status_string(status) + ": " + message);
}

struct ContextDeleter {
  void operator()(sfac_context* p) const { sfac_context_destroy(p); }
};
struct SparseDeleter {
  void operator()(sfac_sparse* p) const { sfac_sparse_destroy(p); }
};
struct DenseDeleter {
  void operator()(sfac_dense* p) const { sfac_dense_destroy(p); }
};
struct PlanDeleter {
  void operator()(sfac_sddmm_plan* p) const { sfac_sddmm_plan_destroy(p); }
};
struct IdMapDeleter {
  void operator()(sfac_idmap* p) const { sfac_idmap_destroy(p); }
};
struct ModelDeleter {
  void operator()(sfac_model* p) const { sfac_model_destroy(p); }
};
struct TrainOptionsDeleter {
  void operator()(sfac_train_options* p) const { sfac_train_options_destroy(p); }
};
using Context = std::unique_ptr<sfac_context, ContextDeleter>;
using Sparse = std::unique_ptr<sfac_sparse, SparseDeleter>;
using Dense = std::unique_ptr<sfac_dense, DenseDeleter>;
using Plan = std::unique_ptr<sfac_sddmm_plan, PlanDeleter>;
using IdMap = std::unique_ptr<sfac_idmap, IdMapDeleter>;
using Model = std::unique_ptr<sfac_model, ModelDeleter>;
using TrainOptions = std::unique_ptr<sfac_train_options, TrainOptionsDeleter>;

// Options every subcommand that computes shares.
struct ContextOptions {
  std::string backend = "auto";
  int device = 0;
  int threads = 0;
  uint64_t seed = 42;
};

// The context of a command; `announce` tells on stderr which backend it resolved to (commands
// that print the device on stdout themselves pass false).
Context make_context(const ContextOptions& options, bool announce = true);
// "cuda backend: NVIDIA H100 80GB HBM3", "cpu backend: CPU (2 threads)".
std::string backend_description(const sfac_context* ctx);
std::string backend_name(sfac_backend backend);

}  // namespace sfac_cli
