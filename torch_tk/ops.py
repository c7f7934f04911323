"""The tk operators: Python entry points, fake (meta) implementations and autograd formulas.

Schemas live in C++ (``csrc/ops.cpp``, ``TORCH_LIBRARY(tk, m)``); this module is the library's
``set_python_module``, so torch imports it whenever it needs the fakes.

Layouts: each matrix operand may be row-major or column-major (a contiguous tensor or its
``.t()``); the Hopper kernel reads both through TMA without a copy. Any other strides (slices
with steps, a row pitch that is not a multiple of 16 bytes, a misaligned base) are copied to
an aligned row-major buffer inside the op first. Outputs are always new contiguous tensors.

Numerics: bf16/fp16 inputs accumulate in fp32 (the wgmma accumulators; the CPU reference
upcasts to fp32); fp32 inputs accumulate in fp32 and fp64 in fp64.
"""
import warnings

import torch

from . import _C  # noqa: F401  (the schemas must exist before the registrations below)

_FLOATS = (torch.bfloat16, torch.float16, torch.float32, torch.float64)
_py_fallback_reasons = set()
_py_fallback_count = 0


# ----------------------------------------------------------------------------------------------
# Public functions
# ----------------------------------------------------------------------------------------------
_any_requires_grad = getattr(torch._C, "_any_requires_grad", None) or (
    lambda *args: any(isinstance(t, torch.Tensor) and t.requires_grad for t in args))
_below_autograd = getattr(torch._C, "_AutoDispatchBelowAutograd", None)


def _call_op(op, *args, **kwargs):
    """``op(*args, **kwargs)`` for a ``torch.ops.tk`` op, entered below autograd when no gradient is needed.

    ``torch.library.register_autograd`` (below) installs a Python kernel at the Autograd key
    that every call passes through; when grad mode is off or no argument requires grad, all
    it does is re-dispatch below autograd (``torch/_library/autograd.py``). This does the same
    without its Python frames, so the kernels above autograd (autocast) and below it (the
    backends, Python dispatch modes, DTensor) run as before. Host time per ``torch_tk.linear``
    call at 64x4096x4096 on an H200's host (``benchmarks/host_overhead.py``, 2026-11-28): 17.9
    us through that kernel, 12.8 us below it, 13.7 us for ``F.linear`` -- the time per call of a
    small GEMM run back to back (a decode loop in eager mode), where the GPU waits on the host.
    While torch.compile traces, the op is called as is (the graph records it; AOTAutograd
    applies the registered formula).
    """
    if (_below_autograd is None or torch.compiler.is_compiling()
            or (torch.is_grad_enabled() and _any_requires_grad(*args, *kwargs.values()))):
        return op(*args, **kwargs)
    with _below_autograd():
        return op(*args, **kwargs)


def gemm(a, b, *, out_dtype=None):
    """Matrix product ``a @ b`` on the tk kernels.

    Args:
        a: (M, K) tensor, bfloat16/float16 (kernel on sm_90) or float32/float64 (reference).
        b: (K, N) tensor, same dtype and device as ``a``.
        out_dtype: None (the input dtype) or torch.float32 for bfloat16/float16 inputs.
    Returns:
        New contiguous (M, N) tensor of ``out_dtype``. K == 0 gives zeros.
    Raises:
        ValueError: ``a``/``b`` not 2-D, inner dimensions differ, or different devices.
        TypeError: unsupported or mismatched dtypes, or an unsupported ``out_dtype``.
    """
    return _call_op(torch.ops.tk.gemm.default, a, b, out_dtype=out_dtype)


def addmm(self, mat1, mat2, *, beta=1, alpha=1, out_dtype=None):
    """``beta * self + alpha * (mat1 @ mat2)`` with ``torch.addmm`` semantics, fused in the epilogue.

    Args:
        self: tensor broadcastable to (M, N) -- a 1-D (N,) tensor is a per-column bias; dtype of
            ``mat1`` or ``out_dtype``. Ignored (NaN/inf do not propagate) when ``beta == 0``.
        mat1: (M, K) tensor; mat2: (K, N) tensor (dtypes/devices as for :func:`gemm`).
        beta, alpha: Python numbers.
        out_dtype: as for :func:`gemm`.
    Returns:
        New contiguous (M, N) tensor.
    Raises:
        ValueError: bad dimensions, ``self`` not broadcastable to (M, N), different devices.
        TypeError: unsupported/mismatched dtypes or ``out_dtype``.
    """
    return _call_op(torch.ops.tk.addmm.default, self, mat1, mat2, beta=beta, alpha=alpha, out_dtype=out_dtype)


