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
