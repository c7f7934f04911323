// The RoPE epilogue (gemm_layout SWIGLU_ 3): rotary position embedding of the unit's product, in
// the rotate-half form (transformers' apply_rotary_pos_emb) over heads of 128 columns:
//   y[d]      = x[d] cos[m, d] - x[d + 64] sin[m, d]
//   y[d + 64] = x[d + 64] cos[m, d] + x[d] sin[m, d]      (d < 64, m the output row: the token)
// from the fp32 accumulators, before the ordinary epilogue stores y (its held rounds and early
// k tiles included). Register facts (kittens::wgmma_acc_coord): a 64 x 256 strip's 64-column
// round H is registers 32 H .. 32 H + 31 of each thread, and every round puts the same round-local
// columns in the same registers, so d and d + 64 of one head (rounds 2k, 2k + 1 of a tile whose
// first column is a multiple of 128) are registers r and r + 32 of one thread; and round-local
// column j is head dimension j or j + 64, so one 64 x 64 box of cos and one of sin (d < 64, the
// strip's rows), read by ldmatrix in the accumulator's fragment order (the inverse of the
// stmatrix the stores use), serve all four rounds and both heads of the tile.
// The producer loads those boxes into one ring stage after the unit's k tiles (issue_rope_stage),
// as the SwiGLU backward loads its gate / up boxes (producer_loads.cuh issue_grad_stages).
// Why: the compiled model otherwise reads q and k back from memory and rotates them in a pointwise
// kernel (bench_model, H100: ~264 us of a 31-ms step; docs/epilogue-fusion.md).
#pragma once
#include "../../kittens/hopper/ldmatrix.cuh"
#include "../../kittens/hopper/mbarrier.cuh"
#include "epilogue_swiglu_grad.cuh"
#include "stage_release.cuh"

namespace tk::hopper {

// Producer: the unit's table stage (its empty slot waited for; `it`: the producer's ring count,
// past the stage on return). Per consumer warpgroup c: rows m0 + 64 c .. of cos, then of sin, from
// their maps ({64, M}, 64 x 64 boxes; rows past M arrive zero-filled and are never stored). Every
// column tile of a row band reads the same tables: L2 keeps them (no evict-first hint).
template <class L>
__device__ __forceinline__ void issue_rope_stage(uint8_t* smem, uint64_t* full, uint64_t* empty, uint32_t& it, int m0,
                                                 const CUtensorMap* tm_cos, const CUtensorMap* tm_sin, bool lead) {
  static_assert(L::ROPE_STAGES == 1, "one table stage per unit");
  const uint32_t s = it % L::STAGES;
  mbar_wait(&empty[s], ((it / L::STAGES) & 1) ^ 1);
  ++it;
  if (!lead) return;
  mbar_arrive_expect_tx(&full[s], uint32_t(2 * L::CONSUMERS * L::ROPE_BOX_BYTES));
#pragma unroll
  for (int c = 0; c < L::CONSUMERS; ++c) {
    uint8_t* box = smem + s * L::STAGE_BYTES + c * 2 * L::ROPE_BOX_BYTES;
    tma_load_2d(box, tm_cos, &full[s], 0, m0 + 64 * c);
    tma_load_2d(box + L::ROPE_BOX_BYTES, tm_sin, &full[s], 0, m0 + 64 * c);
  }
}

// Consumer: rotates the strip's accumulators in place with the unit's table stage (`it`: the
// consumer's ring count, at that stage on entry, past it on return; the stage is released as soon
// as the tables are in registers). cw: the strip's warpgroup.
template <class L, int R>
__device__ __forceinline__ void rope_rotate(float (&acc)[R], const uint8_t* smem, uint64_t* full, uint64_t* empty,
                                            uint32_t& it, int cw, int rank) {
  static_assert(L::kRope && L::STRIPS == 1 && L::STORE_COLS == 64 && L::BN == 256 && R == 128,
                "a 64 x 256 strip: two heads of 128, four 64-column rounds");
  using InT = typename L::in_t;
  const int t = thread_in_warpgroup();
  const uint32_t s = it % L::STAGES;
  mbar_wait(&full[s], (it / L::STAGES) & 1);
  const uint32_t box = smem_u32(smem) + s * L::STAGE_BYTES + cw * 2 * L::ROPE_BOX_BYTES;
  // A quarter of the tables at a time (4 words of cos, 4 of sin): all 16 of each beside the 128
  // accumulators spilled (ptxas: 32 B).
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    uint32_t c[4], sn[4];
    kittens::hopper::ldmatrix_quarter(box, t, m, c);
    kittens::hopper::ldmatrix_quarter(box + L::ROPE_BOX_BYTES, t, m, sn);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 cf = unpack2(c[q], InT{}), sf = unpack2(sn[q], InT{});
#pragma unroll
      for (int head = 0; head < 2; ++head) {
        const int r = head * L::STORE_COLS + 8 * m + 2 * q;  // word 4 m + q: pair (r, r + 1); d + 64: r + 32
        const float x0 = acc[r], x1 = acc[r + 1], z0 = acc[r + 32], z1 = acc[r + 33];
        acc[r] = fmaf(x0, cf.x, -z0 * sf.x);
        acc[r + 1] = fmaf(x1, cf.y, -z1 * sf.y);
        acc[r + 32] = fmaf(z0, cf.x, x0 * sf.x);
        acc[r + 33] = fmaf(z1, cf.y, x1 * sf.y);
      }
    }
  }
  release_stage<L>(empty, int(s), rank);  // (ldmatrix is warp-synchronous: the warp's reads are done)
  ++it;
}

}  // namespace tk::hopper
