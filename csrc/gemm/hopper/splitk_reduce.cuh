// The split-K reduction kernel (fp32 partials of gemm_kernel -> the output, fixed order).
#pragma once
#include "gemm_kernel.cuh"

namespace tk::hopper {

// Split-K finish: out[m, n] = alpha * sum_s partial[s, m, n] (fixed order: deterministic) + beta * C.
// partial and out share the row-major (ld = N) original layout.
// Launched as a programmatic dependent of the GEMM (PDL): its CTAs may start while the GEMM
// runs, and griddepcontrol.wait returns once the GEMM grid has completed and its writes are visible.
template <typename OutT>
__global__ void splitk_reduce_kernel(Epilogue<OutT> ep, int M, int N, int splits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const int64_t total = int64_t(M) * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    float v = 0.f;
    for (int s = 0; s < splits; ++s) v += ep.partial[s * ep.o_split + i];
    v *= ep.alpha;
    if (ep.c != nullptr) {
      const int64_t m = i / N, n = i - m * N;
      v += ep.beta * to_f32(ep.c[m * ep.c_s0 + n * ep.c_s1]);
    }
    ep.out[i] = from_f32<OutT>(v);
  }
}

}  // namespace tk::hopper
