"""tk.linear_rope on the Hopper kernel (the RoPE GEMM, csrc/gemm/hopper/epilogue_rope.cuh): values
against float64 on fresh random data with tails in M, N (one head past a 256-wide tile) and K,
outputs fully written (poisoned allocator, two calls bitwise equal), strided tables, gradients,
and the visible fallback for other head sizes."""
import pytest
import torch

import torch_tk
from conftest import rel_err
from gpu_common import DEV, GPU_MARKS, LOWP, TOL, KernelWatch, _dt, needs_hopper, poison_allocator
from rope_helpers import ref64, tables

pytestmark = GPU_MARKS


def _inputs(m, k, n, dtype, strided):
    x = torch.randn(m, k, device=DEV, dtype=dtype)
    w = (torch.randn(n, k, device=DEV) * k ** -0.5).to(dtype)
    cos, sin = tables((m,), 64, dtype, DEV)
    if strided:  # the first half of full-width tables, as the model's (row stride 128)
        cos, sin = (torch.cat((t, t), -1)[:, :64] for t in (cos, sin))
    return x, w, cos, sin


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("m,k,n", [(1, 64, 128), (100, 72, 384), (128, 2048, 256), (1000, 1000, 640),
                                   (4097, 520, 1280), (8192, 2048, 2048), (8192, 2048, 512)])
@pytest.mark.parametrize("strided", [False, True], ids=["packed", "strided"])
def test_values(dtype, m, k, n, strided):
    x, w, cos, sin = _inputs(m, k, n, dtype, strided)
    outs = []
    with KernelWatch() as watch:
        for _ in range(2):
            poison_allocator(m * n * x.element_size())
            outs.append(torch_tk.linear_rope(x, w, cos, sin))
            torch.cuda.synchronize()
    watch.assert_hopper(2)
    assert torch.equal(outs[0].view(torch.uint8), outs[1].view(torch.uint8)), "two calls differ"
    assert rel_err(outs[0], ref64(x, w, cos, sin)) < TOL[dtype]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_gradients(dtype):
    m, k, n = 777, 264, 384
    x, w, cos, sin = _inputs(m, k, n, dtype, True)
    x.requires_grad_(), w.requires_grad_()
    r = torch.randn(m, n, device=DEV, dtype=torch.float64)
    (torch_tk.linear_rope(x, w, cos, sin).double() * r).sum().backward()
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    c, s = (torch.cat((t, t), -1).double().unsqueeze(-2) for t in (cos, sin))
    y3 = (x64 @ w64.t()).reshape(m, -1, 128)
    ((y3 * c + torch.cat((-y3[..., 64:], y3[..., :64]), -1) * s).reshape(m, n) * r).sum().backward()
    assert rel_err(x.grad, x64.grad) < 2 * TOL[dtype] and rel_err(w.grad, w64.grad) < 2 * TOL[dtype]


@needs_hopper
def test_other_head_dims_fall_back_visibly():
    x = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(128, 64, device=DEV, dtype=torch.bfloat16)
    cos, sin = tables((64,), 32, torch.bfloat16, DEV)
    with KernelWatch() as watch:
        y = torch_tk.linear_rope(x, w, cos, sin)
    assert watch.delta["fallback"] >= 1 and any("head_dim" in r for r in torch_tk.fallback_reasons())
    assert rel_err(y, ref64(x, w, cos, sin)) < TOL[torch.bfloat16]


@needs_hopper
def test_compiled_llama_with_fused_rope_trains_like_stock():
    """patch_linear(fuse_rope=True) on a 2-layer Llama (head_dim 128), compiled: the q / k projections
    run on the RoPE GEMM (counted), loss and gradients match the stock model's."""
    import copy
    tr = pytest.importorskip("transformers")
    cfg = tr.LlamaConfig(hidden_size=512, intermediate_size=1024, num_attention_heads=4, num_key_value_heads=4,
                         num_hidden_layers=2, vocab_size=256, max_position_embeddings=256)
    torch.manual_seed(0)
    stock = tr.LlamaForCausalLM(cfg).to(DEV, torch.bfloat16).train()
    fused = torch_tk.patch_linear(copy.deepcopy(stock), fuse_rope=True)
    assert len(torch_tk.patch_report(fused)["fused_rope"]) == 2
    ids = torch.randint(0, 256, (2, 200), device=DEV)
    losses, grads = [], []
    for m in (stock, torch.compile(fused)):
        with KernelWatch() as watch:
            out = m(input_ids=ids, labels=ids)
            out.loss.backward()
        if m is not stock:
            watch.assert_hopper(4)
        losses.append(out.loss.detach().float())
        grads.append({n: p.grad for n, p in (stock if m is stock else fused).named_parameters()})
    assert rel_err(losses[1], losses[0]) < 1e-2
    for n, g in grads[0].items():
        assert rel_err(grads[1][n], g) < 5e-2, n
