// Hopper GEMM v1: TMA -> 128-B swizzled shared ring (mbarrier full/empty) -> wgmma -> registers.
// One producer warpgroup (a single lane issues TMA) and two consumer warpgroups, each owning a
// 64 x BN strip of the 128 x BN output tile; fp32 accumulate; epilogue writes straight from the
// accumulator fragments with the addmm alpha/beta/C terms and bounds masks for the tails.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "../../kittens/common/fragments.h"
#include "../../kittens/common/raster.h"
#include "../../kittens/common/stream_k.h"
#include "../../kittens/hopper/flags.cuh"
#include "../../kittens/hopper/mbarrier.cuh"
#include "../../kittens/hopper/st.cuh"
#include "../../kittens/hopper/warpgroup.cuh"
#include "../../kittens/hopper/wgmma_ops.cuh"
#include "convert.cuh"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// One kernel configuration. The kernel computes out = X (rows x K) . Y (K x cols); the host
// maps A.B or (swap-AB) B^T.A^T onto it (plan.h). XMn/YMn: operand stored MN-contiguous.
// CLUSTER_ = 2: two CTAs of a cluster take vertically adjacent tiles of one column and share the
// Y (B) tile: each loads half of it and multicasts it to both (half the L2->SM traffic for Y).
// STREAM_K_: the plan's last sk_tiles tiles run as a stream-K tail (kittens/common/stream_k.h).
template <typename T, typename OutT, bool XMn, bool YMn, int BN_, int CLUSTER_ = 1, bool STREAM_K_ = false>
struct gemm_layout {
  using in_t = T;
  using out_t = OutT;
  static constexpr bool kAMn = XMn, kBMn = YMn, kStreamK = STREAM_K_;
  static_assert(!STREAM_K_ || CLUSTER_ == 1, "stream-K tail only for unclustered kernels");
  static constexpr int BM = 128, BN = BN_, CONSUMERS = 2, CLUSTER = CLUSTER_;
  using a_tile = st_operand<BM, XMn>;
  using b_tile = st_operand<BN, YMn, CLUSTER>;
  static constexpr int BK = a_tile::kK;
  static constexpr int STAGE_BYTES = a_tile::kBytes + b_tile::kBytes;
  // TMA-store epilogue (16-bit outputs): each consumer warpgroup stages 64 rows x 64 columns
  // (one 128-B swizzled box) per round, BN / 64 rounds per unit, alternating between two
  // buffers so that filling one overlaps the TMA read of the other.
  static constexpr bool kTmaStore = sizeof(OutT) == 2;
  static constexpr int STORE_COLS = 64, STORE_ROUNDS = BN / STORE_COLS;
  static constexpr int STAGING_BUFFER_BYTES = 64 * STORE_COLS * 2;
  static constexpr int STAGING_BYTES = kTmaStore ? CONSUMERS * 2 * STAGING_BUFFER_BYTES : 0;
  // As many stages as fit beside the staging buffer in the sm_90 per-block limit (227 KB), at
  // most 8: BN 256 -> 4 (48 KB each), BN 128 -> 6, BN 64 -> 8.
  static constexpr int kFit = (232448 - 1024 - 512 - STAGING_BYTES) / STAGE_BYTES;
  static constexpr int STAGES = kFit < 8 ? kFit : 8;
  static constexpr int THREADS = (CONSUMERS + 1) * kWarpgroupThreads;
  // Dynamic schedule: ring of unit ids the producer hands to the consumers (full/empty barriers).
  static constexpr int SCHED_SLOTS = 4;
  static constexpr int BARRIER_BYTES = 2 * STAGES * 8 + SCHED_SLOTS * (2 * 8 + 4);
  static_assert(BARRIER_BYTES <= 512, "barriers outgrow their reserve in kFit");
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGING_BYTES + BARRIER_BYTES + 1024;  // +1024: alignment
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(STAGES >= 4, "pipeline too shallow");
};

// Epilogue store paths (the kernel's store_mode argument): fragment-order register stores (any
// output: transposed, split-K partials, fp32), TMA box stores from the swizzled staging buffer
// (16-bit output, 16-B aligned row pitch), or the same staging copied out by rows (16-bit output,
// other pitches).
constexpr int kStoreRegisters = 0, kStoreTma = 1, kStoreStaged = 2;

