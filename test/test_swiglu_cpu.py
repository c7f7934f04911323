"""tk.linear_swiglu on the CPU reference: the packed gate | up layout (one statement in
csrc/kittens/common/swiglu.h, read by torch_tk/swiglu.py), values and gradients against float64,
errors, torch.compile, and patch_linear(fuse_mlp=True) on a SwiGLU MLP."""
import pytest
import torch
from torch import nn

import torch_tk
from torch_tk import _C
from conftest import rel_err


def _ref64(x, wg, wu):
    x, wg, wu = x.double(), wg.double(), wu.double()
    g, u = x @ wg.t(), x @ wu.t()
    return g, u, nn.functional.silu(g) * u


def test_packed_layout_matches_the_kernels_rule():
    """gate_up_views reads exactly the columns swiglu_packed_col names; the epilogue's register
    pairing (swiglu_up_reg) is the +128-column partner in the wgmma accumulator layout."""
    i = 384
    gu = torch.arange(2 * i, dtype=torch.float64).view(1, 2 * i)
    g, u = torch_tk.gate_up_views(gu)
    g, u = g.reshape(-1), u.reshape(-1)
    for f in range(i):
        assert g[f] == _C.swiglu_packed_col(f, False)
        assert u[f] == _C.swiglu_packed_col(f, True)
    for t in range(128):
        for r in range(64):
            row, col = _C.wgmma_acc_coord(t, r)
            row2, col2 = _C.wgmma_acc_coord(t, _C.swiglu_up_reg(r))
            assert (row2, col2) == (row, col + 128) and col < 128


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("lead,k,i", [((37,), 72, 256), ((2, 5), 33, 128), ((1,), 8, 384)])
def test_values_against_float64(dtype, lead, k, i):
    x = torch.randn(*lead, k, dtype=dtype)
    wg, wu = torch.randn(i, k, dtype=dtype), torch.randn(i, k, dtype=dtype)
    gu, h = torch_tk.linear_swiglu(x, wg, wu)
    assert gu.shape == (*lead, 2 * i) and h.shape == (*lead, i) and gu.dtype == h.dtype == dtype
    g64, u64, h64 = _ref64(x, wg, wu)
    g, u = torch_tk.gate_up_views(gu)
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2}[dtype]
    assert rel_err(g.reshape(g64.shape), g64) < tol
    assert rel_err(u.reshape(u64.shape), u64) < tol
    assert rel_err(h, h64) < tol


def test_empty_and_zero_k():
    gu, h = torch_tk.linear_swiglu(torch.randn(0, 8), torch.randn(128, 8), torch.randn(128, 8))
    assert gu.shape == (0, 256) and h.shape == (0, 128)
    gu, h = torch_tk.linear_swiglu(torch.randn(3, 0), torch.randn(128, 0), torch.randn(128, 0))
    assert bool((gu == 0).all()) and bool((h == 0).all())


@pytest.mark.parametrize("args,exc,word", [
    ((torch.randn(4, 8), torch.randn(100, 8), torch.randn(100, 8)), ValueError, "multiple of 128"),
    ((torch.randn(4, 8), torch.randn(128, 8), torch.randn(256, 8)), ValueError, "up_weight"),
    ((torch.randn(4, 8), torch.randn(128, 9), torch.randn(128, 8)), ValueError, "gate_weight"),
    ((torch.randn(4, 8), torch.randn(128, 8).double(), torch.randn(128, 8)), TypeError, "gate_weight"),
    ((torch.randn(4, 8), torch.randn(128, 8), torch.randn(128, 8, 1)), ValueError, "up_weight"),
    ((torch.randn(4, 8).int(), torch.randn(128, 8), torch.randn(128, 8)), TypeError, "input"),
])
def test_errors_name_the_argument(args, exc, word):
    with pytest.raises(exc, match=word):
        torch_tk.linear_swiglu(*args)
    with pytest.raises(exc, match=word):  # the fake raises alike (compiled code)
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            torch_tk.linear_swiglu(*(mode.from_tensor(a) for a in args))


@pytest.mark.parametrize("use_gu", [False, True])
def test_gradients_against_float64(use_gu):
    x = torch.randn(3, 11, 40, requires_grad=True)
    wg = torch.randn(256, 40, requires_grad=True)
    wu = torch.randn(256, 40, requires_grad=True)
    r_h, r_gu = torch.randn(3, 11, 256, dtype=torch.float64), torch.randn(3, 11, 512, dtype=torch.float64)
    gu, h = torch_tk.linear_swiglu(x, wg, wu)
    loss = (h.double() * r_h).sum() + ((gu.double() * r_gu).sum() if use_gu else 0)
    loss.backward()
    x64, wg64, wu64 = (t.detach().double().requires_grad_() for t in (x, wg, wu))
    g, u, h64 = _ref64(x64, wg64, wu64)
    loss64 = (h64 * r_h).sum()
    if use_gu:
        gu64 = torch.stack((g.view(3, 11, 2, 128), u.view(3, 11, 2, 128)), dim=3).reshape(3, 11, 512)
        loss64 = loss64 + (gu64 * r_gu).sum()
    loss64.backward()
    for got, ref in ((x.grad, x64.grad), (wg.grad, wg64.grad), (wu.grad, wu64.grad)):
        assert rel_err(got, ref) < 1e-5


