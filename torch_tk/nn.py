"""patch_linear / unpatch_linear: run a model's linear layers on the tk kernels.

Patching swaps the class of each selected module for a tk subclass of its own class
(``nn.Linear`` -> :class:`TKLinear`; transformers' GPT-2 ``Conv1D`` -> ``TKConv1D``), so module
objects, Parameter objects, state_dict keys, optimizer references and ``isinstance`` checks are
all unchanged; only ``forward`` differs, and nothing is allocated (meta-device models work).
FSDP2 (``fully_shard``) models can be patched before or after wrapping.
"""
import logging
import re
import weakref

import torch
from torch import nn

from . import attention as _attention
from . import mlp as _mlp
from . import ops as _ops

log = logging.getLogger("torch_tk")
_reports = weakref.WeakKeyDictionary()


class TKLinear(nn.Linear):
    """An nn.Linear whose forward is ``torch.ops.tk.linear(input, weight, bias)``."""

    def forward(self, input):
        return _ops._call_op(torch.ops.tk.linear, input, self.weight, self.bias)


def _tk_conv1d_forward(self, x):
    # transformers' Conv1D: y = x @ weight + bias with weight (in_features, out_features).
    lead = x.shape[:-1]
    y = _ops._call_op(torch.ops.tk.addmm, self.bias, x.reshape(-1, x.shape[-1]), self.weight)
    return y.view(*lead, y.shape[-1])


_TK_CLASS = {nn.Linear: TKLinear}   # original class -> tk class
_ORIG_CLASS = {TKLinear: nn.Linear}  # tk class -> original class


def _register(cls, tk_cls):
    _TK_CLASS[cls], _ORIG_CLASS[tk_cls] = tk_cls, cls
    return tk_cls


def _tk_class(cls):
    """The tk class for an original class, or None. Creates on first sight: TKConv1D for
    transformers' Conv1D, and for a module already wrapped by FSDP2 (``fully_shard`` makes
    class FSDP<X>(FSDPModule, X)) the same wrapper around the tk class of X."""
    if cls in _TK_CLASS:
        return _TK_CLASS[cls]
    if cls.__name__ == "Conv1D" and cls.__module__.startswith("transformers"):
        return _register(cls, type("TKConv1D", (cls,), {"forward": _tk_conv1d_forward, "__module__": __name__}))
    bases = cls.__bases__
    if _is_wrapper(cls) and bases[1] not in _ORIG_CLASS:
        inner = _tk_class(bases[1])
        if inner is not None:
            extra = {k: v for k, v in cls.__dict__.items() if k == "__deepcopy__"}
            name = cls.__name__[: len(cls.__name__) - len(bases[1].__name__)] + inner.__name__
            return _register(cls, type(name, (bases[0], inner), {**extra, "__module__": __name__}))
    return None


def _is_wrapper(cls):
    """A torch.distributed wrapper class such as FSDP2's FSDP<X>(FSDPModule, X)."""
    b = cls.__bases__
    return len(b) == 2 and b[0].__module__.startswith("torch.distributed") and b[0].__name__.endswith("Module")


def _orig_class(cls):
    """The stock class a tk class replaced (also when FSDP2 wrapped a tk class), else None."""
    if cls in _ORIG_CLASS:
        return _ORIG_CLASS[cls]
    if _is_wrapper(cls) and cls.__bases__[1] in _ORIG_CLASS:
        wrapper, inner = cls.__bases__
        orig_inner = _ORIG_CLASS[inner]
        extra = {k: v for k, v in cls.__dict__.items() if k == "__deepcopy__"}
        name = cls.__name__[: len(cls.__name__) - len(inner.__name__)] + orig_inner.__name__
        orig = type(name, (wrapper, orig_inner), {**extra, "__module__": orig_inner.__module__})
        _TK_CLASS[orig], _ORIG_CLASS[cls] = cls, orig
        return orig
    return None


def _matches(fqn, patterns):
    """FQN equals a pattern, lies under it as a dotted prefix, or fully matches a 're:' regex."""
    for p in patterns:
        if p.startswith("re:"):
            if re.fullmatch(p[3:], fqn):
                return True
        elif fqn == p or fqn.startswith(p + "."):
            return True
    return False


def _check_model(fn, model):
    if not isinstance(model, nn.Module):
        raise TypeError(f"{fn}: `model` must be an nn.Module, got {type(model).__name__}")


