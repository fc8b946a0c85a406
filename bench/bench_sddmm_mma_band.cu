// Experiment, not library code: SDDMM for 16-bit factors with a column band of B staged in
// shared memory and the dot products on tensor cores (docs/perf-notes.md, rejected variants). It
// lost to the library's gather kernels on uniform 100k and Netflix at K = 32 and 128, and stays
// here so that the measurement can be repeated and the design picked up again.
//
// Tiles of R rows x a band of columns (one thread block each; the band's B rows, contiguous in
// B, staged once with cp.async). A warp takes a unit: up to kMaxReal nonzeros of 8 consecutive
// rows inside the tile. The unit's 8 A rows are the B operand of mma.m16n8k16 (n = row, kept in
// registers for the unit) and 16 nonzeros' B rows, gathered from shared memory by ldmatrix.x4
// (each lane gives one row address), the A operand (m = nonzero). D[m][row(m)] is nonzero m's
// product: lane 4 (m % 8) + row / 2 holds it. The plan deals each unit's nonzeros into octets
// whose columns differ mod 8, so with the row swizzle an ldmatrix phase hits 8 bank quads.
// Results go to a per-warp shared buffer in the unit's CSR order and leave coalesced.
//
//   bench_sddmm_mma_band [--cases uni100k,netflix] [--k 32,128] [--reps 10] [--rows 1024]
//                        [--band-kb 64] [--gf128 1|2] [--warps 8|16] [--full 0|1]
//                        [--stage-a 0|1]
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_cuda_common.cuh"
#include "bench_flags.h"
#include "cuda/kernels/common/cp_async.cuh"
#include "sparsefac/sparsefac.h"

using namespace bench;
using sfac::cuda::kernels::detail::cp_async16;
using sfac::cuda::kernels::detail::cp_async_commit;
using sfac::cuda::kernels::detail::cp_async_wait;

struct Tile {
  int32_t row0, col0, ncols, unit_begin, unit_end;
};
struct Unit {
  int64_t packed_begin;
  int32_t n;  // padded to a multiple of 16
  int32_t row0;
};

constexpr int kMaxReal = 512;  // real nonzeros per unit; out slot kMaxReal is the trash

// Physical 16-byte chunk of chunk q of staged row c (CH chunks per row).
template <int CH>
__host__ __device__ __forceinline__ int swz(int c, int q) {
  if constexpr (CH == 4) {
    return q ^ ((c >> 1) & 3);
  } else {
    return (q & ~7) | ((q ^ c) & 7);
  }
}