def linear(input, weight, bias=None):
    """``torch.nn.functional.linear`` on the tk kernels: ``input @ weight.T + bias``.

    Args:
        input: (*, K) tensor (any number of leading dims, including none).
        weight: (N, K) tensor (the nn.Linear layout; read K-major, no transpose copy).
        bias: optional (N,) tensor, fused into the epilogue.
    Returns:
        New contiguous (*, N) tensor of the input dtype.
    Raises:
        ValueError: shape mismatches (``input``'s last dim vs ``weight``, ``bias`` length).
        TypeError: unsupported or mismatched dtypes.
    """
    return _call_op(torch.ops.tk.linear.default, input, weight, bias)


def gemm_pair(a0, b0, a1, b1):
    """Two independent products ``(a0 @ b0, a1 @ b1)`` in one op, one after the other.

    Each product is exactly what :func:`gemm` computes (same kernels, plans and bits); autograd's
    backward of :func:`gemm` / :func:`addmm` / :func:`linear` uses it for dX and dW (one
    dispatcher call and one graph node instead of two). Both are checked before either runs, and
    they run in argument order on the current stream. (Running the second on a side stream beside
    the first was measured slower inside bench_model, 2026-12-05b, and removed.)

    Args:
        a0, a1: (M_i, K_i) tensors; b0, b1: (K_i, N_i) tensors; each pair as for :func:`gemm`
            (bfloat16/float16 on the kernels, float32/float64 on the reference); all on one device.
    Returns:
        (a0 @ b0, a1 @ b1): new contiguous tensors of the input dtypes.
    Raises:
        ValueError: a matrix not 2-D, inner dimensions that differ, operands on different devices.
        TypeError: unsupported or mismatched dtypes within a product.
    """
    return _call_op(torch.ops.tk.gemm_pair.default, a0, b0, a1, b1)


def linear_backward(grad_output, weight, input):
    """A linear layer's input and weight gradients from its output gradient, taken once.

    ``(grad_output @ weight, grad_output.T @ input)``, computed as :func:`gemm_pair` computes
    ``(grad_output, weight, grad_output.t(), input)`` (the same kernels and bits). Autograd's
    backward of :func:`linear` uses it: given as one argument, a gradient that is still a pointwise
    expression in a compiled graph (RoPE's backward before the k projection) is computed and stored
    once, where :func:`gemm_pair`'s two views of it made Inductor store it twice (benchmarks/NOTES.md,
    2026-12-06e; in bench_model's step the kernels around it took the same time either way, 2026-12-06f).

    Args:
        grad_output: (M, out_features) tensor.
        weight: (out_features, in_features) tensor.
        input: (M, in_features) tensor. All three of one dtype (bfloat16/float16 on the kernels,
            float32/float64 on the reference) and on one device.
    Returns:
        (grad_input (M, in_features), grad_weight (out_features, in_features)): new contiguous
        tensors of the input dtype.
    Raises:
        ValueError: a tensor not 2-D, sizes that do not match, tensors on different devices.
        TypeError: unsupported or mismatched dtypes.
    """
    return _call_op(torch.ops.tk.linear_backward.default, grad_output, weight, input)


# ----------------------------------------------------------------------------------------------
# Checks shared by the fakes (mirror csrc/ops.cpp so that compiled and eager code raise alike)
# ----------------------------------------------------------------------------------------------
def _check_matrix(t, op, name):
    torch._check_value(t.dim() == 2, lambda: f"{op}: `{name}` must be a 2-D tensor, got {t.dim()}-D of shape {tuple(t.shape)}")
    torch._check_type(t.dtype in _FLOATS, lambda: f"{op}: `{name}` has dtype {t.dtype}; supported: bfloat16, float16, float32, float64")


def _out_dtype(in_dtype, out_dtype, op):
    if out_dtype is None or out_dtype == in_dtype:
        return in_dtype
    torch._check_type(
        in_dtype in (torch.bfloat16, torch.float16) and out_dtype == torch.float32,
        lambda: f"{op}: out_dtype={out_dtype} is not supported for {in_dtype} inputs "
        "(allowed: the input dtype, or torch.float32 for bfloat16/float16 inputs)",
    )
    return out_dtype


