"""benchmarks/boundary_probe.py on the CPU: its opaque ops give F.linear's values and gradients, and
boundary_model swaps exactly the named layers (compiled, too)."""
import functools
import sys

import pytest
import torch
from torch import nn

from conftest import load_script


@functools.cache  # once per process: the script registers its custom ops at import
def _probe():
    mod = load_script("benchmarks/boundary_probe.py", "boundary_probe_under_test")
    sys.modules[mod.__name__] = mod  # torch.compile looks ProbeLinear's module up by name
    return mod


def test_probe_linear_matches_f_linear():
    bp = _probe()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 7, 16, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(12, 16, generator=g, dtype=torch.float64, requires_grad=True)
    up = torch.randn(3, 7, 12, generator=g, dtype=torch.float64)
    y = bp.probe_linear(x, w)
    (y * up).sum().backward()
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    y2 = nn.functional.linear(x2, w2)
    (y2 * up).sum().backward()
    for got, want in ((y, y2), (x.grad, x2.grad), (w.grad, w2.grad)):
        assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(bp.probe_linear, (x[:1, :2], w[:3]))


def test_boundary_model_swaps_named_layers():
    bp = _probe()
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 6, bias=False), nn.GELU(), nn.Linear(6, 8, bias=False), nn.Linear(8, 4, bias=False))
    pm = bp.boundary_model(m, {"0", "2"})
    assert [type(pm[i]).__name__ for i in (0, 2, 3)] == ["ProbeLinear", "ProbeLinear", "Linear"]
    assert type(m[0]) is nn.Linear  # the original is untouched
    x = torch.randn(5, 8)
    assert torch.allclose(torch.compile(pm)(x), m(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="has a bias"):
        bp.boundary_model(nn.Sequential(nn.Linear(8, 6)), {"0"})
