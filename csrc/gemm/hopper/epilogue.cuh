// Hopper GEMM epilogue: the Epilogue parameters and a consumer warpgroup's ways of writing its
// 64 x BN accumulator strip out (fragment-order register stores, swizzled staging with TMA box
// stores or a row copy-out); split-K partials and their fused finish are epilogue_split_k.cuh.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "../../kittens/common/fragments.h"
#include "../../kittens/hopper/flags.cuh"
#include "../../kittens/hopper/st.cuh"
#include "../../kittens/hopper/tma.cuh"
#include "../../kittens/hopper/warpgroup.cuh"
#include "../repitch.h"
#include "convert.cuh"
#include "gemm_experiments.cuh"
#include "copy_out_rows.cuh"
#include "kernel_variants.h"

#ifndef TK_STORE_EVICT_FIRST
#define TK_STORE_EVICT_FIRST 0
#endif

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// Epilogue store paths (the kernel's store_mode argument): fragment-order register stores (any
// output: transposed, split-K partials, fp32), TMA box stores from the swizzled staging buffer
// (16-bit output, 16-B aligned row pitch), the same staging copied out by rows (16-bit output,
// other pitches), or TMA box stores of the transposed tile (swap-AB, 16-bit, 16-B aligned pitch:
// kernel rows are the output's contiguous index).
constexpr int kStoreRegisters = 0, kStoreTma = 1, kStoreStaged = 2, kStoreTmaTransposed = 3;
// Split-K partials through the staging buffers and a 3-D TMA map (store_unit_partial_tma):
// untransposed, and transposed (swap-AB).
constexpr int kStorePartialTma = 4, kStorePartialTmaT = 5;

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
  bool stmatrix = false;  // staging rounds through stmatrix (TK_HOPPER_STORE=stmatrix)
  bool deferred = false;  // TMA-store rounds stored under the next unit's mainloop (pack_unit)
  int experiment = 0;  // stage-removal bits (kXp*), read only in a TK_EXPERIMENTS build
  void* trace = nullptr;  // kXpTrace: TraceRecord[kTraceRecords] (gemm_kernel.cuh), experiment build
  // Stream-K kernels: tiles in the tail, the tail partials (partial: gridDim.x x CONSUMERS x 64 x
  // BN floats) and one zeroed ready flag per (CTA, consumer warpgroup).
  // sk_parts: the CTAs the tail's iterations are dealt to (stream_k.h; 0: all of gridDim.x).
  // The K-parts kernels (gemm_layout kKParts, no stream-K) carry here the k tiles where Y's first and
  // second parts end (producer_loads.cuh unit_loads): a field of their own spilled 4 B in two clustered kernels;
  // the M-parts kernels (kMParts) the row tiles where X's first and second parts end.
  int sk_tiles = 0, sk_parts = 0;
  int* ready_flags = nullptr;
  // Fused split-K (split_reduce_slice): the splits of a tile finish the sum among themselves.
  bool fused_split = false;
  // Operand loads under an L2 evict_first policy: bit 0 the kernel's rows operand (X), bit 1 its
  // columns operand (Y) (GemmArgs::evict_first, mapped through swap-AB).
  int l2_evict_first = 0;
  // Tail boxes (gemm_kernel.cuh): rows of the last row tile of X / column tile of Y inside the
  // tensor, loaded through a map whose box has exactly that many rows; 0: no tail map (the full
  // box, its rows past the tensor zero-filled by TMA).
  int x_tail_rows = 0, y_tail_rows = 0;
  // Unclustered kernels: 1, the producer starts loading before the block-wide start barrier
  // (gemm_kernel.cuh early_start; TK_HOPPER_EARLY_START); 2, thread 0 also issues the first unit's
  // stages ahead of the role branch (pre-issue; TK_HOPPER_PRE_ISSUE); 0, neither.
  uint8_t early_start = 0;
  // Staged copy-out of rows that are not 16-B aligned by the output's 16-B granules
  // (copy_out_granules) rather than element by element (TK_HOPPER_COPY_GRANULES=0, A/B).
  bool granules = true;
  // A plain GEMM (no C, alpha 1, deferred rounds, no stmatrix, no fused split): the kernel runs its
  // plain body (plain_body.cuh) where the store mode is a TMA one. Set by the host.
  bool plain_body = false;
  // A plain GEMM with the staged copy-out (kStoreStaged) and granules: the kernel runs its staged
  // plain body where it has one (plain_body.cuh has_staged_plain_body). Set by the host.
  bool plain_staged = false;
};

