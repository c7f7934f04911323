"""CPU tests of torch.ops.tk.{gemm,addmm,linear}: torch.library.opcheck on sample inputs, gradcheck /
gradgradcheck, gradient values and dtypes, and that only the requested gradients are computed."""

from __future__ import annotations

import math

import pytest
import torch

import torch_tk
from conftest import (
    ALL_DTYPES,
    CPU_TOL,
    LOW_DTYPES,
    assert_close_rel,
    counter_delta,
    counters,
    make_matrix,
    sample_id,
)
from ops_helpers import OPS, SELF_SHAPES, _dt


# ============================================================================ opcheck


def _opcheck_samples():
    f32, bf16, f16, f64 = torch.float32, torch.bfloat16, torch.float16, torch.float64
    S = []

    def mm(M, K, N, dtype, la="n", lb="n", rg=False):
        return make_matrix(M, K, dtype, la, requires_grad=rg), make_matrix(K, N, dtype, lb, requires_grad=rg)

    # gemm
    S.append(("gemm", mm(5, 7, 3, f32), {}))
    S.append(("gemm", mm(9, 17, 6, f32, "t", "t", rg=True), {}))
    S.append(("gemm", mm(9, 17, 6, f64, "n", "t", rg=True), {}))
    S.append(("gemm", mm(13, 5, 1, bf16, "t", "n"), {}))
    S.append(("gemm", mm(13, 5, 11, bf16, "n", "t", rg=True), {"out_dtype": f32}))
    S.append(("gemm", mm(3, 65, 7, f16, "slice", "n"), {"out_dtype": f32}))
    S.append(("gemm", mm(4, 0, 3, f32), {}))
    # addmm
    a, b = mm(6, 9, 5, f32, rg=True)
    S.append(("addmm", (torch.randn(5, requires_grad=True), a, b), {"beta": 0.5, "alpha": 2.0}))
    a, b = mm(6, 9, 5, f32, "t", "t", rg=True)
    S.append(("addmm", (torch.randn(6, 5).requires_grad_(), a, b), {}))
    a, b = mm(6, 9, 5, f64, "n", "t", rg=True)
    S.append(("addmm", (torch.randn(6, 1, dtype=f64, requires_grad=True), a, b), {"beta": -1.0}))
    a, b = mm(7, 3, 4, bf16, "t", "n")
    S.append(("addmm", (torch.randn(4, dtype=f32), a, b), {"out_dtype": f32}))
    a, b = mm(7, 3, 4, f32)
    S.append(("addmm", (torch.full((7, 4), math.nan), a, b), {"beta": 0.0}))
    a, b = mm(7, 33, 4, f16, "n", "t", rg=True)
    S.append(("addmm", (torch.randn(1, 4, dtype=f16), a, b), {"beta": 2, "alpha": 3}))
    # linear
    x = torch.randn(3, 9, requires_grad=True)
    w = torch.randn(4, 9, requires_grad=True)
    S.append(("linear", (x, w, torch.randn(4, requires_grad=True)), {}))
    S.append(("linear", (torch.randn(2, 3, 9, dtype=f64, requires_grad=True),
                         make_matrix(5, 9, f64, "t", requires_grad=True), None), {}))
    S.append(("linear", (torch.randn(9, requires_grad=True), torch.randn(4, 9), torch.randn(4)), {}))
    S.append(("linear", (torch.randn(2, 5, 17, dtype=bf16).transpose(0, 1),
                         torch.randn(6, 17, dtype=bf16), torch.randn(6, dtype=bf16)), {}))
    S.append(("linear", (torch.randn(2, 17, dtype=f16), torch.randn(6, 17, dtype=f16)), {}))
    return S


_SAMPLES = _opcheck_samples  # rebuilt inside each test (fresh data, seeded per test)
_OPCHECK_IDS = [sample_id(*s) for s in _opcheck_samples()]


@pytest.mark.parametrize("idx", range(len(_OPCHECK_IDS)), ids=_OPCHECK_IDS)
def test_opcheck(idx):
    name, args, kwargs = _SAMPLES()[idx]
    torch.library.opcheck(OPS[name], args, kwargs)


# ============================================================================ autograd


def _gc(fn, inputs):
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=False)


