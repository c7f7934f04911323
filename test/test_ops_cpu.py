"""CPU tests of torch.ops.tk.{gemm,addmm,linear}: correctness against a float64
reference, layouts, broadcasting, empty shapes, opcheck, gradients and errors."""

from __future__ import annotations

import contextlib
import math

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_tk
from conftest import (
    ALL_DTYPES,
    CPU_TOL,
    LOW_DTYPES,
    assert_close_rel,
    counter_delta,
    counters,
    make_matrix,
    names_argument,
    ref_addmm,
    ref_linear,
    ref_mm,
    rel_err,
    sample_id,
)

OPS = {
    "gemm": torch.ops.tk.gemm,
    "addmm": torch.ops.tk.addmm,
    "linear": torch.ops.tk.linear,
}

# Small (M, N, K) shapes with tails (not multiples of 8/16/64).
SHAPES = [(1, 1, 1), (7, 5, 3), (17, 33, 65), (64, 48, 129)]


def _dt(d):
    return str(d).replace("torch.", "")


def _check_out(out, shape, dtype):
    assert isinstance(out, torch.Tensor)
    assert out.device.type == "cpu"
    assert out.dtype == dtype, f"dtype {out.dtype} != {dtype}"
    assert tuple(out.shape) == tuple(shape), f"shape {tuple(out.shape)} != {tuple(shape)}"
    assert out.is_contiguous(), f"output not contiguous: strides {out.stride()}"


# ============================================================================ API surface


def test_public_api_exists():
    for name in ("gemm", "addmm", "linear"):
        assert callable(getattr(torch_tk, name))
        assert callable(getattr(torch_tk.ops, name))
        assert hasattr(torch.ops.tk, name)
    for name in (
        "patch_linear",
        "unpatch_linear",
        "patch_report",
        "kernel_counters",
        "reset_kernel_counters",
        "fallback_reasons",
        "hopper_available",
    ):
        assert callable(getattr(torch_tk, name)), name
    c = torch_tk.kernel_counters()
    assert {"hopper", "fallback", "cpu"} <= set(c)
    assert all(isinstance(v, int) for v in c.values())
    assert isinstance(torch_tk.fallback_reasons(), list)
    assert isinstance(torch_tk.hopper_available(), bool)


def test_hopper_not_available_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("machine has CUDA")
    assert torch_tk.hopper_available() is False


def test_counters_count_cpu_calls_and_reset():
    a, b = torch.randn(5, 6), torch.randn(6, 7)
    torch_tk.reset_kernel_counters()
    c0 = torch_tk.kernel_counters()
    assert c0["cpu"] == 0 and c0["hopper"] == 0 and c0["fallback"] == 0
    torch_tk.gemm(a, b)
    torch.ops.tk.addmm(torch.randn(7), a, b)
    torch.ops.tk.linear(a, b.t())
    c1 = torch_tk.kernel_counters()
    assert c1["cpu"] == 3, c1
    assert c1["hopper"] == 0 and c1["fallback"] == 0, c1
    torch_tk.reset_kernel_counters()
    assert torch_tk.kernel_counters()["cpu"] == 0


def test_inputs_not_modified():
    a = make_matrix(9, 11, torch.float32, "t")
    b = make_matrix(11, 13, torch.float32, "slice")
    s = torch.randn(13)
    copies = [x.clone() for x in (a, b, s)]
    strides = [x.stride() for x in (a, b, s)]
    torch_tk.gemm(a, b)
    torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0)
    torch_tk.linear(a, b.t(), s)
    for x, c, st in zip((a, b, s), copies, strides):
        assert torch.equal(x, c)
        assert x.stride() == st


def test_wrappers_match_ops():
    a, b = torch.randn(6, 5), torch.randn(5, 4)
    s = torch.randn(6, 4)
    assert torch.equal(torch_tk.gemm(a, b), torch.ops.tk.gemm(a, b))
    assert torch.equal(torch_tk.ops.gemm(a, b), torch.ops.tk.gemm(a, b))
    assert torch.equal(
        torch_tk.addmm(s, a, b, beta=0.5, alpha=3), torch.ops.tk.addmm(s, a, b, beta=0.5, alpha=3)
    )
    w, bias = torch.randn(4, 5), torch.randn(4)
    assert torch.equal(torch_tk.linear(a, w, bias), torch.ops.tk.linear(a, w, bias))
    assert torch.equal(torch_tk.linear(a, w), torch.ops.tk.linear.default(a, w, None))


