// Shared by the subcommands that read data: rating files with the format flags, and the id space
// of a model (the original ids saved next to it by `train --remap`, or plain indices).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli_common.h"

namespace sfac_cli {

// The --format/--one-based/--sum-duplicates (and, for train, --remap) flags of a command.
struct ReadOptions {
  std::string format = "auto";
  bool remap = false;
  bool one_based = false;
  bool sum_duplicates = false;
};

// Adds --format, --one-based and --sum-duplicates; with_remap also adds --remap.
void add_read_options(CLI::App& cmd, ReadOptions& options, bool with_remap);

// A rating file as read, with the original ids of every index when it was read with --remap.
struct Ratings {
  Sparse matrix;
  int64_t rows = 0, cols = 0, nnz = 0;
  std::vector<int64_t> row_ids, col_ids;  // empty without --remap
};
Ratings read_ratings(sfac_context* ctx, const std::string& path, const ReadOptions& options);

// The ids a model speaks. With id maps, an id is a file's original id and index i stands for
// ids[i]. Without, an id is the index itself (index + 1 with --one-based).
class IdSpace {
 public:
  IdSpace(int64_t users, int64_t items, std::vector<int64_t> user_ids,
          std::vector<int64_t> item_ids, bool one_based);

  // The space of a saved model: its id maps (MODEL.users.ids, MODEL.items.ids) when they exist.
  static IdSpace of_model(const std::string& model_path, const sfac_model* model, bool one_based);

  bool has_maps() const { return !users_.ids.empty() || !items_.ids.empty(); }
  int64_t users() const { return users_.size; }
  int64_t items() const { return items_.size; }
  // Index of an id; -1 when the model does not know it.
  int32_t user_index(int64_t id) const { return users_.index(id, one_based_); }
  int32_t item_index(int64_t id) const { return items_.index(id, one_based_); }
  int64_t user_id(int32_t index) const { return users_.id(index, one_based_); }
  int64_t item_id(int32_t index) const { return items_.id(index, one_based_); }

 private:
  struct Side {
    int64_t size = 0;
    std::vector<int64_t> ids;  // empty without maps
    std::unordered_map<int64_t, int32_t> lookup;
    void build();
    int32_t index(int64_t id, bool one_based) const;
    int64_t id(int32_t index, bool one_based) const;
  };
  Side users_, items_;
  bool one_based_ = false;
};

// Reads a rating file into the model's index space: with id maps through the original ids, else
// as indices. Entries whose user or item the model does not know are dropped and counted.
struct SpaceRatings {
  Sparse matrix;  // users() x items() of the space
  int64_t kept = 0, dropped = 0;
};
SpaceRatings read_in_space(sfac_context* ctx, const std::string& path, const ReadOptions& options,
                           const IdSpace& space);

// Loads a model file (sfac_model_load).
Model load_model(sfac_context* ctx, const std::string& path);

// Help text of an id argument.
constexpr const char* kIdHelp =
    "an original id when the model has id maps (train --remap), else a 0-based index (1-based "
    "with --one-based)";

// Paths of the id maps saved next to a model.
std::string user_map_path(const std::string& model_path);
std::string item_map_path(const std::string& model_path);
// Writes one id per line (line n = index n - 1). Failures are SFAC_ERR_IO, exit code 2.
void save_id_map(const std::string& path, const std::vector<int64_t>& ids);

// Parses a whole decimal id (optional minus sign, digits; blanks around it are allowed); false
// when the text is anything else.
bool parse_id(const char* begin, const char* end, int64_t* out);

}  // namespace sfac_cli