// Not volatile and no memory clobber, so that the compiler may schedule the band's gathers
// freely: only for shared memory that no thread writes after the block's barrier.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], unsigned addr) {
  asm("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

// For shared memory the warp has just written: ordered after those stores.
__device__ __forceinline__ void ldsm_x4_ordered(uint32_t (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Packed word per nonzero: column in the band (11 bits), row in the unit (3 bits), slot in the
// unit's CSR order (10 bits; kMaxReal = padding, written to a spare slot). GF groups of 16
// nonzeros in flight per step; WARPS warps a block; FULL: units padded to whole steps, so no
// step checks how many groups it has.
template <int K, int GF, int WARPS, bool FULL>
__global__ void __launch_bounds__(WARPS * 32, WARPS == 8 ? 2 : 1)
    mma_band(const Tile* tiles, const Unit* units, const int64_t* seg_start, const int4* seg_off,
             const uint32_t* packed, const uint16_t* a, const uint16_t* b, int64_t m, int band_cols,
             bool stage_a, float* p) {
  constexpr int CH = K / 8;  // 16-byte chunks per row
  constexpr int kStep = 16 * GF;
  extern __shared__ uint4 smem[];
  const Tile t = tiles[blockIdx.x];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < t.ncols * CH; i += blockDim.x) {
    const int c = i / CH, q = i % CH;
    cp_async16(&smem[c * CH + swz<CH>(c, q)], b + (int64_t(t.col0) + c) * K + q * 8, true);
  }
  cp_async_commit();
  // Held in a register (the compiler would otherwise recompute it at every use).
  unsigned band_base;
  asm volatile("mov.u32 %0, %1;"
               : "=r"(band_base)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))));
  float* out = reinterpret_cast<float*>(smem + band_cols * CH) + warp * (kMaxReal + 1);
  // Each warp's 8 staged A rows, after the output buffers (each a multiple of 16 bytes).
  uint4* abuf = smem + band_cols * CH + WARPS * (kMaxReal + 1) / 4 + warp * 8 * CH;
  const unsigned abuf_base = static_cast<unsigned>(__cvta_generic_to_shared(abuf));
  const int g = lane >> 2, tq = lane & 3;
  cp_async_wait<0>();
  __syncthreads();
  for (int u = t.unit_begin + warp; u < t.unit_end; u += WARPS) {
    const Unit un = units[u];
    uint32_t bo[K / 16][2];
    if (stage_a) {
      // The unit's 8 A rows (contiguous in A) through the warp's shared buffer: coalesced
      // 16-byte loads, then ldmatrix hands out the B operand's fragments.
      __syncwarp();
      for (int i = lane; i < 8 * CH; i += 32) {
        const int r = i / CH, q = i % CH;
        const int64_t row = un.row0 + r;
        abuf[r * CH + swz<CH>(r, q)] = row < m
                                           ? __ldg(reinterpret_cast<const uint4*>(a + row * K) + q)
                                           : make_uint4(0, 0, 0, 0);
      }
      __syncwarp();
#pragma unroll
      for (int j = 0; j < CH / 4; ++j) {
        const int r = lane & 7, q = 4 * j + (lane >> 3);
        uint32_t f[4];
        ldsm_x4_ordered(f, abuf_base + (r * CH + swz<CH>(r, q)) * 16);
        bo[2 * j][0] = f[0];
        bo[2 * j][1] = f[1];
        bo[2 * j + 1][0] = f[2];
        bo[2 * j + 1][1] = f[3];
      }
    } else {
      const int64_t row = un.row0 + g;
      const uint32_t* ar = reinterpret_cast<const uint32_t*>(a + row * K);
#pragma unroll
      for (int s = 0; s < K / 16; ++s) {
        bo[s][0] = row < m ? __ldg(ar + 8 * s + tq) : 0u;
        bo[s][1] = row < m ? __ldg(ar + 8 * s + 4 + tq) : 0u;
      }
    }
    // Row r's results go to out[off[r] + index]; lane r keeps start[r] - off[r].
    const int4 o_lo = seg_off[int64_t(u) * 2], o_hi = seg_off[int64_t(u) * 2 + 1];
    const int64_t delta = lane < 8 ? seg_start[int64_t(u) * 8 + lane] : 0;
    const uint32_t* pk = packed + un.packed_begin;
    uint32_t mine = lane < min(un.n, kStep) ? __ldg(pk + lane) : 0u;
    for (int base = 0; base < un.n; base += kStep) {
      const uint32_t now = mine;
      if (base + kStep < un.n) {
        mine = lane < min(un.n - base - kStep, kStep) ? __ldg(pk + base + kStep + lane) : 0u;
      }
      const int groups = FULL ? GF : min(GF, (un.n - base) / 16);
      uint32_t af[GF][K / 16][4];
#pragma unroll
      for (int grp = 0; grp < GF; ++grp) {
        const uint32_t pc = __shfl_sync(0xffffffffu, now, grp * 16 + (lane & 15));
        const int c = pc & 2047;
        if (FULL || grp < groups) {
#pragma unroll
          for (int s = 0; s < K / 16; ++s) {
            const int q = 2 * s + (lane >> 4);
            ldsm_x4(af[grp][s], band_base + (c * CH + swz<CH>(c, q)) * 16);
          }
        }
      }
#pragma unroll
      for (int grp = 0; grp < GF; ++grp) {
        if (FULL || grp < groups) {
          float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
          for (int s = 0; s < K / 16; ++s) mma16816(d, af[grp][s], bo[s][0], bo[s][1]);
          const uint32_t e0 = __shfl_sync(0xffffffffu, now, grp * 16 + g);
          const uint32_t e1 = __shfl_sync(0xffffffffu, now, grp * 16 + g + 8);
          const uint32_t r0 = (e0 >> 11) & 7, r1 = (e1 >> 11) & 7;
          if ((r0 >> 1) == uint32_t(tq)) out[e0 >> 14] = (r0 & 1) ? d[1] : d[0];
          if ((r1 >> 1) == uint32_t(tq)) out[e1 >> 14] = (r1 & 1) ? d[3] : d[2];
        }
      }
    }
    __syncwarp();
    // Slot s belongs to the row r with off[r] <= s < off[r + 1]: P[start[r] - off[r] + s].
    for (int s0 = 0; s0 < o_hi.w; s0 += 32) {
      const int s = s0 + lane;
      const int r = (s >= o_lo.x) + (s >= o_lo.y) + (s >= o_lo.z) + (s >= o_lo.w) + (s >= o_hi.x) +
                    (s >= o_hi.y) + (s >= o_hi.z);
      const int64_t base = __shfl_sync(0xffffffffu, delta, r);
      if (s < o_hi.w) p[base + s] = out[s];
    }
    __syncwarp();
  }
}

