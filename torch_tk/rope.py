"""tk.linear_rope: an attention projection and its rotary position embedding in one op.

``y = linear_rope(x, weight, cos, sin)`` is ``x @ weight.T`` rotated per head of ``head_dim =
2 * cos.shape[-1]`` columns in the rotate-half form (transformers' ``apply_rotary_pos_emb``): with
``h = head_dim / 2`` and ``y0 = x @ weight.T``, for each head and d < h

    y[..., d]     = y0[..., d] * cos[..., d] - y0[..., d + h] * sin[..., d]
    y[..., d + h] = y0[..., d + h] * cos[..., d] + y0[..., d] * sin[..., d]

where ``cos`` / ``sin`` hold one row per token (the input's leading dimensions) and the first half
of the head only: transformers' tables repeat it in the second half (``LlamaRotaryEmbedding``:
``emb = cat(freqs, freqs)``), so ``cos[..., :h]`` of those is this op's ``cos``. On the Hopper
kernel (head_dim 128, 16-bit dtypes) the rotation runs in the GEMM's epilogue on the fp32
accumulators (``csrc/gemm/hopper/epilogue_rope.cuh``), so no pointwise kernel reads the projection
back; a stock model rounds the projection to 16 bits before rotating it.

The backward rotates the output gradient back (the transpose of the rotation, a pointwise pass
reading the saved tables; written without a cat, :func:`rotate_flip`, which Inductor compiles to a
pass at copy speed), then runs the linear layer's two GEMMs (``tk.linear_backward``).
"""
import torch

from . import _C
from . import ops as _ops


def linear_rope(input, weight, cos, sin):
    """``input @ weight.T`` with rotary position embedding applied per head (module docstring).

    Args:
        input: (*, K) tensor (bfloat16/float16 on the Hopper kernel; float32/float64 on the reference).
        weight: (N, K) nn.Linear weight (no bias), N a multiple of head_dim.
        cos, sin: (*, head_dim / 2) tables with the input's leading dimensions (one row per token), the
            input's dtype; the last dimension unit-stride for the kernel.
    Returns:
        (*, N) contiguous tensor of the input dtype.
    Raises:
        ValueError: shapes (K mismatch, tables' leading dims, N % head_dim), devices.
        TypeError: unsupported or mismatched dtypes.
    Falls back (visibly: ``torch_tk.fallback_reasons()``) to the reference on non-Hopper GPUs, other
    dtypes, head_dim != 128, non-contiguous or misaligned operands, K % 8 != 0.
    """
    return _ops._call_op(torch.ops.tk.linear_rope.default, input, weight, cos, sin)


