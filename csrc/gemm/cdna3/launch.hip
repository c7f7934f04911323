// Host launcher of the CDNA3 GEMM: argument checks, instantiation per (dtype, layout), launch.
#include <hip/hip_runtime.h>
#include <cstring>
#include <type_traits>
#include "launch.h"
#include "gemm_cdna3.hip"

namespace tk::cdna3 {

namespace {

template <bool kF16, bool kOutF32, bool kAMn, bool kBMn>
const char* launch_layout(const GemmArgs& g, hipStream_t stream) {
  const int64_t tiles = int64_t(kittens::ceil_div(g.M, BM)) * kittens::ceil_div(g.N, BN);
  if (tiles > 0x7fffffff) return "too many output tiles for a 1-D grid";
  if (operand_span_bytes(kAMn, g.lda) >= (int64_t(1) << 31)) return "lda too large for 32-bit buffer offsets";
  if (operand_span_bytes(kBMn, g.ldb) >= (int64_t(1) << 31)) return "ldb too large for 32-bit buffer offsets";
  if (int64_t(16) * g.N * 4 >= (int64_t(1) << 31)) return "N too large for 32-bit epilogue offsets";
  if (g.c != nullptr && (g.c_s0 < 0 || g.c_s1 < 0 || (15 * g.c_s0 + 63 * g.c_s1) * 4 >= (int64_t(1) << 31)))
    return "C strides unsupported (negative or too large for 32-bit offsets)";
  const GemmParams p{g.a, g.lda, g.b, g.ldb, g.M, g.N, g.K, g.out, g.c, g.c_s0, g.c_s1, g.alpha, g.beta};
  hipLaunchKernelGGL((gemm_cdna3_kernel<kF16, kOutF32, kAMn, kBMn>), dim3(unsigned(tiles)), dim3(THREADS), 0, stream, p);
  const hipError_t err = hipGetLastError();
  return err == hipSuccess ? nullptr : hipGetErrorString(err);
}

template <bool kF16, bool kOutF32>
const char* launch_dtype(const GemmArgs& g, hipStream_t s) {
  if (g.a_mn) {
    return g.b_mn ? launch_layout<kF16, kOutF32, true, true>(g, s) : launch_layout<kF16, kOutF32, true, false>(g, s);
  }
  return g.b_mn ? launch_layout<kF16, kOutF32, false, true>(g, s) : launch_layout<kF16, kOutF32, false, false>(g, s);
}

}  // namespace

bool device_supported(int device) {
  static int cache[64] = {0};  // 0 unknown, 1 yes, 2 no
  if (device < 0 || device >= 64) return false;
  if (cache[device] == 0) {
    hipDeviceProp_t prop;
    const bool ok = hipGetDeviceProperties(&prop, device) == hipSuccess &&
                    std::strncmp(prop.gcnArchName, "gfx942", 6) == 0;
    cache[device] = ok ? 1 : 2;
  }
  return cache[device] == 1;
}

const char* gemm_launch(const GemmArgs& g, void* stream) {
  auto s = static_cast<hipStream_t>(stream);
  if (g.M < 1 || g.N < 1 || g.K < 1) return "M, N and K must be >= 1";
  const bool f32_out = g.out_dtype == DType::fp32;
  if (!f32_out && g.out_dtype != g.in_dtype) return "unsupported output dtype";
  switch (g.in_dtype) {
    case DType::bf16: return f32_out ? launch_dtype<false, true>(g, s) : launch_dtype<false, false>(g, s);
    case DType::fp16: return f32_out ? launch_dtype<true, true>(g, s) : launch_dtype<true, false>(g, s);
    default: return "unsupported input dtype";
  }
}

}  // namespace tk::cdna3
