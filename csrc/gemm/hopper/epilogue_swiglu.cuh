// The SwiGLU epilogue (gemm_layout SWIGLU_): a consumer warpgroup's 64 x 256 strip of the packed
// gate | up product (kittens/common/swiglu.h) is stored in 4 rounds through tm_out, then
// h = silu(gate) * up of its 128 features in 2 more rounds through tm_h (a second map over h,
// [M, N / 2]); the last SWIGLU_HELD rounds are held in registers and stored under the next unit's
// mainloop (gemm_layout.cuh). h comes from the fp32 accumulators (the pointwise kernel
// it replaces rounds gate and up to 16 bits first); silu(g) = g / (1 + e^-g) with __expf and
// __fdividef (for g < -88, e^-g = inf and the quotient is 0, its limit).
// Why: a SwiGLU MLP's forward otherwise reads gate and up back from memory and writes h in a
// pointwise kernel (bench_model, H100: 355 us of a 31-ms step; docs/epilogue-fusion.md).
#pragma once
#include "../../kittens/common/swiglu.h"
#include "epilogue.cuh"

namespace tk::hopper {

__device__ __forceinline__ float silu_mul(float g, float u) { return __fdividef(g, 1.f + __expf(-g)) * u; }

// The unit's epilogue rounds H = 0 .. EPI_ROUNDS - 1 (64 columns each): H < STORE_ROUNDS, gu columns
// n0 + 64 H through tm_gu; then h columns n0 / 2 + 64 (H - STORE_ROUNDS) through tm_h, from the gate
// registers of gu round H - STORE_ROUNDS and their up partners (swiglu_up_reg). Word p of a round
// packs its register pair p (columns 2p, 2p + 1 of the thread's share) in stmatrix order, as
// store_rounds_packed packs a round. Staging buffers run in round order, EPI_ROUNDS (even) per
// unit, so every unit starts on buffer 0. (alpha 1, no C: launch_impl.cuh checks.)
template <class L, int H, int R>
__device__ __forceinline__ uint32_t swiglu_word(const float (&acc)[R], int p) {
  using OutT = typename L::out_t;
  if constexpr (H < L::STORE_ROUNDS) {
    const int r = H * L::STORE_COLS / 2 + 2 * p;
    return pack2<OutT>(acc[r], acc[r + 1]);
  } else {
    const int g = (H - L::STORE_ROUNDS) * L::STORE_COLS / 2 + 2 * p;
    return pack2<OutT>(silu_mul(acc[g], acc[kittens::swiglu_up_reg(g)]),
                       silu_mul(acc[g + 1], acc[kittens::swiglu_up_reg(g + 1)]));
  }
}

// Round H's words from packed[P0], staged by stmatrix and stored through its map at its column.
template <class L, int H, int P0, int W>
__device__ __forceinline__ void swiglu_store_round(const uint32_t (&packed)[W], const CUtensorMap* tm_gu,
                                                   const CUtensorMap* tm_h, uint32_t staging, int row0, int n0,
                                                   int cw) {
  constexpr bool kH = H >= L::STORE_ROUNDS;
  const int col = kH ? n0 / 2 + (H - L::STORE_ROUNDS) * L::STORE_COLS : n0 + H * L::STORE_COLS;
  tma_round_at<L, H, false>(kH ? tm_h : tm_gu, staging, row0, col, cw,
                            [&](uint32_t base) { stmatrix_round<false, P0>(base, thread_in_warpgroup(), packed); });
}

// Immediate rounds [H, SWIGLU_FIRST_HELD) of one strip, straight after its mainloop.
template <class L, int H = 0, int R>
__device__ __forceinline__ void store_swiglu_rounds(const float (&acc)[R], const CUtensorMap* tm_gu,
                                                    const CUtensorMap* tm_h, uint32_t staging, int row0, int n0,
                                                    int cw) {
  if constexpr (H < L::SWIGLU_FIRST_HELD) {
    uint32_t packed[L::STORE_COLS / 4];
#pragma unroll
    for (int p = 0; p < L::STORE_COLS / 4; ++p) packed[p] = swiglu_word<L, H>(acc, p);
    swiglu_store_round<L, H, 0>(packed, tm_gu, tm_h, staging, row0, n0, cw);
    store_swiglu_rounds<L, H + 1>(acc, tm_gu, tm_h, staging, row0, n0, cw);
  }
}

// The held rounds [SWIGLU_FIRST_HELD, EPI_ROUNDS) packed into `held`, stored one per k tile of the
// next unit's mainloop (gemm_kernel.cuh store_held), so the tensor pipe works through them.
template <class L, int H = L::SWIGLU_FIRST_HELD, int R, int W>
__device__ __forceinline__ void pack_swiglu_held(const float (&acc)[R], uint32_t (&held)[W]) {
  if constexpr (H < L::EPI_ROUNDS) {
#pragma unroll
    for (int p = 0; p < L::STORE_COLS / 4; ++p)
      held[(H - L::SWIGLU_FIRST_HELD) * L::STORE_COLS / 4 + p] = swiglu_word<L, H>(acc, p);
    pack_swiglu_held<L, H + 1>(acc, held);
  }
}

// Held round h (runtime), template-unrolled so that every `held` index is a constant.
template <class L, int H = L::SWIGLU_FIRST_HELD, int W>
__device__ __forceinline__ void store_swiglu_held(int h, const uint32_t (&held)[W], const CUtensorMap* tm_gu,
                                                  const CUtensorMap* tm_h, uint32_t staging, int row0, int n0, int cw) {
  if constexpr (H < L::EPI_ROUNDS) {
    if (h == H) {
      swiglu_store_round<L, H, (H - L::SWIGLU_FIRST_HELD) * L::STORE_COLS / 4>(held, tm_gu, tm_h, staging, row0, n0, cw);
      return;
    }
    store_swiglu_held<L, H + 1>(h, held, tm_gu, tm_h, staging, row0, n0, cw);
  }
}

// The strip's immediate epilogue (the held rounds: pack_swiglu_held, store_swiglu_held).
template <class L, int R>
__device__ __forceinline__ void store_unit_swiglu(const float (&acc)[R], const Epilogue<typename L::out_t>& ep,
                                                  const CUtensorMap* tm_gu, const CUtensorMap* tm_h, uint32_t staging,
                                                  int row0, int n0, int M, int N, int cw) {
  static_assert(L::kSwiGLU && L::BN == 2 * kittens::kSwiGLUBlock && R == L::BN / 2, "a 256-wide SwiGLU strip");
  static_assert(L::STORE_COLS == 64 && L::EPI_ROUNDS % L::STAGING_BUFFERS == 0,
                "64-column rounds; buffer order must run on across units");
  store_swiglu_rounds<L>(acc, tm_gu, tm_h, staging, row0, n0, cw);
}

}  // namespace tk::hopper
