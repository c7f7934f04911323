// Entry of the Hopper GEMM: validates the arguments and picks the kernel family from the plan.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "launch.h"

namespace tk::hopper {

namespace {
// The families built (one launch_inst_*.cu each): 128-row tiles 64, 72, 80 (plan_rules.h kTokenWidths),
// 128, 144, 160, 192, 224 and 256 wide (plan.h never pairs 64-row tiles with 256 columns: measured
// slower); 64-row tiles 64, 128 and, one token tile, 144..224 wide (plan.h rows64_token_width).
constexpr bool family_built(int bm, int bn) {
  return bm == 64 ? bn == 64 || bn == 128 || rows64_token_width(bn) : bn != kTokenRows64Width176;
}

template <typename T, typename OutT, int BN, int BM>
const char* built_family(const GemmArgs& g, void* s) {
  if constexpr (!family_built(BM, BN))
    return BM == 64 ? "64-row tiles are built 64, 128, 144, 160, 176, 192 or 224 columns wide"
                    : "128-row tiles are not built 176 columns wide";
  else return launch_family<T, OutT, BN, BM>(g, s);
}

template <typename T, typename OutT, int BM>
const char* by_width(const GemmArgs& g, void* s) {
  switch (g.plan.bn) {
    case 64: return built_family<T, OutT, 64, BM>(g, s);
    case 72: return built_family<T, OutT, 72, BM>(g, s);
    case 80: return built_family<T, OutT, 80, BM>(g, s);
    case 128: return built_family<T, OutT, 128, BM>(g, s);
    case 144: return built_family<T, OutT, 144, BM>(g, s);
    case 160: return built_family<T, OutT, 160, BM>(g, s);
    case 176: return built_family<T, OutT, 176, BM>(g, s);
    case 192: return built_family<T, OutT, 192, BM>(g, s);
    case 224: return built_family<T, OutT, 224, BM>(g, s);
    case 256: return built_family<T, OutT, 256, BM>(g, s);
    default: return "plan.bn must be 64, 72, 80, 128, 144, 160, 176, 192, 224 or 256";
  }
}

template <typename T>
const char* by_tile(const GemmArgs& g, void* s) {
  if (g.plan.bm == 64) return by_width<T, T, 64>(g, s);
  if (g.plan.bm == 128) return by_width<T, T, 128>(g, s);
  return "plan.bm must be 64 or 128";
}
}  // namespace

const char* gemm_launch(const GemmArgs& g, void* s) {
  if (g.M < 1 || g.N < 1 || g.K < 1) return "M, N and K must be >= 1";
  if (g.plan.splits < 1 || g.plan.grid < 1) return "invalid plan";
  if (g.out_dtype == DType::fp32) {
    if (g.plan.bn != 128 || g.plan.bm != 128) return "fp32-output kernels are built for 128 x 128 tiles only";
    if (g.in_dtype == DType::bf16) return launch_family<__nv_bfloat16, float, 128, 128>(g, s);
    if (g.in_dtype == DType::fp16) return launch_family<__half, float, 128, 128>(g, s);
    return "unsupported input dtype";
  }
  if (g.out_dtype != g.in_dtype) return "unsupported output dtype";
  if (g.in_dtype == DType::bf16) return by_tile<__nv_bfloat16>(g, s);
  if (g.in_dtype == DType::fp16) return by_tile<__half>(g, s);
  return "unsupported input dtype";
}

}  // namespace tk::hopper
