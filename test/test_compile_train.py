"""Training-path tests of patched models on CPU: torch.compile (graphs, dynamic shapes),
activation checkpointing, torch.export, autocast, no_grad / inference_mode.

Backends: "aot_eager" everywhere (it runs the same Dynamo + AOTAutograd tracing that inductor
does, so it checks the fake impls and autograd formulas, without compiling C++). Inductor on CPU
is covered by test_compile_cpu.py::test_compile_inductor_cpu and, for the patched training
path with dynamic shapes, by the single inductor test at the end of this file.

Expected graphs are written with expecttest: after an intended change, regenerate them with
    EXPECTTEST_ACCEPT=1 python3 -m pytest test/test_compile_train.py -k expected
"""

from __future__ import annotations

import copy
import io

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
import torch._dynamo.utils
from expecttest import assert_expected_inline
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.utils.checkpoint import checkpoint

import torch_tk
from conftest import assert_close_rel, counter_delta, counters

FP32_TOL = 1e-5
BF16_TOL = 1e-2


@pytest.fixture(autouse=True)
def _reset_dynamo():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()


# ============================================================================ helpers


def _mlp(seed=0, din=16, dh=32, dout=8):
    """The stock 2-layer MLP (fixed seed so that printed graphs and values are reproducible)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(din, dh), nn.GELU(), nn.Linear(dh, dout))


def _patched_copy(model):
    m = torch_tk.patch_linear(copy.deepcopy(model))
    assert all(type(x) is torch_tk.TKLinear for x in m.modules() if isinstance(x, nn.Linear))
    return m


def _names(gm):
    """call_function targets of a graph, as strings, in order."""
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _readable(gm):
    """gm's printed graph without comment lines (they hold absolute source paths) or blank lines."""
    text = gm.print_readable(print_output=False)
    lines = [ln.rstrip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    return "\n".join(lines) + "\n"


class GraphRecorder:
    """A backend recording Dynamo's graph(s) and the AOTAutograd forward/backward graphs it
    hands to the (eager, boxed) compilers; use ``.backend`` with torch.compile."""

    def __init__(self):
        self.dynamo, self.fw, self.bw = [], [], []

        def fw_compiler(gm, example_inputs):
            self.fw.append(gm)
            return make_boxed_func(gm.forward)

        def bw_compiler(gm, example_inputs):
            self.bw.append(gm)
            return make_boxed_func(gm.forward)

        aot = aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler)

        def backend(gm, example_inputs):
            self.dynamo.append(gm)
            return aot(gm, example_inputs)

        self.backend = backend


def _grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def _assert_grads_close(got, ref, tol, what):
    assert got.keys() == ref.keys()
    for n in ref:
        assert got[n].dtype == ref[n].dtype, f"{what} {n}: dtype {got[n].dtype} vs {ref[n].dtype}"
        assert_close_rel(got[n], ref[n], tol, f"{what} grad {n}")


# ============================================================================ a. fullgraph fwd+bwd, printed graphs


def test_compile_fullgraph_train_no_graph_breaks_and_matches_stock():
    stock = _mlp()
    model = _patched_copy(stock)
    x = torch.randn(4, 16)
    g = torch.randn(4, 8)

    stock(x).backward(g)
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    cm = torch.compile(model, backend=cnt, fullgraph=True)
    before = counters()
    out = cm(x)
    out.backward(g)
    d = counter_delta(before, counters())
    assert cnt.frame_count == 1
    assert not torch._dynamo.utils.counters["graph_break"], dict(torch._dynamo.utils.counters["graph_break"])
    assert_close_rel(out, stock(x), FP32_TOL, "compiled forward")
    _assert_grads_close(_grads(model), _grads(stock), FP32_TOL, "compiled")
    # 2 forward linears + backward: dW of both layers and dX of the second (x needs no grad)
    assert d["cpu"] == 5, d

    torch._dynamo.reset()
    ex = torch._dynamo.explain(model)(x)
    assert ex.graph_break_count == 0, ex.break_reasons
    assert ex.graph_count == 1


