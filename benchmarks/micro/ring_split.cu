// Operand rings, coupled or split: does a skinny GEMM's weight stream run faster when the token
// tile (an L2 hit) sits in a shallower ring of its own, so that more of shared memory holds
// weight bytes in flight?
//
// Why (benchmarks/NOTES.md, 2026-12-02e): the skinny plans are latency-bound (2026-11-28c: fewer
// stages in flight, proportionally slower) and each stage holds the token tile next to the weight
// tile, so at M = 256 half to two thirds of the ring is token bytes that arrive from L2 long
// before the weights do from DRAM. Here every k tile t has its weight tile in slot t % SW (loaded
// when k tile t - SW is released) and its token tile in slot t % SX (loaded when t - SX is
// released); one full barrier per weight slot expects both. SX == SW is the GEMMs' coupled ring.
// The consumers do no math: they hold each k tile for `hold` SM cycles on an emulated tensor pipe
// (the tile's wgmma time: 512 for a one-warpgroup 128x128 tile, 1024 for 128x256) and release it
// as the GEMM does -- after the next tile is issued (wait_group 1), or at once when the next tile
// has not landed (the early release).
//   R: weight rows per tile; XR: token rows; PAIR: CTAs 2c, 2c + 1 share the weight tile, own
//   token rows [r XR, r XR + XR) (M = 256 on 128-row tiles); `splits`: K split in that many
//   ranges, one per CTA (the swapped split-K plans).
// Each call follows a 256 MB memset (do_bench's flush). Prints us per call (median of 25).
// Build and run: bash benchmarks/micro/run_ring_split.sh (H100/H200).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include "../../csrc/kittens/hopper/gl.cuh"
#include "../../csrc/kittens/hopper/mbarrier.cuh"
#include "../../csrc/kittens/hopper/tma.cuh"
#include "flush_timer.cuh"

using namespace kittens::hopper;

template <int R, int XR, bool PAIR, int SW, int SX>
__global__ void __launch_bounds__(160, 1)
    ring_kernel(const __grid_constant__ CUtensorMap w, const __grid_constant__ CUtensorMap x, int wtiles, int ktiles,
                int hold, unsigned* sink) {
  static_assert(SX >= 1 && SX <= SW, "token slots: 1..SW");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  constexpr int kW = R * 128, kX = XR * 128;
  uint8_t* wslots = smem;
  uint8_t* xslots = smem + SW * kW;
  uint64_t* full = reinterpret_cast<uint64_t*>(xslots + SX * kX);
  uint64_t* empty = full + SW;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rest = PAIR ? int(blockIdx.x / 2) : int(blockIdx.x);
  const int wrow0 = (rest % wtiles) * R, xrow0 = PAIR ? int(blockIdx.x % 2) * XR : 0;
  const int k0 = (rest / wtiles) * ktiles * 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < SW; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 4);
    mbar_init_fence();
  }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      tma_prefetch_desc(&w);
      tma_prefetch_desc(&x);
      const uint64_t policy = l2_evict_first_policy();
      auto load_w = [&](int t) {  // arms the slot's phase for k tile t (both tiles' bytes), loads W
        mbar_arrive_expect_tx(&full[t % SW], kW + kX);
        tma_load_2d_hint(wslots + (t % SW) * kW, &w, &full[t % SW], k0 + t * 64, wrow0, policy);
      };
      auto load_x = [&](int t) { tma_load_2d(xslots + (t % SX) * kX, &x, &full[t % SW], k0 + t * 64, xrow0); };
      for (int t = 0; t < SW && t < ktiles; ++t) {
        load_w(t);
        if (t < SX) load_x(t);
      }
      // k tile r released: its weight slot and token slot are free (the last SX tiles' releases
      // are not waited for: nothing is left to load, and the consumers never release the last one)
      for (int r = 0; r + SX < ktiles; ++r) {
        mbar_wait(&empty[r % SW], (r / SW) & 1);
        if (r + SW < ktiles) load_w(r + SW);
        if (r + SX < ktiles) load_x(r + SX);  // (its slot's phase was armed by load_w, earlier or just now)
      }
    }
  } else {
    unsigned acc = 0;
    long long busy = 0, done_prev = 0;  // the emulated tensor pipe: free from `busy`; the previous tile's end
    for (int t = 0; t < ktiles; ++t) {
      bool owed = t > 0;
      if (owed && !mbar_test(&full[t % SW], (t / SW) & 1)) {  // early release: drain and release t - 1 first
        while (clock64() < done_prev) {
        }
        if (lane == 0) mbar_arrive(&empty[(t - 1) % SW]);
        owed = false;
      }
      mbar_wait(&full[t % SW], (t / SW) & 1);
      acc += reinterpret_cast<const unsigned*>(wslots + (t % SW) * kW)[lane];
      acc += reinterpret_cast<const unsigned*>(xslots + (t % SX) * kX)[lane];
      const long long now = clock64(), start = now > busy ? now : busy;
      busy = start + hold;
      if (owed) {  // wait_group 1: the previous tile's math is done, its slots go back
        while (clock64() < done_prev) {
        }
        if (lane == 0) mbar_arrive(&empty[(t - 1) % SW]);
      }
      done_prev = busy;
      __syncwarp();
    }
    while (clock64() < done_prev) {
    }
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;  // keeps the reads
  }
}

