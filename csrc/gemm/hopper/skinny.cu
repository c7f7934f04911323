// Host launcher of the skinny kernel (skinny_kernel.cuh) for a plan from skinny_plan.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "launch.h"
#include "skinny_kernel.cuh"

namespace tk::hopper {

namespace {

template <typename T, typename OutT, int RM, int TN, int WARPS, int LOAD>
const char* launch_load(const GemmArgs& g, const SkinnyPlan& sp, cudaStream_t s) {
  const skinny::Args<OutT> a{g.a,          g.lda, g.b, g.ldb, g.M, g.N, g.K, static_cast<OutT*>(g.out),
                             static_cast<const OutT*>(g.c), g.c_s0, g.c_s1, g.alpha, g.beta};
  // GemmArgs::dependent: launched as a programmatic dependent of the previous kernel (the kernel
  // waits for it with griddepcontrol.wait before its first global access).
  cudaLaunchAttribute pdl{};
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(sp.grid));
  cfg.blockDim = dim3(WARPS * 32);
  cfg.stream = s;
  cfg.attrs = &pdl;
  cfg.numAttrs = g.dependent ? 1 : 0;
  cudaError_t err = cudaLaunchKernelEx(&cfg, skinny::skinny_kernel<T, OutT, RM, TN, WARPS, LOAD>, a);
  if (err == cudaSuccess) err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <typename T, typename OutT, int RM, int TN, int WARPS = kSkinnyWarps>
const char* launch_tile(const GemmArgs& g, const SkinnyPlan& sp, cudaStream_t s) {
  if (sp.load == skinny::kLoadPlain) return launch_load<T, OutT, RM, TN, WARPS, skinny::kLoadPlain>(g, sp, s);
  if (sp.load == skinny::kLoadPrefetch) return launch_load<T, OutT, RM, TN, WARPS, skinny::kLoadPrefetch>(g, sp, s);
  return "no skinny kernel for this weight load flavour";
}

template <typename T, typename OutT>
const char* by_tile(const GemmArgs& g, const SkinnyPlan& sp, cudaStream_t s) {
  if (sp.rows == 16 && sp.tn == 1) return launch_tile<T, OutT, 1, 1>(g, sp, s);
  if (sp.rows == 16 && sp.tn == 2) return launch_tile<T, OutT, 1, 2>(g, sp, s);
  if (sp.rows == 32 && sp.tn == 2 && sp.warps == 16) return launch_tile<T, OutT, 2, 2, 16>(g, sp, s);
  if (sp.rows == 32 && sp.tn == 2) return launch_tile<T, OutT, 2, 2>(g, sp, s);
  return "no skinny kernel for this (rows, tn)";
}

}  // namespace

const char* skinny_launch(const GemmArgs& g, const SkinnyPlan& sp, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (!sp.use || sp.grid < 1 || (sp.warps != kSkinnyWarps && !(sp.warps == 16 && sp.rows == 32)))
    return "invalid skinny plan";
  if (g.a_mn || g.b_mn) return "the skinny kernel needs K-contiguous A and B";
  if (g.M < 1 || g.M > 8 * sp.tn || g.N < 1 || g.K < 1) return "shape outside the skinny plan";
  if (g.in_dtype == DType::bf16) {
    if (g.out_dtype == DType::fp32) return by_tile<__nv_bfloat16, float>(g, sp, s);
    if (g.out_dtype == DType::bf16) return by_tile<__nv_bfloat16, __nv_bfloat16>(g, sp, s);
  } else if (g.in_dtype == DType::fp16) {
    if (g.out_dtype == DType::fp32) return by_tile<__half, float>(g, sp, s);
    if (g.out_dtype == DType::fp16) return by_tile<__half, __half>(g, sp, s);
  }
  return "unsupported dtype for the skinny kernel";
}

}  // namespace tk::hopper
