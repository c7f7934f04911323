// tk.linear_backward: a linear layer's two backward products from its output gradient taken once,
// (grad_input, grad_weight) = (grad_output . W, grad_output^T . input), as tk.gemm_pair(grad_output,
// W, grad_output^T, input) through the dispatcher (so every backend of tk.gemm_pair serves it).
// Why an op of its own: handed tk.gemm_pair's two views of one gradient that is still a pointwise
// expression (e.g. RoPE's backward), Inductor computes and stores it twice, once per view
// (benchmarks/NOTES.md 2026-12-06e: the k projection's RoPE-backward kernel wrote dk twice); one
// argument is one buffer.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>
#include <tuple>

namespace tk {
namespace {

std::string num(int64_t v) { return std::to_string(v); }  // (not an ostream: ops.cpp says why)

void check_2d(const at::Tensor& t, const char* name, const char* dims) {
  TORCH_CHECK_VALUE(t.dim() == 2, "tk.linear_backward: `", name, "` must be a 2-D ", dims, " tensor, got ",
                    num(t.dim()), "-D");
}

std::tuple<at::Tensor, at::Tensor> linear_backward_impl(const at::Tensor& grad_output, const at::Tensor& weight,
                                                        const at::Tensor& input) {
  check_2d(grad_output, "grad_output", "(M, out_features)");
  check_2d(weight, "weight", "(out_features, in_features)");
  check_2d(input, "input", "(M, in_features)");
  TORCH_CHECK_VALUE(grad_output.size(1) == weight.size(0), "tk.linear_backward: `grad_output` has ",
                    num(grad_output.size(1)), " columns but `weight` has ", num(weight.size(0)), " rows (out_features)");
  TORCH_CHECK_VALUE(input.size(1) == weight.size(1), "tk.linear_backward: `input` has ", num(input.size(1)),
                    " columns but `weight` has ", num(weight.size(1)), " (in_features)");
  TORCH_CHECK_VALUE(grad_output.size(0) == input.size(0), "tk.linear_backward: `grad_output` has ",
                    num(grad_output.size(0)), " rows but `input` has ", num(input.size(0)));
  const auto t = weight.scalar_type();
  TORCH_CHECK_TYPE(t == at::kBFloat16 || t == at::kHalf || t == at::kFloat || t == at::kDouble,
                   "tk.linear_backward: `weight` has dtype ", t, "; supported: bfloat16, float16, float32, float64");
  TORCH_CHECK_TYPE(grad_output.scalar_type() == t && input.scalar_type() == t,
                   "tk.linear_backward: `grad_output`, `weight` and `input` must have one dtype, got ",
                   grad_output.scalar_type(), ", ", weight.scalar_type(), " and ", input.scalar_type());
  TORCH_CHECK_VALUE(grad_output.device() == weight.device() && input.device() == weight.device(),
                    "tk.linear_backward: `grad_output`, `weight` and `input` must be on one device, got ",
                    grad_output.device(), ", ", weight.device(), " and ", input.device());
  using PairFn = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&);
  static auto pair = c10::Dispatcher::singleton().findSchemaOrThrow("tk::gemm_pair", "").typed<PairFn>();
  return pair.call(grad_output, weight, grad_output.t(), input);
}

}  // namespace
}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CPU, m) { m.impl("linear_backward", &tk::linear_backward_impl); }
TORCH_LIBRARY_IMPL(tk, CUDA, m) { m.impl("linear_backward", &tk::linear_backward_impl); }