struct Launch {
  int grid, threads;
  size_t smem;
  cudaStream_t stream;
};
struct Args {
  const Tile* tiles;
  const Unit* units;
  const int64_t* seg_start;
  const int4* seg_off;
  const uint32_t* packed;
  const uint16_t *a, *b;
  int64_t m;
  int band_cols;
  bool stage_a;
  float* p;
};

template <int K, int GF, int WARPS, bool FULL>
void launch_one(const Launch& l, const Args& x) {
  static bool attribute_set = false;
  if (!attribute_set) {
    CHECK_CUDA(cudaFuncSetAttribute(mma_band<K, GF, WARPS, FULL>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    attribute_set = true;
  }
  mma_band<K, GF, WARPS, FULL>
      <<<l.grid, l.threads, l.smem, l.stream>>>(x.tiles, x.units, x.seg_start, x.seg_off, x.packed,
                                                x.a, x.b, x.m, x.band_cols, x.stage_a, x.p);
  CHECK_CUDA(cudaGetLastError());
}

template <int K, int GF>
void dispatch(int warps, bool full, const Launch& l, const Args& x) {
  if (warps == 16) {
    full ? launch_one<K, GF, 16, true>(l, x) : launch_one<K, GF, 16, false>(l, x);
  } else {
    full ? launch_one<K, GF, 8, true>(l, x) : launch_one<K, GF, 8, false>(l, x);
  }
}

struct Plan {
  std::vector<Tile> tiles;
  std::vector<Unit> units;
  std::vector<int64_t> seg_start;  // 8 per unit: CSR position of the row's first entry - its slot
  std::vector<int32_t> seg_off;    // 8 per unit: slot of rows 1..7's first entry, then the count
  std::vector<uint32_t> packed;
};

// One row block's tiles (all bands), units and packed words.
void build_row_block(const HostCsr& csr, int64_t rows, int64_t cols, int rows_per_tile, int band,
                     int pad, int64_t bands, int64_t rb, Plan& pl) {
  const int64_t r_begin = rb * rows_per_tile, r_end = std::min(rows, r_begin + rows_per_tile);
  std::vector<int64_t> cursor(csr.offsets.begin() + r_begin, csr.offsets.begin() + r_end);
  struct Entry {
    int row, col, slot;
  };
  std::vector<Entry> entries;
  for (int64_t bd = 0; bd < bands; ++bd) {
    const int32_t c0 = static_cast<int32_t>(bd * band);
    const int32_t c1 = static_cast<int32_t>(std::min<int64_t>(cols, c0 + band));
    Tile tile{static_cast<int32_t>(r_begin), c0, c1 - c0, static_cast<int32_t>(pl.units.size()), 0};
    for (int64_t u0 = r_begin; u0 < r_end; u0 += 8) {
      int64_t seg_b[8], seg_e[8];
      for (int r = 0; r < 8; ++r) {
        const int64_t row = u0 + r;
        if (row >= r_end) {
          seg_b[r] = seg_e[r] = 0;
          continue;
        }
        int64_t e = cursor[row - r_begin];
        seg_b[r] = e;
        while (e < csr.offsets[row + 1] && csr.cols[e] < c1) ++e;
        seg_e[r] = e;
        cursor[row - r_begin] = e;
      }
      // Units of at most kMaxReal entries; a row segment may continue in the next unit.
      int64_t next[8];
      for (int r = 0; r < 8; ++r) next[r] = seg_b[r];
      while (true) {
        entries.clear();
        int64_t starts[8] = {};
        int32_t offs[9] = {};
        for (int r = 0; r < 8; ++r) {
          offs[r] = static_cast<int32_t>(entries.size());
          starts[r] = next[r] - offs[r];
          const int64_t take =
              std::min<int64_t>(seg_e[r] - next[r], kMaxReal - int64_t(entries.size()));
          for (int64_t i = 0; i < take; ++i) {
            entries.push_back({r, csr.cols[next[r] + i] - c0, static_cast<int>(offs[r] + i)});
          }
          next[r] += take;
        }
        if (entries.empty()) break;
        const int n = static_cast<int>(entries.size());
        offs[8] = n;
        // Octets (8 consecutive slots) with distinct columns mod 8: deal the entries, sorted
        // by residue, round-robin over the octets.
        std::stable_sort(entries.begin(), entries.end(),
                         [](const Entry& x, const Entry& y) { return (x.col & 7) < (y.col & 7); });
        const int groups = (n + pad - 1) / pad * (pad / 16), octets = 2 * groups;
        std::vector<uint32_t> slots(static_cast<size_t>(groups) * 16, 0);
        std::vector<uint8_t> used(slots.size(), 0);
        for (int i = 0; i < n; ++i) {
          const int o = i % octets, k = i / octets;
          const Entry& x = entries[i];
          slots[o * 8 + k] = uint32_t(x.col) | (uint32_t(x.row) << 11) | (uint32_t(x.slot) << 14);
          used[o * 8 + k] = 1;
        }
        for (int o = 0; o < octets; ++o) {
          int have = 0;
          for (int k = 0; k < 8; ++k) {
            if (used[o * 8 + k]) have |= 1 << (slots[o * 8 + k] & 7);
          }
          for (int k = 0; k < 8; ++k) {
            if (used[o * 8 + k]) continue;
            int res = 0;
            while (res < 8 && (have & (1 << res))) ++res;
            res &= 7;
            have |= 1 << res;
            slots[o * 8 + k] = uint32_t(std::min(res, tile.ncols - 1)) | (uint32_t(kMaxReal) << 14);
          }
        }
        pl.units.push_back(
            {static_cast<int64_t>(pl.packed.size()), groups * 16, static_cast<int32_t>(u0)});
        pl.packed.insert(pl.packed.end(), slots.begin(), slots.end());
        for (int r = 0; r < 8; ++r) pl.seg_start.push_back(starts[r]);
        for (int r = 1; r <= 8; ++r) pl.seg_off.push_back(offs[r]);
      }
    }
    tile.unit_end = static_cast<int32_t>(pl.units.size());
    if (tile.unit_end > tile.unit_begin) pl.tiles.push_back(tile);
  }
}

// Tiles of `rows_per_tile` rows x `band` columns, row-block-major; units of 8 rows.
Plan build_plan(const HostCsr& csr, int64_t rows, int64_t cols, int rows_per_tile, int band,
                int pad) {
  const int64_t blocks = (rows + rows_per_tile - 1) / rows_per_tile;
  const int64_t bands = (cols + band - 1) / band;
  std::vector<Plan> parts(blocks);
  std::atomic<int64_t> next_block{0};
  auto work = [&] {
    for (int64_t rb; (rb = next_block++) < blocks;)
      build_row_block(csr, rows, cols, rows_per_tile, band, pad, bands, rb, parts[rb]);
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i)
    pool.emplace_back(work);
  for (std::thread& th : pool) th.join();
  Plan all;
  for (Plan& pl : parts) {
    const int32_t ub = static_cast<int32_t>(all.units.size());
    const int64_t pb = static_cast<int64_t>(all.packed.size());
    for (Tile t : pl.tiles) {
      t.unit_begin += ub;
      t.unit_end += ub;
      all.tiles.push_back(t);
    }
    for (Unit u : pl.units) {
      u.packed_begin += pb;
      all.units.push_back(u);
    }
    all.seg_start.insert(all.seg_start.end(), pl.seg_start.begin(), pl.seg_start.end());
    all.seg_off.insert(all.seg_off.end(), pl.seg_off.begin(), pl.seg_off.end());
    all.packed.insert(all.packed.end(), pl.packed.begin(), pl.packed.end());
    pl = Plan();
  }
  return all;
}

int main(int argc, char** argv) {
  Flags flags(argc, argv,
              "[--cases uni100k,netflix,ml20m] [--k 32,128] [--reps 10] [--rows 1024] "
              "[--band-kb 64] [--gf128 1|2] [--warps 8|16] [--full 0|1] [--stage-a 0|1]");
  const std::vector<const Case*> suite =
      cases_named(flags.text("--cases", "uni100k,netflix,ml20m"));
  const std::vector<int64_t> ks = flags.ranks("32,128");
  const int reps = flags.reps(10);
  const int rows_per_tile = static_cast<int>(flags.integer("--rows", 1024, 1, 1 << 20));
  const int band_kb = static_cast<int>(flags.integer("--band-kb", 64, 1, 227));
  const int gf128 = static_cast<int>(flags.integer("--gf128", 1, 1, 2));
  const int warps = flags.choice("--warps", "8", {"8", "16"}) == "16" ? 16 : 8;
  const bool full = flags.integer("--full", 0, 0, 1) != 0;
  const bool stage_a = flags.integer("--stage-a", 0, 0, 1) != 0;
  flags.done();
  for (const int64_t k : ks) {
    if (k != 32 && k != 64 && k != 128) {
      std::fprintf(stderr, "%s: K %lld not built (32, 64 or 128)\n", argv[0],
                   static_cast<long long>(k));
      return 2;
    }
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  sfac_context* ctx = nullptr;
  CHECK_SFAC(sfac_context_create(SFAC_BACKEND_CUDA, 0, 0, 1, &ctx));
  CHECK_SFAC(sfac_context_set_stream(ctx, stream));
  cusparseHandle_t handle;
  CHECK_SPARSE(cusparseCreate(&handle));
  CHECK_SPARSE(cusparseSetStream(handle, stream));
  std::printf("%-8s %4s %6s %6s %9s %9s %9s %9s %7s %7s %9s %8s %7s %5s %4s\n", "case", "K", "band",
              "rows", "mma_ms", "auto16ms", "cusp_ms", "x_cusp", "x_auto", "pad%", "plan_s",
              "units", "maxerr", "warps", "full");
  for (const Case* cs : suite) {
    const HostCsr pat = make_pattern(*cs, 42);
    const int64_t nnz = static_cast<int64_t>(pat.cols.size());
    sfac_sparse *s = nullptr, *pp = nullptr;
    CHECK_SFAC(sfac_sparse_create_csr(ctx, cs->rows, cs->cols, pat.offsets.data(), pat.cols.data(),
                                      nullptr, nnz, 0, &s));
    CHECK_SFAC(sfac_sparse_create_like(s, nullptr, &pp));
    const CusparsePattern theirs_pattern(pat);
    float* d_p = nullptr;
    CHECK_CUDA(cudaMalloc(&d_p, nnz * 4));
    for (const int64_t k64 : ks) {
      const int k = static_cast<int>(k64);
      std::vector<float> a, b;
      random_factors(cs->rows, cs->cols, k, a, b);
      std::vector<uint16_t> a16(a.size()), b16(b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        const __nv_bfloat16 h = __float2bfloat16_rn(a[i]);
        a16[i] = *reinterpret_cast<const uint16_t*>(&h);
        a[i] = __bfloat162float(h);
      }
      for (size_t i = 0; i < b.size(); ++i) {
        const __nv_bfloat16 h = __float2bfloat16_rn(b[i]);
        b16[i] = *reinterpret_cast<const uint16_t*>(&h);
        b[i] = __bfloat162float(h);
      }
      const int band = std::min<int>(2048, band_kb * 1024 / (2 * k));
      const auto t0 = std::chrono::steady_clock::now();
      const int gf = k == 128 ? gf128 : 2;
      const Plan plan =
          build_plan(pat, cs->rows, cs->cols, rows_per_tile, band, full ? 16 * gf : 16);
      const double plan_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      Tile* d_tiles = upload(plan.tiles);
      Unit* d_units = upload(plan.units);
      int64_t* d_ss = upload(plan.seg_start);
      int4* d_so = reinterpret_cast<int4*>(upload(plan.seg_off));
      uint32_t* d_pk = upload(plan.packed);
      uint16_t* d_a = upload(a16);
      uint16_t* d_b = upload(b16);
      const size_t smem = size_t(band) * k * 2 + size_t(warps) * (kMaxReal + 1) * 4 +
                          (stage_a ? size_t(warps) * 8 * k * 2 : 0);
      auto launch = [&] {
        const int grid = static_cast<int>(plan.tiles.size());
        const Launch l{grid, warps * 32, smem, stream};
        const Args args{d_tiles, d_units, d_ss, d_so, d_pk, d_a, d_b, cs->rows, band, stage_a, d_p};
        if (k == 32) {
          dispatch<32, 2>(warps, full, l, args);
        } else if (k == 64) {
          dispatch<64, 2>(warps, full, l, args);
        } else if (k == 128 && gf == 2) {
          dispatch<128, 2>(warps, full, l, args);
        } else {  // K = 128: main() accepted no other K
          dispatch<128, 1>(warps, full, l, args);
        }
      };
      CHECK_CUDA(cudaMemsetAsync(d_p, 0xff, nnz * 4, stream));  // NaN poison
      launch();
      CHECK_CUDA(cudaStreamSynchronize(stream));
      std::vector<float> got(nnz);
      CHECK_CUDA(cudaMemcpy(got.data(), d_p, nnz * 4, cudaMemcpyDeviceToHost));
      // Check every nonzero of a sample of rows in fp64 (exact bf16 products).
      double maxerr = 0.0;
      int64_t bad = 0;
      for (int64_t row = 0; row < cs->rows; row += std::max<int64_t>(1, cs->rows / 2000)) {
        for (int64_t e = pat.offsets[row]; e < pat.offsets[row + 1]; ++e) {
          double ref = 0.0, mag = 0.0;
          const int64_t col = pat.cols[e];
          for (int x = 0; x < k; ++x) {
            ref += double(a[row * k + x]) * b[col * k + x];
            mag += std::abs(double(a[row * k + x]) * b[col * k + x]);
          }
          const double err = std::abs(got[e] - ref) / (mag + 1e-30);
          if (!(err <= 1e-5)) ++bad;
          if (!(err <= maxerr)) maxerr = std::isnan(err) ? 1e30 : std::max(maxerr, err);
        }
      }
      const int inner = 5;
      const double ours = median_ms(reps, stream,
                                    [&] {
                                      for (int i = 0; i < inner; ++i) launch();
                                    }) /
                          inner;
      // The library's AUTO on the same bfloat16 factors.
      sfac_dense *ha = nullptr, *hb = nullptr;
      CHECK_SFAC(sfac_dense_create(ctx, cs->rows, k, SFAC_DTYPE_BFLOAT16, a.data(), &ha));
      CHECK_SFAC(sfac_dense_create(ctx, cs->cols, k, SFAC_DTYPE_BFLOAT16, b.data(), &hb));
      sfac_sddmm_plan* lp = nullptr;
      CHECK_SFAC(sfac_sddmm_plan_create(ctx, s, k, SFAC_SDDMM_ALG_AUTO, &lp));
      const double lib = median_ms(reps, stream,
                                   [&] {
                                     for (int i = 0; i < inner; ++i) {
                                       CHECK_SFAC(sfac_sddmm(ctx, SFAC_SDDMM_PATTERN, 1.0f, ha, hb,
                                                             s, 0.0f, pp, lp));
                                     }
                                   }) /
                         inner;
      sfac_sddmm_plan_destroy(lp);
      sfac_dense_destroy(ha);
      sfac_dense_destroy(hb);
      // cuSPARSE float32 on the (bf16-rounded) factors.
      float *f_a = upload(a), *f_b = upload(b);
      double cusp = 0.0;
      {
        CusparseSddmm cusparse(handle, cs->rows, cs->cols, k, theirs_pattern, f_a, f_b);
        cusp = median_ms(reps, stream,
                         [&] {
                           for (int i = 0; i < inner; ++i) cusparse.run();
                         }) /
               inner;
      }
      CHECK_CUDA(cudaFree(f_a));
      CHECK_CUDA(cudaFree(f_b));
      const double pad = 100.0 * (double(plan.packed.size()) - nnz) / nnz;
      std::printf(
          "%-8s %4d %6d %6d %9.3f %9.3f %9.3f %9.2f %7.2f %7.1f %9.2f %8zu %7.1e %5d %4d%s\n",
          cs->name, k, band, rows_per_tile, ours, lib, cusp, cusp / ours, lib / ours, pad, plan_s,
          plan.units.size(), maxerr, warps, int(full), bad ? "  WRONG" : "");
      std::fflush(stdout);
      for (void* x : {(void*)d_tiles, (void*)d_units, (void*)d_ss, (void*)d_so, (void*)d_pk,
                      (void*)d_a, (void*)d_b}) {
        CHECK_CUDA(cudaFree(x));
      }
    }
    CHECK_CUDA(cudaFree(d_p));
    sfac_sparse_destroy(pp);
    sfac_sparse_destroy(s);
  }
  cusparseDestroy(handle);
  sfac_context_destroy(ctx);
  return 0;
}
