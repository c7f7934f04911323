// Chiplet-aware block order for MI300X (host-testable).
// Fact (AMD "MI300X workload tuning" guide): workgroups are dispatched round-robin over the
// 8 XCDs, block b going to XCD b % 8; each XCD has its own L2. Remapping so that consecutive
// logical tiles land on one XCD lets neighbours (grouped raster) share that L2.
#pragma once
#include "../common/base.h"
#include "../common/raster.h"

namespace kittens::cdna3 {

constexpr int kXcds = 8;

// Bijection over [0, n): XCD x receives the contiguous logical range
// [x*q + min(x, r), ...) of length q + (x < r), where q = n / 8, r = n % 8.
TK_HD int xcd_remap(int bid, int n) {
  const int q = n / kXcds, r = n % kXcds;
  const int x = bid % kXcds, i = bid / kXcds;
  return x * q + (x < r ? x : r) + i;
}

// Output tile of block `bid`: XCD remap, then grouped raster (common/raster.h).
TK_HD TileCoord block_tile(int bid, int tiles_m, int tiles_n, int group_m) {
  return grouped_tile(xcd_remap(bid, tiles_m * tiles_n), tiles_m, tiles_n, group_m);
}

}  // namespace kittens::cdna3
