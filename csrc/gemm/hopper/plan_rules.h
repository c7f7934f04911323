// The measured defaults of the Hopper planner's rules (plan.h plan_gemm): each constant with the
// A/B that set it (H100/H200, benchmarks/NOTES.md) and the runtime knob that overrides it
// (dispatch.cpp). Host only, no CUDA types.
#pragma once
#include <cstdint>
#include "../../kittens/common/stream_k.h"

namespace tk::hopper {

// Long-running plans: unsplit 128 x 256 plans of at least one wave whose tiles x k tiles reach
// kLongRunWork (~1000 k tiles per SM on 132 SMs, >= ~0.5 ms) run in 2-CTA clusters multicasting
// the B tile, in raster bands of kLongRunGroupM row tiles. Such runs sit at the H200's power cap,
// where energy per GEMM sets the clock: under ncu (8192x8192x8192 NT) band 16 reads 1.23 GB from
// DRAM instead of 1.49 (cuBLAS 1.25; 8192x28672x4096 1.52 vs 2.25, cuBLAS 1.86-2.05), and the
// clusters cut the L2 -> SM sectors by a third (cuBLAS's 256x128 1x2 tiles multicast as well).
// H200 A/B (2026-11-26c, ab_env.py, one process, 5 rounds, geomean of torch.mm / ours over the
// 21 large cases with K >= 8192 or N = 28672, benchmarks/NOTES.md): band 8 unclustered 0.987,
// band 16 0.993, clusters 0.998, both 1.004; but on the shorter K = 4096 shapes (4096^3,
// 8192x4096x4096, 8192x6144x4096: 32k-98k tile k tiles) both were 0-1.6% slower, hence the bound.
constexpr int64_t kLongRunWork = 131072;
constexpr int kLongRunGroupM = 16;
// Band rule (l2_band.h, opt-in TK_HOPPER_BAND_RULE=1; 0 = off, the default until measured): a
// multi-wave unsplit plan takes the raster band with the fewest DRAM bytes in the wave-level L2
// model where that reads >= kBandRuleMinGain fewer than the plan's band (8, or kLongRunGroupM).
// Modelled (32 MB), band 8 -> rule, MB: the model step's 8192x5632x2048 181 -> 98 (band 32),
// 8192x2048x5632 213 -> 187 (1), 5632x2048x8192 218 -> 195 (1), 2048x5632x8192 256 -> 201 (16).
// Not yet measured on a GPU; band 16 on every plan read 0.988 / 0.990 in the sustained bench_model
// against 0.978-0.984 (2026-12-05c), and band 16 on the K = 4096 suite plans measured 0-4% slower
// uncapped despite fewer DRAM bytes (above; 2026-11-26g), hence off until an A/B at the cap and off it.
constexpr int kBandRule = 0;
constexpr double kBandRuleMinGain = 0.10;
// The L2 capacity the model assumes: the H200's 50 MB L2 behaves as ~32 MB in the fit to ncu
// (scripts/l2_raster_sim.py's calibration); the same for the H100 (50 MB, not calibrated).
constexpr double kL2ModelBytes = 32.0 * (1 << 20);

// all_widths == false: bn is always 128 (the fp32-output kernels are built for 128 only).
// group_m: row tiles per raster band (L2 reuse of the A rows across the band's column walk); 0:
// kLongRunGroupM for long-running plans, else 8.
// max_cluster: 0 the long-running rule above (the default), 1 no clustered 128 x 256 plans, 2
// clusters for every 128 x 256 plan of at least one wave (TK_HOPPER_CLUSTER=1|2).
// min_split_k_tiles: k tiles each split keeps at least (the prologue is amortised over them).
// fill_narrow_max_k_tiles: with fewer tiles than SMs and K <= this many k tiles, narrow the
// tile (256 -> 128 -> 64) while the tiles still fit in one wave, before splitting K (0: never).
// Split-K costs splits x M x N fp32 partials (written from fragment order) plus a reduction pass,
// whatever K is; a narrow tile costs shared-memory/L2 bytes per MAC, in proportion to K. H100
// A/B (benchmarks/NOTES.md): 1000x1001x999 52 -> 20 us, 256x8192x8192 0.83 -> 0.95x torch,
// but 256x4096x14336 (224 k tiles) 0.97 -> 0.81x, hence the K bound of 128 k tiles.
constexpr int kFillNarrowMaxKTiles = 128;
// Dynamic schedule only when a unit's mainloop hides the ticket's atomic round trip (~1 us).
constexpr int kDynamicMinKTiles = 8;
// Stream-K fill: each CTA gets at least this many k tiles (stream_k.h sk_fill_tiles).
constexpr int kFillMinIters = 16;
// The dispatcher's stream_k_fill unless TK_HOPPER_SK_FILL says otherwise.
constexpr int kStreamKFill = 0;
// Stream-K tail of 128 x 256 unsplit unclustered plans (TK_HOPPER_STREAMK; stream_k.h): 0 none;
// 1 the last grid + r tiles over all CTAs wherever the last wave idles >= 1% of the run;
// 2 the aligned last-wave split (sk_split_tail: at most kSkSplitMaxSlots CTAs per tile, each at
// least kSkSplitMinIters k tiles, where it saves kSkSplitMinGainPct percent of the run);
// 3 mode 1 where the last wave idles >= kStreamKTailMinIdlePct percent of the run and K is
// kStreamKTailMinKTiles..kStreamKTailMaxKTiles k tiles (fewer: a tile's iterations barely split);
// 4 mode 2, and where the last wave is more than half full the same split over W whole-tile CTAs
// per SM launched in turn (sk_split_tail_waves, W <= kSkWavesMax): the model step's dW GEMMs
// 5632x2048x8192 / 2048x5632x8192 (352 tiles: 2 waves + 88) modelled from 3 tile times per SM to 2
// + 2/3, the finisher adding 2 partials, but measured 0-5% slower (H100, 2026-12-05e);
// 5 mode 2, and where the last wave is more than half full the even tail (sk_tail_even: only the
// last wave's r tiles, dealt to all CTAs of the persistent grid) where the CTAs' k offsets take at
// most kSkEvenMaxOffsets values and K >= kSkEvenMinKTiles k tiles (the stream-K kernels run without
// the deferred epilogue, which short-K whole tiles would miss); either part only where its model
// saves >= kSkTailMinGainPct percent of the run: the same dW GEMMs at 2 + 2/3 tile times per SM
// with one partial add per tail tile, no generations. Mode 5 is the default: H100
// (2026-12-05e, benchmarks/results/h100_2026-12-05e_stream_k.txt), ms, none / 5: 5632x2048x8192 TN
// 0.263 / 0.250, NT 0.268 / 0.256, 2048x5632x8192 TN 0.272 / 0.256, NT 0.272 / 0.268; of the
// bench_gemm suites it re-plans only these. Modes 1 and 3 stay opt-in: H200 (2026-11-26,
// benchmarks/NOTES.md), ms, none / 1 / 2: 4097^3 NT 0.287 / 0.268 / 0.272, 6144x4097x4097 0.406 /
// 0.383 / 0.388, 4097x4097x2048 0.145 / 0.138 / 0.145, 2432x1792x4096 (133 tiles) 0.089 / 0.059 /
// 0.069; but within mode 3's bounds 3000^3 (2 waves + 24 tiles) 0.120 -> 0.127 and 2049x2055x1000
// (1 wave + 21) 0.043 -> 0.048; where the last wave is nearly full mode 1 is slower
// (8192x4096x4096, 3% idle: 0.388 / 0.403; 4096^3 0.187 / 0.196; 8192x28672x4096 2.79 / 2.86), and
// with long K its tail's CTAs, spread over K, read operands from DRAM (H100 2048x8192x8192: 0.39 ->
// 0.65 ms).
constexpr int kStreamKTail = 5;
constexpr int kStreamKTailMinIdlePct = 10, kStreamKTailMinKTiles = 16, kStreamKTailMaxKTiles = 65;
constexpr int kSkSplitMaxSlots = 4, kSkSplitMinIters = 16, kSkSplitMinGainPct = 3, kSkWavesMax = 3;
constexpr int kSkEvenMaxOffsets = 4, kSkEvenMinKTiles = 64;
// Mode 5 (both parts) only where its model saves >= this percent of the run: H200 2026-12-05f
// (benchmarks/results/h200_2026-12-05f_stream_k_default.txt), ms, none / mode 5 without the bound:
// the even tail at 2 waves + 88 tiles (11% modelled) 0.281 / 0.268, but at 6 and 10 waves + 88
// (4.8%, 3.0%) 5120x5632x4096 0.333 / 0.340 and 8192x5632x4096 0.516 / 0.529; the aligned split
// gains 1.1-1.7% where it models 10-12.5% (4096x5632x4096, 3072x6144x4096, 2048x11008x4096) and
// loses 1-2% at 6.8% (3072x14336x4096): the tail's own costs are a few percent of the run.
constexpr int kSkTailMinGainPct = 8;
// The stream-K tail of `units` whole 128 x 256 tiles on `grid` CTAs under mode `stream_k` (the
// modes above): {tail tiles, CTAs they are dealt to (0: all), CTAs to launch (0: grid)}; {0, 0}: none.
inline kittens::SkSplit stream_k_tail(int stream_k, int64_t units, int grid, int k_tiles) {
  switch (stream_k) {
    case 1: return {kittens::sk_tiles(units, grid), 0};
    case 2: return kittens::sk_split_tail(units, grid, k_tiles, kSkSplitMaxSlots, kSkSplitMinIters, kSkSplitMinGainPct);
    case 3:
      if (k_tiles >= kStreamKTailMinKTiles && k_tiles <= kStreamKTailMaxKTiles)
        return {kittens::sk_tiles(units, grid, kStreamKTailMinIdlePct), 0};
      return {0, 0};
    case 4:
      return kittens::sk_split_tail_waves(units, grid, k_tiles, kSkSplitMaxSlots, kSkSplitMinIters, kSkSplitMinGainPct,
                                          kSkWavesMax);
    case 5: {
      if (grid > 0 && 2 * (units % grid) <= grid)
        return kittens::sk_split_tail(units, grid, k_tiles, kSkSplitMaxSlots, kSkSplitMinIters, kSkTailMinGainPct);
      if (k_tiles < kSkEvenMinKTiles) return {0, 0};
      return kittens::sk_tail_even(units, grid, k_tiles, kSkEvenMaxOffsets, kSkSplitMinIters, kSkTailMinGainPct);
    }
    default: return {0, 0};
  }
}
// One consumer warpgroup per 128-row tile (gemm_layout WG_ROWS_ = 128, two 64-row strips) when
// every CTA runs a single unit, unclustered, without stream-K (nor split-K unless mask bit 2): on
// 128 x 128 tiles 8 HGMMA per k tile behind one full wait and one release, where two warpgroups
// of 4 each lose ~120 of 512 tensor cycles per k tile (pipeline_trace.py,
// 256x8192x8192: 628-635 cycles with the loads removed). H200, 3 alternating rounds, us, two / one
// warpgroup: 256x8192x8192 60.9 / 55.2, 192x8192x8192 59.9 / 53.8, 320x4096x4096 32.8 / 30.0,
// 512x4096x4096 33.2 / 30.5, 128x14336x4096 39.5 / 40.3 (benchmarks/NOTES.md).
// one_wg: a mask, bit 0: 128-wide tiles, bit 1: 64-wide (measured no faster), bit 2: split-K plans
// too (measured slower: 128x4096x14336, 4 splits of 128x128, 46.8 -> 49.2 us), bit 3: split
// 128 x 256 plans re-planned as 128 x 128 with fewer splits (below; measured slower)
// (TK_HOPPER_ONE_WG=0..63). In 2-CTA clusters multicasting the Y tile (cuBLAS's 128x128 2x1
// plan, commit 0f02a77) these tiles were slower still (benchmarks/NOTES.md). Bit 4 (default since
// 2026-12-01): the 72- and 80-wide token-width tiles (kTokenWidths below) too, where two
// warpgroups issue 4 HGMMA of 144-160 tensor cycles each per k tile behind a full wait and a
// release apiece -- but only where at least kTokenWidthOneWgMinTiles token tiles share each weight
// tile. H200 A/B (2026-12-01, 2 rounds, us, dirty / clean L2, two -> one warpgroup): four token
// tiles (N = 4096) win: 320x4096x4096 29.2 / 26.5 -> 27.7 / 24.8, 288x4096x4096 28.8 / 26.1 ->
// 26.6 / 23.9, 300x4096x8192 49.0 / 46.6 -> 46.1 / 40.8, 288x4096x8192 48.1 / 45.5 -> 46.1 / 39.8,
// 270x4096x4096 28.7 / 25.6 -> 27.2 / 24.1; two token tiles (N = 8192, 129-144 tokens) lose:
// 129x8192x8192 51.1 / 48.9 -> 63.2 / 56.5, 144x8192x8192 52.1 / 49.5 -> 63.5 / 57.0,
// 129x8192x4096 30.2 / 29.0 -> 34.0 / 30.9, 136x8192x4096 32.1 / 28.2 -> 35.5 / 30.1
// (benchmarks/NOTES.md). Bit 5 (A/B): bit 4 at any token-tile count (49: the 2026-11-29b opt-in).
// Bit 6 (default since 2026-12-03c; 17 = off): the unswapped unsplit 128 x 144 plans (kOddWidths
// bit 1, e.g. 384x6144x4096, 256x8960x8960) on one warpgroup, with ring staging by
// kRingStagingMinKTiles. H200, 2 rounds, dirty L2, 17 -> 81: 256x8960x8960 67.3 -> 64.9 us,
// 384x6144x8192 60.5 -> 59.5; 256x9000x9008, 384x6144x4096, 330x6144x4096 within 0.3%.
constexpr int kOneWarpgroupWidths = 81;
constexpr int kTokenWidthOneWgMinTiles = 3;
// 128 x 192 tiles (TK_HOPPER_BN192=0|1|2, default 2). wgmma's n may be any multiple of 8 up to
// 256 and the epilogue works in 64-column rounds, so 192 costs 3 rounds and 40-KB stages (4 of
// them). bn192 = 1: kernel columns in 129..192 take a 192-wide tile instead of a 256-wide one
// (160 tokens: 37% of a 256-wide tile computed for nothing); 2: also a part-filled single wave
// of unsplit 128 x 256 tiles re-planned as 128 x 192 tiles in whichever orientation needs at
// least 10% fewer waves x width (256x11008x4096: 86 swapped 128x256 tiles on 132 SMs -> 116
// unswapped 128x192 tiles). H200 A/B, bf16 NT, us (2026-11-25h, benchmarks/NOTES.md), 0 -> 2:
// 160x28672x4096 94.6 -> 83.8, 192x14336x4096 48.5 -> 45.6, 256x11008x4096 47.4 -> 40.4,
// 512x6144x4096 47.1 -> 40.5, 320x8192x8192 88.3 -> 74.1, 176x4096x14336 (4 K splits) 55.4 -> 50.8.
// bn192 = 3 (the default): also split 128 x 256 plans re-planned by waves x width x k tiles per
// unit (128 x 192, or swapped 128 x 160 up to 320 tokens), and unsplit ones in any number of waves
// up to 1024 tokens. H200 A/B, us, 2 -> 3 (benchmarks/results/h200_2026-11-26_plan_ab.txt):
// 384x4096x14336 86.8 -> 74.4, 384x4096x28672 161 -> 143, 256x6144x16384 102 -> 92,
// 320x4096x14336 72.0 -> 66.8 (160 wide), 384x14336x4096 95.3 -> 78.9, 640x8192x8192 175 -> 141.
constexpr int kWidth192 = 3;
// Widths that are not a multiple of 64 (TK_HOPPER_ODD_WIDTHS, a mask, default 15): for mid-M
// problems an unsplit 128-row plan is re-planned with the candidate of least waves x tile width
// when that is at least 10% less, as cuBLAS picks its tiles (H200, torch.profiler: 128x160 at
// 320x8192x8192, 144 weights wide at 384x6144x4096). H200 A/B, bf16 NT, us (benchmarks/NOTES.md):
// bit 0: swapped 128 x 160 tiles for up to 320 tokens (2 x 160 on wgmma's n side): 320x8192x8192
// 74.6 -> 68.3, 300x14336x4096 92.5 -> 69.8; bit 1: unswapped 128 x 144 in place of an unswapped
// plan in as many waves (329..384 tokens at N = 6144): 384x6144x4096 39.8 -> 37.3 (2026-11-25j).
// Measured and dropped (2026-11-25j): 96 / 112 wide (384x4096x4096 30.2 -> 31.6, 256x14336x4096
// 49.4 -> 61.5, 128x14336x4096 41.1 -> 40.0: within the spread), swapped 144 (272x8192x8192: as 160), and pairs
// multicasting Y (112: 66.2, 144: 37.0, swapped 160: 68.0 -> 71.4). The last epilogue round is
// narrower (gemm_layout::kPartialRound); the kernels need a K-major Y, so the dispatcher allows
// an orientation only for its layouts (odd_layouts: bit 0 swapped, i.e. A row-major; bit 1
// unswapped, i.e. B column-major). Bit 2 (2026-11-26f): unswapped 128 x 224 tiles (4 epilogue
// rounds, the last 32 columns) in place of an unsplit 128 x 256 plan up to 512 tokens. H200 A/B,
// us (benchmarks/results/h200_2026-11-26f_ab.txt; 2-3 rounds, dirty L2 / clean): 256x14336x4096
// 112 swapped 128x256 -> 128 tiles, 49.3 -> 46.5 / 50.9 -> 46.9; 200x14336x4096 48.8 -> 46.1 /
// 50.0 -> 46.1; 2 waves: 256x28672x4096 104.9 -> 92.4, 200x28672x4096 98.6 -> 91.7,
// 512x14336x4096 96.5 -> 89.8, 448x14336x4096 97.1 -> 90.1, 512x14336x8192 182.4 -> 172.0;
// 4 waves: 512x28672x4096 189.3 -> 175.2.
// Bit 5 (2026-12-02g): a split swapped 128 x 192 plan of <= 160 tokens (one token tile) as swapped
// 128 x 160 tiles with the same splits. H200 A/B, 3 rounds, NT, dirty L2, us, forced 128 x 160:
// 4 splits 160x4096x14336 48.0 -> 47.0, 144x4096x14336 47.6 -> 46.5, 136x4096x14336 47.4 -> 46.2,
// 160x4096x11008 39.9 -> 39.2; 2 splits 160x8192x14336 82.3 -> 79.5, 144x8192x14336 81.2 -> 78.6,
// 136x8192x14336 80.9 -> 78.6; 8 splits 144x2048x14336 32.3 -> 31.4, 160x2048x14336 (against its
// unswapped 128 x 128 x 4) 32.4 -> 31.9.
// Bit 6 (2026-12-02h): bit 4's one-token-tile 64-row plan also in place of a split plan (long K):
// H200, 2 rounds, NT, dirty L2, us, split 128 x 160 x 2 -> forced 64 x 144: 144x8192x14336 77.6 ->
// 72.1, 136x8192x14336 77.2 -> 71.8, 144x8192x11008 62.6 -> 57.3. Bit 7 (2026-12-02h): swapped
// 64 x 160 tiles (one token tile, a 32-column last round) for 145..160 tokens, under the same fill
// bound (kTokenRows64MinFill4). Both, H200 A/B (3 rounds, us, 63 -> 255): 160x8192x14336 79.8 ->
// 75.0, 160x8192x8192 51.2 -> 47.4, 145x8192x8192 51.3 -> 46.2, 152x8192x4096 29.8 -> 26.3,
// 160x8192x11008 64.1 -> 58.9, 144x8192x11008 64.0 -> 58.4; 10 of 10 faster (benchmarks/NOTES.md).
// Bit 8 (2026-12-02h): swapped 64 x 176 tiles (a 48-column last round) for 161..176 tokens, likewise.
// H200 A/B (3 rounds, us, 255 -> 511), 9 of 9 faster: 161x8192x8192 50.8 -> 46.8, 168x8192x8192 50.9
// -> 47.4, 176x8192x8192 51.1 -> 47.4, 172x8192x4096 29.9 -> 27.2, 165x8192x11008 65.2 -> 62.1,
// 176x8192x14336 82.7 -> 80.7 (split 128 x 192 x 2 before), 168x8192x14336 81.3 -> 80.2.
// Bit 9 (2026-12-03): swapped 64 x 192 tiles for 177..192 tokens, likewise. H200 A/B (NT, dirty L2,
// us, 511 -> 1023; 3 rounds): 177x8192x8192 51.4 -> 48.0, 192x8192x8192 52.0 -> 48.5, 188x8192x4096
// 30.2 -> 28.1, 184x8192x11008 67.0 -> 63.8, 184x8192x14336 83.7 -> 82.0, 192x8192x14336 83.4 -> 82.3
// (split 128 x 192 x 2 before); 2 rounds: 180x7168x14336 77.4 -> 76.1, 190x6400x11008 59.5 -> 57.9,
// 185x8448x4096 30.6 -> 28.1, but 192x8192x28672 157.4 -> 161.7; fp16 3 of 3 faster.
// Bit 10 (2026-12-03): swapped 64 x 224 tiles for 193..224 tokens in place of split plans only (split
// swapped 128 x 256 x 2 there; the unsplit 128 x 128 plans of K <= 11008 stay: 1.10-1.13x torch.mm).
// H200 A/B (3 rounds, NT, dirty L2, us, 1023 -> 2047), 6 of 6 faster in every round: 224x8192x14336
// 92.2 -> 84.4, 208x8192x14336 92.6 -> 84.6, 193x8192x14336 91.0 -> 83.2, 224x7168x14336 87.8 -> 80.6,
// 216x6400x11008 67.0 -> 59.5, 224x8192x28672 175.9 -> 166.5.
// Bit 11 (2026-12-03d): bits 1 and 2 past 512 tokens (plan.h's odd_widths block), for mid-size
// products whose 128 x 192 / 256 tiles part-fill their last wave (with a column-major B: F.linear's
// weight). H200, forced tiles, 2 rounds, NT, dirty L2, us (benchmarks/results/h200_2026-12-03d_ab.txt),
// 144 wide: 1536x1536x1536 (96 128 x 192 tiles -> 132) 18.8 -> 17.1, 1536x1536x4096 36.6 -> 32.5,
// 1280x1792x4096 36.4 -> 32.4, 768x3072x4096 37.5 -> 33.0, 3072x1536x4096 (144 128 x 256 tiles in 2
// waves -> 264) 86.6 -> 59.7, 2560x1792x4096 87.0 -> 59.9; 224 wide: 1024x3584x4096 46.7 -> 43.0,
// 2048x1792x4096 46.2 -> 43.2, 4096x1536x4096 90.2 -> 81.7, 2048x3072x4096 89.9 -> 83.0,
// 1280x2560x4096 46.2 -> 42.3, 2048x2560x2048 46.9 -> 43.0: 12 of 12 faster; as the default, 11 of 12
// (2 rounds, 2047 -> 8191): 3072x1536x1024 27.8 -> 21.4, 2048x2560x8192 167.6 -> 151.2, but 700x3100x2000
// 27.2 -> 30.3 (its 6200-B output rows are copied out, not TMA-stored: hence out_tma). Only in place
// of plans of at most 2 waves (those measured; bit 13 below takes the 224 candidate further).
constexpr int kOddWidthsMidM = 2048;
constexpr int kOddWidthsMidMMaxWaves = 2;
// Bit 12 (2026-12-03d): bit 10's 64 x 224 token tile (193..224 tokens) also in place of an unsplit
// unswapped 128 x 128 plan (two token tiles, 32..63 token rows computed for nothing), under the same
// fill bound. H200, forced 64 x 224, 2 rounds, NT, dirty L2, us: 200x8192x8192 52.1 -> 49.6,
// 208x8192x8192 52.1 -> 50.8, 216x8192x8192 52.9 -> 51.4, 208x8192x4096 30.9 -> 28.7,
// 208x8192x11008 72.8 -> 66.3: 5 of 5 faster; as the default (2 rounds, 2047 -> 8191): 193x8192x8192
// 51.3 -> 49.0, 208x8192x8192 51.5 -> 49.8, 224x8192x8192 51.7 -> 50.0, 208x8192x11008 70.5 -> 65.6.
constexpr int kOddWidthsRows64Unsplit224 = 4096;
// Bit 13 (2026-12-03e): bit 2's 224 candidate past 512 tokens without bit 11's wave and output-row
// limits (B's pitch still whole sectors, F.linear's layout; long-running 128 x 256 plans keep their
// clusters). H200, forced 128 x 224 against the plan (128 x 256), 2 rounds, NT, dirty L2, us
// (benchmarks/results/h200_2026-12-03e_ab.txt), 16 of 16 faster: 4097^3 277.8 -> 258.1 (4.41 -> 4.80x
// torch.mm), 1024x14336x4096 185.0 -> 174.6, 1024x14336x8192 363.4 -> 333.7, 2048x7168x4096 186.9 ->
// 174.9, 4096x3584x4096 186.2 -> 179.6, 6144x3584x4096 279.8 -> 267.1, 8192x1792x4096 186.8 -> 174.8,
// 3072x3072x4096 135.2 -> 127.8, 2200x4000x4096 137.3 -> 127.6, 2048x5120x1024 40.5 -> 39.6,
// 3072x7168x1024 74.6 -> 74.0; output rows copied out: 2049x8191x4096 241.1 -> 225.4, 1000x14337x4096
// 200.4 -> 185.0, 3000x3001x2048 87.7 -> 79.5, 1500x6150x4096 148.4 -> 135.1, 4097x6150x8192 670.4 ->
// 654.5. (The 144 candidate stays within bit 11's limits: past 2 waves it beat 224 by 1-3% only
// where it needs a wave more, and lost by 8-22% elsewhere.)
constexpr int kOddWidthsMidM224 = 8192;
// Bit 14 (2026-12-03e): a one-wave unswapped 144 plan (bit 1) whose output rows are copied out (not
// TMA-stored) only from kOddWidths144UnalignedMinKTiles k tiles: its epilogue is the whole tail
// there. H200 (2026-12-03d call 4, 2 rounds, us, bit 1 off / on, 128 x 192 otherwise):
// 360x6150x520 17.6 / 22.9, 384x6150x2048 28.6 / 32.4, 384x6150x4096 43.8 / 45.0, 336x6150x8192
// 72.2 / 66.8 (as 700x3100x2000 under bit 11: 27.2 -> 30.3).
constexpr int kOddWidths144Unaligned = 16384;
constexpr int kOddWidths144UnalignedMinKTiles = 128;
// Bits 15 and 16 (2026-12-04): with a row-major B (torch.mm's NN) no unswapped odd width exists, so
// past 320 tokens a row-major A's orientation is taken instead (swapped: Y = A, K-major; the 224 /
// 144 tiles then run along M), where A's pitch keeps whole sectors, by the same >= 10% waves x width
// test: bit 15 bit 13's 224 candidate (in place of a 128 x 256 plan that is not long-running, any
// number of waves), bit 16 bit 11's 144 candidate (plans of at most kOddWidthsMidMMaxWaves waves,
// TMA-stored output rows, in as many waves). H200, NN, 2 rounds, dirty L2, us, 32767 -> default
// (benchmarks/results/h200_2026-12-04_ab.txt), 10 of 10 faster: 224: 4097^3 280.2 -> 262.9 (3.75 ->
// 4.03x torch.mm), 3000x3001x2048 96.8 -> 92.1, 2200x4000x1030 44.5 -> 42.7, 4096x1536x4096 90.1 ->
// 82.4, 2048x2560x2048 47.1 -> 43.6, 400x14336x4096 90.2 -> 83.7; 144: 3072x1536x4096 87.3 -> 60.2,
// 2560x1792x4096 86.7 -> 59.8, 3000x1536x2000 47.5 -> 34.3, 1536^3 18.7 -> 16.9 (with bit 15 alone
// 79.4, 78.9, 44.2, 18.3).
constexpr int kOddWidthsSwappedMid224 = 32768;
constexpr int kOddWidthsSwappedMid144 = 65536;
// Bit 17 (2026-12-04): past 512 tokens, in place of a 128 x 256 plan that is not long-running, the
// 128 x 192 candidate (a multiple of 64: any layout, either orientation) and the 128 x 160 one (where
// the 224 one may go: bit 13 unswapped, bit 15 swapped) join the waves x width choice, each where
// its Y's pitch keeps whole sectors, their costs weighted by kMid192Weight / 20 and kMid160Weight / 20
// (at equal waves x width, 192 ran 3.7% slower than 256: 2048x5632x2048 71.2 -> 73.8 us). H200,
// forced tiles against the plan (128 x 224 there), 2 rounds, dirty L2, us, NT / NN (benchmarks/results/h200_2026-12-04_ab.txt): 192: 3072x2048x4096 81.3 / 81.9
// -> 72.3 / 72.4, 2048x3072x1024 26.8 / 27.2 -> 24.3 / 24.4, 3072x3072x1024 36.7 / 37.4 -> 32.6 /
// 32.9, 6144x1536x4096 122.4 / 125.5 -> 109.7 / 110.3, 1536x6144x4096 125.6 / 125.4 -> 113.0 / 113.4,
// 1536x4096x1024 27.1 / 27.6 -> 25.4 / 24.9; 160: 2048x2560x4096 80.4 / 80.4 -> 63.8 / 63.5; where
// their waves x width is not lower, slower (2560x2560x4096: 82.3 -> 103.3 / 91.7). As the default
// (`=131071` -> default, 2 rounds): 32 of 32 re-planned NT / NN / TN cases faster, e.g. 2560x2048x4096
// NT 79.9 -> 62.9, 3072x1536x4096 TN 86.4 -> 68.8, 3000x3001x2048 NN 93.5 -> 78.1, 2048x2560x512 NN
// 19.0 -> 15.8, 1100x4001x256 NN 31.2 -> 22.9; fp16 8 of 8.
constexpr int kOddWidthsMid192160 = 131072;
constexpr int kMid192Weight = 21, kMid160Weight = 22;
constexpr int kOddWidths = 262143;
// Bit 3 of odd_widths (default on since 2026-11-29b): swapped tiles sized to the token count.
// For 129..320 tokens with a row-major A, an unsplit plan of at most one wave is re-planned as
// swapped 128 x 72 or (from 257 tokens) 128 x 80 tiles, the narrower that fits one wave, when that gives no fewer tiles,
// at least half a wave, and >= 5% less 128 + w than the plan's bm + bn (the operand bytes each CTA
// streams per k tile: these plans are bound by per-SM operand ingress, not by the tensor pipe).
// cuBLAS runs such tiles (torch.profiler, 2026-11-29: 128x80 at 320x4096x4096, 128 CTAs, where
// ours ran 96 one-warpgroup 128x128 CTAs). H200 A/B (2026-11-29b, 2 rounds, us, dirty / clean L2,
// 7 -> 15): 320x4096x4096 (80) 29.6 / 28.6 -> 29.4 / 26.7, 288x4096x4096 (72) 29.5 / 28.4 -> 28.9 /
// 26.3, 129x8192x8192 (72) 51.6 / 50.7 -> 50.5 / 48.4. Measured and dropped the same day: 40 and
// 48 wide (129x4096x4096 20.3 -> 23.8, 192x4096x4096 20.2 -> 23.1, 160x4096x4096 20.2 -> 23.8,
// against 64-row 64 x 128 tiles) and 104 (200x8192x8192 52.5 / 51.2 -> 54.6 / 51.7,
// 192x8192x8192 52.0 -> 54.1): the narrow two-warpgroup kernels stream operands more slowly per SM
// than their byte count says, so only the widths that won are built (benchmarks/NOTES.md).
inline constexpr int kTokenWidths[] = {72, 80};
// 80 only from 257 tokens (where four 80-wide token tiles fill a wave at N ~ 4096): at two token
// tiles it lost in a second A/B (H200 2026-11-29b, 3 rounds, us, dirty / clean L2, 15 -> 7):
// 160x8192x8192 54.4 / 50.6 against 52.0 / 50.9, 152x8192x8192 51.6 / 49.4 against 52.2 / 50.9 (the
// same run: 136x8192x8192 (72) 51.2 / 48.5 against 52.1 / 50.7, 129x8192x8192 51.7 / 48.2 against
// 52.0 / 50.6, 320x4096x4096 29.0 / 26.5 against 29.8 / 28.3).
constexpr int kTokenWidth80MinM = 257;
// Bit 4 of odd_widths (default since 2026-12-01b): for 129..144 tokens with a row-major A, an
// unsplit plan of at most one wave is re-planned as swapped 64 x 144 tiles -- one token tile
// holding every token, 64 weight rows per CTA -- where those fill 3/4 of a wave to one
// (kTokenRows64MinFill4: N in 6273..8448 on 132 SMs). cuBLAS's plan at 129x8192x8192 (H200
// 2026-12-01, Nsight Compute: nvjet_sm90_tst_64x136_64x8_2x1, 45.4 us against our 128 x 72
// two-token-tile plan's 60.3 / 50.8 on two / one consumer warpgroups): each CTA reads its own
// weights once, where two 72-wide token tiles have two CTAs read every weight tile. H200 A/B
// (2026-12-01b, 2 rounds, us, dirty / clean L2, 128 x 72 -> 64 x 144): 129x8192x8192 56.1 / 49.1
// -> 44.5 / 41.1, 136x8192x8192 62.1 / 48.9 -> 45.4 / 42.3, 144x8192x8192 62.8 / 49.0 -> 45.7 /
// 42.2, 129x8192x4096 31.1 / 28.3 -> 25.8 / 23.7, 136x8192x4096 30.7 / 28.4 -> 25.8 / 23.5; but at
// 79 tiles (144x5000x4096) 21.3 / 19.6 -> 22.7 / 21.5, hence the fill bound; at 100 and 112 tiles
// 136x6400x4096 27.2 / 26.5 -> 23.9 / 22.0, 136x7168x4096 27.9 / 27.1 -> 24.4 / 22.4.
constexpr int kTokenRows64MinM = 129;
constexpr int kTokenRows64MinFill4 = 3;  // the 64-row token tiles fill >= kTokenRows64MinFill4 / 4 of a wave
// The same for 145..256 tokens (swapped 64 x 256 tiles, one token tile, unclustered or in 2-CTA
// clusters sharing the token tile) was built and measured slower (H200 2026-12-01b, 2 rounds, us,
// dirty / clean L2, default -> unclustered -> pairs): 256x8192x8192 53.6 / 51.9 -> 56.5 / 55.3 ->
// 63.2 / 63.0, 200x8192x8192 52.9 / 51.3 -> 55.5 / 52.8 -> 76.7 / 79.1, 160x8192x8192 52.7 / 50.9
// -> 53.9 / 51.9 -> 88.3 / 93.4, 256x8192x4096 30.7 / 30.0 -> 32.4 / 33.7 -> 35.3 / 35.9: one
// 256-token tile streams up to (64 + 256) x 128 B per k tile into each SM against 256 x 128 B for
// the default's one-warpgroup 128 x 128 tile, yet at 160 tokens (64 + 160 rows through its exact
// token tail box) it still lost 2% (benchmarks/NOTES.md).
constexpr int kTokenWidthsMinM = 129, kTokenWidthsMaxM = 320;
// 1: a swapped, unsplit 128 x 128 plan of at most one wave (16-bit output) runs unswapped: the
// tile count is the same (ceil(M / 128) x ceil(N / 128) either way) and the token tile is then
// the A operand. H200 A/B (2026-11-25h, TK_HOPPER_TILE=0:128:128:1:1, 3 rounds, us, swapped ->
// unswapped): 256x8192x8192 56.9 -> 54.9, 192x8192x8192 55.1 -> 54.1, 160x8192x8192 54.4 -> 52.9,
// 256x8192x4096 31.7 -> 31.0, 128x14336x4096 40.6 -> 40.3, 200x6144x4096 29.7 -> 29.6
// (TK_HOPPER_UNSWAP128=0 for the swapped plan).
// 2: also a swapped 128 x 256 plan that splits K (193..256 tokens after the bn192 rules) is
// re-planned as unswapped 128 x 128 tiles with their own, fewer splits (in one wave) when the fp32
// partials that saves (splits x M x N x 4 B; all of them if the 128 x 128 tiles need no split)
// cost more than the longer mainloop per CTA. The model, fitted on 9 shapes (H200 2026-12-02f,
// 3 rounds, NT, dirty L2, us, 128 x 256 -> forced 128 x 128): a 128 x 128 k tile takes 11/20 of a
// 128 x 256 one (32 KB per 512 tensor cycles against 48 KB per 1024, near the per-SM delivery
// limit of 2026-11-26), and a 128 x 256 k tile (~0.83 us a unit) costs as much as ~1.4 MB of
// partials written and read back (~0.6 us per MB). Switched: 256x2048x14336 (8 -> 4 splits) 36.4
// -> 33.4, 224x2048x14336 35.7 -> 33.1, 256x4096x11008 (4 -> 2) 45.5 -> 44.6, 256x4096x14336 53.3
// -> 53.1, 256x8192x14336 (2 -> unsplit) 97.9 -> 93.9; kept: 224x4096x14336 52.4 -> 52.8,
// 200x4096x14336 51.5 -> 52.2, 256x4096x28672 99.5 -> 104.0, 224x8192x14336 96.3 -> 96.3
// (benchmarks/NOTES.md; TK_HOPPER_UNSWAP128=1 for the old plans).
// 3: also a split swapped 128 x 192 plan of 129..192 tokens. There the 128 x 128 plan's second token
// tile is mostly TMA zero fill, so the 256 model does not carry over; fitted on its own (H200
// 2026-12-02g, 12 forced-tile A/Bs, 3 rounds, NT, dirty L2; each at half the splits): gain =
// 0.70 us per MB of partials saved - 0.117 us per extra k tile per CTA, i.e. a break-even of
// ~171 KB per extra k tile; signs right on all 12. Switched, us (128 x 192 -> 128 x 128):
// 192x1024x14336 (16 -> 8 splits) 26.9 -> 23.6, 160x1024x14336 26.2 -> 23.4, 192x2048x14336
// (8 -> 4) 33.6 -> 32.8, 160x2048x14336 32.9 -> 32.5; kept: 144x2048x14336 32.5 -> 32.4 (model
// +0.02: a tie), 192x4096x14336 (4 -> 2) 49.0 -> 52.0, 192x2048x28672 51.2 -> 52.7, 192x8192x14336
// (2 -> unsplit) 84.6 -> 93.1 (benchmarks/NOTES.md; TK_HOPPER_UNSWAP128=2 for the old plans).
constexpr int kUnswapOneWave128 = 3;
constexpr int64_t kUnswapSplitBytesPerKTile256 = 1400 << 10;  // partial bytes worth one 128 x 256 k tile
static_assert(kUnswapSplitBytesPerKTile256 % 20 == 0, "plan_gemm prices a 128 x 128 k tile at 11/20 of it");
constexpr int64_t kUnswapSplitBytesPerKTile192 = 171 << 10;   // partial bytes worth one extra k tile
// Against 128 x 160 tiles (odd_widths bit 5, <= 160 tokens), whose k tile is 0.018-0.025 us cheaper
// than the 128 x 192 one (2026-12-02g, kOddWidths above): 0.117 + ~0.02 us per extra k tile at 0.70 us per MB.
// It keeps 160x2048x14336 on 128 x 160 x 8 splits (31.9 us, against 32.4 as 128 x 128 x 4).
constexpr int64_t kUnswapSplitBytesPerKTile160 = 196 << 10;
// Ring staging (gemm_layout RING_STAGING_): the one-warpgroup 128 x 128 kernels of unsplit plans
// with one unit per CTA put the epilogue's staging boxes in the idle stage ring, 7 stages instead
// of 6, from this many k tiles on (K >= 8192 until 2026-12-03b). H200 A/B (2026-12-02d, dirty L2, NT, 3-4 rounds,
// median us, separate / ring): 256x8192x8192 54.0 / 52.8 and 54.7 / 53.7, 192x8192x8192 53.5 /
// 52.0, 200x8192x8192 52.6 / 51.5, 160x8192x8192 52.0 / 50.4; shorter K lost: 128x14336x4096
// 39.6 / 40.5 (64 k tiles); clean L2 even. Since 2026-12-03 also the 64-row token tiles (64 x 144..224,
// plan.h kTokenRows64Width...: 8 stages instead of 7 at 144 / 160, 7 instead of 6 at 176 / 192, 6
// instead of 5 at 224), H200 A/B (3 rounds, dirty L2, us, separate / ring): 168x8192x14336 80.4 /
// 75.7, 184x8192x14336 81.5 / 78.3, 192x8192x11008 64.7 / 61.4, 176x8192x8192 48.1 / 46.5,
// 136x8192x14336 72.9 / 71.6, 160x8192x14336 74.4 / 73.9. TK_HOPPER_RING_STAGING=0|1
// (dispatch.cpp knob_plan) forces it off / on for every such plan.
// Since 2026-12-03b from K = 6144 for the 128 x 128 kernels (H200, 3 rounds, dirty L2, NT, us,
// separate / ring: 256x8192x6144 42.1 / 41.2, 224x8192x6144 41.5 / 40.4, 240x8192x6144 41.6 /
// 40.8, 208x8192x6144 41.2 / 40.4, 256x6400x6144 39.9 / 39.7; at K = 4096 256x8192x4096 30.2 /
// 29.7 but 128x14336x4096 39.4 / 40.7, 200x8192x2048 19.1 / 19.3) and from K = 2048 for the token
// tiles (172x8192x4096 27.2 / 26.4, 188x8192x4096 27.6 / 26.7, 160x6400x2048 15.8 / 15.1,
// 140x8448x2048 16.8 / 16.6, 150x8192x6144 35.0 / 35.2; at K = 1024 192x8192x1024 12.6 / 13.1).
constexpr int kRingStagingMinKTiles = 96;
constexpr int kRingStagingMinKTilesRows64 = 32;
// 1: 64-row rule 1's tiles (plan_gemm) run as 2-CTA clusters multicasting the weight tile (the
// default until 2026-11-28e); 0: unclustered. H200 (2026-11-28e, forced tiles on one build with
// the warp-wide producer in unclustered kernels, 2 rounds, NT, median us, dirty / clean L2, pairs
// -> unclustered): 96x4096x4096 19.5 / 19.5 -> 17.9 / 16.8, 128x4096x4096 19.7 / 19.6 -> 17.4 /
// 16.8, 192x4096x4096 23.2 / 22.5 -> 20.4 / 19.0, 256x4096x4096 23.1 / 22.6 -> 20.7 / 19.3,
// 128x8192x8192 44.4 / 40.8 -> 43.1 / 40.3 (benchmarks/NOTES.md).
constexpr int kBm64RowPairs = 0;
// 1: every GEMM call launched as a programmatic dependent (dispatch.cpp, TK_HOPPER_PDL); 0: only
// after a re-pitch copy.
constexpr int kDependentLaunch = 0;
// 1: an unswapped 128 x 64 plan (where the narrowing ends for ~1k problems: two consumer
// warpgroups of 64 x 64, the least efficient wgmma shape) runs as unsplit 64 x 128 tiles (one
// warpgroup, 64 x 128 wgmma) when those fit one wave (and, if the plan splits K, fill 3/8 of
// it) and the output is TMA-stored (or, bit 2 below, copied out by granules). H200 (2026-11-26k,
// forced tiles, 3 rounds, NT, us, 128 x 64 -> 64 x 128): 1024^3 11.1 -> 10.2, 768^3 9.4 -> 8.9,
// 1024x1024x4096 25.2 -> 21.1, 1024x1024x8192 43.5 -> 34.8, 512x2048x2048 15.8 -> 14.0, 2048x512x2048 16.1 ->
// 14.0, 512x1024x1024 (128 x 64 x 2 splits) 12.3 -> 9.8; two waves lose (1536x1024x1024 14.1 ->
// 15.8, 2000x1000x1000 18.8 -> 25.2), hence the bound (benchmarks/NOTES.md).
// Bit 1 (kMid64Pairs): those 64 x 128 tiles run as 2-CTA clusters sharing the Y (B) tile by
// multicast when Y's line pitch splits 32-B sectors (plan_gemm's split_sectors: e.g. K = 1000 or
// 2040 for a K-major B) and the tiles fill 3/4 of the SMs: such rows cost our kernel ~2-5 us at
// 128 tiles (an aggregate L2 effect: 72 tiles of 768x768x1000 barely pay it), and the pair reads
// half of them. H200 (2026-11-27, 3 rounds, us, plan -> pairs): NT 1000^3 13.3 -> 11.8,
// 1024x1024x1000 13.1 -> 12.0, 1024x1024x2040 19.7 -> 16.3, 2048x512x2040 20.7 -> 16.7, NN 1000^3
// 13.8 -> 12.5; where Y's rows are aligned pairs lose (1024^3 NT 10.5 -> 11.0, 1024x1024x1000 NN
// 10.5 -> 11.3), as at 72 tiles (768x768x1000 NT 10.9 -> 11.6), hence both conditions. The same
// holds for 128 x 256 plans of a wave or more (kSplitSectorClusters).
constexpr int kMid64Pairs = 2;
// Bit 2 (kMid64UnalignedRows): also where the 16-bit output's rows are not 16-B aligned (N % 8 != 0,
// e.g. 1001), copied out of the staging box by 16-B granules (copy_out_rows.cuh copy_out_granules).
// Slower with the element-wise copy-out (1000x1001x999 16.8 -> 17.9 us, 2026-11-26k) and even
// with the first granule form (2026-11-27c); with the row passes (2026-11-27d) it gains. H200
// (2026-11-27e, 3 rounds, median us, TK_HOPPER_MID64=3 -> 7): 512x1001x999 NT 20.4 -> 15.2, NN
// 20.1 -> 15.7 (was 128 x 64 x 2 splits), 1024x1001x4096 NT 25.5 -> 22.9, NN 32.1 -> 31.4,
// 1000x1001x1000 NN 16.1 -> 15.5, 1000x1001x999 NT 16.4 -> 16.5, NN 17.6 -> 16.8; one loss,
// 1003x1001x520 (pairs, 9 k tiles) NT 11.3 -> 12.2, NN 12.8 -> 13.0 (benchmarks/NOTES.md).
constexpr int kMid64UnalignedRows = 4;
// ... and only from this many k tiles: one warpgroup copies out a 64 x 128 tile's rows where two
// copy out a 128 x 64 tile's, a cost the mainloop hides only when it is long enough. H100
// (2026-11-27f, 3 rounds, NT, median us, TK_HOPPER_MID64 3 / 5 / 7): 1003x1001x520 (9 k tiles)
// 11.7 / 12.4 / 13.4; at 16 k tiles even (1000x1001x1000 15.5 / 16.2 / 15.3, 900x1001x1000
// 14.8 / 16.0 / 15.2, 1024x1001x1000 15.8 / 16.4 / 15.3), at 32 ahead (1003x1001x2040 23.1 / 23.4 / 20.3).
constexpr int kMid64UnalignedRowsMinKTiles = 16;
constexpr int kMid64 = 1 | kMid64Pairs | kMid64UnalignedRows;
// 1: unsplit 128 x 256 plans of a wave or more also run as 2-CTA clusters sharing the Y tile
// when Y's line pitch splits sectors (as kMid64Pairs). H200 (2026-11-27, 2 rounds, NT, ms,
// plan -> clusters): 4096x4096x4104 0.238 -> 0.200, 4096x8192x2040 0.233 -> 0.216.
constexpr int kSplitSectorClusters = 1;
// A line pitch (bytes) that is 16-B but not 32-B aligned: every other 128-B TMA box row then
// starts mid-sector (launch_impl.cuh operand_promo).
inline bool splits_sectors(int64_t pitch_bytes) { return pitch_bytes % 32 != 0; }
// plan_gemm's split_sectors: bit 0 A's line pitch splits sectors, bit 1 B's (the pitches the
// kernel reads: a re-pitched copy's are whole 128-B lines).
inline int split_sectors_mask(int64_t lda_bytes, int64_t ldb_bytes) {
  return (splits_sectors(lda_bytes) ? 1 : 0) | (splits_sectors(ldb_bytes) ? 2 : 0);
}
// split_sectors of contiguous 16-bit operands: A M x K row-major (pitch 2K bytes) or, a_mn, column-major
// (2M); B N x K K-major (2K) or, b_mn, K x N row-major (2N). A pitch TMA can describe (16-B multiple) is
// read as it is, any other is re-pitched into copies of whole lines (dispatch.cpp describe_operand).
inline int split_sectors_contiguous(int64_t M, int64_t N, int64_t K, bool a_mn, bool b_mn) {
  auto split = [](int64_t pitch_bytes) { return pitch_bytes % 16 == 0 && splits_sectors(pitch_bytes); };
  return (split(2 * (a_mn ? M : K)) ? 1 : 0) | (split(2 * (b_mn ? N : K)) ? 2 : 0);
}
// F.linear's layout (A M x K, B N x K, both K-major).
inline int split_sectors_nt(int64_t K) { return split_sectors_contiguous(0, 0, K, false, false); }
// plan_gemm's out_tma: a row-major 16-bit output of N columns at `addr` can be TMA-stored (16-B
// aligned row pitch and address; launch_impl.cuh's tma_store test for an untransposed output).
inline bool output_tma_storable(int64_t N, bool out_16bit, uintptr_t addr = 0) {
  return out_16bit && N % 8 == 0 && addr % 16 == 0;
}
// L2 evict_first policy for B (the weights) when M <= this: B is then streamed about once, and
// its lines, marked first to evict, recycle each other instead of evicting (and writing back)
// the rest of L2. H200 A/B (benchmarks/NOTES.md, triton do_bench, i.e. after a 256 MB zero_
// that leaves L2 full of dirty lines): 64x8192x8192 47.5 -> 43.6 us, 256x4096x4096 26.1 -> 22.4,
// 256x14336x4096 54.7 -> 51.5; 8192x4096x4096 unchanged, with A too 3-7% slower.
constexpr int kEvictFirstMaxM = 256;

}  // namespace tk::hopper
