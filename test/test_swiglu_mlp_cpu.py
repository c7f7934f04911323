"""tk.swiglu_down_backward and tk.swiglu_mlp on the CPU reference: values and gradients against
float64 (fresh random data), errors naming the argument (eager and fake), torch.compile, and
patch_linear(fuse_mlp=True) fusing the whole MLP where down_proj is patched."""
import pytest
import torch
from torch import nn

import torch_tk
from conftest import rel_err


def _pack(g, u):
    """(*, I) gate and up -> the packed (*, 2 I) gu (128-column blocks, csrc/kittens/common/swiglu.h)."""
    lead, i = g.shape[:-1], g.shape[-1]
    return torch.stack((g.reshape(*lead, i // 128, 128), u.reshape(*lead, i // 128, 128)), dim=-2).reshape(*lead, 2 * i)


def _grads64(dy, wd, g, u):
    dh = dy.double() @ wd.double()
    g, u = g.double(), u.double()
    s = torch.sigmoid(g)
    return dh * u * s * (1 + g * (1 - s)), dh * g * s


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("lead,hidden,i", [((37,), 72, 256), ((2, 5), 33, 128), ((1,), 8, 384)])
def test_down_backward_against_float64(dtype, lead, hidden, i):
    dy, wd = torch.randn(*lead, hidden, dtype=dtype), torch.randn(hidden, i, dtype=dtype)
    g, u = torch.randn(*lead, i, dtype=dtype) * 3, torch.randn(*lead, i, dtype=dtype)
    d_g, d_u = torch_tk.swiglu_down_backward(dy, wd, _pack(g, u))
    assert d_g.shape == d_u.shape == (*lead, i) and d_g.dtype == d_u.dtype == dtype
    assert d_g.is_contiguous() and d_u.is_contiguous()
    r_g, r_u = _grads64(dy, wd, g, u)
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2}[dtype]
    assert rel_err(d_g, r_g) < tol and rel_err(d_u, r_u) < tol


def test_down_backward_empty_and_zero_hidden():
    d_g, d_u = torch_tk.swiglu_down_backward(torch.randn(0, 8), torch.randn(8, 128), torch.randn(0, 256))
    assert d_g.shape == d_u.shape == (0, 128)
    d_g, d_u = torch_tk.swiglu_down_backward(torch.randn(3, 0), torch.randn(0, 128), torch.randn(3, 256))
    assert bool((d_g == 0).all()) and bool((d_u == 0).all())


@pytest.mark.parametrize("args,exc,word", [
    ((torch.randn(4, 8), torch.randn(8, 100), torch.randn(4, 200)), ValueError, "multiple of 128"),
    ((torch.randn(4, 8), torch.randn(9, 128), torch.randn(4, 256)), ValueError, "down_weight"),
    ((torch.randn(4, 8), torch.randn(8, 128), torch.randn(4, 128)), ValueError, "gu"),
    ((torch.randn(4, 8), torch.randn(8, 128).double(), torch.randn(4, 256)), TypeError, "down_weight"),
    ((torch.randn(4, 8), torch.randn(8, 128), torch.randn(4, 256).half()), TypeError, "gu"),
    ((torch.randn(4, 8).int(), torch.randn(8, 128), torch.randn(4, 256)), TypeError, "grad_output"),
    ((torch.randn(4, 8), torch.randn(8, 128, 1), torch.randn(4, 256)), ValueError, "down_weight"),
])
def test_down_backward_errors_name_the_argument(args, exc, word):
    with pytest.raises(exc, match=word):
        torch_tk.swiglu_down_backward(*args)
    with pytest.raises(exc, match=word):  # the fake raises alike (compiled code)
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            torch_tk.swiglu_down_backward(*(mode.from_tensor(a) for a in args))


@pytest.mark.parametrize("args,exc,word", [
    ((torch.randn(4, 8), torch.randn(128, 8), torch.randn(128, 8), torch.randn(8, 256)), ValueError, "down_weight"),
    ((torch.randn(4, 8), torch.randn(128, 8), torch.randn(128, 8), torch.randn(8, 128).double()), TypeError,
     "down_weight"),
    ((torch.randn(4, 8), torch.randn(128, 8), torch.randn(128, 8), torch.randn(128)), ValueError, "down_weight"),
    ((torch.randn(4, 8), torch.randn(100, 8), torch.randn(100, 8), torch.randn(8, 100)), ValueError, "multiple of 128"),
])
def test_mlp_errors_name_the_argument(args, exc, word):
    with pytest.raises(exc, match=word):
        torch_tk.swiglu_mlp(*args)
    with pytest.raises(exc, match=word):
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            torch_tk.swiglu_mlp(*(mode.from_tensor(a) for a in args))


def _mlp64(x, wg, wu, wd):
    g, u = x @ wg.t(), x @ wu.t()
    h = nn.functional.silu(g) * u
    return h @ wd.t(), g, u, h


@pytest.mark.parametrize("use_aux", [False, True])
def test_mlp_values_and_gradients_against_float64(use_aux):
    """All four gradients; with use_aux the op's gu and h outputs feed the loss too (their
    gradients join the one through dy)."""
    x = torch.randn(3, 11, 40, requires_grad=True)
    wg, wu = torch.randn(256, 40, requires_grad=True), torch.randn(256, 40, requires_grad=True)
    wd = torch.randn(24, 256, requires_grad=True)
    r_y, r_gu, r_h = (torch.randn(3, 11, n, dtype=torch.float64) for n in (24, 512, 256))
    y, gu, h = torch.ops.tk.swiglu_mlp(x, wg, wu, wd)
    assert rel_err(y, torch_tk.swiglu_mlp(x, wg, wu, wd)) == 0
    loss = (y.double() * r_y).sum() + (((gu.double() * r_gu).sum() + (h.double() * r_h).sum()) if use_aux else 0)
    loss.backward()
    leaves = [t.detach().double().requires_grad_() for t in (x, wg, wu, wd)]
    y64, g64, u64, h64 = _mlp64(*leaves)
    assert rel_err(y, y64) < 1e-5
    loss64 = (y64 * r_y).sum()
    if use_aux:
        loss64 = loss64 + (_pack(g64, u64) * r_gu).sum() + (h64 * r_h).sum()
    loss64.backward()
    for got, ref in zip((x.grad, wg.grad, wu.grad, wd.grad), (t.grad for t in leaves)):
        assert rel_err(got, ref) < 1e-5


def test_mlp_only_down_weight_needs_grad():
    x, wg, wu = torch.randn(5, 16), torch.randn(128, 16), torch.randn(128, 16)
    wd = torch.randn(16, 128, requires_grad=True)
    torch_tk.swiglu_mlp(x, wg, wu, wd).sum().backward()
    leaves = [t.double().requires_grad_() for t in (x, wg, wu, wd.detach())]
    _mlp64(*leaves)[0].sum().backward()
    assert rel_err(wd.grad, leaves[3].grad) < 1e-5


def test_mlp_compiled_forward_backward():
    x = torch.randn(19, 24, requires_grad=True)
    ws = [torch.randn(128, 24, requires_grad=True), torch.randn(128, 24, requires_grad=True),
          torch.randn(24, 128, requires_grad=True)]

    def f(x, wg, wu, wd):
        return torch_tk.swiglu_mlp(x, wg, wu, wd).square().sum()

    f(x, *ws).backward()
    eager = [t.grad.clone() for t in (x, *ws)]
    for t in (x, *ws):
        t.grad = None
    torch.compile(f, fullgraph=True)(x, *ws).backward()
    for got, ref in zip((x.grad, *(w.grad for w in ws)), eager):
        assert rel_err(got, ref) < 1e-5


class LlamaMLP(nn.Module):  # transformers' form (its class name is how patch_linear recognises it)
    def __init__(self, d, i, down_bias=False):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(d, i, bias=False), nn.Linear(d, i, bias=False)
        self.down_proj = nn.Linear(i, d, bias=down_bias)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def test_patch_linear_fuses_whole_mlps():
    """down_proj patched, no bias: the whole MLP (tk.swiglu_mlp); with a bias or down_proj
    excluded: gate / up only. Outputs and gradients as the stock model's."""
    torch.manual_seed(1)
    model = nn.Sequential(LlamaMLP(32, 256), LlamaMLP(32, 128, down_bias=True), LlamaMLP(32, 128))
    ref_model = nn.Sequential(*(LlamaMLP(32, m.gate_proj.out_features, m.down_proj.bias is not None) for m in model))
    ref_model.load_state_dict(model.state_dict())
    torch_tk.patch_linear(model, fuse_mlp=True, exclude=["2.down_proj"])
    rep = torch_tk.patch_report(model)
    assert rep["fused_mlp"] == ["0", "1", "2"] and rep["fused_mlp_backward"] == ["0"]
    assert [type(m).__name__ for m in model] == ["TKLlamaMLPWhole", "TKLlamaMLP", "TKLlamaMLP"]
    x = torch.randn(2, 7, 32)
    out, ref = model(x), ref_model(x)
    assert rel_err(out, ref) < 1e-5
    r = torch.randn_like(ref)
    (out * r).sum().backward()
    (ref * r).sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters()):
        assert rel_err(p.grad, q.grad) < 1e-5, name
    again = torch_tk.patch_linear(model, fuse_mlp=True, exclude=["2.down_proj"])  # idempotent
    assert torch_tk.patch_report(again)["fused_mlp_backward"] == ["0"]
    torch_tk.unpatch_linear(model)
    assert all(type(m) is LlamaMLP for m in model)


def test_python_reference_matches_the_op():
    """The reference that builds without CUDA kernels give CUDA tensors agrees with the C++ one."""
    from torch_tk import swiglu
    dy, wd = torch.randn(2, 9, 40, dtype=torch.float64), torch.randn(40, 256, dtype=torch.float64)
    gu = torch.randn(2, 9, 512, dtype=torch.float64)
    for got, ref in zip(swiglu._reference_down_backward(dy, wd, gu), torch_tk.swiglu_down_backward(dy, wd, gu)):
        assert got.shape == ref.shape and rel_err(got, ref) < 1e-12


def test_autocast_casts_to_the_autocast_dtype():
    """Under autocast (CPU, bf16) both ops see bf16 operands (csrc/autocast.cpp) and return bf16; the
    fp32 leaves get fp32 gradients, close to float64's at bf16 accuracy."""
    x = torch.randn(6, 40, requires_grad=True)
    ws = [torch.randn(128, 40, requires_grad=True), torch.randn(128, 40, requires_grad=True),
          torch.randn(24, 128, requires_grad=True)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch_tk.swiglu_mlp(x, *ws)
        d_g, d_u = torch_tk.swiglu_down_backward(torch.randn(6, 24), ws[2].detach(), torch.randn(6, 256))
    assert y.dtype == d_g.dtype == d_u.dtype == torch.bfloat16
    r = torch.randn(6, 24, dtype=torch.float64)
    (y.double() * r).sum().backward()
    leaves = [t.detach().double().requires_grad_() for t in (x, *ws)]
    y64 = _mlp64(*leaves)[0]
    (y64 * r).sum().backward()
    assert rel_err(y, y64) < 3e-2
    for got, ref in zip((x.grad, *(w.grad for w in ws)), (t.grad for t in leaves)):
        assert got.dtype == torch.float32 and rel_err(got, ref) < 5e-2


@pytest.mark.parametrize("whole", [True, False])
def test_compiled_step_has_no_activation_kernel_when_whole(whole):
    """Compiled forward + backward of a fused MLP (CPU Inductor): with the whole MLP fused no generated
    kernel computes the activation or its gradient (silu / sigmoid: they live in the tk ops); with
    gate / up fused only, the backward's activation gradient is an Inductor kernel (sigmoid)."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    model = nn.Sequential(LlamaMLP(32, 256))
    torch_tk.patch_linear(model, fuse_mlp=True, exclude=[] if whole else ["0.down_proj"])
    assert torch_tk.patch_report(model)["fused_mlp_backward"] == (["0"] if whole else [])
    compiled = torch.compile(model)
    x = torch.randn(3, 5, 32, requires_grad=True)

    def step():
        compiled(x).square().sum().backward()

    _, codes = run_and_get_code(step)
    text = "\n".join(codes).lower()
    assert ("sigmoid" in text) != whole
    assert "silu" not in text or not whole
