// Which global elements each of the 512 threads moves into an operand tile (host-testable).
// Operand tile = 256 rows (M or N) x 64 k; the LDS side is swizzle.h's k-contiguous layout.
#pragma once
#include "../common/base.h"

namespace kittens::cdna3 {

constexpr int kTileRows = 256;
constexpr int kThreads = 512;
constexpr int kKLoads = 4;   // 16-B loads per thread per tile, both paths

// K-major operand (k contiguous in global): load i of thread t is the 16-B chunk of 8 k
// starting at (row, k8), written with one ds_write_b128. 8 lanes cover a 128-B global row.
struct KChunk {
  int row;
  int k8;  // first k, multiple of 8
};
TK_HD KChunk kmajor_chunk(int tid, int i) {
  const int c = tid + kThreads * i;
  return KChunk{c >> 3, (c & 7) * 8};
}

// MN-major operand (rows contiguous in global): thread t owns a 4 (k) x 8 (rows) block:
// loads r = 0..3 are 16 B of rows 8*mb..8*mb+7 at k = 4*kb + r; after an in-register transpose
// it writes row 8*mb + e, k = 4*kb..+3 with one ds_write_b64 (e = 0..7).
// Lane bits: l%8 -> mb bits 0-2, (l/8)%2 -> kb bit 0, l/16 -> mb bits 3-4; wave w -> kb bits 1-3.
// A wave thus reads two full 512-B k rows per load; each 16-lane b64 phase writes 8 distinct
// granule columns x 2 halves.
struct MnBlock {
  int mb;  // rows 8*mb .. 8*mb+7
  int kb;  // k 4*kb .. 4*kb+3
};
TK_HD MnBlock mnmajor_block(int tid) {
  const int w = tid / 64, l = tid % 64;
  return MnBlock{(l & 7) + 8 * (l >> 4), 2 * w + ((l >> 3) & 1)};
}

}  // namespace kittens::cdna3
