"""CPU tests of torch.ops.tk.{gemm,addmm,linear}: correctness against a float64
reference, layouts, broadcasting and empty shapes. (opcheck and gradients: test_ops_grad_cpu.py;
errors: test_ops_errors_cpu.py; shared helpers: ops_helpers.py.)"""

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
    make_matrix,
    ref_addmm,
    ref_linear,
    ref_mm,
    rel_err,
)
from ops_helpers import SELF_SHAPES, _check_out, _dt

# Small (M, N, K) shapes with tails (not multiples of 8/16/64).
SHAPES = [(1, 1, 1), (7, 5, 3), (17, 33, 65), (64, 48, 129)]


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