@pytest.mark.parametrize("la,lb", [("n", "n"), ("t", "t"), ("slice", "t")])
def test_gradcheck_gemm(la, lb):
    a = make_matrix(4, 5, torch.float64, la, requires_grad=True)
    b = make_matrix(5, 3, torch.float64, lb, requires_grad=True)
    _gc(lambda a, b: torch.ops.tk.gemm(a, b), (a, b))
    _gc(lambda a, b: torch_tk.gemm(a, b, out_dtype=torch.float64), (a, b))


@pytest.mark.parametrize("self_kind", ["full", "row", "col", "vec", "scalar"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 1.5)])
def test_gradcheck_addmm(self_kind, beta, alpha):
    M, N, K = 4, 3, 5
    s = torch.randn(SELF_SHAPES[self_kind](M, N), dtype=torch.float64, requires_grad=True)
    m1 = make_matrix(M, K, torch.float64, "t", requires_grad=True)
    m2 = make_matrix(K, N, torch.float64, "n", requires_grad=True)
    _gc(lambda s, m1, m2: torch.ops.tk.addmm(s, m1, m2, beta=beta, alpha=alpha), (s, m1, m2))


@pytest.mark.parametrize("in_shape", [(), (4,), (2, 3)], ids=str)
@pytest.mark.parametrize("has_bias", [True, False])
def test_gradcheck_linear(in_shape, has_bias):
    K, N = 5, 3
    x = torch.randn(*in_shape, K, dtype=torch.float64, requires_grad=True)
    w = torch.randn(N, K, dtype=torch.float64, requires_grad=True)
    if has_bias:
        b = torch.randn(N, dtype=torch.float64, requires_grad=True)
        _gc(lambda x, w, b: torch.ops.tk.linear(x, w, b), (x, w, b))
    else:
        _gc(lambda x, w: torch.ops.tk.linear(x, w), (x, w))


def test_gradgradcheck():
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    s = torch.randn(2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: torch.ops.tk.gemm(a, b), (a, b))
    assert torch.autograd.gradgradcheck(
        lambda s, a, b: torch.ops.tk.addmm(s, a, b, beta=0.5, alpha=2.0), (s, a, b)
    )
    assert torch.autograd.gradgradcheck(lambda x, w, b: torch.ops.tk.linear(x, w, b), (a, b.t(), s))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
def test_grad_values_and_dtypes_gemm(dtype):
    M, N, K = 9, 7, 33
    a = make_matrix(M, K, dtype, "n", requires_grad=True)
    b = make_matrix(K, N, dtype, "t", requires_grad=True)
    g = torch.randn(M, N).to(dtype)
    torch_tk.gemm(a, b).backward(g)
    assert a.grad.dtype == dtype and b.grad.dtype == dtype
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    tol = CPU_TOL[dtype]
    assert_close_rel(a.grad, g.double() @ b.detach().double().t(), tol, "grad a")
    assert_close_rel(b.grad, a.detach().double().t() @ g.double(), tol, "grad b")


@pytest.mark.parametrize("dtype", LOW_DTYPES, ids=_dt)
def test_grad_with_out_dtype_fp32_has_input_dtype(dtype):
    M, N, K = 8, 6, 20
    a = torch.randn(M, K).to(dtype).requires_grad_()
    b = torch.randn(K, N).to(dtype).requires_grad_()
    s = torch.randn(N).to(dtype).requires_grad_()
    out = torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0, out_dtype=torch.float32)
    assert out.dtype == torch.float32
    g = torch.randn(M, N)
    out.backward(g)
    for t in (a, b, s):
        assert t.grad is not None and t.grad.dtype == dtype, (t.grad.dtype if t.grad is not None else None)
    tol = CPU_TOL[dtype]
    assert_close_rel(a.grad, 2.0 * g.double() @ b.detach().double().t(), tol)
    assert_close_rel(b.grad, 2.0 * a.detach().double().t() @ g.double(), tol)
    assert_close_rel(s.grad, 0.5 * g.double().sum(0), tol)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
