// tk.linear_backward: a linear layer's two backward products from its output gradient taken once,
// (grad_input, grad_weight) = (grad_output . W, grad_output^T . input), as tk.gemm_pair(grad_output,
// W, grad_output^T, input) through the dispatcher (so every backend of tk.gemm_pair serves it).
// Why an op of its own: handed tk.gemm_pair's two views of one gradient that is still a pointwise
// expression (e.g. RoPE's backward), Inductor computes and stores it twice, once per view
// (benchmarks/NOTES.md 2026-12-06e: the k projection's RoPE-backward kernel wrote dk twice); one
// argument is one buffer.
// tk.linear_backward_cat: the same for linear layers that share their input and whose outputs lie
// side by side in one gradient (a SwiGLU MLP's gate / up, tk.swiglu_down_backward_cat): grad_input =
// grad_output . [W_0; W_1; ..] as one product (the Hopper K-parts GEMM reads the weights in place:
// no stacked copy, no sum of per-layer products), grad_weight = grad_output^T . input for all of them
// at once ((sum of out_features) x in_features; the layers' gradients are its row blocks).
// tk.linear_backward_parts: the same from one output gradient per layer (an attention's q / k / v,
// torch_tk/rope.py): the K-parts GEMM reads each gradient in place too (no cat of them), and the weight
// gradients are one GEMM as well ([g_0 | g_1 | ..]^T . input: the Hopper M-parts GEMM reads each g_i^T
// in place by row range), returned as one tensor whose row blocks are the layers' gradients (a custom
// op's outputs may not alias one another; torch_tk/cat_backward.py splits it).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "counters.h"
#include "ops.h"

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

using GemmFn = at::Tensor(const at::Tensor&, const at::Tensor&, std::optional<at::ScalarType>);

at::Tensor dispatch_gemm(const at::Tensor& a, const at::Tensor& b) {
  static auto gemm = c10::Dispatcher::singleton().findSchemaOrThrow("tk::gemm", "").typed<GemmFn>();
  return gemm.call(a, b, std::nullopt);
}

// The checks both ops share: `input` and the weights (dtype, device, in_features); returns the
// weights' row total.
int64_t check_weights(const char* op, at::TensorList weights, const at::Tensor& input) {
  TORCH_CHECK_VALUE(!weights.empty(), op, ": `weights` must hold at least one tensor");
  TORCH_CHECK_VALUE(input.dim() == 2, op, ": `input` must be a 2-D (M, in_features) tensor, got ", num(input.dim()), "-D");
  const auto t = input.scalar_type();
  TORCH_CHECK_TYPE(t == at::kBFloat16 || t == at::kHalf || t == at::kFloat || t == at::kDouble, op,
                   ": `input` has dtype ", t, "; supported: bfloat16, float16, float32, float64");
  int64_t rows = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const at::Tensor& w = weights[i];
    const std::string name = "weights[" + num(int64_t(i)) + "]";
    TORCH_CHECK_VALUE(w.dim() == 2, op, ": `", name, "` must be a 2-D (out_features, in_features) tensor, got ",
                      num(w.dim()), "-D");
    TORCH_CHECK_TYPE(w.scalar_type() == t, op, ": `", name, "` and `input` must have one dtype, got ", w.scalar_type(),
                     " and ", t);
    TORCH_CHECK_VALUE(w.device() == input.device(), op, ": `", name, "` and `input` must be on one device, got ",
                      w.device(), " and ", input.device());
    TORCH_CHECK_VALUE(w.size(1) == input.size(1), op, ": `input` has ", num(input.size(1)), " columns but `", name,
                      "` has ", num(w.size(1)), " (in_features)");
    rows += w.size(0);
  }
  return rows;
}

// An output gradient's checks: 2-D, `input`'s dtype, device and rows, `cols` columns (`what` names them).
void check_grad(const char* op, const at::Tensor& g, const std::string& name, const at::Tensor& input, int64_t cols,
                const char* what) {
  TORCH_CHECK_VALUE(g.dim() == 2, op, ": `", name, "` must be a 2-D (M, ", what, ") tensor, got ", num(g.dim()), "-D");
  TORCH_CHECK_TYPE(g.scalar_type() == input.scalar_type(), op, ": `", name, "` and `input` must have one dtype, got ",
                   g.scalar_type(), " and ", input.scalar_type());
  TORCH_CHECK_VALUE(g.device() == input.device(), op, ": `", name, "` and `input` must be on one device, got ",
                    g.device(), " and ", input.device());
  TORCH_CHECK_VALUE(g.size(1) == cols, op, ": `", name, "` has ", num(g.size(1)), " columns but ", what, " is ",
                    num(cols));
  TORCH_CHECK_VALUE(g.size(0) == input.size(0), op, ": `", name, "` has ", num(g.size(0)), " rows but `input` has ",
                    num(input.size(0)));
}

