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

// fp32 split-K partial staging box (csrc/gemm/hopper/epilogue_split_k.cuh store_unit_partial_tma): one
// round of a 64-row accumulator strip, 32 columns, 8 KB, in 128-B swizzled lines of 32 floats.
// Untransposed: line = row (the output's rows are kernel rows). Transposed (swap-AB: kernel rows
// are the output's contiguous index): two 4-KB boxes, rows 0..31 then 32..63, line = column.
// Warp stores of the accumulator layout hit distinct banks (test_index_math.py).
TK_HD uint32_t partial_box_offset(uint32_t row, uint32_t col, bool transposed) {
  return transposed ? (row / 32) * 4096 + swizzle128_offset(col, (row % 32) * 4) : swizzle128_offset(row, col * 4);
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

// stmatrix.sync.aligned.m8n8.x4(.trans).b16 of a wgmma accumulator strip (m64nN, fp32 packed
// to 16-bit pairs) into a 64 x 64 16-bit staging box of 128-B swizzled lines. Facts (PTX ISA
// "stmatrix"): lane 8 * q + i supplies the address of row i of matrix q; the 32-bit register q
// of lane 4 * i + j holds that matrix's elements (i, 2j) and (i, 2j + 1); .trans stores each
// matrix transposed (element (i, c) into the row lane 8 * q + c addresses, at position i).
// The m-th x4 of a 64-column round stores accumulator column groups 2m and 2m + 1 (8 columns
// each) of warp `warp`'s 16 rows: matrix q = rows 8 * (q % 2) .. + 7 of group 2m + q / 2, which
// each thread holds in its accumulator pair (r, r + 1), r = 8 * m + 2 * q counted from the
// round's first register (kittens::wgmma_acc_coord; checked in test_index_math.py).
// transposed == false: the box is row-major, row r at swizzle128_offset(r, 2 * col) (the
// untransposed TMA-store box, = mnmajor_offset(col, r, 2)); true: column-major, column c's 64
// rows at swizzle128_offset(c, 2 * row) (swap-AB's box, = kmajor_offset(c, row, 2)).
// Returns the byte offset in the box of the row that lane `lane` addresses.
TK_HD uint32_t stmatrix_x4_offset(uint32_t warp, uint32_t lane, uint32_t m, bool transposed) {
  const uint32_t q = lane / 8, i = lane % 8;
  const uint32_t row = 16 * warp + 8 * (q % 2), col = 8 * (2 * m + q / 2);
  return transposed ? swizzle128_offset(col + i, 2 * row) : swizzle128_offset(row + i, 2 * col);
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