def _check_mm(self, a, b, out_dtype, op, na, nb, nself):
    _check_matrix(a, op, na)
    _check_matrix(b, op, nb)
    torch._check_type(a.dtype == b.dtype, lambda: f"{op}: `{na}` and `{nb}` must have the same dtype, got {a.dtype} and {b.dtype}")
    torch._check_value(a.device == b.device, lambda: f"{op}: `{na}` and `{nb}` must be on the same device, got {a.device} and {b.device}")
    torch._check_value(a.shape[1] == b.shape[0], lambda: f"{op}: `{na}` ({a.shape[0]}x{a.shape[1]}) and `{nb}` ({b.shape[0]}x{b.shape[1]}) cannot be multiplied: inner dimensions differ")
    out_t = _out_dtype(a.dtype, out_dtype, op)
    M, N = a.shape[0], b.shape[1]
    if self is not None:
        torch._check_type(self.dtype in (a.dtype, out_t), lambda: f"{op}: `{nself}` has dtype {self.dtype}; expected {a.dtype}")
        torch._check_value(self.device == a.device, lambda: f"{op}: `{nself}` is on {self.device} but `{na}` is on {a.device}")
        ok = self.dim() <= 2 and (self.dim() < 1 or self.shape[-1] == 1 or self.shape[-1] == N) and (
            self.dim() < 2 or self.shape[0] == 1 or self.shape[0] == M)
        torch._check_value(ok, lambda: f"{op}: `{nself}` of shape {tuple(self.shape)} cannot be broadcast to ({M}, {N})")
    return out_t


def _check_linear(input, weight, bias):
    op = "tk.linear"
    torch._check_value(input.dim() >= 1, lambda: f"{op}: `input` must have at least 1 dimension, got a 0-D tensor")
    torch._check_value(weight.dim() == 2, lambda: f"{op}: `weight` must be a 2-D (out_features, in_features) tensor, got {weight.dim()}-D")
    torch._check_value(input.shape[-1] == weight.shape[1], lambda: f"{op}: `input` has {input.shape[-1]} features in its last dimension but `weight` expects {weight.shape[1]}")
    if bias is not None:
        torch._check_value(bias.dim() == 1 and bias.shape[0] == weight.shape[0], lambda: f"{op}: `bias` must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
    M = 1
    for d in input.shape[:-1]:  # explicit: reshape(-1, 0) is ambiguous for zero-size inputs
        M = M * d
    _check_mm(bias, input.reshape(M, input.shape[-1]), weight.t(), None, op, "input", "weight", "bias")


# ----------------------------------------------------------------------------------------------
# Fake (meta) implementations: metadata only; contiguous outputs like the real kernels
# ----------------------------------------------------------------------------------------------
@torch.library.register_fake("tk::gemm")
def _gemm_fake(a, b, *, out_dtype=None):
    out_t = _check_mm(None, a, b, out_dtype, "tk.gemm", "a", "b", "self")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_t)


@torch.library.register_fake("tk::addmm")
def _addmm_fake(self, mat1, mat2, *, beta=1, alpha=1, out_dtype=None):
    out_t = _check_mm(self, mat1, mat2, out_dtype, "tk.addmm", "mat1", "mat2", "self")
    return mat1.new_empty((mat1.shape[0], mat2.shape[1]), dtype=out_t)


@torch.library.register_fake("tk::gemm_pair")
def _gemm_pair_fake(a0, b0, a1, b1):
    t0 = _check_mm(None, a0, b0, None, "tk.gemm_pair", "a0", "b0", "self")
    t1 = _check_mm(None, a1, b1, None, "tk.gemm_pair", "a1", "b1", "self")
    torch._check_value(a0.device == a1.device, lambda: f"tk.gemm_pair: `a0` and `a1` must be on the same device, got {a0.device} and {a1.device}")
    return a0.new_empty((a0.shape[0], b0.shape[1]), dtype=t0), a1.new_empty((a1.shape[0], b1.shape[1]), dtype=t1)


@torch.library.register_fake("tk::linear_backward")
def _linear_backward_fake(grad_output, weight, input):
    _check_linear_backward(grad_output, weight, input)
    return input.new_empty(input.shape), weight.new_empty(weight.shape)


