// The 16 bytes that start at 16-bit element h (0..7) of a 32-byte window held as 8 words (w[0]
// the lowest; element 2k is the low half of w[k]): how two aligned 16-B vectors are joined into
// one at a 2-B offset, by the re-pitch copy (csrc/gemm/hopper/pad_copy.cu) and the staged
// copy-out of rows that are not 16-B aligned (csrc/gemm/hopper/copy_out_rows.cuh). Branch-free: the
// word offset h / 2 as two select steps (by 2 words, then by 1), the odd half as a 16-bit funnel
// shift, so every register index is a constant (indexing w at run time would put it in local
// memory) and lanes with different h do not diverge (a switch on h serialised its 4 cases
// whenever a warp's rows had different offsets). Host-testable (test_index_math.py).
#pragma once
#include <cstdint>
#include "base.h"

namespace kittens {

struct Words4 {
  uint32_t w[4];
};

TK_HD Words4 halfword_window(const uint32_t (&w)[8], int h) {
  uint32_t v[6], u[5];
  for (int k = 0; k < 6; ++k) v[k] = (h & 4) ? w[k + 2] : w[k];
  for (int k = 0; k < 5; ++k) u[k] = (h & 2) ? v[k + 1] : v[k];
  Words4 o;
  for (int k = 0; k < 4; ++k) o.w[k] = (h & 1) ? (u[k] >> 16) | (u[k + 1] << 16) : u[k];
  return o;
}

}  // namespace kittens
