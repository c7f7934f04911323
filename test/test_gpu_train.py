"""GPU training-path tests of patched models: profiler proof that the Hopper kernel (and no
cuBLAS/CUTLASS GEMM) runs forward and backward, torch.compile (inductor, reduce-overhead /
CUDA graphs), autocast, torch.export and activation checkpointing on CUDA.

Every test is marked `gpu` and skipped unless CUDA is available and torch_tk.hopper_available()
(an sm_90 GPU and a build with the sm_90a kernels).

Tolerances: relative norm ||out - ref|| / ||ref||. bf16 results are compared with the stock
bf16 path (both round to bf16) at 2e-2, with the eager patched path (same kernels) at 1e-2
(inductor may fuse the GELU with different rounding), and bitwise-deterministic paths at 1e-6.
"""

from __future__ import annotations

import copy
import re

import pytest
import torch
import torch._dynamo
import torch._dynamo.utils
from torch import nn
from torch.utils.checkpoint import checkpoint

import torch_tk
from conftest import counter_delta, counters, rel_err

HAS_CUDA = torch.cuda.is_available()
HAS_HOPPER = bool(HAS_CUDA and torch_tk._C.has_cuda_kernels and torch_tk.hopper_available())

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_HOPPER, reason="needs CUDA and the Hopper kernel (sm_90 GPU, sm_90a build)"),
]

DEV = "cuda"
BF16 = torch.bfloat16
VS_STOCK = 2e-2  # bf16 patched vs bf16 stock (independent roundings)
VS_EAGER = 1e-2  # compiled patched vs eager patched
EXACT = 1e-6     # same kernels, same inputs (deterministic)

# Substrings of vendor GEMM kernel names (cuBLAS, cuBLASLt, CUTLASS); none may appear.
_VENDOR_GEMM = ("cutlass", "xmma", "gemv", "nvjet", "cublas", "splitk", "gemmk1", "gemmsn", "s16816gemm", "s1688gemm")


@pytest.fixture(autouse=True)
def _fresh_state():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch.cuda.synchronize()
    torch._dynamo.reset()


def _check(out, ref, tol, what):
    err = rel_err(out, ref)
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.1e}"
    return err


# gemm_layout<T, OutT, XMn, YMn, BN, ...>: the two flags after the element types.
_LAYOUT_RE = re.compile(r"gemm_layout<\s*[\w:]+,\s*[\w:]+,\s*(true|false),\s*(true|false),")


def _is_tk_kernel(name):
    # the project's kernels live in namespace tk::hopper (gemm_kernel, splitk_reduce_kernel)
    return "tk::hopper::" in name


def _is_tk_gemm(name):
    return _is_tk_kernel(name) and "gemm_kernel" in name


def _is_vendor_gemm(name):
    low = name.lower()
    return not _is_tk_kernel(name) and ("gemm" in low or "matmul" in low or any(v in low for v in _VENDOR_GEMM))


def _cuda_kernel_names(prof):
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def _mlp(din=512, dh=1024, dout=256, dtype=BF16):
    return nn.Sequential(nn.Linear(din, dh), nn.GELU(), nn.Linear(dh, dout)).to(device=DEV, dtype=dtype)


def _patched_copy(model):
    m = torch_tk.patch_linear(copy.deepcopy(model))
    assert all(type(x) is torch_tk.TKLinear for x in m.modules() if isinstance(x, nn.Linear))
    return m


def _grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def _check_grads(got, ref, tol, what, dtype=None):
    assert got.keys() == ref.keys()
    for n in ref:
        if dtype is not None:
            assert got[n].dtype == dtype, f"{what} {n}: grad dtype {got[n].dtype}"
        _check(got[n], ref[n], tol, f"{what} grad {n}")


# ============================================================================ a. profiler proof