// The copy-out schedule of unaligned rows (copy_out_granules): row passes, except in the clustered
// kernels wider than 128, where ptxas spilled 8 B with them (the consumer loop's pressure around
// them). TK_WIDE_ROW_PASSES=0 (build define, A/B): granule loops in every kernel wider than 128.
#ifndef TK_WIDE_ROW_PASSES
#define TK_WIDE_ROW_PASSES 1
#endif
template <typename L>
constexpr bool kCopyRowPasses = L::BN <= 128 || (TK_WIDE_ROW_PASSES != 0 && L::CLUSTER == 1);

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

// C's row pointers and in-bounds flags for this thread's two fragment rows (registers with
// (r / 2) % 2 == 0 and == 1), hoisted out of the element loops.
template <typename OutT>
struct CRows {
  const OutT* row[2] = {nullptr, nullptr};
  bool in[2] = {false, false};
};
template <bool kHasC, typename OutT>
__device__ __forceinline__ CRows<OutT> c_rows(const Epilogue<OutT>& ep, int t, int row0, int M) {
  CRows<OutT> c;
  if constexpr (kHasC) {
    const int frow = row0 + wgmma_acc_coord(t, 0).row;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      c.in[i] = ep.c != nullptr && frow + 8 * i < M;  // no C (kEpAffine with alpha only): none read
      c.row[i] = ep.c + int64_t(frow + 8 * i) * ep.c_s0;
    }
  }
  return c;
}

// The plain GEMM's epilogue (alpha 1, no C term): out_pair's kEpPlain. TK_PLAIN_EPILOGUE (build
// define, default 1): one-strip kernels take kEpPlain for the plain GEMM; 0 restores kEpScale
// without C (the previous default, kept for A/Bs: scripts/ab_build.sh). Timed 2026-11-26d (H200,
// 10 K = 2048-4096 cases, 3 rounds): geomean vs cuBLAS 0.988 -> 1.000 (benchmarks/NOTES.md).
#ifndef TK_PLAIN_EPILOGUE
#define TK_PLAIN_EPILOGUE 1
#endif
// Epilogue variants (out_pair's kMode): kEpPlain acc as it is (alpha 1, no C: the plain GEMM,
// whose epilogue then issues no multiplies -- it is instruction-bound, pipeline_trace.py);
// kEpScale alpha * acc; kEpAffine alpha * acc + beta * C where there is a C (none: alpha only).
// ep_light_mode<L>: the variant taken without C -- kEpPlain (alpha 1; other alphas through
// kEpAffine) in one-strip kernels, kEpScale in the two-strip ones, where a third variant made ptxas
// spill (24 B).
constexpr int kEpPlain = 0, kEpScale = 1, kEpAffine = 2;
template <class L>
constexpr int ep_light_mode() {
  return L::STRIPS == 1 && TK_PLAIN_EPILOGUE ? kEpPlain : kEpScale;
}
template <class L, typename OutT>
__device__ __forceinline__ bool ep_light(const Epilogue<OutT>& ep) {
  return ep.c == nullptr && (ep_light_mode<L>() == kEpScale || ep.alpha == 1.f);
}

