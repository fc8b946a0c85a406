#include "data_io.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

namespace sfac_cli {
namespace {

sfac_file_format file_format(const std::string& name) {
  static const std::map<std::string, sfac_file_format> formats = {
      {"auto", SFAC_FORMAT_AUTO},
      {"mtx", SFAC_FORMAT_MATRIX_MARKET},
      {"triplets", SFAC_FORMAT_TRIPLETS},
      {"movielens-dat", SFAC_FORMAT_MOVIELENS_DAT},
      {"csv", SFAC_FORMAT_CSV}};
  return formats.at(name);  // CLI11 has checked the name
}

std::vector<int64_t> get_ids(sfac_idmap* map) {
  int64_t size = 0;
  SFAC_CLI_CHECK(sfac_idmap_get_size(map, &size));
  std::vector<int64_t> ids(static_cast<size_t>(size));
  SFAC_CLI_CHECK(sfac_idmap_get_ids(map, ids.data(), static_cast<int64_t>(ids.size())));
  return ids;
}

std::vector<int64_t> load_id_map(const std::string& path, int64_t expected, const char* side) {
  std::ifstream in(path);
  if (!in) fail(SFAC_ERR_IO, "load id map", "cannot open " + path + ": " + std::strerror(errno));
  std::vector<int64_t> ids;
  std::string line;
  while (std::getline(in, line)) {
    int64_t id = 0;
    if (!parse_id(line.data(), line.data() + line.size(), &id)) {
      fail(SFAC_ERR_PARSE, "load id map",
           path + ":" + std::to_string(ids.size() + 1) + ": expected one integer id, found '" +
               line + "'");
    }
    ids.push_back(id);
  }
  if (in.bad()) fail(SFAC_ERR_IO, "load id map", "cannot read " + path);
  if (static_cast<int64_t>(ids.size()) != expected) {
    fail(SFAC_ERR_PARSE, "load id map",
         path + " has " + std::to_string(ids.size()) + " ids but the model has " +
             std::to_string(expected) + " " + side);
  }
  return ids;
}

}  // namespace

void add_read_options(CLI::App& cmd, ReadOptions& options, bool with_remap) {
  cmd.add_option("--format", options.format, "File format")
      ->check(CLI::IsMember({"auto", "mtx", "triplets", "movielens-dat", "csv"}))
      ->capture_default_str();
  if (with_remap) {
    cmd.add_flag("--remap", options.remap, "Map ids to dense 0-based indices (ascending id order)");
  }
  cmd.add_flag("--one-based", options.one_based, "Ids in the file start at 1");
  cmd.add_flag("--sum-duplicates", options.sum_duplicates,
               "Sum repeated (row, col) entries instead of failing");
}

Ratings read_ratings(sfac_context* ctx, const std::string& path, const ReadOptions& options) {
  uint32_t flags = 0;
  if (options.remap) flags |= SFAC_READ_REMAP_IDS;
  if (options.one_based) flags |= SFAC_READ_ONE_BASED;
  if (options.sum_duplicates) flags |= SFAC_SPARSE_SUM_DUPLICATES;
  sfac_sparse* raw = nullptr;
  sfac_idmap *row_raw = nullptr, *col_raw = nullptr;
  const sfac_status status = sfac_read_sparse(ctx, path.c_str(), file_format(options.format),
                                              flags, &raw, &row_raw, &col_raw);
  if (status == SFAC_ERR_DUPLICATE_ENTRY) {
    // The library's hint names its flag; a user of the tool has an option for it.
    std::string message = sfac_last_error();
    const std::string flag_hint = "pass SFAC_SPARSE_SUM_DUPLICATES to sum duplicates";
    const size_t at = message.find(flag_hint);
    if (at != std::string::npos) {
      message.replace(at, flag_hint.size(), "pass --sum-duplicates to sum duplicates");
    }
    fail(status, "sfac_read_sparse", message);
  }
  ::sfac_cli::check(status, "sfac_read_sparse");
  Ratings r;
  r.matrix.reset(raw);
  IdMap row_map(row_raw), col_map(col_raw);
  SFAC_CLI_CHECK(sfac_sparse_get_shape(raw, &r.rows, &r.cols, &r.nnz));
  if (row_map) r.row_ids = get_ids(row_map.get());
  if (col_map) r.col_ids = get_ids(col_map.get());
  return r;
}

IdSpace::IdSpace(int64_t users, int64_t items, std::vector<int64_t> user_ids,
                 std::vector<int64_t> item_ids, bool one_based)
    : one_based_(one_based) {
  users_.size = users;
  users_.ids = std::move(user_ids);
  users_.build();
  items_.size = items;
  items_.ids = std::move(item_ids);
  items_.build();
}

void IdSpace::Side::build() {
  lookup.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) lookup.emplace(ids[i], static_cast<int32_t>(i));
}

