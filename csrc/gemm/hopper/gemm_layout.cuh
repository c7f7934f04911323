// gemm_layout: one Hopper GEMM kernel configuration (tile, stages, staging buffers, deferred and
// early epilogue rounds, register budgets) and the shared-memory layout derived from it; the
// kernel itself is gemm_kernel.cuh.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "../../kittens/hopper/st.cuh"
#include "../../kittens/hopper/warpgroup.cuh"
#include "kernel_variants.h"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// One kernel configuration. The kernel computes out = X (rows x K) . Y (K x cols); the host
// maps A.B or (swap-AB) B^T.A^T onto it (plan.h). XMn/YMn: operand stored MN-contiguous.
// CLUSTER_ = 2: two CTAs of a cluster take vertically adjacent tiles of one column and share the
// Y (B) tile: each loads half of it and multicasts it to both (half the L2->SM traffic for Y).
// STREAM_K_: the plan's last sk_tiles tiles run by k iteration (kittens/common/stream_k.h: the
// tail of the last wave, or every tile in fill mode).
// BM_ = 64: one consumer warpgroup, smaller stages, so a deeper ring (skinny plans, plan.h; 64,
// 128 or, swapped for 129..144 tokens, 144 columns: plan.h kTokenRows64Width).
// WG_ROWS_ = 128 (with BM_ = 128): one consumer warpgroup owns the whole tile as two 64-row strips
// (8 HGMMA per k tile instead of 4 in each of two warpgroups), so one barrier/issue sequence per
// k tile serves 512 tensor cycles (GemmPlan::wg_rows; 128 x 128 tiles, one unit per CTA).
// RING_STAGING_ (A/B, TK_HOPPER_RING_STAGING=1; one unit per CTA only, launch_impl.cuh checks): the
// epilogue's staging boxes lie in the stage ring, idle once the CTA's only unit is consumed, so
// the ring gets one stage more (128 x 128: 7 instead of 6; 64-row token tiles 64 x 144 / 160: 8
// instead of 7, 64 x 176 / 192: 7 instead of 6, 64 x 224: 6 instead of 5).
// SWIGLU_ 1: the SwiGLU epilogue (epilogue_swiglu.cuh): besides the packed gate | up product the unit
// stores h = silu(gate) * up; 128 x 256 unclustered tiles, K-major X and Y, no deferred rounds.
// SWIGLU_ 2: the SwiGLU backward epilogue (epilogue_swiglu_grad.cuh): the unit's product is dL/dh,
// and it stores dL/dgate and dL/dup from it and the gate | up tiles the producer loads into the
// ring after the unit's k tiles (GRAD_STAGES stages); 128 x 256 unclustered tiles, K-major X.
// SWIGLU_ 3: the RoPE epilogue (epilogue_rope.cuh): the unit's product is rotated by position
// (heads of 128 columns) before the ordinary epilogue stores it, with the cos / sin tables the
// producer loads into one ring stage after the unit's k tiles; 128 x 256 unclustered tiles, K-major operands.
// SWIGLU_ 4: the K-parts mainloop (producer_loads.cuh issue_stage): X is up to three row-major
// matrices side by side along K and Y up to three row-major matrices stacked along K, each k tile of
// both loaded through its part's maps (part ends: Epilogue::sk_tiles / sk_parts); the ordinary
// epilogue; 128 x 256 unclustered tiles, row-major X and Y (a fused projection's dX).
// SWIGLU_ 5: the M-parts mainloop (producer_loads.cuh unit_loads): X is up to three MN-major matrices
// stacked along M (whole 128-row tiles each but the last), each unit's X loaded through its part's
// map (part ends in row tiles: Epilogue::sk_tiles / sk_parts); the ordinary epilogue; 128 x 256
// unclustered tiles, MN-major X and Y (the joint weight gradient of layers sharing an input, read
// from their separate output gradients: [G_0 | G_1 | G_2]^T . X).
template <typename T, typename OutT, bool XMn, bool YMn, int BN_, int CLUSTER_ = 1, bool STREAM_K_ = false,
          int BM_ = 128, int WG_ROWS_ = 64, bool RING_STAGING_ = false, int SWIGLU_ = 0>
