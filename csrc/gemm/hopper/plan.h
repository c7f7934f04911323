// Per-shape kernel choice for the Hopper GEMM (host only, no CUDA types; exported to Python as
// torch_tk._C.hopper_plan so the heuristic is tested and documented in one place).
//
// The kernel computes a BM x BN output tile per work unit (BM = 128, or 64 below); units are (tile, K split) pairs walked
// by a persistent grid of min(units, SMs) CTAs. Choices, measured on an H100/H200 (see
// benchmarks/NOTES.md):
//  - swap_ab: when M (tokens) is small and N is larger, compute C^T = B^T A^T so the weight rows
//    fill wgmma's 64-row M side and the few tokens become wgmma's narrow N side -- except a
//    one-wave unsplit 128 x 128 plan, which runs unswapped (kUnswapOneWave128: same tiles, faster),
//    and a split 128 x 256 one whose partials cost more than unswapped 128 x 128 tiles' mainloop.
//  - bn: the narrowest of 64 / 128 / 256 that covers the kernel's N (256 for large shapes: fewer
//    shared-memory bytes per MAC than 128); narrower still for small problems (fill_narrow below);
//    192 under the bn192 rules (kWidth192) where it cuts the columns computed for nothing or the
//    work per SM (waves x width x k tiles per unit: split and 1-2-wave mid-M plans), and widths
//    that are not a multiple of 64 (kOddWidths: swapped 160 for up to 320 tokens, 144).
//  - cluster: 2 for long-running 128 x 256 problems (kLongRunWork: two CTAs share the B tile
//    through TMA multicast, halving its L2 -> shared-memory traffic; a unit is then a column of 2
//    tiles), which also take a taller raster band (group_m 16): less DRAM and L2 traffic, hence
//    less energy per GEMM where the power cap sets the clock.
//  - splits: K is split (fp32 partials + a fixed-order reduction: deterministic) only when there
//    are fewer tiles than SMs, so that every SM streams operands.
//  - bm = 64 (one consumer warpgroup, deeper ring) for skinny problems (rules in plan_gemm):
//    65..256 tokens unswapped (unclustered since 2026-11-28e, kBm64RowPairs), e.g. 128x4096x4096
//    -> 128 tiles of 64x64 (cuBLAS's tile there) instead of 64 tiles of 128x64 x 2 K splits: H100
//    28.7 -> 24.9 us (as CTA pairs); or swapped, when it removes a K split (64x8192x8192 65.0 ->
//    62.6 us; at K <= 8192 also when the unsplit tiles fill 3/8 of the SMs: 64x4096x4096 20.3 ->
//    17.8 us). A 64 x 256
//    tile (one warpgroup) measured 2-24% slower than 128-row tiles, hence the width bound.
//  - dynamic: more units than CTAs (clusters) and >= kDynamicMinKTiles k tiles per unit: CTAs take
//    units in raster order from an atomic counter (gemm_kernel.cuh) instead of a fixed stride.
#pragma once
#include <algorithm>
#include <cstdint>
#include "../../kittens/common/stream_k.h"
#include "kernel_variants.h"

