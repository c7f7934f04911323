"""tk.linear_swiglu on the Hopper kernel (the SwiGLU GEMM, csrc/gemm/hopper/epilogue_swiglu.cuh):
values against float64 on fresh random data with tails in M and K, outputs fully written (poisoned
allocator, two calls bitwise equal), gradients, and compiled patch_linear(fuse_mlp=True) MLPs (gate / up
fused, and whole: tk.swiglu_mlp)."""
import pytest
import torch
from torch import nn

import torch_tk
from conftest import rel_err
from gpu_common import DEV, GPU_MARKS, LOWP, TOL, KernelWatch, _dt, needs_hopper, twice_poisoned

pytestmark = GPU_MARKS


def _inputs(m, k, i, dtype):
    x = torch.randn(m, k, device=DEV, dtype=dtype)
    wg = (torch.randn(i, k, device=DEV) * k ** -0.5).to(dtype)
    wu = (torch.randn(i, k, device=DEV) * k ** -0.5).to(dtype)
    return x, wg, wu


def _ref64(x, wg, wu):
    x, wg, wu = x.double(), wg.double(), wu.double()
    g, u = x @ wg.t(), x @ wu.t()
    return g, u, nn.functional.silu(g) * u


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("m,k,i", [(1, 64, 128), (100, 72, 384), (128, 2048, 256), (1000, 1000, 640),
                                   (4097, 520, 1280), (2048, 2048, 5632), (8192, 2048, 5632)])
def test_values(dtype, m, k, i):
    x, wg, wu = _inputs(m, k, i, dtype)
    es = x.element_size()
    with KernelWatch() as w:
        gu, h = twice_poisoned(lambda: torch_tk.linear_swiglu(x, wg, wu), (2 * m * i * es, m * i * es))
    w.assert_hopper(2)
    g64, u64, h64 = _ref64(x, wg, wu)
    g, u = torch_tk.gate_up_views(gu)
    assert rel_err(g.reshape(m, i), g64) < TOL[dtype]
    assert rel_err(u.reshape(m, i), u64) < TOL[dtype]
    assert rel_err(h, h64) < TOL[dtype]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_gradients(dtype):
    m, k, i = 777, 264, 384
    x, wg, wu = (t.requires_grad_() for t in _inputs(m, k, i, dtype))
    r = torch.randn(m, i, device=DEV, dtype=torch.float64)
    (torch_tk.linear_swiglu(x, wg, wu)[1].double() * r).sum().backward()
    x64, wg64, wu64 = (t.detach().double().requires_grad_() for t in (x, wg, wu))
    (_ref64(x64, wg64, wu64)[2] * r).sum().backward()
    for got, ref in ((x.grad, x64.grad), (wg.grad, wg64.grad), (wu.grad, wu64.grad)):
        assert rel_err(got, ref) < 2 * TOL[dtype]


@needs_hopper
def test_fp32_falls_back_visibly():
    x, wg, wu = _inputs(64, 64, 128, torch.float32)
    with KernelWatch() as w:
        _, h = torch_tk.linear_swiglu(x, wg, wu)
    assert w.delta["fallback"] >= 1 and any("linear_swiglu" in r for r in torch_tk.fallback_reasons())
    assert rel_err(h, _ref64(x, wg, wu)[2]) < 1e-5


class LlamaMLP(nn.Module):  # transformers' form (patch_linear recognises the class name)
    def __init__(self, d, i):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(d, i, bias=False), nn.Linear(d, i, bias=False)
        self.down_proj = nn.Linear(i, d, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@needs_hopper
@pytest.mark.parametrize("whole", [False, True], ids=["gate_up", "whole"])
def test_compiled_fused_mlp_trains_like_stock(whole):
    """whole: the MLP as tk.swiglu_mlp (its backward through tk.swiglu_down_backward); else
    down_proj left unpatched, so gate / up alone are fused."""
    torch.manual_seed(1)
    stock = LlamaMLP(256, 640).to(DEV, torch.bfloat16)
    fused = torch_tk.patch_linear(LlamaMLP(256, 640).to(DEV, torch.bfloat16), fuse_mlp=True,
                                  exclude=[] if whole else ["down_proj"])
    fused.load_state_dict(stock.state_dict())
    rep = torch_tk.patch_report(fused)
    assert rep["fused_mlp"] == [""] and rep["fused_mlp_backward"] == ([""] if whole else [])
    x = torch.randn(4, 300, 256, device=DEV, dtype=torch.bfloat16)
    outs, grads = [], []
    for mod in (stock, torch.compile(fused)):
        y = mod(x)
        y.float().square().mean().backward()
        outs.append(y)
        grads.append([p.grad for p in (stock if mod is stock else fused).parameters()])
    assert rel_err(outs[1], outs[0]) < 2e-2
    for gf, gs in zip(grads[1], grads[0]):
        assert rel_err(gf, gs) < 3e-2
