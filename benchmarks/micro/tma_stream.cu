// Operand delivery alone: how fast TMA boxes stream a skinny GEMM's operands into shared memory
// with no math, built up piece by piece towards the GEMM's skinny plans (csrc/gemm/hopper/plan.h).
// W (N rows x K, K contiguous, bf16) is the weight matrix, X (256 rows x K) the tokens. Every CTA
// walks K in 64-element (128-B, 128-B swizzled) k tiles through a ring of S stages (full/empty
// mbarriers, one producer thread, 4 consumer warps that wait and release, as the GEMM's do).
//   R    : W rows per stage (the weight tile); XR: X rows per stage (0: no X)
//   PAIR : false: CTA b owns W rows [b R, b R + R) and reads X rows [0, XR) like every CTA;
//          true : CTAs 2c and 2c+1 share W rows [c R, c R + R) and own X rows [r XR, r XR + XR)
//          (two token row tiles, as the 64-row plans for 65..128 tokens or swap-AB at 256)
//   CL   : 2: the pair (PAIR) or two neighbours (!PAIR) form a cluster and load the shared
//          operand once, half each, multicast to both (W with PAIR, X without)
// Each call follows a 256 MB memset, as triton's do_bench flushes L2 (left full of dirty lines).
// Prints us per call (median of 25, cudaEvent around the kernel alone) and GB/s of W.
// Found on the H200 (benchmarks/NOTES.md): 2026-11-25d, the k tiles per stage do not matter once
// the ring is compile-time (an earlier runtime-parameter version of this kernel spent ~900 cycles
// per stage in its producer thread, whatever it loaded, and misled for a while); 2026-11-25e,
// boxes partly past the tensor (rows zero-filled by TMA) arrive much more slowly than whole ones.
// 2026-11-25k (`tma_stream stages`): the swapped 128x256 plan's operands (14336x4096 weights, 112
// CTAs) arrive in 37.9 us at 4 stages, 39.6 at 3, 60.0 at 2: its 4-stage ring is deep enough.
// Build and run: bash benchmarks/micro/run_tma_stream.sh (H100/H200); `tma_stream stages` runs the
// ring-depth sweep only.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "../../csrc/kittens/hopper/cluster.cuh"
#include "../../csrc/kittens/hopper/gl.cuh"
#include "../../csrc/kittens/hopper/mbarrier.cuh"
#include "../../csrc/kittens/hopper/tma.cuh"
#include "flush_timer.cuh"

using namespace kittens::hopper;

template <int R, int XR, bool PAIR, int CL, int S>
__global__ void __launch_bounds__(160, 1)
    stream_kernel(const __grid_constant__ CUtensorMap w, const __grid_constant__ CUtensorMap x,
                  const __grid_constant__ CUtensorMap xt, int xt_rows, int ktiles, unsigned* sink) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  constexpr int kW = R * 128, kX = XR * 128, kStage = kW + kX;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + S * kStage);
  uint64_t* empty = full + S;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t rank = CL > 1 ? cluster_ctarank() : 0;
  const int wrow0 = PAIR ? int(blockIdx.x / 2) * R : int(blockIdx.x) * R;
  const int xrow0 = PAIR ? int(blockIdx.x % 2) * XR : 0;
  // xt_rows > 0 (PAIR): the second token tile is loaded through xt, whose box has only the
  // xt_rows rows inside the tensor (no zero-filled rows past it); the rest of the slot is stale.
  const bool x_tail = PAIR && xt_rows > 0 && blockIdx.x % 2 == 1;
  const int stage_tx = x_tail ? kW + xt_rows * 128 : kStage;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 4 * CL);
    mbar_init_fence();
  }
  if constexpr (CL > 1) cluster_sync();
  else __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      tma_prefetch_desc(&w);
      tma_prefetch_desc(&x);
      const uint64_t policy = l2_evict_first_policy();
      for (uint32_t t = 0; t < uint32_t(ktiles); ++t) {
        const uint32_t s = t % S;
        mbar_wait(&empty[s], ((t / S) & 1) ^ 1);
        mbar_arrive_expect_tx(&full[s], stage_tx);
        uint8_t* dst = smem + s * kStage;
        const int k = int(t) * 64;
        if (CL > 1 && PAIR)  // half the shared W tile each, into both CTAs
          tma_load_2d_multicast_hint(dst + rank * (kW / 2), &w, &full[s], k, wrow0 + int(rank) * (R / 2), 3, policy);
        else
          tma_load_2d_hint(dst, &w, &full[s], k, wrow0, policy);
        if constexpr (XR > 0) {
          if (CL > 1 && !PAIR)  // half the shared X tile each, into both CTAs
            tma_load_2d_multicast(dst + kW + rank * (kX / 2), &x, &full[s], k, xrow0 + int(rank) * (XR / 2), 3);
          else
            tma_load_2d(dst + kW, x_tail ? &xt : &x, &full[s], k, xrow0);
        }
      }
    }
  } else {
    unsigned acc = 0;
    for (uint32_t t = 0; t < uint32_t(ktiles); ++t) {
      const uint32_t s = t % S;
      mbar_wait(&full[s], (t / S) & 1);
      acc += reinterpret_cast<const unsigned*>(smem + s * kStage)[lane];
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(&empty[s]);
        if constexpr (CL > 1) mbar_arrive_cluster(&empty[s], rank ^ 1);
      }
    }
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;  // keeps the reads
  }
  if constexpr (CL > 1) cluster_sync();  // no CTA leaves while its peer may still write into it
}