def _patterns(name, value):
    """`include` / `exclude` as a list of FQN patterns: one string or an iterable of strings; each
    're:' pattern must compile (a bad regex would otherwise surface at the first match)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]  # (list("a.b") would be one pattern per character)
    try:
        patterns = list(value)
    except TypeError:
        raise TypeError(f"patch_linear: `{name}` must be a string or an iterable of strings (FQN patterns), got "
                        f"{type(value).__name__}") from None
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"patch_linear: `{name}` holds {type(p).__name__} {p!r}; FQN patterns are strings")
        if p.startswith("re:"):
            try:
                re.compile(p[3:])
            except re.error as e:
                raise ValueError(f"patch_linear: `{name}` pattern {p!r} is not a valid regular expression: {e}") from None
    return patterns


def _skip_reason(m, fqn, *, tied, output_fqns, include, exclude, filter_fn):
    if include is not None and not _matches(fqn, include):
        return "not matched by include"
    if _matches(fqn, exclude):
        return "matched by exclude"
    if fqn in output_fqns:
        return "output projection (get_output_embeddings); pass skip_lm_head=False to patch it"
    if id(m.weight) in tied:
        return "weight tied to another module; pass skip_tied=False to patch it"
    if "forward" in m.__dict__:
        return "forward replaced on the instance (converted by another library?)"
    if not isinstance(m.weight, torch.Tensor) or not m.weight.dtype.is_floating_point:
        return f"unsupported weight dtype {getattr(m.weight, 'dtype', None)}"
    if m.weight.device.type not in ("cpu", "cuda", "meta"):
        return f"unsupported device {m.weight.device}"
    if filter_fn is not None and not filter_fn(m, fqn):
        return "rejected by filter_fn"
    return None


def patch_linear(model, *, filter_fn=None, include=None, exclude=None, skip_lm_head=True, skip_tied=True,
                 include_subclasses=False, dry_run=False, strict=False, fuse_mlp=False, fuse_rope=False):
    """Makes the linear layers of ``model`` run on ``torch.ops.tk.linear`` (in place, idempotent).

    Args:
        model: an nn.Module (the root itself may be an nn.Linear). CPU, CUDA or meta device.
        filter_fn: optional ``(module, fqn) -> bool``; False skips the module.
        include: optional FQN pattern or list of them; only matching modules are patched.
        exclude: FQN pattern or list of them to skip, added to the default skips. A pattern matches an
            FQN exactly, as a dotted prefix ("model.layers.0" covers "model.layers.0.mlp.up_proj"),
            or, prefixed with "re:", as a full regular-expression match -- never as a substring.
        skip_lm_head: skip ``model.get_output_embeddings()`` where the model has it.
        skip_tied: skip layers whose weight Parameter is shared with another module.
        include_subclasses: also patch subclasses of nn.Linear (off: their forward may differ).
        dry_run: change nothing; the report says what would be patched.
        strict: raise RuntimeError when nothing was patched.
        fuse_mlp: also fuse SwiGLU MLPs (transformers' LlamaMLP, MistralMLP, Qwen2MLP, Qwen3MLP
            with SiLU, intermediate size a multiple of 128, gate_proj and up_proj patched): their
            gate and up projections run as one tk.linear_swiglu GEMM with the activation in its
            epilogue (torch_tk/mlp.py). Where down_proj is patched too (no bias), the whole MLP
            runs as tk.swiglu_mlp, whose backward computes the activation gradient inside the down
            projection's dX GEMM. The report lists them under "fused_mlp" (the whole ones also
            under "fused_mlp_backward"); MLPs left unfused under "skipped" with the reason.
        fuse_rope: also fuse rotary position embedding into the q / k projections of transformers'
            LlamaAttention / MistralAttention (q_proj and k_proj patched, no bias): they run as
            tk.linear_rope, the rotation in the GEMM's epilogue (torch_tk/attention.py). Listed under
            "fused_rope"; attentions left unfused under "skipped" with the reason.
    Returns:
        ``model``. :func:`patch_report` (model) gives {"patched": [fqn], "skipped": {fqn: reason},
        "bypassed": {fqn: reason}}; "bypassed" lists layers whose forward never runs (the
        ``out_proj`` of nn.MultiheadAttention, whose weight is used by the fused functional).
    Raises:
        TypeError: ``model`` is not an nn.Module, ``filter_fn`` is not callable, or a pattern is
            not a string. ValueError: a 're:' pattern does not compile. RuntimeError: ``strict``
            and nothing was patched.
    Skipped by default: output projection, tied weights, non-floating weights, unsupported
    devices, instances whose forward another library replaced, nn.Linear subclasses. GPT-2 style
    transformers ``Conv1D`` (x @ W + b, W stored in x out) is patched too, onto ``tk.addmm``.
    """
    _check_model("patch_linear", model)
    if filter_fn is not None and not callable(filter_fn):
        raise TypeError(f"patch_linear: `filter_fn` must be callable as (module, fqn) -> bool, got "
                        f"{type(filter_fn).__name__}")
    exclude = _patterns("exclude", exclude) or []
    include = _patterns("include", include)
    named = list(model.named_modules(remove_duplicate=False))
    owners = {}
    for fqn, m in named:
        for p in m.parameters(recurse=False):
            owners.setdefault(id(p), set()).add(id(m))
    tied = {pid for pid, mods in owners.items() if len(mods) > 1} if skip_tied else set()
    output_fqns = set()
    if skip_lm_head and hasattr(model, "get_output_embeddings"):
        try:
            head = model.get_output_embeddings()
        except (AttributeError, NotImplementedError):
            head = None
        output_fqns = {fqn for fqn, m in named if head is not None and m is head}
    bypassed = {f"{fqn}.out_proj" if fqn else "out_proj": "nn.MultiheadAttention uses out_proj.weight directly; "
                "its forward never runs" for fqn, m in named if isinstance(m, nn.MultiheadAttention)}

    report = {"patched": [], "skipped": {}, "bypassed": bypassed}
    seen = set()
    for fqn, m in named:
        if id(m) in seen:
            continue
        seen.add(id(m))
        cls = type(m)
        if _orig_class(cls) is not None:
            report["patched"].append(fqn)  # already patched: idempotent
            continue
        if fqn in bypassed:
            continue
        tk_cls = _tk_class(cls)
        if tk_cls is None and isinstance(m, nn.Linear):
            if not include_subclasses:
                report["skipped"][fqn] = f"subclass {cls.__name__} of nn.Linear; pass include_subclasses=True"
                continue
            tk_cls = _register(cls, type(f"TK{cls.__name__}", (cls,), {"forward": TKLinear.forward,
                                                                       "__module__": __name__}))
        if tk_cls is None:
            continue
        why = _skip_reason(m, fqn, tied=tied, output_fqns=output_fqns, include=include, exclude=exclude,
                           filter_fn=filter_fn)
        if why is not None:
            report["skipped"][fqn] = why
            continue
        if not dry_run:
            m.__class__ = tk_cls
        report["patched"].append(fqn)
    if fuse_mlp:
        patched = set(report["patched"])
        ids = {id(m) for fqn, m in named if fqn in patched}
        fused, whole, skipped = _mlp.fuse_mlps(model, lambda lin: id(lin) in ids, dry_run=dry_run)
        report["fused_mlp"] = fused
        report["fused_mlp_backward"] = whole
        report["skipped"].update(skipped)
    if fuse_rope:
        patched = set(report["patched"])
        ids = {id(m) for fqn, m in named if fqn in patched}
        fused, skipped = _attention.fuse_attentions(model, lambda lin: id(lin) in ids, dry_run=dry_run)
        report["fused_rope"] = fused
        report["skipped"].update(skipped)
    if strict and not report["patched"]:
        raise RuntimeError(f"torch_tk.patch_linear(strict=True): nothing was patched; skipped: {report['skipped']}")
    report["dry_run"] = dry_run
    _reports[model] = report
    log.info("torch_tk.patch_linear%s: %d patched, %d skipped, %d bypassed", " (dry run)" if dry_run else "",
             len(report["patched"]), len(report["skipped"]), len(report["bypassed"]))
    return model


def unpatch_linear(model):
    """Restores the original class of every module :func:`patch_linear` changed. Returns ``model``.
    TypeError if ``model`` is not an nn.Module."""
    _check_model("unpatch_linear", model)
    _mlp.unfuse_mlps(model)
    _attention.unfuse_attentions(model)
    for _, m in model.named_modules():
        orig = _orig_class(type(m))
        if orig is not None:
            m.__class__ = orig
    _reports.pop(model, None)
    return model


def patch_report(model):
    """The last :func:`patch_linear` report for ``model`` (empty lists/dicts if never patched).
    TypeError if ``model`` is not an nn.Module."""
    _check_model("patch_report", model)
    return _reports.get(model, {"patched": [], "skipped": {}, "bypassed": {}})
