"""Fake/meta shape propagation and torch.compile tests of the tk ops on CPU.

Backends: "aot_eager" (fast) for most tests, plus one test with the default
inductor backend. Inductor on CPU compiles C++: measured here ~22 s cold cache and
~3 s warm for a small function (well under 60 s), so it is kept, in one test only.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_tk
from conftest import assert_close_rel, make_matrix, sample_id


@pytest.fixture(autouse=True)
def _reset_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _dt(d):
    return str(d).replace("torch.", "")


# ============================================================================ fake/meta shapes


def _samples():
    f32, bf16, f16, f64 = torch.float32, torch.bfloat16, torch.float16, torch.float64
    out = []
    for dt in (f32, bf16, f16, f64):
        for la in ("n", "t", "slice", "offset", "expand"):
            for lb in ("n", "t", "slice"):
                out.append(("gemm", (make_matrix(7, 9, dt, la), make_matrix(9, 5, dt, lb)), {}))
    out.append(("gemm", (make_matrix(7, 9, bf16, "t"), make_matrix(9, 5, bf16, "n")), {"out_dtype": f32}))
    out.append(("gemm", (make_matrix(0, 9, f16, "n"), make_matrix(9, 5, f16, "t")), {"out_dtype": f32}))
    out.append(("gemm", (make_matrix(3, 0, f32, "n"), make_matrix(0, 5, f32, "n")), {}))
    for s_shape in [(7, 5), (5,), (1, 5), (7, 1), ()]:
        for la, lb in (("n", "n"), ("t", "t")):
            out.append(("addmm", (torch.randn(s_shape), make_matrix(7, 9, f32, la), make_matrix(9, 5, f32, lb)),
                        {"beta": 0.5, "alpha": 2.0}))
    out.append(("addmm", (make_matrix(7, 5, f32, "t"), make_matrix(7, 9, f32, "n"), make_matrix(9, 5, f32, "n")), {}))
    out.append(("addmm", (torch.randn(5), make_matrix(7, 9, bf16, "n"), make_matrix(9, 5, bf16, "t")),
                {"out_dtype": f32}))
    out.append(("addmm", (torch.randn(7, 5).to(bf16), make_matrix(7, 9, bf16, "n"), make_matrix(9, 5, bf16, "t")),
                {"out_dtype": f32}))
    for in_shape in [(9,), (4, 9), (2, 3, 9), (2, 3, 4, 9)]:
        for bias in (True, False):
            for wl in ("n", "t"):
                out.append(("linear", (torch.randn(in_shape), make_matrix(6, 9, f32, wl),
                                       torch.randn(6) if bias else None), {}))
    out.append(("linear", (torch.randn(3, 2, 9).transpose(0, 1), torch.randn(6, 9), torch.randn(6)), {}))
    out.append(("linear", (torch.randn(3, 2, 9).to(bf16), torch.randn(6, 9).to(bf16), None), {}))
    # empty inputs: zero batch, and K == 0 with 1-D / 3-D input (output = bias)
    out.append(("linear", (torch.randn(0, 4, 9), torch.randn(6, 9), torch.randn(6)), {}))
    out.append(("linear", (torch.randn(3, 0), torch.randn(6, 0), torch.randn(6)), {}))
    out.append(("linear", (torch.randn(2, 3, 0), torch.randn(6, 0), torch.randn(6)), {}))
    out.append(("linear", (torch.randn(0), torch.randn(6, 0), None), {}))
    return out


def _meta_like(t):
    if not isinstance(t, torch.Tensor):
        return t
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


_SAMPLE_IDS = [sample_id(*s) for s in _samples()]


@pytest.mark.parametrize("idx", range(len(_SAMPLE_IDS)), ids=_SAMPLE_IDS)
def test_meta_and_fake_match_cpu(idx):
    name, args, kwargs = _samples()[idx]
    op = getattr(torch.ops.tk, name)
    real = op(*args, **kwargs)

    meta_args = tuple(_meta_like(a) for a in args)
    for a, m in zip(args, meta_args):
        if isinstance(a, torch.Tensor):
            assert m.stride() == a.stride()
    meta = op(*meta_args, **kwargs)
    assert meta.device.type == "meta"
    assert meta.shape == real.shape
    assert meta.stride() == real.stride(), f"meta strides {meta.stride()} vs real {real.stride()}"
    assert meta.dtype == real.dtype

    fm = FakeTensorMode()
    fake_args = tuple(fm.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args)
    with fm:
        fake = op(*fake_args, **kwargs)
    assert fake.shape == real.shape
    assert fake.stride() == real.stride()
    assert fake.dtype == real.dtype
    assert fake.device == real.device


@pytest.mark.skipif(torch.version.cuda is None and torch.version.hip is None,
                    reason="torch is a CPU-only build: it cannot make even fake CUDA tensors")
@pytest.mark.parametrize("name", ["gemm", "addmm", "linear"])
def test_fake_cuda_outputs(name):
    """The fake impl also covers CUDA tensors (no GPU needed to trace CUDA graphs)."""
    with FakeTensorMode():
        a = torch.randn(7, 9, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(9, 5, device="cuda", dtype=torch.bfloat16).t().contiguous().t()
        if name == "gemm":
            out = torch.ops.tk.gemm(a, b, out_dtype=torch.float32)
            dt = torch.float32
        elif name == "addmm":
            out = torch.ops.tk.addmm(torch.randn(5, device="cuda", dtype=torch.bfloat16), a, b)
            dt = torch.bfloat16
        else:
            out = torch.ops.tk.linear(a.reshape(7, 1, 9), b.t(), None)
            dt = torch.bfloat16
    assert out.device.type == "cuda"
    assert out.dtype == dt
    assert out.is_contiguous()
    assert out.shape[-1] == 5 and out.shape[0] == 7


# ============================================================================ torch.compile


class Recorder:
    """A backend that records Dynamo's FX graph(s) and runs them eagerly."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def targets(self):
        return {n.target for g in self.graphs for n in g.graph.nodes if n.op == "call_function"}


