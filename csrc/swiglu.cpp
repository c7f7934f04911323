// tk.linear_swiglu: a SwiGLU MLP's gate and up projections as one product, stored packed gate | up
// (kittens/common/swiglu.h), and h = silu(gate) * up, in one op. tk.swiglu_down_backward: the down
// projection's input gradient dh = dy . W_down taken through the activation to d_gate, d_up in one
// op (tk.swiglu_down_backward_cat: the two side by side in one tensor, for tk.linear_backward_cat).
// tk.swiglu_mlp: the whole MLP's forward (the two ops above: its autograd, torch_tk/swiglu.py, uses
// the second's cat form). Argument checks, allocation, the empty cases and the references (fp32
// accumulate, h and the gradients from the fp32 products as the kernels compute them); the Hopper
// kernels are the CUDA backends (gemm/hopper/dispatch.cpp).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>


#include <string>
#include <utility>
#include <vector>

#include "counters.h"
#include "kittens/common/swiglu.h"
#include "ops.h"

namespace tk {
namespace {

std::string num(int64_t v) { return std::to_string(v); }  // (not an ostream: ops.cpp says why)

// The reference: gate and up products in fp32 (fp64 stays fp64), gu packed from them, h from them.
void reference_swiglu(at::Tensor& gu, at::Tensor& h, const at::Tensor& x2d, const at::Tensor& wg,
                      const at::Tensor& wu) {
  const auto acc_t = x2d.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor x = x2d.to(acc_t);
  const at::Tensor g = at::mm(x, wg.to(acc_t).t()), u = at::mm(x, wu.to(acc_t).t());
  const int64_t M = g.size(0), blocks = g.size(1) / kittens::kSwiGLUBlock;
  const at::Tensor gu4 = gu.view({M, blocks, 2, kittens::kSwiGLUBlock});
  gu4.select(2, 0).copy_(g.view({M, blocks, kittens::kSwiGLUBlock}));
  gu4.select(2, 1).copy_(u.view({M, blocks, kittens::kSwiGLUBlock}));
  h.copy_(at::silu(g) * u);
}

// The backward reference: dh in fp32 (fp64 stays fp64), then s = sigmoid(g), d_up = dh g s,
// d_gate = dh u s (1 + g (1 - s)) with g, u of the packed gu (in their stored precision).
void reference_swiglu_grad(at::Tensor& d_gate, at::Tensor& d_up, const at::Tensor& dy2d, const at::Tensor& wd,
                           const at::Tensor& gu2d) {
  const auto acc_t = dy2d.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor dh = at::mm(dy2d.to(acc_t), wd.to(acc_t));
  const int64_t M = dh.size(0), I = dh.size(1), blocks = I / kittens::kSwiGLUBlock;
  const at::Tensor gu4 = gu2d.view({M, blocks, 2, kittens::kSwiGLUBlock}).to(acc_t);
  const at::Tensor g = gu4.select(2, 0).reshape({M, I}), u = gu4.select(2, 1).reshape({M, I});
  const at::Tensor s = at::sigmoid(g);
  d_up.copy_(dh * g * s);
  d_gate.copy_(dh * u * s * (1 + g * (1 - s)));
}

std::tuple<at::Tensor, at::Tensor> linear_swiglu_cpu(const at::Tensor& input, const at::Tensor& gate_weight,
                                                     const at::Tensor& up_weight) {
  return linear_swiglu_core(input, gate_weight, up_weight, nullptr);
}

std::tuple<at::Tensor, at::Tensor> swiglu_down_backward_cpu(const at::Tensor& grad_output,
                                                            const at::Tensor& down_weight, const at::Tensor& gu) {
  return swiglu_down_backward_core(grad_output, down_weight, gu, nullptr);
}

at::Tensor swiglu_down_backward_cat_cpu(const at::Tensor& grad_output, const at::Tensor& down_weight,
                                        const at::Tensor& gu) {
  return std::get<0>(swiglu_down_backward_core(grad_output, down_weight, gu, nullptr, true));
}

// tk.swiglu_mlp: (down_proj(h), gu, h) with (gu, h) = tk.linear_swiglu(input, gate, up); the two
// ops through the dispatcher (their kernels, fallbacks and counters), gu and h returned for the
// backward. Checks what linear_swiglu does not: the down weight.
std::tuple<at::Tensor, at::Tensor, at::Tensor> swiglu_mlp_impl(const at::Tensor& input, const at::Tensor& gate_weight,
                                                               const at::Tensor& up_weight,
                                                               const at::Tensor& down_weight) {
  const char* op = "tk.swiglu_mlp";
  TORCH_CHECK_VALUE(down_weight.dim() == 2, op, ": `down_weight` must be a 2-D (hidden, intermediate) tensor, got ",
                    num(down_weight.dim()), "-D");
  TORCH_CHECK_TYPE(down_weight.scalar_type() == input.scalar_type(), op, ": `input` and `down_weight` must have the ",
                   "same dtype, got ", input.scalar_type(), " and ", down_weight.scalar_type());
  TORCH_CHECK_VALUE(down_weight.device() == input.device(), op, ": `input` and `down_weight` must be on the same ",
                    "device, got ", input.device(), " and ", down_weight.device());
  TORCH_CHECK_VALUE(gate_weight.dim() != 2 || down_weight.size(1) == gate_weight.size(0), op, ": `down_weight` has ",
                    num(down_weight.size(1)), " columns but the intermediate size (rows of `gate_weight`) is ",
                    num(gate_weight.size(0)));
  using SwiFn = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&);
  using LinFn = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&);
  static auto swi = c10::Dispatcher::singleton().findSchemaOrThrow("tk::linear_swiglu", "").typed<SwiFn>();
  static auto lin = c10::Dispatcher::singleton().findSchemaOrThrow("tk::linear", "").typed<LinFn>();
  auto [gu, h] = swi.call(input, gate_weight, up_weight);
  at::Tensor y = lin.call(h, down_weight, std::nullopt);
  return {y, gu, h};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> swiglu_down_backward_core(const at::Tensor& grad_output,
                                                             const at::Tensor& down_weight, const at::Tensor& gu,
                                                             SwiGLUGradBackend backend, bool cat) {
  const char* op = cat ? "tk.swiglu_down_backward_cat" : "tk.swiglu_down_backward";
  TORCH_CHECK_VALUE(grad_output.dim() >= 1, op, ": `grad_output` must have at least 1 dimension, got a 0-D tensor");
  const auto t = grad_output.scalar_type();
  TORCH_CHECK_TYPE(t == at::kBFloat16 || t == at::kHalf || t == at::kFloat || t == at::kDouble, op,
                   ": `grad_output` has dtype ", t, "; supported: bfloat16, float16, float32, float64");
  for (const auto& [x, name] : {std::pair{&down_weight, "down_weight"}, std::pair{&gu, "gu"}}) {
    TORCH_CHECK_TYPE(x->scalar_type() == t, op, ": `grad_output` and `", name, "` must have the same dtype, got ", t,
                     " and ", x->scalar_type());
    TORCH_CHECK_VALUE(x->device() == grad_output.device(), op, ": `grad_output` and `", name,
                      "` must be on the same device, got ", grad_output.device(), " and ", x->device());
  }
  TORCH_CHECK_VALUE(down_weight.dim() == 2, op, ": `down_weight` must be a 2-D (hidden, intermediate) tensor, got ",
                    num(down_weight.dim()), "-D");
  const int64_t H = down_weight.size(0), I = down_weight.size(1);
  TORCH_CHECK_VALUE(grad_output.size(-1) == H, op, ": `grad_output` has ", num(grad_output.size(-1)),
                    " features in its last dimension but `down_weight` has ", num(H), " rows (hidden size)");
  TORCH_CHECK_VALUE(I % kittens::kSwiGLUBlock == 0, op, ": the intermediate size (", num(I),
                    " columns of `down_weight`) must be a multiple of ", num(kittens::kSwiGLUBlock),
                    " (the packed gate | up layout's block)");
  std::vector<int64_t> shape(grad_output.sizes().begin(), grad_output.sizes().end() - 1);
  shape.push_back(2 * I);
  TORCH_CHECK_VALUE(gu.sizes() == at::IntArrayRef(shape), op, ": `gu` must have shape ", at::IntArrayRef(shape),
                    " (grad_output's leading dimensions, 2 x the intermediate size), got ", gu.sizes());
  int64_t M = 1;
  for (int64_t d = 0; d + 1 < grad_output.dim(); ++d) M *= grad_output.size(d);
  // cat: one (..., 2I) tensor whose column halves the kernel or the reference fill.
  at::Tensor both = cat ? at::empty(shape, grad_output.options()) : at::Tensor();
  shape.back() = I;
  at::Tensor d_gate = cat ? both : at::empty(shape, grad_output.options()),
             d_up = cat ? at::Tensor() : at::empty(shape, grad_output.options());
  if (M == 0 || I == 0) return {d_gate, d_up};
  if (H == 0) {  // dh = 0: both gradients 0
    d_gate.zero_();
    if (!cat) d_up.zero_();
    return {d_gate, d_up};
  }
  const at::Tensor dy2d = grad_output.reshape({M, H}), gu2d = gu.reshape({M, 2 * I});
  at::Tensor dg2d = cat ? both.view({M, 2 * I}).narrow(1, 0, I) : d_gate.view({M, I}),
             du2d = cat ? both.view({M, 2 * I}).narrow(1, I, I) : d_up.view({M, I});
  if (backend == nullptr || !backend(dg2d, du2d, dy2d, down_weight, gu2d)) {
    if (grad_output.device().is_cpu()) count_call(Path::cpu);
    else if (backend == nullptr)
      note_fallback(std::string(op) + ": no kernel on this backend (the SwiGLU backward GEMM is Hopper's)");
    reference_swiglu_grad(dg2d, du2d, dy2d, down_weight, gu2d);
  }
  return {d_gate, d_up};
}

std::tuple<at::Tensor, at::Tensor> linear_swiglu_core(const at::Tensor& input, const at::Tensor& gate_weight,
                                                      const at::Tensor& up_weight, SwiGLUBackend backend) {
  const char* op = "tk.linear_swiglu";
  TORCH_CHECK_VALUE(input.dim() >= 1, op, ": `input` must have at least 1 dimension, got a 0-D tensor");
  const auto t = input.scalar_type();
  TORCH_CHECK_TYPE(t == at::kBFloat16 || t == at::kHalf || t == at::kFloat || t == at::kDouble, op,
                   ": `input` has dtype ", t, "; supported: bfloat16, float16, float32, float64");
  for (const auto& [w, name] : {std::pair{&gate_weight, "gate_weight"}, std::pair{&up_weight, "up_weight"}}) {
    TORCH_CHECK_VALUE(w->dim() == 2, op, ": `", name, "` must be a 2-D (intermediate, in_features) tensor, got ",
                      num(w->dim()), "-D");
    TORCH_CHECK_TYPE(w->scalar_type() == t, op, ": `input` and `", name, "` must have the same dtype, got ", t,
                     " and ", w->scalar_type());
    TORCH_CHECK_VALUE(w->device() == input.device(), op, ": `input` and `", name,
                      "` must be on the same device, got ", input.device(), " and ", w->device());
    TORCH_CHECK_VALUE(w->size(1) == input.size(-1), op, ": `input` has ", num(input.size(-1)),
                      " features in its last dimension but `", name, "` expects ", num(w->size(1)));
  }
  TORCH_CHECK_VALUE(gate_weight.size(0) == up_weight.size(0), op, ": `gate_weight` has ", num(gate_weight.size(0)),
                    " rows but `up_weight` ", num(up_weight.size(0)), "; they must match");
  TORCH_CHECK_VALUE(gate_weight.size(0) % kittens::kSwiGLUBlock == 0, op, ": the intermediate size (",
                    num(gate_weight.size(0)), " rows of `gate_weight`) must be a multiple of ",
                    num(kittens::kSwiGLUBlock), " (the packed gate | up layout's block)");
  const int64_t K = input.size(-1), I = gate_weight.size(0);
  int64_t M = 1;
  for (int64_t d = 0; d + 1 < input.dim(); ++d) M *= input.size(d);
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end() - 1);
  shape.push_back(2 * I);
  at::Tensor gu = at::empty(shape, input.options());
  shape.back() = I;
  at::Tensor h = at::empty(shape, input.options());
  if (M == 0 || I == 0) return {gu, h};
  if (K == 0) {  // an empty sum: gate = up = 0, h = silu(0) * 0 = 0
    gu.zero_();
    h.zero_();
    return {gu, h};
  }
  const at::Tensor x2d = input.reshape({M, K});
  at::Tensor gu2d = gu.view({M, 2 * I}), h2d = h.view({M, I});
  if (backend == nullptr || !backend(gu2d, h2d, x2d, gate_weight, up_weight)) {
    if (input.device().is_cpu()) count_call(Path::cpu);
    else if (backend == nullptr) note_fallback("tk.linear_swiglu: no kernel on this backend (the SwiGLU GEMM is Hopper's)");
    reference_swiglu(gu2d, h2d, x2d, gate_weight, up_weight);
  }
  return {gu, h};
}

}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CPU, m) {
  m.impl("linear_swiglu", &tk::linear_swiglu_cpu);
  m.impl("swiglu_down_backward", &tk::swiglu_down_backward_cpu);
  m.impl("swiglu_down_backward_cat", &tk::swiglu_down_backward_cat_cpu);
  m.impl("swiglu_mlp", &tk::swiglu_mlp_impl);
}

TORCH_LIBRARY_IMPL(tk, CUDA, m) { m.impl("swiglu_mlp", &tk::swiglu_mlp_impl); }