struct Case {
  const char* name;
  int n, k, splits;  // weights n x k; K split in `splits` ranges
};

template <int R, int XR, bool PAIR, int SW, int SX>
static void run(const Case& c, const void* w, const void* x, int hold) {
  auto kern = ring_kernel<R, XR, PAIR, SW, SX>;
  CUtensorMap wm, xm;
  const gl2d gw{w, uint64_t(c.k), uint64_t(c.n), uint64_t(c.k), 2};
  const gl2d gx{x, uint64_t(c.k), uint64_t(PAIR ? 2 * XR : XR), uint64_t(c.k), 2};
  if (make_tma_desc(&wm, gw, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, R) != CUDA_SUCCESS ||
      make_tma_desc(&xm, gx, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, XR) != CUDA_SUCCESS) {
    std::printf("descriptor failed\n");
    std::exit(1);
  }
  const int wtiles = c.n / R, ctas = wtiles * c.splits * (PAIR ? 2 : 1), ktiles = c.k / 64 / c.splits;
  const int smem = SW * R * 128 + SX * XR * 128 + 2 * SW * 8 + 1024;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const double us = time_us([&] { kern<<<ctas, 160, smem>>>(wm, xm, wtiles, ktiles, hold, g_sink); });
  std::printf("%-16s R %3d X %3d pair %d  SW %2d SX %2d (%3d KB)  hold %4d  CTAs %3d  %8.2f us  %5.0f GB/s of W\n",
              c.name, R, XR, int(PAIR), SW, SX, smem >> 10, hold, ctas, us, double(c.n) * c.k * 2 / us * 1e-3);
}

int main() {
  micro_init();
  uint16_t *w, *x;
  const size_t wn = size_t(8192) * 8192, xn = size_t(256) * 14336;  // the largest of the cases below
  CK(cudaMalloc(&w, wn * 2));
  CK(cudaMalloc(&x, xn * 2));
  fill_kernel<<<1024, 256>>>(w, wn);
  fill_kernel<<<1024, 256>>>(x, xn);
  CK(cudaDeviceSynchronize());
  // 256x4096x14336: swapped 128x256 tiles, 4 K splits (128 CTAs of 56 k tiles), 1024 cycles per k tile
  const Case s4{"256x4096x14336", 4096, 14336, 4};
  for (int hold : {0, 1024}) {
    run<128, 256, false, 4, 4>(s4, w, x, hold);  // the GEMM's ring
    run<128, 256, false, 6, 4>(s4, w, x, hold);
    run<128, 256, false, 8, 3>(s4, w, x, hold);
    run<128, 256, false, 10, 2>(s4, w, x, hold);
  }
  // 256x8192x8192: one-warpgroup 128x128 tiles, the two token tiles sharing each weight tile (128
  // CTAs of 128 k tiles), 512 cycles per k tile
  const Case m256{"256x8192x8192", 8192, 8192, 1};
  for (int hold : {0, 512}) {
    run<128, 128, true, 6, 6>(m256, w, x, hold);
    run<128, 128, true, 7, 7>(m256, w, x, hold);  // the GEMM's ring (ring staging, K >= 8192)
    run<128, 128, true, 10, 4>(m256, w, x, hold);
    run<128, 128, true, 11, 3>(m256, w, x, hold);
    run<128, 128, true, 12, 2>(m256, w, x, hold);
  }
  // 128x4096x14336: swapped 128x128 tiles, 4 K splits, 512 cycles per k tile
  const Case s128{"128x4096x14336", 4096, 14336, 4};
  for (int hold : {0, 512}) {
    run<128, 128, false, 6, 6>(s128, w, x, hold);
    run<128, 128, false, 10, 4>(s128, w, x, hold);
    run<128, 128, false, 12, 2>(s128, w, x, hold);
  }
  return 0;
}
