// Skinny GEMM (skinny_kernel.cuh) with the weight rows and the token rows streamed through a
// shared-memory ring by bulk copies (PTX cp.async.bulk, completing on mbarriers) instead of
// per-lane 16-B loads into registers: one producer warp keeps every stage of the ring in flight,
// so the bytes in flight per SM do not depend on the consumers' registers or on when each warp
// reaches its next load. Consumer warps read their 32-wide K chunk of a stage with 16-B shared
// loads in the same lane order as the register path (kittens::skinny_chunk_k), so the dot
// products and the warp-ordered reduction are the same: bitwise deterministic.
// For M <= 8 (one 8-token tile) in 16-row CTAs; SkinnyPlan::load == kLoadBulk (A/B knob
// TK_HOPPER_SKINNY_LOAD=2). K past the last whole stage goes through the register path.
#pragma once
#include "../../kittens/hopper/mbarrier.cuh"
#include "../../kittens/hopper/tma.cuh"
#include "skinny_kernel.cuh"

namespace tk::hopper::skinny {

constexpr int kLoadBulk = 2;

// Ring geometry; BYTES is the launch's dynamic shared memory.
template <int WARPS, int STAGES_>
struct BulkRing {
  static constexpr int ROWS = 16, TOKENS = 8;  // weight lines, then token lines, per stage
  static constexpr int KC = 32 * WARPS;       // K columns per stage: one 32-wide chunk per consumer warp
  // Bytes per staged line, 64 mod 128: the 8 lanes of a quarter-warp (rows g, g + 1 x 4 lanes of
  // 16 B) read 8 distinct 16-B bank groups.
  static constexpr int PITCH = KC * 2 + 64;
  static constexpr int STAGES = STAGES_;
  static constexpr int STAGE_BYTES = (ROWS + TOKENS) * PITCH;
  static constexpr int BYTES = STAGES * STAGE_BYTES;
  static_assert(KC * 2 % 16 == 0 && PITCH % 16 == 0, "bulk copies move 16-B multiples to 16-B aligned lines");
};

__device__ __forceinline__ uint4 lds128(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(kittens::hopper::smem_u32(p))
               : "memory");
  return v;
}

template <typename T, typename OutT, int WARPS, int STAGES>
__global__ void __launch_bounds__((WARPS + 1) * 32) skinny_bulk_kernel(const Args<OutT> p) {
  namespace kh = kittens::hopper;
  using R = BulkRing<WARPS, STAGES>;
  __shared__ float red[WARPS][R::ROWS][R::TOKENS + 1];
  __shared__ uint64_t full[STAGES], empty[STAGES];
  extern __shared__ __align__(128) uint8_t ring[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int row0 = blockIdx.x * R::ROWS;
  const int kstages = p.K / R::KC;         // whole stages through the ring, the rest through registers
  const int xlines = p.M < R::TOKENS ? p.M : R::TOKENS;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) kh::mbar_init(&full[s], 1), kh::mbar_init(&empty[s], WARPS);
    kh::mbar_init_fence();
  }
  // Token lines past M are never copied: zeroed once (they feed only outputs past M, never stored).
  const int zero_vecs = (R::TOKENS - xlines) * R::PITCH / 16;
  for (int i = threadIdx.x; i < STAGES * zero_vecs; i += blockDim.x) {
    uint8_t* line0 = ring + (i / zero_vecs) * R::STAGE_BYTES + (R::ROWS + xlines) * R::PITCH;
    reinterpret_cast<uint4*>(line0)[i % zero_vecs] = make_uint4(0u, 0u, 0u, 0u);
  }
  __syncthreads();
  // A programmatic dependent launch (GemmArgs::dependent) waits here for the previous grid.
  asm volatile("griddepcontrol.wait;" ::: "memory");

  float acc[1][1][4] = {{{0.f, 0.f, 0.f, 0.f}}};
  if (warp == WARPS) {
    // ---- producer warp: lane l < 16 copies weight row row0 + l (clamped to N - 1), lanes
    // 16 .. 16 + xlines - 1 the token rows, KC columns of stage t each.
    const uint16_t* line = nullptr;
    if (lane < R::ROWS)
      line = static_cast<const uint16_t*>(p.w) + int64_t(min(row0 + lane, p.N - 1)) * p.ldw;
    else if (lane - R::ROWS < xlines)
      line = static_cast<const uint16_t*>(p.x) + int64_t(lane - R::ROWS) * p.ldx;
    const uint32_t stage_tx = uint32_t(R::ROWS + xlines) * R::KC * 2;
    for (int t = 0; t < kstages; ++t) {
      const int s = t % STAGES;
      kh::mbar_wait(&empty[s], ((t / STAGES) & 1) ^ 1);  // the first round passes at once
      if (lane == 0) kh::mbar_arrive_expect_tx(&full[s], stage_tx);
      __syncwarp();
      if (line != nullptr)
        kh::bulk_load(ring + s * R::STAGE_BYTES + lane * R::PITCH, line + int64_t(t) * R::KC, R::KC * 2, &full[s]);
    }
  } else {
    // ---- consumer warps: chunk `warp` of every stage, then the K past the last stage.
    const int k_lane = (warp * 32 + 8 * q) * 2;  // byte offset of the lane's 8 columns in a line
    for (int t = 0; t < kstages; ++t) {
      const int s = t % STAGES;
      kh::mbar_wait(&full[s], (t / STAGES) & 1);
      const uint8_t* st = ring + s * R::STAGE_BYTES + k_lane;
      uint4 wv[1][2], xv[1];
      wv[0][0] = lds128(st + g * R::PITCH);
      wv[0][1] = lds128(st + (8 + g) * R::PITCH);
      xv[0] = lds128(st + (R::ROWS + g) * R::PITCH);
      __syncwarp();
      if (lane == 0) kh::mbar_arrive(&empty[s]);  // release: the reads above are done with the stage
      chunk_mma<T, 1, 1>(acc, wv, xv);
    }
    const uint16_t* wl[1][2];
    const uint16_t* xl[1];
    lane_lines<1, 1>(p.w, p.ldw, p.x, p.ldx, p.N, p.M, row0, g, wl, xl);
    register_chunks<T, 1, 1, WARPS, kLoadPrefetch>(acc, wl, xl, kstages * (R::KC / 32) + warp, p.K, warp, q);
  }
  reduce_store<OutT, 1, 1, WARPS>(acc, red, p, row0, warp, lane, (WARPS + 1) * 32);
}

}  // namespace tk::hopper::skinny