// Accumulator registers r, r + 1 (even r: two neighbouring columns of one row) as the output's
// 16-bit pair (kMode above), packed in one word (column r's value in the low half).
template <int kMode, typename OutT, int R>
__device__ __forceinline__ uint32_t out_pair(const float (&acc)[R], int r, const Epilogue<OutT>& ep,
                                             const CRows<OutT>& c, int t, int n0, int N) {
  float v0 = kMode == kEpPlain ? acc[r] : ep.alpha * acc[r];
  float v1 = kMode == kEpPlain ? acc[r + 1] : ep.alpha * acc[r + 1];
  if constexpr (kMode == kEpAffine) {
    const int i = (r / 2) % 2, col = n0 + wgmma_acc_coord(t, r).col;
    if (c.in[i] && col < N) {
      const OutT* p = c.row[i] + int64_t(col) * ep.c_s1;
      v0 += ep.beta * to_f32(p[0]);
      if (col + 1 < N) v1 += ep.beta * to_f32(p[ep.c_s1]);
    }
  }
  return pack2<OutT>(v0, v1);
}

// Shared store of the pair of registers r, r + 1 into round H's staging box: MN-major swizzled
// (kittens::mnmajor_offset, columns as MN, rows as k), or transposed (kT: one 128-B line per
// column, kittens::kmajor_offset(col, row)) as two 2-byte halves.
template <class L, int H, bool kT>
__device__ __forceinline__ void sts_pair(uint32_t stage_base, int t, int r, uint32_t p) {
  constexpr uint32_t kElem = sizeof(typename L::out_t);
  const RowCol rc = wgmma_acc_coord(t, r);
  if constexpr (kT) {
    const uint32_t col = rc.col - H * L::STORE_COLS;  // even: columns col and col + 1 are two lines
    asm volatile("st.shared.b16 [%0], %1;" ::"r"(stage_base + kmajor_offset(col, rc.row, kElem)), "h"(uint16_t(p))
                 : "memory");
    asm volatile("st.shared.b16 [%0], %1;" ::"r"(stage_base + kmajor_offset(col + 1, rc.row, kElem)),
                 "h"(uint16_t(p >> 16))
                 : "memory");
  } else {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(stage_base + mnmajor_offset(rc.col - H * L::STORE_COLS, rc.row, kElem)),
                 "r"(p)
                 : "memory");
  }
}

// One round's 16 packed pairs of a thread (accumulator registers 2p, 2p + 1 from the round's first,
// p = 0..15) into the 64 x 64 staging box by 4 stmatrix.x4 instead of 16 (or 32) shared stores
// (kittens::stmatrix_x4_offset: lane addresses, register order, both box layouts). `packed`
// is any array holding them from index P0 on.
template <bool kT, int P0 = 0, int W>
__device__ __forceinline__ void stmatrix_round(uint32_t stage_base, int t, const uint32_t (&packed)[W]) {
  const uint32_t warp = t / 32, lane = t % 32;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const uint32_t a = stage_base + stmatrix_x4_offset(warp, lane, m, kT);
    const uint32_t* q = packed + P0 + 4 * m;
    if constexpr (kT)
      asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(q[0]),
                   "r"(q[1]), "r"(q[2]), "r"(q[3])
                   : "memory");
    else
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(q[0]), "r"(q[1]),
                   "r"(q[2]), "r"(q[3])
                   : "memory");
  }
}

