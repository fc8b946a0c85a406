// The tiled layout of a system's matrix where the tensor-core Cholesky takes it
// (als_cholesky_on_tensor_cores): the lower triangle of A as 16 x 16 tiles, tile (I, J), I >= J,
// at (I (I + 1) / 2 + J) * 256 floats, rows of 16 floats whose four 16-byte chunks are permuted
// per row. The normal-equation kernels write it and the Cholesky copies it to shared memory
// unchanged, 16 bytes at a time. Entries past d are zero; the upper part of a diagonal tile is
// not read.
//
// The permutation: bit 1 of the row flips chunk bit 1, bit 2 of the row chunk bit 0. The mma
// fragment loads (rows g = 0..7, columns t or pairs 2t) then fall on distinct banks (rows g and
// g + 2 eight words apart, g, g + 2, g + 4, g + 6 on four distinct chunks), and so do row-wise
// 16-byte loads and the column reads of a backward substitution.
#pragma once

#include <cstdint>

namespace sfac::cuda::kernels {

constexpr int kAlsTile = 16;
constexpr int kAlsTileFloats = kAlsTile * kAlsTile;

// Block rows of a system of d unknowns, and the tiles of a lower triangle of `tiles` of them.
__host__ __device__ constexpr int64_t als_tile_rows(int64_t d) {
  return (d + kAlsTile - 1) / kAlsTile;
}
__host__ __device__ constexpr int64_t als_tile_count(int64_t tiles) {
  return tiles * (tiles + 1) / 2;
}

#ifdef __CUDACC__
__device__ __forceinline__ int als_tile_chunk_key(int r) {
  return ((r >> 1) & 1) << 1 | ((r >> 2) & 1);
}

// Offset of entry (r, c) within a tile.
__device__ __forceinline__ int als_tile_offset(int r, int c) {
  return r * kAlsTile + (((c >> 2) ^ als_tile_chunk_key(r)) << 2) + (c & 3);
}

// Offset of tile (I, J), I >= J.
__device__ __forceinline__ int als_tile_start(int bi, int bj) {
  return (bi * (bi + 1) / 2 + bj) * kAlsTileFloats;
}
#endif

}  // namespace sfac::cuda::kernels