def _check_linear_backward(grad_output, weight, input):
    """tk.linear_backward's argument checks, as csrc/linear_backward.cpp words them."""
    op = "tk.linear_backward"
    for t, name, dims in ((grad_output, "grad_output", "(M, out_features)"),
                          (weight, "weight", "(out_features, in_features)"), (input, "input", "(M, in_features)")):
        torch._check_value(t.dim() == 2, lambda: f"{op}: `{name}` must be a 2-D {dims} tensor, got {t.dim()}-D")
    torch._check_value(grad_output.shape[1] == weight.shape[0], lambda: (
        f"{op}: `grad_output` has {grad_output.shape[1]} columns but `weight` has {weight.shape[0]} rows (out_features)"))
    torch._check_value(input.shape[1] == weight.shape[1], lambda: (
        f"{op}: `input` has {input.shape[1]} columns but `weight` has {weight.shape[1]} (in_features)"))
    torch._check_value(grad_output.shape[0] == input.shape[0], lambda: (
        f"{op}: `grad_output` has {grad_output.shape[0]} rows but `input` has {input.shape[0]}"))
    torch._check_type(weight.dtype in _FLOATS, lambda: (
        f"{op}: `weight` has dtype {weight.dtype}; supported: bfloat16, float16, float32, float64"))
    torch._check_type(grad_output.dtype == weight.dtype == input.dtype, lambda: (
        f"{op}: `grad_output`, `weight` and `input` must have one dtype, got {grad_output.dtype}, {weight.dtype} "
        f"and {input.dtype}"))
    torch._check_value(grad_output.device == weight.device == input.device, lambda: (
        f"{op}: `grad_output`, `weight` and `input` must be on one device, got {grad_output.device}, "
        f"{weight.device} and {input.device}"))


@torch.library.register_fake("tk::linear")
def _linear_fake(input, weight, bias=None):
    _check_linear(input, weight, bias)
    return input.new_empty((*input.shape[:-1], weight.shape[0]))


@torch.library.register_fake("tk::linear_swiglu")
def _linear_swiglu_fake(input, gate_weight, up_weight):
    return _swiglu.fake(input, gate_weight, up_weight)  # (torch_tk/swiglu.py, imported at the end)


@torch.library.register_fake("tk::swiglu_down_backward")
def _swiglu_down_backward_fake(grad_output, down_weight, gu):
    return _swiglu.down_backward_fake(grad_output, down_weight, gu)


@torch.library.register_fake("tk::swiglu_down_backward_cat")
def _swiglu_down_backward_cat_fake(grad_output, down_weight, gu):
    return _swiglu.down_backward_cat_fake(grad_output, down_weight, gu)


@torch.library.register_fake("tk::linear_backward_cat")
def _linear_backward_cat_fake(grad_output, weights, input):
    return _cat_backward.fake(grad_output, weights, input)  # (torch_tk/cat_backward.py, imported at the end)


@torch.library.register_fake("tk::linear_backward_parts")
def _linear_backward_parts_fake(grad_outputs, weights, input):
    return _cat_backward.fake_parts(grad_outputs, weights, input)


@torch.library.register_fake("tk::linear_rope")
def _linear_rope_fake(input, weight, cos, sin):
    return _rope.fake(input, weight, cos, sin)  # (torch_tk/rope.py, imported at the end)


@torch.library.register_fake("tk::swiglu_mlp")
def _swiglu_mlp_fake(input, gate_weight, up_weight, down_weight):
    return _swiglu.mlp_fake(input, gate_weight, up_weight, down_weight)


# ----------------------------------------------------------------------------------------------
# Autograd: every backward GEMM is itself a tk op on transposed views (no copies)
# ----------------------------------------------------------------------------------------------
def _gemm_setup(ctx, inputs, keyword_only_inputs, output):
    a, b = inputs
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)


def _mm_grads(a, b, grad, need_a, need_b):
    """(grad @ b.T, a.T @ grad) of ``a @ b``, each if needed; both at once by tk.gemm_pair."""
    if need_a and need_b:
        return _call_op(torch.ops.tk.gemm_pair, grad.to(b.dtype), b.t(), a.t(), grad.to(a.dtype))
    ga = _call_op(torch.ops.tk.gemm, grad.to(b.dtype), b.t()) if need_a else None
    gb = _call_op(torch.ops.tk.gemm, a.t(), grad.to(a.dtype)) if need_b else None
    return ga, gb