def test_compile_fullgraph_train_expected_graphs():
    model = _patched_copy(_mlp())
    rec = GraphRecorder()
    cm = torch.compile(model, backend=rec.backend, fullgraph=True)
    x = torch.randn(4, 16)  # training data: needs no grad, so no dX for the first layer
    cm(x).backward(torch.randn(4, 8))
    assert len(rec.dynamo) == 1 and len(rec.fw) == 1 and len(rec.bw) == 1
    assert not torch._dynamo.utils.counters["graph_break"]

    # forward: tk.linear only; backward: tk ops only -- the last layer's dX (NN: grad @ W) and dW
    # (TN: grad.t() @ X) in one tk.linear_backward, the first layer's dW alone (its input needs no
    # grad) as tk.gemm -- bias grads as sums, and no aten matmul anywhere.
    fw, bw = _names(rec.fw[0]), _names(rec.bw[0])
    assert fw.count("tk.linear.default") == 2
    assert bw.count("tk.linear_backward.default") == 1 and bw.count("tk.gemm.default") == 1
    mm = {"aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.matmul.default", "aten.linear.default"}
    assert not mm & set(fw + bw), (fw, bw)

    assert_expected_inline(_readable(rec.dynamo[0]), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_fn_modules_0_parameters_weight_: "f32[32, 16]", L_fn_modules_0_parameters_bias_: "f32[32]", L_args_0_: "f32[4, 16]", L_fn_modules_2_parameters_weight_: "f32[8, 32]", L_fn_modules_2_parameters_bias_: "f32[8]"):
        l_fn_modules_0_parameters_weight_ = L_fn_modules_0_parameters_weight_
        l_fn_modules_0_parameters_bias_ = L_fn_modules_0_parameters_bias_
        l_args_0_ = L_args_0_
        l_fn_modules_2_parameters_weight_ = L_fn_modules_2_parameters_weight_
        l_fn_modules_2_parameters_bias_ = L_fn_modules_2_parameters_bias_
        input_1: "f32[4, 32]" = torch.ops.tk.linear(l_args_0_, l_fn_modules_0_parameters_weight_, l_fn_modules_0_parameters_bias_);  l_args_0_ = l_fn_modules_0_parameters_weight_ = l_fn_modules_0_parameters_bias_ = None
        input_2: "f32[4, 32]" = torch._C._nn.gelu(input_1, approximate = 'none');  input_1 = None
        input_3: "f32[4, 8]" = torch.ops.tk.linear(input_2, l_fn_modules_2_parameters_weight_, l_fn_modules_2_parameters_bias_);  input_2 = l_fn_modules_2_parameters_weight_ = l_fn_modules_2_parameters_bias_ = None
        return (input_3,)
""")
    assert_expected_inline(_readable(rec.fw[0]), """\
class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[32, 16]", primals_2: "f32[32]", primals_3: "f32[4, 16]", primals_4: "f32[8, 32]", primals_5: "f32[8]"):
        linear: "f32[4, 32]" = torch.ops.tk.linear.default(primals_3, primals_1, primals_2);  primals_1 = primals_2 = None
        gelu: "f32[4, 32]" = torch.ops.aten.gelu.default(linear)
        linear_1: "f32[4, 8]" = torch.ops.tk.linear.default(gelu, primals_4, primals_5);  primals_5 = None
        return (linear_1, primals_3, primals_4, linear, gelu)
""")
    assert_expected_inline(_readable(rec.bw[0]), """\
class GraphModule(torch.nn.Module):
    def forward(self, primals_3: "f32[4, 16]", primals_4: "f32[8, 32]", linear: "f32[4, 32]", gelu: "f32[4, 32]", tangents_1: "f32[4, 8]"):
        view: "f32[4, 8]" = torch.ops.aten.view.default(tangents_1, [-1, 8]);  tangents_1 = None
        view_1: "f32[4, 32]" = torch.ops.aten.view.default(gelu, [-1, 32]);  gelu = None
        linear_backward = torch.ops.tk.linear_backward.default(view, primals_4, view_1);  primals_4 = view_1 = None
        getitem: "f32[4, 32]" = linear_backward[0]
        getitem_1: "f32[8, 32]" = linear_backward[1];  linear_backward = None
        view_2: "f32[4, 32]" = torch.ops.aten.view.default(getitem, [4, 32]);  getitem = None
        sum_1: "f32[8]" = torch.ops.aten.sum.dim_IntList(view, [0]);  view = None
        gelu_backward: "f32[4, 32]" = torch.ops.aten.gelu_backward.default(view_2, linear);  view_2 = linear = None
        view_3: "f32[4, 32]" = torch.ops.aten.view.default(gelu_backward, [-1, 32]);  gelu_backward = None
        view_4: "f32[4, 16]" = torch.ops.aten.view.default(primals_3, [-1, 16]);  primals_3 = None
        t: "f32[32, 4]" = torch.ops.aten.t.default(view_3)
        gemm: "f32[32, 16]" = torch.ops.tk.gemm.default(t, view_4);  t = view_4 = None
        sum_2: "f32[32]" = torch.ops.aten.sum.dim_IntList(view_3, [0]);  view_3 = None
        return (gemm, sum_2, None, getitem_1, sum_1)
