// The K-parts GEMM's k index (csrc/gemm/hopper/producer_loads.cuh issue_stage): operands made of up
// to three matrices side by side along K, the parts ending at whole k tiles end0 < end1 (a third part
// only when end1 is below the tile count; two parts: end1 past it). The M-parts GEMM (unit_loads) reads
// the same index over row tiles: operands stacked along M. The one place this math is written;
// torch_tk._C exports it and test/test_cat_backward_cpu.py checks it tiles every part exactly.
#pragma once
#include "base.h"

namespace kittens {

struct KPart {
  int part;  // 0, 1 or 2
  int tile;  // the k tile within that part
};

// k tile `t` of the whole K range.
TK_HD constexpr KPart k_part(int t, int end0, int end1) {
  return t < end0 ? KPart{0, t} : t < end1 ? KPart{1, t - end0} : KPart{2, t - end1};
}

}  // namespace kittens
