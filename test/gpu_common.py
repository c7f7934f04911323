"""Shared helpers of the GPU test files (test_gpu.py, test_gpu_plans.py, test_gpu_widths.py,
test_gpu_runtime.py; also used by test_skinny_gpu.py and test_gemm_pair_gpu.py). Not a test module.

Correctness standard: fresh randn inputs, float64 reference, relative-norm error
||out - ref|| / ||ref||:
  bf16 < 1e-2, fp16 < 2e-3 (fp32 accumulate; output rounding alone gives ~2e-3 / ~3e-4),
  out_dtype=float32 < 1e-5 against the float64 product of the (already rounded) inputs.
Every output is checked to be fully written: before each call the caching allocator is
filled with NaN garbage (blocks of the output's size and larger are allocated, filled
with 0xFF bytes -- NaN in bf16, fp16 and fp32 -- and freed), so an unwritten element
shows up as NaN. Calls are made twice and must agree bitwise.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

import torch_tk
from conftest import make_matrix, rel_err

_ONE_WG_DEFAULT = "81"  # TK_HOPPER_ONE_WG's default: plan_rules.h kOneWarpgroupWidths
_ODD_WIDTHS_DEFAULT = "262143"  # TK_HOPPER_ODD_WIDTHS's default: plan_rules.h kOddWidths
_ODD_MID_M, _ODD_UNSPLIT224 = 2048, 4096  # its bits 11 and 12: plan_rules.h kOddWidthsMidM, kOddWidthsRows64Unsplit224
_ODD_MID_M224, _ODD_144_UNALIGNED = 8192, 16384  # its bits 13 and 14: plan_rules.h kOddWidthsMidM224, kOddWidths144Unaligned
_ODD_SWAP_M224, _ODD_SWAP_M144 = 32768, 65536  # its bits 15 and 16: plan_rules.h kOddWidthsSwappedMid224 / 144
_ODD_MID192 = 131072  # its bit 17: plan_rules.h kOddWidthsMid192160

HAS_CUDA = torch.cuda.is_available()

# Every GPU test module sets `pytestmark = GPU_MARKS`.
GPU_MARKS = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device"),
]

needs_hopper = pytest.mark.skipif(
    not (HAS_CUDA and torch_tk.hopper_available()),
    reason="needs the Hopper kernel (sm_90 GPU and an sm_90a build)",
)

DEV = "cuda"
TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}
FP32_OUT_TOL = 1e-5
LOWP = [torch.bfloat16, torch.float16]
LAYOUTS = [("n", "n"), ("n", "t"), ("t", "n"), ("t", "t")]


def _dt(d):
    return str(d).replace("torch.", "")


def _lay(x):
    return "".join(x).upper()


# ============================================================================ helpers


def poison_allocator(*nbytes_list, copies=3):
    """Fill caching-allocator blocks with 0xFF (NaN for every float dtype) and free them,
    so that the next allocations of these sizes come back full of NaN."""
    junk = []
    for nb in nbytes_list:
        nb = max(int(nb), 1)
        for _ in range(copies):
            junk.append(torch.full((nb,), 255, dtype=torch.uint8, device=DEV))
    # plus a large block that can be split for anything else
    junk.append(torch.full((64 << 20,), 255, dtype=torch.uint8, device=DEV))
    torch.cuda.synchronize()
    del junk


def twice_poisoned(fn, nbytes):
    """fn() -> tuple of tensors, called twice, each time after poison_allocator(*nbytes): the two
    results must agree bitwise (an unwritten output element would come back NaN garbage, a race as a
    difference). Returns the first."""
    outs = []
    for _ in range(2):
        poison_allocator(*nbytes)
        outs.append(fn())
        torch.cuda.synchronize()
    for a, b in zip(*outs):
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), "two calls differ (unwritten output or a race)"
    return outs[0]


def _nbytes(shape, dtype):
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()


def run_poisoned(fn, out_shape, out_dtype, extra_bytes=()):
    """Call fn() twice, each time right after poisoning the allocator; both results must
    be bitwise identical (and are returned once)."""
    nb = _nbytes(out_shape, out_dtype)
    results = []
    for _ in range(2):
        poison_allocator(nb, *extra_bytes)
        out = fn()
        torch.cuda.synchronize()
        results.append(out)
    a, b = results
    assert a.shape == b.shape and a.dtype == b.dtype
    # bitwise equality (NaN-safe): compare raw bytes
    assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)), (
        "two identical calls gave different bits (unwritten output or a race)"
    )
    return a


class KernelWatch:
    """Counter / fallback-reason deltas over a block."""

    def __enter__(self):
        torch.cuda.synchronize()
        self.c0 = dict(torch_tk.kernel_counters())
        self.r0 = set(torch_tk.fallback_reasons())
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()
        c1 = dict(torch_tk.kernel_counters())
        self.delta = {k: c1[k] - self.c0.get(k, 0) for k in c1}
        self.new_reasons = set(torch_tk.fallback_reasons()) - self.r0
        return False

    def assert_hopper(self, at_least=1):
        assert self.delta["hopper"] >= at_least, f"Hopper kernel did not run: counters moved by {self.delta}"
        assert self.delta["fallback"] == 0, f"fell back: {self.delta}, reasons {self.new_reasons}"
        assert not self.new_reasons, f"new fallback reasons: {self.new_reasons}"


def ref64(a, b):
    return a.detach().double() @ b.detach().double()


def check(out, ref, tol, what):
    err = rel_err(out, ref)
    assert err < tol, f"{what}: relative error {err:.3e} >= {tol:.1e}"
    return err


def _check_meta(out, shape, dtype):
    assert out.device.type == "cuda"
    assert tuple(out.shape) == tuple(shape)
    assert out.dtype == dtype
    assert out.is_contiguous()


def _check_gemm_and_addmm(shape, layout, dtype, what):
    """A plain GEMM (one Hopper call, poisoned twice, bitwise equal) on fresh operands of `layout`
    against the float64 reference, then _check_addmm_case (16-bit output); `what` names the path."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    w.assert_hopper(1)
    check(out, ref64(a, b), TOL[dtype], f"gemm {shape} {_lay(layout)} {dtype} {what}")
    _check_addmm_case(shape, layout, dtype, False)


