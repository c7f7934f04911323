// Hopper GEMM epilogue, split-K units: a strip's raw fp32 partial sums stored by TMA through the
// staging buffers, and the fused split-K finish; used by gemm_kernel.cuh beside epilogue.cuh.
#pragma once
#include "epilogue.cuh"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// Split-K partials (store modes kStorePartialTma / kStorePartialTmaT): the strip's raw fp32 sums
// in BN / 32 rounds of 64 rows x 32 columns, each written into a staging buffer
// (kittens::partial_box_offset) and stored by TMA into the partial map {N, M, splits} (the
// reduction's (m, n) layout; clipped at M and N), in place of store_unit's fragment-order global
// stores, which took ~15k cycles per 128 x 256 tile at 256x4096x14336 (pipeline_trace.py, H200:
// ~9 us of the call). `round` counts the warpgroup's rounds across strips and units: round i
// uses buffer i % STAGING_BUFFERS, free once at most STAGING_BUFFERS - 1 newer stores are pending.
template <class L, bool kT, int R>
__device__ __forceinline__ void store_unit_partial_tma(const float (&acc)[R], const CUtensorMap* tm_part,
                                                       uint32_t staging, int row0, int n0, int split, int cs,
                                                       uint32_t& round) {
  static_assert(L::BN % 32 == 0, "partial rounds of 32 columns");
  const int t = thread_in_warpgroup();
#pragma unroll
  for (int h = 0; h < L::BN / 32; ++h, ++round) {
    const uint32_t buffer = staging + (round % L::STAGING_BUFFERS) * L::STAGING_BUFFER_BYTES;
    if (t == 0) tma_store_wait_read<L::STAGING_BUFFERS - 1>();
    named_barrier(1 + cs, kWarpgroupThreads);
#pragma unroll
    for (int r = 16 * h; r < 16 * h + 16; r += 2) {  // registers of columns 32h .. 32h + 31
      const RowCol rc = wgmma_acc_coord(t, r);
      const uint32_t col = rc.col - 32 * h;
      if constexpr (kT) {
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(buffer + partial_box_offset(rc.row, col, true)), "f"(acc[r])
                     : "memory");
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(buffer + partial_box_offset(rc.row, col + 1, true)),
                     "f"(acc[r + 1])
                     : "memory");
      } else {
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(buffer + partial_box_offset(rc.row, col, false)),
                     "f"(acc[r]), "f"(acc[r + 1])
                     : "memory");
      }
    }
    fence_proxy_async_smem();
    named_barrier(1 + cs, kWarpgroupThreads);
    if (t == 0) {
      // The map's dims are {n, m, split}: kernel (row, col) is (m, n), or (n, m) under swap-AB.
      if constexpr (kT) {
        tma_store_3d(tm_part, buffer, row0, n0 + 32 * h, split);
        tma_store_3d(tm_part, buffer + partial_box_offset(32, 0, true), row0 + 32, n0 + 32 * h, split);  // rows 32..63
      } else {
        tma_store_3d(tm_part, buffer, n0 + 32 * h, row0, split);
      }
      tma_store_commit();
    }
  }
}

// Fused split-K finish, by each consumer warpgroup after it stored its split's partial sums (in
// the output's layout, like the separate reduction kernel reads them): raise this (tile, split,
// warpgroup)'s ready flag, wait for the other splits' flags of the same 64-row strip, then finish
// slice `split` of the strip's elements, walked with the output's contiguous index fastest
// (coalesced): out = alpha * sum over splits in order (the same bits as splitk_reduce_kernel) +
// beta * C. Every split of a tile waits for the others, so they must all be resident at once:
// the plan gives one unit per CTA and at most one CTA per SM (plan.h fused_split); CTAs held up
// by another stream's kernels only wait longer.
template <class L>
__device__ __forceinline__ void split_reduce_slice(const Epilogue<typename L::out_t>& ep, int tile, int tiles,
                                                   int split, int splits, int row0, int n0, int M, int N, int cw) {
  const int t = thread_in_warpgroup();
  int* const flags = ep.ready_flags + int64_t(tile) * L::CONSUMERS + cw;  // split j's: + j * tiles * CONSUMERS
  named_barrier(1 + cw, kWarpgroupThreads);  // this warpgroup's partial stores are issued
  if (t == 0) {
    flag_release(flags + int64_t(split) * tiles * L::CONSUMERS);
    for (int j = 0; j < splits; ++j)
      if (j != split) flag_acquire_wait(flags + int64_t(j) * tiles * L::CONSUMERS);
  }
  named_barrier(1 + cw, kWarpgroupThreads);
  const int rows = min(64, M - row0), cols = min(L::BN, N - n0);
  if (rows <= 0 || cols <= 0) return;
  // Kernel rows are the output's contiguous index under swap-AB (o_s1 != 1), else kernel columns.
  const bool rows_inner = ep.o_s1 != 1;
  const int inner = rows_inner ? rows : cols, count = rows * cols;
  const int e0 = count * split / splits, e1 = count * (split + 1) / splits;
  // kChunk elements per thread at a time: all their loads are issued before any store, so a
  // slice costs a few L2 round trips, not one per element (the stores may alias the loads).
  constexpr int kChunk = 8;
  for (int base = e0 + t; base < e1; base += kChunk * kWarpgroupThreads) {
    int64_t off[kChunk];
    float v[kChunk], c[kChunk];
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      const int e = min(base + k * kWarpgroupThreads, e1 - 1);  // clamped: a repeat, not stored
      const int o = e / inner, i = e - o * inner;
      const int row = row0 + (rows_inner ? i : o), col = n0 + (rows_inner ? o : i);
      off[k] = row * ep.o_s0 + col * ep.o_s1;
      c[k] = ep.c != nullptr ? to_f32(ep.c[row * ep.c_s0 + col * ep.c_s1]) : 0.f;
      v[k] = 0.f;
    }
    for (int j = 0; j < splits; ++j) {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[k] += __ldcg(ep.partial + j * ep.o_split + off[k]);
    }
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      float x = v[k] * ep.alpha;
      if (ep.c != nullptr) x += ep.beta * c[k];
      if (base + k * kWarpgroupThreads < e1) ep.out[off[k]] = from_f32<typename L::out_t>(x);
    }
  }
}

}  // namespace tk::hopper