// Kernel-space element (row, col) goes to out[row * o_s0 + col * o_s1] (swap-AB transposes by
// strides). With splits > 1 and not fused_split the raw fp32 sums go to partial[split * o_split +
// same offset] and splitk_reduce_kernel (splitk_reduce.cuh) applies alpha/beta/C.
template <typename OutT>
struct Epilogue {
  OutT* out;
  int64_t o_s0, o_s1;
  const OutT* c;    // nullptr: no C term
  int64_t c_s0, c_s1;
  float alpha, beta;
  float* partial;   // used when splits > 1
  int64_t o_split;
  int experiment = 0;  // stage-removal bits (kXp*), read only in a TK_EXPERIMENTS build
  // Stream-K kernels: tiles in the tail, the tail partials (partial: gridDim.x x CONSUMERS x 64 x
  // BN floats) and one zeroed ready flag per (CTA, consumer warpgroup).
  int sk_tiles = 0;
  int* ready_flags = nullptr;
  // Fused split-K (split_reduce_slice): the splits of a tile finish the sum among themselves.
  bool fused_split = false;
};

// Stage-removal experiments (benchmarks/ab_env.py; built only with TK_EXPERIMENTS=1, where
// TK_HOPPER_EXPERIMENT sets them, and the results are then WRONG): drop the epilogue stores or
// the TMA loads (stages arrive holding stale data), to time what the rest costs. (Skipping the
// wgmma conditionally made ptxas insert warpgroup.arrive around it, slowing every variant.)
constexpr int kXpNoStore = 1, kXpNoLoad = 2;
// kXpTiming: consumer 0 of every 33rd CTA prints its clock64 totals (mainloop, of which waiting
// on full stages; the final wgmma drain; the epilogue up to the next unit's start).
constexpr int kXpTiming = 8;


template <typename OutT>
__device__ __forceinline__ void store_pair(OutT* p, float v0, float v1) {
  if constexpr (sizeof(OutT) == 4) {
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
  } else {
    struct alignas(4) pair { OutT x, y; };
    *reinterpret_cast<pair*>(p) = pair{from_f32<OutT>(v0), from_f32<OutT>(v1)};
  }
}

// Consumer warpgroup epilogue of one work unit: acc (this warpgroup's 64 x BN strip) -> global.
template <class L, int R>
__device__ __forceinline__ void store_unit(const float (&acc)[R], const Epilogue<typename L::out_t>& ep, int row0,
                                           int n0, int M, int N, int split, bool partial) {
  using OutT = typename L::out_t;
  const int t = thread_in_warpgroup();
  // (row * o_s0 + even col) is 2-element aligned when the columns are contiguous and o_s0 even.
  const bool pair_ok = ep.o_s1 == 1 && (ep.o_s0 % 2) == 0;
#pragma unroll
  for (int r = 0; r < R; r += 2) {
    const RowCol rc = wgmma_acc_coord(t, r);
    const int row = row0 + rc.row, col = n0 + rc.col;
    if (row >= M || col >= N) continue;
    const bool has1 = col + 1 < N;
    const int64_t off = row * ep.o_s0 + col * ep.o_s1;
    if (partial) {
      float* o = ep.partial + split * ep.o_split + off;
      if (has1 && pair_ok) {
        *reinterpret_cast<float2*>(o) = make_float2(acc[r], acc[r + 1]);
      } else {
        o[0] = acc[r];
        if (has1) o[ep.o_s1] = acc[r + 1];
      }
      continue;
    }
    float v0 = ep.alpha * acc[r], v1 = ep.alpha * acc[r + 1];
    if (ep.c != nullptr) {
      const OutT* c = ep.c + row * ep.c_s0 + col * ep.c_s1;
      v0 += ep.beta * to_f32(c[0]);
      if (has1) v1 += ep.beta * to_f32(c[ep.c_s1]);
    }
    OutT* o = ep.out + off;
    if (has1 && pair_ok) {
      store_pair(o, v0, v1);
    } else {
      o[0] = from_f32<OutT>(v0);
      if (has1) o[ep.o_s1] = from_f32<OutT>(v1);
    }
  }
}