// The reference, ldg_kernel (flush_timer.cuh): every thread reads 16-B vectors of W, grid-stride.

struct Shape {
  int n, k;
};

template <int R, int XR, bool PAIR, int CL, int S>
static void run(const char* what, const Shape& sh, const void* w, const void* x, int xrows = 256, bool tail_box = false) {
  auto kern = stream_kernel<R, XR, PAIR, CL, S>;
  if (sh.n % R != 0) return;
  CUtensorMap wm, xm, xtm;
  const gl2d gw{w, uint64_t(sh.k), uint64_t(sh.n), uint64_t(sh.k), 2};
  const gl2d gx{x, uint64_t(sh.k), uint64_t(xrows), uint64_t(sh.k), 2};  // rows past xrows: zero-filled
  const int wbox = CL > 1 && PAIR ? R / 2 : R, xbox = XR == 0 ? 64 : CL > 1 && !PAIR ? XR / 2 : XR;
  if (make_tma_desc(&wm, gw, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, wbox) != CUDA_SUCCESS ||
      make_tma_desc(&xm, gx, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, xbox) != CUDA_SUCCESS) {
    std::printf("descriptor failed\n");
    std::exit(1);
  }
  const int xt_rows = tail_box && PAIR ? xrows - XR : 0;
  xtm = xm;
  if (xt_rows > 0 && make_tma_desc(&xtm, gx, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, xt_rows) != CUDA_SUCCESS) {
    std::printf("tail descriptor failed\n");
    std::exit(1);
  }
  const int ctas = PAIR ? 2 * sh.n / R : sh.n / R;
  const int smem = S * (R + XR) * 128 + 2 * S * 8 + 1024;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  cfg.gridDim = dim3(ctas);
  cfg.blockDim = dim3(160);
  cfg.dynamicSmemBytes = size_t(smem);
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CL, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = CL > 1 ? 1 : 0;
  const int ktiles = sh.k / 64;
  const double us = time_us([&] { CK(cudaLaunchKernelEx(&cfg, kern, wm, xm, xtm, xt_rows, ktiles, g_sink)); });
  std::printf("%5dx%-6d %-44s R %3d X %3d pair %d cl %d S %2d CTAs %4d %8.2f us %6.0f GB/s\n", sh.n, sh.k, what, R, XR,
              int(PAIR), CL, S, ctas, us, double(sh.n) * sh.k * 2 / us * 1e-3);
}