// grad_input = [grads side by side] . [weights stacked] by `backend`, else stacked copies and tk.gemm
// (logged where no backend exists).
at::Tensor grad_input_parts(const char* op, at::TensorList grads, at::TensorList weights, const at::Tensor& input,
                            int64_t rows, KcatBackend backend) {
  if (weights.size() == 1) return dispatch_gemm(grads[0], weights[0]);
  at::Tensor grad_input = at::empty({input.size(0), input.size(1)}, input.options());
  const bool empty = grad_input.numel() == 0 || rows == 0;
  if (empty || backend == nullptr || !backend(grad_input, grads, weights)) {
    if (!empty && backend == nullptr && !input.device().is_cpu())
      note_fallback(std::string(op) + ": no K-parts kernel on this backend (it is Hopper's): stacked copies and one "
                    "tk.gemm");
    const at::Tensor g = grads.size() == 1 ? grads[0] : at::cat(grads, 1);
    grad_input = dispatch_gemm(g, at::cat(weights, 0));  // (its kernels, or the reference on the CPU)
  }
  return grad_input;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> linear_backward_cat_core(const at::Tensor& grad_output, at::TensorList weights,
                                                            const at::Tensor& input, KcatBackend backend) {
  const char* op = "tk.linear_backward_cat";
  const int64_t rows = check_weights(op, weights, input);
  check_grad(op, grad_output, "grad_output", input, rows, "the weights' rows (out_features) together");
  return {grad_input_parts(op, grad_output, weights, input, rows, backend), dispatch_gemm(grad_output.t(), input)};
}

std::tuple<at::Tensor, at::Tensor> linear_backward_parts_core(at::TensorList grad_outputs, at::TensorList weights,
                                                              const at::Tensor& input, KcatBackend backend,
                                                              MpartsBackend mparts) {
  const char* op = "tk.linear_backward_parts";
  const int64_t rows = check_weights(op, weights, input);
  TORCH_CHECK_VALUE(grad_outputs.size() == weights.size(), op, ": `grad_outputs` must hold one tensor per weight, got ",
                    num(int64_t(grad_outputs.size())), " for ", num(int64_t(weights.size())), " weights");
  for (size_t i = 0; i < weights.size(); ++i)
    check_grad(op, grad_outputs[i], "grad_outputs[" + num(int64_t(i)) + "]", input, weights[i].size(0),
               "the weight's rows (out_features)");
  // The weights' gradients: one M-parts GEMM, else one tk.gemm per weight and a cat of the results (a
  // copy of the outputs, far smaller than a cat of the gradients when in_features < M; logged where no
  // backend exists).
  at::Tensor grad_weight;
  if (weights.size() == 1) {
    grad_weight = dispatch_gemm(grad_outputs[0].t(), input);
  } else {
    grad_weight = at::empty({rows, input.size(1)}, input.options());
    const bool empty = grad_weight.numel() == 0 || input.size(0) == 0;
    if (empty || mparts == nullptr || !mparts(grad_weight, grad_outputs, input)) {
      if (!empty && mparts == nullptr && !input.device().is_cpu())
        note_fallback(std::string(op) + ": no M-parts kernel on this backend (it is Hopper's): one tk.gemm per weight "
                      "and a cat");
      std::vector<at::Tensor> each;
      for (const at::Tensor& g : grad_outputs) each.push_back(dispatch_gemm(g.t(), input));
      grad_weight = at::cat(each, 0);
    }
  }
  return {grad_input_parts(op, grad_outputs, weights, input, rows, backend), grad_weight};
}

std::tuple<at::Tensor, at::Tensor> linear_backward_cat_cpu(const at::Tensor& grad_output, at::TensorList weights,
                                                           const at::Tensor& input) {
  return linear_backward_cat_core(grad_output, weights, input, nullptr);
}

std::tuple<at::Tensor, at::Tensor> linear_backward_parts_cpu(at::TensorList grad_outputs, at::TensorList weights,
                                                             const at::Tensor& input) {
  return linear_backward_parts_core(grad_outputs, weights, input, nullptr, nullptr);
}

}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CPU, m) {
  m.impl("linear_backward", &tk::linear_backward_impl);
  m.impl("linear_backward_cat", &tk::linear_backward_cat_cpu);
  m.impl("linear_backward_parts", &tk::linear_backward_parts_cpu);
}
TORCH_LIBRARY_IMPL(tk, CUDA, m) { m.impl("linear_backward", &tk::linear_backward_impl); }
