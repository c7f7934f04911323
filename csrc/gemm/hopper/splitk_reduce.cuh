// The split-K reduction kernel (fp32 partials of gemm_kernel -> the output, fixed order).
#pragma once
#include "gemm_kernel.cuh"

namespace tk::hopper {

// Elements per thread of the reduction's vector path: one 16-B load per split and element group.
constexpr int kReduceVec = 4;

// One output element: alpha * (sum over splits in order) + beta * C, at flat index i (ld = N).
template <typename OutT>
__device__ __forceinline__ OutT reduce_finish(const Epilogue<OutT>& ep, float v, int64_t i, int N) {
  v *= ep.alpha;
  if (ep.c != nullptr) {
    const int64_t m = i / N, n = i - m * N;
    v += ep.beta * to_f32(ep.c[m * ep.c_s0 + n * ep.c_s1]);
  }
  return from_f32<OutT>(v);
}

// Split-K finish: out[m, n] = alpha * sum_s partial[s, m, n] (fixed order: deterministic) + beta * C.
// partial and out share the row-major (ld = N) original layout.
// Launched as a programmatic dependent of the GEMM (PDL): its CTAs may start while the GEMM
// runs, and griddepcontrol.wait returns once the GEMM grid has completed and its writes are visible.
// vec (the host checks: M * N % 4 == 0, partial 16-B and out 8-B aligned): each thread sums
// kReduceVec consecutive elements with one 16-B load per split, so all `splits` loads are in
// flight at once and a quarter of the threads suffice (same sums in the same order: same bits).
template <typename OutT>
__global__ void splitk_reduce_kernel(Epilogue<OutT> ep, int M, int N, int splits, bool vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const int64_t total = int64_t(M) * N;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  if (vec) {
    for (int64_t g = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; g * kReduceVec < total; g += stride) {
      const int64_t i = g * kReduceVec;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int s = 0; s < splits; ++s) {
        const float4 p = __ldcg(reinterpret_cast<const float4*>(ep.partial + s * ep.o_split + i));
        v.x += p.x, v.y += p.y, v.z += p.z, v.w += p.w;
      }
      OutT o[kReduceVec] = {reduce_finish(ep, v.x, i, N), reduce_finish(ep, v.y, i + 1, N),
                            reduce_finish(ep, v.z, i + 2, N), reduce_finish(ep, v.w, i + 3, N)};
      using word = std::conditional_t<sizeof(o) == 8, uint2, uint4>;  // one vector store
      static_assert(sizeof(o) == sizeof(word), "4 outputs of 2 or 4 bytes");
      word w;
      memcpy(&w, o, sizeof(w));
      *reinterpret_cast<word*>(ep.out + i) = w;
    }
    return;
  }
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += stride) {
    float v = 0.f;
    for (int s = 0; s < splits; ++s) v += ep.partial[s * ep.o_split + i];
    ep.out[i] = reduce_finish(ep, v, i, N);
  }
}

}  // namespace tk::hopper
