// Cell SDDMM for patterns a few percent dense and wide factor rows: the matrix is cut into
// cells of 256 rows x 256 columns, and a thread block stages A's and B's rows of its cell in
// shared memory 128 bytes of K at a time, so that each staged row serves the ~256·d nonzeros it
// meets in the cell instead of being gathered from L2 once per nonzero (the gather kernels'
// bound at large K). A small pattern has too few cells to fill the GPU, so K is also split over
// the blocks of a thread block cluster, which add their partial sums through distributed shared
// memory in a fixed order. The plan lays each cell out in advance (rows by length, local
// columns, CSR positions), so a block starts computing after a handful of loads.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"
#include "cuda/kernels/sddmm/sddmm_kernels.cuh"

namespace sfac::cuda::kernels {

constexpr int64_t kCellSide = 256;

struct CellTiling {
  int64_t bands = 0;                    // column bands of kCellSide
  int64_t cells = 0;                    // row blocks x bands, row block major
  int sms = 0;                          // multiprocessors, to size the K split
  bool clusters = false;                // thread block clusters (sm_90+): K may be split
  const int64_t* cell_first = nullptr;  // cells + 1: each cell's first slot in cell order
  const uint2* row_desc = nullptr;      // cells x 256: rows by length (row | length << 16, first)
  const int64_t* positions = nullptr;   // nnz: CSR position of each slot in cell order
  const uint8_t* local_cols = nullptr;  // nnz: column - band start of each slot in cell order
};

struct CellTables {
  DeviceBuffer<int64_t> cell_first, positions;
  DeviceBuffer<uint2> row_desc;
  DeviceBuffer<uint8_t> local_cols;
};

// Fills `tables` and points `tiling` at them (device: for its multiprocessor count, clusters and
// shared memory). Returns false, building nothing, on devices with too little shared memory per
// block for the kernel.
bool build_cell_tables(const int64_t* row_offsets, const int32_t* cols, int64_t rows,
                       int64_t cols_total, int64_t nnz, int device, CellTiling& tiling,
                       CellTables& tables, cudaStream_t stream);

// Returns false (launching nothing) when the cells times their parts exceed a launch's grid.
bool launch_sddmm_cells(const SddmmArgs& args, const CellTiling& tiling, int64_t cols,
                        cudaStream_t stream);

}  // namespace sfac::cuda::kernels
