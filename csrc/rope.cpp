// tk.linear_rope: a linear layer's product rotated by rotary position embedding in one op -- the
// q / k projection of attention with transformers' apply_rotary_pos_emb (rotate-half form) after
// it. Argument checks, allocation, the empty cases and the reference (fp32 accumulate; the
// rotation from the fp32 product, rounded once, as the kernel computes it); the Hopper kernel is the
// CUDA backend (gemm/hopper/dispatch.cpp, epilogue_rope.cuh).
#include <torch/library.h>

#include <string>
#include <utility>
#include <vector>

#include "counters.h"
#include "ops.h"

namespace tk {
namespace {

std::string num(int64_t v) { return std::to_string(v); }  // (not an ostream: ops.cpp says why)

// y = x2d . w^T in fp32 (fp64 stays fp64), per head of D = 2 * cos2d.size(1) columns:
// out[d] = y[d] c[d] - y[d + D/2] s[d], out[d + D/2] = y[d + D/2] c[d] + y[d] s[d].
void reference_linear_rope(at::Tensor& out, const at::Tensor& x2d, const at::Tensor& w, const at::Tensor& cos2d,
                           const at::Tensor& sin2d) {
  const auto acc_t = x2d.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor y = at::mm(x2d.to(acc_t), w.to(acc_t).t());
  const int64_t M = y.size(0), half = cos2d.size(1);
  const at::Tensor y3 = y.view({M, -1, 2 * half});
  const at::Tensor y1 = y3.narrow(2, 0, half), y2 = y3.narrow(2, half, half);
  const at::Tensor c = cos2d.to(acc_t).unsqueeze(1), s = sin2d.to(acc_t).unsqueeze(1);
  at::Tensor o3 = out.view({M, -1, 2 * half});
  o3.narrow(2, 0, half).copy_(y1 * c - y2 * s);
  o3.narrow(2, half, half).copy_(y2 * c + y1 * s);
}

at::Tensor linear_rope_cpu(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& cos,
                           const at::Tensor& sin) {
  return linear_rope_core(input, weight, cos, sin, nullptr);
}

}  // namespace

at::Tensor linear_rope_core(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& cos,
                            const at::Tensor& sin, RopeBackend backend) {
  const char* op = "tk.linear_rope";
  TORCH_CHECK_VALUE(input.dim() >= 1, op, ": `input` must have at least 1 dimension, got a 0-D tensor");
  const auto t = input.scalar_type();
  TORCH_CHECK_TYPE(t == at::kBFloat16 || t == at::kHalf || t == at::kFloat || t == at::kDouble, op,
                   ": `input` has dtype ", t, "; supported: bfloat16, float16, float32, float64");
  for (const auto& [x, name] : {std::pair{&weight, "weight"}, std::pair{&cos, "cos"}, std::pair{&sin, "sin"}}) {
    TORCH_CHECK_TYPE(x->scalar_type() == t, op, ": `input` and `", name, "` must have the same dtype, got ", t,
                     " and ", x->scalar_type());
    TORCH_CHECK_VALUE(x->device() == input.device(), op, ": `input` and `", name, "` must be on the same device, got ",
                      input.device(), " and ", x->device());
  }
  TORCH_CHECK_VALUE(weight.dim() == 2, op, ": `weight` must be a 2-D (out_features, in_features) tensor, got ",
                    num(weight.dim()), "-D");
  TORCH_CHECK_VALUE(weight.size(1) == input.size(-1), op, ": `input` has ", num(input.size(-1)),
                    " features in its last dimension but `weight` expects ", num(weight.size(1)));
  std::vector<int64_t> lead(input.sizes().begin(), input.sizes().end() - 1);
  for (const auto& [x, name] : {std::pair{&cos, "cos"}, std::pair{&sin, "sin"}}) {
    TORCH_CHECK_VALUE(x->dim() == input.dim() && x->sizes().slice(0, lead.size()) == at::IntArrayRef(lead), op, ": `",
                      name, "` must have `input`'s leading dimensions ", at::IntArrayRef(lead),
                      " and head_dim / 2 entries last, got shape ", x->sizes());
  }
  TORCH_CHECK_VALUE(cos.size(-1) == sin.size(-1) && cos.size(-1) > 0, op, ": `cos` and `sin` must have the same ",
                    "positive last dimension (head_dim / 2), got ", num(cos.size(-1)), " and ", num(sin.size(-1)));
  const int64_t head_dim = 2 * cos.size(-1), N = weight.size(0), K = input.size(-1);
  TORCH_CHECK_VALUE(N % head_dim == 0, op, ": out_features (", num(N), " rows of `weight`) must be a multiple of ",
                    "head_dim = 2 x cos.size(-1) = ", num(head_dim));
  int64_t M = 1;
  for (int64_t d : lead) M *= d;
  std::vector<int64_t> shape = lead;
  shape.push_back(N);
  at::Tensor out = at::empty(shape, input.options());
  if (M == 0 || N == 0) return out;
  if (K == 0) {  // an empty product: 0, rotated 0
    out.zero_();
    return out;
  }
  const at::Tensor x2d = input.reshape({M, K}), c2d = cos.reshape({M, head_dim / 2}), s2d = sin.reshape({M, head_dim / 2});
  at::Tensor o2d = out.view({M, N});
  if (backend == nullptr || !backend(o2d, x2d, weight, c2d, s2d)) {
    if (input.device().is_cpu()) count_call(Path::cpu);
    else if (backend == nullptr) note_fallback("tk.linear_rope: no kernel on this backend (the RoPE GEMM is Hopper's)");
    reference_linear_rope(o2d, x2d, weight, c2d, s2d);
  }
  return out;
}

}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CPU, m) { m.impl("linear_rope", &tk::linear_rope_cpu); }
