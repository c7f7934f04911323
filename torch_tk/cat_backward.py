"""tk.linear_backward_cat: the backward of linear layers that share an input, from one gradient tensor.

Layers ``y_i = x @ W_i.T`` (i = 0, 1, ..) whose output gradients lie side by side in one tensor
``g = [g_0 | g_1 | ..]`` (M x sum of out_features) have ``grad_input = sum_i g_i @ W_i = g @ [W_0; W_1; ..]``
and ``grad_W_i = g_i.T @ x``, the row blocks of ``g.T @ x``. This op computes both as two products:
on the Hopper kernel, ``grad_input`` by the K-parts GEMM, which reads each weight in place through
its own TMA map by k range (``csrc/gemm/hopper/producer_loads.cuh``; no stacked copy of the
weights, no per-layer products to sum), and the weight gradients as one tall product.
Why: a SwiGLU MLP's gate / up backward ran as four GEMMs and a sum of two 8192 x 2048 products
(torch_tk/swiglu.py); with ``tk.swiglu_down_backward_cat`` writing ``[d_gate | d_up]`` into one
tensor it is two.
"""
import torch

from . import _C
from . import ops as _ops


def linear_backward_cat(grad_output, weights, input):
    """Input and weight gradients of linear layers sharing ``input``, from their joint output gradient.

    Args:
        grad_output: (M, sum of out_features) tensor, the layers' output gradients side by side in
            the order of ``weights``.
        weights: list of (out_features_i, in_features) tensors (nn.Linear weights).
        input: (M, in_features) tensor. All of one dtype (bfloat16/float16 on the kernels,
            float32/float64 on the reference) and one device.
    Returns:
        (grad_input (M, in_features), grad_weight (sum of out_features, in_features)): new
        contiguous tensors of the input dtype; the i-th layer's weight gradient is grad_weight's
        i-th block of rows (``torch.split(grad_weight, [w.shape[0] for w in weights])``).
    Raises:
        ValueError: an empty list, tensors not 2-D, sizes that do not match, different devices.
        TypeError: unsupported or mismatched dtypes.
    The K-parts kernel takes 2 or 3 contiguous, 16-B aligned 16-bit weights whose row counts,
    but the last's, are multiples of 64, with grad_output contiguous and its columns and
    in_features multiples of 8, on sm_90; otherwise grad_input is ``tk.gemm(grad_output,
    torch.cat(weights))`` (a stacked copy; noted in ``torch_tk.fallback_reasons()`` on a GPU).
    """
    op = torch.ops.tk.linear_backward_cat.default
    if torch.is_grad_enabled() and any(isinstance(w, torch.Tensor) and w.requires_grad for w in weights):
        return op(grad_output, list(weights), input)  # (through autograd: _call_op looks at tensor arguments only)
    return _ops._call_op(op, grad_output, list(weights), input)


def _check(grad_output, weights, input):
    """The argument checks, as csrc/linear_backward.cpp words them; returns the weights' row total."""
    op = "tk.linear_backward_cat"
    torch._check_value(len(weights) > 0, lambda: f"{op}: `weights` must hold at least one tensor")
    torch._check_value(grad_output.dim() == 2, lambda: (
        f"{op}: `grad_output` must be a 2-D (M, sum of out_features) tensor, got {grad_output.dim()}-D"))
    torch._check_value(input.dim() == 2, lambda: f"{op}: `input` must be a 2-D (M, in_features) tensor, got {input.dim()}-D")
    torch._check_type(input.dtype in _ops._FLOATS, lambda: (
        f"{op}: `input` has dtype {input.dtype}; supported: bfloat16, float16, float32, float64"))
    torch._check_type(grad_output.dtype == input.dtype, lambda: (
        f"{op}: `grad_output` and `input` must have one dtype, got {grad_output.dtype} and {input.dtype}"))
    torch._check_value(grad_output.device == input.device, lambda: (
        f"{op}: `grad_output` and `input` must be on one device, got {grad_output.device} and {input.device}"))
    rows = 0
    for i, w in enumerate(weights):
        name = f"weights[{i}]"
        torch._check_value(w.dim() == 2, lambda: (
            f"{op}: `{name}` must be a 2-D (out_features, in_features) tensor, got {w.dim()}-D"))
        torch._check_type(w.dtype == input.dtype, lambda: (
            f"{op}: `{name}` and `input` must have one dtype, got {w.dtype} and {input.dtype}"))
        torch._check_value(w.device == input.device, lambda: (
            f"{op}: `{name}` and `input` must be on one device, got {w.device} and {input.device}"))
        torch._check_value(w.shape[1] == input.shape[1], lambda: (
            f"{op}: `input` has {input.shape[1]} columns but `{name}` has {w.shape[1]} (in_features)"))
        rows = rows + w.shape[0]
    torch._check_value(grad_output.shape[1] == rows, lambda: (
        f"{op}: `grad_output` has {grad_output.shape[1]} columns but the weights have {rows} rows (out_features) "
        "together"))
    torch._check_value(grad_output.shape[0] == input.shape[0], lambda: (
        f"{op}: `grad_output` has {grad_output.shape[0]} rows but `input` has {input.shape[0]}"))
    return rows


def fake(grad_output, weights, input):
    """Shapes only (tk.linear_backward_cat's fake, registered in torch_tk/ops.py: the schema's python module)."""
    rows = _check(grad_output, weights, input)
    return input.new_empty(input.shape), input.new_empty((rows, input.shape[1]))


def _setup(ctx, inputs, output):
    grad_output, weights, input = inputs
    ctx.set_materialize_grads(False)
    ctx.rows = [w.shape[0] for w in weights]
    ctx.save_for_backward(grad_output, input, *weights)


def _backward(ctx, d_gi, d_gw):
    # grad_input = g W (W the stacked weights) and grad_weight = g^T x, so dg = d_gi W^T + x d_gw^T,
    # dW = g^T d_gi (split by rows), dx = g d_gw -- tk.linear_backward's formulas on the stacked weight.
    g, x, *weights = ctx.saved_tensors
    need_g, need_w, need_x = ctx.needs_input_grad
    need_w = need_w if isinstance(need_w, bool) else any(need_w)
    dg = dx = None
    dws = [None] * len(weights)  # (the weights' gradients as the list the op takes)
    if d_gi is not None:
        dg, dw = _ops._mm_grads(g, torch.cat(weights, 0), d_gi, need_g, need_w)
        dws = list(torch.split(dw, ctx.rows, 0)) if dw is not None else dws
    if d_gw is not None:
        dgt, dx = _ops._mm_grads(g.t(), x, d_gw, need_g, need_x)
        if dgt is not None:
            dg = dgt.t() if dg is None else dg + dgt.t()
    return dg, dws, dx


torch.library.register_autograd("tk::linear_backward_cat", _backward, setup_context=_setup)


if not _C.has_cuda_kernels:
    def _cuda_ref(grad_output, weights, input):
        _check(grad_output, weights, input)
        _ops._note_py_fallback(_ops._NO_KERNELS)
        gi = _ops._reference_addmm(None, grad_output, torch.cat(list(weights), 0), 0, 1, input.dtype)
        return gi, _ops._reference_addmm(None, grad_output.t(), input, 0, 1, input.dtype)

    _ops._cuda_lib.impl("linear_backward_cat", _cuda_ref, "CUDA")
