"""Sibling fusion: the tk.linear calls of one compiled graph that read the same input become one
``tk.linear_group`` call (one GEMM forward, one dX + dW pair backward), and their weights are
stored back to back so that the group reads them in place.

* :func:`pack_siblings` (``patch_linear(model, fuse_siblings=True)`` calls it) re-homes the
  weights (and biases) of the patched linears that one module owns directly and that agree in
  in_features, dtype, device and bias, in registration order, into one storage each
  (q/k/v/o of an attention block, gate/up of a gated MLP). Parameter objects, names, values and
  state_dict keys stay; the Parameters become views of that storage (``torch.save`` keeps the
  sharing; ``safetensors`` refuses shared tensors: clone the state_dict first).
* :func:`install` adds :class:`SiblingFusionPass` to ``torch._inductor.config.pre_grad_custom_pass``
  (global, idempotent, chained after a pass already there): every graph torch.compile's Inductor
  builds afterwards gets it. It groups ``tk.linear`` nodes by input node in graph order (two or
  more, static shapes, one dtype and device, all with or all without bias, no DTensor) and
  replaces them by ``tk.linear_group`` + ``split``. Groups whose weights are not back to back at
  run time still compute the same values, with a copy per call (torch_tk.group_counters()).
* :func:`fusion_stats` says how many groups and linears the pass has fused since import.

Why: the stock model's q/k/v (and gate/up) GEMMs read one activation three (two) times and its
backward sums three dX products; one wider GEMM reads it once, fills the GPU better and
accumulates dX inside the K loop (benchmarks/NOTES.md, 2026-12-05c).
"""
import hashlib
import logging
import operator

import torch
from torch import nn

from . import group as _group  # noqa: F401  (defines tk.linear_group)

log = logging.getLogger("torch_tk")
_stats = {"graphs": 0, "groups": 0, "linears": 0}
try:
    from torch._inductor.custom_graph_pass import CustomGraphPass as _Base
except ImportError:  # pragma: no cover - older torch
    _Base = object


def fusion_stats():
    """{"graphs": graphs changed, "groups": tk.linear_group nodes made, "linears": tk.linear nodes
    replaced} by the pass since import."""
    return dict(_stats)


def _linear_args(node):
    """(input, weight, bias) of a tk.linear call node, or None for any other node."""
    if node.op != "call_function" or node.target not in (torch.ops.tk.linear, torch.ops.tk.linear.default):
        return None
    args = list(node.args) + [None] * (3 - len(node.args))
    input = node.kwargs.get("input", args[0])
    weight = node.kwargs.get("weight", args[1])
    bias = node.kwargs.get("bias", args[2])
    return input, weight, bias


def _value(n):
    return n.meta.get("example_value", n.meta.get("val")) if isinstance(n, torch.fx.Node) else None


def _plain(t):
    if not isinstance(t, torch.Tensor) or type(t).__name__ == "DTensor":
        return False
    return all(isinstance(s, int) for s in t.shape)


_INPLACE = {operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
            operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift}


def _mutates(n):
    """Whether a torch-IR node may write to a tensor in place (conservative: any trailing-underscore
    method or function, an ``out=`` kwarg, an in-place operator)."""
    if n.op not in ("call_function", "call_method", "call_module"):
        return False
    if n.op == "call_module" or n.target in _INPLACE or "out" in n.kwargs:
        return True
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    return name.endswith("_") and not name.endswith("__")


