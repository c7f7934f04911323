"""tk.swiglu_down_backward on the Hopper kernel (the SwiGLU backward GEMM,
csrc/gemm/hopper/epilogue_swiglu_grad.cuh) and tk.swiglu_mlp's gradients: values against float64 on
fresh random data with tails in M, K and the intermediate size (I = 384, 640: a half tile of 256
features past I), outputs fully written (poisoned allocator, two calls bitwise equal). (A compiled
whole-MLP model against stock: test_swiglu_gpu.py.)"""
import pytest
import torch
from torch import nn

import torch_tk
from conftest import rel_err
from gpu_common import DEV, GPU_MARKS, LOWP, TOL, KernelWatch, _dt, needs_hopper, poison_allocator

pytestmark = GPU_MARKS


def _grads64(dy, wd, gu):
    dh = dy.double() @ wd.double()
    g, u = torch_tk.gate_up_views(gu.double())
    g, u = g.reshape(dh.shape), u.reshape(dh.shape)
    s = torch.sigmoid(g)
    return dh * u * s * (1 + g * (1 - s)), dh * g * s


def _inputs(m, hidden, i, dtype):
    dy = torch.randn(m, hidden, device=DEV, dtype=dtype)
    wd = (torch.randn(hidden, i, device=DEV) * hidden ** -0.5).to(dtype)
    gu = (torch.randn(m, 2 * i, device=DEV) * 2).to(dtype)  # gate values over sigmoid's curved range
    return dy, wd, gu


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("m,hidden,i", [(1, 64, 128), (100, 72, 384), (128, 2048, 256), (1000, 1000, 640),
                                        (4097, 520, 1280), (2048, 2048, 5632), (8192, 2048, 5632)])
def test_down_backward_values(dtype, m, hidden, i):
    dy, wd, gu = _inputs(m, hidden, i, dtype)
    nbytes = m * i * dy.element_size()
    outs = []
    for _ in range(2):
        poison_allocator(nbytes, nbytes)
        with KernelWatch() as w:
            outs.append(torch_tk.swiglu_down_backward(dy, wd, gu))
        torch.cuda.synchronize()
        w.assert_hopper(1)
    for a, b in zip(*outs):
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), "two calls differ (unwritten output or a race)"
    r_g, r_u = _grads64(dy, wd, gu)
    assert rel_err(outs[0][0], r_g) < TOL[dtype]
    assert rel_err(outs[0][1], r_u) < TOL[dtype]


@needs_hopper
def test_down_backward_fp32_falls_back_visibly():
    dy, wd, gu = _inputs(64, 64, 128, torch.float32)
    with KernelWatch() as w:
        d_g, _ = torch_tk.swiglu_down_backward(dy, wd, gu)
    assert w.delta["fallback"] >= 1 and any("swiglu_down_backward" in r for r in torch_tk.fallback_reasons())
    assert rel_err(d_g, _grads64(dy, wd, gu)[0]) < 1e-5


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_mlp_gradients(dtype):
    m, k, i = 777, 264, 384
    x = torch.randn(m, k, device=DEV, dtype=dtype, requires_grad=True)
    ws = [((torch.randn(i, k, device=DEV) * k ** -0.5).to(dtype)).requires_grad_(),
          ((torch.randn(i, k, device=DEV) * k ** -0.5).to(dtype)).requires_grad_(),
          ((torch.randn(k, i, device=DEV) * i ** -0.5).to(dtype)).requires_grad_()]
    r = torch.randn(m, k, device=DEV, dtype=torch.float64)
    with KernelWatch() as w:
        (torch_tk.swiglu_mlp(x, *ws).double() * r).sum().backward()
    w.assert_hopper(6)
    # forward 2; backward: [d_gate | d_up], dW_down, then tk.linear_backward_cat's dX (K-parts) and dW_gate | dW_up
    assert w.delta["hopper"] == 6, w.delta
    leaves = [t.detach().double().requires_grad_() for t in (x, *ws)]
    g, u = leaves[0] @ leaves[1].t(), leaves[0] @ leaves[2].t()
    ((nn.functional.silu(g) * u) @ leaves[3].t() * r).sum().backward()
    for got, ref in zip((x.grad, *(w_.grad for w_ in ws)), (t.grad for t in leaves)):
        assert rel_err(got, ref) < 2 * TOL[dtype]