namespace tk::hopper {

struct GemmPlan {
  bool swap_ab;  // kernel rows are N, kernel columns are M
  int bm;        // 128 (two consumer warpgroups) or 64 (one)
  int bn;        // 64, 128, 192 (bn192 below), 256, or 144, 160, 224 (odd_widths), 72, 80 (kTokenWidths)
  int splits;    // >= 1
  int cluster;   // CTAs per cluster: 1 or 2
  int group_m;   // grouped raster: row tiles per band (kittens::grouped_tile)
  bool dynamic;  // units handed out by an atomic counter (needs a zeroed int from the caller)
  int64_t units; // ceil(tiles_m / cluster) * tiles_n * splits
  int grid;      // CTAs launched (persistent)
  int sk_tiles;  // last tiles run as a stream-K tail (kittens/common/stream_k.h); 0: none
  int sk_parts;  // CTAs the tail's k iterations are dealt to; 0: all (grid)
  bool fused_split;  // split-K summed in the GEMM kernel (ready flags) instead of a second kernel
  int evict_first;   // operands loaded under an L2 evict_first policy: bit 0 A, bit 1 B
  int wg_rows;       // rows per consumer warpgroup: 64, or 128 (bm 128: one warpgroup, two strips)
};

constexpr int kPlanBK = 64;

// A forced tile choice (A/B only: TK_HOPPER_TILE, dispatch.cpp): replaces the rules' swap, tile
// and splits; cluster 2 is kept only where a clustered kernel exists (64-row tiles at most 128
// wide, or 128 x 256, unsplit; 128 x 128 in a TK_WG128_CLUSTER build). The rest of
// the plan (units, grid, schedule, warpgroup rows) is derived as usual. Invalid choices (see valid_tile) leave the plan to the rules.
struct TileChoice {
  bool swap_ab;
  int bm, bn, splits, cluster;
};

// The widths that are not a multiple of 64 (kOddWidths, kTokenWidths below), built for 128-row
// tiles; 144 also for 64-row ones (kTokenRows64Width below).
constexpr int kTokenRows64Width = 144;
inline bool odd_width(int bn) {
  return bn == 72 || bn == 80 || bn == 144 || bn == 160 || bn == 224;
}

// odd_layouts: as for plan_gemm's odd widths (unclustered, and only in an orientation whose Y is
// K-major).
inline bool valid_tile(const TileChoice& t, bool all_widths, int odd_layouts = 3) {
  const bool odd = odd_width(t.bn) && t.cluster == 1 && (odd_layouts & (t.swap_ab ? 1 : 2)) != 0;
  const bool widths = t.bm == 64 ? (t.bn == 64 || t.bn == 128 || (t.bn == kTokenRows64Width && odd && t.splits == 1))
                                 : t.bm == 128 && (t.bn == 64 || t.bn == 128 || t.bn == 192 || t.bn == 256 || odd);
  return widths && (all_widths || t.bn == 128) && t.splits >= 1 && t.splits <= 16 && (t.cluster == 1 || t.cluster == 2);
}

inline int64_t plan_tiles(int64_t rows, int64_t cols, int bm, int bn) {
  return ((rows + bm - 1) / bm) * ((cols + bn - 1) / bn);
}

// Halves the tile width bn (down to 64) while the tiles stay fewer than SMs and the halved
// width's still fit one wave.
inline int narrow_width(int64_t rows, int64_t cols, int bm, int bn, int num_sms) {
  auto narrower = [](int w) { return w == 192 ? 128 : w / 2; };
  while (bn > 64 && plan_tiles(rows, cols, bm, bn) < num_sms && plan_tiles(rows, cols, bm, narrower(bn)) <= num_sms)
    bn = narrower(bn);
  return bn;
}

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
// Stream-K tail of 128 x 256 unsplit unclustered plans (TK_HOPPER_STREAMK; stream_k.h): 0 none
// (the default); 1 the last grid + r tiles over all CTAs wherever the last wave idles >= 1% of
// the run; 2 the aligned last-wave split (sk_split_tail: at most kSkSplitMaxSlots CTAs per tile,
// each at least kSkSplitMinIters k tiles, where it saves kSkSplitMinGainPct percent of the run);
// 3 mode 1 where the last wave idles >= kStreamKTailMinIdlePct percent of the run and K is
// kStreamKTailMinKTiles..kStreamKTailMaxKTiles k tiles (fewer: a tile's iterations barely split).
// None is the default: H200 (2026-11-26, benchmarks/NOTES.md), ms, none / 1 / 2: 4097^3 NT 0.287
// / 0.268 / 0.272, 6144x4097x4097 0.406 / 0.383 / 0.388, 4097x4097x2048 0.145 / 0.138 / 0.145,
// 2432x1792x4096 (133 tiles) 0.089 / 0.059 / 0.069; but within mode 3's bounds 3000^3 (2 waves +
// 24 tiles) 0.120 -> 0.127 and 2049x2055x1000 (1 wave + 21) 0.043 -> 0.048; where the last wave
// is nearly full mode 1 is slower (8192x4096x4096, 3% idle: 0.388 / 0.403; 4096^3 0.187 / 0.196;
// 8192x28672x4096 2.79 / 2.86), and with long K its tail's CTAs, spread over K, read operands
// from DRAM (H100 2048x8192x8192: 0.39 -> 0.65 ms).
constexpr int kStreamKTail = 0;
constexpr int kStreamKTailMinIdlePct = 10, kStreamKTailMinKTiles = 16, kStreamKTailMaxKTiles = 65;
constexpr int kSkSplitMaxSlots = 4, kSkSplitMinIters = 16, kSkSplitMinGainPct = 3;
// The stream-K tail of `units` whole 128 x 256 tiles on `grid` CTAs under mode `stream_k` (the
// modes above): {tail tiles, CTAs they are dealt to (0: all)}; {0, 0}: none.
inline kittens::SkSplit stream_k_tail(int stream_k, int64_t units, int grid, int k_tiles) {
  switch (stream_k) {
    case 1: return {kittens::sk_tiles(units, grid), 0};
    case 2: return kittens::sk_split_tail(units, grid, k_tiles, kSkSplitMaxSlots, kSkSplitMinIters, kSkSplitMinGainPct);
    case 3:
      if (k_tiles >= kStreamKTailMinKTiles && k_tiles <= kStreamKTailMaxKTiles)
        return {kittens::sk_tiles(units, grid, kStreamKTailMinIdlePct), 0};
      return {0, 0};
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
constexpr int kOneWarpgroupWidths = 17;
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
constexpr int kOddWidths = 31;
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
constexpr int kUnswapOneWave128 = 2;
constexpr int64_t kUnswapSplitBytesPerKTile256 = 1400 << 10;  // partial bytes worth one 128 x 256 k tile
// Ring staging (gemm_layout RING_STAGING_): the one-warpgroup 128 x 128 kernels of unsplit plans
// with one unit per CTA put the epilogue's staging boxes in the idle stage ring, 7 stages instead
// of 6, from this many k tiles on (K >= 8192). H200 A/B (2026-12-02d, dirty L2, NT, 3-4 rounds,
// median us, separate / ring): 256x8192x8192 54.0 / 52.8 and 54.7 / 53.7, 192x8192x8192 53.5 /
// 52.0, 200x8192x8192 52.6 / 51.5, 160x8192x8192 52.0 / 50.4; shorter K lost: 128x14336x4096
// 39.6 / 40.5 (64 k tiles); clean L2 even. TK_HOPPER_RING_STAGING=0|1 (launch_impl.cuh) forces it
// off / on for every such plan.
constexpr int kRingStagingMinKTiles = 128;
// Whether a one-warpgroup 128 x 128 plan runs the ring-staging kernel: unsplit, one unit per CTA,
// and K long enough (kRingStagingMinKTiles). forced: -1 the rule, 0 never, 1 at every K.
inline bool ring_staging(const GemmPlan& p, int K, int forced) {
  const bool one_unit = p.wg_rows == 128 && p.units <= p.grid && !p.dynamic && p.splits == 1;
  const bool long_k = (int64_t(K) + kPlanBK - 1) / kPlanBK >= kRingStagingMinKTiles;
  return one_unit && (forced == 1 || (forced < 0 && long_k));
}
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
// split_sectors of contiguous 16-bit operands in F.linear's layout (A M x K, B N x K, both
// K-major): their own pitch (2K bytes) when TMA can describe it, else the copies' whole lines.
inline int split_sectors_nt(int64_t K) { return (2 * K) % 16 == 0 && splits_sectors(2 * K) ? 3 : 0; }
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
// bm64 (default on; TK_HOPPER_BM64=0 turns it off): the two 64-row tile rules below.
// stream_k_fill: fewer 128 x 256 tiles than SMs run as stream-K over all SMs (stream_k.h fill
// mode) -- 1: when the plan is already 128 x 256 unsplit (e.g. 112 tiles on 132 SMs); 2: also
// instead of narrower tiles or split-K, when the kernel's columns exceed 128.
inline GemmPlan plan_gemm(int M, int N, int K, int num_sms, bool all_widths = true, int max_cluster = 0,
                          int group_m = 0, int min_split_k_tiles = 4,
                          int fill_narrow_max_k_tiles = kFillNarrowMaxKTiles, bool allow_dynamic = true,
                          int stream_k = kStreamKTail, bool fuse_split = false, bool bm64 = true,
                          int bm64_bn = 0, int swap = -1, int stream_k_fill = 0, bool bm64_unsplit = false,
                          int one_wg = kOneWarpgroupWidths, int bn192 = kWidth192,
                          int unswap128 = kUnswapOneWave128, const TileChoice* force = nullptr,
                          int odd_widths = kOddWidths, int odd_layouts = 3, int mid64 = kMid64,
                          bool out_tma = true, int split_sectors = 0, int sector_clusters = kSplitSectorClusters) {
  GemmPlan p{};
  p.wg_rows = 64;
  p.evict_first = M <= kEvictFirstMaxM ? 2 : 0;
  // swap: -1 the rule below, 0 never, 1 always (A/B knob TK_HOPPER_SWAP).
  const bool heuristic_swap = swap >= 0 ? swap == 1 : (M <= 256 && N > M);
  p.swap_ab = heuristic_swap;
  int rows = p.swap_ab ? N : M, cols = p.swap_ab ? M : N;
  const int k_tiles = static_cast<int>((int64_t(K) + kPlanBK - 1) / kPlanBK);
  const bool narrow = all_widths && k_tiles <= fill_narrow_max_k_tiles;
  // K splits for `tiles` tiles: only below one wave, so that every SM streams operands.
  auto splits_for = [&](int64_t tiles) {
    return tiles >= num_sms ? 1
                            : std::max(1, std::min({static_cast<int>(num_sms / tiles),
                                                    k_tiles / std::max(1, min_split_k_tiles), 16}));
  };
  // Tile width and K splits for row tiles of height bm.
  auto shape = [&](int bm, int& bn, int& splits) {
    bn = cols <= 64 ? 64 : cols <= 128 ? 128 : (bn192 >= 1 && cols <= 192) ? 192 : 256;
    if (!all_widths) bn = 128;
    if (narrow) bn = narrow_width(rows, cols, bm, bn, num_sms);
    splits = splits_for(plan_tiles(rows, cols, bm, bn));
  };
  p.bm = 128;
  shape(128, p.bn, p.splits);
  // 64-row rule 1: 65..256 tokens (K within the narrowing bound) stay unswapped in 64-row tiles
  // of at most 128 columns when that fills at least half of the SMs unsplit (cuBLAS's 64x64 tile
  // on 128x4096x4096), in CTA pairs multicasting the weight tile only if kBm64RowPairs.
  bool pair_rows = false;
  // bm64_bn (64 or 128; an A/B knob, TK_HOPPER_BM64_BN) forces the width and drops the fill test.
  if (bm64 && p.swap_ab && M > 64 && narrow) {
    const int bn = bm64_bn > 0 ? bm64_bn : narrow_width(M, N, 64, 256, num_sms);
    if (bn <= 128 && (bm64_bn > 0 || 2 * plan_tiles(M, N, 64, bn) >= num_sms)) {
      p.swap_ab = false;
      rows = M, cols = N;
      p.bm = 64, p.bn = bn, p.splits = 1;
      pair_rows = kBm64RowPairs != 0;
    }
  }
  // 64-row rule 2: other swapped problems whose 128-row tiles need K splits, when 64-row tiles
  // of at most 128 columns need none -- or, for K within the narrowing bound, when they would
  // split but fill at least 3/8 of the SMs unsplit (64x4096x4096: 64 unsplit 64x64 tiles, two k
  // tiles per stage, 17.8 us vs 20.3 for 32 128x64 tiles x 4 splits + the reduction, H200; at
  // K = 14336 unsplit was slower: 128x4096x14336 47.4 -> 53.0 us). bm64_unsplit (A/B knob
  // TK_HOPPER_BM64=2) drops both bounds.
  if (bm64 && p.swap_ab && all_widths && p.splits > 1) {
    int bn64 = 0, splits64 = 0;
    shape(64, bn64, splits64);
    const bool fills = narrow && 8 * plan_tiles(rows, cols, 64, bn64) >= 3 * int64_t(num_sms);
    if ((splits64 == 1 || fills || bm64_unsplit) && bn64 <= 128) p.bm = 64, p.bn = bn64, p.splits = 1;
  }
  // one_wg bit 3 (A/B): a 128 x 256 plan that splits K takes 128 x 128 tiles when they need
  // fewer splits (256x4096x14336: 32 tiles x 4 splits -> 64 x 2, half the fp32 partials), to run
  // on one warpgroup with bit 2. Measured slower (H200: 57.9 -> 60.0 us).
  if ((one_wg & 8) && p.bm == 128 && p.bn == 256 && p.splits > 1) {
    const int s128 = splits_for(plan_tiles(rows, cols, 128, 128));
    if (s128 < p.splits) p.bn = 128, p.splits = s128;
  }
  // Waves of `t` units on the grid (the re-plans below compare waves x width).
  auto waves = [&](int64_t t) { return (t + num_sms - 1) / num_sms; };
  // bn192 = 2 (above): waves x tile width, the 256-wide plan kept unless 10% dearer; 3: in any
  // number of waves up to M = 1024 (measured at 384 and 640 tokens: 384x14336x4096, 168 tiles of
  // 128 x 256 in 2 waves -> 225 of 128 x 192, 95 -> 79 us; not yet past that).
  if (bn192 >= 2 && all_widths && p.bm == 128 && p.bn == 256 && p.splits == 1 &&
      ((bn192 >= 3 && M <= 1024) || plan_tiles(rows, cols, 128, 256) < num_sms)) {
    int64_t best = waves(plan_tiles(rows, cols, 128, 256)) * 256 * 9 / 10;
    for (const bool swap_192 : {p.swap_ab, !p.swap_ab}) {
      const int r = swap_192 ? N : M, c = swap_192 ? M : N;
      const int64_t cost = waves(plan_tiles(r, c, 128, 192)) * 192;
      if (cost < best) best = cost, p.swap_ab = swap_192, rows = r, cols = c, p.bn = 192;
    }
  }
  // bn192 = 3 (above): a split 128 x 256 plan (fewer tiles than SMs, K past the narrowing
  // bound) re-planned as 128 x 192 tiles with their own splits, in whichever orientation needs
  // >= 10% less waves x width x k tiles per unit (384x4096x14336: 48 tiles x 2 splits -> 66 x 2,
  // a quarter less work per SM: 86.8 -> 74.4 us, H200).
  if (bn192 >= 3 && all_widths && p.bm == 128 && p.bn == 256 && p.splits > 1) {
    auto work = [&](int64_t t, int bn, int s) { return waves(t * s) * bn * ((k_tiles + s - 1) / s); };
    int64_t best = work(plan_tiles(rows, cols, 128, 256), 256, p.splits) * 9 / 10;
    // A candidate tile (its own splits) replaces the plan if it needs less work per SM than `best`.
    auto consider = [&](bool swap, int bn) {
      const int r = swap ? N : M, c = swap ? M : N;
      const int64_t t = plan_tiles(r, c, 128, bn);
      const int s = splits_for(t);
      const int64_t cost = work(t, bn, s);
      if (cost < best) best = cost, p.swap_ab = swap, rows = r, cols = c, p.bn = bn, p.splits = s;
    };
    const bool swap0 = p.swap_ab;
    consider(swap0, 192);
    consider(!swap0, 192);
    // Or swapped 128 x 160 tiles (odd_widths bit 0, for a row-major A: odd_layouts bit 0) up to 320
    // tokens: 320x4096x14336, 64 tiles x 2 splits instead of 66 of 128 x 192 x 2: 72.1 -> 67.1 us.
    if ((odd_widths & 1) && (odd_layouts & 1) && M <= 320) consider(true, 160);
  }
  // unswap128 >= 2 (above): a split swapped 128 x 256 plan as unswapped 128 x 128 tiles.
  if (unswap128 >= 2 && all_widths && p.swap_ab && p.bm == 128 && p.bn == 256 && p.splits > 1) {
    const int64_t t128 = plan_tiles(M, N, 128, 128);
    const int s = splits_for(t128);
    const int64_t saved = int64_t(p.splits - (s > 1 ? s : 0)) * M * N * 4;
    // Extra mainloop per CTA, in 1/20 of a 128 x 256 k tile (a 128 x 128 k tile is 11 of them).
    const int64_t extra20 = 11 * int64_t((k_tiles + s - 1) / s) - 20 * int64_t((k_tiles + p.splits - 1) / p.splits);
    if (s < p.splits && t128 * s <= num_sms && 20 * saved > extra20 * kUnswapSplitBytesPerKTile256) {
      p.swap_ab = false, p.bn = 128, p.splits = s;
      rows = M, cols = N;
    }
  }
  // unswap128 (above): same tiles, token tile as A.
  if (unswap128 && all_widths && p.swap_ab && p.bm == 128 && p.bn == 128 && p.splits == 1 &&
      plan_tiles(rows, cols, 128, 128) <= num_sms) {
    p.swap_ab = false;
    rows = M, cols = N;
  }
  // odd_widths (above): the least waves x width among the candidates, if >= 10% below the plan's.
  if (odd_widths && all_widths && M <= 512 && p.bm == 128 && p.splits == 1) {
    int64_t best = waves(plan_tiles(rows, cols, 128, p.bn)) * p.bn * 9;  // x 10 below
    bool best_swap = p.swap_ab;
    int best_bn = 0;
    auto consider = [&](bool swap, int w) {
      if (!(odd_layouts & (swap ? 1 : 2)) || (swap && M > 320)) return;
      const int64_t cost = waves(plan_tiles(swap ? N : M, swap ? M : N, 128, w)) * w * 10;
      if (cost <= best) best = cost - 1, best_swap = swap, best_bn = w;  // - 1: later ties lose
    };
    if (odd_widths & 1) consider(true, 160);
    // Unswapped 144 (bit 1) only in place of an unswapped plan (not of swapped 160: fewer padded
    // rows), in as many waves.
    if ((odd_widths & 2) && !p.swap_ab && best_bn == 0 &&
        waves(plan_tiles(M, N, 128, 144)) <= waves(plan_tiles(rows, cols, 128, p.bn)))
      consider(false, 144);
    // Unswapped 224 (bit 2) in place of a 128 x 256 plan that is not long-running (those keep
    // their clusters), e.g. 256x14336x4096: 112 swapped 128 x 256 tiles on 132 SMs -> 128 of
    // 128 x 224; 512x14336x4096: 224 tiles in 2 waves -> 256 in 2 waves, 7/8 of the width.
    const int64_t tiles256 = plan_tiles(rows, cols, 128, 256);
    if ((odd_widths & 4) && p.bn == 256 && !(tiles256 >= num_sms && tiles256 * k_tiles >= kLongRunWork))
      consider(false, 224);
    if (best_bn > 0) {
      p.swap_ab = best_swap, p.bn = best_bn;
      rows = p.swap_ab ? N : M, cols = p.swap_ab ? M : N;
    }
  }
  // odd_widths bit 3 (kTokenWidths above): swapped tiles sized to the token count.
  const int64_t tiles0 = plan_tiles(rows, cols, p.bm, p.bn);
  if ((odd_widths & 8) && all_widths && (odd_layouts & 1) && M >= kTokenWidthsMinM && M <= kTokenWidthsMaxM &&
      p.splits == 1 && tiles0 <= num_sms) {
    int best = (p.bm + p.bn) * 19 / 20 + 1, best_bn = 0;  // + 1: at least 5% less (integer cut)
    for (const int w : kTokenWidths) {
      if (w == 80 && M < kTokenWidth80MinM) continue;
      const int64_t t = plan_tiles(N, M, 128, w);
      if (t <= num_sms && t >= tiles0 && 2 * t >= num_sms && 128 + w < best) best = 128 + w, best_bn = w;
    }
    if (best_bn > 0) {
      p.swap_ab = true, p.bm = 128, p.bn = best_bn, pair_rows = false;
      rows = N, cols = M;
    }
  }
  // odd_widths bit 4 (kTokenRows64 above): one 64 x 144 swapped tile per 64 weight rows.
  if ((odd_widths & 16) && all_widths && (odd_layouts & 1) && M >= kTokenRows64MinM && M <= kTokenRows64Width &&
      p.splits == 1 && plan_tiles(rows, cols, p.bm, p.bn) <= num_sms) {
    const int64_t t = plan_tiles(N, M, 64, kTokenRows64Width);
    if (t <= num_sms && 4 * t >= kTokenRows64MinFill4 * int64_t(num_sms)) {
      p.swap_ab = true, p.bm = 64, p.bn = kTokenRows64Width, pair_rows = false;
      rows = N, cols = M;
    }
  }
  // mid64 (above); out_tma: the output's rows can be TMA-stored (16-bit, 16-B aligned pitch).
  // A split 128 x 64 plan only where the 64 x 128 tiles fill 3/8 of the SMs unsplit (as 64-row rule
  // 2; 512x1024x1024, 2 splits -> 64 tiles: 12.3 -> 9.3 us), not e.g. 300x200x3000 (12 tiles x
  // 11 splits -> 10 tiles).
  const int64_t tiles64 = plan_tiles(M, N, 64, 128);
  const bool rows_fast = out_tma || ((mid64 & kMid64UnalignedRows) && all_widths &&  // all_widths: a 16-bit output
                                     k_tiles >= kMid64UnalignedRowsMinKTiles);
  if (mid64 && rows_fast && narrow && !p.swap_ab && p.bm == 128 && p.bn == 64 && tiles64 <= num_sms &&
      (p.splits == 1 || 8 * tiles64 >= 3 * int64_t(num_sms))) {
    p.bm = 64, p.bn = 128, p.splits = 1;
    if ((mid64 & kMid64Pairs) && (split_sectors & 2) && 4 * tiles64 >= 3 * int64_t(num_sms)) pair_rows = true;
  }
  const bool forced = force != nullptr && valid_tile(*force, all_widths, odd_layouts);
  bool pair128 = false;
  if (forced) {
    p.swap_ab = force->swap_ab, p.bm = force->bm, p.bn = force->bn;
    rows = p.swap_ab ? N : M, cols = p.swap_ab ? M : N;
    p.splits = std::max(1, std::min(force->splits, k_tiles));
    pair_rows = force->cluster == 2 && p.bm == 64 && p.splits == 1;
    // (kernel_variants.h TK_WG128_CLUSTER: one-warpgroup 128 x 128 pairs, forced only)
    pair128 = TK_WG128_CLUSTER && force->cluster == 2 && p.bm == 128 && p.bn == 128 && p.splits == 1;
    max_cluster = force->cluster;
  }
  const int64_t tiles = plan_tiles(rows, cols, p.bm, p.bn);
  const int64_t tiles_m = (rows + p.bm - 1) / p.bm;
  // Swapped (skinny) problems cluster even below one wave: the pair shares the token tile.
  // (Also tried, H200 2026-11-25c: 128-wide clustered tiles and unswapped skinny pairs sharing
  // the weight tile: no faster, benchmarks/NOTES.md.)
  const bool unsplit256 = p.bm == 128 && p.bn == 256 && p.splits == 1;
  const bool long_run = unsplit256 && tiles >= num_sms && tiles * k_tiles >= kLongRunWork;
  // The Y operand (shared by a cluster's CTAs) is B, or A when swapped (kSplitSectorClusters).
  const bool y_split = (split_sectors & (p.swap_ab ? 1 : 2)) != 0;
  const bool cluster256 = unsplit256 && tiles_m >= 2 &&
                          (max_cluster == 2 ? tiles >= num_sms || p.swap_ab
                                            : max_cluster == 0 && (long_run || (sector_clusters && y_split && tiles >= num_sms)));
  p.cluster = pair_rows || cluster256 || pair128 ? 2 : 1;
  p.group_m = group_m > 0 ? group_m : long_run ? kLongRunGroupM : 8;
  p.units = ((tiles_m + p.cluster - 1) / p.cluster) * (tiles / tiles_m) * p.splits;
  const int64_t slots = std::max(1, num_sms / p.cluster);  // concurrently resident clusters (at most)
  p.grid = static_cast<int>(p.cluster * std::max<int64_t>(1, std::min<int64_t>(p.units, slots)));
  p.dynamic = allow_dynamic && p.units > p.grid / p.cluster && k_tiles / p.splits >= kDynamicMinKTiles;
  // Stream-K fill: every tile to stream-K over all SMs (needs the 16-bit-output 128 x 256 kernels).
  if (stream_k_fill > 0 && all_widths && !forced) {
    const bool base_swap = heuristic_swap;
    const int r = base_swap ? N : M, c = base_swap ? M : N;
    const int64_t t256 = plan_tiles(r, c, 128, 256);
    const bool as_planned = p.bm == 128 && p.bn == 256 && p.splits == 1 && p.cluster == 1;
    const int sk = kittens::sk_fill_tiles(t256, k_tiles, num_sms, kFillMinIters);
    if (sk > 0 && (as_planned || (stream_k_fill >= 2 && c > 128)) && t256 + int64_t(sk) * k_tiles < (int64_t(1) << 31)) {
      p.swap_ab = base_swap, p.bm = 128, p.bn = 256, p.splits = 1, p.cluster = 1;
      p.units = t256, p.grid = num_sms, p.dynamic = false, p.sk_tiles = sk, p.fused_split = false;
      return p;
    }
  }
  // Stream-K tail (kStreamKTail, 128 x 256 unclustered unsplit kernels only); unit ids encode
  // tail iterations past the whole-tile units, so they must stay below 2^31.
  if (stream_k > 0 && p.cluster == 1 && p.splits == 1 && p.bm == 128 && p.bn == 256) {
    const kittens::SkSplit t = stream_k_tail(stream_k, p.units, p.grid, k_tiles);
    if (p.units + int64_t(t.tiles) * k_tiles < (int64_t(1) << 31)) p.sk_tiles = t.tiles, p.sk_parts = t.parts;
  }
  // Split-K finished inside the GEMM (epilogue_split_k.cuh split_reduce_slice): the splits of a tile
  // wait for each other's ready flags, then each sums and stores a slice of the tile. Needs every
  // unit's CTA resident at once (one unit per CTA; clusters may get fewer CTAs than planned),
  // which the split rule gives: tiles * splits <= SMs. Opt-in (TK_HOPPER_FUSED_SPLIT=1): slower
  // than the separate reduction kernel as measured (benchmarks/NOTES.md).
  p.fused_split = fuse_split && p.splits > 1 && p.cluster == 1 && p.units <= p.grid;
  const int64_t col_tiles = tiles / tiles_m;  // tiles sharing each row tile's X operand
  const bool one_wg_width = (p.bn == 128 && (one_wg & 1)) || (p.bn == 64 && (one_wg & 2)) ||
                            ((p.bn == 72 || p.bn == 80) && (one_wg & 16) &&
                             (col_tiles >= kTokenWidthOneWgMinTiles || (one_wg & 32)));
  if (one_wg_width && p.bm == 128 && (p.cluster == 1 || pair128) && p.sk_tiles == 0 &&
      (p.splits == 1 || (one_wg & 4)) && !p.fused_split && p.units <= p.grid)
    p.wg_rows = 128;
  return p;
}

}  // namespace tk::hopper
