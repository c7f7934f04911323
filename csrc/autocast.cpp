// Autocast kernels for the tk ops (CUDA and CPU): under torch.autocast the floating inputs are
// cast to the autocast dtype (bf16/fp16; fp64 is left alone, as for aten matmuls), then the op
// re-dispatches below autocast -- so a patched fp32 model runs the 16-bit kernel and returns what
// nn.Linear would. The casts are ordinary differentiable ops: gradients reach the fp32 parameters.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace tk {
namespace {

template <c10::DeviceType Dev>
struct AutocastOps {
  static constexpr c10::DispatchKey kKey =
      Dev == c10::DeviceType::CUDA ? c10::DispatchKey::AutocastCUDA : c10::DispatchKey::AutocastCPU;

  static at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tk::gemm", "").typed<decltype(gemm)>();
    return op.call(at::autocast::cached_cast(dt, a, Dev), at::autocast::cached_cast(dt, b, Dev), out_dtype);
  }

  static at::Tensor addmm(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const at::Scalar& beta,
                          const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tk::addmm", "").typed<decltype(addmm)>();
    // self keeps an fp32 out_dtype's precision; otherwise it joins the 16-bit inputs.
    const at::Tensor s = out_dtype == at::kFloat ? self : at::autocast::cached_cast(dt, self, Dev);
    return op.call(s, at::autocast::cached_cast(dt, m1, Dev), at::autocast::cached_cast(dt, m2, Dev), beta, alpha,
                   out_dtype);
  }

  static at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tk::linear", "").typed<decltype(linear)>();
    return op.call(at::autocast::cached_cast(dt, input, Dev), at::autocast::cached_cast(dt, weight, Dev),
                   at::autocast::cached_cast(dt, bias, Dev));
  }

  static std::tuple<at::Tensor, at::Tensor> gemm_pair(const at::Tensor& a0, const at::Tensor& b0, const at::Tensor& a1,
                                                      const at::Tensor& b1) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tk::gemm_pair", "").typed<decltype(gemm_pair)>();
    return op.call(at::autocast::cached_cast(dt, a0, Dev), at::autocast::cached_cast(dt, b0, Dev),
                   at::autocast::cached_cast(dt, a1, Dev), at::autocast::cached_cast(dt, b1, Dev));
  }

  static std::tuple<at::Tensor, at::Tensor> linear_swiglu(const at::Tensor& input, const at::Tensor& gate_weight,
                                                          const at::Tensor& up_weight) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op =
        c10::Dispatcher::singleton().findSchemaOrThrow("tk::linear_swiglu", "").typed<decltype(linear_swiglu)>();
    return op.call(at::autocast::cached_cast(dt, input, Dev), at::autocast::cached_cast(dt, gate_weight, Dev),
                   at::autocast::cached_cast(dt, up_weight, Dev));
  }

  static std::tuple<at::Tensor, at::Tensor> swiglu_down_backward(const at::Tensor& grad_output,
                                                                 const at::Tensor& down_weight, const at::Tensor& gu) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("tk::swiglu_down_backward", "")
                         .typed<decltype(swiglu_down_backward)>();
    return op.call(at::autocast::cached_cast(dt, grad_output, Dev), at::autocast::cached_cast(dt, down_weight, Dev),
                   at::autocast::cached_cast(dt, gu, Dev));
  }

  static at::Tensor swiglu_down_backward_cat(const at::Tensor& grad_output, const at::Tensor& down_weight,
                                             const at::Tensor& gu) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("tk::swiglu_down_backward_cat", "")
                         .typed<decltype(swiglu_down_backward_cat)>();
    return op.call(at::autocast::cached_cast(dt, grad_output, Dev), at::autocast::cached_cast(dt, down_weight, Dev),
                   at::autocast::cached_cast(dt, gu, Dev));
  }

  static at::Tensor linear_rope(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& cos,
                                const at::Tensor& sin) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tk::linear_rope", "").typed<decltype(linear_rope)>();
    return op.call(at::autocast::cached_cast(dt, input, Dev), at::autocast::cached_cast(dt, weight, Dev),
                   at::autocast::cached_cast(dt, cos, Dev), at::autocast::cached_cast(dt, sin, Dev));
  }
  static std::tuple<at::Tensor, at::Tensor, at::Tensor> swiglu_mlp(const at::Tensor& input, const at::Tensor& gate_weight,
                                                                   const at::Tensor& up_weight,
                                                                   const at::Tensor& down_weight) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    const auto dt = at::autocast::get_autocast_dtype(Dev);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tk::swiglu_mlp", "").typed<decltype(swiglu_mlp)>();
    return op.call(at::autocast::cached_cast(dt, input, Dev), at::autocast::cached_cast(dt, gate_weight, Dev),
                   at::autocast::cached_cast(dt, up_weight, Dev), at::autocast::cached_cast(dt, down_weight, Dev));
  }
};

}  // namespace
}  // namespace tk

TORCH_LIBRARY_IMPL(tk, AutocastCUDA, m) {
  using O = tk::AutocastOps<c10::DeviceType::CUDA>;
  m.impl("gemm", &O::gemm);
  m.impl("addmm", &O::addmm);
  m.impl("linear", &O::linear);
  m.impl("gemm_pair", &O::gemm_pair);
  m.impl("linear_swiglu", &O::linear_swiglu);
  m.impl("swiglu_down_backward", &O::swiglu_down_backward);
  m.impl("swiglu_down_backward_cat", &O::swiglu_down_backward_cat);
  m.impl("swiglu_mlp", &O::swiglu_mlp);
  m.impl("linear_rope", &O::linear_rope);
}

TORCH_LIBRARY_IMPL(tk, AutocastCPU, m) {
  using O = tk::AutocastOps<c10::DeviceType::CPU>;
  m.impl("gemm", &O::gemm);
  m.impl("addmm", &O::addmm);
  m.impl("linear", &O::linear);
  m.impl("gemm_pair", &O::gemm_pair);
  m.impl("linear_swiglu", &O::linear_swiglu);
  m.impl("swiglu_down_backward", &O::swiglu_down_backward);
  m.impl("swiglu_down_backward_cat", &O::swiglu_down_backward_cat);
  m.impl("swiglu_mlp", &O::swiglu_mlp);
  m.impl("linear_rope", &O::linear_rope);
}
