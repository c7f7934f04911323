// Tile geometry of the CDNA3 GEMM and the wave/lane -> tile-coordinate maps shared by the
// kernel and the host model (host-testable).
#pragma once
#include "../../kittens/cdna3/fragments.h"
#include "../../kittens/cdna3/copy_map.h"
#include "../../kittens/cdna3/raster.h"
#include "../../kittens/cdna3/swizzle.h"

namespace tk::cdna3 {

using kittens::RowCol;

constexpr int BM = 256, BN = 256, BK = 64;
constexpr int THREADS = 512, WAVES = 8;
constexpr int WAVES_M = 2, WAVES_N = 4;     // wave grid
constexpr int WM = BM / WAVES_M;            // 128 rows per wave
constexpr int WN = BN / WAVES_N;            // 64 columns per wave
constexpr int TM = WM / 16, TN = WN / 16;   // 8 x 4 MFMA tiles per wave
constexpr int KCHUNKS = BK / 32;            // one ds_read_b128 per fragment per chunk
constexpr int MFMA_PER_KTILE = TM * TN * KCHUNKS * 2;  // 128 per wave per 64-k tile
constexpr int GROUP_M = 8;                  // grouped raster band height (tiles)
constexpr int LDS_TILE_BYTES = BM * kittens::cdna3::kRowBytes;  // 32 KiB per operand
constexpr int LDS_BYTES = 2 * LDS_TILE_BYTES;                     // 64 KiB: A then B

static_assert(BM == kittens::cdna3::kTileRows && BN == kittens::cdna3::kTileRows, "copy maps assume 256 rows");
static_assert(BK == kittens::cdna3::kTileK, "LDS rows hold 64 k");
static_assert(WAVES * 64 == THREADS && WAVES_M * WAVES_N == WAVES, "wave grid");
static_assert(MFMA_PER_KTILE == BM * BN * BK / (16 * 16 * 16) / WAVES, "MFMA count");

// ---- 8-wave ping-pong schedule -------------------------------------------------------------
// Iteration kt (0..ktiles-1) of the main loop runs kPhases phases per wave, each ended by
// lds_barrier (lgkmcnt(0) + s_barrier). Group 1 (wave row 1) takes one extra barrier before the
// loop and group 0 one after it, so group 1 runs one barrier slot behind: in slot s group 0
// runs its phase s and group 1 its phase s - 1. Phases alternate memory work and MFMA, so on
// each SIMD (which holds one wave of each group) one wave feeds LDS/registers while the other
// runs MFMA. Phase idx of iteration kt:
//   0      W: write k tile kt (prefetched registers) to LDS, issue the global loads of kt + 1
//   1      -: no work. It separates group 1's write of tile kt from group 0's first read of it
//            (without it the two would share a slot) and keeps the memory/MFMA parity. (Giving
//            it half of the previous tile's last MFMAs kept 32 fragment VGPRs live across the
//            write phase and spilled ~400 B: measured by the ISA gate.)
//   2,4,6,8  R: ds_read the fragments of read p = (idx - 2) / 2: chunk c = p / 2, row half ih = p % 2
//   3,5,7,9  C: the 32 MFMAs of read p
// No phase is conditional: a branch around the MFMAs made the compiler copy the 128 accumulators
// through scratch at the join (ISA gate: 832 B scratch), so the loop body is straight-line.
// The host proof (test/cdna3_host, case pingpong) checks: memory/MFMA alternation per slot, every
// read of tile t after both groups' writes of t and before either group's write of t + 1, and
// 128 MFMAs per tile.
constexpr int kPhases = 10;
enum PhaseKind : int { kPhaseNone = 0, kPhaseWrite = 1, kPhaseRead = 2, kPhaseMma = 3 };
TK_HD int ping_pong_group(int w) { return w / WAVES_N; }
TK_HD int phase_kind(int idx) {
  if (idx == 0) return kPhaseWrite;
  if (idx == 1) return kPhaseNone;
  return idx % 2 == 0 ? kPhaseRead : kPhaseMma;
}
// Barrier slot of a phase (the barrier ending it has the same index).
TK_HD int phase_slot(int group, int kt, int idx) { return kt * kPhases + idx + group; }
// MFMAs of an MMA phase (per wave): 2 halves x 4 row tiles x 4 column tiles.
TK_HD int phase_mfmas(int) { return 2 * TM / 2 * TN; }

// Row (in the A tile) whose fragment lane `lane` of wave `w` reads for MFMA row-tile i.
TK_HD int a_frag_row(int w, int i, int lane) { return WM * (w / WAVES_N) + 16 * i + lane % 16; }
// Column (row of the B tile) read by lane `lane` of wave `w` for MFMA column-tile j.
TK_HD int b_frag_col(int w, int j, int lane) { return WN * (w % WAVES_N) + 16 * j + lane % 16; }
// Block-relative output element of accumulator register r of tile (i, j), lane, wave w.
TK_HD RowCol acc_out_coord(int w, int i, int j, int lane, int r) {
  const RowCol f = kittens::cdna3::mfma_acc_coord(lane, r);
  return RowCol{WM * (w / WAVES_N) + 16 * i + f.row, WN * (w % WAVES_N) + 16 * j + f.col};
}

// Epilogue offsets. Accumulator register r of tile (i, j) of lane `lane` is block-relative
// element (epi_wave_row(w) + 16 i + epi_lane_row(lane) + r, epi_wave_col(w) + 16 j + epi_lane_col(lane))
// (== acc_out_coord, checked on the host). Element offsets from the row tile's first element
// (row0 = m0 + wave row + 16 i, col n0 + wave col) split into a per-lane part and an (r, j) step;
// 32-bit math: the launcher keeps 16 * N * 4 and (15 c_s0 + 63 c_s1) * 4 below 2^31.
TK_HD int epi_wave_row(int w) { return WM * (w / WAVES_N); }
TK_HD int epi_wave_col(int w) { return WN * (w % WAVES_N); }
TK_HD int epi_lane_row(int lane) { return kittens::cdna3::mfma_acc_coord(lane, 0).row; }
TK_HD int epi_lane_col(int lane) { return kittens::cdna3::mfma_acc_coord(lane, 0).col; }
TK_HD uint32_t epi_out_lane_off(int lane, int N) { return (uint32_t)(epi_lane_row(lane) * N + epi_lane_col(lane)); }
TK_HD uint32_t epi_out_step(int r, int j, int N) { return (uint32_t)(r * N + 16 * j); }
TK_HD uint32_t epi_c_lane_off(int lane, int64_t c_s0, int64_t c_s1) {
  return (uint32_t)(epi_lane_row(lane) * (uint32_t)c_s0 + epi_lane_col(lane) * (uint32_t)c_s1);
}
TK_HD uint32_t epi_c_step(int r, int j, int64_t c_s0, int64_t c_s1) {
  return (uint32_t)(r * (uint32_t)c_s0 + 16 * j * (uint32_t)c_s1);
}

// Bytes a descriptor may address for the operand tile whose first element is (row0, k0).
// K-major: element (row, k) at row * ld + k; MN-major: at k * ld + row. Counted from the
// tile's first element to one past the matrix's last element (clipped loads read 0 beyond).
TK_HD int64_t operand_bytes(bool mn, int64_t ld, int rows, int K, int row0, int k0) {
  const int64_t end = mn ? (int64_t)(K - 1) * ld + rows : (int64_t)(rows - 1) * ld + K;
  const int64_t first = mn ? (int64_t)k0 * ld + row0 : (int64_t)row0 * ld + k0;
  // Rounded up to whole 16-B granules: the range check is per dword, so a last element sharing a
  // dword with the byte past the end would otherwise read as 0. Safe: with 16-B aligned pointers
  // and ld, tile starts are granule aligned and the rounded range ends in the last element's
  // own granule (never a new page).
  return ((end - first) * 2 + 15) & ~int64_t(15);
}
TK_HD int64_t operand_first(bool mn, int64_t ld, int row0, int k0) {
  return mn ? (int64_t)k0 * ld + row0 : (int64_t)row0 * ld + k0;
}
// Byte offset, from the tile's first element, of thread `tid`'s load `i` (0..3); 32-bit math,
// valid because the launcher keeps operand_span_bytes below 2^31.
TK_HD uint32_t operand_voff(bool mn, int64_t ld, int tid, int i) {
  if (mn) {
    const kittens::cdna3::MnBlock b = kittens::cdna3::mnmajor_block(tid);
    return (uint32_t)((4 * b.kb + i) * (uint32_t)ld + 8 * b.mb) * 2u;
  }
  const kittens::cdna3::KChunk c = kittens::cdna3::kmajor_chunk(tid, i);
  return (uint32_t)(c.row * (uint32_t)ld + c.k8) * 2u;
}
// Largest in-tile byte offset + 16 must stay below 2^31 (32-bit voffset): the launcher checks.
TK_HD int64_t operand_span_bytes(bool mn, int64_t ld) {
  return mn ? ((int64_t)(BK - 1) * ld + BM) * 2 : ((int64_t)(BM - 1) * ld + BK) * 2;
}

}  // namespace tk::cdna3