class AotRecorder:
    """aot_autograd with compilers that record the forward and backward ATen graphs."""

    def __init__(self):
        self.fw, self.bw = [], []

        def fw_compiler(gm, example_inputs):
            self.fw.append(gm)
            return make_boxed_func(gm.forward)

        def bw_compiler(gm, example_inputs):
            self.bw.append(gm)
            return make_boxed_func(gm.forward)

        self.backend = aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler)

    @staticmethod
    def _targets(gms):
        return {n.target for g in gms for n in g.graph.nodes if n.op == "call_function"}

    def fw_targets(self):
        return self._targets(self.fw)

    def bw_targets(self):
        return self._targets(self.bw)


def _is_tk(target, name=None):
    """target is tk.<name> (packet or overload); compared by name, not identity (OpOverload
    objects can be re-created, e.g. after opcheck, so `in` on a set of them is unreliable)."""
    s = str(target)
    if name is not None:
        return s in (f"tk.{name}", f"tk.{name}.default")
    return s.startswith("tk.")


def _has(targets, qualname):
    return qualname in {str(t) for t in targets}


def _fn_all_ops(x, w, b, s, m2):
    h = torch_tk.linear(x, w, b)  # (B, S, N)
    h = torch.nn.functional.gelu(h)
    h2 = h.reshape(-1, h.shape[-1])
    y = torch_tk.gemm(h2, m2)  # (B*S, P)
    z = torch.ops.tk.addmm(s, h2, m2, beta=0.5, alpha=2.0)
    return (y * z).sum(-1).mean() + y.square().mean()


def _inputs(requires_grad=True, dtype=torch.float32):
    B, S, K, N, P = 2, 3, 16, 24, 8
    x = torch.randn(B, S, K, dtype=dtype)
    w = torch.randn(N, K, dtype=dtype) / 4
    b = torch.randn(N, dtype=dtype)
    s = torch.randn(P, dtype=dtype)
    m2 = torch.randn(N, P, dtype=dtype).t().contiguous().t()  # column-major
    ins = [x, w, b, s, m2]
    if requires_grad:
        ins = [t.detach().requires_grad_(True) for t in ins]
    return ins


