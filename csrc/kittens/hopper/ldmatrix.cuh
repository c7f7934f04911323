// ldmatrix of a warpgroup's 64 x 64 16-bit box (row-major, 128-B swizzled lines: the untransposed
// TMA box, kittens::stmatrix_x4_offset(..., false)) into wgmma accumulator fragment order.
// Facts (PTX ISA "ldmatrix"): ldmatrix.sync.aligned.m8n8.x4.b16 is stmatrix's inverse -- lane
// 8 q + i supplies the address of row i of matrix q, and register q of lane 4 i + j receives that
// matrix's elements (i, 2 j) and (i, 2 j + 1). With stmatrix_x4_offset's addresses, word 4 m + q of
// thread t therefore holds the 16-bit pair that stmatrix_round would store from word 4 m + q: the
// pair of accumulator registers (r, r + 1), r = 8 m + 2 q, of the round (its columns, rows).
#pragma once
#include <cstdint>
#include "../common/swizzle.h"

namespace kittens::hopper {

// Words 4 m .. 4 m + 3 of the round (a quarter: m < 4), for callers that use them before the next.
__device__ __forceinline__ void ldmatrix_quarter(uint32_t box, int t, int m, uint32_t (&w)[4]) {
  const uint32_t a = box + stmatrix_x4_offset(uint32_t(t) / 32, uint32_t(t) % 32, m, false);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "r"(a)
               : "memory");
}

template <int W>
__device__ __forceinline__ void ldmatrix_round(uint32_t box, int t, uint32_t (&w)[W]) {
  static_assert(W == 16, "one 64-column round: 16 words per thread");
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    uint32_t q[4];
    ldmatrix_quarter(box, t, m, q);
#pragma unroll
    for (int i = 0; i < 4; ++i) w[4 * m + i] = q[i];
  }
}

}  // namespace kittens::hopper
