"""RoPE fusion for patch_linear(model, fuse_rope=True).

A transformers attention of the Llama form (LlamaAttention, MistralAttention: q / k / v / o
projections without bias, ``apply_rotary_pos_emb`` on q and k with the ``position_embeddings``
(cos, sin) the model passes in) gets a tk subclass of its own class whose forward computes q and k
with ``tk.linear_rope`` -- the projection GEMM with the rotation in its epilogue
(torch_tk/rope.py) -- and is otherwise the stock forward (v_proj, the model's attention
function, o_proj). As for the linear layers, only the class changes: modules, Parameters,
state_dict keys and optimizer references stay. A KV cache is updated as the stock forward does it;
for calls of at most SMALL_TOKENS tokens (decode steps), without position_embeddings or with extra
positional arguments the stock forward runs.
Why: bench_model's patched step spent ~264 us of ~31 ms rotating q and k in Inductor kernels that
read the projections back and recompute sin / cos per element (H100, 2026-12-06f;
docs/epilogue-fusion.md). Measured with it: bench_model 1.018 / 1.009 / 1.022 / 1.020 against
1.011 / 0.995 / 0.998 / 1.001 without (H100, 2026-12-06g, benchmarks/results/h100_2026-12-06g_rope.txt).
The fusion relies on transformers' tables repeating their first half (``emb = cat(freqs, freqs)``
in every rotary embedding of these models): the op reads ``cos[..., :head_dim / 2]`` only.
"""
import inspect
import sys

import torch
from torch import nn

from . import fusion as _fusion
from . import ops as _ops
from . import rope as _rope

ROPE_ATTENTION_CLASSES = ("LlamaAttention", "MistralAttention")
_FUSED = {}  # original class -> fused class
_ORIG = {}   # fused class -> original class
_CACHE_KWARGS_FORM = {}  # fused class -> whether the stock forward hands the cache its kwargs (transformers 5)


_CACHE_KWARGS = ("cache", "past_key_values", "past_key_value")  # transformers 5 / 4.5x / 4.4x names


def _pop_cache(kwargs):
    cache = None
    for k in _CACHE_KWARGS:
        c = kwargs.pop(k, None)
        cache = c if c is not None else cache
    return cache


def _update_cache(self, cache, k, v, cos, sin, kwargs):
    """The stock forward's cache update, in the form of the installed transformers: 5.x passes the
    forward's kwargs, 4.x a dict of the tables and the cache position (fused_class tells which, once)."""
    if _CACHE_KWARGS_FORM[type(self)]:
        return cache.update(k, v, self.layer_idx, kwargs=kwargs)
    return cache.update(k, v, self.layer_idx, {"sin": sin, "cos": cos, "cache_position": kwargs.get("cache_position")})


def _attention_function(self):
    """The attention function the stock forward would call (transformers' ALL_ATTENTION_FUNCTIONS
    for the configured implementation, else the module's eager_attention_forward)."""
    module = sys.modules[_ORIG[type(self)].__module__]
    impl = self.config._attn_implementation
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    if hasattr(ALL_ATTENTION_FUNCTIONS, "get_interface"):
        return ALL_ATTENTION_FUNCTIONS.get_interface(impl, module.eager_attention_forward)
    return module.eager_attention_forward if impl == "eager" else ALL_ATTENTION_FUNCTIONS[impl]


# q / k / v as one op, tk.linear_qkv_rope, whose backward takes the three projections' gradients side
# by side to one input-gradient GEMM and one weight-gradient GEMM (tk.linear_backward_cat), where
# v_proj is on the tk kernels too, without a bias, its weight of q_proj's dtype and a plain tensor
# (_qkv_joint). False: q / k by tk.linear_rope and v_proj's own forward, three backwards and a sum
# (the form before 2026-12-06h; an A/B for benchmarks/bench_model.py --no-qkv-cat).
QKV_CAT_BACKWARD = True


def _qkv_joint(self):
    from .nn import TKLinear  # (nn imports this module)
    v = self.v_proj
    return (isinstance(v, TKLinear) and v.bias is None and v.weight.dtype == self.q_proj.weight.dtype
            and type(v.weight) in (torch.Tensor, nn.Parameter))


# Up to this many tokens per call (decode steps, small batches) the stock forward runs: its q / k
# projections take the skinny kernels (plan.h), which the RoPE GEMM's fixed 128 x 256 plan is not.
SMALL_TOKENS = 256


