// Issue rate of cvt.rn.bf16x2.f32 (SASS F2FP.BF16.F32.PACK_AB, the epilogue's packing) vs FMUL with
// 8 warps per SM (two per scheduler, as the GEMM's two consumer warpgroups), in SM cycles per warp
// instruction per scheduler. Run: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/cvt_rate
// benchmarks/micro/cvt_rate.cu && /tmp/cvt_rate. H200 2026-11-26d: F2FP 2.07 (64 lanes/clk/SM, half
// the FMUL rate): a 128x256 unit's 64 packs per thread cost ~256 issue cycles per scheduler.
#include <cstdio>
#include <cstdint>
template <int kOp>
__global__ void rate(float* out, long long* cyc, int iters) {
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = threadIdx.x * 0.001f + i;
  uint32_t acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
      if (kOp == 0) {
        uint32_t p;
        asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(v[i]), "f"(v[i + 1]));
        v[i] = __uint_as_float(p);  // loop-carried: 8 independent chains per thread
      } else {
        asm volatile("mul.f32 %0, %0, 0f3F800001;" : "+f"(v[i]));
        asm volatile("mul.f32 %0, %0, 0f3F800001;" : "+f"(v[i + 1]));
      }
    }
  }
  long long c1 = clock64();
  __syncthreads();
  if (threadIdx.x == 0) cyc[blockIdx.x] = c1 - c0;
  float s = 0;
  for (int i = 0; i < 16; ++i) s += v[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s + acc;
}
int main() {
  float* out; long long* cyc; cudaMalloc(&out, 132 * 256 * 4); cudaMalloc(&cyc, 132 * 8);
  const int iters = 4096;
  for (int op = 0; op < 2; ++op) {
    for (int rep = 0; rep < 2; ++rep) {
      if (op == 0) rate<0><<<132, 256>>>(out, cyc, iters); else rate<1><<<132, 256>>>(out, cyc, iters);
      cudaDeviceSynchronize();
    }
    long long h[132]; cudaMemcpy(h, cyc, sizeof h, cudaMemcpyDeviceToHost);
    // instructions per thread: op 0: 8 cvt (+8 lop xor) per iter; op 1: 16 fmul per iter
    const double inst = op == 0 ? 8.0 * iters : 16.0 * iters;
    // per scheduler: 2 warps, so cycles / (2 * inst) per warp instruction
    printf("%s: %lld cycles, %.2f cycles per warp instruction per scheduler (%.1f lanes/clk/SM)\n",
           op == 0 ? "cvt.rn.bf16x2.f32" : "mul.f32", h[0], h[0] / (2.0 * inst), 4 * 32 * 2.0 * inst / h[0]);
  }
  return 0;
}