def test_compiled_forward_backward():
    x = torch.randn(19, 24, requires_grad=True)
    wg, wu = torch.randn(128, 24, requires_grad=True), torch.randn(128, 24, requires_grad=True)

    def f(x, wg, wu):
        return torch_tk.linear_swiglu(x, wg, wu)[1].square().sum()

    f(x, wg, wu).backward()
    eager = [t.grad.clone() for t in (x, wg, wu)]
    for t in (x, wg, wu):
        t.grad = None
    torch.compile(f, fullgraph=True)(x, wg, wu).backward()
    for got, ref in zip((x.grad, wg.grad, wu.grad), eager):
        assert rel_err(got, ref) < 1e-5


class LlamaMLP(nn.Module):  # transformers' form (its class name is how patch_linear recognises it)
    def __init__(self, d, i, act=None):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(d, i, bias=False), nn.Linear(d, i, bias=False)
        self.down_proj = nn.Linear(i, d, bias=False)
        self.act_fn = act or nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def test_patch_linear_fuses_swiglu_mlps():
    model = nn.Sequential(LlamaMLP(32, 256), LlamaMLP(32, 200), LlamaMLP(32, 128, act=nn.GELU()))
    x = torch.randn(5, 32)
    ref = model(x)
    keys = list(model.state_dict())
    params = [id(p) for p in model.parameters()]
    torch_tk.patch_linear(model, fuse_mlp=True)
    rep = torch_tk.patch_report(model)
    assert rep["fused_mlp"] == ["0"]
    assert "multiple of 128" in rep["skipped"]["1"] and "SiLU" in rep["skipped"]["2"]
    assert isinstance(model[0], LlamaMLP) and type(model[0]).__name__ == "TKLlamaMLPWhole"
    assert list(model.state_dict()) == keys and [id(p) for p in model.parameters()] == params
    before = torch_tk.kernel_counters()["cpu"]
    out = model(x)
    assert torch_tk.kernel_counters()["cpu"] > before
    assert rel_err(out, ref) < 1e-5
    out.square().sum().backward()
    assert all(p.grad is not None for p in model[0].parameters())
    torch_tk.unpatch_linear(model)
    assert type(model[0]) is LlamaMLP and type(model[0].gate_proj) is nn.Linear


def test_fuse_mlp_follows_patch_filters():
    model = nn.Sequential(LlamaMLP(16, 128))
    torch_tk.patch_linear(model, fuse_mlp=True, exclude=["0.up_proj"])
    rep = torch_tk.patch_report(model)
    assert rep["fused_mlp"] == [] and "not patched" in rep["skipped"]["0"]
    assert type(model[0]) is LlamaMLP


def test_transformers_llama_mlps_fuse():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=100, max_position_embeddings=32)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 100, (2, 16))
    ref = model(ids).logits
    torch_tk.patch_linear(model, fuse_mlp=True)
    rep = torch_tk.patch_report(model)
    assert rep["fused_mlp"] == ["model.layers.0.mlp", "model.layers.1.mlp"], rep["skipped"]
    assert rel_err(model(ids).logits, ref) < 1e-5


def test_python_reference_matches_the_op():
    """The reference that builds without CUDA kernels give CUDA tensors (torch_tk/swiglu.py) agrees
    with the C++ one (float64, to rounding)."""
    from torch_tk import swiglu
    x, wg, wu = torch.randn(2, 9, 40, dtype=torch.float64), torch.randn(256, 40, dtype=torch.float64), \
        torch.randn(256, 40, dtype=torch.float64)
    for got, ref in zip(swiglu._reference(x, wg, wu), torch_tk.linear_swiglu(x, wg, wu)):
        assert got.shape == ref.shape and rel_err(got, ref) < 1e-12


@pytest.mark.parametrize("call,exc,word", [
    (lambda: torch_tk.gate_up_views(torch.randn(4, 100)), ValueError, "gate_up_views: `gu`"),
    (lambda: torch_tk.gate_up_views(torch.tensor(1.0)), ValueError, "gate_up_views: `gu`"),
    (lambda: torch_tk.swiglu_grads(torch.randn(4, 128), torch.randn(4, 128)), ValueError, "gate_up_views: `gu`"),
    (lambda: torch_tk.swiglu_grads(torch.randn(4, 64), torch.randn(4, 256)), ValueError, "swiglu_grads: `d_h`"),
    (lambda: torch_tk.swiglu_grads(torch.randn(3, 128), torch.randn(4, 256)), ValueError, "swiglu_grads: `d_h`"),
    (lambda: torch_tk.swiglu_grads(torch.ones(4, 128, dtype=torch.int32), torch.randn(4, 256)), TypeError,
     "swiglu_grads: `d_h`"),
])
def test_helpers_name_the_argument(call, exc, word):
    with pytest.raises(exc, match=word):
        call()
