// Device-independent core of the tk ops: argument checks, empty/K=0 handling, the reference
// matmul, and the hook through which a device backend (the Hopper kernel) takes the work.
#pragma once
#include <ATen/ATen.h>
#include <optional>

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

// out_shape: the result's shape when it is not (M, N) (linear's leading dims); M*N elements.
at::Tensor addmm_core(const std::optional<at::Tensor>& self, const at::Tensor& a, const at::Tensor& b,
                      const at::Scalar& beta, const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype,
                      const ArgNames& names, MatmulBackend backend, at::IntArrayRef out_shape = {});

at::Tensor linear_core(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       MatmulBackend backend);

// fp32-accumulate reference (fp64 stays fp64); used on CPU and as the visible CUDA fallback.
void reference_matmul(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                      double alpha, double beta);

}  // namespace tk