struct gemm_layout {
  using in_t = T;
  using out_t = OutT;
  static constexpr bool kAMn = XMn, kBMn = YMn, kStreamK = STREAM_K_;
  static_assert(!STREAM_K_ || CLUSTER_ == 1, "stream-K tail only for unclustered kernels");
  static_assert(BM_ == 128 || (BM_ == 64 && !STREAM_K_), "64-row tiles: no stream-K tail");
  static_assert(WG_ROWS_ == 64 || (WG_ROWS_ == 128 && BM_ == 128 && !STREAM_K_), "two strips: 128-row tiles only");
  static_assert(!RING_STAGING_ || ((WG_ROWS_ == 128 || (BM_ == 64 && BN_ > 128)) &&
                                   (CLUSTER_ == 1 || (WG_ROWS_ == 128 && BN_ == 128))),
                "ring staging: one-warpgroup 128-row tiles and 64-row token tiles, unclustered (or 128 x 128 pairs)");
  static constexpr bool kRingStaging = RING_STAGING_;
  static constexpr bool kSwiGLU = SWIGLU_ == 1, kSwiGLUGrad = SWIGLU_ == 2, kRope = SWIGLU_ == 3, kKParts = SWIGLU_ == 4,
                        kMParts = SWIGLU_ == 5;
  static_assert(SWIGLU_ != 5 || (BM_ == 128 && BN_ == 256 && CLUSTER_ == 1 && !STREAM_K_ && WG_ROWS_ == 64 && XMn &&
                                 YMn && !RING_STAGING_ && sizeof(OutT) == 2),
                "M-parts mainloop: 128 x 256 unclustered tiles, MN-major X and Y, 16-bit output");
  static_assert(SWIGLU_ != 4 || (BM_ == 128 && BN_ == 256 && CLUSTER_ == 1 && !STREAM_K_ && WG_ROWS_ == 64 && !XMn &&
                                 YMn && !RING_STAGING_ && sizeof(OutT) == 2),
                "K-parts mainloop: 128 x 256 unclustered tiles, row-major X and Y, 16-bit output");
  static_assert(SWIGLU_ != 2 || (BM_ == 128 && BN_ == 256 && CLUSTER_ == 1 && !STREAM_K_ && WG_ROWS_ == 64 && !XMn &&
                                 !RING_STAGING_ && sizeof(OutT) == 2),
                "SwiGLU backward epilogue: 128 x 256 unclustered tiles, K-major X, 16-bit output");
  static_assert(SWIGLU_ != 3 || (BM_ == 128 && BN_ == 256 && CLUSTER_ == 1 && !STREAM_K_ && WG_ROWS_ == 64 && !XMn &&
                                 !YMn && !RING_STAGING_ && sizeof(OutT) == 2),
                "RoPE epilogue: 128 x 256 unclustered tiles, K-major operands, 16-bit output");
  static_assert(SWIGLU_ != 1 || (BM_ == 128 && BN_ == 256 && CLUSTER_ == 1 && !STREAM_K_ && WG_ROWS_ == 64 && !XMn &&
                             !YMn && !RING_STAGING_ && sizeof(OutT) == 2),
                "SwiGLU epilogue: 128 x 256 unclustered tiles, K-major operands, 16-bit output");
  // STRIPS: 64-row accumulator strips per consumer warpgroup; the epilogue runs once per strip.
  static constexpr int BM = BM_, BN = BN_, CONSUMERS = BM_ / WG_ROWS_, STRIPS = WG_ROWS_ / 64, CLUSTER = CLUSTER_;
  using a_tile = st_operand<BM, XMn>;
  using b_tile = st_operand<BN, YMn, CLUSTER>;
  static constexpr int BK = a_tile::kK;
  // k tiles (BK wide) per pipeline stage, each tile's A then B box (SUB_BYTES) one after the other.
  // 2 for 64 x 64 tiles: one full/empty round trip per two k tiles, whose barrier costs a 64 x 64
  // k tile (128 tensor cycles) cannot hide (benchmarks/micro/mainloop_rate.cu, H100: 337 -> 200
  // cycles per k tile in a 2-CTA cluster; H200 128x4096x4096 22.7 -> 19.2 us, benchmarks/NOTES.md;
  // 64 x 128 tiles measured even or slower, so 1 there). A unit's k range must then be whole stages
  // or end at K (the tile past K arrives zero-filled): 64-row plans never split K (launch_impl.cuh
  // checks) unless built with TK_BM64_SPLIT=1 (kernel_variants.h). TK_BM64_KT (build define, A/B): 1 or 2 for
  // every 64-row kernel.
#ifndef TK_BM64_KT
#define TK_BM64_KT 0
#endif
  // TK_BM128_KT (build define, A/B): k tiles per stage of the 128 x 128 kernels (split-K ranges
  // are then whole stages: kittens::split_k_range's align).
#ifndef TK_BM128_KT
#define TK_BM128_KT 1
#endif
  // TK_NARROW_KT (build define, A/B): k tiles per stage of the 72- and 80-wide token-width
  // kernels (plan_rules.h kTokenWidths), whose k tile is 288-320 tensor cycles: 2 makes one full/empty
  // round trip per two k tiles, as the 64 x 64 kernels take. H200 2026-12-01d (one warpgroup, the
  // default form there; 2 rounds, dirty L2, us, 1 -> 2): 288x4096x4096 26.9 -> 28.7, 320x4096x4096
  // 27.0 -> 29.2, 300x4096x8192 44.5 -> 48.8, 288x4096x8192 44.5 -> 47.9: stays 1.
#ifndef TK_NARROW_KT
#define TK_NARROW_KT 1
#endif
  static constexpr int KT = BM_ == 64    ? (TK_BM64_KT > 0 ? TK_BM64_KT : BN_ == 64 ? 2 : 1)
                            : BN_ == 128 ? TK_BM128_KT
                            : BN_ < 128 && BN_ % 64 != 0 ? TK_NARROW_KT
                                         : 1;
  static_assert(KT == 1 || !STREAM_K_, "several k tiles per stage: not in the stream-K kernels");
  static constexpr int SUB_BYTES = a_tile::kBytes + b_tile::kBytes;
  static constexpr int STAGE_BYTES = KT * SUB_BYTES;
  // TMA-store epilogue (16-bit outputs): each consumer warpgroup stages 64 rows x 64 columns
  // (one 128-B swizzled box) per round, BN / 64 rounds per unit, alternating between two
  // buffers so that filling one overlaps the TMA read of the other.
  static constexpr bool kTmaStore = sizeof(OutT) == 2;
  // A width that is not a multiple of 64 (144, 160, 224) ends in a narrower round of
  // LAST_COLS columns: transposed (swap-AB) through its own TMA box (tm_out_tail: the round's
  // columns are the box's outer dimension), untransposed copied out by rows (epilogue.cuh
  // store_round_tma). Built with a K-major Y only (TMA boxes of any multiple of 8 rows).
  static constexpr int STORE_COLS = 64, STORE_ROUNDS = (BN + STORE_COLS - 1) / STORE_COLS;
  static constexpr int LAST_COLS = BN - STORE_COLS * (STORE_ROUNDS - 1);
  static constexpr bool kPartialRound = LAST_COLS != STORE_COLS;
  // One warpgroup over two strips with a narrow last round: the token widths (72, 80) and, opt-in
  // (plan_rules.h kOneWarpgroupWidths bit 6), 144.
  static_assert(!kPartialRound || (!YMn && (CLUSTER_ == 1 || BM_ == 64) && !STREAM_K_ &&
                                   (BM_ == 64 || WG_ROWS_ == 64 || BN_ < 128 || BN_ == 144)),
                "narrow last rounds: unclustered tiles (or 64-row token tiles) with a K-major Y only (one warpgroup over "
                "two strips: token widths and 144 only)");
  static constexpr int STAGING_BUFFER_BYTES = 64 * STORE_COLS * 2;
  // Staging buffers per consumer warpgroup; a round waits for the TMA read of the store issued
  // STAGING_BUFFERS rounds before it. TK_STAGING_BUFFERS_256 (A/B build define): 4 for the
  // 128 x 256 tile (no wait within a unit, one stage fewer).
#ifndef TK_STAGING_BUFFERS_256
#define TK_STAGING_BUFFERS_256 2
#endif
  // 192-wide tiles (3 rounds): one buffer per round, so the buffer of round H (H % buffers) is the
  // same in every unit -- with 2 the next unit's round 0 would reuse the buffer of round 2, whose
  // store may still be reading it (tma_round waits for all but the newest buffers - 1 stores;
  // store_unit_tma asserts the multiple).
  static constexpr int STAGING_BUFFERS = (BM_ == 128 && BN_ == 256) ? TK_STAGING_BUFFERS_256 : STORE_ROUNDS == 3 ? 3 : 2;
  static constexpr int STRIP_STAGING_BYTES = kTmaStore ? STAGING_BUFFERS * STAGING_BUFFER_BYTES : 0;  // per 64-row strip
  static constexpr int STAGING_BYTES = RING_STAGING_ ? 0 : CONSUMERS * STRIPS * STRIP_STAGING_BYTES;  // beside the ring
  // Deferred epilogue (epilogue.cuh pack_unit): the last HELD_ROUNDS rounds of a unit wait in
  // registers (16 words per round and thread) for the next unit's mainloop. ptxas fits 2 beside
  // the 128 accumulators of a 64 x 256 strip; 3 spilled (TK_HELD_ROUNDS: A/B build define).
  // Not in the (opt-in) stream-K kernels, whose tail state leaves no registers for them.
#ifndef TK_HELD_ROUNDS
#define TK_HELD_ROUNDS 2
#endif
  // Not with two strips either (their plans run one unit per CTA: nothing to defer under).
  // Nor with a narrow last round (pack_unit / sts_held store whole 64-column rounds).
  // Nor in the SwiGLU kernels (their h rounds need the gate and up halves at once); the RoPE
  // kernel's rotated product takes the ordinary epilogue, held rounds included.
  static constexpr int HELD_ROUNDS = STREAM_K_ || STRIPS > 1 || kPartialRound || kSwiGLU || kSwiGLUGrad ? 0
                                     : STORE_ROUNDS < TK_HELD_ROUNDS ? STORE_ROUNDS : TK_HELD_ROUNDS;
  static constexpr int FIRST_HELD_ROUND = STORE_ROUNDS - HELD_ROUNDS;
  static constexpr bool kDeferred = kTmaStore && HELD_ROUNDS > 0;
  // The SwiGLU kernels' epilogue rounds: STORE_ROUNDS of the gate | up product, then the h rounds
  // (epilogue_swiglu.cuh); their last SWIGLU_HELD of them wait in registers for the next unit's
  // mainloop, as the deferred rounds do (their own path: kDeferred stays false).
  // TK_SWIGLU_HELD (build define, A/B): 0, 2 or 4 held rounds.
#ifndef TK_SWIGLU_HELD
#define TK_SWIGLU_HELD 4
#endif
  // The SwiGLU backward's (epilogue_swiglu_grad.cuh) with GRAD_HELD > 0: d_gate, d_up of each
  // column round in turn (2 STORE_ROUNDS), the last GRAD_HELD of them held as well.
  // TK_SWIGLU_GRAD_HELD (build define, A/B): 0, 2 or 4 held rounds. 2 (H100 2026-12-06j, swiglu_grad_bench at
  // bench_model's shapes, two alternating rounds, us per call, 2 / 0): 318.4 / 332.4 and 341.5 / 351.3.
#ifndef TK_SWIGLU_GRAD_HELD
#define TK_SWIGLU_GRAD_HELD 2
#endif
  static constexpr int GRAD_HELD = kSwiGLUGrad ? TK_SWIGLU_GRAD_HELD : 0;
  static constexpr int EPI_ROUNDS = STORE_ROUNDS + (kSwiGLU ? 2 : 0) + (GRAD_HELD > 0 ? STORE_ROUNDS : 0);
  static constexpr int SWIGLU_HELD = kSwiGLU ? TK_SWIGLU_HELD : 0, SWIGLU_FIRST_HELD = EPI_ROUNDS - SWIGLU_HELD;
  static constexpr int GRAD_FIRST_HELD = EPI_ROUNDS - GRAD_HELD;
  static_assert(SWIGLU_HELD % 2 == 0 && SWIGLU_HELD <= EPI_ROUNDS, "whole buffer pairs of held rounds");
  static_assert(GRAD_HELD % 2 == 0 && GRAD_HELD <= EPI_ROUNDS, "whole column rounds (d_gate and d_up) held");
  static constexpr int HELD_WORDS = kDeferred ? HELD_ROUNDS * STORE_COLS / 4
                                    : SWIGLU_HELD + GRAD_HELD > 0 ? (SWIGLU_HELD + GRAD_HELD) * STORE_COLS / 4 : 1;
  // Early k tiles (deferred epilogue with immediate rounds: BN 192, 256): the unit's rounds all
  // packed into 16-bit pairs (the held ones and the immediate ones), the next unit's first
  // EARLY_KTILES k tiles are issued on the freed accumulators before the immediate rounds are
  // stored, so the tensor pipe works through those stores. TK_EARLY_KTILES (build define, A/B): 0 off.
// H200 A/B 2026-11-26i (benchmarks/NOTES.md): -0.9% geomean over 7 NT shapes, -1.6..-2.3% at
// K = 2048. The 128 x 256 kernels fit it without spills since the consumers' unit id waits out
// the mainloop in shared memory (gemm_kernel.cuh unit_slot).
#ifndef TK_EARLY_KTILES
#define TK_EARLY_KTILES 2
#endif
  static constexpr int IMMEDIATE_WORDS = FIRST_HELD_ROUND * STORE_COLS / 4;  // packed pairs of the immediate rounds
  static constexpr int EARLY_KTILES = kDeferred && KT == 1 && STRIPS == 1 && FIRST_HELD_ROUND > 0 ? TK_EARLY_KTILES : 0;
  // The last wgmma group drained before the next unit's decode (kernel_variants.h TK_WAIT_FIRST).
  static constexpr bool WAIT_FIRST = TK_WAIT_FIRST == 1 || (TK_WAIT_FIRST == 2 && EARLY_KTILES == 0);
  // As many stages as fit beside the staging buffer in the sm_90 per-block limit (227 KB), at
  // most 16: BM 128: BN 256 -> 4 (48 KB each), BN 192 -> 4 (40 KB), BN 160 -> 4 (36 KB), BN 128 -> 6, BN 64 -> 8; BM 64:
  // BN 128 -> 8, BN 64 -> 6 (two k tiles per stage, 32 KB).
  static constexpr int kFit = (232448 - 1024 - 512 - STAGING_BYTES) / STAGE_BYTES;
  static constexpr int STAGES = kFit < 16 ? kFit : 16;
  static constexpr int THREADS = (CONSUMERS + 1) * kWarpgroupThreads;
  // Dynamic schedule: ring of unit ids the producer hands to the consumers (full/empty barriers).
  static constexpr int SCHED_SLOTS = 4;
  static constexpr int BARRIER_BYTES = 2 * STAGES * 8 + SCHED_SLOTS * (2 * 8 + 4) + 16 + 2 * CONSUMERS * 4 * 4;  // + the unit-grid constants, a unit id and ticket count per consumer warp
  static_assert(BARRIER_BYTES <= 512, "barriers outgrow their reserve in kFit");
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGING_BYTES + BARRIER_BYTES + 1024;  // +1024: alignment
  // setmaxnreg budgets. The one-warpgroup 128 x 128 pairs (kernel_variants.h TK_WG128_CLUSTER, one
  // consumer warpgroup: 128 x (40 + 248) registers fit) take TK_WG128_CLUSTER_REGS: at 232 they
  // spilled 40 B, at 248 nothing (ptxas, 2026-12-01d).
#ifndef TK_WG128_CLUSTER_REGS
#define TK_WG128_CLUSTER_REGS 248
#endif
  static constexpr int PRODUCER_REGS = 40,
                       CONSUMER_REGS = CLUSTER_ == 2 && CONSUMERS == 1 && STRIPS == 2 ? TK_WG128_CLUSTER_REGS : 232;
  static_assert(kWarpgroupThreads * (PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) <= 65536, "register file");
  // Tail boxes (K-major operands; Y only when not multicast in slices): a box partly past the
  // tensor arrives far more slowly than a whole one (benchmarks/micro/tma_stream.cu, H200: a
  // 128-token tile with 64 rows past M 47 -> 65 us of operand delivery, 42 us as a 64-row box), so
  // the last tile's rows come through a map with an exact box and the slot's other rows keep stale
  // data, which only reaches outputs past M / N (never stored).
  // In a cluster Y goes out in slices; the 64-row token tiles (wider than 128: kernel_variants.h
  // TK_BM64_ODD_CLUSTER) load the slice that ends past the tokens as an exact box and skip the
  // slices wholly past them (producer_loads.cuh), the other clustered kernels whole zero-filled boxes.
  static constexpr bool kYSliceTail = CLUSTER_ > 1 && BM_ == 64 && BN_ > 128 && !YMn;
  // (The RoPE kernel's tail maps carry its cos / sin tables: a last column tile past N takes whole,
  // zero-filled Y boxes.)
  // (The K-parts kernel's X tail map carries X's second part: a last row tile past M takes whole,
  // zero-filled X boxes. The M-parts kernel's X is MN-major, which has no tail map: the slot carries
  // X's second part there too.)
  static constexpr bool kXTail = !XMn && !kKParts, kYTail = !YMn && (CLUSTER_ == 1 || kYSliceTail) && !kRope;
  static constexpr int Y_SLICE_ROWS = BN_ / CLUSTER_;  // rows of Y each CTA of a cluster loads
  static_assert(STAGES >= 3, "pipeline too shallow");
  // The SwiGLU backward's gate and up values (epilogue_swiglu_grad.cuh): one ring stage per 64-column
  // round after the unit's k tiles, holding a 64 x 64 box of gate and one of up per consumer warpgroup.
  static constexpr int GRAD_STAGES = kSwiGLUGrad ? STORE_ROUNDS : 0, GRAD_BOX_BYTES = 64 * 64 * int(sizeof(T));
  static_assert(!kSwiGLUGrad || 2 * CONSUMERS * GRAD_BOX_BYTES <= STAGE_BYTES, "a round's gate / up boxes fit a stage");
  // The RoPE epilogue's tables (epilogue_rope.cuh): one ring stage per unit after its k tiles,
  // holding a 64 x 64 box of cos and one of sin (head dimensions 0..63, the tile's rows) per
  // consumer warpgroup.
  static constexpr int ROPE_STAGES = kRope ? 1 : 0, ROPE_BOX_BYTES = 64 * 64 * int(sizeof(T));
  static_assert(!kRope || 2 * CONSUMERS * ROPE_BOX_BYTES <= STAGE_BYTES, "the cos / sin boxes fit a stage");
  static_assert(STAGES * STAGE_BYTES >= CONSUMERS * STRIPS * STRIP_STAGING_BYTES, "staging fits in the ring");
};

}  // namespace tk::hopper
