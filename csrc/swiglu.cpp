// tk.linear_swiglu: a SwiGLU MLP's gate and up projections as one product, stored packed gate | up
// (kittens/common/swiglu.h), and h = silu(gate) * up, in one op. Argument checks, allocation, the
// empty cases and the reference (fp32 accumulate, h from the fp32 products as the kernel computes
// it); the Hopper kernel is the CUDA backend (gemm/hopper/dispatch.cpp).
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

std::tuple<at::Tensor, at::Tensor> linear_swiglu_cpu(const at::Tensor& input, const at::Tensor& gate_weight,
                                                     const at::Tensor& up_weight) {
  return linear_swiglu_core(input, gate_weight, up_weight, nullptr);
}

}  // namespace

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

TORCH_LIBRARY_IMPL(tk, CPU, m) { m.impl("linear_swiglu", &tk::linear_swiglu_cpu); }
