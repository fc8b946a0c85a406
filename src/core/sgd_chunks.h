// The sample order of SGD on a GPU: each user's ratings cut into short chunks that one worker
// runs back to back, so that the user's factor row stays in its registers for the whole chunk
// and is read and written once per chunk instead of once per rating (cuMF_SGD's batch-Hogwild
// reads and writes it for every rating). Every user belongs to one worker (users dealt out so
// that the workers' rating counts are as equal as possible), and each worker walks its users'
// chunks in a random order: a user's chunks never run at the same time, so no update of a
// user's row is lost, while items are shared Hogwild-style. A user with far more ratings than
// a worker's fair share would keep one worker busy long after the rest (a power-law user side
// over many items has such users): they are cut into pieces dealt like users,
// and their chunks are marked so that the kernel adds its changes to their row atomically
// instead of overwriting it. A B x B grid of user and item
// ranges (B > 1) instead keeps every chunk inside one block and stores the chunks block by
// block, so that blocks sharing no range can run at the same time without conflicts (the
// deterministic schedule). Wavefront (cuMF_SGD section 5.2): the items are also cut into C
// ranges, every chunk stays inside one (worker, item range) cell, and each worker's cells are
// stored in a random order of the ranges of its own; a worker runs a cell while it holds that
// range's lock, so no two workers update one item at a time.
//
// The chunks are stored slab by slab: a slab is what one kernel launch runs, one part per worker.
// Grid: slab d is diagonal d of the grid, its parts the blocks (i, (i + d) mod B), which share no
// user and no item range. Workers: slab s holds the s-th of S near-equal pieces of every worker's
// chunks (S = 1 when the samples fit the device; more to stream them through it; wavefront
// pieces end at cell boundaries), so a user stays with one worker in every slab. Each slab's
// samples are one contiguous stretch.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace sfac {

struct SgdSample {
  int32_t item;
  float rating;
};

struct SgdChunks {
  std::vector<SgdSample> samples;    // chunk by chunk
  std::vector<int64_t> chunk_begin;  // chunks + 1 offsets into samples
  // The user of each chunk, or ~user (negative) for a user split between workers, whose row
  // several workers may update at once.
  std::vector<int32_t> chunk_user;
  // Per user, 1 / (pieces it is cut into); empty when no user is split.
  std::vector<float> split_weight;
  std::vector<int64_t> slab_begin;  // slabs + 1 offsets into the chunks
  // Per slab, parts + 1 offsets into the chunks (absolute): slab s's part w is chunks
  // [part_begin[s * (parts + 1) + w], part_begin[s * (parts + 1) + w + 1]).
  std::vector<int64_t> part_begin;
  int64_t parts = 1;  // per slab: workers, or the grid's size
  int grid = 1;
  // Wavefront only (empty otherwise): the cells, each a run of one worker's chunks within one
  // item range: cells + 1 offsets into the chunks, each cell's item range, and per slab parts + 1
  // offsets into the cells (slab s's part w is cells [part_cells[s * (parts + 1) + w], ...+ 1)).
  std::vector<int64_t> cell_begin;
  std::vector<int32_t> cell_range;
  std::vector<int64_t> part_cells;
  int64_t ranges = 0;  // item ranges of the wavefront (0: none)

  int64_t chunks() const { return static_cast<int64_t>(chunk_user.size()); }
  int64_t slabs() const { return static_cast<int64_t>(slab_begin.size()) - 1; }
  const int64_t* slab_parts(int64_t slab) const { return part_begin.data() + slab * (parts + 1); }
  // The slab's samples [first, end).
  int64_t slab_first_sample(int64_t slab) const { return chunk_begin[slab_begin[slab]]; }
  int64_t slab_end_sample(int64_t slab) const { return chunk_begin[slab_begin[slab + 1]]; }
};

// How arrange_sgd_chunks lays the chunks out.
struct SgdLayout {
  int64_t max_chunk = 32;  // ratings a chunk holds at most
  int grid = 1;            // > 1: the deterministic B x B grid (workers, ranges, slabs unused)
  int64_t workers = 1;     // users dealt to workers
  int64_t ranges = 0;      // > 0: wavefront with this many item ranges
  int64_t slabs = 1;       // pieces of each worker's share
  // Hogwild: users with more ratings than this (> 0) are cut into near-equal pieces of at most
  // this many, dealt to workers like users (their chunks marked shared: ~user). 0: never.
  int64_t split_above = 0;
};

// The chunks of a CSR matrix (users x items), values divided by `scale`. A user's ratings within
// one grid block (or wavefront cell) are shuffled and cut into ceil(n / max_chunk) chunks of
// near-equal length; the chunks of each block or cell are then shuffled. grid > 1: the parts are
// the grid's blocks, a slab per diagonal; otherwise `workers` workers' shares (users dealt
// largest first to the worker with the fewest ratings so far), each cut into `slabs` pieces of
// near-equal sample counts; with ranges > 0 a share is its cells in a random order of the
// ranges drawn per worker, empty cells left out. The shuffles draw from streams seeded by draws
// of `rng`, one stream per user, per part and per worker, so one seed gives one arrangement on
// any number of threads.
SgdChunks arrange_sgd_chunks(int64_t users, int64_t items, const int64_t* offsets,
                             const int32_t* indices, const float* values, float scale,
                             const SgdLayout& layout, std::mt19937_64& rng, int num_threads = 1);

// The divisor of the ratings in SGD's training units (cuMF_SGD's parameter scaling): their
// standard deviation, at least 1e-4, so one learning rate fits any rating range. Summed in
// index order in double, so every backend gets the same value.
float sgd_rating_scale(const float* values, int64_t nnz);

}  // namespace sfac
