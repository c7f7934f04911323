// The GEMM mainloop without its loads, piece by piece: cycles per k tile of a producer thread and
// C consumer warpgroups cycling a ring of STAGES shared-memory stages through full/empty
// mbarriers (as csrc/gemm/hopper/gemm_kernel.cuh does), with the TMA loads left out (stages hold
// constant data). Variants add one piece at a time:
//   plain   : consumers walk the stages' addresses, no barriers (the wgmma rate over the ring);
//   full    : + a wait on the stage's full barrier that passes (its first phase, completed once);
//   release : + each consumer warp arrives on the previous stage's empty barrier (the GEMM, 1 CTA);
//   cluster : 2-CTA cluster, each consumer warp also arrives on the peer's empty barrier (the
//             GEMM's clustered kernels, whose multicast writes into both CTAs);
// Findings (H100, 2026-11-24): at N 64 with one warpgroup and one k tile per stage, each
// mbarrier operation in the consumer's loop costs ~70 cycles that the 128 tensor cycles of a k
// tile cannot hide (plain 128-142, full 200, release 274, cluster 337 cycles per k tile); more
// pending wgmma groups do not help, four k tiles per stage (144) or a second warpgroup (N 64:
// 256 per 2 tiles) do; N 128 and 256 hide them. In the GEMM itself four k tiles per stage did
// not pay (real runs are bound by operand traffic; benchmarks/NOTES.md).
// Run: bash benchmarks/micro/run_wgmma_rate.sh (builds and runs both microbenchmarks).
#include <cuda_bf16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include "../../csrc/kittens/hopper/cluster.cuh"
#include "../../csrc/kittens/hopper/mbarrier.cuh"
#include "../../csrc/kittens/hopper/st.cuh"
#include "cycles.cuh"
#include "../../csrc/kittens/hopper/warpgroup.cuh"
#include "../../csrc/kittens/hopper/wgmma_ops.cuh"

using namespace kittens::hopper;

enum Variant { kPlain = 0, kFull = 1, kRelease = 2, kCluster = 3 };
constexpr int kTiles = 1024;  // k tiles timed per consumer warpgroup
constexpr int kWarm = 8;      // stages run untimed first

// Operand values: 0: small, regular (0.001 x (-50..50)); 1: pseudo-random of unit scale (the
// GEMM's randn inputs); 2: pseudo-random bits (NaN/Inf included). Tensor-pipe throughput might
// depend on the data (it does not on paper: the question is the GEMM's, whose stages hold
// random data or, with the loads removed, stale bits).
__device__ __nv_bfloat16 operand_value(int i, int data) {
  uint32_t h = uint32_t(i) * 2654435761u;
  h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
  if (data == 0) return __float2bfloat16(0.001f * ((i * 37) % 101 - 50));
  if (data == 1) return __float2bfloat16((float(h & 0xffff) - 32768.f) / 16384.f);
  __nv_bfloat16 b;
  *reinterpret_cast<uint16_t*>(&b) = uint16_t(h >> 7);
  return b;
}

template <int N, int C, int KT>
struct ring {
  using a_tile = st_operand<64 * C, false>;
  using b_tile = st_operand<N, false>;
  static constexpr int kSubBytes = a_tile::kBytes + b_tile::kBytes;  // one 64-wide k tile
  static constexpr int kStageBytes = KT * kSubBytes;
  static constexpr int kStages = (200 * 1024) / kStageBytes < 13 ? (200 * 1024) / kStageBytes : 13;
  static constexpr int kSmem = kStages * kStageBytes + 2 * kStages * 8 + 1024;
};