def _eager_and_compiled(backend, **compile_kwargs):
    ins_e = _inputs()
    ins_c = [t.detach().clone().requires_grad_(True) for t in ins_e]  # clone keeps strides
    assert ins_c[-1].stride() == ins_e[-1].stride()
    out_e = _fn_all_ops(*ins_e)
    out_e.backward()
    cfn = torch.compile(_fn_all_ops, backend=backend, fullgraph=True, **compile_kwargs)
    out_c = cfn(*ins_c)
    out_c.backward()
    assert_close_rel(out_c, out_e, 1e-5, "compiled forward")
    for te, tc in zip(ins_e, ins_c):
        assert tc.grad is not None
        assert tc.grad.dtype == te.grad.dtype and tc.grad.shape == te.grad.shape
        assert_close_rel(tc.grad, te.grad, 1e-5, "compiled grad")
    return cfn


def test_compile_dynamo_graph_contains_tk_ops():
    rec = Recorder()
    _eager_and_compiled(rec)
    assert len(rec.graphs) == 1, "fullgraph=True must give exactly one graph"
    t = rec.targets()
    for name in ("gemm", "addmm", "linear"):
        assert any(_is_tk(x, name) for x in t), f"tk.{name} not in dynamo graph: {t}"


def test_compile_aot_graphs_contain_tk_ops_forward_and_backward():
    rec = AotRecorder()
    _eager_and_compiled(rec.backend)
    fw, bw = rec.fw_targets(), rec.bw_targets()
    for name in ("gemm", "addmm", "linear"):
        assert _has(fw, f"tk.{name}.default"), f"tk.{name}.default not in AOT forward: {fw}"
    assert rec.bw, "no backward graph was compiled"
    tk_bw = {x for x in bw if _is_tk(x)}
    assert tk_bw, f"backward graph has no tk op (backward must call tk ops): {bw}"
    # matrix products in backward go through tk ops, not aten.mm
    aten_mm = {"aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.matmul.default"}
    used = aten_mm & {str(t) for t in bw}
    assert not used, f"backward uses aten matmul: {used}"


def test_compile_aot_eager_forward_backward_matches_eager():
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    cfn = _eager_and_compiled(cnt)
    assert cnt.frame_count == 1
    assert cnt.op_count > 0
    # a second call with fresh inputs of the same shapes does not recompile
    ins = _inputs()
    cfn(*ins).backward()
    assert cnt.frame_count == 1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=_dt)
def test_compile_out_dtype_lowp(dtype):
    def f(a, b, s):
        return torch_tk.gemm(a, b, out_dtype=torch.float32) + torch_tk.addmm(s, a, b, out_dtype=torch.float32)

    a = torch.randn(9, 33).to(dtype)
    b = torch.randn(17, 33).to(dtype).t()
    s = torch.randn(17)
    rec = Recorder()
    out = torch.compile(f, backend=rec, fullgraph=True)(a, b, s)
    assert out.dtype == torch.float32
    assert torch.equal(out, f(a, b, s))
    assert any(_is_tk(x, "gemm") for x in rec.targets())


def test_compile_dynamic_shapes_no_recompile():
    def f(x, w, b):
        return torch.ops.tk.linear(x, w, b).relu() + torch.ops.tk.gemm(x.reshape(-1, x.shape[-1]), w.t()).sum()

    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    cf = torch.compile(f, backend=cnt, fullgraph=True, dynamic=True)
    w, b = torch.randn(6, 10), torch.randn(6)
    for B, S in [(2, 3), (4, 5), (3, 7)]:
        x = torch.randn(B, S, 10)
        assert_close_rel(cf(x, w, b), f(x, w, b), 1e-6)
    assert cnt.frame_count == 1, f"recompiled {cnt.frame_count} times under dynamic=True"


def test_compile_patched_module_fullgraph():
    model = torch.nn.Sequential(torch.nn.Linear(12, 20), torch.nn.ReLU(), torch.nn.Linear(20, 4))
    torch_tk.patch_linear(model)
    rec = AotRecorder()
    x = torch.randn(5, 12)
    ref = model(x)
    cm = torch.compile(model, backend=rec.backend, fullgraph=True)
    out = cm(x)
    assert_close_rel(out, ref, 1e-6)
    assert _has(rec.fw_targets(), "tk.linear.default")
    assert not _has(rec.fw_targets(), "aten.addmm.default")


def test_compile_inductor_cpu():
    """Default backend (inductor) on CPU, forward and backward, tk ops as extern calls."""
    pytest.importorskip("torch._inductor")
    _eager_and_compiled("inductor")
