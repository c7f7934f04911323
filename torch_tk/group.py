"""``tk.linear_group``: sibling linears that share one input, as one GEMM.

``linear_group(input, [w_0, .., w_{n-1}], biases)`` returns ``cat([linear(input, w_i, b_i)], -1)``.
When the weights lie back to back in one storage (each row-major (N_i, K), ``w_{i+1}`` starting
where ``w_i`` ends -- what ``patch_linear(fuse_siblings=True)`` arranges), they are read as one
(sum N_i, K) matrix: one ``tk.linear`` forward, one ``tk.gemm_pair`` backward (dX with K = sum N_i,
and dW for all weights), no copy. Otherwise the weights are concatenated per call (a copy of the
weights; warned once, counted in :func:`group_counters`). Gradients: the weights' as views of one
(sum N_i, K) tensor, the biases' likewise.

The op has no kernel of its own (it routes to tk.linear / tk.gemm_pair), so it is defined here,
not in csrc/ops.cpp. The graph pass that introduces it is :mod:`torch_tk.fusion`.
"""
import warnings

import torch

from . import ops as _ops

_lib = torch.library.Library("tk", "FRAGMENT")
_lib.define("linear_group(Tensor input, Tensor[] weights, Tensor[] biases) -> Tensor",
            tags=(torch.Tag.pt2_compliant_tag,))
_lib.define("linear_group_backward(Tensor grad, Tensor input, Tensor[] weights, bool input_grad, bool weight_grad)"
            " -> (Tensor, Tensor)", tags=(torch.Tag.pt2_compliant_tag,))

_counts = {"adjacent": 0, "copied": 0}
_warned = set()


def group_counters():
    """Calls of tk.linear_group / its backward since import: {"adjacent": n, "copied": n}.

    "adjacent": the weights were read in place as one matrix; "copied": they were not back to
    back in one storage and were concatenated for the call (slower; warned once).
    """
    return dict(_counts)


def reset_group_counters():
    for k in _counts:
        _counts[k] = 0


def _check(k, weights, biases, op="tk.linear_group"):
    """Checks shared by the impls and fakes; ``k``: the input's features (its last dim)."""
    torch._check_value(len(weights) >= 1, lambda: f"{op}: `weights` must hold at least one tensor")
    torch._check_value(len(biases) in (0, len(weights)),
                       lambda: f"{op}: `biases` must be empty or hold one tensor per weight, got {len(biases)} for "
                       f"{len(weights)} weights")
    w0 = weights[0]
    for i, w in enumerate(weights):
        torch._check_value(w.dim() == 2, lambda: f"{op}: `weights[{i}]` must be 2-D (out_features, in_features), "
                           f"got {w.dim()}-D")
        torch._check_value(w.shape[1] == k, lambda: f"{op}: `weights[{i}]` expects {w.shape[1]} input features "
                           f"but `input` has {k}")
        torch._check_type(w.dtype == w0.dtype, lambda: f"{op}: `weights[{i}]` has dtype {w.dtype}, `weights[0]` {w0.dtype}")
        torch._check_value(w.device == w0.device, lambda: f"{op}: `weights[{i}]` is on {w.device}, `weights[0]` on {w0.device}")
    for i, b in enumerate(biases):
        torch._check_value(b.dim() == 1 and b.shape[0] == weights[i].shape[0],
                           lambda: f"{op}: `biases[{i}]` must have shape ({weights[i].shape[0]},), got {tuple(b.shape)}")


def _adjacent(ts, shape):
    """``ts`` read in place as one tensor of ``shape`` (row-major), or None when they are not
    contiguous pieces of one storage, back to back in list order."""
    t0 = ts[0]
    if t0.device.type == "meta":
        return None
    off = t0.storage_offset()
    ptr = t0.untyped_storage().data_ptr()
    for t in ts:
        if not t.is_contiguous() or t.untyped_storage().data_ptr() != ptr or t.storage_offset() != off:
            return None
        off += t.numel()
    stride = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        stride[d] = stride[d + 1] * shape[d + 1]
    return t0.as_strided(shape, stride, t0.storage_offset())


def _fused(ts, shape, what):
    """The pieces as one tensor: in place when adjacent, else concatenated (counted, warned once)."""
    t = _adjacent(ts, shape)
    if t is not None:
        return t, True
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"torch_tk: tk.linear_group's {what} are not back to back in one storage; they are copied "
                      "per call (re-run torch_tk.patch_linear(model, fuse_siblings=True) after moving the model)",
                      stacklevel=3)
    return torch.cat(list(ts)), False


def _weights_as_one(weights):
    K = weights[0].shape[1]
    w, ok = _fused(weights, (sum(w.shape[0] for w in weights), K), "weights")
    _counts["adjacent" if ok else "copied"] += 1
    return w


def _linear_group_impl(input, weights, biases):
    torch._check_value(input.dim() >= 1, lambda: "tk.linear_group: `input` must have at least 1 dimension")
    _check(input.shape[-1], weights, biases)
    w = _weights_as_one(weights)
    b = None
    if len(biases):
        b = _fused(biases, (w.shape[0],), "biases")[0]
    return torch.ops.tk.linear.default(input, w, b)


def _check_backward(grad, input, weights):
    op = "tk.linear_group_backward"
    torch._check_value(len(weights) >= 1, lambda: f"{op}: `weights` must hold at least one tensor")
    _check(weights[0].shape[1], weights, [], op)
    n = sum(w.shape[0] for w in weights)
    torch._check_value(grad.dim() >= 1 and grad.shape[-1] == n, lambda: f"{op}: `grad` must end in {n} features, "
                       f"got shape {tuple(grad.shape)}")


