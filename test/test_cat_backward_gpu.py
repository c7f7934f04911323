"""tk.linear_backward_cat / _parts on the Hopper kernels (grad_input on the K-parts GEMM, gemm_layout kKParts:
each k tile of B through its part's TMA map; _parts' weight gradients on the M-parts GEMM, kMParts: each
row tile of A through its part's map) and tk.swiglu_down_backward_cat (the SwiGLU backward GEMM
storing d_gate | d_up into one tensor, launch.h GemmArgs::ldo): values against float64 on fresh random
data with tails in M, N and the last part's K, outputs fully written (poisoned allocator, two calls
bitwise equal), the visible fallback. (The whole MLP's gradients through them: test_swiglu_mlp_gpu.py.)"""
import pytest
import torch

import torch_tk
from conftest import rel_err
from gpu_common import DEV, GPU_MARKS, LOWP, TOL, KernelWatch, _dt, needs_hopper, twice_poisoned

pytestmark = GPU_MARKS


def _case(m, rows, k, dtype):
    g = torch.randn(m, sum(rows), device=DEV, dtype=dtype)
    ws = [(torch.randn(r, k, device=DEV) * r ** -0.5).to(dtype) for r in rows]
    return g, ws, torch.randn(m, k, device=DEV, dtype=dtype)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("m,rows,k", [
    (1, [64, 64], 64), (100, [128, 72], 40), (1000, [192, 64, 104], 1000), (4097, [256, 256, 256], 264),
    (2048, [5632, 5632], 2048), (8192, [2048, 2048, 2048], 2048), (8192 + 37, [640, 8], 2056)])
def test_values(dtype, m, rows, k):
    g, ws, x = _case(m, rows, k, dtype)
    es = g.element_size()
    with KernelWatch() as w:
        gi, gw = twice_poisoned(lambda: torch_tk.linear_backward_cat(g, ws, x), (m * k * es, sum(rows) * k * es))
    w.assert_hopper(2)
    assert rel_err(gi, g.double() @ torch.cat(ws).double()) < TOL[dtype]
    assert rel_err(gw, g.double().t() @ x.double()) < TOL[dtype]


@needs_hopper
def test_matches_the_stacked_gemm_bitwise():
    """The K-parts mainloop sums the same k tiles in the same order as one GEMM over the stacked weights."""
    g, ws, x = _case(1000, [128, 256, 64], 512, torch.bfloat16)
    gi, _ = torch_tk.linear_backward_cat(g, ws, x)
    assert torch.equal(gi, torch_tk.gemm(g, torch.cat(ws)))


@needs_hopper
def test_parts_not_whole_k_tiles_fall_back_visibly():
    g, ws, x = _case(300, [100, 60], 128, torch.bfloat16)  # 100 rows: not a multiple of 64
    with KernelWatch() as w:
        gi, _ = torch_tk.linear_backward_cat(g, ws, x)
    assert any("linear_backward_cat" in r and "multiple of 64" in r for r in torch_tk.fallback_reasons())
    assert w.delta["hopper"] >= 2  # the stacked copy's tk.gemm and the weight gradient still on the kernel
    assert rel_err(gi, g.double() @ torch.cat(ws).double()) < TOL[torch.bfloat16]


