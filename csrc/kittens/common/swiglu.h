// The packed gate | up layout of tk.linear_swiglu's product gu (M x 2I, I % 128 == 0: a SwiGLU MLP's
// gate and up projections side by side), and where the SwiGLU epilogue finds a feature's pair in a
// 128 x 256 accumulator tile: the one place this index math is written (epilogue_swiglu.cuh and
// producer_loads.cuh follow it; torch_tk/swiglu.py unpacks by the same rule and
// test/test_swiglu_cpu.py checks the two agree).
// In each block of 2 x kSwiGLUBlock packed columns, the first kSwiGLUBlock are the gate features
// kSwiGLUBlock j .. kSwiGLUBlock j + kSwiGLUBlock - 1 and the next kSwiGLUBlock the up features of
// the same indices. So a 256-wide tile at column 256 j holds gate and up of features 128 j ..
// 128 j + 127 (its B rows: gate weight rows 128 j .., then up weight rows 128 j ..), and by the
// wgmma accumulator layout (fragments.h wgmma_acc_coord: column = 8 (reg / 4) + ...) a feature's
// up value is 64 registers after its gate value in the same thread: h = silu(gate) * up needs no
// data exchange.
#pragma once
#include "base.h"

namespace kittens {

constexpr int kSwiGLUBlock = 128;

// Packed column of feature `feature`'s gate (up = false) or up (up = true) value.
TK_HD constexpr int swiglu_packed_col(int feature, bool up) {
  return 2 * kSwiGLUBlock * (feature / kSwiGLUBlock) + (up ? kSwiGLUBlock : 0) + feature % kSwiGLUBlock;
}

// In a tile of 2 x kSwiGLUBlock columns: accumulator register of the up value whose gate value is
// in register `gate_reg` (< kSwiGLUBlock / 2), and the h column (relative to the tile's first
// feature) of that pair's gate column.
TK_HD constexpr int swiglu_up_reg(int gate_reg) { return gate_reg + kSwiGLUBlock / 2; }
TK_HD constexpr int swiglu_h_col(int tile_col) { return tile_col % kSwiGLUBlock; }

}  // namespace kittens
