// sparsefac convert: read any supported rating/matrix file, write Matrix Market.
#include <cstdio>

#include "commands.h"
#include "data_io.h"

namespace sfac_cli {

void register_convert(CLI::App& app) {
  struct Options {
    ContextOptions context;
    ReadOptions read;
    std::string input, output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Read a Matrix Market, LIBMF/u.data triplet, ratings.dat or ratings.csv file "
      "and write it as Matrix Market");
  cmd->add_option("input", o->input, "Input file")->required();
  cmd->add_option("output", o->output, "Output Matrix Market file")->required();
  add_read_options(*cmd, o->read, true);
  add_context_options(*cmd, o->context);
  cmd->callback([o] {
    Context ctx = make_context(o->context);
    const Ratings matrix = read_ratings(ctx.get(), o->input, o->read);
    SFAC_CLI_CHECK(sfac_write_matrix_market(matrix.matrix.get(), o->output.c_str()));
    std::printf("%s: %lld x %lld, %lld nonzeros -> %s\n", o->input.c_str(),
                static_cast<long long>(matrix.rows), static_cast<long long>(matrix.cols),
                static_cast<long long>(matrix.nnz), o->output.c_str());
  });
}

}  // namespace sfac_cli
