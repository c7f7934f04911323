// The tk operator library: schemas (the one place they are written), argument checks,
// shape logic shared by every device, and the CPU reference implementation.
#include "ops.h"

#include <torch/library.h>

#include "counters.h"

namespace tk {
namespace {

// Numbers in error messages go through std::to_string, never an ostream: on the GPU image
// (Python's LDSHARED links with -Wl,-Bsymbolic-functions) the extension's own copies of
// libstdc++'s numeric ostream inserters crash on the locale facets (seen with torch 2.11).
std::string num(int64_t v) { return std::to_string(v); }
std::string shape(at::IntArrayRef s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

bool is_supported_dtype(at::ScalarType t) {
  return t == at::kBFloat16 || t == at::kHalf || t == at::kFloat || t == at::kDouble;
}

at::ScalarType resolve_out_dtype(at::ScalarType in, std::optional<at::ScalarType> out, const char* op) {
  if (!out.has_value() || *out == in) return in;
  TORCH_CHECK_TYPE((in == at::kBFloat16 || in == at::kHalf) && *out == at::kFloat, op,
                   ": out_dtype=", *out, " is not supported for ", in,
                   " inputs (allowed: the input dtype, or torch.float32 for bfloat16/float16 inputs)");
  return *out;
}

void check_matrix(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK_VALUE(t.dim() == 2, op, ": `", name, "` must be a 2-D tensor, got ", num(t.dim()), "-D of shape ",
                    shape(t.sizes()));
  TORCH_CHECK_TYPE(is_supported_dtype(t.scalar_type()), op, ": `", name, "` has dtype ", t.scalar_type(),
                   "; supported: bfloat16, float16, float32, float64");
}

}  // namespace

void reference_matmul(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                      double alpha, double beta) {
  const auto acc_t = a.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor r = at::mm(a.to(acc_t), b.to(acc_t));
  if (alpha != 1.0) r.mul_(alpha);
  if (c.has_value()) r.add_(c->to(acc_t), beta);
  out.copy_(r);
}

Product prepare_product(const std::optional<at::Tensor>& self, const at::Tensor& a, const at::Tensor& b,
                        const at::Scalar& beta_s, const at::Scalar& alpha_s, std::optional<at::ScalarType> out_dtype,
                        const ArgNames& n, at::IntArrayRef out_shape) {
  check_matrix(a, n.op, n.a);
  check_matrix(b, n.op, n.b);
  TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(), n.op, ": `", n.a, "` and `", n.b,
                   "` must have the same dtype, got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK_VALUE(a.device() == b.device(), n.op, ": `", n.a, "` and `", n.b,
                    "` must be on the same device, got ", a.device(), " and ", b.device());
  TORCH_CHECK_VALUE(a.size(1) == b.size(0), n.op, ": `", n.a, "` (", num(a.size(0)), "x", num(a.size(1)), ") and `", n.b,
                    "` (", num(b.size(0)), "x", num(b.size(1)), ") cannot be multiplied: inner dimensions differ");
  const auto out_t = resolve_out_dtype(a.scalar_type(), out_dtype, n.op);
  const int64_t M = a.size(0), N = b.size(1);
  const double alpha = alpha_s.toDouble(), beta = beta_s.toDouble();

  std::optional<at::Tensor> c;
  if (self.has_value()) {
    const at::Tensor& s = *self;
    TORCH_CHECK_TYPE(s.scalar_type() == a.scalar_type() || s.scalar_type() == out_t, n.op, ": `", n.self,
                     "` has dtype ", s.scalar_type(), "; expected ", a.scalar_type(),
                     out_t != a.scalar_type() ? " or the out_dtype" : "");
    TORCH_CHECK_VALUE(s.device() == a.device(), n.op, ": `", n.self, "` is on ", s.device(), " but `", n.a,
                      "` is on ", a.device());
    const bool bcast = s.dim() <= 2 && (s.dim() < 1 || s.size(-1) == 1 || s.size(-1) == N) &&
                       (s.dim() < 2 || s.size(0) == 1 || s.size(0) == M);
    TORCH_CHECK_VALUE(bcast, n.op, ": `", n.self, "` of shape ", shape(s.sizes()), " cannot be broadcast to (", num(M), ", ", num(N),
                      ")");
    if (beta != 0.0) c = s.to(out_t).expand({M, N});  // beta == 0: self is ignored, as in torch.addmm
  }

  // The result is allocated in its final shape (linear's leading dims) and returned as such, not
  // as a view; the kernels fill its (M, N) row-major view.
  at::Tensor result = at::empty(out_shape.empty() ? at::IntArrayRef({M, N}) : out_shape, a.options().dtype(out_t));
  at::Tensor out = result.view({M, N});
  return Product{result, out, c, alpha, beta};
}

void run_product(Product& p, const at::Tensor& a, const at::Tensor& b, MatmulBackend backend) {
  if (p.out.numel() == 0) return;
  if (a.size(1) == 0) {
    p.out.zero_();
    if (p.c.has_value()) p.out.add_(*p.c, p.beta);
    return;
  }
  if (backend == nullptr || !backend(p.out, a, b, p.c, p.alpha, p.beta)) {
    if (a.device().is_cpu()) count_call(Path::cpu);
    reference_matmul(p.out, a, b, p.c, p.alpha, p.beta);
  }
}

at::Tensor addmm_core(const std::optional<at::Tensor>& self, const at::Tensor& a, const at::Tensor& b,
                      const at::Scalar& beta, const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype,
                      const ArgNames& names, MatmulBackend backend, at::IntArrayRef out_shape) {
  Product p = prepare_product(self, a, b, beta, alpha, out_dtype, names, out_shape);
  run_product(p, a, b, backend);
  return p.result;
}

std::tuple<at::Tensor, at::Tensor> gemm_pair_core(const at::Tensor& a0, const at::Tensor& b0, const at::Tensor& a1,
                                                  const at::Tensor& b1, MatmulBackend backend) {
  static const ArgNames n0{"tk.gemm_pair", "a0", "b0", "self"}, n1{"tk.gemm_pair", "a1", "b1", "self"};
  // Both products are checked before either runs: a bad second product raises before the first
  // is launched.
  Product p0 = prepare_product(std::nullopt, a0, b0, 0, 1, std::nullopt, n0, {});
  Product p1 = prepare_product(std::nullopt, a1, b1, 0, 1, std::nullopt, n1, {});
  TORCH_CHECK_VALUE(a0.device() == a1.device(), "tk.gemm_pair: `a0` and `a1` must be on the same device, got ",
                    a0.device(), " and ", a1.device());
  run_product(p0, a0, b0, backend);
  run_product(p1, a1, b1, backend);
  return {p0.result, p1.result};
}

at::Tensor linear_core(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       MatmulBackend backend) {
  static const ArgNames names{"tk.linear", "input", "weight", "bias"};
  TORCH_CHECK_VALUE(input.dim() >= 1, "tk.linear: `input` must have at least 1 dimension, got a 0-D tensor");
  TORCH_CHECK_VALUE(weight.dim() == 2, "tk.linear: `weight` must be a 2-D (out_features, in_features) tensor, got ",
                    num(weight.dim()), "-D of shape ", shape(weight.sizes()));
  TORCH_CHECK_VALUE(input.size(-1) == weight.size(1), "tk.linear: `input` has ", num(input.size(-1)),
                    " features in its last dimension but `weight` expects ", num(weight.size(1)));
  if (bias.has_value()) {
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == weight.size(0), "tk.linear: `bias` must have shape (",
                      num(weight.size(0)), ",), got ", shape(bias->sizes()));
  }
  const int64_t K = input.size(-1);
  int64_t M = 1;  // explicit, so zero-size inputs reshape without a -1
  for (int64_t d = 0; d + 1 < input.dim(); ++d) M *= input.size(d);
  at::Tensor x2d = input.reshape({M, K});
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end() - 1);
  shape.push_back(weight.size(0));
  return addmm_core(bias, x2d, weight.t(), 1, 1, std::nullopt, names, backend, shape);
}