def _gemm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return _mm_grads(a, b, grad, ctx.needs_input_grad[0], ctx.needs_input_grad[1])


torch.library.register_autograd("tk::gemm", _gemm_backward, setup_context=_gemm_setup)


def _addmm_setup(ctx, inputs, keyword_only_inputs, output):
    self, mat1, mat2 = inputs
    ctx.beta = keyword_only_inputs.get("beta", 1)
    ctx.alpha = keyword_only_inputs.get("alpha", 1)
    ctx.self_shape, ctx.self_dtype = self.shape, self.dtype
    ctx.save_for_backward(mat1 if ctx.needs_input_grad[2] else None, mat2 if ctx.needs_input_grad[1] else None)


def _addmm_backward(ctx, grad):
    mat1, mat2 = ctx.saved_tensors
    gs = None
    if ctx.needs_input_grad[0]:
        gs = (grad * ctx.beta).sum_to_size(ctx.self_shape).to(ctx.self_dtype)
    g1, g2 = _mm_grads(mat1, mat2, grad, ctx.needs_input_grad[1], ctx.needs_input_grad[2])
    if ctx.alpha != 1:
        g1 = g1 * ctx.alpha if g1 is not None else None
        g2 = g2 * ctx.alpha if g2 is not None else None
    return gs, g1, g2


torch.library.register_autograd("tk::addmm", _addmm_backward, setup_context=_addmm_setup)


def _gemm_pair_setup(ctx, inputs, output):
    a0, b0, a1, b1 = inputs
    ctx.set_materialize_grads(False)  # an unused output's gradient stays None: no GEMMs on zeros
    need = ctx.needs_input_grad
    ctx.save_for_backward(a0 if need[1] else None, b0 if need[0] else None, a1 if need[3] else None,
                          b1 if need[2] else None)


def _gemm_pair_backward(ctx, g0, g1):
    a0, b0, a1, b1 = ctx.saved_tensors
    need = ctx.needs_input_grad
    ga0, gb0 = _mm_grads(a0, b0, g0, need[0], need[1]) if g0 is not None else (None, None)
    ga1, gb1 = _mm_grads(a1, b1, g1, need[2], need[3]) if g1 is not None else (None, None)
    return ga0, gb0, ga1, gb1


torch.library.register_autograd("tk::gemm_pair", _gemm_pair_backward, setup_context=_gemm_pair_setup)


def _linear_backward_setup(ctx, inputs, output):
    grad_output, weight, input = inputs
    ctx.set_materialize_grads(False)
    need = ctx.needs_input_grad
    ctx.save_for_backward(grad_output if need[1] or need[2] else None, weight if need[0] else None,
                          input if need[0] else None)


def _linear_backward_backward(ctx, d_gi, d_gw):
    # grad_input = g W and grad_weight = g^T x, so dg = d_gi W^T + x d_gw^T, dW = g^T d_gi, dx = g d_gw.
    g, weight, input = ctx.saved_tensors
    need_g, need_w, need_x = ctx.needs_input_grad
    dg = dw = dx = None
    if d_gi is not None:
        dg, dw = _mm_grads(g, weight, d_gi, need_g, need_w)
    if d_gw is not None:
        dgt, dx = _mm_grads(g.t() if g is not None else None, input, d_gw, need_g, need_x)
        if dgt is not None:
            dg = dgt.t() if dg is None else dg + dgt.t()
    return dg, dw, dx


torch.library.register_autograd("tk::linear_backward", _linear_backward_backward, setup_context=_linear_backward_setup)


def _linear_setup(ctx, inputs, output):
    input, weight, bias = inputs
    ctx.input_shape = input.shape
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.save_for_backward(input if ctx.needs_input_grad[1] else None, weight if ctx.needs_input_grad[0] else None)