template <int N, int C, int V, int KT>
__global__ void __launch_bounds__(128 * (C + 1), 1) loop_kernel(long long* cycles, float* sink, int data) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using R = ring<N, C, KT>;
  constexpr int kCl = V == kCluster ? 2 : 1;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + R::kStages * R::kStageBytes);
  uint64_t* empty = full + R::kStages;
  for (int i = threadIdx.x; i < R::kStages * R::kStageBytes / 2; i += blockDim.x)
    reinterpret_cast<__nv_bfloat16*>(smem)[i] = operand_value(i, data);
  if (threadIdx.x == 0) {
    for (int s = 0; s < R::kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], C * 4 * kCl);
    }
    mbar_init_fence();
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if constexpr (kCl > 1) cluster_sync();
  else __syncthreads();
  const uint32_t rank = kCl > 1 ? cluster_ctarank() : 0;
  if (warpgroup_id() == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0 && V != kPlain) {
      // kFull: each full barrier completes its first phase once, and the consumers wait on that
      // phase every time (the cost of a wait that passes; no empty arrivals to wait for).
      for (uint32_t it = 0; it < (V == kFull ? R::kStages : kTiles / KT + kWarm); ++it) {
        const uint32_t s = it % R::kStages;
        if (V >= kRelease) mbar_wait(&empty[s], ((it / R::kStages) & 1) ^ 1);
        mbar_arrive(&full[s]);
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int cw = warpgroup_id() - 1;
    const bool leader = threadIdx.x % 32 == 0;
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
    const uint64_t da0 = R::a_tile::desc(smem_u32(smem), cw * 64, 0);
    const uint64_t db0 = R::b_tile::desc(smem_u32(smem) + R::a_tile::kBytes, 0, 0);
    const uint32_t a_lo = uint32_t(da0), a_hi = uint32_t(da0 >> 32), b_lo = uint32_t(db0), b_hi = uint32_t(db0 >> 32);
    using mma = wgmma_op<N, true, 0, 0>;
    auto release = [&](uint32_t s) {
      if (V < kRelease || !leader) return;
      mbar_arrive(&empty[s]);
      if constexpr (kCl > 1) mbar_arrive_cluster(&empty[s], rank ^ 1);
    };
    long long t0 = 0;
    for (uint32_t it = 0; it < kTiles / KT + kWarm; ++it) {
      if (it == kWarm) t0 = clock64();
      const uint32_t s = it % R::kStages;
      if (V >= kFull) mbar_wait(&full[s], V == kFull ? 0 : (it / R::kStages) & 1);
      const uint32_t step = s * (R::kStageBytes >> 4);
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < KT; ++j)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const uint32_t off = step + j * (R::kSubBytes >> 4);
          mma::mma(acc, pack_desc(a_lo + off + kk * uint32_t(R::a_tile::kDescKStep), a_hi),
                   pack_desc(b_lo + off + kk * uint32_t(R::b_tile::kDescKStep), b_hi), 1);
        }
      wgmma_commit();
      // One group pending (the GEMM's; 2 or 3 measured no different: the wgmma issue itself
      // blocks once the tensor pipe's queue is full, so deeper pending hides nothing).
      wgmma_wait<1>();
      fence_regs(acc);
      if (it >= 1) release((it - 1) % R::kStages);
    }
    wgmma_wait<0>();
    fence_regs(acc);
    release((kTiles / KT + kWarm - 1) % R::kStages);
    const long long t1 = clock64();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) sum += acc[i];
    if (thread_in_warpgroup() == 0) cycles[blockIdx.x * 2 + cw] = t1 - t0;
    if (sum == 1.2345f) sink[0] = sum;
  }
  if constexpr (kCl > 1) cluster_sync();  // no CTA leaves while its peer may still arrive on it
#endif
}

template <int N, int C, int V, int KT>
void run(int sms, int data = 0) {
  using R = ring<N, C, KT>;
  auto k = loop_kernel<N, C, V, KT>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, R::kSmem);
  const int blocks = sms / 2 * 2;
  long long* d_cycles;
  float* d_sink;
  cudaMalloc(&d_cycles, sizeof(long long) * blocks * 2);
  cudaMalloc(&d_sink, sizeof(float));
  cudaMemset(d_cycles, 0, sizeof(long long) * blocks * 2);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(128 * (C + 1));
  cfg.dynamicSmemBytes = R::kSmem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = V == kCluster ? 2 : 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaError_t err = cudaLaunchKernelEx(&cfg, k, d_cycles, d_sink, data);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  const double per_tile = median_cycles(d_cycles, d_sink, blocks, C) / kTiles;
  const double ideal = C * 4 * N / 2.0;  // m64nNk16: N/2 cycles at 2048 bf16 MACs per SM-cycle
  static const char* names[] = {"plain", "full", "release", "cluster"};
  printf("data %d  N %3d  consumers %d  k tiles/stage %d  stages %2d  %-8s %7.1f cycles/k-tile  tensor busy %5.1f%%%s%s\n",
         data, N, C, KT, R::kStages, names[V], per_tile, 100.0 * ideal / per_tile, err == cudaSuccess ? "" : "  ERROR ",
         err == cudaSuccess ? "" : cudaGetErrorString(err));
}

template <int N, int C, int KT>
void run_variants(int sms) {
  run<N, C, kPlain, KT>(sms);
  run<N, C, kFull, KT>(sms);
  run<N, C, kRelease, KT>(sms);
  run<N, C, kCluster, KT>(sms);
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  printf("mainloop without loads, %d k tiles per consumer warpgroup, %d CTAs\n", kTiles, sms / 2 * 2);
  for (int data = 1; data <= 2; ++data) {  // the data question, on the GEMM's skinny configuration
    run<64, 1, kRelease, 4>(sms, data);
    run<64, 1, kCluster, 4>(sms, data);
    run<128, 2, kRelease, 1>(sms, data);
    run<256, 2, kRelease, 1>(sms, data);
  }
  run_variants<64, 1, 1>(sms);
  run_variants<64, 1, 2>(sms);
  run_variants<64, 1, 4>(sms);
  run_variants<64, 2, 1>(sms);
  run_variants<64, 2, 2>(sms);
  run_variants<128, 1, 1>(sms);
  run_variants<128, 1, 2>(sms);
  run_variants<128, 2, 1>(sms);
  run_variants<128, 2, 2>(sms);
  run_variants<256, 2, 1>(sms);
  return 0;
}