// One epilogue round of a consumer warpgroup into its staging buffer: columns H*64 .. H*64+63
// of its 64-row strip, alpha/beta C applied, as bf16/fp16 in an MN-major swizzled box with
// columns as MN and rows as k (kittens::mnmajor_offset), so a warp's 4-byte writes hit 32
// distinct banks. C is read only inside the tensor (outside it the stores are clipped/masked).
// The epilogue is issue-bound (the two consumer warps of a scheduler issue it back to back while
// the tensor cores idle: ~6400 cycles per 128x256 unit measured with kXpTiming when every
// element carried its own C test and 64-bit C offset), hence one variant without C (scale, pack,
// store) and, with C, row pointers hoisted out of the element loop.
template <class L, int H, bool kHasC, int R>
__device__ __forceinline__ void stage_round_impl(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                 uint32_t stage_base, int row0, int n0, int M, int N) {
  using OutT = typename L::out_t;
  const int t = thread_in_warpgroup();
  // This thread's two fragment rows (registers with (r / 2) % 2 == 0 and == 1).
  const int frow = row0 + wgmma_acc_coord(t, 0).row;
  const OutT* crow[2] = {nullptr, nullptr};
  bool row_in[2] = {false, false};
  if constexpr (kHasC) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      row_in[i] = frow + 8 * i < M;
      crow[i] = ep.c + int64_t(frow + 8 * i) * ep.c_s0;
    }
  }
#pragma unroll
  for (int r = H * L::STORE_COLS / 2; r < (H + 1) * L::STORE_COLS / 2; r += 2) {
    const RowCol rc = wgmma_acc_coord(t, r);
    float v0 = ep.alpha * acc[r], v1 = ep.alpha * acc[r + 1];
    if constexpr (kHasC) {
      const int i = (r / 2) % 2, col = n0 + rc.col;
      if (row_in[i] && col < N) {
        const OutT* c = crow[i] + int64_t(col) * ep.c_s1;
        v0 += ep.beta * to_f32(c[0]);
        if (col + 1 < N) v1 += ep.beta * to_f32(c[ep.c_s1]);
      }
    }
    const uint32_t off = mnmajor_offset(rc.col - H * L::STORE_COLS, rc.row, sizeof(OutT));
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(stage_base + off), "r"(pack2<OutT>(v0, v1)) : "memory");
  }
}

template <class L, int H, int R>
__device__ __forceinline__ void stage_round(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                            uint32_t stage_base, int row0, int n0, int M, int N) {
  if (ep.c == nullptr) stage_round_impl<L, H, false>(acc, ep, stage_base, row0, n0, M, N);
  else stage_round_impl<L, H, true>(acc, ep, stage_base, row0, n0, M, N);
}

// TMA-store epilogue round of one consumer warpgroup: stage_round into one of its two buffers,
// then one thread issues the box store, which runs on while the warpgroup goes on.
template <class L, int H, int R>
__device__ __forceinline__ void store_round_tma(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                const CUtensorMap* tm_out, uint8_t* staging, int row0, int n0,
                                                int M, int N, int cw) {
  const int t = thread_in_warpgroup();
  uint8_t* buffer = staging + (H % 2) * L::STAGING_BUFFER_BYTES;
  const uint32_t stage_base = smem_u32(buffer);
  // This buffer is free once the store issued from it two rounds ago has read it: all store
  // groups but the newest (the other buffer's, issued last round) have finished reading. With one
  // round per unit (BN = 64) only buffer 0 is used, and the last store must have read it.
  if (t == 0) {
    if constexpr (L::STORE_ROUNDS == 1) tma_store_wait_read<0>();
    else tma_store_wait_read<1>();
  }
  named_barrier(1 + cw, kWarpgroupThreads);
  stage_round<L, H>(acc, ep, stage_base, row0, n0, M, N);
  fence_proxy_async_smem();
  named_barrier(1 + cw, kWarpgroupThreads);
  if (t == 0) {
    tma_store_2d(tm_out, buffer, n0 + H * L::STORE_COLS, row0);
    tma_store_commit();
  }
}

