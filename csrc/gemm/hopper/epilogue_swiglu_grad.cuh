// The SwiGLU backward epilogue (gemm_layout SWIGLU_ 2): the unit's product is dL/dh for 128 rows x
// 256 features (dh = dy . W_down, the down projection's input gradient), and instead of dh the
// warpgroup stores, for its 64-row strip, dL/dgate and dL/dup of those features:
//   s = sigmoid(g), d_up = dh g s, d_gate = dh u s (1 + g (1 - s))      (fp32, dh unrounded)
// with g, u read from the forward's packed gate | up product (kittens/common/swiglu.h). The producer
// loads them into the stage ring after the unit's k tiles (producer_loads.cuh issue_grad_stages:
// stage r holds round r's 64 x 64 boxes, gate then up, per consumer warpgroup), so they arrive
// while the mainloop runs; each round reads its two boxes by ldmatrix in the accumulator's fragment
// order (the inverse of the stmatrix the stores use: kittens::stmatrix_x4_offset), releases the
// stage, and stores d_gate through tm_dg and d_up through tm_du (staging buffers 0 and 1).
// Why: the backward's activation gradient otherwise reads dh, g and u back from memory and writes
// d_gate and d_up in a pointwise kernel (bench_model, H100: 593 us of a 31-ms step;
// docs/epilogue-fusion.md). sigmoid as 1 / (1 + e^-g) with __expf and __fdividef (g < -88:
// e^-g = inf and s = 0, its limit).
#pragma once
#include "../../kittens/common/swiglu.h"
#include "../../kittens/hopper/ldmatrix.cuh"
#include "../../kittens/hopper/mbarrier.cuh"
#include "epilogue.cuh"
#include "stage_release.cuh"