def _fused_forward(self, hidden_states, position_embeddings=None, attention_mask=None, *args, **kwargs):
    if position_embeddings is None or args or hidden_states.shape[:-1].numel() <= SMALL_TOKENS:
        return _ORIG[type(self)].forward(self, hidden_states, position_embeddings, attention_mask, *args, **kwargs)
    cache = _pop_cache(kwargs)
    input_shape = hidden_states.shape[:-1]
    hidden_shape = (*input_shape, -1, self.head_dim)
    full = tuple(t.expand(*input_shape, self.head_dim).to(hidden_states.dtype) for t in position_embeddings)
    cos, sin = _rope.half_tables(*full)  # (an op: the backward reads them, rope.half_tables says why)
    if QKV_CAT_BACKWARD and _qkv_joint(self):  # (one backward for the three: rope.linear_qkv_rope says why)
        q, k, v = _ops._call_op(torch.ops.tk.linear_qkv_rope.default, hidden_states, self.q_proj.weight,
                                self.k_proj.weight, self.v_proj.weight, cos, sin)
        v = v.view(hidden_shape).transpose(1, 2)
    else:
        q = _ops._call_op(torch.ops.tk.linear_rope.default, hidden_states, self.q_proj.weight, cos, sin)
        k = _ops._call_op(torch.ops.tk.linear_rope.default, hidden_states, self.k_proj.weight, cos, sin)
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    q, k = q.view(hidden_shape).transpose(1, 2), k.view(hidden_shape).transpose(1, 2)
    if cache is not None:
        k, v = _update_cache(self, cache, k, v, *position_embeddings, kwargs)
    out, weights = _attention_function(self)(self, q, k, v, attention_mask,
                                             dropout=0.0 if not self.training else self.attention_dropout,
                                             scaling=self.scaling, **kwargs)
    return self.o_proj(out.reshape(*input_shape, -1).contiguous()), weights


def fused_class(cls):
    """The fused subclass of an attention class (created once per class)."""
    if cls not in _FUSED:
        tk_cls = type(f"TK{cls.__name__}Rope", (cls,), {"forward": _fused_forward, "__module__": __name__})
        _FUSED[cls], _ORIG[tk_cls] = tk_cls, cls
        _CACHE_KWARGS_FORM[tk_cls] = "cache" in inspect.signature(cls.forward).parameters
    return _FUSED[cls]


def skip_reason(m, is_patched):
    """Why the attention module ``m`` cannot be fused (None: it can). ``is_patched(module)``: whether
    patch_linear put that linear layer on the tk kernels (fusion follows its include / exclude)."""
    q, k = getattr(m, "q_proj", None), getattr(m, "k_proj", None)
    if not all(isinstance(x, nn.Linear) for x in (q, k, getattr(m, "v_proj", None), getattr(m, "o_proj", None))):
        return "q_proj / k_proj / v_proj / o_proj are not all nn.Linear"
    if not (is_patched(q) and is_patched(k)):
        return "q_proj or k_proj is not patched (include / exclude / filter_fn)"
    if "forward" in m.__dict__:
        return "forward replaced on the instance"
    if q.bias is not None or k.bias is not None:
        return "q_proj / k_proj have a bias"
    if any(type(w).__name__ == "DTensor" for w in (q.weight, k.weight)):  # (no sharding rule for the op)
        return "q_proj / k_proj weights are DTensors (tensor parallel or sharded): patch before sharding"
    d = getattr(m, "head_dim", None)
    if not isinstance(d, int) or d % 2 or q.weight.shape[0] % d or k.weight.shape[0] % d:
        return f"head_dim {d} is not even or does not divide the q / k projections"
    if not all(hasattr(m, a) for a in ("config", "scaling", "attention_dropout")):
        return "not transformers' attention form (config, scaling, attention_dropout)"
    return None


def fuse_attentions(model, is_patched, dry_run=False):
    """Fuses RoPE into the q / k projections of every fusable attention of ``model`` (in place).
    Returns (fused fqns, {fqn: reason})."""
    fused, skipped = _fusion.swap_classes(model, ROPE_ATTENTION_CLASSES, _ORIG, skip_reason, is_patched,
                                          lambda m: fused_class(type(m)), dry_run)
    return [f for f, _ in fused], skipped


def unfuse_attentions(model):
    """Restores the original class of every fused attention of ``model``."""
    _fusion.restore_classes(model, _ORIG)