def _check_addmm_case(shape, layout, dtype, out_fp32):
    """2 * A @ B + 0.5 * bias on fresh operands of `layout`, twice after poisoning the allocator
    (bitwise equal), on the Hopper kernel, against the float64 reference."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    bias = torch.randn(N, device=DEV).to(torch.float32 if out_fp32 else dtype)
    out_dtype = torch.float32 if out_fp32 else dtype
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.addmm(bias, a, b, beta=0.5, alpha=2.0,
                                                  out_dtype=torch.float32 if out_fp32 else None), (M, N), out_dtype)
    w.assert_hopper(2)
    _check_meta(out, (M, N), out_dtype)
    ref = 2.0 * ref64(a, b) + 0.5 * bias.double()
    check(out, ref, 1e-5 if out_fp32 else TOL[dtype], f"addmm {shape} {_lay(layout)} {dtype} fp32out={out_fp32}")


# The tests whose calls go through the 16-bit epilogue's staging box (TMA store, transposed TMA
# store, staged copy-out) or around it (register stores, fp32 output, split-K).
_EPILOGUE_TESTS = ("test_gemm_grid or test_addmm or test_gemm_pitch_and_alignment or test_gemm_bm64 or "
                   "test_gemm_one_warpgroup_128x128 or "
                   "test_gemm_swap_ab_tma_store or test_gemm_dynamic_schedule or test_linear or test_gemm_noncontiguous or "
                   "test_gemm_short_k_many_units")


# The test files split from the one test_gpu.py; a child process selects its tests among all of them.
GPU_TEST_FILES = ("test_gpu.py", "test_gpu_plans.py", "test_gpu_widths.py", "test_gpu_runtime.py")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _pytest_child(knobs, tests, timeout=400):
    """Runs the GPU_TEST_FILES' `tests` (a -k expression) in a child process with the TK_HOPPER_*
    `knobs` set (they are read once per process) and returns its pytest stdout; the child must pass."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *[os.path.join(_HERE, f) for f in GPU_TEST_FILES], "-k", tests], env=dict(os.environ, **knobs), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0 and "failed" not in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]
    return r.stdout


def _forced_tile_params(shapes):
    """needs_hopper and the dtype x layout x shape grid of the forced-tile tests."""
    def deco(fn):
        fn = pytest.mark.parametrize("shape", shapes, ids=lambda s: "x".join(map(str, s)))(fn)
        fn = pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)(fn)
        fn = pytest.mark.parametrize("dtype", LOWP, ids=_dt)(fn)
        return needs_hopper(fn)
    return deco


def _forced_tile_case(forced, child_test, shape, layout, dtype, want, what, min_units=0):
    """One case of a forced-tile test (TK_HOPPER_TILE=`forced`, set by the child process that
    `child_test` starts; skipped elsewhere): the dispatcher's plan has the `want` fields (and at
    least `min_units` units), then gemm and addmm against the float64 reference."""
    if os.environ.get("TK_HOPPER_TILE") != forced:
        pytest.skip(f"runs in a child process with TK_HOPPER_TILE={forced} ({child_test})")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    assert {k: plan[k] for k in want} == want and plan["units"] >= min_units, plan
    _check_gemm_and_addmm(shape, layout, dtype, what)
