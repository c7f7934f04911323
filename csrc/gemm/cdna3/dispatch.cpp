// ROCm dispatch of the tk ops (built only against a ROCm torch: setup.py defines TK_WITH_HIP).
// ROCm torch exposes AMD GPUs under the CUDA device type and dispatch key, so the ops register
// under CUDA exactly as on NVIDIA; this file uses only backend-neutral c10/ATen APIs (device guard,
// the current stream's native handle) so the same source needs no hipify rewrite. gfx942 runs
// the CDNA3 kernel (csrc/gemm/cdna3/launch.hip); other GPUs and dtypes fall back visibly.
// NOT RUN ON HARDWARE: no AMD GPU exists where this was written (docs/CDNA3.md).
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include "../../counters.h"
#include "../../ops.h"
#include "../operand.h"
#include "launch.h"

namespace tk {
namespace {

hopper::DType to_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? hopper::DType::bf16 : t == at::kHalf ? hopper::DType::fp16 : hopper::DType::fp32;
}

const char* decline_reason(const at::Tensor& a, const at::Tensor& b) {
  if (!cdna3::device_supported(a.get_device())) return "the GPU is not gfx942 (CDNA3); the HIP kernel is built for gfx942";
  if (a.scalar_type() != at::kBFloat16 && a.scalar_type() != at::kHalf)
    return "dtype is not bfloat16/float16 (the kernels take 16-bit inputs)";
  constexpr int64_t kMax = 0x7fffffff;
  if (a.size(0) > kMax || a.size(1) > kMax || b.size(1) > kMax) return "a dimension exceeds 2^31-1";
  return nullptr;
}

bool cdna3_backend(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                   double alpha, double beta) {
  if (const char* why = decline_reason(a, b)) {
    note_fallback(why);
    return false;
  }
  const c10::DeviceGuard guard(a.device());
  void* stream = c10::impl::getDeviceGuardImpl(a.device().type())->getStream(a.device()).native_handle();
  const Operand A = describe_operand(a, nullptr, stream);  // no re-pitch kernel here: torch copies
  const Operand B = describe_operand(b, nullptr, stream);
  hopper::GemmArgs g{};
  g.a = A.keep.data_ptr();
  g.lda = A.ld;
  g.a_mn = !A.row_major;
  g.b = B.keep.data_ptr();
  g.ldb = B.ld;
  g.b_mn = B.row_major;
  g.M = static_cast<int>(a.size(0));
  g.K = static_cast<int>(a.size(1));
  g.N = static_cast<int>(b.size(1));
  g.in_dtype = to_dtype(a.scalar_type());
  g.out_dtype = to_dtype(out.scalar_type());
  g.out = out.data_ptr();
  g.c = c.has_value() ? c->data_ptr() : nullptr;
  g.c_s0 = c.has_value() ? c->stride(0) : 0;
  g.c_s1 = c.has_value() ? c->stride(1) : 0;
  g.alpha = static_cast<float>(alpha);
  g.beta = static_cast<float>(beta);
  const char* err = cdna3::gemm_launch(g, stream);
  TORCH_CHECK(err == nullptr, "tk: CDNA3 GEMM launch failed: ", err);
  count_call(Path::cdna3);
  return true;
}

at::Tensor gemm_rocm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  static const ArgNames names{"tk.gemm", "a", "b", "self"};
  return addmm_core(std::nullopt, a, b, 0, 1, out_dtype, names, &cdna3_backend);
}

at::Tensor addmm_rocm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                      const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype) {
  static const ArgNames names{"tk.addmm", "mat1", "mat2", "self"};
  return addmm_core(self, mat1, mat2, beta, alpha, out_dtype, names, &cdna3_backend);
}

at::Tensor linear_rocm(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  return linear_core(input, weight, bias, &cdna3_backend);
}

}  // namespace

bool cdna3_available(int device) { return cdna3::device_supported(device); }

}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CUDA, m) {
  m.impl("gemm", &tk::gemm_rocm);
  m.impl("addmm", &tk::addmm_rocm);
  m.impl("linear", &tk::linear_rocm);
}
