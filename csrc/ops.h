// Device-independent core of the tk ops: argument checks, empty/K=0 handling, the reference
// matmul, and the hook through which a device backend (the Hopper kernel) takes the work.
#pragma once
#include <ATen/ATen.h>
#include <optional>
#include <tuple>
#include <vector>

namespace tk {

// Fills `out` (M x N, contiguous, dtype = out dtype) with alpha * a @ b + beta * c, where `c`
// (if given) is already in the out dtype and expanded to (M, N). Returns false to decline,
// in which case the reference path runs.
using MatmulBackend = bool (*)(at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                               const std::optional<at::Tensor>& c, double alpha, double beta);

struct ArgNames {
  const char* op;
  const char* a;
  const char* b;
  const char* self;
};

// One checked product: its result (allocated on the current stream, in its final shape), the
// (M, N) view the kernels fill, and the addmm terms.
struct Product {
  at::Tensor result;
  at::Tensor out;
  std::optional<at::Tensor> c;
  double alpha;
  double beta;
};

// Checks the arguments of alpha * a @ b + beta * self (errors name them by `names`) and allocates
// the result; out_shape: the result's shape when it is not (M, N) (linear's leading dims).
Product prepare_product(const std::optional<at::Tensor>& self, const at::Tensor& a, const at::Tensor& b,
                        const at::Scalar& beta, const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype,
                        const ArgNames& names, at::IntArrayRef out_shape);

// Fills p.out on the current stream: `backend`, or the reference if it declines.
void run_product(Product& p, const at::Tensor& a, const at::Tensor& b, MatmulBackend backend);

// prepare_product + run_product: alpha * a @ b + beta * self in a new tensor.
at::Tensor addmm_core(const std::optional<at::Tensor>& self, const at::Tensor& a, const at::Tensor& b,
                      const at::Scalar& beta, const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype,
                      const ArgNames& names, MatmulBackend backend, at::IntArrayRef out_shape = {});

// tk.gemm_pair: (a0 @ b0, a1 @ b1), two independent products, one after the other on the current
// stream (side by side on two streams measured slower in bench_model: benchmarks/NOTES.md 2026-12-05b).
std::tuple<at::Tensor, at::Tensor> gemm_pair_core(const at::Tensor& a0, const at::Tensor& b0, const at::Tensor& a1,
                                                  const at::Tensor& b1, MatmulBackend backend);

at::Tensor linear_core(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       MatmulBackend backend);

// tk.linear_swiglu's device hook: fills gu (M x 2I, packed gate | up) and h (M x I), both contiguous,
// from x2d (M x K) and the gate / up weights (I x K each); false declines (the reference runs; the
// backend notes why).
using SwiGLUBackend = bool (*)(at::Tensor& gu, at::Tensor& h, const at::Tensor& x2d, const at::Tensor& w_gate,
                               const at::Tensor& w_up);

// tk.linear_swiglu (csrc/swiglu.cpp): checks, allocation, empty cases, `backend` or the reference.
std::tuple<at::Tensor, at::Tensor> linear_swiglu_core(const at::Tensor& input, const at::Tensor& gate_weight,
                                                      const at::Tensor& up_weight, SwiGLUBackend backend);

// tk.swiglu_down_backward's device hook: fills d_gate and d_up (M x I each, unit column stride, one
// row pitch: contiguous, or the halves of one M x 2I tensor) from dy2d
// (M x H), the down projection's weight (H x I) and gu2d (M x 2I, packed gate | up); false declines.
using SwiGLUGradBackend = bool (*)(at::Tensor& d_gate, at::Tensor& d_up, const at::Tensor& dy2d,
                                   const at::Tensor& w_down, const at::Tensor& gu2d);

// tk.swiglu_down_backward (csrc/swiglu.cpp): checks, allocation, empty cases, `backend` or the reference.
// cat (tk.swiglu_down_backward_cat): d_gate and d_up side by side in one (..., 2 I) tensor, returned
// first (the second is then undefined); the backend gets its two column halves.
std::tuple<at::Tensor, at::Tensor> swiglu_down_backward_core(const at::Tensor& grad_output,
                                                             const at::Tensor& down_weight, const at::Tensor& gu,
                                                             SwiGLUGradBackend backend, bool cat = false);

// tk.linear_rope's device hook: fills out2d (M x N, contiguous) with x2d (M x K) . weight^T rotated per
// head of 2 x cos2d.size(1) columns by the tables cos2d / sin2d (M x head_dim / 2, unit column
// stride); false declines (the reference runs; the backend notes why).
using RopeBackend = bool (*)(at::Tensor& out2d, const at::Tensor& x2d, const at::Tensor& weight,
                             const at::Tensor& cos2d, const at::Tensor& sin2d);

// tk.linear_rope (csrc/rope.cpp): checks, allocation, empty cases, `backend` or the reference.
at::Tensor linear_rope_core(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& cos,
                            const at::Tensor& sin, RopeBackend backend);

// tk.linear_backward_cat's / tk.linear_backward_parts' device hook: fills grad_input (M x in_features,
// contiguous) with [grad_outputs side by side] (one M x sum of out_features matrix, or one
// M x out_features_i matrix per weight) . [weights stacked along their rows]; false declines (stacked
// copies and tk.gemm run; the backend notes why).
using KcatBackend = bool (*)(at::Tensor& grad_input, at::TensorList grad_outputs, at::TensorList weights);

// tk.linear_backward_cat (csrc/linear_backward.cpp): checks, grad_input by `backend` (or a stacked
// copy and tk.gemm), grad_weight by tk.gemm; both through the dispatcher's kernels.
std::tuple<at::Tensor, at::Tensor> linear_backward_cat_core(const at::Tensor& grad_output, at::TensorList weights,
                                                            const at::Tensor& input, KcatBackend backend);

// tk.linear_backward_parts' second device hook: fills grad_weight ((sum of out_features) x in_features,
// contiguous) with [grad_outputs side by side]^T . input, reading each output gradient in place; false
// declines (one tk.gemm per weight and a cat of the results run; the backend notes why).
using MpartsBackend = bool (*)(at::Tensor& grad_weight, at::TensorList grad_outputs, const at::Tensor& input);

// tk.linear_backward_parts (csrc/linear_backward.cpp): the same from one output gradient per weight;
// grad_input by `backend`, the weights' gradients as one (sum of out_features) x in_features tensor by
// `mparts` (their row blocks, as tk.linear_backward_cat returns them).
std::tuple<at::Tensor, at::Tensor> linear_backward_parts_core(at::TensorList grad_outputs, at::TensorList weights,
                                                              const at::Tensor& input, KcatBackend backend,
                                                              MpartsBackend mparts);

// fp32-accumulate reference (fp64 stays fp64); used on CPU and as the visible CUDA fallback.
void reference_matmul(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                      double alpha, double beta);

}  // namespace tk
