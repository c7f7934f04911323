// Block-id -> output-tile mapping (host-testable).
#pragma once
#include "base.h"

namespace kittens {

struct TileCoord {
  int m;  // row-tile index
  int n;  // column-tile index
};

// Grouped raster for L2 reuse: ids walk down a band of `group_m` row tiles, then move one
// column tile right; the last band may be shorter. A bijection over [0, tiles_m * tiles_n).
TK_HD TileCoord grouped_tile(int id, int tiles_m, int tiles_n, int group_m) {
  const int per_band = group_m * tiles_n;
  const int band = id / per_band;
  const int first_m = band * group_m;
  const int rows = (tiles_m - first_m) < group_m ? (tiles_m - first_m) : group_m;
  const int r = id - band * per_band;
  return TileCoord{first_m + r % rows, r / rows};
}

}  // namespace kittens

namespace kittens {

// Split-K: split s of `splits` covers k tiles [begin, end); the splits tile [0, k_tiles) in order.
// align: the bounds are multiples of `align` k tiles (a kernel stage of several k tiles), except
// the last end, k_tiles. Every split gets >= 1 tile when splits <= ceil(k_tiles / align); past
// that some ranges are empty (the kernel then stores zero partials).
// 32-bit unsigned arithmetic (a 64-bit division is a helper call on the GPU, whose return address
// ptxas spilled in the register-heavy kernels): exact while splits * ceil(k_tiles / align) < 2^32,
// which holds for K < 2^31 (k_tiles <= 2^25 at 64-wide k tiles) and splits <= 64 (plans: <= 16).
struct KRange {
  int begin;
  int end;
};
TK_HD KRange split_k_range(int s, int splits, int k_tiles, int align = 1) {
  const uint32_t n = (uint32_t(k_tiles) + uint32_t(align) - 1) / uint32_t(align);  // whole stages
  const uint32_t b = uint32_t(s) * n / uint32_t(splits) * uint32_t(align);
  const uint32_t e = uint32_t(s + 1) * n / uint32_t(splits) * uint32_t(align);
  return KRange{static_cast<int>(b), static_cast<int>(e < uint32_t(k_tiles) ? e : uint32_t(k_tiles))};
}

// Persistent work unit `id` of tiles_m * tiles_n * splits: the split is the slowest index, so the
// units running at the same time share operand rows/columns through the grouped raster.
struct WorkUnit {
  TileCoord tile;
  int split;
};
TK_HD WorkUnit work_unit(int id, int tiles_m, int tiles_n, int group_m) {
  const int tiles = tiles_m * tiles_n;
  return WorkUnit{grouped_tile(id % tiles, tiles_m, tiles_n, group_m), id / tiles};
}

}  // namespace kittens
