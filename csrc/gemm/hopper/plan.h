// Per-shape kernel choice for the Hopper GEMM (host only, no CUDA types; exported to Python as
// torch_tk._C.hopper_plan so the heuristic is tested and documented in one place). The rules'
// measured defaults, with the A/Bs that set them, are in plan_rules.h.
//
// The kernel computes a BM x BN output tile per work unit (BM = 128, or 64 below); units are (tile, K split) pairs walked
// by a persistent grid of min(units, SMs) CTAs. Choices, measured on an H100/H200 (see
// benchmarks/NOTES.md):
//  - swap_ab: when M (tokens) is small and N is larger, compute C^T = B^T A^T so the weight rows
//    fill wgmma's 64-row M side and the few tokens become wgmma's narrow N side -- except a
//    one-wave unsplit 128 x 128 plan, which runs unswapped (kUnswapOneWave128: same tiles, faster),
//    and a split 128 x 256 or 128 x 192 one whose partials cost more than unswapped 128 x 128 tiles' mainloop.
//  - bn: the narrowest of 64 / 128 / 256 that covers the kernel's N (256 for large shapes: fewer
//    shared-memory bytes per MAC than 128); narrower still for small problems (fill_narrow below);
//    192 under the bn192 rules (kWidth192) where it cuts the columns computed for nothing or the
//    work per SM (waves x width x k tiles per unit: split and 1-2-wave mid-M plans), and widths
//    that are not a multiple of 64 (kOddWidths: swapped 160 for up to 320 tokens, 144, 224); past
//    512 tokens the least weighted waves x width among 144 / 160 / 192 / 224 / 256 (odd widths only
//    in an orientation whose Y is K-major: swapped for torch.mm's NN).
//  - cluster: 2 for long-running 128 x 256 problems (kLongRunWork: two CTAs share the B tile
//    through TMA multicast, halving its L2 -> shared-memory traffic; a unit is then a column of 2
//    tiles), which also take a taller raster band (group_m 16): less DRAM and L2 traffic, hence
//    less energy per GEMM where the power cap sets the clock.
//  - group_m: the raster band (8, 16 for long runs); opt-in (kBandRule, TK_HOPPER_BAND_RULE=1) the
//    band of fewest DRAM bytes in l2_band.h's L2 model for multi-wave unsplit plans.
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
#include "l2_band.h"
#include "plan_rules.h"

