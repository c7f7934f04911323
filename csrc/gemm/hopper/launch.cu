// Host launcher of the Hopper GEMM: TMA descriptors, instantiation per (dtype, layout), launch.
#include "launch.h"
#include "gemm_kernel.cuh"
#include "../../kittens/hopper/gl.cuh"

namespace tk::hopper {

namespace {

template <typename T> constexpr CUtensorMapDataType tma_dtype();
template <> constexpr CUtensorMapDataType tma_dtype<__nv_bfloat16>() { return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; }
template <> constexpr CUtensorMapDataType tma_dtype<__half>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }

template <class L>
const char* launch_layout(const GemmArgs& g, cudaStream_t stream) {
  using T = typename L::in_t;
  using OutT = typename L::out_t;
  // A (M x K): K-major map dims {K, M}; MN-major (column-major A) dims {M, K}. B likewise with N.
  const gl2d ga = L::kAMn ? gl2d{g.a, uint64_t(g.M), uint64_t(g.K), uint64_t(g.lda), 2}
                          : gl2d{g.a, uint64_t(g.K), uint64_t(g.M), uint64_t(g.lda), 2};
  const gl2d gb = L::kBMn ? gl2d{g.b, uint64_t(g.N), uint64_t(g.K), uint64_t(g.ldb), 2}
                          : gl2d{g.b, uint64_t(g.K), uint64_t(g.N), uint64_t(g.ldb), 2};
  if (!tma_describable(ga)) return "operand A cannot be described by a TMA descriptor";
  if (!tma_describable(gb)) return "operand B cannot be described by a TMA descriptor";
  CUtensorMap ta, tb;
  if (make_tma_desc(&ta, ga, tma_dtype<T>(), L::a_tile::kBoxInner, L::a_tile::kBoxOuter) != CUDA_SUCCESS)
    return "cuTensorMapEncodeTiled failed for operand A";
  if (make_tma_desc(&tb, gb, tma_dtype<T>(), L::b_tile::kBoxInner, L::b_tile::kBoxOuter) != CUDA_SUCCESS)
    return "cuTensorMapEncodeTiled failed for operand B";

  const int64_t tiles = int64_t(ceil_div(g.M, L::BM)) * ceil_div(g.N, L::BN);
  if (tiles > 0x7fffffff) return "too many output tiles for a 1-D grid";
  Epilogue<OutT> ep{static_cast<OutT*>(g.out), static_cast<const OutT*>(g.c), g.c_s0, g.c_s1, g.alpha, g.beta};

  auto kernel = gemm_kernel<L>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM_BYTES);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  kernel<<<dim3(unsigned(tiles)), dim3(L::THREADS), L::SMEM_BYTES, stream>>>(ta, tb, ep, g.M, g.N, g.K);
  err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <typename T, typename OutT>
const char* launch_dtype(const GemmArgs& g, cudaStream_t s) {
  if (g.a_mn) {
    return g.b_mn ? launch_layout<gemm_layout<T, OutT, true, true>>(g, s)
                  : launch_layout<gemm_layout<T, OutT, true, false>>(g, s);
  }
  return g.b_mn ? launch_layout<gemm_layout<T, OutT, false, true>>(g, s)
                : launch_layout<gemm_layout<T, OutT, false, false>>(g, s);
}

}  // namespace

const char* gemm_launch(const GemmArgs& g, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (g.M < 1 || g.N < 1 || g.K < 1) return "M, N and K must be >= 1";
  const bool f32_out = g.out_dtype == DType::fp32;
  if (!f32_out && g.out_dtype != g.in_dtype) return "unsupported output dtype";
  switch (g.in_dtype) {
    case DType::bf16:
      return f32_out ? launch_dtype<__nv_bfloat16, float>(g, s) : launch_dtype<__nv_bfloat16, __nv_bfloat16>(g, s);
    case DType::fp16:
      return f32_out ? launch_dtype<__half, float>(g, s) : launch_dtype<__half, __half>(g, s);
    default:
      return "unsupported input dtype";
  }
}

}  // namespace tk::hopper