def test_profiler_linear_fwd_bwd_runs_three_tk_kernels_and_no_cublas():
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    stock = nn.Linear(1024, 768, bias=True).to(DEV, BF16)
    lin = _patched_copy(stock)
    x = torch.randn(4, 100, 1024, device=DEV, dtype=BF16, requires_grad=True)
    g = torch.randn(4, 100, 768, device=DEV, dtype=BF16)

    # warm-up outside the profiler (context, autograd device thread, allocator)
    lin(x).backward(g)
    torch.cuda.synchronize()

    steps = 2
    before = counters()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            x.grad = None
            lin.zero_grad(set_to_none=True)
            y = lin(x)
            y.backward(g)  # a given gradient: no loss reduction, the only sum is the bias grad
        torch.cuda.synchronize()
    d = counter_delta(before, counters())

    names = _cuda_kernel_names(prof)
    tk = [n for n in names if _is_tk_gemm(n)]
    vendor = [n for n in names if _is_vendor_gemm(n)]
    assert len(tk) == 3 * steps, f"expected 3 tk gemm kernels per step (fwd NT, dX NN, dW TN); got {tk}\nall: {names}"
    assert len(set(tk)) == 3, f"forward/dX/dW should be three layout instantiations of gemm_kernel: {sorted(set(tk))}"
    assert not vendor, f"cuBLAS/CUTLASS GEMM kernels ran: {vendor}"
    # The instantiation is gemm_layout<T, OutT, AMn, BMn> (AMn: A read M-contiguous, i.e. column-
    # major; BMn: B read N-contiguous, i.e. row-major). Forward x @ W.t() reads W K-major (NT),
    # dX = grad @ W reads W row-major (NN), dW = grad.t() @ x reads grad column-major (TN): all
    # three natively, so no transposed copy was made. (Checked when the names carry the args.)
    layouts = {m.groups() for m in (_LAYOUT_RE.search(n) for n in tk) if m}
    if layouts:
        assert layouts == {("false", "false"), ("false", "true"), ("true", "true")}, sorted(set(tk))
    assert d["hopper"] == 3 * steps and d["fallback"] == 0, d

    ops = {e.key: e.count for e in prof.key_averages()}
    assert ops.get("aten::sum", 0) == steps, f"bias reduction should be one aten::sum per step: {ops.get('aten::sum')}"
    used = {k for k in ("aten::mm", "aten::addmm", "aten::matmul", "aten::bmm", "aten::linear") if ops.get(k)}
    assert not used, f"aten matmul ops ran: {used}"
    # the backward's dX and dW run as one tk::linear_backward call (ops.py's autograd), which runs one
    # tk::gemm_pair (both recorded), not two tk::gemm
    tk_ops = {k: ops.get(k, 0) for k in ("tk::linear", "tk::linear_backward", "tk::gemm_pair", "tk::gemm", "tk::addmm")}
    assert tk_ops == {"tk::linear": steps, "tk::linear_backward": steps, "tk::gemm_pair": steps, "tk::gemm": 0,
                      "tk::addmm": 0}, tk_ops

    # values of the profiled (last) step vs float64 references and vs stock bf16 nn.Linear
    x64, w64, g64 = x.detach().double(), lin.weight.detach().double(), g.double().reshape(-1, 768)
    ref_y = x64 @ w64.t() + lin.bias.detach().double()
    _check(y, ref_y, 1e-2, "forward vs fp64")
    _check(lin.bias.grad, g64.sum(0), 1e-2, "bias grad vs fp64")
    _check(lin.weight.grad, g64.t() @ x64.reshape(-1, 1024), 1e-2, "weight grad vs fp64")
    _check(x.grad, (g64 @ w64).reshape(4, 100, 1024), 1e-2, "input grad vs fp64")
    xs = x.detach().clone().requires_grad_(True)
    ys = stock(xs)
    ys.backward(g)
    _check(y, ys, VS_STOCK, "forward vs stock")
    _check(lin.bias.grad, stock.bias.grad, VS_STOCK, "bias grad vs stock")
    _check(lin.weight.grad, stock.weight.grad, VS_STOCK, "weight grad vs stock")
    _check(x.grad, xs.grad, VS_STOCK, "input grad vs stock")


# ============================================================================ b. reduce-overhead (CUDA graphs)


