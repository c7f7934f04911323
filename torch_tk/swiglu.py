"""tk.linear_swiglu: a SwiGLU MLP's gate and up projections and its activation in one op.

``gu, h = linear_swiglu(x, gate_weight, up_weight)`` computes ``g = x @ gate_weight.T``,
``u = x @ up_weight.T`` (one GEMM on the Hopper kernel: each 128 x 256 output tile holds the gate
and up values of 128 features, reading 128 rows of each weight) and ``h = silu(g) * u`` in that
GEMM's epilogue from the fp32 accumulators, so no pointwise kernel reads g and u back (the SwiGLU
MLP's ``down_proj(silu(gate_proj(x)) * up_proj(x))`` then needs only ``down_proj(h)``). ``gu`` keeps
g and u for the backward, packed: in each 256 columns the first 128 are gate features 128 j ..
128 j + 127 and the next 128 the up features of the same indices (``csrc/kittens/common/swiglu.h``,
the one statement of that layout; :func:`gate_up_views` reads it).

``swiglu_mlp(x, gate_weight, up_weight, down_weight)`` is the whole MLP, ``down_proj(h)`` included,
so that its backward can take the down projection's input gradient dh = dy @ W_down straight to
the activation's gradients: ``swiglu_down_backward(dy, W_down, gu) -> (d_gate, d_up)`` is one GEMM
whose epilogue reads g and u of each output tile and writes d_gate and d_up instead of dh
(``csrc/gemm/hopper/epilogue_swiglu_grad.cuh``), so no pointwise kernel reads dh, g and u back.

Numerics: fp32 accumulation; h from the fp32 products (a stock SwiGLU rounds g and u to the
16-bit dtype first), rounded once; d_gate and d_up from the fp32 dh (stock rounds dh first). The
backward uses the 16-bit g and u of ``gu``, as stock autograd uses the stored gate and up outputs.
"""
import torch

from . import _C
from . import ops as _ops

BLOCK = 128  # kittens::kSwiGLUBlock (csrc/kittens/common/swiglu.h)
# swiglu_mlp's training backward: [d_gate | d_up] in one tensor, then tk.linear_backward_cat (two GEMMs
# for the gate / up projections' input and weight gradients) -- False: tk.swiglu_down_backward and
# two tk.gemm_pair calls whose input gradients are summed (the form before 2026-12-06h; an A/B for
# benchmarks/bench_model.py --no-cat-backward).
CAT_BACKWARD = True


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


def swiglu_down_backward(grad_output, down_weight, gu):
    """A SwiGLU MLP's activation gradients from the gradient of its output, in one op.

    ``dh = grad_output @ down_weight`` (the down projection's input gradient), then
    ``(d_gate, d_up) = swiglu_grads(dh, gu)``; on the Hopper kernel one 128 x 256-tile GEMM whose
    epilogue reads the tile's g and u from ``gu`` and writes d_gate and d_up (dh never stored).

    Args:
        grad_output: (*, H) tensor, dL/dy of ``y = h @ down_weight.T`` (bfloat16/float16 on the
            kernel; float32/float64 on the reference).
        down_weight: (H, I) tensor, the down projection's nn.Linear weight; I a multiple of 128.
        gu: (*, 2 I) packed gate | up product of :func:`linear_swiglu` (same leading dimensions).
    Returns:
        (d_gate, d_up): (*, I) each, contiguous, in grad_output's dtype: dL/d(gate) and dL/d(up).
    Raises:
        ValueError: shapes, devices. TypeError: dtypes (all three must match).
    Falls back (visibly: ``torch_tk.fallback_reasons()``) to the reference on non-Hopper GPUs,
    other dtypes, non-contiguous or misaligned operands, H % 8 != 0.
    """
    return _ops._call_op(torch.ops.tk.swiglu_down_backward.default, grad_output, down_weight, gu)


def swiglu_down_backward_cat(grad_output, down_weight, gu):
    """:func:`swiglu_down_backward`'s two gradients side by side in one tensor: ``[d_gate | d_up]``.

    The same kernel and bits; the outputs go to the two column halves of one (*, 2 I) tensor, the
    joint output gradient of the gate and up projections that ``tk.linear_backward_cat(d, [gate_weight,
    up_weight], input)`` takes back to their input and weights in two GEMMs (swiglu_mlp's backward).

    Args / Raises: as :func:`swiglu_down_backward`.
    Returns:
        (*, 2 I) contiguous tensor in grad_output's dtype: columns [0, I) dL/d(gate), [I, 2 I) dL/d(up).
    """
    return _ops._call_op(torch.ops.tk.swiglu_down_backward_cat.default, grad_output, down_weight, gu)


