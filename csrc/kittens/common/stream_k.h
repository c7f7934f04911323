// Stream-K partition (host-testable; used by the Hopper stream-K kernels, gemm_kernel.cuh).
//
// Idea (Osama, Merrill, Cecka, Garland, Owens, "Stream-K: Work-centric Parallel Decomposition
// for Dense Matrix Multiplication on the GPU", PPoPP 2023): the last "sk tiles" of a GEMM are
// cut into their k iterations, sk_tiles * k_tiles of them, dealt out evenly: CTA c takes
// iterations [c * I / parts, (c + 1) * I / parts) of the `parts` CTAs dealt to. Uses:
//  - tail (sk_tiles): with tiles = W * grid + r whole tiles (W >= 1, 0 < r < grid) the last wave
//    keeps only r CTAs busy; the last grid + r tiles go to stream-K, the rest stay whole. Every
//    CTA then gets >= k_tiles iterations, so a tile is covered by at most two CTAs.
//  - fill (sk_fill_tiles): fewer tiles than CTAs; every tile goes to stream-K, so every SM works
//    (e.g. 112 tiles on 132 SMs). A tile may then be covered by several CTAs.
//  - even tail (sk_tail_even): only the r tiles of the last wave, their iterations dealt to all
//    grid CTAs, where r / grid is a fraction of small denominator (the CTAs' k offsets few).
//  - aligned last-wave split (sk_split_tail; sk_split_tail_waves for r > grid / 2, over W CTAs per
//    SM launched in turn): with tiles = W * grid + r and r <= grid / 2, only the
//    r tiles of the last wave go to stream-K, dealt to `parts` = r * s CTAs (s = the slots per
//    tile) instead of all of them: CTA c < parts then takes k range c % s of tail tile c / s, so
//    the tail's CTAs sit at s common k offsets and tiles sharing an A or B panel read the same k
//    slices at about the same time, as a whole wave does. The tail above deals grid + r tiles
//    over all CTAs, which spreads their k offsets over [0, K) and loses that L2 reuse
//    (benchmarks/NOTES.md, 2026-11-23c).
// `parts` (the CTAs the iterations are dealt to, <= grid) is the grid in the first two modes.
// The CTAs covering a tile are consecutive; its "slots" are numbered from the CTA holding k tile
// 0. The finisher is the last slot (the CTA holding the tile's last k tile): the others store
// fp32 partials and release a flag, the finisher waits for them, adds them in slot order (a
// fixed order: the bits do not depend on timing) and stores the tile.
// Each CTA walks its range from the back (sk_segment_back): its non-finisher segment (the head
// of a tile, at the end of its range) comes first, its finisher segments after, so partials are
// ready early and a CTA waits only on lower-numbered CTAs, launched before it -- never on one
// that may not be resident yet (e.g. when other kernels hold SMs).
#pragma once
#include "base.h"
#include "raster.h"

