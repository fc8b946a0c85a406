// sparsefac predict: scores of (user, item) pairs read from a file.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>

#include "commands.h"
#include "data_io.h"

namespace sfac_cli {
namespace {

struct PredictCommand {
  ContextOptions context;
  std::string model, pairs, unknown = "skip";
  bool one_based = false;
};

bool is_separator(char c) { return c == ' ' || c == '\t' || c == ',' || c == '\r'; }

// The first two fields of a line ("user item", blank-, tab- or comma-separated; more fields
// are ignored, so a rating file is a valid pairs file). False when there are fewer.
bool split_pair(const std::string& line, std::string* first, std::string* second) {
  size_t pos = 0;
  std::string* fields[2] = {first, second};
  for (std::string* field : fields) {
    while (pos < line.size() && is_separator(line[pos])) ++pos;
    const size_t begin = pos;
    while (pos < line.size() && !is_separator(line[pos])) ++pos;
    if (pos == begin) return false;
    field->assign(line, begin, pos - begin);
  }
  return true;
}

// The model's scores; a pair with an unknown side (index -1) is scored as if that side had
// zero factors and zero bias, as the trainers leave a user or item without ratings: the
// global mean plus the known side's bias for a model with biases, 0 otherwise.
std::vector<float> score_pairs(const sfac_model* model, const IdSpace& space,
                               const std::vector<int32_t>& users,
                               const std::vector<int32_t>& items) {
  std::vector<int32_t> known_users, known_items;
  for (size_t i = 0; i < users.size(); ++i) {
    if (users[i] >= 0 && items[i] >= 0) {
      known_users.push_back(users[i]);
      known_items.push_back(items[i]);
    }
  }
  std::vector<float> known(known_users.size());
  SFAC_CLI_CHECK(sfac_model_predict(model, static_cast<int64_t>(known.size()),
                                    known_users.data(), known_items.data(), known.data()));
  if (known.size() == users.size()) return known;
  int has_biases = 0;
  float mean = 0.0f;
  std::vector<float> user_bias(static_cast<size_t>(space.users())),
      item_bias(static_cast<size_t>(space.items()));
  SFAC_CLI_CHECK(sfac_model_get_biases(model, &has_biases, &mean, user_bias.data(),
                                       static_cast<int64_t>(user_bias.size()), item_bias.data(),
                                       static_cast<int64_t>(item_bias.size())));
  std::vector<float> scores(users.size());
  for (size_t i = 0, k = 0; i < users.size(); ++i) {
    if (users[i] >= 0 && items[i] >= 0) {
      scores[i] = known[k++];
    } else if (has_biases) {
      scores[i] = mean + (users[i] >= 0 ? user_bias[users[i]] : 0.0f) +
                  (items[i] >= 0 ? item_bias[items[i]] : 0.0f);
    }
  }
  return scores;
}

void run_predict(const PredictCommand& o) {
  Context ctx = make_context(o.context);
  Model model = load_model(ctx.get(), o.model);
  const IdSpace space = IdSpace::of_model(o.model, model.get(), o.one_based);
  const std::string what = "predict";

  std::ifstream file;
  if (o.pairs != "-") {
    file.open(o.pairs);
    if (!file) fail(SFAC_ERR_IO, what, "cannot open " + o.pairs + ": " + std::strerror(errno));
  }
  std::istream& in = o.pairs == "-" ? std::cin : file;
  const std::string name = o.pairs == "-" ? "<stdin>" : o.pairs;
  std::vector<int64_t> user_ids, item_ids;
  std::vector<int32_t> users, items;  // -1 where the model does not know the id (fallback)
  int64_t skipped = 0;
  std::string line, first, second;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const size_t text = line.find_first_not_of(" \t\r");
    if (text == std::string::npos || line[text] == '#') continue;
    const std::string where = name + ":" + std::to_string(number) + ": ";
    int64_t user_id = 0, item_id = 0;
    if (!split_pair(line, &first, &second) ||
        !parse_id(first.data(), first.data() + first.size(), &user_id) ||
        !parse_id(second.data(), second.data() + second.size(), &item_id)) {
      fail(SFAC_ERR_PARSE, what, where + "expected 'user item', found '" + line + "'");
    }
    const int32_t user = space.user_index(user_id), item = space.item_index(item_id);
    if ((user < 0 || item < 0) && o.unknown == "skip") {
      ++skipped;
      continue;
    }
    if (user < 0 && o.unknown == "error") {
      fail(SFAC_ERR_OUT_OF_RANGE, what,
           where + "user " + first + " is not in the model (" + std::to_string(space.users()) +
               " users" + (space.has_maps() ? ", ids from " + user_map_path(o.model) : "") + ")");
    }
    if (item < 0 && o.unknown == "error") {
      fail(SFAC_ERR_OUT_OF_RANGE, what,
           where + "item " + second + " is not in the model (" + std::to_string(space.items()) +
               " items" + (space.has_maps() ? ", ids from " + item_map_path(o.model) : "") + ")");
    }
    user_ids.push_back(user_id);
    item_ids.push_back(item_id);
    users.push_back(user);
    items.push_back(item);
  }
  if (in.bad()) fail(SFAC_ERR_IO, what, "cannot read " + name);
  if (skipped > 0) {
    std::fprintf(stderr,
                 "sparsefac: note: %lld of %lld pairs of %s have users or items the model does "
                 "not know; skipped (--unknown fallback scores them, --unknown error stops)\n",
                 static_cast<long long>(skipped),
                 static_cast<long long>(skipped + static_cast<int64_t>(users.size())),
                 name.c_str());
  }
  const std::vector<float> scores = score_pairs(model.get(), space, users, items);
  for (size_t i = 0; i < scores.size(); ++i) {
    std::printf("%lld %lld %.6g\n", static_cast<long long>(user_ids[i]),
                static_cast<long long>(item_ids[i]), scores[i]);
  }
}

}  // namespace

void register_predict(CLI::App& app) {
  auto o = std::make_shared<PredictCommand>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Predict the scores of (user, item) pairs; prints 'user item score' lines");
  cmd->add_option("model", o->model, "Model file (from sparsefac train)")->required();
  cmd->add_option("pairs", o->pairs,
                  "File of 'user item' lines (blank, tab or comma separated; further fields and "
                  "'#' lines are ignored), - for stdin")
      ->required();
  cmd->add_flag("--one-based", o->one_based,
                "Without id maps: ids are 1-based indices (as trained with --one-based)");
  cmd->add_option("--unknown", o->unknown,
                  "Pairs with a user or item the model does not know: skip (noted on stderr, as "
                  "eval does), fallback (scored with that side's factors and bias zero: the "
                  "global mean plus the known bias, or 0 without biases) or error")
      ->check(CLI::IsMember({"skip", "fallback", "error"}))
      ->capture_default_str();
  add_context_options(*cmd, o->context);
  cmd->callback([o] { run_predict(*o); });
}

}  // namespace sfac_cli
