// Shared-memory tile layouts written by TMA with 128-byte swizzle and read by wgmma
// (host-testable; the one place this index math lives).
//
// Facts (PTX ISA 8.x, "Tensor copy swizzle modes" and "wgmma matrix descriptor"; CuTe
// canonical GMMA layouts): with CU_TENSOR_MAP_SWIZZLE_128B and a 1024-B aligned tile of
// 128-B rows, the 16-B chunk index (address bits 4..6) is XORed with the row index mod 8
// (address bits 7..9).
#pragma once
#include "base.h"

namespace kittens {

constexpr uint32_t kSwizzleBytes = 128;         // one swizzled row
constexpr uint32_t kSwizzleAtomBytes = 1024;    // 8 rows: the swizzle period
constexpr uint32_t kMnChunkRows = 64;           // k rows in one MN-major chunk

TK_HD uint32_t swizzle128_offset(uint32_t row, uint32_t byte_in_row) {
  return row * kSwizzleBytes + ((((byte_in_row >> 4) ^ (row & 7u)) & 7u) << 4) + (byte_in_row & 15u);
}

// K-major operand tile (rows = M or N, 128 B of K per row: 64 bf16/fp16 elements).
TK_HD uint32_t kmajor_offset(uint32_t mn, uint32_t k, uint32_t elem_bytes) {
  return swizzle128_offset(mn, k * elem_bytes);
}

// MN-major operand tile: chunks of 128 B of MN (64 elements) x 64 k rows, chunk after chunk.
TK_HD uint32_t mnmajor_chunk_bytes() { return kMnChunkRows * kSwizzleBytes; }
TK_HD uint32_t mnmajor_offset(uint32_t mn, uint32_t k, uint32_t elem_bytes) {
  const uint32_t per_row = kSwizzleBytes / elem_bytes;
  return (mn / per_row) * mnmajor_chunk_bytes() + swizzle128_offset(k, (mn % per_row) * elem_bytes);
}

// wgmma shared-memory matrix descriptor, 128-B swizzle (PTX ISA "Matrix Descriptor Format"):
// bits 0-13 start address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4,
// 49-51 base offset (0: atoms are 1024-B aligned), 62-63 swizzle mode (1 = 128 B).
// K-major SW128: SBO = 1024 (next 8-row group), LBO unused.
// MN-major SW128: LBO = bytes between 64-element MN chunks, SBO = 1024 (next 8 k rows).
TK_HD uint64_t wgmma_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((smem_addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

// Descriptor advance, in the start-address field's 16-B units, from one k16 slice to the next at
// rows mn % 8 == 0 (unswizzled positions, where the offsets are linear in k): K-major 16
// elements along the row, MN-major 16 rows of 128 B. Adding it (and a stage's bytes >> 4) to the
// descriptor's low word equals re-encoding while the address stays below 256 KB (no carry out
// of the 14-bit field; an SM has 228 KB of shared memory).
TK_HD constexpr uint32_t desc_k16_step(bool mn_major, uint32_t elem_bytes) {
  return (mn_major ? 16 * kSwizzleBytes : 16 * elem_bytes) >> 4;
}

}  // namespace kittens
