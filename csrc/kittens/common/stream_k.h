// Stream-K tail partition (host-testable; used by the opt-in TK_HOPPER_STREAMK=1 kernels, which
// measured slower than whole tiles on an H100 -- benchmarks/NOTES.md).
//
// Idea (Osama, Merrill, Cecka, Garland, Owens, "Stream-K: Work-centric Parallel Decomposition
// for Dense Matrix Multiplication on the GPU", PPoPP 2023): with tiles = W * grid + r whole tiles
// (W >= 1, 0 < r < grid), the last wave keeps only r of the grid's CTAs busy. Here the last
// grid + r tiles (the "sk tiles") are instead cut into their k iterations, (grid + r) * k_tiles
// of them, dealt out evenly: CTA c takes iterations [c * I / grid, (c + 1) * I / grid). The
// tiles before them (a whole number of waves) stay whole. Every CTA gets at least k_tiles
// iterations, so a tile is covered by at most two CTAs: a head segment (slot 0, from k = 0) and
// a tail segment (slot 1). Two fp32 partials summed in either order give the same bits, so the
// result does not depend on timing.
#pragma once
#include "base.h"
#include "raster.h"

namespace kittens {

// Number of tiles that go to the stream-K tail: grid + r, or 0 when whole tiles fill every wave
// (r == 0), when there are not more tiles than CTAs (split-K's case), or when the idle part of
// the last wave, (grid - r) / grid of one of W + 1 waves, is under 1% of the run (each split
// tile costs one fp32 partial, 128 KB for 128x256, against ~48 KB per k tile of operands).
TK_HD int sk_tiles(int64_t tiles, int grid) {
  if (grid <= 0 || tiles <= grid) return 0;
  const int r = static_cast<int>(tiles % grid);
  const int64_t waves = tiles / grid + 1;
  if (r == 0 || int64_t(grid - r) * 100 < int64_t(grid) * waves) return 0;
  return grid + r;
}

// First stream-K iteration of CTA `cta` (of `grid`) over `iters` = sk_tiles * k_tiles.
TK_HD int64_t sk_begin(int cta, int64_t iters, int grid) { return int64_t(cta) * iters / grid; }

// The CTA whose range holds iteration `iter`: the largest c with sk_begin(c) <= iter.
TK_HD int sk_cta_of(int64_t iter, int64_t iters, int grid) {
  return static_cast<int>(((iter + 1) * grid - 1) / iters);
}

struct SkSegment {
  int tile;   // index among the sk tiles (0 = the first tile after the whole waves)
  KRange k;   // k tiles [begin, end) of that tile
  int slot;   // 0: the tile's head (holds k tile 0), 1: its tail
  int slots;  // 1 or 2 CTAs cover the tile
};

// The segment that starts at iteration `iter` of a CTA whose range ends at `end` (exclusive).
// A CTA walks its range as: iter = sk_begin(c); while (iter < end) { s = sk_segment(...);
// iter += s.k.end - s.k.begin; }
TK_HD SkSegment sk_segment(int64_t iter, int64_t end, int k_tiles, int64_t iters, int grid) {
  const int tile = static_cast<int>(iter / k_tiles);
  const int64_t t0 = int64_t(tile) * k_tiles, t1 = t0 + k_tiles;
  const int64_t seg_end = end < t1 ? end : t1;
  const int first = sk_cta_of(t0, iters, grid), last = sk_cta_of(t1 - 1, iters, grid);
  return SkSegment{tile, KRange{static_cast<int>(iter - t0), static_cast<int>(seg_end - t0)},
                   sk_cta_of(iter, iters, grid) - first, last - first + 1};
}

}  // namespace kittens