// `stages`: how delivery scales with the bytes a CTA keeps in flight (ring depth), for the
// swapped 128x256 skinny plan (128 weight rows + all 256 tokens per k tile, one unit per CTA)
// and cuBLAS's 112x128 2x1 pairs; if the rate follows S - 1 stages in flight (Little's law),
// operand latency, not bandwidth, bounds these shapes.
static void stages_sweep(const Shape& sh, const void* w, const void* x) {
  run<128, 256, false, 1, 2>("swapped 128x256, S 2", sh, w, x);
  run<128, 256, false, 1, 3>("swapped 128x256, S 3", sh, w, x);
  run<128, 256, false, 1, 4>("swapped 128x256, S 4 (the GEMM's)", sh, w, x);
  run<128, 256, false, 2, 4>("  tokens multicast in pairs, S 4", sh, w, x);
  run<64, 256, false, 1, 3>("64 weight rows + 256 tokens, S 3", sh, w, x);
  run<64, 256, false, 1, 4>("64 weight rows + 256 tokens, S 4", sh, w, x);
  run<64, 256, false, 1, 5>("64 weight rows + 256 tokens, S 5", sh, w, x);
  run<112, 128, true, 2, 4>("112x128 pairs, W multicast, S 4", sh, w, x);
  run<112, 128, true, 2, 7>("112x128 pairs, W multicast, S 7 (cuBLAS's)", sh, w, x);
  run<128, 128, true, 1, 4>("M 256: pairs share W, own 128 tokens, S 4", sh, w, x);
  run<128, 128, true, 1, 6>("M 256: pairs share W, own 128 tokens, S 6", sh, w, x);
}

int main(int argc, char** argv) {
  const bool stages = argc > 1 && std::string(argv[1]) == "stages";
  micro_init();
  const Shape shapes[] = {{4096, 4096}, {8192, 8192}, {14336, 4096}, {4096, 14336}};
  uint16_t* x;
  CK(cudaMalloc(&x, size_t(256) * 14336 * 2));
  fill_kernel<<<1024, 256>>>(x, size_t(256) * 14336);
  for (const Shape& sh : shapes) {
    if (stages && sh.n != 14336 && sh.n != 8192) continue;
    uint16_t* w;
    const size_t wbytes = size_t(sh.n) * sh.k * 2;
    CK(cudaMalloc(&w, wbytes));
    fill_kernel<<<1024, 256>>>(w, size_t(sh.n) * sh.k);
    CK(cudaDeviceSynchronize());
    if (stages) {
      stages_sweep(sh, w, x);
      CK(cudaFree(w));
      continue;
    }
    const double ldg = time_us([&] { ldg_kernel<<<132 * 8, 512>>>(reinterpret_cast<const uint4*>(w), wbytes / 16, g_sink); });
    std::printf("%5dx%-6d %-44s %54.2f us %6.0f GB/s\n", sh.n, sh.k, "ld.global.nc v4 over W (reference)", ldg,
                wbytes / ldg * 1e-3);
    run<64, 0, false, 1, 13>("W only, 64-row tiles", sh, w, x);
    run<128, 0, false, 1, 6>("W only, 128-row tiles", sh, w, x);
    run<64, 64, false, 1, 13>("+ 64 tokens (M 64, every CTA the same)", sh, w, x);
    run<64, 64, false, 2, 13>("  tokens multicast in pairs along N", sh, w, x);
    run<64, 64, true, 1, 13>("M 128: pairs share W, own 64 tokens", sh, w, x);
    run<64, 64, true, 2, 13>("  W multicast in the pair (128xNx64 plan)", sh, w, x);
    run<128, 128, true, 1, 6>("M 256: pairs share W, own 128 tokens", sh, w, x);
    run<128, 128, true, 2, 6>("  W multicast in the pair", sh, w, x);
    run<128, 128, false, 1, 6>("M 128 in one 128-token tile", sh, w, x);
    run<128, 128, false, 2, 6>("  tokens multicast in pairs along N", sh, w, x);
    if (sh.n == 8192) {  // token tiles partly past M: the second tile's box is half / all but one row out of bounds
      run<128, 128, true, 1, 6>("M 192: as M 256, rows 192.. past the map", sh, w, x, 192);
      run<128, 128, true, 1, 6>("M 129: as M 256, rows 129.. past the map", sh, w, x, 129);
      run<128, 128, true, 1, 6>("M 192, second tile a 64-row box (none past)", sh, w, x, 192, true);
      run<128, 128, true, 1, 6>("M 136, second tile an 8-row box (none past)", sh, w, x, 136, true);
      run<64, 64, true, 1, 13>("M 96: as M 128 (64-row), rows 96.. past", sh, w, x, 96);
      run<64, 64, true, 1, 13>("M 96, second tile a 32-row box (none past)", sh, w, x, 96, true);
    }
    CK(cudaFree(w));
  }
  return 0;
}
