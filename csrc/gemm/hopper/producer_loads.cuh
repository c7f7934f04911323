// The producer's loads of one work unit (gemm_kernel.cuh): where its boxes start, through which
// tensor maps, how many bytes a stage expects, and the issue of one stage. Used by the producer
// loop and by the pre-issue of the first unit's stages ahead of the role branch.
#pragma once
#include <cuda.h>
#include <cstdint>
#include "../../kittens/common/k_parts.h"
#include "../../kittens/common/raster.h"
#include "../../kittens/common/swiglu.h"
#include "../../kittens/hopper/mbarrier.cuh"
#include "epilogue.cuh"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

struct UnitLoads {
  const CUtensorMap* map_x;  // X's map: the tail map for the last row tile (gemm_layout kXTail), else tm_a
  const CUtensorMap* map_y;
  const CUtensorMap* map_y2;  // SwiGLU kernels (gemm_layout kSwiGLU): the up weight's map (map_y: the gate's);
                             // K-parts kernels (kKParts): Y's second part (map_y: the first)
  const CUtensorMap* map_y3;  // K-parts kernels: Y's third part
  const CUtensorMap* map_x2;  // K-parts kernels: X's second and third parts (map_x: the first)
  const CUtensorMap* map_x3;
  int k_part_end[2];          // K-parts kernels: the k tiles where the first / second parts end
  int m0, n0;                // first row of X / column of Y of this CTA's tile
  int x_row;                 // X's first row in map_x: m0, or (M-parts kernels) the tile's row within its part
  uint32_t stage_tx;         // bytes a stage's full barrier expects (zero-filled ones past K included)
  bool x_none;               // a cluster's CTA past the last row tile: no X load
  bool y_none;               // gemm_layout kYSliceTail: this CTA's slice of Y lies wholly past N: no Y load
};

template <class L, typename OutT>
__device__ __forceinline__ UnitLoads unit_loads(const WorkUnit& w, int rank, int M, int N, const Epilogue<OutT>& ep,
                                                const CUtensorMap* tm_a, const CUtensorMap* tm_b,
                                                const CUtensorMap* tm_a_tail, const CUtensorMap* tm_b_tail,
                                                const CUtensorMap* tm_out_tail, const CUtensorMap* tm_x3) {
  UnitLoads u;
  u.m0 = (w.tile.m * L::CLUSTER + rank) * L::BM, u.n0 = w.tile.n * L::BN;
  // X rows past M: a cluster's CTA beyond the last row tile loads none of them (its rows are never
  // stored); the last row / column tile through the tail maps (gemm_layout).
  u.x_none = u.m0 >= M;
  const bool x_tail = L::kXTail && ep.x_tail_rows > 0 && u.m0 + L::BM > M && !u.x_none;
  const bool y_tail = L::kYTail && ep.y_tail_rows > 0 && u.n0 + L::BN > N;
  u.map_x = x_tail ? tm_a_tail : tm_a;
  u.map_y = y_tail ? tm_b_tail : tm_b;
  u.map_y2 = tm_b_tail;  // (read by the SwiGLU and K-parts kernels only, which have no Y tail map)
  if constexpr (L::kSwiGLU) u.map_y = tm_b;
  if constexpr (L::kKParts) {  // (no X tail map: gemm_layout)
    u.map_y3 = tm_out_tail, u.map_x2 = tm_a_tail, u.map_x3 = tm_x3;
    u.k_part_end[0] = ep.sk_tiles, u.k_part_end[1] = ep.sk_parts;
  }
  u.x_row = u.m0;
  if constexpr (L::kMParts) {  // the part holding the tile's rows (whole row tiles: gemm_layout), in its own map
    const KPart mp = k_part(w.tile.m, ep.sk_tiles, ep.sk_parts);
    u.map_x = mp.part == 0 ? tm_a : mp.part == 1 ? tm_a_tail : tm_x3;
    u.x_row = mp.tile * L::BM;
  }
  // Bytes of one K-major row of a k tile (128 B) times the rows loaded.
  constexpr uint32_t kXRow = L::a_tile::kBytes / L::BM, kYRow = L::b_tile::kBytes / L::BN;
  const uint32_t x_bytes = u.x_none ? 0u : x_tail ? uint32_t(ep.x_tail_rows) * kXRow : uint32_t(L::a_tile::kBytes);
  uint32_t y_bytes = y_tail ? uint32_t(ep.y_tail_rows) * kYRow : uint32_t(L::b_tile::kBytes);
  u.y_none = false;
  if constexpr (L::kYSliceTail) {
    // Slices of R rows, one per CTA of the cluster, each multicast to all: every CTA expects all
    // slices' bytes. With tail boxes (y_tail_rows = N % R, or R when that is 0; launch_impl.cuh) a
    // slice ending past N comes as an exact box of y_tail_rows rows and one wholly past N not at
    // all (its rows only reach columns past N, never stored); without, every slice whole, zero-filled.
    constexpr int R = L::Y_SLICE_ROWS;
    const bool boxes = ep.y_tail_rows > 0;
    y_bytes = 0;
#pragma unroll
    for (int part = 0; part < L::CLUSTER; ++part) {
      const int v = N - (u.n0 + part * R);
      y_bytes += !boxes || v >= R ? uint32_t(R) * kYRow : v > 0 ? uint32_t(v) * kYRow : 0u;
    }
    const int v = N - (u.n0 + rank * R);
    u.y_none = boxes && v <= 0;
    u.map_y = boxes && v > 0 && v < R ? tm_b_tail : tm_b;
  }
  u.stage_tx = uint32_t(L::KT) * (x_bytes + y_bytes);
  return u;
}