// One epilogue round of a consumer warpgroup into its staging buffer: columns H*64 .. H*64+63
// of its 64-row strip, alpha/beta C applied, as bf16/fp16 in an MN-major swizzled box with
// columns as MN and rows as k (kittens::mnmajor_offset), so a warp's 4-byte writes hit 32
// distinct banks. kT (swap-AB): the box is transposed, one 128-B swizzled line per column with
// the 64 rows contiguous (kittens::kmajor_offset(col, row)), written as 2-byte halves: a warp's
// store covers 4 columns x 8 rows = 4 16-B chunks, which the swizzle puts in distinct banks. C is read only inside the tensor (outside it the stores are clipped/masked).
// The epilogue is issue-bound (the two consumer warps of a scheduler issue it back to back while
// the tensor cores idle), hence a light variant without C (ep_light_mode: scale or not, pack,
// store) and one with C (row pointers hoisted out of the element loop).
template <class L, int H, int kMode, bool kT, bool kStm, int R>
__device__ __forceinline__ void stage_round_impl(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                 uint32_t stage_base, int row0, int n0, int M, int N) {
  constexpr int kPairs = L::STORE_COLS / 4;  // accumulator pairs (16-bit pairs) per thread and round
  // A narrow last round (gemm_layout::kPartialRound) holds LAST_COLS columns: fewer registers.
  constexpr bool kNarrow = L::kPartialRound && H == L::STORE_ROUNDS - 1;
  constexpr int kEndReg = kNarrow ? L::BN / 2 : (H + 1) * L::STORE_COLS / 2;
  const int t = thread_in_warpgroup();
  const auto c = c_rows<kMode == kEpAffine>(ep, t, row0, M);
  if constexpr (kStm && !kNarrow) {
    // 4 stmatrix.x4 per thread and round instead of 16 (or 32) shared stores
    // (kittens::stmatrix_x4_offset: lane addresses, register order, both box layouts).
    uint32_t packed[kPairs];
#pragma unroll
    for (int p = 0; p < kPairs; ++p) packed[p] = out_pair<kMode>(acc, H * L::STORE_COLS / 2 + 2 * p, ep, c, t, n0, N);
    stmatrix_round<kT>(stage_base, t, packed);
  } else {
#pragma unroll
    for (int r = H * L::STORE_COLS / 2; r < kEndReg; r += 2)
      sts_pair<L, H, kT>(stage_base, t, r, out_pair<kMode>(acc, r, ep, c, t, n0, N));
  }
}

template <class L, int H, bool kT = false, int R>
__device__ __forceinline__ void stage_round(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                            uint32_t stage_base, int row0, int n0, int M, int N) {
  if (ep.stmatrix) {
    if (ep_light<L>(ep)) stage_round_impl<L, H, ep_light_mode<L>(), kT, true>(acc, ep, stage_base, row0, n0, M, N);
    else stage_round_impl<L, H, kEpAffine, kT, true>(acc, ep, stage_base, row0, n0, M, N);
  } else {
    if (ep_light<L>(ep)) stage_round_impl<L, H, ep_light_mode<L>(), kT, false>(acc, ep, stage_base, row0, n0, M, N);
    else stage_round_impl<L, H, kEpAffine, kT, false>(acc, ep, stage_base, row0, n0, M, N);
  }
}

// TMA-store epilogue round H of one consumer warpgroup: `fill(stage_base)` writes one of its
// staging buffers, then one thread issues the box store, which runs on while the warpgroup goes on.
// xp: stage-removal bits (gemm_experiments.cuh kXpEpi*; 0 outside an experiment build).
// tma_round_at: the box at output column `col` (tma_round: n0 + H * STORE_COLS; the SwiGLU
// epilogue's h rounds elsewhere, epilogue_swiglu.cuh).
template <class L, int H, bool kT, class Fill>
__device__ __forceinline__ void tma_round_at(const CUtensorMap* tm_out, uint32_t staging, int row0, int col, int cw,
                                             Fill&& fill, int xp = 0, const EpiMarks* marks = nullptr) {
  const int t = thread_in_warpgroup();
  constexpr int kBuffers = L::STAGING_BUFFERS;
  const uint32_t buffer = staging + (H % kBuffers) * L::STAGING_BUFFER_BYTES;
  // This buffer is free once the store issued from it kBuffers rounds ago has read it: all store
  // groups but the kBuffers - 1 newest have finished reading. With one round per unit (BN = 64)
  // only buffer 0 is used, and the last store must have read it.
  // (When the narrow last round is copied out instead -- untransposed, store_round_tma -- fewer
  // stores than rounds were issued since, so wait for all of them.)
  if (t == 0 && !(xp & kXpEpiNoWait)) {
    if constexpr (L::STORE_ROUNDS == 1 || (L::kPartialRound && !kT)) tma_store_wait_read<0>();
    else tma_store_wait_read<kBuffers - 1>();
  }
  epi_mark(marks);
  named_barrier(1 + cw, kWarpgroupThreads);
  epi_mark(marks);
  if (!(xp & kXpEpiNoFill)) fill(buffer);
  epi_mark(marks);
  if (!(xp & kXpEpiNoFence)) fence_proxy_async_smem();
  epi_mark(marks);
  named_barrier(1 + cw, kWarpgroupThreads);
  epi_mark(marks);
  if (t == 0 && !(xp & kXpEpiNoIssue)) {
    // The output's tensor map is {inner: contiguous index, outer: the other}: kernel (col, row)
    // unswapped, (row, col) when kT.
#if TK_STORE_EVICT_FIRST
    // Compile-time A/B (TK_BUILD_DEFINES=TK_STORE_EVICT_FIRST=1): output boxes under an L2
    // evict_first policy, so that they replace each other rather than the operand panels.
    const uint64_t policy = l2_evict_first_policy();
    if constexpr (kT) tma_store_2d_hint(tm_out, buffer, row0, col, policy);
    else tma_store_2d_hint(tm_out, buffer, col, row0, policy);
#else
    if constexpr (kT) tma_store_2d(tm_out, buffer, row0, col);
    else tma_store_2d(tm_out, buffer, col, row0);
#endif
    tma_store_commit();
  }
  epi_mark(marks);
}

