// sparsefac recommend / similar: top-n items for users, and the items most like given items.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "commands.h"
#include "data_io.h"

namespace sfac_cli {
namespace {

struct RecommendCommand {
  ContextOptions context;
  ReadOptions read;
  std::string model, exclude;
  std::vector<int64_t> users;
  int n = 10;
};

struct SimilarCommand {
  ContextOptions context;
  std::string model;
  std::vector<int64_t> items;
  int n = 10;
  bool one_based = false;
};

// Indices of ids; an id the model does not know is an error naming it.
std::vector<int32_t> indices_of(const std::vector<int64_t>& ids, const IdSpace& space, bool users,
                                const std::string& model_path) {
  std::vector<int32_t> indices;
  for (const int64_t id : ids) {
    const int32_t index = users ? space.user_index(id) : space.item_index(id);
    if (index < 0) {
      const char* side = users ? "user" : "item";
      const int64_t size = users ? space.users() : space.items();
      const std::string map = users ? user_map_path(model_path) : item_map_path(model_path);
      fail(SFAC_ERR_OUT_OF_RANGE, users ? "recommend" : "similar",
           std::string(side) + " " + std::to_string(id) + " is not in " + model_path + " (" +
               std::to_string(size) + " " + side + "s" +
               (space.has_maps() ? ", ids from " + map : "") + ")");
    }
    indices.push_back(index);
  }
  return indices;
}

void run_recommend(const RecommendCommand& o) {
  Context ctx = make_context(o.context);
  Model model = load_model(ctx.get(), o.model);
  const IdSpace space = IdSpace::of_model(o.model, model.get(), o.read.one_based);
  const std::vector<int32_t> users = indices_of(o.users, space, true, o.model);
  Sparse exclude;
  if (!o.exclude.empty()) {
    SpaceRatings seen = read_in_space(ctx.get(), o.exclude, o.read, space);
    exclude = std::move(seen.matrix);
  }
  const int n = static_cast<int>(std::min<int64_t>(o.n, std::max<int64_t>(space.items(), 1)));
  std::vector<int32_t> items(users.size() * n);
  std::vector<float> scores(items.size());
  SFAC_CLI_CHECK(sfac_model_recommend(model.get(), static_cast<int64_t>(users.size()), users.data(),
                                      n, exclude.get(), 0, nullptr, items.data(), scores.data(),
                                      static_cast<int64_t>(items.size())));
  for (size_t u = 0; u < users.size(); ++u) {
    for (size_t r = u * n; r < (u + 1) * n && items[r] >= 0; ++r) {
      std::printf("%lld %lld %.6g\n", static_cast<long long>(o.users[u]),
                  static_cast<long long>(space.item_id(items[r])), scores[r]);
    }
  }
}

void run_similar(const SimilarCommand& o) {
  Context ctx = make_context(o.context);
  Model model = load_model(ctx.get(), o.model);
  const IdSpace space = IdSpace::of_model(o.model, model.get(), o.one_based);
  const std::vector<int32_t> query = indices_of(o.items, space, false, o.model);
  const int n = static_cast<int>(std::min<int64_t>(o.n, std::max<int64_t>(space.items(), 1)));
  std::vector<int32_t> items(query.size() * n);
  std::vector<float> scores(items.size());
  SFAC_CLI_CHECK(sfac_model_similar_items(model.get(), static_cast<int64_t>(query.size()),
                                          query.data(), n, items.data(), scores.data(),
                                          static_cast<int64_t>(items.size())));
  for (size_t q = 0; q < query.size(); ++q) {
    for (size_t r = q * n; r < (q + 1) * n && items[r] >= 0; ++r) {
      std::printf("%lld %lld %.6g\n", static_cast<long long>(o.items[q]),
                  static_cast<long long>(space.item_id(items[r])), scores[r]);
    }
  }
}

}  // namespace

void register_recommend(CLI::App& app) {
  auto o = std::make_shared<RecommendCommand>();
  CLI::App* cmd = app.add_subcommand(
      "recommend",
      "Top-n items for users, best first; prints 'user item score' lines (n per user)");
  cmd->add_option("model", o->model, "Model file (from sparsefac train)")->required();
  cmd->add_option("-u,--user", o->users, std::string("User (repeatable): ") + kIdHelp)
      ->required()
      ->expected(1)
      ->allow_extra_args(false)  // one id per --user/--item, so a positional may follow
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("-n,--count", o->n, "Items per user")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--exclude", o->exclude,
                  "Rating file whose (user, item) pairs are never recommended, e.g. the training "
                  "file (read with --format/--one-based/--sum-duplicates)");
  add_read_options(*cmd, o->read, false);
  add_context_options(*cmd, o->context);
  cmd->callback([o] { run_recommend(*o); });
}

void register_similar(CLI::App& app) {
  auto o = std::make_shared<SimilarCommand>();
  CLI::App* cmd = app.add_subcommand(
      "similar",
      "The items most similar to given items (cosine of the factors), best first; prints "
      "'item similar_item score' lines (n per item)");
  cmd->add_option("model", o->model, "Model file (from sparsefac train)")->required();
  cmd->add_option("-i,--item", o->items, std::string("Item (repeatable): ") + kIdHelp)
      ->required()
      ->expected(1)
      ->allow_extra_args(false)  // one id per --user/--item, so a positional may follow
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("-n,--count", o->n, "Similar items per item")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_flag("--one-based", o->one_based,
                "Without id maps: ids are 1-based indices (as trained with --one-based)");
  add_context_options(*cmd, o->context);
  cmd->callback([o] { run_similar(*o); });
}

}  // namespace sfac_cli
