// sparsefac eval: rating error (RMSE, MAE) and ranking quality of a saved model on a rating file.
#include <cstdio>

#include "commands.h"
#include "data_io.h"

namespace sfac_cli {
namespace {

struct EvalCommand {
  ContextOptions context;
  ReadOptions read;
  std::string model, data, exclude;
  int ranking = 0;
};

// DATA (or the --exclude file) in the model's index space; a note on stderr for dropped ratings.
SpaceRatings read_for_model(sfac_context* ctx, const std::string& path, const EvalCommand& o,
                            const IdSpace& space) {
  SpaceRatings r = read_in_space(ctx, path, o.read, space);
  if (r.dropped > 0) {
    std::fprintf(stderr,
                 "sparsefac: note: %lld of %lld ratings of %s have users or items the model does "
                 "not know; skipped\n",
                 static_cast<long long>(r.dropped), static_cast<long long>(r.dropped + r.kept),
                 path.c_str());
  }
  return r;
}

void run_eval(const EvalCommand& o) {
  Context ctx = make_context(o.context);
  Model model = load_model(ctx.get(), o.model);
  const IdSpace space = IdSpace::of_model(o.model, model.get(), o.read.one_based);
  const SpaceRatings data = read_for_model(ctx.get(), o.data, o, space);
  if (data.kept == 0) {
    fail(SFAC_ERR_INVALID_ARGUMENT, "eval",
         o.data + " has no ratings of users and items that " + o.model + " knows");
  }
  sfac_algorithm algorithm = SFAC_ALGO_ALS;
  SFAC_CLI_CHECK(sfac_model_get_algorithm(model.get(), &algorithm));
  // An implicit model scores preferences, not ratings: its RMSE against the data's values says
  // nothing, so it is ranked (at 10 unless --ranking says otherwise) instead.
  const bool implicit = algorithm == SFAC_ALGO_IALS;
  const int ranking = o.ranking > 0 ? o.ranking : implicit ? 10 : 0;
  if (ranking == 0 && !o.exclude.empty()) {
    throw CLI::ValidationError("--exclude", "needs --ranking K for a rating (explicit) model");
  }
  std::printf("ratings %lld\n", static_cast<long long>(data.kept));
  if (!implicit) {
    double rmse = 0.0, mae = 0.0;
    SFAC_CLI_CHECK(sfac_model_evaluate(model.get(), data.matrix.get(), &rmse, &mae));
    std::printf("rmse %.6f\nmae %.6f\n", rmse, mae);
  }
  if (ranking > 0) {
    Sparse exclude;
    if (!o.exclude.empty()) exclude = read_for_model(ctx.get(), o.exclude, o, space).matrix;
    double precision = 0.0, recall = 0.0, ndcg = 0.0, map = 0.0;
    SFAC_CLI_CHECK(sfac_model_ranking_metrics(model.get(), exclude.get(), data.matrix.get(),
                                              ranking, &precision, &recall, &ndcg, &map));
    const int k = ranking;
    std::printf("precision@%d %.6f\nrecall@%d %.6f\nndcg@%d %.6f\nmap@%d %.6f\n", k, precision, k,
                recall, k, ndcg, k, map);
  }
}

}  // namespace

void register_eval(CLI::App& app) {
  auto o = std::make_shared<EvalCommand>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Evaluate a model on a rating file: RMSE and MAE, and with --ranking K precision, recall, "
      "NDCG and MAP at K (implicit models: the ranking metrics only, at 10 by default)");
  cmd->add_option("model", o->model, "Model file (from sparsefac train)")->required();
  cmd->add_option("data", o->data,
                  "Rating file with the ids the model was trained on (ratings of unknown users "
                  "or items are skipped)")
      ->required();
  add_read_options(*cmd, o->read, false);
  cmd->add_option("--ranking", o->ranking,
                  "Also rank the top K items of every user in DATA against DATA's items "
                  "(implicit models: rank at K instead of 10)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--exclude", o->exclude,
                  "When ranking: never rank these (user, item) pairs, e.g. the training file");
  add_context_options(*cmd, o->context);
  cmd->callback([o] { run_eval(*o); });
}

}  // namespace sfac_cli