def _linear_backward(ctx, grad):
    input, weight = ctx.saved_tensors
    N = grad.shape[-1]
    g2d = grad.reshape(-1, N)
    gi = gw = gb = None
    x2d = input.reshape(-1, input.shape[-1]) if ctx.needs_input_grad[1] else None
    if ctx.needs_input_grad[0] and ctx.needs_input_grad[1]:  # dX and dW side by side
        if weight.dtype == x2d.dtype:  # the gradient as one argument (tk.linear_backward says why)
            gi, gw = _call_op(torch.ops.tk.linear_backward, g2d.to(weight.dtype), weight, x2d)
        else:
            gi, gw = _call_op(torch.ops.tk.gemm_pair, g2d.to(weight.dtype), weight, g2d.t().to(x2d.dtype), x2d)
        gi = gi.reshape(ctx.input_shape)
    elif ctx.needs_input_grad[0]:
        gi = _call_op(torch.ops.tk.gemm, g2d.to(weight.dtype), weight).reshape(ctx.input_shape)
    elif ctx.needs_input_grad[1]:
        gw = _call_op(torch.ops.tk.gemm, g2d.t().to(x2d.dtype), x2d)
    if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2]:
        gb = g2d.sum(0).to(ctx.bias_dtype)
    return gi, gw, gb


torch.library.register_autograd("tk::linear", _linear_backward, setup_context=_linear_setup)


# ----------------------------------------------------------------------------------------------
# Builds without nvcc have no CUDA kernels at all: give CUDA tensors the visible reference path
# ----------------------------------------------------------------------------------------------
def _note_py_fallback(reason):
    global _py_fallback_count
    _py_fallback_count += 1
    if reason not in _py_fallback_reasons:
        _py_fallback_reasons.add(reason)
        warnings.warn(f"torch_tk: falling back to the reference matmul (slower): {reason}", stacklevel=3)


def _reference_addmm(self, a, b, beta, alpha, out_t):
    acc = torch.float64 if a.dtype == torch.float64 else torch.float32
    r = torch.mm(a.to(acc), b.to(acc))
    if alpha != 1:
        r = r * alpha
    if self is not None and beta != 0:
        r = r + beta * self.to(acc)
    return r.to(out_t).contiguous()


if not _C.has_cuda_kernels:
    _NO_KERNELS = "this build has no CUDA kernels (nvcc was not found when torch_tk was built)"
    _cuda_lib = torch.library.Library("tk", "IMPL")

    def _gemm_cuda_ref(a, b, *, out_dtype=None):
        out_t = _check_mm(None, a, b, out_dtype, "tk.gemm", "a", "b", "self")
        _note_py_fallback(_NO_KERNELS)
        return _reference_addmm(None, a, b, 0, 1, out_t)

    def _addmm_cuda_ref(self, mat1, mat2, *, beta=1, alpha=1, out_dtype=None):
        out_t = _check_mm(self, mat1, mat2, out_dtype, "tk.addmm", "mat1", "mat2", "self")
        _note_py_fallback(_NO_KERNELS)
        return _reference_addmm(self, mat1, mat2, beta, alpha, out_t)

    def _linear_cuda_ref(input, weight, bias=None):
        _check_linear(input, weight, bias)
        _note_py_fallback(_NO_KERNELS)
        out = _reference_addmm(bias, input.reshape(-1, input.shape[-1]), weight.t(), 1, 1, input.dtype)
        return out.reshape(*input.shape[:-1], weight.shape[0])

    def _gemm_pair_cuda_ref(a0, b0, a1, b1):
        _gemm_pair_fake(a0, b0, a1, b1)  # the same checks
        _note_py_fallback(_NO_KERNELS)
        return _reference_addmm(None, a0, b0, 0, 1, a0.dtype), _reference_addmm(None, a1, b1, 0, 1, a1.dtype)

    _cuda_lib.impl("gemm", _gemm_cuda_ref, "CUDA")
    _cuda_lib.impl("addmm", _addmm_cuda_ref, "CUDA")
    _cuda_lib.impl("linear", _linear_cuda_ref, "CUDA")
    _cuda_lib.impl("gemm_pair", _gemm_pair_cuda_ref, "CUDA")
    # (tk.linear_backward's C++ CUDA kernel calls tk.gemm_pair through the dispatcher: this one.)


from . import swiglu as _swiglu  # noqa: E402,F401  (tk.linear_swiglu's fake and autograd; after _cuda_lib)
from . import rope as _rope  # noqa: E402,F401  (tk.linear_rope's fake and autograd; after _cuda_lib)
from . import cat_backward as _cat_backward  # noqa: E402,F401  (tk.linear_backward_cat's fake and autograd)
