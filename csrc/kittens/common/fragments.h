// Register fragment layouts (host-testable).
#pragma once
#include "base.h"

namespace kittens {

struct RowCol {
  int row;
  int col;
};

// wgmma .m64nNk16 fp32 accumulator (PTX ISA "wgmma D matrix fragment"): warp w of the
// warpgroup owns rows 16w..16w+15; within each 8-column group j a thread holds
// registers 4j..4j+3 = rows {l/4, l/4+8} x columns {2(l%4), 2(l%4)+1}.
TK_HD RowCol wgmma_acc_coord(int thread_in_wg, int reg) {
  const int warp = thread_in_wg / 32, lane = thread_in_wg % 32;
  return RowCol{16 * warp + lane / 4 + 8 * ((reg / 2) % 2), 8 * (reg / 4) + 2 * (lane % 4) + (reg % 2)};
}

}  // namespace kittens