def _linear_group_backward_impl(grad, input, weights, input_grad, weight_grad):
    """(dX, dW): dX (*, K) when ``input_grad``, dW (sum N_i, K) when ``weight_grad``, else empty.
    ``input`` is read only for dW (an empty placeholder otherwise)."""
    _check_backward(grad, input, weights)
    w = _weights_as_one(weights)
    g2d = grad.reshape(-1, grad.shape[-1])
    x2d = input.reshape(-1, input.shape[-1]) if weight_grad else None
    gi = gw = grad.new_empty(0)
    if input_grad and weight_grad:
        gi, gw = torch.ops.tk.gemm_pair.default(g2d, w, g2d.t(), x2d)
    elif input_grad:
        gi = torch.ops.tk.gemm.default(g2d, w)
    elif weight_grad:
        gw = torch.ops.tk.gemm.default(g2d.t(), x2d)
    if input_grad:
        gi = gi.reshape(*grad.shape[:-1], w.shape[1])
    return gi, gw


for _key in ("CPU", "CUDA"):
    _lib.impl("linear_group", _linear_group_impl, _key)
    _lib.impl("linear_group_backward", _linear_group_backward_impl, _key)


@torch.library.register_fake("tk::linear_group")
def _linear_group_fake(input, weights, biases):
    torch._check_value(input.dim() >= 1, lambda: "tk.linear_group: `input` must have at least 1 dimension")
    _check(input.shape[-1], weights, biases)
    return input.new_empty((*input.shape[:-1], sum(w.shape[0] for w in weights)))


@torch.library.register_fake("tk::linear_group_backward")
def _linear_group_backward_fake(grad, input, weights, input_grad, weight_grad):
    _check_backward(grad, input, weights)
    gi = grad.new_empty((*grad.shape[:-1], weights[0].shape[1])) if input_grad else grad.new_empty(0)
    gw = grad.new_empty((sum(w.shape[0] for w in weights), weights[0].shape[1])) if weight_grad else grad.new_empty(0)
    return gi, gw


def _setup(ctx, inputs, output):
    input, weights, biases = inputs
    need = ctx.needs_input_grad
    ctx.sizes = [w.shape[0] for w in weights]
    ctx.n_bias = len(biases)
    ctx.bias_dtype = biases[0].dtype if len(biases) else None
    # in setup needs_input_grad is flat (input, *weights, *biases); in backward it is nested
    need_w = any(need[1]) if isinstance(need[1], (list, tuple)) else any(need[1:1 + len(weights)])
    ctx.save_for_backward(input if need_w else None, *weights)


def _backward(ctx, grad):
    input, *weights = ctx.saved_tensors
    need = ctx.needs_input_grad
    need_x, need_w = bool(need[0]), any(need[1])
    gx = gws = gbs = None
    if need_x or need_w:
        x = input if input is not None else grad.new_empty(0)
        gi, gw = torch.ops.tk.linear_group_backward(grad.to(weights[0].dtype), x, weights, need_x, need_w)
        gx = gi if need_x else None
        gws = list(gw.split(ctx.sizes)) if need_w else [None] * len(weights)
    else:
        gws = [None] * len(weights)
    if ctx.n_bias:
        if any(need[2]):
            gbs = list(grad.reshape(-1, grad.shape[-1]).sum(0).to(ctx.bias_dtype).split(ctx.sizes))
        else:
            gbs = [None] * ctx.n_bias
    else:
        gbs = []
    return gx, gws, gbs


torch.library.register_autograd("tk::linear_group", _backward, setup_context=_setup)


def _autocast_kernel(key, device_type):
    keyset = torch._C.DispatchKeySet(key)

    def kernel(input, weights, biases):
        dt = torch.get_autocast_dtype(device_type)

        def cast(t):
            return t.to(dt) if t.is_floating_point() and t.dtype != torch.float64 and t.device.type == device_type else t
        with torch._C._ExcludeDispatchKeyGuard(keyset):
            return torch.ops.tk.linear_group.default(cast(input), [cast(w) for w in weights], [cast(b) for b in biases])
    return kernel


# Under torch.autocast the operands are cast to the autocast dtype, as csrc/autocast.cpp does for
# tk.linear (the cast weights are new tensors, so such a group takes the copied path).
_lib.impl("linear_group", _autocast_kernel(torch._C.DispatchKey.AutocastCUDA, "cuda"), "AutocastCUDA")
_lib.impl("linear_group", _autocast_kernel(torch._C.DispatchKey.AutocastCPU, "cpu"), "AutocastCPU")


def linear_group(input, weights, biases=()):
    """``cat([F.linear(input, w, b) for w, b in zip(weights, biases)], -1)`` as one tk GEMM.

    Args:
        input: (*, K) tensor.
        weights: non-empty sequence of (N_i, K) tensors, one dtype and device (as for :func:`linear`).
        biases: empty, or one (N_i,) tensor per weight.
    Returns:
        New contiguous (*, sum N_i) tensor; ``output.split([N_i], -1)`` are the siblings' outputs.
    Raises:
        ValueError: empty ``weights``, shape mismatches, a ``biases`` list of another length.
        TypeError: weights of different dtypes.
    Weights back to back in one storage run in place; others are concatenated per call (warned
    once, counted by :func:`group_counters`).
    """
    return _ops._call_op(torch.ops.tk.linear_group.default, input, list(weights), list(biases))