namespace tk::hopper {

struct GemmPlan {
  bool swap_ab;  // kernel rows are N, kernel columns are M
  int bm;        // 128 (two consumer warpgroups) or 64 (one)
  int bn;        // 64, 128, 192 (bn192 below), 256, or 144, 160, 176, 224 (odd_widths), 72, 80 (kTokenWidths)
  int splits;    // >= 1
  int cluster;   // CTAs per cluster: 1 or 2
  int group_m;   // grouped raster: row tiles per band (kittens::grouped_tile)
  bool dynamic;  // units handed out by an atomic counter (needs a zeroed int from the caller)
  int64_t units; // ceil(tiles_m / cluster) * tiles_n * splits
  int grid;      // CTAs launched (persistent; past the SMs only in stream-K mode 4's generations)
  int sk_tiles;  // last tiles run as a stream-K tail (kittens/common/stream_k.h); 0: none
  int sk_parts;  // CTAs the tail's k iterations are dealt to; 0: all (grid)
  bool fused_split;  // split-K summed in the GEMM kernel (ready flags) instead of a second kernel
  int evict_first;   // operands loaded under an L2 evict_first policy: bit 0 A, bit 1 B
  int wg_rows;       // rows per consumer warpgroup: 64, or 128 (bm 128: one warpgroup, two strips)
  bool ring_staging; // 16-bit output staged inside the idle stage ring, one stage more (ring_staging below)
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
// tiles; 144, 160 and 224 also for 64-row ones, 176 for those only.
constexpr int kTokenRows64Width = 144, kTokenRows64Width160 = 160, kTokenRows64Width176 = 176,
              kTokenRows64Width192 = 192, kTokenRows64Width224 = 224;
inline bool odd_width(int bn) {
  return bn == 72 || bn == 80 || bn == 144 || bn == 160 || bn == 176 || bn == 224;
}
// The 64-row token tiles, one for all tokens (plan_gemm's odd_widths bits 4, 7, 8, 9, 10: 129..144,
// 145..160, 161..176, 177..192 and 193..224 tokens), K-major Y only; launch.cu builds them.
constexpr bool rows64_token_width(int bn) {
  return bn == kTokenRows64Width || bn == kTokenRows64Width160 || bn == kTokenRows64Width176 ||
         bn == kTokenRows64Width192 || bn == kTokenRows64Width224;
}

// odd_layouts: as for plan_gemm's odd widths (unclustered, and only in an orientation whose Y is
// K-major).
inline bool valid_tile(const TileChoice& t, bool all_widths, int odd_layouts = 3) {
  const bool k_major_y = (odd_layouts & (t.swap_ab ? 1 : 2)) != 0;
  const bool odd = odd_width(t.bn) && t.cluster == 1 && k_major_y;
  // 64-row token tiles (K-major Y, unsplit), in pairs only in a TK_BM64_ODD_CLUSTER build.
  const bool rows64 = rows64_token_width(t.bn) && k_major_y && t.splits == 1 && (t.cluster == 1 || TK_BM64_ODD_CLUSTER);
  const bool widths = t.bm == 64 ? (t.bn == 64 || t.bn == 128 || rows64)
                                 : t.bm == 128 && (t.bn == 64 || t.bn == 128 || t.bn == 192 || t.bn == 256 ||
                                                   (odd && t.bn != kTokenRows64Width176));
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

// Whether a one-warpgroup 128 x 128 (or, one_wg bit 6, 128 x 144) plan, or a 64-row token-tile
// one (64 x 144..224), runs the ring-staging kernel (GemmPlan::ring_staging for a 16-bit output;
// dispatch.cpp applies the knob): unsplit, unclustered, one unit per CTA, and K long enough
// (kRingStagingMinKTiles, kRingStagingMinKTilesRows64). forced: -1 the rule, 0 never, 1 at every K.
inline bool ring_staging(const GemmPlan& p, int K, int forced) {
  const bool rows64 = p.bm == 64 && p.bn > 128;
  const bool kernel = (p.wg_rows == 128 && (p.bn == 128 || p.bn == 144)) || rows64;
  // (128 x 128 pairs, TK_WG128_CLUSTER builds: one unit per cluster, both rings idle after it.)
  const bool pair128 = p.cluster == 2 && p.bm == 128 && p.bn == 128 && p.wg_rows == 128;
  const bool one_unit = kernel && (p.cluster == 1 || pair128) && p.units * p.cluster <= p.grid && !p.dynamic &&
                        p.splits == 1;
  const int min_k_tiles = rows64 ? kRingStagingMinKTilesRows64 : kRingStagingMinKTiles;
  const bool long_k = (int64_t(K) + kPlanBK - 1) / kPlanBK >= min_k_tiles;
  return one_unit && (forced == 1 || (forced < 0 && long_k));
}

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
                          bool out_tma = true, int split_sectors = 0, int sector_clusters = kSplitSectorClusters,
                          int band_rule = kBandRule) {
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
  // bn192 = 2 (plan_rules.h): waves x tile width, the 256-wide plan kept unless 10% dearer; 3: in any
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
  // bn192 = 3 (plan_rules.h): a split 128 x 256 plan (fewer tiles than SMs, K past the narrowing
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
  // odd_widths bit 5 (plan_rules.h): a split swapped 128 x 192 plan of <= 160 tokens as 128 x 160
  // tiles, the same tiles and splits (the unsplit ones are the odd_widths block's below).
  if ((odd_widths & 32) && (odd_layouts & 1) && all_widths && p.swap_ab && p.bm == 128 && p.bn == 192 &&
      p.splits > 1 && M <= 160)
    p.bn = 160;
  // unswap128 >= 2 (plan_rules.h): a split swapped 128 x 256 plan (193..256 tokens), and with >= 3 a
  // split swapped 128 x 192 / 160 one (129..192 tokens), as unswapped 128 x 128 tiles with their own
  // splits when the partials saved outweigh the longer mainloop per CTA. Each width has its own fit.
  const bool split256 = unswap128 >= 2 && p.bn == 256;
  const bool split192 = unswap128 >= 3 && (p.bn == 192 || p.bn == 160) && M > 128 && M <= 192;
  if (all_widths && p.swap_ab && p.bm == 128 && p.splits > 1 && (split256 || split192)) {
    const int64_t t128 = plan_tiles(M, N, 128, 128);
    const int s = splits_for(t128);
    const int64_t saved = int64_t(p.splits - (s > 1 ? s : 0)) * M * N * 4;
    const int64_t k_new = (k_tiles + s - 1) / s, k_old = (k_tiles + p.splits - 1) / p.splits;
    // The longer mainloop, in partial bytes: at 256, a 128 x 128 k tile is 11/20 of a 128 x 256 one
    // (kUnswapSplitBytesPerKTile256 is divisible by 20); at 192 / 160 the fit prices each extra k tile.
    const int64_t worth = split256 ? (11 * k_new - 20 * k_old) * (kUnswapSplitBytesPerKTile256 / 20)
                                   : (k_new - k_old) * (p.bn == 160 ? kUnswapSplitBytesPerKTile160
                                                                    : kUnswapSplitBytesPerKTile192);
    if (s < p.splits && t128 * s <= num_sms && saved > worth) {
      p.swap_ab = false, p.bn = 128, p.splits = s;
      rows = M, cols = N;
    }
  }
  // unswap128 (plan_rules.h): same tiles, token tile as A.
  if (unswap128 && all_widths && p.swap_ab && p.bm == 128 && p.bn == 128 && p.splits == 1 &&
      plan_tiles(rows, cols, 128, 128) <= num_sms) {
    p.swap_ab = false;
    rows = M, cols = N;
  }
  // odd_widths (plan_rules.h): the least waves x width among the candidates, if >= 10% below the plan's.
  // Past 512 tokens (bit 11) only the unswapped candidates (the swapped 160 is for <= 320 tokens), and only
  // in place of a plan of at most kOddWidthsMidMMaxWaves waves, with TMA-stored output rows, and a B
  // whose line pitch keeps whole sectors (else kSplitSectorClusters' pairs): the cases measured.
  const bool mid_m = (odd_widths & kOddWidthsMidM) && out_tma && !(split_sectors & 2) && !p.swap_ab &&
                     waves(plan_tiles(rows, cols, p.bm, p.bn)) <= kOddWidthsMidMMaxWaves;
  // Bit 13: the 224 candidate alone past 512 tokens in any number of waves, whatever the output rows.
  const bool mid_m224 = (odd_widths & kOddWidthsMidM224) && !(split_sectors & 2) && !p.swap_ab;
  // Bits 15 / 16: the 224 / 144 candidates swapped where only that orientation has a K-major Y (a
  // row-major A and B), with A's pitch keeping whole sectors; the 144 one within bit 11's limits.
  const bool swap_mid = (odd_layouts & 1) && !(odd_layouts & 2) && !(split_sectors & 1) && !p.swap_ab && M > 320;
  const bool swap_m224 = swap_mid && (odd_widths & kOddWidthsSwappedMid224);
  const bool swap_m144 = swap_mid && (odd_widths & kOddWidthsSwappedMid144) && out_tma &&
                         waves(plan_tiles(rows, cols, p.bm, p.bn)) <= kOddWidthsMidMMaxWaves;
  // Bit 17: the 192 (either orientation, any layout) and 160 (as the 224 one) candidates past 512
  // tokens in place of a 128 x 256 plan that is not long-running, their costs weighted (plan_rules.h).
  const bool mid_192 = (odd_widths & kOddWidthsMid192160) && M > 512 && !p.swap_ab;
  if (odd_widths && all_widths && (M <= 512 || mid_m || mid_m224 || swap_m224 || swap_m144 || mid_192) &&
      p.bm == 128 && p.splits == 1) {
    int64_t best = waves(plan_tiles(rows, cols, 128, p.bn)) * p.bn * 18;  // x 20 below
    bool best_swap = p.swap_ab;
    int best_bn = 0;
    // weight: the cost per unit of waves x width, in twentieths (kMid192Weight, kMid160Weight: a
    // narrower tile streams operands more slowly per SM); regular: a width whose kernels take any
    // layout (a multiple of 64). Swapped odd widths past 320 tokens only under bits 15 - 17.
    auto consider = [&](bool swap, int w, int weight = 20, bool regular = false) {
      const bool swap_mid_w = (swap_m224 && (w == 224 || (w == 160 && mid_192))) || (swap_m144 && w == 144);
      if (!regular && (!(odd_layouts & (swap ? 1 : 2)) || (swap && M > 320 && !swap_mid_w))) return;
      const int64_t cost = waves(plan_tiles(swap ? N : M, swap ? M : N, 128, w)) * w * weight;
      if (cost <= best) best = cost - 1, best_swap = swap, best_bn = w;  // - 1: later ties lose
    };
    if ((odd_widths & 1) && M <= 320) consider(true, 160);
    // Unswapped 144 (bit 1) only in place of an unswapped plan (not of swapped 160: fewer padded
    // rows), in as many waves.
    // Bit 14: a one-wave 144 plan whose output rows are copied out (not TMA-stored) only from
    // kOddWidths144UnalignedMinKTiles k tiles (its epilogue is the whole tail there).
    const int64_t tiles144 = plan_tiles(M, N, 128, 144);
    const bool rows144 = out_tma || !(odd_widths & kOddWidths144Unaligned) || tiles144 > num_sms ||
                         k_tiles >= kOddWidths144UnalignedMinKTiles;
    if ((odd_widths & 2) && !p.swap_ab && best_bn == 0 && (M <= 512 || mid_m) && rows144 &&
        waves(tiles144) <= waves(plan_tiles(rows, cols, 128, p.bn)))
      consider(false, 144);
    if (swap_m144 && best_bn == 0 && waves(plan_tiles(N, M, 128, 144)) <= waves(plan_tiles(rows, cols, 128, p.bn)))
      consider(true, 144);
    // Unswapped 224 (bit 2) in place of a 128 x 256 plan that is not long-running (those keep
    // their clusters), e.g. 256x14336x4096: 112 swapped 128 x 256 tiles on 132 SMs -> 128 of
    // 128 x 224; 512x14336x4096: 224 tiles in 2 waves -> 256 in 2 waves, 7/8 of the width.
    const int64_t tiles256 = plan_tiles(rows, cols, 128, 256);
    const bool long_run256 = tiles256 >= num_sms && tiles256 * k_tiles >= kLongRunWork;
    if (mid_192 && p.bn == 256 && !long_run256) {  // each where its Y's pitch keeps whole sectors
      if (mid_m224) consider(false, 160, kMid160Weight);
      if (swap_m224) consider(true, 160, kMid160Weight);
      if (bn192 >= 1 && !(split_sectors & 2)) consider(false, 192, kMid192Weight, true);  // bn192 0: no 192
      if (bn192 >= 1 && !(split_sectors & 1)) consider(true, 192, kMid192Weight, true);
    }
    if ((odd_widths & 4) && p.bn == 256 && !long_run256 && (M <= 512 || mid_m || mid_m224)) consider(false, 224);
    if (swap_m224 && p.bn == 256 && !long_run256) consider(true, 224);
    if (best_bn > 0) {
      p.swap_ab = best_swap, p.bn = best_bn;
      rows = p.swap_ab ? N : M, cols = p.swap_ab ? M : N;
    }
  }
  // odd_widths bit 3 (plan_rules.h kTokenWidths): swapped tiles sized to the token count.
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
  // odd_widths bit 4 (plan_rules.h kTokenRows64MinM): one 64 x 144 swapped tile per 64 weight rows
  // (129..144 tokens); bit 7: one 64 x 160 tile (145..160 tokens); bit 8: one 64 x 176 tile (161..176
  // tokens); bit 9: one 64 x 192 tile (177..192 tokens); bit 6: in place of a split plan too; bit 10:
  // one 64 x 224 tile (193..224 tokens) in place of a split plan, with bit 12 also of an unsplit unswapped 128 x 128 one.
  const int rows64_bn = M <= kTokenRows64Width                            ? kTokenRows64Width
                        : (odd_widths & 128) && M <= kTokenRows64Width160 ? kTokenRows64Width160
                        : (odd_widths & 256) && M <= kTokenRows64Width176 ? kTokenRows64Width176
                        : (odd_widths & 512) && M <= kTokenRows64Width192 ? kTokenRows64Width192
                        : (odd_widths & 1024) && M <= kTokenRows64Width224 &&
                                  (p.splits > 1 || ((odd_widths & kOddWidthsRows64Unsplit224) && !p.swap_ab &&
                                                    p.bm == 128 && p.bn == 128))
                            ? kTokenRows64Width224
                            : 0;
  if ((odd_widths & 16) && rows64_bn > 0 && all_widths && (odd_layouts & 1) && M >= kTokenRows64MinM &&
      (p.splits == 1 || (odd_widths & 64)) && plan_tiles(rows, cols, p.bm, p.bn) <= num_sms) {
    const int64_t t = plan_tiles(N, M, 64, rows64_bn);
    if (t <= num_sms && 4 * t >= kTokenRows64MinFill4 * int64_t(num_sms)) {
      p.swap_ab = true, p.bm = 64, p.bn = rows64_bn, p.splits = 1, pair_rows = false;
      rows = N, cols = M;
    }
  }
  // mid64 (plan_rules.h); out_tma: the output's rows can be TMA-stored (16-bit, 16-B aligned pitch).
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
    if (p.units + int64_t(t.tiles) * k_tiles < (int64_t(1) << 31)) {
      p.sk_tiles = t.tiles, p.sk_parts = t.parts;
      // Generations (mode 4): one whole tile per CTA, its first unit; no tickets to draw.
      if (t.grid > 0) p.grid = t.grid, p.dynamic = false;
    }
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
                             (col_tiles >= kTokenWidthOneWgMinTiles || (one_wg & 32))) ||
                            (p.bn == 144 && (one_wg & 64) && !p.swap_ab && p.splits == 1);
  if (one_wg_width && p.bm == 128 && (p.cluster == 1 || pair128) && p.sk_tiles == 0 &&
      (p.splits == 1 || (one_wg & 4)) && !p.fused_split && p.units <= p.grid)
    p.wg_rows = 128;
  p.ring_staging = all_widths && ring_staging(p, K, -1);  // all_widths: a 16-bit output (fp32 has no staging)
  // Band rule (plan_rules.h kBandRule, l2_band.h): multi-wave unsplit plans, band not forced. A
  // cluster's unit spans `cluster` row tiles, and the kernel's band in units is group_m / cluster.
  // A stream-K tail keeps its tiles in the raster (they are its last units, whatever the band),
  // so its plans take the rule too, except over generations of CTAs (mode 4: the model's waves
  // are the resident CTAs, fewer than the grid).
  if (band_rule && group_m == 0 && !forced && p.splits == 1 && (p.sk_tiles == 0 || p.grid <= num_sms) &&
      p.units > p.grid / p.cluster) {
    const int c = p.cluster, units_m = static_cast<int>((tiles_m + c - 1) / c);
    p.group_m = c * l2_band(units_m, static_cast<int>(tiles / tiles_m), k_tiles, p.bm * c, p.bn, p.grid / c,
                            std::max(1, p.group_m / c), kL2ModelBytes, kBandRuleMinGain);
  }
  return p;
}

}  // namespace tk::hopper
