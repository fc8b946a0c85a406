// The starting point of training, shared by every backend's trainers: seeded factors, the
// global mean and the biases. Everything here is a function of the seed and the data alone
// (drawn sequentially on the host, in original-id order), so one seed gives the same starting
// model on every backend, whatever the thread count and however a trainer relabels its rows.
#pragma once

#include <cstdint>
#include <vector>

#include "core/train_options.h"

namespace sfac {

// Users and items draw from independent streams of the same seed.
enum class FactorSide : uint64_t { users = 0, items = 1 };

// n x stride row-major starting factors: in each row, `rank` entries N(0, sigma^2) with
// sigma = init_scale / sqrt(rank) (dot products of two rows then have standard deviation about
// init_scale^2 / sqrt(rank)), and 1 in the columns past rank (stride > rank: the constant that
// the other side's learned bias multiplies). Row i belongs to original id i; the stream is
// seeded from (seed, side) and drawn row by row, so a row's values depend neither on how a
// backend lays the rows out nor on the stride.
// original_id (n entries, a permutation, or null for the identity) places the rows of a
// trainer that works on renumbered rows: its row r gets original id original_id[r]'s values.
std::vector<float> initial_factors(uint64_t seed, FactorSide side, int64_t n, int64_t rank,
                                   int64_t stride, double init_scale,
                                   const int32_t* original_id = nullptr);

// The caller's ids of a trainer's rows of one side where the core renumbered its ratings
// (options.renumbering), else null: the original_id argument above.
const int32_t* original_ids(const TrainOptions& options, FactorSide side);

// The mean of values[0, nnz), summed in double in index order; 0 when nnz = 0.
double mean_rating(const float* values, int64_t nnz);

// Implicit feedback (counts, durations) needs every rating >= 0: SFAC_ERR_INVALID_VALUE naming
// the first one that is not.
void require_implicit_ratings(const float* values, int64_t nnz);

// The biases' starting values: n zeros.
std::vector<float> initial_biases(int64_t n);

}  // namespace sfac