@torch.library.custom_op("tk::rope_half_tables", mutates_args=())
def half_tables(cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The first halves of full-width rotary tables (*, head_dim) as new contiguous (*, head_dim / 2)
    tensors: what :func:`linear_rope` reads from transformers' tables (module docstring).

    An op of its own (not a slice) so that a compiled model's backward reads these tables, saved
    from the forward: AOTAutograd's partitioner recomputes pointwise producers instead, and for
    transformers' tables that means sin / cos of every element of the backward's rotation (the
    stock model's backward does that; CPU Inductor code, 2026-12-06g). Costs two small copies
    (tokens x head_dim / 2 elements each). No gradient (the tables are fixed buffers).
    Raises ValueError unless cos and sin share one shape with an even, positive last dimension;
    TypeError if their dtypes or devices differ.
    """
    h = _check_full_tables(cos, sin)
    return cos[..., :h].contiguous(), sin[..., :h].contiguous()


def _check_full_tables(cos, sin):
    """half_tables' checks; returns head_dim / 2."""
    op = "tk.rope_half_tables"
    if cos.shape != sin.shape:
        raise ValueError(f"{op}: `cos` and `sin` must have one shape (*, head_dim), got {list(cos.shape)} and "
                         f"{list(sin.shape)}")
    if cos.dim() < 1 or cos.shape[-1] == 0 or cos.shape[-1] % 2:
        raise ValueError(f"{op}: `cos` / `sin` need an even, positive head_dim last, got shape {list(cos.shape)}")
    if cos.dtype != sin.dtype or cos.device != sin.device:
        raise TypeError(f"{op}: `cos` and `sin` must share dtype and device, got {cos.dtype} on {cos.device} and "
                        f"{sin.dtype} on {sin.device}")
    return cos.shape[-1] // 2


@half_tables.register_fake
def _half_tables_fake(cos, sin):
    h = _check_full_tables(cos, sin)
    return cos.new_empty((*cos.shape[:-1], h)), sin.new_empty((*sin.shape[:-1], h))


def rotate(y, cos, sin, inverse=False):
    """The op's rotation of ``y`` (*, N) by tables (*, head_dim / 2) in their common precision (fp32
    for 16-bit inputs; fp64 stays fp64), returned in y's dtype; ``inverse``: the transpose (the
    backward's map from dL/dy to dL/dy0)."""
    acc = torch.float64 if torch.float64 in (y.dtype, cos.dtype) else torch.float32
    h = cos.shape[-1]
    y3 = y.reshape(*y.shape[:-1], -1, 2 * h).to(acc)
    c, s = cos.unsqueeze(-2).to(acc), sin.unsqueeze(-2).to(acc)
    if inverse:
        s = -s
    a, b = y3[..., :h], y3[..., h:]
    return torch.cat((a * c - b * s, b * c + a * s), dim=-1).reshape(y.shape).to(y.dtype)


def rotate_flip(y, cos, sin, inverse=False):
    """:func:`rotate`'s map written without a cat: per head, halves i in {0, 1} of ``head_dim / 2``
    columns each, ``y[i] * cos + y[1 - i] * sin * (2 i - 1)`` (inverse: ``sin -> -sin``); the same
    products and sums, so the same values where ``rotate``'s are exact. Inductor lowers the flip to one
    load at a mirrored index, where the cat becomes a select between two masked halves."""
    acc = torch.float64 if torch.float64 in (y.dtype, cos.dtype) else torch.float32
    h = cos.shape[-1]
    y4 = y.reshape(*y.shape[:-1], -1, 2, h).to(acc)
    c, s = cos.unsqueeze(-2).unsqueeze(-2).to(acc), sin.unsqueeze(-2).unsqueeze(-2).to(acc)
    sign = torch.arange(2, device=y.device, dtype=acc).mul(2).sub(1).view(2, 1)  # -1 (first half), +1
    if inverse:
        sign = -sign
    return (y4 * c + y4.flip(-2) * (s * sign)).reshape(y.shape).to(y.dtype)


# Which form the backwards rotate the gradient back by: "flip" (rotate_flip, the default) or "cat"
# (rotate; an A/B). The values agree; the kernels Inductor makes of them do not (H100, 2026-12-07d):
# the q / k / v backward's pointwise pass at bench_model's shape 118.5 us with "flip" -- the same as
# with no rotation at all (120.6) -- against 196.9 with "cat" (benchmarks/rope_bwd_probe.py); in
# bench_model's step one kernel (368.7 us per step) where "cat" took three (695.4).
BACKWARD_ROTATION = "flip"


def rotate_back(y, cos, sin):
    """dL/dy0 from dL/dy: the transpose of the rotation, in BACKWARD_ROTATION's form."""
    return (rotate_flip if BACKWARD_ROTATION == "flip" else rotate)(y, cos, sin, inverse=True)


def _check_weight(op, input, weight, name):
    """`weight` (called `name` in `op`'s messages) against `input`: dtype, device, (out, in) shape."""
    if weight.dtype != input.dtype:
        raise TypeError(f"{op}: `input` and `{name}` must have the same dtype, got {input.dtype} and {weight.dtype}")
    if weight.device != input.device:
        raise ValueError(f"{op}: `input` and `{name}` must be on the same device, got {input.device} and "
                         f"{weight.device}")
    if weight.dim() != 2:
        raise ValueError(f"{op}: `{name}` must be a 2-D (out_features, in_features) tensor, got {weight.dim()}-D")
    if weight.shape[1] != input.shape[-1]:
        raise ValueError(f"{op}: `input` has {input.shape[-1]} features in its last dimension but `{name}` expects "
                         f"{weight.shape[1]}")


def _check(input, weight, cos, sin, op="tk.linear_rope", name="weight"):
    if input.dim() < 1:
        raise ValueError(f"{op}: `input` must have at least 1 dimension, got a 0-D tensor")
    if input.dtype not in _ops._FLOATS:
        raise TypeError(f"{op}: `input` has dtype {input.dtype}; supported: bfloat16, float16, float32, float64")
    for t, tname in ((cos, "cos"), (sin, "sin")):
        if t.dtype != input.dtype:
            raise TypeError(f"{op}: `input` and `{tname}` must have the same dtype, got {input.dtype} and {t.dtype}")
        if t.device != input.device:
            raise ValueError(f"{op}: `input` and `{tname}` must be on the same device, got {input.device} and "
                             f"{t.device}")
    _check_weight(op, input, weight, name)
    lead = tuple(input.shape[:-1])
    for t, tname in ((cos, "cos"), (sin, "sin")):
        if t.dim() != input.dim() or tuple(t.shape[:-1]) != lead:
            raise ValueError(f"{op}: `{tname}` must have `input`'s leading dimensions {list(lead)} and head_dim / 2 "
                             f"entries last, got shape {list(t.shape)}")
    if cos.shape[-1] != sin.shape[-1] or cos.shape[-1] == 0:
        raise ValueError(f"{op}: `cos` and `sin` must have the same positive last dimension (head_dim / 2), got "
                         f"{cos.shape[-1]} and {sin.shape[-1]}")
    if weight.shape[0] % (2 * cos.shape[-1]):
        raise ValueError(f"{op}: out_features ({weight.shape[0]} rows of `{name}`) must be a multiple of head_dim = "
                         f"2 x cos.size(-1) = {2 * cos.shape[-1]}")


def fake(input, weight, cos, sin):
    """Shapes only (the fake registered in torch_tk/ops.py)."""
    _check(input, weight, cos, sin)
    return input.new_empty((*input.shape[:-1], weight.shape[0]))


def _no_table_grads(op, need_cos, need_sin):
    if need_cos or need_sin:
        raise NotImplementedError(f"{op}: gradients with respect to `cos` / `sin` are not implemented "
                                  "(rotary tables are fixed buffers in the models this op serves)")


def _setup(ctx, inputs, output):
    _no_table_grads("tk.linear_rope", *ctx.needs_input_grad[2:4])
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad):
    input, weight, cos, sin = ctx.saved_tensors
    need_x, need_w = ctx.needs_input_grad[:2]
    d0 = rotate_back(grad, cos, sin).to(weight.dtype)
    d2d, x2d = d0.reshape(-1, weight.shape[0]), input.reshape(-1, input.shape[-1])
    if need_x and need_w:  # (the op's inputs share one dtype)
        dx, dw = _ops._call_op(torch.ops.tk.linear_backward.default, d2d, weight, x2d)
    else:
        dx = _ops._call_op(torch.ops.tk.gemm, d2d, weight) if need_x else None
        dw = _ops._call_op(torch.ops.tk.gemm, d2d.t(), x2d) if need_w else None
    return (dx.reshape(input.shape) if dx is not None else None), dw, None, None


torch.library.register_autograd("tk::linear_rope", _backward, setup_context=_setup)


@torch.library.custom_op("tk::linear_qkv_rope", mutates_args=())
def linear_qkv_rope(input: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor, v_weight: torch.Tensor,
                    cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """An attention's q / k / v projections (no biases) with q and k rotated: ``(linear_rope(input,
    q_weight, cos, sin), linear_rope(input, k_weight, cos, sin), input @ v_weight.T)`` -- the same
    kernels and bits as those three calls. One op so that the backward is one unit: dL/dq and dL/dk
    rotated back and dL/dv go to ``tk.linear_backward_parts``: the input gradient as one K-parts GEMM
    reading the three gradients and the three weights in place (no cat, no per-projection products
    to sum), the weight gradients as one M-parts GEMM reading the three gradients in place too
    (``QKV_PARTS``).

    Args: input (*, K); q_weight (Nq, K), k_weight (Nk, K), v_weight (Nv, K); cos, sin as
        :func:`linear_rope`'s. Returns: (q (*, Nq), k (*, Nk), v (*, Nv)), contiguous.
    Raises: as :func:`linear_rope`, naming `q_weight`, `k_weight` or `v_weight` (v_weight: dtype, device,
        2-D, in_features); NotImplementedError for gradients of cos / sin.
    """
    # The checks here name this op's arguments (the inner ops' would say `weight`); under autocast the inner
    # ops cast mixed dtypes first, so there they check, as before.
    if not torch.is_autocast_enabled(input.device.type):
        _check_qkv(input, q_weight, k_weight, v_weight, cos, sin)
    q = torch.ops.tk.linear_rope.default(input, q_weight, cos, sin)
    k = torch.ops.tk.linear_rope.default(input, k_weight, cos, sin)
    return q, k, torch.ops.tk.linear.default(input, v_weight, None)


def _check_qkv(input, q_weight, k_weight, v_weight, cos, sin):
    op = "tk.linear_qkv_rope"
    _check(input, q_weight, cos, sin, op, "q_weight")
    _check(input, k_weight, cos, sin, op, "k_weight")
    _check_weight(op, input, v_weight, "v_weight")


@linear_qkv_rope.register_fake
def _qkv_fake(input, q_weight, k_weight, v_weight, cos, sin):
    _check_qkv(input, q_weight, k_weight, v_weight, cos, sin)
    lead = input.shape[:-1]
    return tuple(input.new_empty((*lead, w.shape[0])) for w in (q_weight, k_weight, v_weight))


def _qkv_setup(ctx, inputs, output):
    _no_table_grads("tk.linear_qkv_rope", *ctx.needs_input_grad[4:6])
    ctx.save_for_backward(*inputs)


# linear_qkv_rope's backward: True: the three gradients as they are (q / k rotated back, v the
# attention's), read in place by tk.linear_backward_parts; False: side by side in one tensor by an
# Inductor cat, then tk.linear_backward_cat (2026-12-06h's form; an A/B for bench_model --no-qkv-parts).
QKV_PARTS = True


def _qkv_backward(ctx, dq, dk, dv):
    input, wq, wk, wv, cos, sin = ctx.saved_tensors
    h = cos.shape[-1]
    c2d, s2d, x2d = cos.reshape(-1, h), sin.reshape(-1, h), input.reshape(-1, input.shape[-1])
    parts = (rotate_back(dq.reshape(-1, wq.shape[0]), c2d, s2d).to(wq.dtype),
             rotate_back(dk.reshape(-1, wk.shape[0]), c2d, s2d).to(wq.dtype),
             dv.reshape(-1, wv.shape[0]).to(wq.dtype))
    need_x, need_w = ctx.needs_input_grad[0], any(ctx.needs_input_grad[1:4])
    if QKV_PARTS and need_x and need_w:
        dx, dw = _ops._call_op(torch.ops.tk.linear_backward_parts.default, [p.contiguous() for p in parts],
                               [wq, wk, wv], x2d)
        return dx.reshape(input.shape), *torch.split(dw, [wq.shape[0], wk.shape[0], wv.shape[0]]), None, None
    d_cat = torch.cat(parts, -1)
    dx = dw = None
    if need_x and need_w:  # (the op's inputs share one dtype)
        dx, dw = _ops._call_op(torch.ops.tk.linear_backward_cat.default, d_cat, [wq, wk, wv], x2d)
    elif need_x:
        dx = _ops._call_op(torch.ops.tk.gemm, d_cat, torch.cat((wq, wk, wv)))
    elif need_w:
        dw = _ops._call_op(torch.ops.tk.gemm, d_cat.t(), x2d)
    dws = torch.split(dw, [wq.shape[0], wk.shape[0], wv.shape[0]]) if dw is not None else (None,) * 3
    return (dx.reshape(input.shape) if dx is not None else None), *dws, None, None


linear_qkv_rope.register_autograd(_qkv_backward, setup_context=_qkv_setup)


def reference(input, weight, cos, sin):
    """y as the C++ reference computes it (fp32 accumulate; fp64 stays fp64; rounded once)."""
    acc = torch.float64 if input.dtype == torch.float64 else torch.float32
    y0 = input.to(acc) @ weight.to(acc).t()
    return rotate(y0, cos.to(acc), sin.to(acc)).to(input.dtype)


if not _C.has_cuda_kernels:
    def _linear_rope_cuda_ref(input, weight, cos, sin):
        _check(input, weight, cos, sin)
        _ops._note_py_fallback(_ops._NO_KERNELS)
        return reference(input, weight, cos, sin)

    _ops._cuda_lib.impl("linear_rope", _linear_rope_cuda_ref, "CUDA")
