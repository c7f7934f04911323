// LDS layout of one operand tile: rows = M (A) or N (B), 64 k of 2-byte elements per row =
// 128 B per row, stored k-contiguous whatever the global layout (host-testable).
//
// 16-B granule g = k/8 of row r is stored at granule g ^ (r & 7) ^ ((r >> 3) & 7) of the row.
// Row r's 8 granules stay inside its own 128 B (a bijection per row), so any 8 consecutive rows
// at the same logical granule hit 8 distinct granules (ds_read_b128 fragment reads), and the
// transposing writes (rows 8q + e for 8 consecutive q, same e) do too.
//
// Bank facts (gfx942 / CDNA3): 32 banks x 4 B, 128 B/clk (ROCm Composable Kernel docs,
// "Understanding AMD GPU LDS and Bank Conflicts": 32 or 64 banks by architecture, 64 only on
// gfx950; the 64-KiB CDNA3 LDS has 32); ds_{read,write}_b128 serve 8 lanes per phase,
// ds_*_b64 16 lanes per phase.
#pragma once
#include "../common/base.h"

namespace kittens::cdna3 {

constexpr int kTileK = 64;          // k per tile row
constexpr int kRowBytes = 128;      // kTileK * 2 B
constexpr int kGranule = 16;        // bytes

TK_HD int swz_granule(int row, int g) { return g ^ (row & 7) ^ ((row >> 3) & 7); }

// Byte offset of element (row, k) inside one operand tile.
TK_HD int lds_offset(int row, int k) {
  return row * kRowBytes + swz_granule(row, k >> 3) * kGranule + (k & 7) * 2;
}

// Address identities the kernel uses to share read addresses (checked on the host):
// lds_offset(r + 64, k) == lds_offset(r, k) + kRow64Bytes  (64 rows keep both swizzle terms);
// lds_offset(r, k + 32) == lds_offset(r, k) ^ kChunkXor    for k < 32 (granule bit 2 flips).
constexpr int kRow64Bytes = 64 * kRowBytes;
constexpr int kChunkXor = 4 * kGranule;

struct RowK {
  int row;
  int k;
};
// Inverse of lds_offset for even byte offsets.
TK_HD RowK lds_coord(int offset) {
  const int row = offset / kRowBytes, in_row = offset % kRowBytes;
  const int g = swz_granule(row, in_row / kGranule);  // XOR with the same row term is its own inverse
  return RowK{row, g * 8 + (in_row % kGranule) / 2};
}

}  // namespace kittens::cdna3
