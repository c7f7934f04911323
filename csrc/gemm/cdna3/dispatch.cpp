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
#include "../backend_ops.h"
#include "../operand.h"
#include "launch.h"

namespace tk {
namespace {

const char* decline_reason(const at::Tensor& a, const at::Tensor& b) {
  if (!cdna3::device_supported(a.get_device())) return "the GPU is not gfx942 (CDNA3); the HIP kernel is built for gfx942";
  return operand_decline_reason(a, b);
}

bool cdna3_backend(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                   double alpha, double beta) {
  if (const char* why = decline_reason(a, b)) {
    note_fallback(why);
    return false;
  }
  const c10::DeviceGuard guard(a.device());
  void* stream = c10::impl::getDeviceGuardImpl(a.device().type())->getStream(a.device()).native_handle();
  const Operand A = describe_operand(a, nullptr);  // no re-pitch kernel here: torch copies
  const Operand B = describe_operand(b, nullptr);
  const hopper::GemmArgs g = make_gemm_args(A, B, a, b, out, c, alpha, beta);
  const char* err = cdna3::gemm_launch(g, stream);
  TORCH_CHECK(err == nullptr, "tk: CDNA3 GEMM launch failed: ", err);
  count_call(Path::cdna3);
  return true;
}

}  // namespace

bool cdna3_available(int device) { return cdna3::device_supported(device); }

}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CUDA, m) { tk::BackendOps<&tk::cdna3_backend>::register_impls(m); }
