// The SwiGLU epilogue (gemm_layout SWIGLU_): a consumer warpgroup's 64 x 256 strip of the packed
// gate | up product (kittens/common/swiglu.h) is stored as the other TMA-store epilogues store it
// (4 rounds through tm_out), then h = silu(gate) * up of its 128 features in 2 more rounds through
// tm_h (a second map over h, [M, N / 2]). h comes from the fp32 accumulators (the pointwise kernel
// it replaces rounds gate and up to 16 bits first); silu(g) = g / (1 + e^-g) with __expf and
// __fdividef (for g < -88, e^-g = inf and the quotient is 0, its limit).
// Why: a SwiGLU MLP's forward otherwise reads gate and up back from memory and writes h in a
// pointwise kernel (bench_model, H100: 355 us of a 31-ms step; docs/epilogue-fusion.md).
#pragma once
#include "../../kittens/common/swiglu.h"
#include "epilogue.cuh"

namespace tk::hopper {

__device__ __forceinline__ float silu_mul(float g, float u) { return __fdividef(g, 1.f + __expf(-g)) * u; }

// h rounds Q, Q + 1, ... of one strip: round Q covers h columns h0 + 64 Q .. + 63, from the gate
// registers of gu round Q and their up partners (swiglu_up_reg), packed in stmatrix order as
// store_rounds_packed packs a round. Staging buffers continue the unit's order (round index
// STORE_ROUNDS + Q), so with an even number of rounds per unit every unit starts on buffer 0.
template <class L, int Q = 0, int R>
__device__ __forceinline__ void store_h_rounds(const float (&acc)[R], const CUtensorMap* tm_h, uint32_t staging,
                                               int row0, int h0, int cw) {
  if constexpr (Q < kittens::kSwiGLUBlock / L::STORE_COLS) {
    using OutT = typename L::out_t;
    constexpr int H = L::STORE_ROUNDS + Q, kGate = Q * L::STORE_COLS / 2;
    uint32_t packed[L::STORE_COLS / 4];
#pragma unroll
    for (int p = 0; p < L::STORE_COLS / 4; ++p) {
      const int g = kGate + 2 * p;
      packed[p] = pack2<OutT>(silu_mul(acc[g], acc[kittens::swiglu_up_reg(g)]),
                              silu_mul(acc[g + 1], acc[kittens::swiglu_up_reg(g + 1)]));
    }
    tma_round_at<L, H, false>(tm_h, staging, row0, h0 + Q * L::STORE_COLS, cw,
                              [&](uint32_t base) { stmatrix_round<false>(base, thread_in_warpgroup(), packed); });
    store_h_rounds<L, Q + 1>(acc, tm_h, staging, row0, h0, cw);
  }
}

// The strip's whole epilogue: gu (columns n0 ..) then h (columns n0 / 2 ..).
template <class L, int R>
__device__ __forceinline__ void store_unit_swiglu(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                  const CUtensorMap* tm_gu, const CUtensorMap* tm_h, uint32_t staging,
                                                  int row0, int n0, int M, int N, int cw) {
  static_assert(L::kSwiGLU && L::BN == 2 * kittens::kSwiGLUBlock && R == L::BN / 2, "a 256-wide SwiGLU strip");
  static_assert((L::STORE_ROUNDS + kittens::kSwiGLUBlock / L::STORE_COLS) % L::STAGING_BUFFERS == 0,
                "buffer order must run on across units");
  store_rounds_packed<L, false, L::STORE_ROUNDS>(acc, ep, tm_gu, tm_gu, staging, row0, n0, M, N, cw);
  store_h_rounds<L>(acc, tm_h, staging, row0, n0 / 2, cw);
}

}  // namespace tk::hopper
