// Issue rate of back-to-back wgmma m64nNk16 (bf16 -> fp32) on one SM, outside any GEMM: how many
// cycles a "k tile" (4 wgmmas over 64 k, as in the GEMM mainloop) takes per warpgroup for
// N = 64 / 128 / 256, 1 or 2 warpgroups per CTA, A from shared memory (SS) or registers (RS),
// and three ways of waiting:
//   chain : every wgmma on one accumulator, commit + wait<1> per k tile (the GEMM mainloop);
//   sets  : the 4 wgmmas of a k tile on 4 (N 64) / 2 (N 128) accumulators, same waits;
//   nowait: one accumulator, commit per k tile, wait<0> only at the end.
// Why: a printf-instrumented GEMM build (its printf made ptxas serialize every wgmma) timed the
// 64x64 mainloop at ~620 cycles per k tile; this shows the tensor pipe's own rate (128).
// Build and run on an H100/H200 (bash benchmarks/micro/run_wgmma_rate.sh); prints one line per
// configuration: cycles per k tile per warpgroup (median over the SMs) and per wgmma, and the
// tensor pipe's busy fraction = ideal / measured, with ideal = warpgroups x 4 x N / 2 cycles per
// k tile (m64nNk16 is 64 * N * 16 MACs; an H100 SM does 2048 bf16 MACs a cycle: 989 TFLOP/s dense
// at 1.83 GHz on 132 SMs, NVIDIA's H100 datasheet).
#include <cuda_bf16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <string>
#include "../../csrc/kittens/hopper/st.cuh"
#include "cycles.cuh"
#include "../../csrc/kittens/hopper/warpgroup.cuh"
#include "../../csrc/kittens/hopper/wgmma_ops.cuh"
#include "../../csrc/kittens/hopper/wgmma_ops_rs.cuh"

using namespace kittens::hopper;

enum Mode { kChain = 0, kSets = 1, kNoWait = 2 };
constexpr int kIters = 512;  // k tiles timed per warpgroup

template <int N, bool RS, int MODE>
__global__ void __launch_bounds__(256, 1) rate_kernel(long long* cycles, float* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  using a_tile = st_operand<64, false>;
  using b_tile = st_operand<N, false>;
  const int wg = warpgroup_id();
  uint8_t* a_smem = smem + wg * a_tile::kBytes;  // each warpgroup its own A rows, one shared B
  uint8_t* b_smem = smem + 2 * a_tile::kBytes;
  // Small finite values everywhere (the rate must not depend on special values).
  for (int i = threadIdx.x; i < (2 * a_tile::kBytes + b_tile::kBytes) / 2; i += blockDim.x)
    reinterpret_cast<__nv_bfloat16*>(smem)[i] = __float2bfloat16(0.001f * ((i * 37) % 101 - 50));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> wgmma reads
  __syncthreads();
  constexpr int kSetsN = MODE == kSets ? (N == 64 ? 4 : N == 128 ? 2 : 1) : 1;
  float acc[kSetsN][N / 2];
#pragma unroll
  for (int j = 0; j < kSetsN; ++j)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[j][i] = 0.f;
  uint32_t a_regs[4][4];  // RS: this thread's A fragments of the 4 k16 steps (values do not matter)
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) a_regs[kk][r] = 0x3c003c00u ^ (threadIdx.x * 131 + kk * 7 + r);
  const uint32_t a_base = smem_u32(a_smem), b_base = smem_u32(b_smem);
  using ss = wgmma_op<N, true, 0, 0>;
  using rs = wgmma_op_rs<N, true, 0>;
  long long t0 = 0;
  for (int it = -8; it < kIters; ++it) {  // 8 untimed k tiles first
    if (it == 0) t0 = clock64();
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint64_t db = b_tile::desc(b_base, 0, kk);
      if constexpr (RS) rs::mma(acc[kk % kSetsN], a_regs[kk], db, 1);
      else ss::mma(acc[kk % kSetsN], a_tile::desc(a_base, 0, kk), db, 1);
    }
    wgmma_commit();
    if constexpr (MODE != kNoWait) {
      wgmma_wait<1>();
#pragma unroll
      for (int j = 0; j < kSetsN; ++j) fence_regs(acc[j]);
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < kSetsN; ++j) fence_regs(acc[j]);
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kSetsN; ++j)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) s += acc[j][i];
  if (thread_in_warpgroup() == 0) cycles[blockIdx.x * 2 + wg] = t1 - t0;
  if (s == 1.2345f) sink[0] = s;  // keeps the accumulators live
#endif
}

template <int N, bool RS, int MODE>
void run(int sms, int warpgroups) {
  const int smem = 2 * 64 * 64 * 2 + N * 64 * 2 + 1024;
  auto k = rate_kernel<N, RS, MODE>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  long long* d_cycles;
  float* d_sink;
  cudaMalloc(&d_cycles, sizeof(long long) * sms * 2);
  cudaMalloc(&d_sink, sizeof(float));
  cudaMemset(d_cycles, 0, sizeof(long long) * sms * 2);
  k<<<sms, 128 * warpgroups, smem>>>(d_cycles, d_sink);
  cudaError_t err = cudaDeviceSynchronize();
  const double per_tile = median_cycles(d_cycles, d_sink, sms, warpgroups) / kIters;
  const double ideal = warpgroups * 4 * N / 2.0;
  static const char* modes[] = {"chain", "sets", "nowait"};
  printf("N %3d  %s  wg %d  %-6s  %7.1f cycles/k-tile/wg  %6.1f per wgmma  tensor busy %5.1f%%%s%s\n", N,
         RS ? "RS" : "SS", warpgroups, modes[MODE], per_tile, per_tile / 4, 100.0 * ideal / per_tile,
         err == cudaSuccess ? "" : "  ERROR ", err == cudaSuccess ? "" : cudaGetErrorString(err));
}

template <int N, bool RS>
void run_modes(int sms) {
  for (int wgs = 1; wgs <= 2; ++wgs) {
    run<N, RS, kChain>(sms, wgs);
    run<N, RS, kSets>(sms, wgs);
    run<N, RS, kNoWait>(sms, wgs);
  }
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s, %d SMs, %d k tiles (4 x m64nNk16 each) per warpgroup\n", prop.name, sms, kIters);
  if (argc > 1 && std::string(argv[1]) == "widths") {
    // The GEMM's tile widths, SS, one accumulator chain (the mainloop's pattern): is the tensor
    // pipe's time per wgmma proportional to N for widths that are not a power of two?
    for (int wgs = 1; wgs <= 2; ++wgs) {
      run<128, false, kChain>(sms, wgs);
      run<144, false, kChain>(sms, wgs);
      run<160, false, kChain>(sms, wgs);
      run<192, false, kChain>(sms, wgs);
      run<256, false, kChain>(sms, wgs);
    }
    return 0;
  }
  run_modes<64, false>(sms);
  run_modes<64, true>(sms);
  run_modes<128, false>(sms);
  run_modes<128, true>(sms);
  run_modes<256, false>(sms);
  run_modes<256, true>(sms);
  return 0;
}