namespace tk::hopper {

__device__ __forceinline__ float2 unpack2(uint32_t w, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}
__device__ __forceinline__ float2 unpack2(uint32_t w, __half) { return __half22float2(*reinterpret_cast<const __half2*>(&w)); }

// (d_gate, d_up) of one element from dL/dh and the forward's gate and up values.
__device__ __forceinline__ float2 swiglu_grad(float dh, float g, float u) {
  const float s = __fdividef(1.f, 1.f + __expf(-g));
  return make_float2(dh * u * s * (1.f + g * (1.f - s)), dh * g * s);
}

// Rounds H .. STORE_ROUNDS - 1 of one strip (64 columns each; `it`: the consumer's ring count, at
// the unit's first gate / up stage on entry and past its last on return). Store round 2 H is its
// d_gate (staging buffer 0), 2 H + 1 its d_up (buffer 1); those from GRAD_FIRST_HELD on (with
// GRAD_HELD > 0) are packed into `held` instead, stored under the next unit's first k tiles
// (store_swiglu_grad_held, from gemm_kernel.cuh's store_held), so that the tensor pipe works
// through their staging writes and waits.
template <class L, int H = 0, int R, int W>
__device__ __forceinline__ void store_swiglu_grad_rounds(const float (&acc)[R], uint32_t (&held)[W],
                                                         const uint8_t* smem, uint64_t* full, uint64_t* empty,
                                                         uint32_t& it, const CUtensorMap* tm_dg,
                                                         const CUtensorMap* tm_du, uint32_t staging, int row0, int n0,
                                                         int cw, int rank, int xp) {
  static_assert(L::kSwiGLUGrad && L::STRIPS == 1 && L::STORE_COLS == 64 && L::STAGING_BUFFERS == 2 &&
                    L::GRAD_STAGES == L::STORE_ROUNDS,
                "64-column rounds, one strip per warpgroup, staging buffers 0 / 1 for d_gate / d_up");
  if constexpr (H < L::STORE_ROUNDS) {
    using InT = typename L::in_t;
    using OutT = typename L::out_t;
    constexpr int kWords = L::STORE_COLS / 4;  // 16-bit pairs per thread and round
    constexpr bool kHeld = L::GRAD_HELD > 0 && 2 * H >= L::GRAD_FIRST_HELD;
    const int t = thread_in_warpgroup();
    const uint32_t s = it % L::STAGES;
    mbar_wait(&full[s], (it / L::STAGES) & 1);
    const uint32_t box = smem_u32(smem) + s * L::STAGE_BYTES + cw * 2 * L::GRAD_BOX_BYTES;
    uint32_t g[kWords], u[kWords];
    kittens::hopper::ldmatrix_round(box, t, g);
    kittens::hopper::ldmatrix_round(box + L::GRAD_BOX_BYTES, t, u);
    release_stage<L>(empty, int(s), rank);  // (ldmatrix is warp-synchronous: the warp's reads are done)
    ++it;
    uint32_t dg[kWords], du[kWords];
#pragma unroll
    for (int p = 0; p < kWords; ++p) {
      const int r = H * L::STORE_COLS / 2 + 2 * p;  // word p packs accumulator pair (r, r + 1)
      const float2 gf = unpack2(g[p], InT{}), uf = unpack2(u[p], InT{});
      float2 e0 = swiglu_grad(acc[r], gf.x, uf.x), e1 = swiglu_grad(acc[r + 1], gf.y, uf.y);
      if (xp & kXpGradNoMath)  // (TK_EXPERIMENTS builds only: gemm_experiments.cuh)
        e0 = make_float2(acc[r] * uf.x, acc[r] * gf.x), e1 = make_float2(acc[r + 1] * uf.y, acc[r + 1] * gf.y);
      dg[p] = pack2<OutT>(e0.x, e1.x);
      du[p] = pack2<OutT>(e0.y, e1.y);
      if constexpr (kHeld) {
        held[(2 * H - L::GRAD_FIRST_HELD) * kWords + p] = dg[p];
        held[(2 * H + 1 - L::GRAD_FIRST_HELD) * kWords + p] = du[p];
      }
    }
    if constexpr (!kHeld) {
      const int col = n0 + H * L::STORE_COLS;
      tma_round_at<L, 2 * H, false>(
          tm_dg, staging, row0, col, cw, [&](uint32_t base) { stmatrix_round<false>(base, t, dg); }, xp);
      tma_round_at<L, 2 * H + 1, false>(
          tm_du, staging, row0, col, cw, [&](uint32_t base) { stmatrix_round<false>(base, t, du); }, xp);
    }
    store_swiglu_grad_rounds<L, H + 1>(acc, held, smem, full, empty, it, tm_dg, tm_du, staging, row0, n0, cw, rank,
                                       xp);
  }
}

// Held store round e (runtime; GRAD_FIRST_HELD <= e < EPI_ROUNDS), template-unrolled so that every
// `held` index is a constant: d_gate (even e) or d_up of column round e / 2 of the previous unit.
template <class L, int E = L::GRAD_FIRST_HELD, int W>
__device__ __forceinline__ void store_swiglu_grad_held(int e, const uint32_t (&held)[W], const CUtensorMap* tm_dg,
                                                       const CUtensorMap* tm_du, uint32_t staging, int row0, int n0,
                                                       int cw) {
  if constexpr (L::GRAD_HELD > 0 && E < L::EPI_ROUNDS) {
    if (e == E) {
      constexpr int P0 = (E - L::GRAD_FIRST_HELD) * L::STORE_COLS / 4;
      tma_round_at<L, E, false>(E % 2 ? tm_du : tm_dg, staging, row0, n0 + E / 2 * L::STORE_COLS, cw,
                                [&](uint32_t base) { stmatrix_round<false, P0>(base, thread_in_warpgroup(), held); });
      return;
    }
    store_swiglu_grad_held<L, E + 1>(e, held, tm_dg, tm_du, staging, row0, n0, cw);
  }
}

}  // namespace tk::hopper
