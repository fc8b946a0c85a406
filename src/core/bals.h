// The BALS tiled layout (Chen et al., TPDS 2021) as an exchange format: conversion from a host
// CSR (optionally renumbered) and validated construction back into a canonical HostCsr. Pure
// host code shared by every backend; see sfac_sparse_download_bals / sfac_sparse_create_bals.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_csr.h"

namespace sfac {

// Tile sizes and the grid they give for a rows x cols matrix with nnz nonzeros.
struct BalsShape {
  int64_t tile_rows = 1, tile_cols = 1;
  int64_t row_tiles = 0, col_tiles = 0;
  int64_t tiles = 0;     // row_tiles * col_tiles
  int64_t segments = 0;  // tiles * tile_rows
};

// The largest segment count accepted: 4 * (rows + cols + nnz) + 2^20.
int64_t bals_segment_limit(int64_t rows, int64_t cols, int64_t nnz);

// Resolves the tile sizes (0 = default: min(1024, rows) x min(256, cols), at least 1, unless
// allow_default is false) and checks them: SFAC_ERR_INVALID_ARGUMENT for sizes < 1 (< 0 when
// defaults are allowed) and for grids past bals_segment_limit or int64.
BalsShape bals_shape(int64_t rows, int64_t cols, int64_t nnz, int64_t tile_rows, int64_t tile_cols,
                     bool allow_default);

// Number of tile_col entries: the distinct columns of each row block summed over row blocks.
// row_order (null = identity) gives the rows in reordered order; column order does not matter.
int64_t bals_tile_col_count(const HostCsr& csr, const BalsShape& shape, const int32_t* row_order);

// The layout's arrays (lengths as documented for sfac_sparse_download_bals).
struct BalsLayout {
  std::vector<int64_t> tile_ptr;
  std::vector<int32_t> tile_col;
  std::vector<int64_t> seg_ptr;
  std::vector<int32_t> seg_col;
  std::vector<float> values;
};

// The layout of `csr` renumbered by row_order / col_order (null = identity; already checked
// permutations: row r' is original row row_order[r'], likewise columns).
BalsLayout to_bals(const HostCsr& csr, const BalsShape& shape, const int32_t* row_order,
                   const int32_t* col_order, int num_threads);

// Checks BALS arrays (see sfac_sparse_create_bals for the rules; throws sfac::Error naming the
// array, tile or segment and position of the first violation) and returns the matrix in the
// original numbering.
HostCsr csr_from_bals(int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols,
                      const int64_t* tile_ptr, const int32_t* tile_col, const int64_t* seg_ptr,
                      const int32_t* seg_col, const float* values, const int32_t* row_order,
                      const int32_t* col_order, int num_threads);

}  // namespace sfac