def _groups(graph):
    nodes = list(graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    by_input = {}
    for n in graph.nodes:
        a = _linear_args(n)
        if a is not None and isinstance(a[0], torch.fx.Node) and isinstance(a[1], torch.fx.Node):
            by_input.setdefault(a[0], []).append((n, a))
    for members in by_input.values():
        seen, keep = set(), []
        for n, (x, w, b) in members:
            wv, bv, xv = _value(w), _value(b), _value(x)
            if w in seen or not (_plain(wv) and _plain(xv)) or wv.dim() != 2 or (b is not None and not _plain(bv)):
                continue
            seen.add(w)
            keep.append((n, x, w, b, wv))
        if len(keep) < 2:
            continue
        w0 = keep[0][4]
        same = all(k[4].dtype == w0.dtype and k[4].device == w0.device and (k[3] is None) == (keep[0][3] is None)
                   for k in keep)
        first, last = min(order[k[0]] for k in keep), max(order[k[0]] for k in keep)
        # the weights and biases must exist before the first member, where the group call goes,
        # and nothing between the members may write in place (the group reads everything at the first)
        ready = all(order[k[2]] < first and (k[3] is None or order[k[3]] < first) for k in keep)
        if same and ready and not any(_mutates(n) for n in nodes[first:last + 1]):
            yield keep


def fuse_sibling_linears(graph):
    """The pass itself (on a torch-IR FX graph, in place). Returns the number of groups made."""
    made = 0
    for keep in list(_groups(graph)):
        order = {n: i for i, n in enumerate(graph.nodes)}
        first = min((k[0] for k in keep), key=order.__getitem__)
        x = keep[0][1]
        weights = [k[2] for k in keep]
        biases = [k[3] for k in keep] if keep[0][3] is not None else []
        sizes = [k[4].shape[0] for k in keep]
        with graph.inserting_before(first):
            fused = graph.call_function(torch.ops.tk.linear_group.default, (x, weights, biases))
            parts = graph.call_function(torch.ops.aten.split_with_sizes.default, (fused, sizes, -1))
            outs = [graph.call_function(operator.getitem, (parts, i)) for i in range(len(keep))]
        _set_meta(fused, parts, outs, x, weights, biases, sizes)
        for k, out in zip(keep, outs):
            k[0].replace_all_uses_with(out)
            graph.erase_node(k[0])
        made += 1
        _stats["groups"] += 1
        _stats["linears"] += len(keep)
    if made:
        _stats["graphs"] += 1
        log.info("torch_tk: sibling fusion made %d tk.linear_group node(s) in a compiled graph", made)
    return made


def _set_meta(fused, parts, outs, x, weights, biases, sizes):
    """example_value metadata for the new nodes (later passes read it), computed under the graph's fake mode."""
    vals = [_value(x)] + [_value(w) for w in weights] + [_value(b) for b in biases]
    mode = getattr(vals[0], "fake_mode", None)
    if mode is None or any(getattr(v, "fake_mode", None) is not mode for v in vals):
        return
    with mode:
        y = torch.ops.tk.linear_group.default(vals[0], vals[1:1 + len(weights)], vals[1 + len(weights):])
        ps = torch.ops.aten.split_with_sizes.default(y, sizes, -1)
    fused.meta["example_value"] = y
    parts.meta["example_value"] = ps
    for o, p in zip(outs, ps):
        o.meta["example_value"] = p


class SiblingFusionPass(_Base):
    """Inductor pre-grad pass: :func:`fuse_sibling_linears`, after ``prev`` (a pass already installed)."""

    def __init__(self, prev=None):
        self.prev = prev

    def __call__(self, graph):
        if self.prev is not None:
            self.prev(graph)
        fuse_sibling_linears(graph)

    def uuid(self):
        with open(__file__, "rb") as f:
            h = hashlib.sha256(f.read()).hexdigest()
        prev = getattr(self.prev, "uuid", None)
        return h + (str(prev()) if callable(prev) else repr(self.prev))


def install():
    """Adds the pass to ``torch._inductor.config.pre_grad_custom_pass`` (idempotent). Returns True
    when it is installed. Graphs compiled before the call (cached) are not changed."""
    import torch._inductor.config as ic
    cur = ic.pre_grad_custom_pass
    if isinstance(cur, SiblingFusionPass):
        return True
    ic.pre_grad_custom_pass = SiblingFusionPass(cur)
    log.info("torch_tk: sibling fusion installed as torch._inductor.config.pre_grad_custom_pass")
    return True


def installed():
    """True while the pass is torch._inductor.config.pre_grad_custom_pass."""
    import torch._inductor.config as ic
    return isinstance(ic.pre_grad_custom_pass, SiblingFusionPass)


def uninstall():
    """Restores the pre-grad pass that :func:`install` found."""
    import torch._inductor.config as ic
    if isinstance(ic.pre_grad_custom_pass, SiblingFusionPass):
        ic.pre_grad_custom_pass = ic.pre_grad_custom_pass.prev


def _packable(m):
    w = getattr(m, "weight", None)
    return (isinstance(m, nn.Linear) and type(w) is nn.Parameter and w.dim() == 2
            and (m.bias is None or type(m.bias) is nn.Parameter))


def _pack(params):
    """Moves the values of ``params`` (one dtype and device) into one new storage, back to back."""
    total = sum(p.numel() for p in params)
    buf = torch.empty(total, dtype=params[0].dtype, device=params[0].device)
    off = 0
    with torch.no_grad():
        for p in params:
            view = buf[off:off + p.numel()].view(p.shape)
            if p.device.type != "meta":
                view.copy_(p)
            p.data = view
            off += p.numel()


def pack_siblings(model, patched):
    """Stores back to back the weights (and biases) of the linears among ``patched`` (module
    objects) that one parent owns directly and that agree in in_features, dtype, device, bias and
    requires_grad, in registration order. Returns the list of groups packed, as lists of FQNs.
    Skipped: tied weights (a Parameter held by two modules) and non-Parameter weights (DTensor)."""
    patched_ids = {id(m) for m in patched}
    holders = {}
    for _, m in model.named_modules(remove_duplicate=False):
        for p in m.parameters(recurse=False):
            holders.setdefault(id(p), set()).add(id(m))
    packed = []
    for pfqn, parent in model.named_modules():
        buckets = {}
        for name, c in parent.named_children():
            if id(c) not in patched_ids or not _packable(c):
                continue
            if any(len(holders.get(id(p), ())) > 1 for p in c.parameters(recurse=False)):
                continue
            w = c.weight
            key = (w.shape[1], w.dtype, w.device, None if c.bias is None else c.bias.dtype, w.requires_grad)
            buckets.setdefault(key, []).append((f"{pfqn}.{name}" if pfqn else name, c))
        for members in buckets.values():
            if len(members) < 2:
                continue
            _pack([c.weight for _, c in members])
            if members[0][1].bias is not None:
                _pack([c.bias for _, c in members])
            packed.append([f for f, _ in members])
    return packed