def test_compile_reduce_overhead_inference():
    torch.manual_seed(0)
    stock = _mlp()
    model = _patched_copy(stock)
    static_x = torch.empty(8, 64, 512, device=DEV, dtype=BF16)
    cm = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    deltas = []
    with torch.no_grad():
        for i in range(5):
            static_x.copy_(torch.randn(8, 64, 512, device=DEV, dtype=BF16))  # fresh data, static address
            ref = model(static_x)
            ref_stock = stock(static_x)
            torch.compiler.cudagraph_mark_step_begin()
            before = counters()
            out = cm(static_x)
            torch.cuda.synchronize()
            deltas.append(counter_delta(before, counters()))
            assert out.shape == (8, 64, 256) and out.dtype == BF16
            _check(out, ref, VS_EAGER, f"call {i}: reduce-overhead vs eager patched")
            _check(out, ref_stock, VS_STOCK, f"call {i}: reduce-overhead vs stock")
    assert torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0) == 0, (
        "cudagraphs were skipped (rerun with TORCH_LOGS=cudagraphs for the reason)")
    assert all(d["fallback"] == 0 for d in deltas), deltas
    # warm-up/recording calls run the op's host code (counted); replays of the CUDA graph do not
    assert sum(d["hopper"] for d in deltas) >= 2, deltas
    assert deltas[-1]["hopper"] == 0, f"the last call was not a CUDA-graph replay: {deltas}"


def test_compile_reduce_overhead_train_step():
    """Compiled forward + backward under CUDA graphs, with in-place SGD updates between steps
    (the graphs read the parameters at static addresses, so they must see the new values).
    Each step is checked against the eager patched model at the same parameters: comparing two
    separately trained copies instead would measure bf16 training drift, not the compiled graph."""
    torch.manual_seed(0)
    model = _patched_copy(_mlp())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=False)
    cm = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    static_x = torch.empty(8, 64, 512, device=DEV, dtype=BF16)
    w0 = model[0].weight.detach().clone()
    for i in range(5):
        static_x.copy_(torch.randn(8, 64, 512, device=DEV, dtype=BF16))
        g = torch.randn(8, 64, 256, device=DEV, dtype=BF16)

        torch.compiler.cudagraph_mark_step_begin()
        out = cm(static_x)
        out.backward(g)
        out = out.detach().clone()
        grads = _grads(model)
        model.zero_grad(set_to_none=True)  # drop references to CUDA-graph-owned gradient memory

        ref = model(static_x)  # eager, same parameters
        ref.backward(g)
        _check(out, ref, VS_EAGER, f"step {i}: forward")
        _check_grads(grads, _grads(model), VS_EAGER, f"step {i}", dtype=BF16)

        for n, p in model.named_parameters():  # SGD step with the compiled gradients
            p.grad = grads[n]
        opt.step()
        opt.zero_grad(set_to_none=True)
    assert rel_err(model[0].weight, w0) > 0, "the parameters did not change"
    assert torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0) == 0, (
        "cudagraphs were skipped in training (rerun with TORCH_LOGS=cudagraphs for the reason)")


# ============================================================================ c. autocast on CUDA


def test_autocast_cuda_fp32_model_runs_bf16_kernel():
    torch.manual_seed(0)
    stock = _mlp(dtype=torch.float32)
    model = _patched_copy(stock)
    x = torch.randn(4, 100, 512, device=DEV)
    g = torch.randn(4, 100, 256, device=DEV, dtype=BF16)

    xs = x.clone().requires_grad_(True)
    with torch.autocast("cuda", dtype=BF16):
        ref = stock(xs)
    ref.backward(g)

    xp = x.clone().requires_grad_(True)
    before = counters()
    with torch.autocast("cuda", dtype=BF16):
        out = model(xp)
    out.backward(g)
    torch.cuda.synchronize()
    d = counter_delta(before, counters())

    assert ref.dtype == BF16 and out.dtype == BF16
    _check(out, ref, VS_STOCK, "autocast forward vs stock")
    assert d["hopper"] == 2 + 4 and d["fallback"] == 0, f"the 16-bit kernel should run every GEMM: {d}"
    for n, p in model.named_parameters():
        assert p.dtype == torch.float32, n
    _check_grads(_grads(model), _grads(stock), VS_STOCK, "autocast", dtype=torch.float32)
    assert xp.grad.dtype == torch.float32
    _check(xp.grad, xs.grad, VS_STOCK, "autocast input grad")