namespace kittens {

// Number of tiles that go to the stream-K tail: grid + r, or 0 when whole tiles fill every wave
// (r == 0), when there are not more tiles than CTAs (split-K's case), or when the idle part of
// the last wave, (grid - r) / grid of one of W + 1 waves, is under min_idle_pct percent of the
// run (each split tile costs one fp32 partial, 128 KB for 128x256, against ~48 KB per k tile of
// operands).
TK_HD int sk_tiles(int64_t tiles, int grid, int min_idle_pct = 1) {
  if (grid <= 0 || tiles <= grid) return 0;
  const int r = static_cast<int>(tiles % grid);
  const int64_t waves = tiles / grid + 1;
  if (r == 0 || int64_t(grid - r) * 100 < int64_t(grid) * waves * min_idle_pct) return 0;
  return grid + r;
}

// Aligned last-wave split: the r = tiles % grid tiles of a part-filled last wave, each cut into
// s k ranges for r * s CTAs, when r <= grid / 2 and s = min(grid / r, max_slots, k_tiles /
// min_iters) >= 2, and the part of the run that saves, (1 - 1/s) of one of W + 1 waves, is at
// least min_gain_pct percent (the stream-K kernels run without the deferred epilogue, and each
// tail tile exchanges s - 1 fp32 partials). {0, 0} otherwise.
struct SkSplit {
  int tiles;     // tail tiles (the last ones)
  int parts;     // CTAs they are dealt to: tiles * slots
  int grid = 0;  // CTAs to launch when more than one per SM (sk_split_tail_waves); 0: the plan's
};
// Slots per tail tile of the aligned splits: min(ctas / r, max_slots, k_tiles / min_iters).
TK_HD int sk_split_slots(int ctas, int r, int k_tiles, int max_slots, int min_iters) {
  int s = ctas / r;
  if (s > max_slots) s = max_slots;
  if (s > k_tiles / min_iters) s = k_tiles / min_iters;
  return s;
}
TK_HD SkSplit sk_split_tail(int64_t tiles, int grid, int k_tiles, int max_slots, int min_iters, int min_gain_pct) {
  if (grid <= 1 || tiles <= grid || min_iters <= 0) return SkSplit{0, 0};
  const int r = static_cast<int>(tiles % grid);
  if (r == 0 || 2 * r > grid) return SkSplit{0, 0};
  const int s = sk_split_slots(grid, r, k_tiles, max_slots, min_iters);
  const int64_t waves = tiles / grid + 1;
  if (s < 2 || int64_t(s - 1) * 100 < int64_t(min_gain_pct) * s * waves) return SkSplit{0, 0};
  return SkSplit{r, r * s};
}

// Aligned split over generations of CTAs (the case sk_split_tail leaves: a last wave more than
// half full). With tiles = W * grid + r, grid / 2 < r < grid and 1 <= W <= max_waves, launch
// W * grid CTAs, W per SM one after another, each taking one whole tile (its first unit), and
// deal the r tail tiles' s = min(W * grid / r, max_slots, k_tiles / min_iters) aligned k ranges
// to the first r * s of them (the partition of sk_split_tail, over W * grid CTAs): an SM then runs
// W whole tiles and at most W ranges of 1/s tile instead of W + 1 tiles. Worth it when s > W:
// (1 - W / s) of one of W + 1 waves saved, at least min_gain_pct percent, less a CTA start per
// generation (no persistent hand-over of the loads). CTAs still wait only on lower-numbered ones,
// launched before them. E.g. 352 tiles of 128 x 256 on 132 SMs (5632x2048x8192): 264 CTAs, the
// 88 tail tiles in 3 ranges each, 2 + 2/3 tile times per SM instead of 3. Otherwise sk_split_tail.
TK_HD SkSplit sk_split_tail_waves(int64_t tiles, int grid, int k_tiles, int max_slots, int min_iters, int min_gain_pct,
                                  int max_waves) {
  if (grid <= 1 || tiles <= grid || min_iters <= 0) return SkSplit{0, 0};
  const int r = static_cast<int>(tiles % grid);
  const int64_t w = tiles / grid;
  if (r == 0 || 2 * r <= grid) return sk_split_tail(tiles, grid, k_tiles, max_slots, min_iters, min_gain_pct);
  if (w > max_waves) return SkSplit{0, 0};
  const int ctas = static_cast<int>(w * grid);
  const int s = sk_split_slots(ctas, r, k_tiles, max_slots, min_iters);
  if (s <= w || int64_t(s - w) * 100 < int64_t(min_gain_pct) * s * (w + 1)) return SkSplit{0, 0};
  return SkSplit{r, r * s, ctas};
}

// Even tail (mode 5, the default of plan_rules.h kStreamKTail since 2026-12-05f): with tiles = W *
// grid + r (W >= 1, 0 < r < grid), the r tail tiles' r * k_tiles iterations dealt to all grid CTAs,
// r * k_tiles / grid each, after their W whole tiles. CTA c's range starts at k offset k_tiles * (c
// * r mod grid) / grid of a tile, so the CTAs sit at q = grid / gcd(r, grid) common k offsets: with
// q <= max_offsets they read the same k slices at about the same time, as mode 2's aligned ranges
// do (mode 1, dealing grid + r tiles, spreads them). E.g. 352 tiles on 132 SMs (5632x2048x8192): r
// = 88, q = 3, 85-86 k tiles of 128 per CTA, every tail tile covered by two CTAs (one partial add):
// 2 + 2/3 tile times per SM instead of 3, on a persistent grid (mode 4 gets the same over 264 CTAs
// with two adds per tile). Only where each CTA's range is >= min_iters and the run saves (1 - r /
// grid) of one of W + 1 waves, at least min_gain_pct percent. {0, 0} otherwise.
TK_HD int gcd_int(int a, int b) {
  while (b != 0) {
    const int t = a % b;
    a = b, b = t;
  }
  return a;
}
TK_HD SkSplit sk_tail_even(int64_t tiles, int grid, int k_tiles, int max_offsets, int min_iters, int min_gain_pct) {
  if (grid <= 1 || tiles <= grid || min_iters <= 0) return SkSplit{0, 0};
  const int r = static_cast<int>(tiles % grid);
  const int64_t w = tiles / grid;
  if (r == 0 || grid / gcd_int(r, grid) > max_offsets || int64_t(r) * k_tiles < int64_t(grid) * min_iters)
    return SkSplit{0, 0};
  if (int64_t(grid - r) * 100 < int64_t(min_gain_pct) * grid * (w + 1)) return SkSplit{0, 0};
  return SkSplit{r, grid};
}

// First stream-K iteration of CTA `cta` over `iters` = sk_tiles * k_tiles dealt to `parts` CTAs
// (CTAs from `parts` on get none).
TK_HD int64_t sk_begin(int cta, int64_t iters, int parts) {
  return int64_t(cta < parts ? cta : parts) * iters / parts;
}

// The CTA whose range holds iteration `iter`: the largest c with sk_begin(c) <= iter.
TK_HD int sk_cta_of(int64_t iter, int64_t iters, int parts) {
  return static_cast<int>(((iter + 1) * parts - 1) / iters);
}

// Fill mode: every tile to stream-K when there are fewer tiles than CTAs and each CTA still
// gets at least min_iters k iterations (the prologue and the partial store are amortised over
// them); 0 otherwise.
TK_HD int sk_fill_tiles(int64_t tiles, int k_tiles, int grid, int min_iters) {
  if (grid <= 0 || tiles <= 0 || tiles >= grid || tiles * k_tiles < int64_t(grid) * min_iters) return 0;
  return static_cast<int>(tiles);
}

struct SkSegment {
  int tile;   // index among the sk tiles (0 = the first stream-K tile)
  KRange k;   // k tiles [begin, end) of that tile
  int slot;   // this CTA's place among the tile's CTAs (0: holds k tile 0)
  int slots;  // CTAs covering the tile; slot == slots - 1 finishes it
};

// The segment that ends at iteration `end` (exclusive) of a CTA whose range starts at `begin`.
// A CTA walks its range from the back: iter = sk_begin(c + 1); while (iter > sk_begin(c)) {
// s = sk_segment_back(iter, ...); iter -= s.k.end - s.k.begin; }
TK_HD SkSegment sk_segment_back(int64_t end, int64_t begin, int k_tiles, int64_t iters, int parts) {
  const int tile = static_cast<int>((end - 1) / k_tiles);
  const int64_t t0 = int64_t(tile) * k_tiles, t1 = t0 + k_tiles;
  const int64_t seg_begin = begin > t0 ? begin : t0;
  const int first = sk_cta_of(t0, iters, parts), last = sk_cta_of(t1 - 1, iters, parts);
  return SkSegment{tile, KRange{static_cast<int>(seg_begin - t0), static_cast<int>(end - t0)},
                   sk_cta_of(seg_begin, iters, parts) - first, last - first + 1};
}

}  // namespace kittens