template <class L, int H, bool kT, class Fill>
__device__ __forceinline__ void tma_round(const CUtensorMap* tm_out, uint32_t staging, int row0, int n0, int cw,
                                          Fill&& fill, int xp = 0, const EpiMarks* marks = nullptr) {
  tma_round_at<L, H, kT>(tm_out, staging, row0, n0 + H * L::STORE_COLS, cw, static_cast<Fill&&>(fill), xp, marks);
}

template <class L, int H, int R>
__device__ __forceinline__ void store_round_staged(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                   uint32_t staging, int row0, int n0, int M, int N, int cw,
                                                   bool vec);

// A narrow last round (gemm_layout::kPartialRound) goes through tm_out_tail, a transposed box of
// LAST_COLS lines (its columns are the box's outer dimension); untransposed, where they would be
// the inner one, it is copied out by rows instead (store_round_staged, 16-B chunks: `vec`, which
// the TMA store's conditions imply).
template <class L, int H, bool kT, int R>
__device__ __forceinline__ void store_round_tma(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                const CUtensorMap* tm_out, const CUtensorMap* tm_out_tail,
                                                uint32_t staging, int row0, int n0, int M, int N, int cw,
                                                const EpiMarks* marks = nullptr) {
  constexpr bool kNarrow = L::kPartialRound && H == L::STORE_ROUNDS - 1;
  if constexpr (kNarrow && !kT) {
    store_round_staged<L, H>(acc, ep, staging, row0, n0, M, N, cw, true);
    return;
  }
  tma_round<L, H, kT>(
      kNarrow ? tm_out_tail : tm_out, staging, row0, n0, cw,
      [&](uint32_t stage_base) { stage_round<L, H, kT>(acc, ep, stage_base, row0, n0, M, N); }, epi_xp(ep.experiment),
      marks);
}