# ============================================================================ gemm


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("la", ["n", "t"])
@pytest.mark.parametrize("lb", ["n", "t"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gemm_layouts(dtype, la, lb, shape):
    M, N, K = shape
    a = make_matrix(M, K, dtype, la)
    b = make_matrix(K, N, dtype, lb)
    out = torch_tk.gemm(a, b)
    _check_out(out, (M, N), dtype)
    assert_close_rel(out, ref_mm(a, b), CPU_TOL[dtype], f"gemm {la}{lb} {dtype}")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize(
    "la,lb",
    [("slice", "n"), ("n", "slice"), ("slice", "slice"), ("offset", "t"), ("t", "offset"),
     ("expand", "n"), ("n", "expand"), ("slice", "t")],
)
def test_gemm_noncontiguous(dtype, la, lb):
    M, N, K = 13, 19, 37
    a = make_matrix(M, K, dtype, la)
    b = make_matrix(K, N, dtype, lb)
    out = torch_tk.gemm(a, b)
    _check_out(out, (M, N), dtype)
    assert_close_rel(out, ref_mm(a, b), CPU_TOL[dtype], f"gemm {la}{lb} {dtype}")


def test_gemm_arbitrary_strides():
    # A permuted slice of a 3-D tensor: strides unrelated to the shape.
    base = torch.randn(4, 10, 6)
    a = base[1].t()[::2]  # (3, 10) with strides (2, 6)
    b = torch.randn(3, 10, 8)[:, :, 2].t()  # (10, 3) non-contiguous
    out = torch_tk.gemm(a, b)
    _check_out(out, (a.shape[0], b.shape[1]), torch.float32)
    assert_close_rel(out, ref_mm(a, b), 1e-5)


@pytest.mark.parametrize("dtype", LOW_DTYPES, ids=_dt)
@pytest.mark.parametrize("la,lb", [("n", "n"), ("n", "t"), ("t", "n"), ("t", "t"), ("slice", "n")])
def test_gemm_out_dtype_fp32(dtype, la, lb):
    M, N, K = 33, 17, 130
    a = make_matrix(M, K, dtype, la)
    b = make_matrix(K, N, dtype, lb)
    out = torch_tk.gemm(a, b, out_dtype=torch.float32)
    _check_out(out, (M, N), torch.float32)
    # fp32 accumulation of exactly-representable products: far below low-precision rounding.
    err = assert_close_rel(out, ref_mm(a, b), 1e-5, "gemm out_dtype=fp32")
    # and it must actually be more accurate than the rounded low-precision output
    low = torch_tk.gemm(a, b)
    assert low.dtype == dtype
    assert rel_err(low, ref_mm(a, b)) > err


def test_gemm_out_dtype_same_as_input_allowed():
    a, b = torch.randn(5, 6), torch.randn(6, 7)
    out = torch_tk.gemm(a, b, out_dtype=torch.float32)
    _check_out(out, (5, 7), torch.float32)
    assert_close_rel(out, ref_mm(a, b), 1e-5)
    a64, b64 = a.double(), b.double()
    out = torch_tk.gemm(a64, b64, out_dtype=torch.float64)
    _check_out(out, (5, 7), torch.float64)
    assert_close_rel(out, ref_mm(a64, b64), 1e-12)


def test_gemm_fp64_stays_fp64():
    # Values whose products don't fit in fp32: an fp32-accumulating implementation fails.
    a = torch.randn(8, 40, dtype=torch.float64)
    b = torch.randn(40, 8, dtype=torch.float64)
    a = a * (1 + 1e-9 * torch.randn_like(a))
    out = torch_tk.gemm(a, b)
    assert out.dtype == torch.float64
    assert rel_err(out, ref_mm(a, b)) < 1e-13


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
def test_gemm_k0_gives_zeros(dtype):
    a = torch.randn(5, 0).to(dtype)
    b = torch.randn(0, 6).to(dtype)
    out = torch_tk.gemm(a, b)
    _check_out(out, (5, 6), dtype)
    assert torch.equal(out, torch.zeros(5, 6, dtype=dtype))
    out = torch_tk.gemm(a, b, out_dtype=torch.float32 if dtype != torch.float64 else None)
    assert torch.equal(out.double(), torch.zeros(5, 6, dtype=torch.float64))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("M,N,K", [(0, 6, 5), (5, 0, 6), (0, 0, 3), (0, 0, 0), (0, 4, 0)])
def test_gemm_empty(dtype, M, N, K):
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(K, N).to(dtype)
    out = torch_tk.gemm(a, b)
    _check_out(out, (M, N), dtype)
    assert torch.equal(out.double(), torch.zeros(M, N, dtype=torch.float64))


# ============================================================================ addmm

SELF_SHAPES = {
    "full": lambda M, N: (M, N),
    "row": lambda M, N: (1, N),
    "col": lambda M, N: (M, 1),
    "vec": lambda M, N: (N,),
    "vec1": lambda M, N: (1,),
    "one1": lambda M, N: (1, 1),
    "scalar": lambda M, N: (),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("self_kind", list(SELF_SHAPES))
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (-1.25, 0.75), (2, 3), (1.5, 0.0)])
def test_addmm_broadcast_beta_alpha(dtype, self_kind, beta, alpha):
    M, N, K = 11, 13, 35
    m1 = make_matrix(M, K, dtype, "n")
    m2 = make_matrix(K, N, dtype, "t")
    s = torch.randn(SELF_SHAPES[self_kind](M, N)).to(dtype)
    out = torch_tk.addmm(s, m1, m2, beta=beta, alpha=alpha)
    _check_out(out, (M, N), dtype)
    assert_close_rel(out, ref_addmm(s, m1, m2, beta, alpha), CPU_TOL[dtype], f"addmm {self_kind}")


def test_addmm_defaults_are_beta1_alpha1():
    m1, m2, s = torch.randn(6, 7), torch.randn(7, 8), torch.randn(6, 8)
    out = torch.ops.tk.addmm(s, m1, m2)
    assert_close_rel(out, ref_addmm(s, m1, m2), 1e-5)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("la,lb,ls", [("n", "n", "n"), ("t", "t", "t"), ("slice", "offset", "slice"),
                                      ("t", "n", "expand"), ("n", "t", "offset")])
def test_addmm_layouts(dtype, la, lb, ls):
    M, N, K = 9, 23, 31
    m1 = make_matrix(M, K, dtype, la)
    m2 = make_matrix(K, N, dtype, lb)
    s = make_matrix(M, N, dtype, ls)
    out = torch_tk.addmm(s, m1, m2, beta=0.75, alpha=-1.5)
    _check_out(out, (M, N), dtype)
    assert_close_rel(out, ref_addmm(s, m1, m2, 0.75, -1.5), CPU_TOL[dtype])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("self_kind", ["full", "vec", "col", "scalar"])
@pytest.mark.parametrize("fill", [math.nan, math.inf])
def test_addmm_beta0_ignores_self(dtype, self_kind, fill):
    M, N, K = 7, 10, 19
    m1 = make_matrix(M, K, dtype, "n")
    m2 = make_matrix(K, N, dtype, "n")
    s = torch.full(SELF_SHAPES[self_kind](M, N), fill).to(dtype)
    out = torch_tk.addmm(s, m1, m2, beta=0, alpha=1.5)
    _check_out(out, (M, N), dtype)
    assert torch.isfinite(out).all(), "beta=0 must not propagate NaN/Inf from self"
    assert_close_rel(out, 1.5 * ref_mm(m1, m2), CPU_TOL[dtype])
    out = torch_tk.addmm(s, m1, m2, beta=0.0)
    assert torch.isfinite(out).all()
    assert_close_rel(out, ref_mm(m1, m2), CPU_TOL[dtype])


@pytest.mark.parametrize("dtype", LOW_DTYPES, ids=_dt)
@pytest.mark.parametrize("self_dtype", ["input", "fp32"])
@pytest.mark.parametrize("self_kind", ["full", "vec"])
def test_addmm_out_dtype_fp32(dtype, self_dtype, self_kind):
    M, N, K = 21, 14, 77
    m1 = make_matrix(M, K, dtype, "n")
    m2 = make_matrix(K, N, dtype, "t")
    sd = dtype if self_dtype == "input" else torch.float32
    s = torch.randn(SELF_SHAPES[self_kind](M, N)).to(sd)
    out = torch_tk.addmm(s, m1, m2, beta=0.5, alpha=2.0, out_dtype=torch.float32)
    _check_out(out, (M, N), torch.float32)
    assert_close_rel(out, ref_addmm(s, m1, m2, 0.5, 2.0), 1e-5, "addmm out_dtype=fp32")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("self_kind", ["full", "vec", "col"])
def test_addmm_k0(dtype, self_kind):
    M, N = 6, 9
    m1 = torch.randn(M, 0).to(dtype)
    m2 = torch.randn(0, N).to(dtype)
    s = torch.randn(SELF_SHAPES[self_kind](M, N)).to(dtype)
    out = torch_tk.addmm(s, m1, m2, beta=0.5, alpha=3.0)
    _check_out(out, (M, N), dtype)
    ref = (0.5 * s.double()).expand(M, N)
    assert_close_rel(out, ref, CPU_TOL[dtype], "addmm K=0")
    out = torch_tk.addmm(s, m1, m2)
    assert_close_rel(out, s.double().expand(M, N), CPU_TOL[dtype])
    out = torch_tk.addmm(torch.full_like(s, math.nan), m1, m2, beta=0)
    assert torch.equal(out.double(), torch.zeros(M, N, dtype=torch.float64))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("M,N,K", [(0, 6, 5), (5, 0, 6), (0, 0, 0)])
def test_addmm_empty(dtype, M, N, K):
    m1 = torch.randn(M, K).to(dtype)
    m2 = torch.randn(K, N).to(dtype)
    for s in (torch.randn(N).to(dtype), torch.randn(M, N).to(dtype)):
        out = torch_tk.addmm(s, m1, m2, beta=2.0)
        _check_out(out, (M, N), dtype)


# ============================================================================ linear


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
@pytest.mark.parametrize("in_shape", [(), (5,), (2, 3), (2, 3, 4)], ids=lambda s: f"batch{s}")
@pytest.mark.parametrize("has_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("wl", ["n", "t"])
def test_linear(dtype, in_shape, has_bias, wl):
    K, N = 37, 21
    x = torch.randn(*in_shape, K).to(dtype)
    w = make_matrix(N, K, dtype, wl)
    bias = torch.randn(N).to(dtype) if has_bias else None
    out = torch_tk.linear(x, w, bias)
    _check_out(out, (*in_shape, N), dtype)
    assert_close_rel(out, ref_linear(x, w, bias), CPU_TOL[dtype], "linear")
    # same result through the op and F.linear-like keyword use
    out2 = torch.ops.tk.linear(x, w, bias=bias)
    assert torch.equal(out, out2)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_dt)
def test_linear_noncontiguous_input(dtype):
    K, N = 24, 10
    x = torch.randn(5, 3, K).to(dtype).transpose(0, 1)  # (3, 5, K) non-contiguous
    x2 = torch.randn(4, 2 * K).to(dtype)[:, ::2]
    w = make_matrix(N, K, dtype, "slice")
    bias = torch.randn(2 * N).to(dtype)[::2]
    for inp in (x, x2):
        out = torch_tk.linear(inp, w, bias)
        _check_out(out, (*inp.shape[:-1], N), dtype)
        assert_close_rel(out, ref_linear(inp, w, bias), CPU_TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_dt)
def test_linear_matches_F_linear(dtype):
    x = torch.randn(3, 4, 40).to(dtype)
    w = torch.randn(24, 40).to(dtype)
    b = torch.randn(24).to(dtype)
    out = torch_tk.linear(x, w, b)
    ref = torch.nn.functional.linear(x.float(), w.float(), b.float())
    assert_close_rel(out, ref, CPU_TOL[dtype])


@pytest.mark.parametrize("shape", [(0, 8), (2, 0, 8), (3, 0), (2, 3, 0), (0,)], ids=str)
def test_linear_empty(shape):
    K = shape[-1]
    x = torch.randn(shape)
    w = torch.randn(5, K)
    b = torch.randn(5)
    out = torch_tk.linear(x, w, b)
    _check_out(out, (*shape[:-1], 5), torch.float32)
    if K == 0:  # only bias remains
        assert_close_rel(out, b.double().expand(*shape[:-1], 5), 1e-6)
    out = torch_tk.linear(x, torch.randn(0, K))
    _check_out(out, (*shape[:-1], 0), torch.float32)


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


# ============================================================================ errors

# Each case: id -> (op name, builder(dev) -> (args, kwargs), exception type, argument names
# of which the message must mention one). Builders create float32 data unless the case
# is about dtypes.


def _r(*shape, dtype=torch.float32, dev="cpu"):
    return torch.randn(shape, dtype=torch.float32).to(dtype=dtype, device=dev)


ERROR_CASES = {
    # ---- gemm
    "gemm_a_1d": ("gemm", lambda d: ((_r(4, dev=d), _r(4, 3, dev=d)), {}), ValueError, ("a",)),
    "gemm_a_3d": ("gemm", lambda d: ((_r(2, 4, 5, dev=d), _r(5, 3, dev=d)), {}), ValueError, ("a",)),
    "gemm_b_1d": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, dev=d)), {}), ValueError, ("b",)),
    "gemm_b_0d": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(dev=d)), {}), ValueError, ("b",)),
    "gemm_inner": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(6, 3, dev=d)), {}), ValueError, ("a", "b")),
    "gemm_dtype_mismatch": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, 3, dtype=torch.float64, dev=d)), {}),
                            TypeError, ("a", "b")),
    "gemm_dtype_mismatch_lowp": ("gemm", lambda d: ((_r(4, 5, dtype=torch.bfloat16, dev=d),
                                                    _r(5, 3, dtype=torch.float16, dev=d)), {}),
                                 TypeError, ("a", "b")),
    "gemm_int": ("gemm", lambda d: ((torch.ones(4, 5, dtype=torch.int32, device=d),
                                     torch.ones(5, 3, dtype=torch.int32, device=d)), {}), TypeError, ("a", "b")),
    "gemm_complex": ("gemm", lambda d: ((_r(4, 5, dev=d).to(torch.complex64),
                                         _r(5, 3, dev=d).to(torch.complex64)), {}), TypeError, ("a", "b")),
    "gemm_outdtype_fp16_for_bf16": ("gemm", lambda d: ((_r(4, 5, dtype=torch.bfloat16, dev=d),
                                                        _r(5, 3, dtype=torch.bfloat16, dev=d)),
                                                       {"out_dtype": torch.float16}), TypeError, ("out_dtype",)),
    "gemm_outdtype_fp64_for_bf16": ("gemm", lambda d: ((_r(4, 5, dtype=torch.bfloat16, dev=d),
                                                        _r(5, 3, dtype=torch.bfloat16, dev=d)),
                                                       {"out_dtype": torch.float64}), TypeError, ("out_dtype",)),
    "gemm_outdtype_bf16_for_fp32": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, 3, dev=d)),
                                                       {"out_dtype": torch.bfloat16}), TypeError, ("out_dtype",)),
    "gemm_outdtype_fp64_for_fp32": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, 3, dev=d)),
                                                       {"out_dtype": torch.float64}), TypeError, ("out_dtype",)),
    "gemm_outdtype_fp32_for_fp64": ("gemm", lambda d: ((_r(4, 5, dtype=torch.float64, dev=d),
                                                        _r(5, 3, dtype=torch.float64, dev=d)),
                                                       {"out_dtype": torch.float32}), TypeError, ("out_dtype",)),
    "gemm_outdtype_int": ("gemm", lambda d: ((_r(4, 5, dtype=torch.float16, dev=d),
                                              _r(5, 3, dtype=torch.float16, dev=d)),
                                             {"out_dtype": torch.int32}), TypeError, ("out_dtype",)),
    # ---- addmm
    "addmm_self_3d": ("addmm", lambda d: ((_r(1, 4, 3, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                      ValueError, ("self",)),
    "addmm_self_rows": ("addmm", lambda d: ((_r(5, 3, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                        ValueError, ("self",)),
    "addmm_self_cols": ("addmm", lambda d: ((_r(4, 2, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                        ValueError, ("self",)),
    "addmm_self_vec": ("addmm", lambda d: ((_r(4, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                       ValueError, ("self",)),
    "addmm_self_vec_beta0": ("addmm", lambda d: ((_r(4, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)),
                                                 {"beta": 0}), ValueError, ("self",)),
    "addmm_mat1_1d": ("addmm", lambda d: ((_r(3, dev=d), _r(5, dev=d), _r(5, 3, dev=d)), {}),
                      ValueError, ("mat1",)),
    "addmm_mat2_3d": ("addmm", lambda d: ((_r(3, dev=d), _r(4, 5, dev=d), _r(1, 5, 3, dev=d)), {}),
                      ValueError, ("mat2",)),
    "addmm_inner": ("addmm", lambda d: ((_r(3, dev=d), _r(4, 5, dev=d), _r(6, 3, dev=d)), {}),
                    ValueError, ("mat1", "mat2")),
    "addmm_mat_dtype": ("addmm", lambda d: ((_r(3, dev=d), _r(4, 5, dev=d), _r(5, 3, dtype=torch.float64, dev=d)),
                                            {}), TypeError, ("mat1", "mat2")),
    "addmm_self_dtype_fp64": ("addmm", lambda d: ((_r(3, dtype=torch.float64, dev=d), _r(4, 5, dev=d),
                                                   _r(5, 3, dev=d)), {}), TypeError, ("self",)),
    "addmm_self_dtype_fp16_for_bf16": ("addmm", lambda d: ((_r(4, 3, dtype=torch.float16, dev=d),
                                                            _r(4, 5, dtype=torch.bfloat16, dev=d),
                                                            _r(5, 3, dtype=torch.bfloat16, dev=d)), {}),
                                       TypeError, ("self",)),
    "addmm_self_fp32_without_out_dtype": ("addmm", lambda d: ((_r(4, 3, dtype=torch.float32, dev=d),
                                                               _r(4, 5, dtype=torch.bfloat16, dev=d),
                                                               _r(5, 3, dtype=torch.bfloat16, dev=d)), {}),
                                          TypeError, ("self",)),
    "addmm_self_int": ("addmm", lambda d: ((torch.ones(3, dtype=torch.int64, device=d), _r(4, 5, dev=d),
                                            _r(5, 3, dev=d)), {}), TypeError, ("self",)),
    "addmm_bad_out_dtype": ("addmm", lambda d: ((_r(3, dtype=torch.float16, dev=d),
                                                 _r(4, 5, dtype=torch.float16, dev=d),
                                                 _r(5, 3, dtype=torch.float16, dev=d)),
                                                {"out_dtype": torch.bfloat16}), TypeError, ("out_dtype",)),
    "addmm_int_mats": ("addmm", lambda d: ((torch.ones(3, dtype=torch.int32, device=d),
                                            torch.ones(4, 5, dtype=torch.int32, device=d),
                                            torch.ones(5, 3, dtype=torch.int32, device=d)), {}),
                       TypeError, ("self", "mat1", "mat2")),
    # ---- linear
    "linear_input_0d": ("linear", lambda d: ((_r(dev=d), _r(3, 1, dev=d), None), {}), ValueError, ("input",)),
    "linear_weight_1d": ("linear", lambda d: ((_r(2, 5, dev=d), _r(5, dev=d), None), {}), ValueError, ("weight",)),
    "linear_weight_3d": ("linear", lambda d: ((_r(2, 5, dev=d), _r(1, 3, 5, dev=d), None), {}),
                         ValueError, ("weight",)),
    "linear_inner": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 6, dev=d), None), {}),
                     ValueError, ("input", "weight")),
    "linear_inner_3d": ("linear", lambda d: ((_r(2, 4, 5, dev=d), _r(3, 4, dev=d), _r(3, dev=d)), {}),
                        ValueError, ("input", "weight")),
    "linear_bias_len": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 5, dev=d), _r(4, dev=d)), {}),
                        ValueError, ("bias",)),
    "linear_bias_2d": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 5, dev=d), _r(2, 3, dev=d)), {}),
                       ValueError, ("bias",)),
    "linear_weight_dtype": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 5, dtype=torch.float64, dev=d), None),
                                                 {}), TypeError, ("input", "weight")),
    "linear_bias_dtype": ("linear", lambda d: ((_r(2, 5, dtype=torch.bfloat16, dev=d),
                                                _r(3, 5, dtype=torch.bfloat16, dev=d),
                                                _r(3, dtype=torch.float16, dev=d)), {}), TypeError, ("bias",)),
    "linear_int": ("linear", lambda d: ((torch.ones(2, 5, dtype=torch.int64, device=d),
                                         torch.ones(3, 5, dtype=torch.int64, device=d), None), {}),
                   TypeError, ("input", "weight")),
}