""")


# ============================================================================ b. dynamic shapes


_SIZES = [(2, 3), (4, 5), (3, 7), (5, 2), (7, 4)]


@pytest.mark.parametrize("mode", ["dynamic_true", "mark_dynamic", "automatic"])
def test_compile_dynamic_batch_and_seq(mode):
    stock = _mlp()
    model = _patched_copy(stock)
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    kwargs = {"dynamic": True} if mode == "dynamic_true" else {}
    cm = torch.compile(model, backend=cnt, fullgraph=True, **kwargs)

    def step(B, S, mark):
        x = torch.randn(B, S, 16, requires_grad=True)
        if mark:
            torch._dynamo.mark_dynamic(x, 0)
            torch._dynamo.mark_dynamic(x, 1)
        g = torch.randn(B, S, 8)
        model.zero_grad(set_to_none=True)
        out = cm(x)
        out.backward(g)
        got = (out.detach(), x.grad.clone(), _grads(model))
        xs = x.detach().clone().requires_grad_(True)
        stock.zero_grad(set_to_none=True)
        ref = stock(xs)
        ref.backward(g)
        assert out.shape == (B, S, 8)
        assert_close_rel(got[0], ref, FP32_TOL, f"forward {(B, S)}")
        assert_close_rel(got[1], xs.grad, FP32_TOL, f"input grad {(B, S)}")
        _assert_grads_close(got[2], _grads(stock), FP32_TOL, f"{(B, S)}")

    for B, S in _SIZES[:4]:
        step(B, S, mode == "mark_dynamic")
    if mode == "automatic":
        assert cnt.frame_count <= 2, f"{cnt.frame_count} compiles (automatic dynamic allows one recompile)"
    else:
        assert cnt.frame_count == 1, f"{cnt.frame_count} compiles with {mode}"
    frames = cnt.frame_count

    # after warm-up a fresh (B, S) must run without any recompilation
    with torch.compiler.set_stance("fail_on_recompile"):
        step(*_SIZES[4], mark=False)
    assert cnt.frame_count == frames
    assert not torch._dynamo.utils.counters["graph_break"]


# ============================================================================ c. activation checkpointing


class _Block(nn.Module):
    def __init__(self, d=16, h=32):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class _Net(nn.Module):
    def __init__(self, ckpt):
        super().__init__()
        self.block = _Block()
        self.head = nn.Linear(16, 4)
        self.ckpt = ckpt

    def forward(self, x):
        h = checkpoint(self.block, x, use_reentrant=False) if self.ckpt else self.block(x)
        return self.head(h)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_activation_checkpointing_matches_stock(compiled):
    torch.manual_seed(1)
    stock = _Net(ckpt=False)
    plain = _patched_copy(stock)
    ckpt = _patched_copy(stock)
    ckpt.ckpt = True
    x = torch.randn(3, 5, 16)
    g = torch.randn(3, 5, 4)

    xs = x.clone().requires_grad_(True)
    stock(xs).backward(g)
    ref = _grads(stock)

    before = counters()
    plain(x.clone().requires_grad_(True)).backward(g)
    n_plain = counter_delta(before, counters())["cpu"]
    assert n_plain == 3 + 6  # 3 forward linears, dX + dW of each in backward

    rec = GraphRecorder()
    run = torch.compile(ckpt, backend=rec.backend, fullgraph=True) if compiled else ckpt
    xc = x.clone().requires_grad_(True)
    before = counters()
    out = run(xc)
    out.backward(g)
    n_ckpt = counter_delta(before, counters())["cpu"]

    assert_close_rel(out, stock(x), FP32_TOL, "checkpointed forward")
    assert_close_rel(xc.grad, xs.grad, FP32_TOL, "checkpointed input grad")
    _assert_grads_close(_grads(ckpt), ref, FP32_TOL, "checkpointed")
    # the tk ops ran, and the checkpointed block's forward was recomputed in backward
    assert n_ckpt > n_plain, (n_ckpt, n_plain)
    if compiled:
        assert not torch._dynamo.utils.counters["graph_break"]
        bw = _names(rec.bw[0])
        assert "tk.linear.default" in bw, f"no recomputation in the compiled backward: {bw}"
        assert "tk.linear_backward.default" in bw  # dX and dW of each linear side by side


# ============================================================================ d. torch.export


def test_export_patched_mlp_static():
    stock = _mlp()
    model = _patched_copy(stock)
    x = torch.randn(4, 16)
    ep = torch.export.export(model, (x,))
    names = _names(ep.graph_module)
    assert names.count("tk.linear.default") == 2, names
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.tk.linear.default in targets
    assert "aten.linear.default" not in names and "aten.addmm.default" not in names

    xn = torch.randn(4, 16)
    out = ep.module()(xn)
    assert_close_rel(out, model(xn), FP32_TOL, "exported vs patched")
    assert_close_rel(out, stock(xn), FP32_TOL, "exported vs stock")

    # save/load round trip (the tk ops must resolve on load) and decompositions keep tk.linear
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    loaded = torch.export.load(buf)
    assert_close_rel(loaded.module()(xn), stock(xn), FP32_TOL, "loaded export")
    assert _names(ep.run_decompositions().graph_module).count("tk.linear.default") == 2


def test_export_patched_mlp_dynamic_batch():
    stock = _mlp()
    model = _patched_copy(stock)
    batch = torch.export.Dim("batch", min=2, max=1024)
    ep = torch.export.export(model, (torch.randn(4, 5, 16),), dynamic_shapes={"input": {0: batch}})
    assert _names(ep.graph_module).count("tk.linear.default") == 2
    m = ep.module()
    for B in (2, 3, 9, 33):
        x = torch.randn(B, 5, 16)
        out = m(x)
        assert out.shape == (B, 5, 8)
        assert_close_rel(out, model(x), FP32_TOL, f"exported vs patched B={B}")
        assert_close_rel(out, stock(x), FP32_TOL, f"exported vs stock B={B}")
    with pytest.raises(Exception):
        m(torch.randn(3, 6, 16))  # the seq dim was exported static


# ============================================================================ e. autocast, no_grad, inference_mode


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_autocast_cpu_bf16_matches_stock(compiled):
    stock = _mlp()
    model = _patched_copy(stock)
    x = torch.randn(6, 16)
    g = torch.randn(6, 8)

    def fwd(m, inp):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return m(inp)

    xs = x.clone().requires_grad_(True)
    ref = fwd(stock, xs)
    ref.backward(g.to(ref.dtype))
    assert ref.dtype == torch.bfloat16

    rec = GraphRecorder()
    f = torch.compile(fwd, backend=rec.backend, fullgraph=True) if compiled else fwd
    xp = x.clone().requires_grad_(True)
    before = counters()
    out = f(model, xp)
    out.backward(g.to(out.dtype))
    d = counter_delta(before, counters())

    assert out.dtype == torch.bfloat16
    assert_close_rel(out, ref, BF16_TOL, "autocast forward")
    assert d["cpu"] == 2 + 4, d  # the tk ops ran (forward 2, backward dX + dW of each layer)
    for n, p in model.named_parameters():
        assert p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32, n
    _assert_grads_close(_grads(model), _grads(stock), BF16_TOL, "autocast")
    assert xp.grad.dtype == torch.float32
    assert_close_rel(xp.grad, xs.grad, BF16_TOL, "autocast input grad")

    if compiled:
        assert not torch._dynamo.utils.counters["graph_break"]
        fw = rec.fw[0]
        lin = [n for n in fw.graph.nodes if str(n.target) == "tk.linear.default"]
        assert len(lin) == 2
        for n in lin:  # the autocast casts were traced: tk.linear sees bf16 operands
            assert n.meta["val"].dtype == torch.bfloat16
            assert all(a.meta["val"].dtype == torch.bfloat16 for a in n.args if isinstance(a, torch.fx.Node))


@pytest.mark.parametrize("ctx", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_no_grad_and_inference_mode(ctx, compiled):
    stock = _mlp()
    model = _patched_copy(stock)
    run = torch.compile(model, backend="aot_eager", fullgraph=True) if compiled else model
    guard = torch.no_grad if ctx == "no_grad" else torch.inference_mode
    x = torch.randn(3, 7, 16)
    before = counters()
    with guard():
        out = run(x)
        ref = stock(x)
    assert counter_delta(before, counters())["cpu"] == 2
    assert not out.requires_grad
    assert out.is_inference() == (ctx == "inference_mode")
    assert_close_rel(out, ref, FP32_TOL, ctx)
    with guard(), torch.autocast("cpu", dtype=torch.bfloat16):
        out16, ref16 = run(x), stock(x)
    assert out16.dtype == ref16.dtype == torch.bfloat16
    assert_close_rel(out16, ref16, BF16_TOL, f"{ctx} + autocast")


# ============================================================================ inductor


def test_inductor_dynamic_train_step():
    """Inductor (C++ codegen) on the patched training step with a dynamic batch: the tk ops are
    extern kernels whose output sizes are symbolic; one compile serves every batch size."""
    pytest.importorskip("torch._inductor")
    stock = _mlp()
    model = _patched_copy(stock)
    cnt = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    cm = torch.compile(model, backend=cnt, fullgraph=True, dynamic=True)
    for B, S in _SIZES[:3]:
        x = torch.randn(B, S, 16)
        g = torch.randn(B, S, 8)
        model.zero_grad(set_to_none=True)
        stock.zero_grad(set_to_none=True)
        before = counters()
        out = cm(x)
        out.backward(g)
        assert counter_delta(before, counters())["cpu"] == 5
        ref = stock(x)
        ref.backward(g)
        assert_close_rel(out, ref, FP32_TOL, f"inductor forward {(B, S)}")
        _assert_grads_close(_grads(model), _grads(stock), FP32_TOL, f"inductor {(B, S)}")
    assert cnt.frame_count == 1
