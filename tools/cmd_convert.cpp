// sparsefac convert: read any supported rating/matrix file, write Matrix Market.
#include <cstdio>
#include <map>

#include "commands.h"

namespace sfac_cli {

void register_convert(CLI::App& app) {
  struct Options {
    ContextOptions context;
    std::string input, output, format = "auto";
    bool remap = false, one_based = false, sum_duplicates = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Read a Matrix Market, LIBMF/u.data triplet, ratings.dat or ratings.csv file "
      "and write it as Matrix Market");
  cmd->add_option("input", o->input, "Input file")->required()->check(CLI::ExistingFile);
  cmd->add_option("output", o->output, "Output Matrix Market file")->required();
  cmd->add_option("--format", o->format, "Input format")
      ->check(CLI::IsMember({"auto", "mtx", "triplets", "movielens-dat", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--remap", o->remap, "Map ids to dense 0-based indices (ascending id order)");
  cmd->add_flag("--one-based", o->one_based, "Ids in the file start at 1");
  cmd->add_flag("--sum-duplicates", o->sum_duplicates, "Sum repeated (row, col) entries");
  add_context_options(*cmd, o->context);
  cmd->callback([o] {
    static const std::map<std::string, sfac_file_format> formats = {
        {"auto", SFAC_FORMAT_AUTO},
        {"mtx", SFAC_FORMAT_MATRIX_MARKET},
        {"triplets", SFAC_FORMAT_TRIPLETS},
        {"movielens-dat", SFAC_FORMAT_MOVIELENS_DAT},
        {"csv", SFAC_FORMAT_CSV}};
    uint32_t flags = 0;
    if (o->remap) flags |= SFAC_READ_REMAP_IDS;
    if (o->one_based) flags |= SFAC_READ_ONE_BASED;
    if (o->sum_duplicates) flags |= SFAC_SPARSE_SUM_DUPLICATES;
    Context ctx = make_context(o->context);
    sfac_sparse* raw = nullptr;
    SFAC_CLI_CHECK(sfac_read_sparse(ctx.get(), o->input.c_str(), formats.at(o->format), flags, &raw,
                                    nullptr, nullptr));
    Sparse matrix(raw);
    int64_t rows = 0, cols = 0, nnz = 0;
    SFAC_CLI_CHECK(sfac_sparse_get_shape(matrix.get(), &rows, &cols, &nnz));
    SFAC_CLI_CHECK(sfac_write_matrix_market(matrix.get(), o->output.c_str()));
    std::printf("%s: %lld x %lld, %lld nonzeros -> %s\n", o->input.c_str(),
                static_cast<long long>(rows), static_cast<long long>(cols),
                static_cast<long long>(nnz), o->output.c_str());
  });
}

}  // namespace sfac_cli