def _raise_check(case_id, make_args, mode):
    op_name, build, exc, names = ERROR_CASES[case_id]
    op = OPS[op_name]
    if mode == "cpu":
        args, kwargs = build("cpu")
        ctx = contextlib.nullcontext()
    elif mode == "meta":
        args, kwargs = build("meta")
        ctx = contextlib.nullcontext()
    elif mode == "fake":
        fm = FakeTensorMode()
        args, kwargs = build("cpu")
        args = tuple(fm.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args)
        ctx = fm
    else:
        raise AssertionError(mode)
    with ctx:
        with pytest.raises(exc) as ei:
            make_args(op, args, kwargs)
    msg = str(ei.value)
    assert names_argument(msg, names), f"message {msg!r} names none of {names}"
    return msg


@pytest.mark.parametrize("mode", ["cpu", "meta", "fake"])
@pytest.mark.parametrize("case_id", list(ERROR_CASES))
def test_errors(case_id, mode):
    _raise_check(case_id, lambda op, a, k: op(*a, **k), mode)


@pytest.mark.parametrize("case_id", [c for c in ERROR_CASES if not c.startswith("linear")][::3])
def test_errors_through_python_wrappers(case_id):
    op_name = ERROR_CASES[case_id][0]
    wrapper = getattr(torch_tk, op_name)
    _raise_check(case_id, lambda op, a, k: wrapper(*a, **k), "cpu")


