"""SwiGLU MLP fusion for patch_linear(model, fuse_mlp=True).

A transformers SwiGLU MLP (``down_proj(act_fn(gate_proj(x)) * up_proj(x))`` with SiLU: LlamaMLP,
MistralMLP, Qwen2MLP, Qwen3MLP) gets a tk subclass of its own class whose forward is
``down_proj(linear_swiglu(x, gate_proj.weight, up_proj.weight)[1])``: the gate and up GEMMs run as
one, and the activation runs in its epilogue (torch_tk/swiglu.py). As for the linear layers, only
the class changes: module objects, Parameters, state_dict keys and optimizer references stay.
Why: in bench_model's patched step the SwiGLU forward's pointwise kernel took 355 us of ~31 ms
(H100, 2026-12-06c; docs/epilogue-fusion.md).
Where down_proj is patched too, has no bias and a plain weight, the whole MLP runs as one
``tk.swiglu_mlp`` (forward as above) whose backward takes dL/dy through the activation inside the
down projection's dX GEMM (``tk.swiglu_down_backward``): the backward's pointwise kernel (593 us of
the same step) goes too. Such MLPs are listed under ``fused_mlp_backward`` as well. The linear
modules' own forward (and their hooks) do not run in a fused MLP.
"""
import torch
from torch import nn

from . import fusion as _fusion
from . import ops as _ops
from .swiglu import BLOCK

# transformers' SwiGLU MLP classes whose forward is down_proj(act_fn(gate_proj(x)) * up_proj(x)).
SWIGLU_MLP_CLASSES = ("LlamaMLP", "MistralMLP", "Qwen2MLP", "Qwen3MLP")
_FUSED = {}  # original class -> fused class
_ORIG = {}   # fused class -> original class


def _fused_forward(self, x):
    _, h = _ops._call_op(torch.ops.tk.linear_swiglu.default, x, self.gate_proj.weight, self.up_proj.weight)
    return self.down_proj(h)


def _whole_forward(self, x):
    return _ops._call_op(torch.ops.tk.swiglu_mlp.default, x, self.gate_proj.weight, self.up_proj.weight,
                         self.down_proj.weight)[0]


def fused_class(cls, whole=False):
    """The fused subclass of a SwiGLU MLP class (created once per kind): gate / up fused, or
    (``whole``) the whole MLP as tk.swiglu_mlp."""
    if (cls, whole) not in _FUSED:
        name, fwd = (f"TK{cls.__name__}Whole", _whole_forward) if whole else (f"TK{cls.__name__}", _fused_forward)
        tk_cls = type(name, (cls,), {"forward": fwd, "__module__": __name__})
        _FUSED[cls, whole], _ORIG[tk_cls] = tk_cls, cls
    return _FUSED[cls, whole]


def _down_whole(m, is_patched):
    """Whether the MLP's down projection can join it (tk.swiglu_mlp): patched, no bias, a plain
    weight of shape (hidden, intermediate) and the gate's dtype."""
    down, gate = m.down_proj, m.gate_proj
    return (is_patched(down) and down.bias is None and type(down.weight).__name__ != "DTensor"
            and down.weight.shape[1] == gate.weight.shape[0] and down.weight.dtype == gate.weight.dtype)


def _is_silu(act):
    """nn.SiLU, or transformers' SiLUActivation (ACT2FN["silu"]: forward = F.silu)."""
    t = type(act)
    return isinstance(act, nn.SiLU) or (t.__name__ == "SiLUActivation" and t.__module__.startswith("transformers"))


def skip_reason(m, is_patched):
    """Why the MLP module ``m`` cannot be fused (None: it can). ``is_patched(module)``: whether
    patch_linear put that linear layer on the tk kernels (fusion follows its include / exclude)."""
    gate, up, down = (getattr(m, n, None) for n in ("gate_proj", "up_proj", "down_proj"))
    if not all(isinstance(x, nn.Linear) for x in (gate, up, down)):
        return "gate_proj / up_proj / down_proj are not all nn.Linear"
    if not (is_patched(gate) and is_patched(up)):
        return "gate_proj or up_proj is not patched (include / exclude / filter_fn)"
    if not _is_silu(getattr(m, "act_fn", None)):
        return f"act_fn is {type(getattr(m, 'act_fn', None)).__name__}, not SiLU"
    if "forward" in m.__dict__:
        return "forward replaced on the instance"
    if gate.bias is not None or up.bias is not None:
        return "gate_proj / up_proj have a bias"
    if gate.weight.shape != up.weight.shape or gate.weight.dtype != up.weight.dtype:
        return "gate_proj and up_proj weights differ in shape or dtype"
    if gate.weight is up.weight:
        return "gate_proj and up_proj share one weight"
    if any(type(w).__name__ == "DTensor" for w in (gate.weight, up.weight)):  # (no sharding rule for the op)
        return "gate_proj / up_proj weights are DTensors (tensor parallel or sharded): patch before sharding"
    if gate.weight.shape[0] % BLOCK:
        return f"intermediate size {gate.weight.shape[0]} is not a multiple of {BLOCK}"
    return None


def fuse_mlps(model, is_patched, dry_run=False):
    """Fuses every fusable SwiGLU MLP of ``model`` (in place). Returns (fused fqns, fqns of those
    fused whole -- down projection and backward included --, {fqn: reason})."""
    fused, skipped = _fusion.swap_classes(model, SWIGLU_MLP_CLASSES, _ORIG, skip_reason, is_patched,
                                          lambda m: fused_class(type(m), _down_whole(m, is_patched)), dry_run)
    return [f for f, _ in fused], [f for f, c in fused if c.forward is _whole_forward], skipped


def unfuse_mlps(model):
    """Restores the original class of every fused MLP of ``model``."""
    _fusion.restore_classes(model, _ORIG)