// Staged epilogue (16-bit output): the warpgroup fills one of its two staging boxes exactly as
// the TMA path does, then copies it out by rows with ordinary stores, consecutive threads on
// consecutive columns: 16-B chunks (8 columns of a row, a warp covering 4 whole 128-B rows) when
// the row pitch and base are 16-B aligned and N % 8 == 0 (`vec`), else 2-B elements (a warp
// covering 64 contiguous bytes). The fragment-order register stores touch 8 rows x 4 bytes per
// instruction and measured ~40% of the tile time on 8191^3 and 4097^3 (benchmarks/NOTES.md).
// Unlike the TMA store, nothing here waits on the TMA unit, which also serves the producer's loads.
// Buffers alternate by round; one barrier per round suffices: a thread writes buffer H % 2 in
// round H only after the barrier of round H - 1, which every thread passes after its round H - 2
// reads of that buffer (with one round per unit, a leading barrier covers the previous unit).
template <class L, int H, int R>
__device__ __forceinline__ void store_round_staged(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                   uint8_t* staging, int row0, int n0, int M, int N, int cw,
                                                   bool vec) {
  using OutT = typename L::out_t;
  const int t = thread_in_warpgroup();
  const uint32_t stage_base = smem_u32(staging + (H % 2) * L::STAGING_BUFFER_BYTES);
  if constexpr (L::STORE_ROUNDS == 1) named_barrier(1 + cw, kWarpgroupThreads);
  stage_round<L, H>(acc, ep, stage_base, row0, n0, M, N);
  named_barrier(1 + cw, kWarpgroupThreads);
  const int c0 = n0 + H * L::STORE_COLS;
  if (vec) {
    constexpr int kChunksPerRow = L::STORE_COLS * int(sizeof(OutT)) / 16;
#pragma unroll
    for (int i = t; i < 64 * kChunksPerRow; i += kWarpgroupThreads) {
      const int r = i / kChunksPerRow, c = (i % kChunksPerRow) * (16 / int(sizeof(OutT)));
      if (row0 + r >= M || c0 + c >= N) continue;
      uint32_t v0, v1, v2, v3;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                   : "r"(stage_base + mnmajor_offset(c, r, sizeof(OutT)))
                   : "memory");
      *reinterpret_cast<uint4*>(ep.out + int64_t(row0 + r) * ep.o_s0 + (c0 + c)) = make_uint4(v0, v1, v2, v3);
    }
    return;
  }
  uint16_t* out = reinterpret_cast<uint16_t*>(ep.out);
#pragma unroll 4
  for (int i = t; i < 64 * L::STORE_COLS; i += kWarpgroupThreads) {
    const int r = i / L::STORE_COLS, c = i % L::STORE_COLS;
    if (row0 + r >= M || c0 + c >= N) continue;
    uint16_t v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(stage_base + mnmajor_offset(c, r, sizeof(OutT))) : "memory");
    out[int64_t(row0 + r) * ep.o_s0 + (c0 + c)] = v;
  }
}

template <class L, int H = 0, int R>
__device__ __forceinline__ void store_unit_staged(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                  uint8_t* staging, int row0, int n0, int M, int N, int cw, bool vec) {
  store_round_staged<L, H>(acc, ep, staging, row0, n0, M, N, cw, vec);
  if constexpr (H + 1 < L::STORE_ROUNDS) store_unit_staged<L, H + 1>(acc, ep, staging, row0, n0, M, N, cw, vec);
}

