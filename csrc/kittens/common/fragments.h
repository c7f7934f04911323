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

// mma.sync .m16n8k16 with 16-bit A/B (PTX ISA "Matrix Fragments for mma.m16n8k16 with
// floating point type"); lane l, g = l/4, q = l%4; `half` picks the low/high 16 bits of a register.
// A (16 x 16, row): register r (0..3) holds row g + 8*(r%2), columns 2q + 8*(r/2) + half.
TK_HD RowCol mma16816_a_coord(int lane, int reg, int half) {
  return RowCol{lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + 8 * (reg / 2) + half};
}
// B (16 x 8, col): register r (0..1) holds rows (k) 2q + 8r + half, column g.
TK_HD RowCol mma16816_b_coord(int lane, int reg, int half) {
  return RowCol{2 * (lane % 4) + 8 * reg + half, lane / 4};
}
// C/D (16 x 8, fp32): register r (0..3) holds row g + 8*(r/2), column 2q + r%2.
TK_HD RowCol mma16816_c_coord(int lane, int reg) { return RowCol{lane / 4 + 8 * (reg / 2), 2 * (lane % 4) + reg % 2}; }

// The skinny kernel's K order. A dot product does not depend on the order of its K terms, so
// both operands may use any one bijection of K: per 32-wide K chunk, quad lane q loads the
// 16-B vector k = 8q..8q+7 of each of its rows (one load per row, for A and B alike), and mma
// step s (0, 1) takes words 2s and 2s+1 of that vector. Logical column lk (0..15) of step s
// is then physical k = 8q + 4s + 2h + e, with lk = 2q + 8h + e (the A/B maps above).
TK_HD int skinny_chunk_k(int step, int logical_k) {
  const int q = (logical_k % 8) / 2, h = logical_k / 8, e = logical_k % 2;
  return 8 * q + 4 * step + 2 * h + e;
}

}  // namespace kittens