// Deferred TMA-store epilogue (Epilogue::deferred). After a unit's mainloop the warpgroup stores
// rounds [0, FIRST_HELD_ROUND) at once and packs the rest of its strip into 16-bit pairs in
// registers (`held`: alpha, beta C applied); those rounds are stored during the next unit's
// first k tiles, one per k tile while its wgmmas run (gemm_kernel.cuh), so the tensor pipe does
// not idle for their staging writes, barriers and waits on earlier TMA reads (~540 cycles per
// round of a 128 x 256 unit, H100 trace). Holding more than 2 rounds (32 words) beside the next
// unit's 128 accumulators made ptxas spill, hence gemm_layout::HELD_ROUNDS.
// Accumulator pairs (kFrom, kFrom + 1), (kFrom + 2, kFrom + 3), ... as W packed 16-bit pairs
// (out_pair: alpha, beta C applied), the light or the affine variant as the epilogue asks.
template <class L, int kFrom, int R, int W>
__device__ __forceinline__ void pack_pairs(const float (&acc)[R], uint32_t (&words)[W],
                                           const Epilogue<typename L::out_t>& ep, int row0, int n0, int M, int N) {
  static_assert(kFrom + 2 * W <= R, "pairs inside the strip");
  const int t = thread_in_warpgroup();
  if (ep_light<L>(ep)) {
    const auto c = c_rows<false>(ep, t, row0, M);
#pragma unroll
    for (int p = 0; p < W; ++p) words[p] = out_pair<ep_light_mode<L>()>(acc, kFrom + 2 * p, ep, c, t, n0, N);
  } else {
    const auto c = c_rows<true>(ep, t, row0, M);
#pragma unroll
    for (int p = 0; p < W; ++p) words[p] = out_pair<kEpAffine>(acc, kFrom + 2 * p, ep, c, t, n0, N);
  }
}

template <class L, int R, int W>
__device__ __forceinline__ void pack_unit(const float (&acc)[R], uint32_t (&held)[W],
                                          const Epilogue<typename L::out_t>& ep, int row0, int n0, int M, int N) {
  constexpr int kFirst = L::FIRST_HELD_ROUND * L::STORE_COLS / 2;  // first held accumulator register
  static_assert(W == (R - kFirst) / 2, "one word per held accumulator pair");
  pack_pairs<L, kFirst>(acc, held, ep, row0, n0, M, N);
}

// Round H of the held strip into a staging box: stmatrix (4 instructions, 4 lane addresses)
// rather than 16-32 shared stores, whose precomputed offsets would not fit beside the held words
// and the next unit's accumulators (ptxas spilled).
template <class L, int H, bool kT, int W>
__device__ __forceinline__ void sts_held(uint32_t stage_base, const uint32_t (&held)[W]) {
  static_assert(L::STORE_COLS == 64, "stmatrix_round covers 64 columns");
  stmatrix_round<kT, (H - L::FIRST_HELD_ROUND) * L::STORE_COLS / 4>(stage_base, thread_in_warpgroup(), held);
}

// Stores round h (runtime, < STORE_ROUNDS) of the held strip: template-unrolled so that every
// `held` index is a constant (the words stay in registers).
template <class L, int H = L::FIRST_HELD_ROUND, int W>
__device__ __forceinline__ void store_held_round(int h, bool transposed, const uint32_t (&held)[W],
                                                 const CUtensorMap* tm_out, uint32_t staging, int row0, int n0,
                                                 int cw) {
  if (h == H) {
    if (transposed)
      tma_round<L, H, true>(tm_out, staging, row0, n0, cw, [&](uint32_t base) { sts_held<L, H, true>(base, held); });
    else
      tma_round<L, H, false>(tm_out, staging, row0, n0, cw, [&](uint32_t base) { sts_held<L, H, false>(base, held); });
    return;
  }
  if constexpr (H + 1 < L::STORE_ROUNDS) store_held_round<L, H + 1>(h, transposed, held, tm_out, staging, row0, n0, cw);
}