// TMA-store epilogue of one consumer warpgroup's unit: STORE_ROUNDS rounds of store_round_tma.
// Rounds are template-unrolled so every accumulator index is a constant (acc stays in registers).
template <class L, int H = 0, int R>
__device__ __forceinline__ void store_unit_tma(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                               const CUtensorMap* tm_out, uint8_t* staging, int row0, int n0,
                                               int M, int N, int cw) {
  static_assert(L::STORE_ROUNDS % 2 == 0 || L::STORE_ROUNDS == 1, "buffer parity must run on across units");
  store_round_tma<L, H>(acc, ep, tm_out, staging, row0, n0, M, N, cw);
  if constexpr (H + 1 < L::STORE_ROUNDS) store_unit_tma<L, H + 1>(acc, ep, tm_out, staging, row0, n0, M, N, cw);
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

// Persistent: CTA b takes work unit b first (kittens::work_unit), then either b + gridDim.x, ...
// (static) or, with a `unit_counter` (dynamic), the next unit not yet taken by any CTA: ticket
// gridDim.x + atomicAdd(unit_counter, 1), drawn by the producer once it has issued the loads of
// its current unit and handed to the consumers through the sched ring. In a 2-CTA cluster (units
// counted per cluster) rank 0's producer draws the ticket and writes it into both CTAs' rings.
// Dynamic order keeps the CTAs that share an operand panel (neighbouring units) in step however
// the SMs' speeds drift, so the panel is read from DRAM once (ncu, 8192x57344x8192: static 19 GB
// of DRAM reads against cuBLAS's 8.5 GB). The stage ring and its parities run on across units, so
// the producer fills the next unit's stages while the consumers are still in the previous unit's
// epilogue.
template <class L>
__global__ void __launch_bounds__(L::THREADS, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                const __grid_constant__ CUtensorMap tm_out, Epilogue<typename L::out_t> ep, int M, int N, int K,
                int splits, int store_mode, int group_m, int* unit_counter) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#ifdef TK_EXPERIMENTS
  const int xp = ep.experiment;
#else
  constexpr int xp = 0;
#endif
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* staging = smem + L::STAGES * L::STAGE_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(staging + L::STAGING_BYTES);
  uint64_t* empty = full + L::STAGES;
  uint64_t* sched_full = empty + L::STAGES;
  uint64_t* sched_empty = sched_full + L::SCHED_SLOTS;
  int* sched_unit = reinterpret_cast<int*>(sched_empty + L::SCHED_SLOTS);
  const bool dynamic = unit_counter != nullptr;

  // With clusters a unit is a column of CLUSTER vertically adjacent tiles; CTA `rank` of the
  // cluster takes row tile CLUSTER * unit_row + rank (past the last row tile it still loads and
  // multicasts its Y slice; its own rows are zero-filled and its stores masked/clipped).
  const int tiles_m = ceil_div(M, L::BM * L::CLUSTER), tiles_n = ceil_div(N, L::BN);
  const int units = tiles_m * tiles_n * splits;
  const int k_tiles = ceil_div(K, L::BK);
  const int group = group_m / L::CLUSTER > 0 ? group_m / L::CLUSTER : 1;  // raster band, in units
  // Stream-K: whole-tile units [0, dp_units), then this CTA's tail iterations, encoded as unit
  // ids dp_units + iteration in [sk_lo, sk_hi). A schedule switches to them (in_sk) once its
  // next whole-tile id is past dp_units.
  const int dp_units = units - (L::kStreamK ? ep.sk_tiles : 0);
  const int64_t sk_iters = int64_t(L::kStreamK ? ep.sk_tiles : 0) * k_tiles;
  const int sk_lo = dp_units + int(sk_begin(blockIdx.x, sk_iters, gridDim.x));
  const int sk_hi = dp_units + int(sk_begin(blockIdx.x + 1, sk_iters, gridDim.x));
  // Producer and consumers walk the same units: the switch to the tail, and what a unit is.
  auto enter_tail = [&](int& u, bool& in_sk) {
    if constexpr (L::kStreamK) {
      if (!in_sk && u >= dp_units) in_sk = true, u = sk_lo;
    }
  };
  auto decode = [&](int u, bool in_sk, WorkUnit& w, KRange& kr, SkSegment& seg) {
    if (L::kStreamK && in_sk) {
      seg = sk_segment(u - dp_units, sk_hi - dp_units, k_tiles, sk_iters, gridDim.x);
      w = work_unit(dp_units + seg.tile, tiles_m, tiles_n, group);
      kr = seg.k;
    } else {
      w = work_unit(u, tiles_m, tiles_n, group);
      kr = split_k_range(w.split, splits, k_tiles);
    }
  };
  int rank = 0, first_unit = blockIdx.x, unit_stride = gridDim.x;
  if constexpr (L::CLUSTER > 1) {
    rank = int(cluster_ctarank());
    first_unit = int(cluster_id_x());
    unit_stride = int(cluster_count_x());
  }

  // Let a dependent launch (the split-K reduction) get scheduled now; it waits for our completion.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) {
    for (int s = 0; s < L::STAGES; ++s) {
      mbar_init(&full[s], 1);                      // the producer's expect_tx arrival
      mbar_init(&empty[s], L::CONSUMERS * 4 * L::CLUSTER);  // one arrival per consumer warp of the cluster
    }
    for (int s = 0; s < L::SCHED_SLOTS; ++s) {
      mbar_init(&sched_full[s], 1);                   // the producer's arrival after writing the id
      // One arrival per consumer warp of the cluster after reading the id, plus the other
      // producers (only rank 0's ring is waited on: rank 0 draws the tickets).
      mbar_init(&sched_empty[s], L::CONSUMERS * 4 * L::CLUSTER + L::CLUSTER - 1);
    }
    mbar_init_fence();
    tma_prefetch_desc(&tm_a);
    tma_prefetch_desc(&tm_b);
  }
  if constexpr (L::CLUSTER > 1) cluster_sync();  // peers' barriers initialised before any remote use
  else __syncthreads();

  if (warpgroup_id() == 0) {
    // ---- producer ----
    setmaxnreg_dec<L::PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      uint32_t it = 0;  // k iterations issued by this CTA, across units
      int handed = 0;  // unit ids handed to the consumers (dynamic)
      bool in_sk = false;
      int u = first_unit;
      enter_tail(u, in_sk);
      while (in_sk ? u < sk_hi : u < units) {
        WorkUnit w;
        KRange kr;
        SkSegment seg;
        decode(u, in_sk, w, kr, seg);
        const int m0 = (w.tile.m * L::CLUSTER + rank) * L::BM, n0 = w.tile.n * L::BN;
        for (int kt = kr.begin; kt < kr.end; ++kt, ++it) {
          const int s = it % L::STAGES;
          mbar_wait(&empty[s], ((it / L::STAGES) & 1) ^ 1);  // first round passes at once
          if (xp & kXpNoLoad) {
            mbar_arrive(&full[s]);
            continue;
          }
          mbar_arrive_expect_tx(&full[s], L::STAGE_BYTES);    // full boxes, zero-filled bytes included
          uint8_t* stage = smem + s * L::STAGE_BYTES;
          L::a_tile::load(stage, &tm_a, &full[s], m0, kt * L::BK);
          if constexpr (L::CLUSTER > 1)
            L::b_tile::load_slice(stage + L::a_tile::kBytes, &tm_b, &full[s], n0, kt * L::BK, rank,
                                  uint16_t((1u << L::CLUSTER) - 1));
          else
            L::b_tile::load(stage + L::a_tile::kBytes, &tm_b, &full[s], n0, kt * L::BK);
        }
        if (L::kStreamK && in_sk) {
          u += kr.end - kr.begin;
          continue;
        }
        if (dynamic) {
          const int slot = handed % L::SCHED_SLOTS, parity = (handed / L::SCHED_SLOTS) & 1;
          if (rank == 0) {
            // Units are numbered per cluster: the first unit_stride went out statically.
            u = unit_stride + atomicAdd(unit_counter, 1);
            mbar_wait(&sched_empty[slot], parity ^ 1);
            sched_unit[slot] = u;  // made visible by the arrive's release
#pragma unroll
            for (int peer = 1; peer < L::CLUSTER; ++peer) {
              st_shared_cluster(&sched_unit[slot], peer, u);
              mbar_arrive_cluster_release(&sched_full[slot], peer);
            }
            mbar_arrive(&sched_full[slot]);
          } else {
            mbar_wait<true>(&sched_full[slot], parity);
            u = *reinterpret_cast<volatile int*>(&sched_unit[slot]);
            mbar_arrive_cluster(&sched_empty[slot], 0);
          }
          ++handed;
        } else {
          u += unit_stride;
        }
        enter_tail(u, in_sk);
      }
    }
  } else {
    // ---- consumers ----
    setmaxnreg_inc<L::CONSUMER_REGS>();
    const int cw = warpgroup_id() - 1;
    const bool warp_leader = (threadIdx.x % 32) == 0;
    constexpr bool kBf16 = std::is_same_v<typename L::in_t, __nv_bfloat16>;
    using mma = wgmma_op<L::BN, kBf16, L::kAMn ? 1 : 0, L::kBMn ? 1 : 0>;
    float acc[L::BN / 2];
    uint32_t it = 0;  // k iterations consumed, across units (unsigned: cheap % and /)
    // Stage 0's wgmma descriptors; the mainloop adds constant offsets (no carry: asserted).
    static_assert(L::SMEM_BYTES < (1 << 18), "shared addresses must fit the 14-bit descriptor field (>> 4)");
    const uint32_t ring = smem_u32(smem);
    // Only the low word (start address) moves: 32-bit adds, the high word stays constant.
    const uint64_t desc_a0 = L::a_tile::desc(ring, cw * 64, 0);
    const uint64_t desc_b0 = L::b_tile::desc(ring + L::a_tile::kBytes, 0, 0);
    const uint32_t a_lo = uint32_t(desc_a0), a_hi = uint32_t(desc_a0 >> 32);
    const uint32_t b_lo = uint32_t(desc_b0), b_hi = uint32_t(desc_b0 >> 32);
    // Staged copy-out in 16-B chunks: rows 16-B aligned and no chunk straddling column N.
    const bool vec_copy = ep.o_s1 == 1 && ep.o_s0 % 8 == 0 && N % 8 == 0 &&
                          reinterpret_cast<uintptr_t>(ep.out) % 16 == 0;
    // A stage is free once every consumer warp of every CTA that received it has read it.
    auto release = [&](int stage) {
      if (!warp_leader) return;
      mbar_arrive(&empty[stage]);
      if constexpr (L::CLUSTER > 1) {
#pragma unroll
        for (int peer = 1; peer < L::CLUSTER; ++peer) mbar_arrive_cluster(&empty[stage], (rank + peer) % L::CLUSTER);
      }
    };
    const bool xt = (xp & kXpTiming) && cw == 0 && thread_in_warpgroup() == 0 && blockIdx.x % 33 == 0;
    long long xt_main = 0, xt_wait = 0, xt_drain = 0, xt_epi = 0, xt_mark = 0;
    int xt_units = 0;
    int received = 0;  // unit ids taken from the sched ring (dynamic)
    // The next unit: static stride, or the id rank 0's producer handed over (every thread reads
    // it, then one arrival per warp on rank 0's ring frees the slot).
    auto next_unit = [&](int u) {
      if (!dynamic) return u + unit_stride;
      const int slot = received % L::SCHED_SLOTS, parity = (received / L::SCHED_SLOTS) & 1;
      if (L::CLUSTER > 1 && rank != 0) mbar_wait<true>(&sched_full[slot], parity);
      else mbar_wait(&sched_full[slot], parity);
      const int v = *reinterpret_cast<volatile int*>(&sched_unit[slot]);
      __syncwarp();
      if (warp_leader) {
        if (L::CLUSTER > 1 && rank != 0) mbar_arrive_cluster(&sched_empty[slot], 0);
        else mbar_arrive(&sched_empty[slot]);
      }
      ++received;
      return v;
    };
    // Stream-K tail: the same walk as the producer's (in_sk); `seg` of the current tail segment.
    bool in_sk = false;
    SkSegment seg{};
    auto advance = [&](int u) {
      if (L::kStreamK && in_sk) return u + (seg.k.end - seg.k.begin);
      u = next_unit(u);
      enter_tail(u, in_sk);
      return u;
    };
    int u0 = first_unit;
    enter_tail(u0, in_sk);
    for (int u = u0; in_sk ? u < sk_hi : u < units; u = advance(u)) {
      WorkUnit w;
      KRange kr;
      decode(u, in_sk, w, kr, seg);
      long long xt_start = 0;
      if (xt) {
        xt_start = clock64();
        if (xt_units++ > 0) xt_epi += xt_start - xt_mark;
      }
#pragma unroll
      for (int i = 0; i < L::BN / 2; ++i) acc[i] = 0.f;
      for (int kt = kr.begin; kt < kr.end; ++kt, ++it) {
        const int s = it % L::STAGES;
        long long xt_w = xt ? clock64() : 0;
        mbar_wait(&full[s], (it / L::STAGES) & 1);
        if (xt) xt_wait += clock64() - xt_w;
        // Descriptors of stage s: stage 0's plus the stage offset (st_operand::kDescKStep).
        const uint32_t stage_step = uint32_t(s) * (L::STAGE_BYTES >> 4);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < L::BK / 16; ++kk)
          mma::mma(acc, pack_desc(a_lo + stage_step + kk * uint32_t(L::a_tile::kDescKStep), a_hi),
                   pack_desc(b_lo + stage_step + kk * uint32_t(L::b_tile::kDescKStep), b_hi), 1);
        wgmma_commit();
        // Keep this stage's wgmmas in flight; the previous stage's are done and can be released.
        wgmma_wait<1>();
        fence_regs(acc);
        if (kt > kr.begin) release((it - 1) % L::STAGES);
      }
      const long long xt_d = xt ? clock64() : 0;
      wgmma_wait<0>();
      fence_regs(acc);
      if (xt) {
        xt_mark = clock64();
        xt_main += xt_d - xt_start;
        xt_drain += xt_mark - xt_d;
      }
      release((it - 1) % L::STAGES);
      const int row0 = (w.tile.m * L::CLUSTER + rank) * L::BM + cw * 64, n0 = w.tile.n * L::BN;
      if ((xp & kXpNoStore) && acc[0] != -1.25e30f) continue;  // the compare keeps acc live
      if constexpr (L::kStreamK) {
        if (in_sk && seg.slots == 2) {
          // Tail: hand the partial sums to the head's CTA (blockIdx.x - 1) and stop here. Head:
          // add the tail's sums (two addends: the same bits in either order), then store.
          const int t = thread_in_warpgroup();
          const int part = seg.slot == 1 ? int(blockIdx.x) : int(blockIdx.x) + 1;
          float* ws = ep.partial + (int64_t(part) * L::CONSUMERS + cw) * (L::BN / 2) * kWarpgroupThreads + t;
          int* flag = ep.ready_flags + part * L::CONSUMERS + cw;
          if (seg.slot == 1) {
#pragma unroll
            for (int i = 0; i < L::BN / 2; ++i) __stcg(ws + i * kWarpgroupThreads, acc[i]);
            named_barrier(1 + cw, kWarpgroupThreads);
            if (t == 0) flag_release(flag);
            continue;
          }
          if (t == 0) flag_acquire_wait(flag);
          named_barrier(1 + cw, kWarpgroupThreads);
#pragma unroll
          for (int i = 0; i < L::BN / 2; ++i) acc[i] += __ldcg(ws + i * kWarpgroupThreads);
        }
      }
      if constexpr (L::kTmaStore) {
        uint8_t* my_staging = staging + cw * (L::STAGING_BYTES / L::CONSUMERS);
        if (store_mode == kStoreTma) {
          store_unit_tma<L>(acc, ep, &tm_out, my_staging, row0, n0, M, N, cw);
          continue;
        }
        if (store_mode == kStoreStaged) {
          store_unit_staged<L>(acc, ep, my_staging, row0, n0, M, N, cw, vec_copy);
          continue;
        }
      }
      store_unit<L>(acc, ep, row0, n0, M, N, w.split, splits > 1);
      if (splits > 1 && ep.fused_split) {
        const int tiles = units / splits;  // units are split-major (kittens::work_unit)
        split_reduce_slice<L>(ep, u % tiles, tiles, w.split, splits, row0, n0, M, N, cw);
      }
    }
    if (xt && xt_units > 0) {
      xt_epi += clock64() - xt_mark;
      printf("tk-timing block %d: %d units, per unit: main %lld (full-wait %lld) drain %lld epilogue %lld cycles\n",
             int(blockIdx.x), xt_units, xt_main / xt_units, xt_wait / xt_units, xt_drain / xt_units, xt_epi / xt_units);
    }
    if constexpr (L::kTmaStore) {
      if (store_mode == kStoreTma && thread_in_warpgroup() == 0) tma_store_wait<0>();  // global writes done before exit
    }
  }
  // No CTA may leave while a peer can still arrive on its barriers or multicast into it.
  if constexpr (L::CLUSTER > 1) cluster_sync();
#endif
}

}  // namespace tk::hopper