def test_grad_values_linear_3d(dtype):
    x = torch.randn(2, 5, 24).to(dtype).requires_grad_()
    w = torch.randn(12, 24).to(dtype).requires_grad_()
    b = torch.randn(12).to(dtype).requires_grad_()
    g = torch.randn(2, 5, 12).to(dtype)
    torch_tk.linear(x, w, b).backward(g)
    gd, xd, wd = g.double(), x.detach().double(), w.detach().double()
    tol = CPU_TOL[dtype]
    assert_close_rel(x.grad, gd @ wd, tol, "grad input")
    assert_close_rel(w.grad, gd.reshape(-1, 12).t() @ xd.reshape(-1, 24), tol, "grad weight")
    assert_close_rel(b.grad, gd.reshape(-1, 12).sum(0), tol, "grad bias")
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == dtype


# --- needs_input_grad: only requested gradients are computed, and with tk ops.


def _backward_cpu_calls(fn, inputs, grad_shape):
    out = fn(*inputs)
    before = counters()
    out.backward(torch.randn(grad_shape, dtype=out.dtype))
    return counter_delta(before, counters())["cpu"]


@pytest.mark.parametrize("which", ["a", "b", "ab"])
def test_needs_input_grad_gemm(which):
    a = torch.randn(6, 5, requires_grad="a" in which)
    b = torch.randn(5, 4, requires_grad="b" in which)
    calls = _backward_cpu_calls(torch_tk.gemm, (a, b), (6, 4))
    assert (a.grad is not None) == ("a" in which)
    assert (b.grad is not None) == ("b" in which)
    # one tk matrix product per requested matrix gradient, none for the others
    assert calls == len(which), f"backward ran {calls} tk op calls for grads of {which!r}"
    if "a" in which:
        assert a.grad.shape == a.shape
    if "b" in which:
        assert b.grad.shape == b.shape


@pytest.mark.parametrize("which", ["s", "1", "2", "s2", "12"])
def test_needs_input_grad_addmm(which):
    s = torch.randn(4, requires_grad="s" in which)
    m1 = torch.randn(6, 5, requires_grad="1" in which)
    m2 = torch.randn(5, 4, requires_grad="2" in which)
    g = torch.randn(6, 4)
    out = torch_tk.addmm(s, m1, m2, beta=0.5, alpha=2.0)
    before = counters()
    out.backward(g)
    calls = counter_delta(before, counters())["cpu"]
    assert (s.grad is not None) == ("s" in which)
    assert (m1.grad is not None) == ("1" in which)
    assert (m2.grad is not None) == ("2" in which)
    n_mat = sum(c in which for c in "12")
    assert calls == n_mat, f"backward ran {calls} tk op calls for grads of {which!r}"
    if s.grad is not None:
        assert_close_rel(s.grad, 0.5 * g.double().sum(0), 1e-6)
    if m1.grad is not None:
        assert_close_rel(m1.grad, 2.0 * g.double() @ m2.detach().double().t(), 1e-5)
    if m2.grad is not None:
        assert_close_rel(m2.grad, 2.0 * m1.detach().double().t() @ g.double(), 1e-5)


@pytest.mark.parametrize("which", ["x", "w", "b", "wb", "xwb"])
def test_needs_input_grad_linear(which):
    x = torch.randn(2, 3, 8, requires_grad="x" in which)
    w = torch.randn(5, 8, requires_grad="w" in which)
    b = torch.randn(5, requires_grad="b" in which)
    g = torch.randn(2, 3, 5)
    out = torch_tk.linear(x, w, b)
    before = counters()
    out.backward(g)
    calls = counter_delta(before, counters())["cpu"]
    for t, c in ((x, "x"), (w, "w"), (b, "b")):
        assert (t.grad is not None) == (c in which), c
    n_mat = sum(c in which for c in "xw")
    assert calls == n_mat, f"backward ran {calls} tk op calls for grads of {which!r}"
    if b.grad is not None:
        assert_close_rel(b.grad, g.double().sum((0, 1)), 1e-6)
    if w.grad is not None:
        assert_close_rel(w.grad, g.double().reshape(6, 5).t() @ x.detach().double().reshape(6, 8), 1e-5)


def test_no_grad_inputs_give_no_grad_fn():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert torch_tk.gemm(a, b).grad_fn is None
    a.requires_grad_()
    assert torch_tk.gemm(a, b).requires_grad
    with torch.no_grad():
        assert not torch_tk.gemm(a, b).requires_grad
