"""tk.linear_swiglu: a SwiGLU MLP's gate and up projections and its activation in one op.

``gu, h = linear_swiglu(x, gate_weight, up_weight)`` computes ``g = x @ gate_weight.T``,
``u = x @ up_weight.T`` (one GEMM on the Hopper kernel: each 128 x 256 output tile holds the gate
and up values of 128 features, reading 128 rows of each weight) and ``h = silu(g) * u`` in that
GEMM's epilogue from the fp32 accumulators, so no pointwise kernel reads g and u back (the SwiGLU
MLP's ``down_proj(silu(gate_proj(x)) * up_proj(x))`` then needs only ``down_proj(h)``). ``gu`` keeps
g and u for the backward, packed: in each 256 columns the first 128 are gate features 128 j ..
128 j + 127 and the next 128 the up features of the same indices (``csrc/kittens/common/swiglu.h``,
the one statement of that layout; :func:`gate_up_views` reads it).

Numerics: fp32 accumulation; h from the fp32 products (a stock SwiGLU rounds g and u to the
16-bit dtype first), rounded once. The backward uses the 16-bit g and u of ``gu``, as stock
autograd uses the stored gate and up outputs.
"""
import torch

from . import _C
from . import ops as _ops

BLOCK = 128  # kittens::kSwiGLUBlock (csrc/kittens/common/swiglu.h)


def linear_swiglu(input, gate_weight, up_weight):
    """SwiGLU's first half: ``(gu, silu(input @ gate_weight.T) * (input @ up_weight.T))``.

    Args:
        input: (*, K) tensor (bfloat16/float16 on the Hopper kernel; float32/float64 on the reference).
        gate_weight, up_weight: (I, K) tensors (nn.Linear weights, no bias), I a multiple of 128.
    Returns:
        (gu, h): gu (*, 2 I), the gate and up products packed in 128-column blocks (module
        docstring; :func:`gate_up_views` splits it), and h (*, I) = silu(gate) * up; new contiguous
        tensors of the input dtype.
    Raises:
        ValueError: shapes (K mismatch, gate / up rows differ or are not a multiple of 128), devices.
        TypeError: unsupported or mismatched dtypes.
    Falls back (visibly: ``torch_tk.fallback_reasons()``) to the reference on non-Hopper GPUs, other
    dtypes, non-contiguous or misaligned operands, K % 8 != 0.
    """
    return _ops._call_op(torch.ops.tk.linear_swiglu.default, input, gate_weight, up_weight)


