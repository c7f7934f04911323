"""torch_tk.ops._call_op: the tk ops entered below autograd when no gradient is needed (CPU).

The fast path must take exactly the calls that torch.library's autograd kernel would send
down its no-grad branch, give the same results, and leave every gradient-needing call (and
torch.compile tracing) on the registered autograd formula.
"""
from __future__ import annotations

import pytest
import torch

import torch_tk
from torch_tk import ops as tk_ops


class _CountingBelow:
    """Stands in for torch._C._AutoDispatchBelowAutograd and counts the entries."""

    real = tk_ops._below_autograd
    entries = 0

    def __init__(self):
        self._guard = self.real()

    def __enter__(self):
        type(self).entries += 1
        return self._guard.__enter__()

    def __exit__(self, *exc):
        return self._guard.__exit__(*exc)


@pytest.fixture
def below(monkeypatch):
    assert tk_ops._below_autograd is not None, "this torch lacks _AutoDispatchBelowAutograd"
    _CountingBelow.entries = 0
    monkeypatch.setattr(tk_ops, "_below_autograd", _CountingBelow)
    return _CountingBelow


def _operands(requires_grad=False):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 7, generator=g, dtype=torch.float64, requires_grad=requires_grad)
    w = torch.randn(3, 7, generator=g, dtype=torch.float64, requires_grad=requires_grad)
    bias = torch.randn(3, generator=g, dtype=torch.float64, requires_grad=requires_grad)
    return x, w, bias


def test_no_grad_calls_go_below_autograd_with_the_same_result(below):
    x, w, bias = _operands(requires_grad=True)
    ref = x.detach() @ w.detach().t() + bias.detach()
    with torch.no_grad():
        out = torch_tk.linear(x, w, bias)
        g = torch_tk.gemm(x, w.t())
        s = torch_tk.addmm(bias, x, w.t(), beta=0.5, alpha=2.0)
    assert below.entries == 3
    assert not out.requires_grad and out.grad_fn is None
    assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12)
    assert torch.allclose(g, ref - bias.detach(), rtol=1e-12, atol=1e-12)
    assert torch.allclose(s, 0.5 * bias.detach() + 2.0 * (ref - bias.detach()), rtol=1e-12, atol=1e-12)
    with torch.inference_mode():
        torch_tk.linear(x, w, bias)
    assert below.entries == 4


def test_inputs_without_grad_go_below_autograd_in_grad_mode(below):
    x, w, bias = _operands(requires_grad=False)
    out = torch_tk.linear(x, w, bias)
    assert below.entries == 1 and not out.requires_grad


def test_gradient_calls_keep_the_autograd_formula(below):
    x, w, bias = _operands(requires_grad=True)
    out = torch_tk.linear(x, w, bias)
    assert below.entries == 0, "a call that needs gradients bypassed autograd"
    assert out.grad_fn is not None
    grad = torch.randn_like(out)
    out.backward(grad)
    # the backward's two GEMMs (dX and dW: one tk.gemm_pair call) run with grad mode off: the fast path
    assert below.entries == 1
    xr, wr, br = (t.detach().clone().requires_grad_() for t in (x, w, bias))
    (xr @ wr.t() + br).backward(grad)
    for t, r in ((x, xr), (w, wr), (bias, br)):
        assert torch.allclose(t.grad, r.grad, rtol=1e-12, atol=1e-12)


def test_patched_module_uses_the_fast_path_only_without_grad(below):
    torch.manual_seed(0)
    m = torch.nn.Linear(7, 3).double()
    torch_tk.patch_linear(m)
    x = torch.randn(4, 7, dtype=torch.float64)
    with torch.no_grad():
        y0 = m(x)
    assert below.entries == 1
    y1 = m(x)
    assert below.entries == 1 and y1.grad_fn is not None
    assert torch.equal(y0, y1.detach())


def test_compiled_calls_record_the_op_without_a_graph_break(below):
    x, w, bias = _operands()

    def f(x, w, bias):
        return torch_tk.linear(x, w, bias).relu()

    compiled = torch.compile(f, backend="eager", fullgraph=True)
    with torch.no_grad():
        out = compiled(x, w, bias)
    assert below.entries == 0, "the traced graph should call the op as is"
    assert torch.allclose(out, (x @ w.t() + bias).relu(), rtol=1e-12, atol=1e-12)
