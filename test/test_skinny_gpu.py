"""GPU tests of the skinny (decode-shape) kernel: M <= 16 tokens (9..16 by default only in 32-row
CTAs of 16 warps, one per SM; scripts/gpu_check.sh also runs this file under
TK_HOPPER_SKINNY_ROWS16=16 and =32, the other CTA shapes), F.linear's layout
(A row-major, B = weight^T, both K-contiguous). Same standard as gpu_common.py: fresh randn data,
NaN-poisoned allocator, two calls bitwise equal, float64 reference with a relative-norm tolerance;
every case also asserts which Hopper kernel ran: the skinny one up to the limit, the wgmma GEMM
past it (so both paths are checked on the same shapes)."""

from __future__ import annotations

import os

import pytest
import torch

import torch_tk
from conftest import rel_err
from gpu_common import DEV, FP32_OUT_TOL, LOWP, TOL, KernelWatch, _dt, needs_hopper, ref64, run_poisoned

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

# N = 1057: a partial 16/32-row CTA; K = 1000 (partial 32-chunk), 999 (odd: re-pitched), 7 (tail only).
SHAPES = [(m, n, k) for m in (1, 3, 8, 9, 13, 16) for (n, k) in ((4096, 4096), (1057, 1000))]
SHAPES += [(5, 2048, 999), (12, 1100, 7), (9, 4096, 33), (2, 14336, 64), (16, 1111, 8191)]
# 32-row CTAs (skinny_plan.h, 132 SMs): 16 warps with a partial CTA and odd K; 8 warps (under
# TK_HOPPER_SKINNY_ROWS16=32), partial CTA.
SHAPES += [(11, 4100, 999), (14, 8200, 130)]


def _plan_knobs():
    # the dispatcher's token limit and 9..16-token CTA shape in this process (read once there)
    v, r = os.environ.get("TK_HOPPER_SKINNY_MAX_M"), os.environ.get("TK_HOPPER_SKINNY_ROWS16")
    max_m = min(int(v), 16) if v else torch_tk._C.hopper_skinny_max_m
    knobs = {"max_m": max_m, "rows_tn2": int(r) if r in ("16", "32", "33") else 0}
    if os.environ.get("TK_HOPPER_SKINNY_YIELD") in ("0", "1"):
        knobs["vs_gemm"] = os.environ["TK_HOPPER_SKINNY_YIELD"] == "1"
    return knobs


def _skinny_ran(w, M, N, K):
    """The skinny kernel ran (twice) exactly where its plan takes the shape (skinny_plan.h)."""
    w.assert_hopper(2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if torch_tk._C.hopper_skinny_plan(M, N, K, sms=sms, **_plan_knobs())["use"]:
        assert w.delta["hopper_skinny"] >= 2, f"the skinny kernel did not run: {w.delta}"
    else:
        assert w.delta["hopper_skinny"] == 0, f"the skinny kernel ran outside its plan: {w.delta}"


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_skinny_linear(shape, dtype):
    M, N, K = shape
    x = torch.randn(M, K, dtype=dtype, device=DEV)
    weight = torch.randn(N, K, dtype=dtype, device=DEV)
    bias = torch.randn(N, dtype=dtype, device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.ops.linear(x, weight, bias), (M, N), dtype)
    _skinny_ran(w, M, N, K)
    assert out.shape == (M, N) and out.dtype == dtype
    err = rel_err(out, ref64(x, weight.t()) + bias.double())
    assert err < TOL[dtype], f"linear {shape} {dtype}: {err:.3e}"


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("beta,alpha", [(0.5, 2.0), (-1.0, 0.25), (0, 1.5)])
def test_skinny_addmm(beta, alpha, dtype):
    M, N, K = 12, 3000, 1000
    a = torch.randn(M, K, dtype=dtype, device=DEV)
    b = torch.randn(N, K, dtype=dtype, device=DEV).t()
    c = torch.randn(M, N, dtype=dtype, device=DEV).t().contiguous().t()  # column-major C
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.ops.addmm(c, a, b, beta=beta, alpha=alpha), (M, N), dtype)
    _skinny_ran(w, M, N, K)
    ref = alpha * ref64(a, b) + beta * c.double()
    assert rel_err(out, ref) < TOL[dtype]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_skinny_out_dtype_fp32(dtype):
    M, N, K = 9, 2112, 1001
    a = torch.randn(M, K, dtype=dtype, device=DEV)
    b = torch.randn(N, K, dtype=dtype, device=DEV).t()
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b, out_dtype=torch.float32), (M, N), torch.float32)
    _skinny_ran(w, M, N, K)
    assert out.dtype == torch.float32
    assert rel_err(out, ref64(a, b)) < FP32_OUT_TOL


@needs_hopper
def test_skinny_matches_wgmma_kernel():
    """The two Hopper paths agree (M = 8, where the plan could take either)."""
    a = torch.randn(8, 4096, dtype=torch.bfloat16, device=DEV)
    b = torch.randn(4096, 4096, dtype=torch.bfloat16, device=DEV).t()
    with KernelWatch() as w:
        skinny = torch_tk.gemm(a, b, out_dtype=torch.float32)
    assert w.delta["hopper_skinny"] == 1
    with KernelWatch() as w:
        wgmma = torch_tk.gemm(a.t().contiguous().t(), b, out_dtype=torch.float32)  # column-major A: GEMM kernel
    assert w.delta["hopper_skinny"] == 0 and w.delta["hopper"] == 1
    assert rel_err(skinny, wgmma.double()) < 1e-5


@needs_hopper
def test_skinny_not_used_outside_its_layout():
    a = torch.randn(8, 4096, dtype=torch.bfloat16, device=DEV)
    b = torch.randn(4096, 4096, dtype=torch.bfloat16, device=DEV)  # row-major B: N contiguous
    with KernelWatch() as w:
        out = torch_tk.gemm(a, b)
    assert w.delta["hopper_skinny"] == 0 and w.delta["hopper"] == 1
    assert rel_err(out, ref64(a, b)) < TOL[torch.bfloat16]


@needs_hopper
def test_skinny_at_a_full_wgmma_wave():
    """8x8192x8192: the wgmma plan is one full wave of unsplit tiles; the skinny kernel takes it
    unless TK_HOPPER_SKINNY_YIELD=1 (skinny_plan.h kSkinnyYield)."""
    a = torch.randn(8, 8192, dtype=torch.bfloat16, device=DEV)
    weight = torch.randn(8192, 8192, dtype=torch.bfloat16, device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.ops.linear(a, weight), (8, 8192), torch.bfloat16)
    _skinny_ran(w, 8, 8192, 8192)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    yields = os.environ.get("TK_HOPPER_SKINNY_YIELD") == "1"
    assert torch_tk._C.hopper_skinny_plan(8, 8192, 8192, sms=sms, vs_gemm=yields)["use"] != yields  # test_skinny_math.py
    assert rel_err(out, ref64(a, weight.t())) < TOL[torch.bfloat16]