// Stage s <- k tiles kt .. kt + KT - 1 of the unit (its empty slot already won). In a cluster, Y
// goes out as this CTA's multicast slice (tm_b; the tail map only for kYSliceTail, unit_loads).
template <class L>
__device__ __forceinline__ void issue_stage(uint8_t* smem, uint64_t* full, int s, int kt, const UnitLoads& u,
                                            const CUtensorMap* tm_b, int rank, bool hint_x, bool hint_y,
                                            uint64_t evict_first) {
  mbar_arrive_expect_tx(&full[s], u.stage_tx);
#pragma unroll
  for (int j = 0; j < L::KT; ++j) {  // tiles past K (KT > 1 only) arrive zero-filled
    uint8_t* sub = smem + s * L::STAGE_BYTES + j * L::SUB_BYTES;
    const int k0 = (kt + j) * L::BK;
    // K-parts kernels: the part holding k tile kt + j, X and Y loaded at its k offset within that part
    // (whole tiles: only the last part may end inside a tile, its columns / rows past K zero-filled).
    int part = 0, kx = k0;
    if constexpr (L::kKParts) {
      const KPart kp = k_part(kt + j, u.k_part_end[0], u.k_part_end[1]);
      part = kp.part, kx = kp.tile * L::BK;
    }
    if (!u.x_none)
      L::a_tile::load(sub, !L::kKParts || part == 0 ? u.map_x : part == 1 ? u.map_x2 : u.map_x3, &full[s], u.x_row, kx,
                      hint_x, evict_first);
    if constexpr (L::kSwiGLU) {
      // The tile's Y rows 0..127 are gate rows n0 / 2 .., rows 128..255 the up rows of the same
      // features (kittens/common/swiglu.h), each half a 128-row box through its own map.
      using half = st_operand<L::BN / 2, false>;
      half::load(sub + L::a_tile::kBytes, u.map_y, &full[s], u.n0 / 2, k0, hint_y, evict_first);
      half::load(sub + L::a_tile::kBytes + half::kBytes, u.map_y2, &full[s], u.n0 / 2, k0, hint_y, evict_first);
    } else if constexpr (L::kKParts) {
      L::b_tile::load(sub + L::a_tile::kBytes, part == 0 ? u.map_y : part == 1 ? u.map_y2 : u.map_y3, &full[s], u.n0,
                      kx, hint_y, evict_first);
    } else if constexpr (L::CLUSTER > 1) {
      if (!u.y_none)
        L::b_tile::load_slice(sub + L::a_tile::kBytes, L::kYSliceTail ? u.map_y : tm_b, &full[s], u.n0, k0, rank,
                              uint16_t((1u << L::CLUSTER) - 1), hint_y, evict_first);
    } else
      L::b_tile::load(sub + L::a_tile::kBytes, u.map_y, &full[s], u.n0, k0, hint_y, evict_first);
  }
}

// SwiGLU backward (gemm_layout kSwiGLUGrad): after the unit's k tiles, GRAD_STAGES more stages of
// the gate and up values its epilogue reads (epilogue_swiglu_grad.cuh): stage r, for the tile's
// features n0 + 64 r .. + 63, holds per consumer warpgroup c a 64 x 64 box of gate (rows m0 + 64 c ..)
// at 2 c GRAD_BOX_BYTES and the up box after it, from the packed gu (tm_gu: {2 N, M}, 64 x 64 boxes)
// at the columns kittens::swiglu_packed_col gives (boxes past M or N arrive zero-filled; their
// outputs are clipped). Read once: L2 evict-first. `it`: the producer's ring count. Called after
// the next unit is drawn (gemm_kernel.cuh): the consumers take the next unit's id before they
// release this unit's last k stage, whose slot the last of these stages needs.
template <class L>
__device__ __forceinline__ void issue_grad_stages(uint8_t* smem, uint64_t* full, uint64_t* empty, uint32_t& it, int m0,
                                                  int n0, const CUtensorMap* tm_gu, bool lead, uint64_t evict_first) {
#pragma unroll 1
  for (int r = 0; r < L::GRAD_STAGES; ++r, ++it) {
    const uint32_t s = it % L::STAGES;
    mbar_wait(&empty[s], ((it / L::STAGES) & 1) ^ 1);
    if (!lead) continue;
    mbar_arrive_expect_tx(&full[s], uint32_t(2 * L::CONSUMERS * L::GRAD_BOX_BYTES));
    const int gate_col = swiglu_packed_col(n0 + r * L::STORE_COLS, false);
#pragma unroll
    for (int c = 0; c < L::CONSUMERS; ++c) {
      uint8_t* box = smem + s * L::STAGE_BYTES + c * 2 * L::GRAD_BOX_BYTES;
      tma_load_2d_hint(box, tm_gu, &full[s], gate_col, m0 + 64 * c, evict_first);
      tma_load_2d_hint(box + L::GRAD_BOX_BYTES, tm_gu, &full[s], gate_col + kSwiGLUBlock, m0 + 64 * c, evict_first);
    }
  }
}
}  // namespace tk::hopper