// Staged epilogue (16-bit output): the warpgroup fills one of its two staging boxes exactly as
// the TMA path does, then copies it out by rows with ordinary stores, consecutive threads on
// consecutive columns: 16-B chunks (8 columns of a row, a warp covering 4 whole 128-B rows) when
// the row pitch and base are 16-B aligned and N % 8 == 0 (`vec`), else 2-B elements (a warp
// covering 64 contiguous bytes). The fragment-order register stores touch 8 rows x 4 bytes per
// instruction and measured ~40% of the tile time on 8191^3 and 4097^3 (benchmarks/NOTES.md).
// Unlike the TMA store, nothing here waits on the TMA unit, which also serves the producer's loads.
// Buffers cycle by round (H % STAGING_BUFFERS, 2 or, at 192 columns, 3); one barrier per round
// suffices: a thread writes round H's buffer only after the barrier of round H - 1, which every
// thread passes after its earlier reads of that buffer (when the rounds per unit are not a
// multiple of the buffers -- one round per unit -- a leading barrier covers the previous unit).
// A narrow last round (gemm_layout::kPartialRound) copies its LAST_COLS columns only; it is also
// how the TMA-store epilogue stores such a round untransposed (store_unit_tma). `staging`: the
// strip's staging buffers (shared address).
template <class L, int H, int R>
__device__ __forceinline__ void store_round_staged(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                   uint32_t staging, int row0, int n0, int M, int N, int cw,
                                                   bool vec) {
  using OutT = typename L::out_t;
  constexpr int kCols = L::kPartialRound && H == L::STORE_ROUNDS - 1 ? L::LAST_COLS : L::STORE_COLS;
  const int t = thread_in_warpgroup();
  const uint32_t stage_base = staging + (H % L::STAGING_BUFFERS) * L::STAGING_BUFFER_BYTES;
  // (Likewise with a single buffer, e.g. TK_STAGING_BUFFERS_256=1: round H rewrites what round
  // H - 1 copied out.)
  if constexpr (L::STORE_ROUNDS % L::STAGING_BUFFERS != 0 || L::STAGING_BUFFERS == 1)
    named_barrier(1 + cw, kWarpgroupThreads);
  stage_round<L, H>(acc, ep, stage_base, row0, n0, M, N);
  named_barrier(1 + cw, kWarpgroupThreads);
  const int c0 = n0 + H * L::STORE_COLS;
  if (vec) {
    constexpr int kChunksPerRow = kCols * int(sizeof(OutT)) / 16;
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
  // Not in the two-strip (one-warpgroup 128-row) kernels: beside the other strip's 64
  // accumulators the granule copy-out made ptxas spill (24-32 B); they copy element by element.
  if (L::STRIPS == 1 && ep.granules) {
    copy_out_granules<kCols, kCopyRowPasses<L>>(ep.out, ep.o_s0, stage_base, row0, c0, M, N);
    return;
  }
  uint16_t* out = reinterpret_cast<uint16_t*>(ep.out);
#pragma unroll 4
  for (int i = t; i < 64 * kCols; i += kWarpgroupThreads) {
    const int r = i / kCols, c = i % kCols;
    if (row0 + r >= M || c0 + c >= N) continue;
    uint16_t v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(stage_base + mnmajor_offset(c, r, sizeof(OutT))) : "memory");
    out[int64_t(row0 + r) * ep.o_s0 + (c0 + c)] = v;
  }
}

template <class L, int H = 0, int R>
__device__ __forceinline__ void store_unit_staged(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                  uint8_t* staging, int row0, int n0, int M, int N, int cw, bool vec) {
  store_round_staged<L, H>(acc, ep, smem_u32(staging), row0, n0, M, N, cw, vec);
  if constexpr (H + 1 < L::STORE_ROUNDS) store_unit_staged<L, H + 1>(acc, ep, staging, row0, n0, M, N, cw, vec);
}

// TMA-store epilogue of one consumer warpgroup's unit: STORE_ROUNDS rounds of store_round_tma.
// Rounds are template-unrolled so every accumulator index is a constant (acc stays in registers).
// kT: the transposed box (swap-AB, store_mode kStoreTmaTransposed).
// kEnd < STORE_ROUNDS: rounds [0, kEnd) only (the deferred epilogue's immediate rounds).
template <class L, bool kT, int kEnd = L::STORE_ROUNDS, int H = 0, int R>
__device__ __forceinline__ void store_unit_tma(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                               const CUtensorMap* tm_out, const CUtensorMap* tm_out_tail,
                                               uint32_t staging, int row0, int n0, int M, int N, int cw,
                                               const EpiMarks* marks = nullptr) {
  static_assert(L::STORE_ROUNDS % L::STAGING_BUFFERS == 0 || L::STORE_ROUNDS == 1,
                "buffer order must run on across units");
  if constexpr (H < kEnd) {
    store_round_tma<L, H, kT>(acc, ep, tm_out, tm_out_tail, staging, row0, n0, M, N, cw, marks);
    store_unit_tma<L, kT, kEnd, H + 1>(acc, ep, tm_out, tm_out_tail, staging, row0, n0, M, N, cw, marks);
  }
}