namespace {

at::Tensor gemm_cpu(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  static const ArgNames names{"tk.gemm", "a", "b", "self"};
  return addmm_core(std::nullopt, a, b, 0, 1, out_dtype, names, nullptr);
}

at::Tensor addmm_cpu(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                     const at::Scalar& alpha, std::optional<at::ScalarType> out_dtype) {
  static const ArgNames names{"tk.addmm", "mat1", "mat2", "self"};
  return addmm_core(self, mat1, mat2, beta, alpha, out_dtype, names, nullptr);
}

at::Tensor linear_cpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  return linear_core(input, weight, bias, nullptr);
}

std::tuple<at::Tensor, at::Tensor> gemm_pair_cpu(const at::Tensor& a0, const at::Tensor& b0, const at::Tensor& a1,
                                                 const at::Tensor& b1) {
  return gemm_pair_core(a0, b0, a1, b1, nullptr);
}

}  // namespace
}  // namespace tk

TORCH_LIBRARY(tk, m) {
  m.set_python_module("torch_tk.ops");
  m.def("gemm(Tensor a, Tensor b, *, ScalarType? out_dtype=None) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def(
      "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, ScalarType? out_dtype=None) -> "
      "Tensor",
      {at::Tag::pt2_compliant_tag});
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("gemm_pair(Tensor a0, Tensor b0, Tensor a1, Tensor b1) -> (Tensor, Tensor)", {at::Tag::pt2_compliant_tag});
  m.def("linear_backward(Tensor grad_output, Tensor weight, Tensor input) -> (Tensor, Tensor)",
        {at::Tag::pt2_compliant_tag});
  m.def("linear_swiglu(Tensor input, Tensor gate_weight, Tensor up_weight) -> (Tensor, Tensor)", {at::Tag::pt2_compliant_tag});
  m.def("swiglu_down_backward(Tensor grad_output, Tensor down_weight, Tensor gu) -> (Tensor, Tensor)",
        {at::Tag::pt2_compliant_tag});
  m.def("swiglu_down_backward_cat(Tensor grad_output, Tensor down_weight, Tensor gu) -> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("linear_backward_cat(Tensor grad_output, Tensor[] weights, Tensor input) -> (Tensor, Tensor)",
        {at::Tag::pt2_compliant_tag});
  m.def("linear_backward_parts(Tensor[] grad_outputs, Tensor[] weights, Tensor input) -> (Tensor, Tensor)",
        {at::Tag::pt2_compliant_tag});
  m.def("linear_rope(Tensor input, Tensor weight, Tensor cos, Tensor sin) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("swiglu_mlp(Tensor input, Tensor gate_weight, Tensor up_weight, Tensor down_weight) -> (Tensor, Tensor, Tensor)",
        {at::Tag::pt2_compliant_tag});
}

TORCH_LIBRARY_IMPL(tk, CPU, m) {
  m.impl("gemm", &tk::gemm_cpu);
  m.impl("addmm", &tk::addmm_cpu);
  m.impl("linear", &tk::linear_cpu);
  m.impl("gemm_pair", &tk::gemm_pair_cpu);
}
