// MFMA v_mfma_f32_16x16x16{bf16_1k,f16} register fragments of one 64-lane wave (host-testable).
//
// Facts (AMD Matrix Instruction Calculator, `--architecture cdna3 --instruction
// v_mfma_f32_16x16x16f16 --register-layout`, github.com/ROCm/amd_matrix_instruction_calculator;
// the bf16_1k form has the same 16x16x16 shape and layout, and clang-19 emits it on gfx942 as
// `v_mfma_f32_16x16x16_bf16` for __builtin_amdgcn_mfma_f32_16x16x16bf16_1k):
//   A[i][k] (16 x 16): lane i + 16*(k/4), element k%4 of the 4-element operand (2 VGPRs).
//   B[k][j] (16 x 16): lane j + 16*(k/4), element k%4.
//   C/D[i][j] (fp32):  lane j + 16*(i/4), accumulator register i%4.
// i.e. lane l holds A row l%16 / B column l%16 at k = 4*(l/16)..+3, and D rows 4*(l/16)+r, column l%16.
#pragma once
#include "../common/base.h"
#include "../common/fragments.h"

namespace kittens::cdna3 {

constexpr int kWave = 64;   // lanes per wavefront
constexpr int kMfma = 16;   // M = N = K of one MFMA

// A operand: (row, k) of element `e` (0..3) held by `lane`.
TK_HD RowCol mfma_a_coord(int lane, int e) { return RowCol{lane % 16, 4 * (lane / 16) + e}; }
// B operand: (k, col) of element `e` held by `lane`.
TK_HD RowCol mfma_b_coord(int lane, int e) { return RowCol{4 * (lane / 16) + e, lane % 16}; }
// Accumulator: (row, col) of register `r` (0..3) held by `lane`.
TK_HD RowCol mfma_acc_coord(int lane, int r) { return RowCol{4 * (lane / 16) + r, lane % 16}; }

// The kernel reads 8 consecutive k (one ds_read_b128) per lane per 32-k chunk `c` and feeds the
// low 4 to MFMA half h = 0 and the high 4 to h = 1. The MFMA's own k index `kk` (0..15, as in the
// layout above) therefore stands for tile k = 32c + 8*(kk/4) + 4h + kk%4. A and B use the same map,
// so the 4 MFMAs (c, h) of a 64-k tile sum every k exactly once (a permutation of the k order).
TK_HD int frag_tile_k(int c, int h, int kk) { return 32 * c + 8 * (kk / 4) + 4 * h + kk % 4; }
// First tile k of the 16-byte LDS read of `lane` for chunk `c` (covers both halves).
TK_HD int frag_read_k(int lane, int c) { return 32 * c + 8 * (lane / 16); }

}  // namespace kittens::cdna3