// Immediate rounds [H, kEnd) of the deferred epilogue: each round's 16 pairs packed like the held
// ones (pack_pairs) and staged by 4 stmatrix.x4 on the held rounds' lane addresses instead of
// 16-32 shared stores at per-pair addresses (2026-11-26h A/B: -0.85% over 7 NT shapes,
// benchmarks/NOTES.md). TK_IMMEDIATE_STM=0 (build define, A/B): the per-pair stores
// (store_unit_tma).
#ifndef TK_IMMEDIATE_STM
#define TK_IMMEDIATE_STM 1
#endif
// Round H, packed already (pack_pairs: 16 words from packed[P0]), staged by stmatrix and stored by TMA.
template <class L, bool kT, int H, int P0 = 0, int W>
__device__ __forceinline__ void store_packed_round(const uint32_t (&packed)[W], const Epilogue<typename L::out_t>& ep,
                                                   const CUtensorMap* tm_out, uint32_t staging, int row0, int n0,
                                                   int cw, const EpiMarks* marks = nullptr) {
  static_assert(P0 + L::STORE_COLS / 4 <= W, "one round's pairs");
  tma_round<L, H, kT>(
      tm_out, staging, row0, n0, cw,
      [&](uint32_t base) { stmatrix_round<kT, P0>(base, thread_in_warpgroup(), packed); }, epi_xp(ep.experiment),
      marks);
}

// Rounds [H, kEnd), packed already: round h's words from packed[(h - kFirst) * 16].
template <class L, bool kT, int kEnd, int H = 0, int kFirst = H, int W>
__device__ __forceinline__ void store_packed_rounds(const uint32_t (&packed)[W], const Epilogue<typename L::out_t>& ep,
                                                    const CUtensorMap* tm_out, uint32_t staging, int row0, int n0,
                                                    int cw, const EpiMarks* marks = nullptr) {
  if constexpr (H < kEnd) {
    store_packed_round<L, kT, H, (H - kFirst) * L::STORE_COLS / 4>(packed, ep, tm_out, staging, row0, n0, cw, marks);
    store_packed_rounds<L, kT, kEnd, H + 1, kFirst>(packed, ep, tm_out, staging, row0, n0, cw, marks);
  }
}

template <class L, bool kT, int kEnd, int H = 0, int R>
__device__ __forceinline__ void store_rounds_packed(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                    const CUtensorMap* tm_out, const CUtensorMap* tm_out_tail,
                                                    uint32_t staging, int row0, int n0, int M, int N, int cw,
                                                    const EpiMarks* marks = nullptr) {
  static_assert(L::STORE_COLS == 64 && !L::kPartialRound, "whole 64-column rounds");
  if constexpr (!TK_IMMEDIATE_STM) {
    store_unit_tma<L, kT, kEnd>(acc, ep, tm_out, tm_out_tail, staging, row0, n0, M, N, cw, marks);
  } else if constexpr (H < kEnd) {
    uint32_t packed[L::STORE_COLS / 4];
    pack_pairs<L, H * L::STORE_COLS / 2>(acc, packed, ep, row0, n0, M, N);
    store_packed_round<L, kT, H>(packed, ep, tm_out, staging, row0, n0, cw, marks);
    store_rounds_packed<L, kT, kEnd, H + 1>(acc, ep, tm_out, tm_out_tail, staging, row0, n0, M, N, cw, marks);
  }
}

}  // namespace tk::hopper