int32_t IdSpace::Side::index(int64_t id, bool one_based) const {
  if (!ids.empty()) {
    const auto it = lookup.find(id);
    return it == lookup.end() ? -1 : it->second;
  }
  const int64_t i = one_based ? id - 1 : id;
  return i >= 0 && i < size ? static_cast<int32_t>(i) : -1;
}

int64_t IdSpace::Side::id(int32_t index, bool one_based) const {
  if (!ids.empty()) return ids[static_cast<size_t>(index)];
  return one_based ? int64_t{index} + 1 : index;
}

IdSpace IdSpace::of_model(const std::string& model_path, const sfac_model* model, bool one_based) {
  int64_t users = 0, items = 0;
  SFAC_CLI_CHECK(sfac_model_get_shape(model, &users, &items, nullptr));
  const std::string user_path = user_map_path(model_path), item_path = item_map_path(model_path);
  const bool have_users = std::filesystem::exists(user_path);
  const bool have_items = std::filesystem::exists(item_path);
  if (have_users != have_items) {
    fail(SFAC_ERR_IO, "load id map",
         "found " + (have_users ? user_path : item_path) + " but not " +
             (have_users ? item_path : user_path) + " (both are written by train --remap)");
  }
  if (!have_users) return IdSpace(users, items, {}, {}, one_based);
  return IdSpace(users, items, load_id_map(user_path, users, "users"),
                 load_id_map(item_path, items, "items"), one_based);
}

SpaceRatings read_in_space(sfac_context* ctx, const std::string& path, const ReadOptions& options,
                           const IdSpace& space) {
  // With maps the file's own ids are needed (remap keeps them as they are in the file); without,
  // the reader's indices already are the model's (--one-based applied).
  ReadOptions o = options;
  o.remap = space.has_maps();
  const Ratings r = read_ratings(ctx, path, o);
  std::vector<int32_t> row_to_user(static_cast<size_t>(r.rows));
  std::vector<int32_t> col_to_item(static_cast<size_t>(r.cols));
  for (int64_t i = 0; i < r.rows; ++i) {
    row_to_user[i] = space.has_maps()    ? space.user_index(r.row_ids[i])
                     : i < space.users() ? static_cast<int32_t>(i)
                                         : -1;
  }
  for (int64_t j = 0; j < r.cols; ++j) {
    col_to_item[j] = space.has_maps()    ? space.item_index(r.col_ids[j])
                     : j < space.items() ? static_cast<int32_t>(j)
                                         : -1;
  }
  std::vector<int32_t> rows(static_cast<size_t>(r.nnz)), cols(static_cast<size_t>(r.nnz));
  std::vector<float> values(static_cast<size_t>(r.nnz));
  SFAC_CLI_CHECK(sfac_sparse_download_coo(r.matrix.get(), rows.data(), cols.data(), values.data(),
                                          static_cast<int64_t>(values.size())));
  SpaceRatings out;
  for (int64_t e = 0; e < r.nnz; ++e) {
    const int32_t u = row_to_user[rows[e]], i = col_to_item[cols[e]];
    if (u < 0 || i < 0) continue;
    rows[out.kept] = u;
    cols[out.kept] = i;
    values[out.kept] = values[e];
    ++out.kept;
  }
  out.dropped = r.nnz - out.kept;
  sfac_sparse* raw = nullptr;
  SFAC_CLI_CHECK(sfac_sparse_create_coo(ctx, space.users(), space.items(), out.kept, rows.data(),
                                        cols.data(), values.data(), SFAC_SPARSE_DEFAULT, &raw));
  out.matrix.reset(raw);
  return out;
}

Model load_model(sfac_context* ctx, const std::string& path) {
  sfac_model* raw = nullptr;
  SFAC_CLI_CHECK(sfac_model_load(ctx, path.c_str(), &raw));
  return Model(raw);
}

std::string user_map_path(const std::string& model_path) { return model_path + ".users.ids"; }
std::string item_map_path(const std::string& model_path) { return model_path + ".items.ids"; }

void save_id_map(const std::string& path, const std::vector<int64_t>& ids) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    fail(SFAC_ERR_IO, "save id map",
         "cannot open " + path + " for writing: " + std::strerror(errno));
  }
  bool ok = true;
  for (const int64_t id : ids) ok = ok && std::fprintf(f, "%lld\n", static_cast<long long>(id)) > 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) fail(SFAC_ERR_IO, "save id map", "cannot write " + path);
}

bool parse_id(const char* begin, const char* end, int64_t* out) {
  while (end > begin && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) --end;
  while (begin < end && (*begin == ' ' || *begin == '\t')) ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, *out);
  return begin < end && ec == std::errc() && ptr == end;
}

}  // namespace sfac_cli