DEVICE_CASES = {
    "gemm_b": ("gemm", lambda t, o: ((t(4, 5), o(5, 3)), {})),
    "gemm_a": ("gemm", lambda t, o: ((o(4, 5), t(5, 3)), {})),
    "addmm_self": ("addmm", lambda t, o: ((o(3), t(4, 5), t(5, 3)), {})),
    "addmm_mat2": ("addmm", lambda t, o: ((t(3), t(4, 5), o(5, 3)), {})),
    "linear_weight": ("linear", lambda t, o: ((t(2, 5), o(3, 5), None), {})),
    "linear_bias": ("linear", lambda t, o: ((t(2, 5), t(3, 5), o(3)), {})),
}


@pytest.mark.parametrize("case_id", list(DEVICE_CASES))
def test_device_mismatch_cpu_meta(case_id):
    op_name, build = DEVICE_CASES[case_id]
    args, kwargs = build(lambda *s: torch.randn(*s), lambda *s: torch.randn(*s, device="meta"))
    with pytest.raises(ValueError):
        OPS[op_name](*args, **kwargs)


@pytest.mark.parametrize("case_id", list(DEVICE_CASES))
def test_device_mismatch_fake_cuda(case_id):
    # FakeTensorMode can create "cuda" fake tensors without a GPU.
    op_name, build = DEVICE_CASES[case_id]
    with FakeTensorMode():
        args, kwargs = build(lambda *s: torch.randn(*s), lambda *s: torch.randn(*s, device="cuda"))
        with pytest.raises(ValueError):
            OPS[op_name](*args, **kwargs)