def swiglu_mlp(input, gate_weight, up_weight, down_weight):
    """A SwiGLU MLP without biases: ``(silu(input @ gate_weight.T) * (input @ up_weight.T)) @ down_weight.T``.

    The forward is :func:`linear_swiglu` then ``tk.linear``; the backward takes the output
    gradient through :func:`swiglu_down_backward_cat` (the activation gradient inside the down
    projection's dX GEMM), then the gate and up projections' input and weight gradients by
    ``tk.linear_backward_cat`` (two GEMMs).

    Args:
        input: (*, K) tensor. gate_weight, up_weight: (I, K), I a multiple of 128.
        down_weight: (H, I). All of one dtype and device.
    Returns:
        (*, H) tensor of the input dtype.
    Raises:
        ValueError / TypeError as :func:`linear_swiglu`, and for ``down_weight``.
    """
    return _ops._call_op(torch.ops.tk.swiglu_mlp.default, input, gate_weight, up_weight, down_weight)[0]


def gate_up_views(gu):
    """(gate, up) of a packed (*, 2 I) product as (*, I / 128, 128) views (no copy).
    ValueError unless ``gu`` has at least one dimension and a last one that is a multiple of 256."""
    if gu.dim() < 1 or gu.shape[-1] % (2 * BLOCK):
        raise ValueError(f"gate_up_views: `gu` must be a packed (*, 2 I) gate | up product, 2 I a multiple of "
                         f"{2 * BLOCK}, got shape {list(gu.shape)}")
    lead, n = gu.shape[:-1], gu.shape[-1]
    v = gu.view(*lead, n // (2 * BLOCK), 2, BLOCK)
    return v.select(-2, 0), v.select(-2, 1)


def swiglu_grads(d_h, gu):
    """(d_gate, d_up), each (*, I) in d_h's dtype, of h = silu(g) * u given dL/dh and the packed gu:
    d_up = d_h silu(g), d_gate = d_h u s (1 + g (1 - s)) with s = sigmoid(g) (math in fp32; fp64 stays fp64).
    ValueError unless d_h's shape is gu's with half its last dimension (gate_up_views' layout);
    TypeError for non-floating dtypes."""
    for t, name in ((d_h, "d_h"), (gu, "gu")):
        if not t.dtype.is_floating_point:
            raise TypeError(f"swiglu_grads: `{name}` has dtype {t.dtype}; floating-point tensors only")
    g, u = gate_up_views(gu)
    if tuple(d_h.shape) != (*gu.shape[:-1], gu.shape[-1] // 2):
        raise ValueError(f"swiglu_grads: `d_h` must have shape {[*gu.shape[:-1], gu.shape[-1] // 2]} (`gu`'s with "
                         f"half its last dimension), got {list(d_h.shape)}")
    acc = torch.float64 if torch.float64 in (d_h.dtype, gu.dtype) else torch.float32
    dh = d_h.reshape(g.shape).to(acc)
    g, u = g.to(acc), u.to(acc)
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


def _match(op, ref, ref_name, t, name):
    """TypeError / ValueError naming `name` unless ``t`` has ``ref``'s dtype and device."""
    if t.dtype != ref.dtype:
        raise TypeError(f"{op}: `{ref_name}` and `{name}` must have the same dtype, got {ref.dtype} and {t.dtype}")
    if t.device != ref.device:
        raise ValueError(f"{op}: `{ref_name}` and `{name}` must be on the same device, got {ref.device} and {t.device}")


def _check_down_weight(op, down_weight):
    if down_weight.dim() != 2:
        raise ValueError(f"{op}: `down_weight` must be a 2-D (hidden, intermediate) tensor, got {down_weight.dim()}-D")


def _check(input, gate_weight, up_weight):
    op = "tk.linear_swiglu"
    if input.dim() < 1:
        raise ValueError(f"{op}: `input` must have at least 1 dimension, got a 0-D tensor")
    if input.dtype not in _ops._FLOATS:
        raise TypeError(f"{op}: `input` has dtype {input.dtype}; supported: bfloat16, float16, float32, float64")
    for w, name in ((gate_weight, "gate_weight"), (up_weight, "up_weight")):
        if w.dim() != 2:
            raise ValueError(f"{op}: `{name}` must be a 2-D (intermediate, in_features) tensor, got {w.dim()}-D")
        _match(op, input, "input", w, name)
        if w.shape[1] != input.shape[-1]:
            raise ValueError(f"{op}: `input` has {input.shape[-1]} features in its last dimension but `{name}` "
                             f"expects {w.shape[1]}")
    if gate_weight.shape[0] != up_weight.shape[0]:
        raise ValueError(f"{op}: `gate_weight` has {gate_weight.shape[0]} rows but `up_weight` {up_weight.shape[0]}; "
                         "they must match")
    if gate_weight.shape[0] % BLOCK:
        raise ValueError(f"{op}: the intermediate size ({gate_weight.shape[0]} rows of `gate_weight`) must be a "
                         f"multiple of {BLOCK} (the packed gate | up layout's block)")


def _check_down(grad_output, down_weight, gu, op="tk.swiglu_down_backward"):
    if grad_output.dim() < 1:
        raise ValueError(f"{op}: `grad_output` must have at least 1 dimension, got a 0-D tensor")
    if grad_output.dtype not in _ops._FLOATS:
        raise TypeError(f"{op}: `grad_output` has dtype {grad_output.dtype}; supported: bfloat16, float16, float32, "
                        "float64")
    for t, name in ((down_weight, "down_weight"), (gu, "gu")):
        _match(op, grad_output, "grad_output", t, name)
    _check_down_weight(op, down_weight)
    hidden, i = down_weight.shape
    if grad_output.shape[-1] != hidden:
        raise ValueError(f"{op}: `grad_output` has {grad_output.shape[-1]} features in its last dimension but "
                         f"`down_weight` has {hidden} rows (hidden size)")
    if i % BLOCK:
        raise ValueError(f"{op}: the intermediate size ({i} columns of `down_weight`) must be a multiple of {BLOCK} "
                         "(the packed gate | up layout's block)")
    want = (*grad_output.shape[:-1], 2 * i)
    if tuple(gu.shape) != want:
        raise ValueError(f"{op}: `gu` must have shape {list(want)} (grad_output's leading dimensions, 2 x the "
                         f"intermediate size), got {list(gu.shape)}")
    return i


def down_backward_fake(grad_output, down_weight, gu):
    """Shapes only (tk.swiglu_down_backward's fake, registered in torch_tk/ops.py)."""
    i = _check_down(grad_output, down_weight, gu)
    shape = (*grad_output.shape[:-1], i)
    return grad_output.new_empty(shape), grad_output.new_empty(shape)


def down_backward_cat_fake(grad_output, down_weight, gu):
    """Shapes only (tk.swiglu_down_backward_cat's fake, registered in torch_tk/ops.py)."""
    i = _check_down(grad_output, down_weight, gu, "tk.swiglu_down_backward_cat")
    return grad_output.new_empty((*grad_output.shape[:-1], 2 * i))


def _check_mlp_down(input, gate_weight, down_weight):
    op = "tk.swiglu_mlp"
    _check_down_weight(op, down_weight)
    _match(op, input, "input", down_weight, "down_weight")
    if down_weight.shape[1] != gate_weight.shape[0]:
        raise ValueError(f"{op}: `down_weight` has {down_weight.shape[1]} columns but the intermediate size (rows of "
                         f"`gate_weight`) is {gate_weight.shape[0]}")


def mlp_fake(input, gate_weight, up_weight, down_weight):
    """Shapes only (tk.swiglu_mlp's fake): (y, gu, h)."""
    _check_mlp_down(input, gate_weight, down_weight)
    gu, h = fake(input, gate_weight, up_weight)
    return input.new_empty((*input.shape[:-1], down_weight.shape[0])), gu, h


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


def _activation_grads(d_gu, d_h, gu, d_g=None, d_u=None):
    """(d_gate, d_up) as (M, I) tensors, summing what reaches the activation: (d_g, d_u) already
    computed, dL/dh (through swiglu_grads) and dL/dgu (split by gate_up_views); None if nothing."""
    if d_h is not None:
        eg, eu = _fast_grads(d_h.reshape(-1, d_h.shape[-1]), gu.reshape(-1, gu.shape[-1]))
        d_g = eg if d_g is None else d_g + eg
        d_u = eu if d_u is None else d_u + eu
    if d_gu is not None:
        eg, eu = gate_up_views(d_gu.reshape(-1, d_gu.shape[-1]))
        eg, eu = eg.reshape(eg.shape[0], -1), eu.reshape(eu.shape[0], -1)
        d_g = eg if d_g is None else d_g + eg
        d_u = eu if d_u is None else d_u + eu
    return d_g, d_u


def _gate_up_backward(d_g, d_u, input, wg, wu, need_x, need_g, need_u):
    """Two tk.gemm_pair calls, as autograd runs two tk.linear backwards: (dg @ Wg, dg^T x) and
    (du @ Wu, du^T x); dX is their sum. Returns (dX of input's shape, dWg, dWu)."""
    x2d = input.reshape(-1, input.shape[-1])
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
    return (dx.reshape(input.shape) if dx is not None else None), dw[0], dw[1]


def _backward(ctx, d_gu, d_h):
    input, wg, wu, gu = ctx.saved_tensors
    d_g, d_u = _activation_grads(d_gu, d_h, gu)
    if d_g is None:
        return None, None, None
    return _gate_up_backward(d_g, d_u, input, wg, wu, *ctx.needs_input_grad)


torch.library.register_autograd("tk::linear_swiglu", _backward, setup_context=_setup)


def _mlp_setup(ctx, inputs, output):
    ctx.set_materialize_grads(False)  # gu's and h's gradients are None unless they are used
    ctx.save_for_backward(*inputs, output[1], output[2])


def _mlp_backward(ctx, d_y, d_gu, d_h):
    """dW_down = dy^T h; dy -> (d_gate, d_up) in one SwiGLU backward GEMM (its epilogue takes dh through the
    activation), side by side for tk.linear_backward_cat in training's case, else the gate / up GEMMs as
    linear_swiglu's backward."""
    input, wg, wu, wd, gu, h = ctx.saved_tensors
    need_x, need_g, need_u, need_d = ctx.needs_input_grad
    d_g = d_u = d_wd = None
    if d_y is not None:
        dy2d = d_y.reshape(-1, wd.shape[0]).to(wd.dtype).contiguous()
        if need_d:
            d_wd = _ops._call_op(torch.ops.tk.gemm, dy2d.t(), h.reshape(-1, h.shape[-1]))
        if CAT_BACKWARD and need_x and need_g and need_u and d_gu is None and d_h is None:  # (training's case)
            # [d_gate | d_up] in one tensor, then dX and dW_gate | dW_up in one GEMM each.
            d_cat = _ops._call_op(torch.ops.tk.swiglu_down_backward_cat.default, dy2d, wd, gu.reshape(-1, gu.shape[-1]))
            dx, dw = _ops._call_op(torch.ops.tk.linear_backward_cat.default, d_cat, [wg, wu],
                                   input.reshape(-1, input.shape[-1]))
            i = wg.shape[0]
            return dx.reshape(input.shape), dw[:i], dw[i:], d_wd
        if need_x or need_g or need_u:
            d_g, d_u = _ops._call_op(torch.ops.tk.swiglu_down_backward.default, dy2d, wd,
                                     gu.reshape(-1, gu.shape[-1]))
    d_g, d_u = _activation_grads(d_gu, d_h, gu, d_g, d_u)
    if d_g is None or not (need_x or need_g or need_u):
        return None, None, None, d_wd
    return (*_gate_up_backward(d_g, d_u, input, wg, wu, need_x, need_g, need_u), d_wd)


torch.library.register_autograd("tk::swiglu_mlp", _mlp_backward, setup_context=_mlp_setup)


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


def _reference_down_backward(grad_output, down_weight, gu):
    """d_gate, d_up as the C++ reference computes them (dh in fp32; fp64 stays fp64)."""
    acc = torch.float64 if grad_output.dtype == torch.float64 else torch.float32
    dh = grad_output.to(acc) @ down_weight.to(acc)
    d_g, d_u = swiglu_grads(dh, gu.to(acc))
    return d_g.to(grad_output.dtype).contiguous(), d_u.to(grad_output.dtype).contiguous()


if not _C.has_cuda_kernels:
    def _linear_swiglu_cuda_ref(input, gate_weight, up_weight):
        _check(input, gate_weight, up_weight)
        _ops._note_py_fallback(_ops._NO_KERNELS)
        return _reference(input, gate_weight, up_weight)

    _ops._cuda_lib.impl("linear_swiglu", _linear_swiglu_cuda_ref, "CUDA")

    def _swiglu_down_backward_cuda_ref(grad_output, down_weight, gu):
        _check_down(grad_output, down_weight, gu)
        _ops._note_py_fallback(_ops._NO_KERNELS)
        return _reference_down_backward(grad_output, down_weight, gu)

    _ops._cuda_lib.impl("swiglu_down_backward", _swiglu_down_backward_cuda_ref, "CUDA")

    def _swiglu_down_backward_cat_cuda_ref(grad_output, down_weight, gu):
        _check_down(grad_output, down_weight, gu, "tk.swiglu_down_backward_cat")
        _ops._note_py_fallback(_ops._NO_KERNELS)
        return torch.cat(_reference_down_backward(grad_output, down_weight, gu), -1)

    _ops._cuda_lib.impl("swiglu_down_backward_cat", _swiglu_down_backward_cat_cuda_ref, "CUDA")
