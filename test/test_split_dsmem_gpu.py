"""GPU tests of split-K finished in distributed shared memory (csrc/gemm/hopper/split_dsmem.cuh):
the splits of a tile run as the CTAs of one cluster and add their fp32 sums through each other's
shared memory instead of writing partials for a reduction kernel.

Every case: fresh random operands, outputs poisoned before each of two calls (bitwise equal: the
sum's order is fixed), float64 reference with a relative-norm tolerance, and the counter
kernel_counters()["hopper_split_cluster"] says whether the path ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

import torch_tk
from conftest import make_matrix
from test_gpu import DEV, LAYOUTS, LOWP, TOL, KernelWatch, _dt, _lay, check, needs_hopper, ref64, run_poisoned

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

NT = ("n", "t")  # F.linear's layout: the one hopper_dispatch_plan describes (K-major A and B)


def _eligible(plan, N):
    """launch_impl.cuh dsmem_wanted for a plain 16-bit GEMM into a fresh (16-B aligned) output."""
    return (2 <= plan["splits"] <= 4 and plan["units"] == plan["grid"] and not plan["dynamic"]
            and plan["sk_tiles"] == 0 and plan["bm"] == 128 and plan["bn"] % 64 == 0 and (2 * N) % 16 == 0)


def _run_case(shape, layout, dtype, alpha=None):
    """torch_tk.gemm (alpha None) or addmm(beta=0, alpha) -- no C term -- checked; returns how
    many calls finished split-K in clusters."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    if alpha is None:
        fn, ref = (lambda: torch_tk.gemm(a, b)), ref64(a, b)
    else:
        nan_bias = torch.full((N,), float("nan"), device=DEV).to(dtype)  # ignored at beta = 0
        fn, ref = (lambda: torch_tk.addmm(nan_bias, a, b, beta=0, alpha=alpha)), alpha * ref64(a, b)
    with KernelWatch() as w:
        out = run_poisoned(fn, (M, N), dtype)
    w.assert_hopper(2)
    check(out, ref, TOL[dtype], f"{shape} {_lay(layout)} {dtype} alpha={alpha}")
    return w.delta.get("hopper_split_cluster", 0)


# 256x4096x14336: swapped 128x256 x 4 splits; 128x4096x14336: 128x128 x 4; 64x4096x14336: 128x64
# x 4 (one round per strip: two of the four CTAs own nothing); 384x4096x14336: 128x192 x 2;
# 200x4104x9000: tails in M, N (not a multiple of the tile) and K; 200x4100x9000: an output pitch
# TMA cannot store (8200 B), so the partials and the reduction kernel instead.
SHAPES = [(256, 4096, 14336), (128, 4096, 14336), (64, 4096, 14336), (384, 4096, 14336), (200, 4104, 9000),
          (200, 4100, 9000)]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_split_k_in_clusters(shape, layout, dtype):
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    ran = _run_case(shape, layout, dtype)
    if layout == NT:
        assert plan["splits"] > 1, f"{shape} no longer splits K: {plan}"
        want = 2 if _eligible(plan, N) and os.environ.get("TK_HOPPER_SPLIT_DSMEM", "1") != "0" else 0
        assert ran == want, f"split-K in clusters ran {ran} of 2 calls, expected {want}: {plan}"
        if N == 4100:
            assert want == 0
    if layout == NT and shape == (256, 4096, 14336):
        _run_case(shape, layout, dtype, alpha=-1.75)  # alpha applied by the owner's epilogue


def _pytest_child(knobs, tests, timeout=400):
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.abspath(__file__),
                        "-k", tests], env=dict(os.environ, **knobs), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0 and "failed" not in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]
    return r.stdout


_FORCED = os.environ.get("TK_HOPPER_TILE", "")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("shape", [(256, 4096, 14336), (250, 4104, 3000)], ids=lambda s: "x".join(map(str, s)))
def test_forced_split_tile(shape, dtype):
    """A tile and split count forced by TK_HOPPER_TILE (test_forced_tiles_in_child_process): 3
    splits (uneven (strip, round) shares: 8 or 4 over 3 CTAs), 2 splits on swapped 128x128,
    unswapped 128x256 and 128x192 tiles (3 rounds over 2 CTAs); K tails (3000 = 46.9 k tiles)."""
    if not _FORCED:
        pytest.skip("runs in a child process with TK_HOPPER_TILE set (test_forced_tiles_in_child_process)")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    ran = _run_case(shape, NT, dtype)
    assert plan["splits"] > 1 and _eligible(plan, N), plan
    # Up to 128 CTAs every cluster of 2 or 3 is resident on an H100/H200 (132 SMs); past that the
    # launcher may decline (a second wave of clusters) and take the reduction kernel.
    assert ran == 2 or (plan["units"] > 128 and ran == 0), (plan, ran)


@needs_hopper
@pytest.mark.parametrize("tile", ["1:128:256:3:1", "0:128:256:2:1", "1:128:128:2:1", "0:128:192:2:1"])
def test_forced_tiles_in_child_process(tile):
    out = _pytest_child({"TK_HOPPER_TILE": tile}, "test_forced_split_tile")
    assert re.search(r"\b4 passed", out), out[-4000:]


@needs_hopper
def test_one_warpgroup_tiles_in_child_process():
    """The one-warpgroup (two-strip) 128x128 kernels on split plans (TK_HOPPER_ONE_WG=13)."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": "13"}, "test_split_k_in_clusters and 4096x14336")
    assert re.search(r"\b32 passed", out), out[-4000:]


@needs_hopper
def test_off_in_child_process():
    """TK_HOPPER_SPLIT_DSMEM=0: the partials and the reduction kernel (counter stays 0)."""
    out = _pytest_child({"TK_HOPPER_SPLIT_DSMEM": "0"}, "test_split_k_in_clusters and NT and 256x4096")
    assert re.search(r"\b2 passed", out), out[-4000:]
