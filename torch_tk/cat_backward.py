"""tk.linear_backward_cat / tk.linear_backward_parts: the backward of linear layers that share an input, from
one gradient tensor or from one per layer.

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
        TypeError: unsupported or mismatched dtypes; ``weights`` not a list or tuple of tensors.
    The K-parts kernel takes 2 or 3 contiguous, 16-B aligned 16-bit weights whose row counts,
    but the last's, are multiples of 64, with grad_output contiguous and its columns and
    in_features multiples of 8, on sm_90; otherwise grad_input is ``tk.gemm(grad_output,
    torch.cat(weights))`` (a stacked copy; noted in ``torch_tk.fallback_reasons()`` on a GPU).
    """
    weights = _tensor_list("tk.linear_backward_cat", "weights", weights)
    op = torch.ops.tk.linear_backward_cat.default
    if torch.is_grad_enabled() and any(w.requires_grad for w in weights):
        return op(grad_output, weights, input)  # (through autograd: _call_op looks at tensor arguments only)
    return _ops._call_op(op, grad_output, weights, input)


def _tensor_list(op, name, value):
    """A list of tensors from a list or tuple of them; TypeError naming `name` otherwise (a Tensor
    would be taken row by row)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in value):
        raise TypeError(f"{op}: `{name}` must be a list or tuple of tensors, got {type(value).__name__}"
                        + (" (one tensor: wrap it in a list)" if isinstance(value, torch.Tensor) else ""))
    return list(value)


def _check_weights(op, weights, input):
    """The checks both ops share (`input`, the weights), as csrc/linear_backward.cpp words them; returns
    the weights' row total."""
    torch._check_value(len(weights) > 0, lambda: f"{op}: `weights` must hold at least one tensor")
    torch._check_value(input.dim() == 2, lambda: f"{op}: `input` must be a 2-D (M, in_features) tensor, got {input.dim()}-D")
    torch._check_type(input.dtype in _ops._FLOATS, lambda: (
        f"{op}: `input` has dtype {input.dtype}; supported: bfloat16, float16, float32, float64"))
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
    return rows


def _check_grad(op, g, name, input, cols, what):
    """An output gradient's checks: 2-D, `input`'s dtype, device and rows, `cols` columns."""
    torch._check_value(g.dim() == 2, lambda: f"{op}: `{name}` must be a 2-D (M, {what}) tensor, got {g.dim()}-D")
    torch._check_type(g.dtype == input.dtype, lambda: (
        f"{op}: `{name}` and `input` must have one dtype, got {g.dtype} and {input.dtype}"))
    torch._check_value(g.device == input.device, lambda: (
        f"{op}: `{name}` and `input` must be on one device, got {g.device} and {input.device}"))
    torch._check_value(g.shape[1] == cols, lambda: f"{op}: `{name}` has {g.shape[1]} columns but {what} is {cols}")
    torch._check_value(g.shape[0] == input.shape[0], lambda: (
        f"{op}: `{name}` has {g.shape[0]} rows but `input` has {input.shape[0]}"))


def _check(grad_output, weights, input):
    """tk.linear_backward_cat's checks; returns the weights' row total."""
    op = "tk.linear_backward_cat"
    rows = _check_weights(op, weights, input)
    _check_grad(op, grad_output, "grad_output", input, rows, "the weights' rows (out_features) together")
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



def linear_backward_parts(grad_outputs, weights, input):
    """Input and weight gradients of linear layers sharing ``input``, from one output gradient per layer.

    ``grad_input = sum_i grad_outputs[i] @ weights[i]`` as one product (the K-parts GEMM reads every
    gradient and every weight in place through its own TMA maps: no cat of the gradients, no stacked
    copy of the weights, no per-layer products to sum), and ``grad_weights[i] = grad_outputs[i].T @
    input`` as one product too (the M-parts GEMM: ``[g_0 | g_1 | ..].T @ input``, each ``g_i.T`` read
    in place through its own TMA map by row range; one launch and one partly idle last wave instead
    of one per weight). Measured (H100, benchmarks/results/h100_2026-12-07b_checks.txt): at the
    q / k / v shapes (8192 tokens, 3 x 2048 x 2048) this op takes 598.4 us, as the one-tensor
    :func:`linear_backward_cat` does (598.3). The M-parts GEMM's fixed plan has no stream-K tail, so
    where ``tk.gemm``'s plan for the joint product takes one (e.g. gate / up, 2 x 5632 rows: 5.33
    waves) the weight gradients are one ``tk.gemm`` per weight instead, each written into its row
    block (no cat): there (H100, benchmarks/results/h100_2026-12-07c_checks.txt) this op took 1042.7 /
    1038.5 us against the one-tensor op's 1027.6 / 1028.8, where the M-parts GEMM took 1064.1 / 1141.9
    against 1022.4 / 1045.6 (``TK_HOPPER_MPARTS_EACH``, docs/knobs.md).
    Why: an attention's q / k / v gradients come from three kernels (RoPE's inverse rotation for q
    and k, the attention backward for v); side by side in one tensor they cost an Inductor cat
    (torch_tk/rope.py, benchmarks/NOTES.md 2026-12-06h).

    Args:
        grad_outputs: list of (M, out_features_i) tensors, one per weight, in the order of ``weights``.
        weights: list of (out_features_i, in_features) tensors (nn.Linear weights).
        input: (M, in_features) tensor. All of one dtype (bfloat16/float16 on the kernels,
            float32/float64 on the reference) and one device.
    Returns:
        (grad_input (M, in_features), grad_weights: list of (out_features_i, in_features)) of the
        input dtype: grad_input a new contiguous tensor, grad_weights the row blocks (contiguous
        views) of one new (sum of out_features, in_features) tensor, which the op
        ``torch.ops.tk.linear_backward_parts`` returns whole (a custom op's outputs may not alias).
    Raises:
        ValueError: empty lists, list lengths that differ, tensors not 2-D, sizes that do not match,
            different devices.
        TypeError: unsupported or mismatched dtypes; ``grad_outputs`` / ``weights`` not a list or tuple
            of tensors.
    The K-parts kernel takes 2 or 3 parts: contiguous, 16-B aligned 16-bit gradients and weights,
    every weight's row count but the last's a multiple of 64, the gradients' columns and in_features
    multiples of 8, on sm_90; otherwise grad_input is ``tk.gemm(torch.cat(grad_outputs, 1),
    torch.cat(weights))`` (stacked copies). The M-parts kernel takes 2 or 3 contiguous, 16-B aligned
    16-bit gradients whose columns are multiples of 8 (all but the last's multiples of 128) and a
    contiguous, 16-B aligned input with in_features a multiple of 8, on sm_90; otherwise the weight
    gradients are one ``tk.gemm`` each and a ``torch.cat`` of them. Both fallbacks are noted in
    ``torch_tk.fallback_reasons()`` on a GPU.
    """
    op = torch.ops.tk.linear_backward_parts.default
    args = (_tensor_list("tk.linear_backward_parts", "grad_outputs", grad_outputs),
            _tensor_list("tk.linear_backward_parts", "weights", weights), input)
    if torch.is_grad_enabled() and any(t.requires_grad for t in args[0] + args[1]):
        gi, gw = op(*args)  # (through autograd: _call_op looks at tensor arguments only)
    else:
        gi, gw = _ops._call_op(op, *args)
    return gi, list(torch.split(gw, [w.shape[0] for w in weights]))


