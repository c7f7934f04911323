"""GPU tests of sibling fusion: tk.linear_group on the Hopper kernel (packed and copied weights,
tails, odd K), its gradients, and compiled training of patched models with fuse_siblings=True
against float64 / the stock model. Fresh randn data, a NaN-poisoned allocator, relative norms."""
import copy

import pytest
import torch
from torch import nn

import torch_tk
from gpu_common import DEV, TOL, KernelWatch, check, needs_hopper, poison_allocator

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.fixture(autouse=True)
def _restore_pre_grad_pass():
    import torch._inductor.config as ic
    old = ic.pre_grad_custom_pass
    yield
    ic.pre_grad_custom_pass = old


def _packed(sizes, k, dtype):
    buf = torch.randn(sum(sizes) * k, device=DEV, dtype=dtype)
    out, off = [], 0
    for s in sizes:
        out.append(buf[off * k:(off + s) * k].view(s, k))
        off += s
    return out


def _ref(x, ws, bs=None):
    x64 = x.double().reshape(-1, x.shape[-1])
    outs = [x64 @ w.double().t() + (bs[i].double() if bs else 0) for i, w in enumerate(ws)]
    return torch.cat(outs, -1).reshape(*x.shape[:-1], -1)


# (tokens, K, sibling widths): bench_model's q/k/v and gate/up, tails off every tile, an odd K
CASES = [(4096, 2048, (2048, 2048, 2048)), (1000, 1032, (520, 264, 136)), (333, 999, (130, 70)),
         (8192, 2048, (5632, 5632))]


@needs_hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-{'+'.join(map(str, c[2]))}")
@pytest.mark.parametrize("packed", [True, False])
def test_linear_group_on_the_kernel(case, dtype, packed):
    T, K, sizes = case
    ws = _packed(sizes, K, dtype)
    if not packed:
        ws = [w.clone() for w in ws]
    x = torch.randn(T, K, device=DEV, dtype=dtype)
    poison_allocator(T * sum(sizes) * 2)
    torch_tk.reset_group_counters()
    with KernelWatch() as kw:
        y = torch_tk.linear_group(x, ws)
    kw.assert_hopper(1)
    assert y.shape == (T, sum(sizes)) and y.dtype == dtype
    check(y, _ref(x, ws), TOL[dtype], "linear_group")
    assert torch_tk.group_counters() == ({"adjacent": 1, "copied": 0} if packed else {"adjacent": 0, "copied": 1})


@needs_hopper
@pytest.mark.parametrize("case", CASES[1:3], ids=lambda c: f"{c[0]}x{c[1]}")
def test_linear_group_grads_on_the_kernel(case):
    T, K, sizes = case
    dtype = torch.bfloat16
    ws = [w.requires_grad_() for w in _packed(sizes, K, dtype)]
    x = torch.randn(T, K, device=DEV, dtype=dtype, requires_grad=True)
    g = torch.randn(T, sum(sizes), device=DEV, dtype=dtype)
    poison_allocator(T * K * 2, sum(sizes) * K * 2)
    with KernelWatch() as kw:
        torch_tk.linear_group(x, ws).backward(g)
    kw.assert_hopper(3)  # forward, then dX and dW
    wcat = torch.cat([w.detach() for w in ws])
    check(x.grad, g.double() @ wcat.double(), TOL[dtype], "dX")
    off = 0
    for w, s in zip(ws, sizes):
        check(w.grad, g[:, off:off + s].double().t() @ x.detach().double(), TOL[dtype], "dW")
        off += s


class _Attn(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(d, 1376, bias=False), nn.Linear(d, 1376, bias=False)
        self.down = nn.Linear(1376, d, bias=False)

    def forward(self, x):
        B, S, D = x.shape
        q, k, v = (t.view(B, S, 8, D // 8).transpose(1, 2) for t in (self.q(x), self.k(x), self.v(x)))
        h = x + self.o(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                       .transpose(1, 2).reshape(B, S, D))
        return h + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


@needs_hopper
def test_compiled_training_with_fusion_matches_float64():
    torch.manual_seed(1)
    ref = _Attn().to(DEV).double()
    model = torch_tk.patch_linear(copy.deepcopy(ref).to(torch.bfloat16), fuse_siblings=True)
    assert torch_tk.patch_report(model)["fused_groups"] == [["q", "k", "v", "o", "gate", "up"]]
    x = torch.randn(4, 250, 512, device=DEV)
    xb = x.to(torch.bfloat16).requires_grad_()
    xr = xb.detach().double().requires_grad_()
    torch._dynamo.reset()
    torch_tk.reset_group_counters()
    with KernelWatch() as kw:
        y = torch.compile(model)(xb)
        g = torch.randn_like(y)
        y.backward(g)
    kw.assert_hopper(1)
    # q/k/v and gate/up, each one forward and one backward group call, all in place
    assert torch_tk.group_counters() == {"adjacent": 4, "copied": 0}
    yr = ref(xr)
    yr.backward(g.double())
    check(y, yr, 2e-2, "output")
    check(xb.grad, xr.grad, 3e-2, "dX")
    for (n, p), (_, r) in zip(model.named_parameters(), ref.named_parameters()):
        check(p.grad, r.grad, 3e-2, n)


@needs_hopper
def test_llama_step_with_fusion_matches_stock():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=1000, max_position_embeddings=256)
    torch.manual_seed(0)
    stock = transformers.LlamaForCausalLM(cfg).to(DEV, torch.bfloat16).train()
    patched = torch_tk.patch_linear(copy.deepcopy(stock), fuse_siblings=True)
    ids = torch.randint(0, 1000, (2, 256), device=DEV)
    torch._dynamo.reset()
    torch_tk.reset_group_counters()
    losses = []
    for m in (stock, patched):
        loss = torch.compile(m)(input_ids=ids, labels=ids).loss
        loss.backward()
        losses.append(loss.item())
    assert torch_tk.group_counters() == {"adjacent": 8, "copied": 0}
    assert abs(losses[0] - losses[1]) <= 1e-2 * abs(losses[0])
    for (n, a), (_, b) in zip(stock.named_parameters(), patched.named_parameters()):
        check(b.grad, a.grad, 5e-2, n)
