// What the GPU backends' dispatchers share: the GemmArgs of a call (operands as described by
// operand.h) and the three tk ops bound to one backend, registered under the CUDA key.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "../ops.h"
#include "hopper/launch.h"
#include "operand.h"

namespace tk {

// Why a call the device could run cannot go to the 16-bit kernels (nullptr: it can).
inline const char* operand_decline_reason(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != at::kBFloat16 && a.scalar_type() != at::kHalf)
    return "dtype is not bfloat16/float16 (the kernels take 16-bit inputs)";
  constexpr int64_t kMax = 0x7fffffff;
  if (a.size(0) > kMax || a.size(1) > kMax || b.size(1) > kMax) return "a dimension exceeds 2^31-1";
  return nullptr;
}

inline hopper::DType to_gemm_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? hopper::DType::bf16 : t == at::kHalf ? hopper::DType::fp16 : hopper::DType::fp32;
}

// out (M x N, row-major, contiguous) = alpha * a @ b + beta * c, with a/b read through A/B.
inline hopper::GemmArgs make_gemm_args(const Operand& A, const Operand& B, const at::Tensor& a, const at::Tensor& b,
                                       at::Tensor& out, const std::optional<at::Tensor>& c, double alpha,
                                       double beta) {
  hopper::GemmArgs g{};
  g.a = A.keep.data_ptr();
  g.lda = A.ld;
  g.a_mn = !A.row_major;  // column-major A is M-contiguous
  g.b = B.keep.data_ptr();
  g.ldb = B.ld;
  g.b_mn = B.row_major;   // row-major B is N-contiguous
  g.M = static_cast<int>(a.size(0));
  g.K = static_cast<int>(a.size(1));
  g.N = static_cast<int>(b.size(1));
  g.in_dtype = to_gemm_dtype(a.scalar_type());
  g.out_dtype = to_gemm_dtype(out.scalar_type());
  g.out = out.data_ptr();
  g.c = c.has_value() ? c->data_ptr() : nullptr;
  g.c_s0 = c.has_value() ? c->stride(0) : 0;
  g.c_s1 = c.has_value() ? c->stride(1) : 0;
  g.alpha = static_cast<float>(alpha);
  g.beta = static_cast<float>(beta);
  return g;
}

// tk.gemm / tk.addmm / tk.linear / tk.gemm_pair running `Backend`, tk.linear_swiglu running
// `SwiBackend`, tk.swiglu_down_backward(_cat) `GradBackend`, tk.linear_rope `RopeBack`,
// tk.linear_backward_cat's / _parts' input gradient `KcatBack`, tk.linear_backward_parts' weight gradients
// `MpartsBack` (any may decline, or be null: then the reference runs).
template <MatmulBackend Backend, SwiGLUBackend SwiBackend = nullptr, SwiGLUGradBackend GradBackend = nullptr,
          RopeBackend RopeBack = nullptr, KcatBackend KcatBack = nullptr, MpartsBackend MpartsBack = nullptr>
struct BackendOps {
  static at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
    static const ArgNames names{"tk.gemm", "a", "b", "self"};
    return addmm_core(std::nullopt, a, b, 0, 1, out_dtype, names, Backend);
  }
  static at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                          const at::Scalar& beta, const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype) {
    static const ArgNames names{"tk.addmm", "mat1", "mat2", "self"};
    return addmm_core(self, mat1, mat2, beta, alpha, out_dtype, names, Backend);
  }
  static at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
    return linear_core(input, weight, bias, Backend);
  }
  static std::tuple<at::Tensor, at::Tensor> gemm_pair(const at::Tensor& a0, const at::Tensor& b0, const at::Tensor& a1,
                                                      const at::Tensor& b1) {
    return gemm_pair_core(a0, b0, a1, b1, Backend);
  }
  static std::tuple<at::Tensor, at::Tensor> linear_swiglu(const at::Tensor& input, const at::Tensor& gate_weight,
                                                          const at::Tensor& up_weight) {
    return linear_swiglu_core(input, gate_weight, up_weight, SwiBackend);
  }
  static std::tuple<at::Tensor, at::Tensor> swiglu_down_backward(const at::Tensor& grad_output,
                                                                 const at::Tensor& down_weight, const at::Tensor& gu) {
    return swiglu_down_backward_core(grad_output, down_weight, gu, GradBackend);
  }
  static at::Tensor swiglu_down_backward_cat(const at::Tensor& grad_output, const at::Tensor& down_weight,
                                             const at::Tensor& gu) {
    return std::get<0>(swiglu_down_backward_core(grad_output, down_weight, gu, GradBackend, true));
  }
  static std::tuple<at::Tensor, at::Tensor> linear_backward_cat(const at::Tensor& grad_output, at::TensorList weights,
                                                                const at::Tensor& input) {
    return linear_backward_cat_core(grad_output, weights, input, KcatBack);
  }
  static std::tuple<at::Tensor, at::Tensor> linear_backward_parts(at::TensorList grad_outputs, at::TensorList weights,
                                                                  const at::Tensor& input) {
    return linear_backward_parts_core(grad_outputs, weights, input, KcatBack, MpartsBack);
  }
  static at::Tensor linear_rope(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& cos,
                                const at::Tensor& sin) {
    return linear_rope_core(input, weight, cos, sin, RopeBack);
  }
  static void register_impls(torch::Library& m) {
    m.impl("gemm", &gemm);
    m.impl("addmm", &addmm);
    m.impl("linear", &linear);
    m.impl("gemm_pair", &gemm_pair);
    m.impl("linear_swiglu", &linear_swiglu);
    m.impl("swiglu_down_backward", &swiglu_down_backward);
    m.impl("linear_rope", &linear_rope);
    m.impl("swiglu_down_backward_cat", &swiglu_down_backward_cat);
    m.impl("linear_backward_cat", &linear_backward_cat);
    m.impl("linear_backward_parts", &linear_backward_parts);
  }
};

}  // namespace tk