def _check_parts(grad_outputs, weights, input):
    """linear_backward_parts' argument checks, as csrc/linear_backward.cpp words them."""
    op = "tk.linear_backward_parts"
    torch._check_value(len(weights) > 0, lambda: f"{op}: `weights` must hold at least one tensor")
    torch._check_value(len(grad_outputs) == len(weights), lambda: (
        f"{op}: `grad_outputs` must hold one tensor per weight, got {len(grad_outputs)} for {len(weights)} weights"))
    _check_weights(op, weights, input)
    for i, (g, w) in enumerate(zip(grad_outputs, weights)):
        _check_grad(op, g, f"grad_outputs[{i}]", input, w.shape[0], "the weight's rows (out_features)")


def fake_parts(grad_outputs, weights, input):
    """Shapes only (tk.linear_backward_parts' fake, registered in torch_tk/ops.py)."""
    _check_parts(grad_outputs, weights, input)
    rows = sum(w.shape[0] for w in weights)
    return input.new_empty(input.shape), input.new_empty((rows, input.shape[1]))


def _parts_setup(ctx, inputs, output):
    grads, weights, input = inputs
    ctx.set_materialize_grads(False)
    ctx.n = len(weights)
    ctx.rows = [w.shape[0] for w in weights]
    ctx.save_for_backward(input, *grads, *weights)


def _any(need):
    return need if isinstance(need, bool) else any(need)


def _parts_backward(ctx, d_gi, d_gw_all):
    # grad_input = sum_i g_i W_i and grad_weight's row block i = g_i^T x, so dg_i = d_gi W_i^T + x d_gw_i^T,
    # dW_i = g_i^T d_gi, dx = sum_i g_i d_gw_i (d_gw_i: the incoming gradient's row block i).
    x, *rest = ctx.saved_tensors
    gs, ws = rest[:ctx.n], rest[ctx.n:]
    need_g, need_w, need_x = (_any(n) for n in ctx.needs_input_grad)
    dgs, dws, dx = [None] * ctx.n, [None] * ctx.n, None
    d_gws = torch.split(d_gw_all, ctx.rows) if d_gw_all is not None else None
    for i in range(ctx.n):
        if d_gi is not None:
            dgs[i], dws[i] = _ops._mm_grads(gs[i], ws[i], d_gi, need_g, need_w)
        d_gw = d_gws[i] if d_gws is not None else None
        if d_gw is not None:
            dgt, dxi = _ops._mm_grads(gs[i].t(), x, d_gw, need_g, need_x)
            if dgt is not None:
                dgs[i] = dgt.t() if dgs[i] is None else dgs[i] + dgt.t()
            if dxi is not None:
                dx = dxi if dx is None else dx + dxi
    return dgs, dws, dx


torch.library.register_autograd("tk::linear_backward_parts", _parts_backward, setup_context=_parts_setup)


if not _C.has_cuda_kernels:  # a build without nvcc: both ops on the reference, noted
    def _ref(a, b):
        return _ops._reference_addmm(None, a, b, 0, 1, a.dtype)

    def _cuda_ref(grad_output, weights, input):
        _check(grad_output, weights, input)
        _ops._note_py_fallback(_ops._NO_KERNELS)
        return _ref(grad_output, torch.cat(list(weights), 0)), _ref(grad_output.t(), input)

    def _cuda_ref_parts(grad_outputs, weights, input):
        _check_parts(grad_outputs, weights, input)
        return _cuda_ref(torch.cat(list(grad_outputs), 1), weights, input)

    _ops._cuda_lib.impl("linear_backward_cat", _cuda_ref, "CUDA")
    _ops._cuda_lib.impl("linear_backward_parts", _cuda_ref_parts, "CUDA")
