// Each subcommand registers its options and callback on the top-level app.
#pragma once

#include <CLI/CLI.hpp>

#include "cli_common.h"

namespace sfac_cli {

// Number checks for options. CLI11's NonNegativeNumber and PositiveNumber are ranges up to
// DBL_MAX and print it, 309 digits, in their messages: "--lambda -1" should answer in a line.
CLI::Validator non_negative_number();
CLI::Validator positive_number();

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
