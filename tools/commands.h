// Each subcommand registers its options and callback on the top-level app.
#pragma once

#include <CLI/CLI.hpp>

#include "cli_common.h"

namespace sfac_cli {

void add_context_options(CLI::App& app, ContextOptions& options);

void register_info(CLI::App& app);
void register_demo(CLI::App& app);
void register_convert(CLI::App& app);
void register_train(CLI::App& app);
void register_eval(CLI::App& app);
void register_predict(CLI::App& app);
void register_recommend(CLI::App& app);
void register_similar(CLI::App& app);

}  // namespace sfac_cli