# ============================================================================ d. compile fullgraph + export


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_train_and_export(backend):
    torch.manual_seed(0)
    stock = _mlp()
    model = _patched_copy(stock)
    cm = torch.compile(model, backend=backend, fullgraph=True)
    for step in range(2):
        x = torch.randn(4, 100, 512, device=DEV, dtype=BF16)
        g = torch.randn(4, 100, 256, device=DEV, dtype=BF16)
        xc = x.clone().requires_grad_(True)
        model.zero_grad(set_to_none=True)
        before = counters()
        out = cm(xc)
        out.backward(g)
        torch.cuda.synchronize()
        d = counter_delta(before, counters())
        assert d["hopper"] == 2 + 4 and d["fallback"] == 0, f"step {step}: {d}"
        got = _grads(model)

        xe = x.clone().requires_grad_(True)
        model.zero_grad(set_to_none=True)
        ref = model(xe)
        ref.backward(g)
        _check(out, ref, VS_EAGER, f"step {step}: compiled vs eager forward")
        _check(xc.grad, xe.grad, VS_EAGER, f"step {step}: compiled vs eager input grad")
        _check_grads(got, _grads(model), VS_EAGER, f"step {step}: compiled vs eager")

        xs = x.clone().requires_grad_(True)
        stock.zero_grad(set_to_none=True)
        stock(xs).backward(g)
        _check(out, stock(x), VS_STOCK, f"step {step}: compiled vs stock forward")
        _check_grads(got, _grads(stock), VS_STOCK, f"step {step}: compiled vs stock")
    assert not torch._dynamo.utils.counters["graph_break"]

    # torch.export on CUDA
    x = torch.randn(4, 100, 512, device=DEV, dtype=BF16)
    ep = torch.export.export(model, (x,))
    names = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert names.count("tk.linear.default") == 2, names
    before = counters()
    with torch.no_grad():
        out = ep.module()(x)
        ref = model(x)
    torch.cuda.synchronize()
    assert counter_delta(before, counters())["hopper"] == 4  # 2 exported + 2 eager
    assert out.device.type == "cuda" and out.dtype == BF16
    _check(out, ref, EXACT, "exported vs eager patched")


# ============================================================================ e. activation checkpointing


class _Block(nn.Module):
    def __init__(self, d=512, h=1024):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class _Net(nn.Module):
    def __init__(self, ckpt):
        super().__init__()
        self.blocks = nn.ModuleList([_Block(), _Block()])
        self.ckpt = ckpt

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.ckpt else b(x)
        return x


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "inductor"])
def test_activation_checkpointing_cuda(compiled):
    torch.manual_seed(0)
    stock = _Net(ckpt=False).to(DEV, BF16)
    plain = _patched_copy(stock)
    ckpt = _patched_copy(stock)
    ckpt.ckpt = True
    x = torch.randn(4, 100, 512, device=DEV, dtype=BF16)
    g = torch.randn(4, 100, 512, device=DEV, dtype=BF16)

    xp = x.clone().requires_grad_(True)
    before = counters()
    ref = plain(xp)
    ref.backward(g)
    torch.cuda.synchronize()
    n_plain = counter_delta(before, counters())["hopper"]
    assert n_plain == 4 + 8, n_plain

    run = torch.compile(ckpt, fullgraph=True) if compiled else ckpt
    xc = x.clone().requires_grad_(True)
    before = counters()
    out = run(xc)
    out.backward(g)
    torch.cuda.synchronize()
    d = counter_delta(before, counters())
    assert d["fallback"] == 0 and d["hopper"] > n_plain, f"no recomputation through the tk kernel: {d} vs {n_plain}"

    tol = VS_EAGER if compiled else EXACT
    _check(out, ref, tol, "checkpointed forward")
    _check(xc.grad, xp.grad, tol, "checkpointed input grad")
    _check_grads(_grads(ckpt), _grads(plain), tol, "checkpointed vs not", dtype=BF16)

    xs = x.clone().requires_grad_(True)
    stock(xs).backward(g)
    _check_grads(_grads(ckpt), _grads(stock), VS_STOCK, "checkpointed vs stock")
    if compiled:
        assert not torch._dynamo.utils.counters["graph_break"]