def gate_up_views(gu):
    """(gate, up) of a packed (*, 2 I) product as (*, I / 128, 128) views (no copy)."""
    lead, n = gu.shape[:-1], gu.shape[-1]
    v = gu.view(*lead, n // (2 * BLOCK), 2, BLOCK)
    return v.select(-2, 0), v.select(-2, 1)


def swiglu_grads(d_h, gu):
    """(d_gate, d_up), each (*, I) in d_h's dtype, of h = silu(g) * u given dL/dh and the packed gu:
    d_up = d_h silu(g), d_gate = d_h u s (1 + g (1 - s)) with s = sigmoid(g) (math in fp32)."""
    g, u = gate_up_views(gu)
    dh = d_h.reshape(g.shape).float()
    g, u = g.float(), u.float()
    s = torch.sigmoid(g)
    d_up = dh * g * s
    d_gate = dh * u * s * (1 + g * (1 - s))
    return d_gate.reshape(d_h.shape).to(d_h.dtype), d_up.reshape(d_h.shape).to(d_h.dtype)


_compiled_grads = None


def _fast_grads(d_h, gu):
    """swiglu_grads as one fused kernel in eager CUDA code (torch.compile, built on first use:
    op by op it ran ~10 full-size passes, 2x slower than the stock step's backward; swiglu_bench
    --backward, H100 2026-12-06d); inside a graph being traced (Dynamo, or AOTAutograd's FX trace
    of a compiled model's backward, where a nested compile is an error), or on the CPU, the plain ops.
    Compiled for static shapes first (dynamic=True read the packed gu 3.5x slower, same bench)."""
    global _compiled_grads
    if not d_h.is_cuda or torch.compiler.is_compiling() or torch.fx._symbolic_trace.is_fx_tracing():
        return swiglu_grads(d_h, gu)
    if _compiled_grads is None:
        _compiled_grads = torch.compile(swiglu_grads)
    return _compiled_grads(d_h, gu)


def _check(input, gate_weight, up_weight):
    op = "tk.linear_swiglu"
    if input.dim() < 1:
        raise ValueError(f"{op}: `input` must have at least 1 dimension, got a 0-D tensor")
    if input.dtype not in _ops._FLOATS:
        raise TypeError(f"{op}: `input` has dtype {input.dtype}; supported: bfloat16, float16, float32, float64")
    for w, name in ((gate_weight, "gate_weight"), (up_weight, "up_weight")):
        if w.dim() != 2:
            raise ValueError(f"{op}: `{name}` must be a 2-D (intermediate, in_features) tensor, got {w.dim()}-D")
        if w.dtype != input.dtype:
            raise TypeError(f"{op}: `input` and `{name}` must have the same dtype, got {input.dtype} and {w.dtype}")
        if w.device != input.device:
            raise ValueError(f"{op}: `input` and `{name}` must be on the same device, got {input.device} and {w.device}")
        if w.shape[1] != input.shape[-1]:
            raise ValueError(f"{op}: `input` has {input.shape[-1]} features in its last dimension but `{name}` "
                             f"expects {w.shape[1]}")
    if gate_weight.shape[0] != up_weight.shape[0]:
        raise ValueError(f"{op}: `gate_weight` has {gate_weight.shape[0]} rows but `up_weight` {up_weight.shape[0]}; "
                         "they must match")
    if gate_weight.shape[0] % BLOCK:
        raise ValueError(f"{op}: the intermediate size ({gate_weight.shape[0]} rows of `gate_weight`) must be a "
                         f"multiple of {BLOCK} (the packed gate | up layout's block)")


def fake(input, gate_weight, up_weight):
    """Shapes only (the fake registered in torch_tk/ops.py, the library's Python module)."""
    _check(input, gate_weight, up_weight)
    i = gate_weight.shape[0]
    return input.new_empty((*input.shape[:-1], 2 * i)), input.new_empty((*input.shape[:-1], i))


def _setup(ctx, inputs, output):
    input, gate_weight, up_weight = inputs
    ctx.set_materialize_grads(False)  # gu's gradient is None unless gu is used
    ctx.input_shape = input.shape
    ctx.save_for_backward(input, gate_weight, up_weight, output[0])


def _backward(ctx, d_gu, d_h):
    """Two tk.gemm_pair calls, as autograd runs two tk.linear backwards: (dg @ Wg, dg^T x) and
    (du @ Wu, du^T x); dX is their sum."""
    input, wg, wu, gu = ctx.saved_tensors
    need_x, need_g, need_u = ctx.needs_input_grad
    k = input.shape[-1]
    if d_h is None:
        d_g = d_u = None
    else:
        d_g, d_u = _fast_grads(d_h.reshape(-1, d_h.shape[-1]), gu.reshape(-1, gu.shape[-1]))
    if d_gu is not None:
        eg, eu = gate_up_views(d_gu.reshape(-1, d_gu.shape[-1]))
        eg, eu = eg.reshape(eg.shape[0], -1), eu.reshape(eu.shape[0], -1)
        d_g = eg if d_g is None else d_g + eg
        d_u = eu if d_u is None else d_u + eu
    if d_g is None:
        return None, None, None
    x2d = input.reshape(-1, k)
    dx, dw = None, []
    for d, w, need_w in ((d_g, wg, need_g), (d_u, wu, need_u)):
        d = d.to(w.dtype)
        if need_x and need_w:
            gx, gw = _ops._call_op(torch.ops.tk.gemm_pair, d, w, d.t(), x2d)
        else:
            gx = _ops._call_op(torch.ops.tk.gemm, d, w) if need_x else None
            gw = _ops._call_op(torch.ops.tk.gemm, d.t(), x2d) if need_w else None
        dx = gx if dx is None else dx + gx
        dw.append(gw)
    return (dx.reshape(ctx.input_shape) if dx is not None else None), dw[0], dw[1]


torch.library.register_autograd("tk::linear_swiglu", _backward, setup_context=_setup)


def _reference(input, gate_weight, up_weight):
    """gu, h as the C++ reference computes them (fp32 accumulate; fp64 stays fp64)."""
    acc = torch.float64 if input.dtype == torch.float64 else torch.float32
    x = input.reshape(-1, input.shape[-1]).to(acc)
    g, u = x @ gate_weight.to(acc).t(), x @ up_weight.to(acc).t()
    m, i = g.shape
    gu = g.new_empty(m, 2 * i)
    gv, uv = gate_up_views(gu)  # the packed layout's one reader (module docstring)
    gv.copy_(g.view(gv.shape))
    uv.copy_(u.view(uv.shape))
    h = torch.nn.functional.silu(g) * u
    lead = input.shape[:-1]
    return gu.to(input.dtype).reshape(*lead, 2 * i), h.to(input.dtype).reshape(*lead, i)


if not _C.has_cuda_kernels:
    def _linear_swiglu_cuda_ref(input, gate_weight, up_weight):
        _check(input, gate_weight, up_weight)
        _ops._note_py_fallback(_ops._NO_KERNELS)
        return _reference(input, gate_weight, up_weight)

    _ops._cuda_lib.impl("linear_swiglu", _linear_swiglu_cuda_ref, "CUDA")