def _pack(g, u):
    lead, i = g.shape[:-1], g.shape[-1]
    return torch.stack((g.reshape(*lead, i // 128, 128), u.reshape(*lead, i // 128, 128)), dim=-2).reshape(*lead, 2 * i)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("m,hidden,i", [(100, 72, 384), (1000, 1000, 640), (8192, 2048, 5632)])
def test_swiglu_down_backward_cat(dtype, m, hidden, i):
    dy = torch.randn(m, hidden, device=DEV, dtype=dtype)
    wd = (torch.randn(hidden, i, device=DEV) * hidden ** -0.5).to(dtype)
    gu = _pack(torch.randn(m, i, device=DEV) * 2, torch.randn(m, i, device=DEV)).to(dtype)
    with KernelWatch() as w:
        both = twice_poisoned(lambda: (torch_tk.swiglu_down_backward_cat(dy, wd, gu),), (2 * m * i * dy.element_size(),))[0]
    w.assert_hopper(2)
    d_g, d_u = torch_tk.swiglu_down_backward(dy, wd, gu)
    assert both.shape == (m, 2 * i)
    assert torch.equal(both[:, :i], d_g) and torch.equal(both[:, i:], d_u)  # same kernel, other row pitch


def _split(g, rows):  # the joint gradient's column blocks as tensors of their own (tk.linear_backward_parts)
    return [t.contiguous() for t in torch.split(g, rows, 1)]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("m,rows,k", [
    (100, [128, 72], 40), (1000, [256, 128, 104], 1000), (4097, [128, 384, 8], 264), (8192, [2048, 2048, 2048], 2048),
    (8192 + 37, [640, 8], 2056), (2048, [3584, 3584], 2048), (2048 + 5, [3584, 3456], 2040)])
def test_parts_values(dtype, m, rows, k):
    """The K-parts GEMM reading each gradient through its own map, and the M-parts GEMM the weight
    gradients ([g_0 | g_1 | ..]^T x, each g_i^T through its own map by row range): values against
    float64 with tails in M (the last part's rows), N (in_features) and K (tokens), outputs fully written,
    and the input gradient's bits those of the one-tensor op (the same k tiles summed in the same order).
    Where tk.gemm's plan for the joint product takes a stream-K tail (7168 x 2048 x 2048 on 132 SMs),
    one tk.gemm per weight writes its row block instead: those blocks' bits are tk.gemm's."""
    g, ws, x = _case(m, rows, k, dtype)
    gs, es = _split(g, rows), g.element_size()
    with KernelWatch() as w:
        gi, *gws = twice_poisoned(lambda: (lambda r: (r[0], *r[1]))(torch_tk.linear_backward_parts(gs, ws, x)),
                                  (m * k * es, sum(rows) * k * es))
    w.assert_hopper(2 * 2)  # two calls of the K-parts GEMM and of the M-parts GEMM
    assert rel_err(gi, g.double() @ torch.cat(ws).double()) < TOL[dtype]
    for gp, gw in zip(gs, gws):
        assert gw.is_contiguous() and rel_err(gw, gp.double().t() @ x.double()) < TOL[dtype]
    assert torch.equal(gi, torch_tk.linear_backward_cat(g, ws, x)[0])
    plan = torch_tk._C.hopper_dispatch_plan(sum(rows), k, m, layout="TN")
    if (plan["bm"], plan["bn"], plan["splits"], plan["cluster"], plan["sk_tiles"], plan["swap_ab"]) == (128, 256, 1, 1, 0, False):
        # tk.gemm on the joint gradient runs the same tiles, unsplit: the same sums in the same order
        assert torch.equal(torch.cat(gws), torch_tk.gemm(g.t(), x))
    if plan["sk_tiles"] > 0:  # one tk.gemm per weight (dispatch.cpp hopper_mparts_backend)
        for gp, gw in zip(gs, gws):
            assert torch.equal(gw, torch_tk.gemm(gp.t(), x))


@needs_hopper
def test_parts_not_whole_row_tiles_fall_back_visibly():
    """A gradient (but the last) with columns not a multiple of 128 (the M-parts GEMM's row tiles):
    one tk.gemm per weight and a cat, noted; the K-parts GEMM still runs."""
    g, ws, x = _case(1000, [192, 64, 104], 1000, torch.bfloat16)
    gs = _split(g, [192, 64, 104])
    with KernelWatch() as w:
        gi, gws = torch_tk.linear_backward_parts(gs, ws, x)
    assert any("_parts" in r and "multiple of 128" in r for r in torch_tk.fallback_reasons())
    assert w.delta["hopper"] >= 4  # the K-parts GEMM and the three weight gradients on the kernels
    assert rel_err(gi, g.double() @ torch.cat(ws).double()) < TOL[torch.bfloat16]
    for gp, gw in zip(gs, gws):
        assert rel_err(gw, gp.double().t() @ x.double()) < TOL[torch.bfloat16]


@needs_hopper
def test_parts_not_contiguous_fall_back_visibly():
    g, ws, x = _case(300, [128, 64], 128, torch.bfloat16)
    gs = [g[:, :128], g[:, 128:]]  # column views of one tensor: rows not contiguous
    with KernelWatch() as w:
        gi, _ = torch_tk.linear_backward_parts(gs, ws, x)
    assert any("_parts" in r and "contiguous" in r for r in torch_tk.fallback_reasons())
    assert w.delta["hopper"] >= 3  # the stacked copies' tk.gemm and the two weight gradients still on the kernel
    assert rel_err(gi, g.double() @ torch.cat(ws).double()) < TOL[torch.bfloat16]
