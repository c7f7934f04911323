"""GPU tests of the Hopper plans: the dynamic schedule, clusters, split-K, 64-row and
one-warpgroup tiles, swap-AB, the dispatch plan, and the epilogue variants run in child processes
under their TK_HOPPER_* knobs.

Every test is marked `gpu` and skipped without CUDA; the kernel tests are also skipped unless
torch_tk.hopper_available() (sm_90 + sm_90a build). Helpers and the correctness standard: gpu_common.py.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest
import torch

import torch_tk
from conftest import make_matrix
from gpu_common import (
    check, _check_addmm_case, _check_gemm_and_addmm, DEV, _dt, _EPILOGUE_TESTS, GPU_MARKS, _lay, LAYOUTS, LOWP,
    needs_hopper, _ONE_WG_DEFAULT, _pytest_child, ref64, run_poisoned, TOL,
)

pytestmark = GPU_MARKS


@needs_hopper
@pytest.mark.parametrize("out_fp32", [False, True], ids=["same", "fp32out"])
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(2049, 2055, 1000), (2049, 2055, 960), (4097, 1100, 520)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_dynamic_schedule(shape, layout, dtype, out_fp32):
    """Several waves of units handed out by the atomic ticket counter (plan.h `dynamic`), with
    tails in M, N and K; the addmm terms ride along. Under TK_HOPPER_STREAMK=3 (plan.h
    kStreamKTail) 2049x2055x1000 (153 tiles, 16 k tiles) takes the stream-K tail in 16-bit outputs,
    the 960-deep one not."""
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32)["dynamic"], "shape no longer exercises the dynamic schedule"
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(2049, 4104, 64), (4097, 2056, 130), (3000, 3000, 200), (1500, 5000, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_short_k_many_units(shape, layout, dtype):
    """Several units per CTA whose k ranges are shorter than a unit's epilogue rounds (1-4 k
    tiles against 4 rounds of 64 columns; N % 8 == 0: TMA-store epilogue): the deferred epilogue (TK_HOPPER_STORE=deferred,
    epilogue.cuh pack_unit) must store a held round before packing the next unit's."""
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = torch_tk._C.hopper_plan(M, N, K, sms, True)
    # (1500x5000x1000: 2-CTA clusters, plan_rules.h kSplitSectorClusters; units are per cluster)
    assert plan["units"] > plan["grid"] // plan["cluster"] and plan["splits"] == 1, \
        f"shape no longer gives several units per CTA: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("shape", [(2049, 4104, 64), (3000, 3000, 200), (60, 1032, 100), (330, 4000, 136)],
                         ids=lambda s: "x".join(map(str, s)))
def test_addmm_alpha_without_c(shape, dtype):
    """alpha != 1 and no C term (beta = 0): the epilogue's affine path with no C rows
    (epilogue.cuh out_pair), in the deferred 128x256 rounds (several units per CTA), the swapped
    transposed store and the one-warpgroup 128x128 tiles; alpha = 1 the plain path (TK_PLAIN_EPILOGUE, default 1)."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    nan_s = torch.full((N,), math.nan, device=DEV).to(dtype)  # ignored at beta = 0
    for alpha in (-1.75, 1.0):
        out = run_poisoned(lambda: torch_tk.addmm(nan_s, a, b, beta=0, alpha=alpha), (M, N), dtype)
        check(out, alpha * ref64(a, b), TOL[dtype], f"addmm beta=0 alpha={alpha} {shape}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
def test_gemm_long_run_cluster(layout, dtype):
    """A long-running plan (plan_rules.h kLongRunWork: 561 tiles x 257 k tiles) takes 2-CTA clusters
    multicasting the B tile and a 16-row-tile raster band by default: 33 row tiles, so the last
    pair's second CTA lies past M; tails in N and K; the addmm terms ride along."""
    shape = (4100, 4100, 16390)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = torch_tk._C.hopper_plan(*shape, sms, True)
    if os.environ.get("TK_HOPPER_CLUSTER") is None and os.environ.get("TK_HOPPER_GROUP_M") is None:
        assert (plan["cluster"], plan["group_m"], plan["bn"]) == (2, 16, 256), plan
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("out_fp32", [False, True], ids=["same", "fp32out"])
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(64, 2100, 4000), (300, 200, 3000), (129, 1000, 8200)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_fused_split_k(shape, layout, dtype, out_fp32):
    """Split-K finished inside the GEMM kernel (opt-in TK_HOPPER_FUSED_SPLIT=1, plan.h
    `fused_split`): the splits of a tile wait for each other's ready flags, then each stores a
    slice. Swapped and unswapped plans, 4-16 splits, tails in M, N and K; two poisoned runs must
    agree bitwise. The knob is read once per process: test_fused_split_k_in_child_process runs
    this test under it."""
    if os.environ.get("TK_HOPPER_FUSED_SPLIT") != "1":
        pytest.skip("runs in a child process with TK_HOPPER_FUSED_SPLIT=1 (test_fused_split_k_in_child_process)")
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32, fuse_split=True)
    assert plan["splits"] > 1 and plan["fused_split"], f"shape no longer exercises fused split-K: {plan}"
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,out_fp32", [((120, 1000, 9000), False), ((120, 1000, 9000), True),
                                            ((256, 1000, 3000), True), ((121, 1001, 9000), False)],
                         ids=["120x1000x9000", "120x1000x9000-fp32out", "256x1000x3000-fp32out", "121x1001x9000"])
def test_gemm_split_k_128x128(shape, out_fp32, layout, dtype):
    """Split-K on 128 x 128 tiles with an odd number of k tiles (141: 16 splits; 47: 8 splits of
    fp32-out plans): with several k tiles per stage (TK_BM128_KT=2 builds) every split range must
    start on a stage and the last one ends on a zero-filled tile past K (kittens::split_k_range
    align); tails in M, N and K, addmm terms. The reduction's vector path (M * N a multiple of 4)
    and, at 121x1001 (odd), its scalar path (splitk_reduce.cuh)."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32)
    assert plan["bm"] == 128 and plan["bn"] == 128 and plan["splits"] > 1, f"shape no longer splits 128x128 tiles: {plan}"
    # TK_HOPPER_ONE_WG with bit 2 (test_one_warpgroup_split_k_in_child_process): one warpgroup, two strips
    one_wg = int(os.environ.get("TK_HOPPER_ONE_WG", _ONE_WG_DEFAULT))  # (bit 3 leaves these 128-wide plans as they are)
    assert plan["wg_rows"] == (128 if (one_wg & 5) == 5 else 64), plan
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(150, 2100, 1000), (200, 4100, 1000), (128, 4096, 1000), (40, 8200, 520),
                                   (100, 8200, 8300), (128, 4096, 40), (130, 2100, 130)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_bm64(shape, layout, dtype):
    """64-row tiles (one consumer warpgroup; plan.h `bm`): unswapped, unclustered (64x64 with an
    odd number of row tiles; 64x128; a 16-B output pitch: the TMA-store epilogue; the CTA pairs
    those plans had before 2026-11-28e: test_bm64_pairs_in_child_process) and swapped unsplit
    plans (64x64, 64x128), tails in M, N and K, addmm terms; one k tile (K = 40), three and nine:
    the 64x64 kernels load two k tiles per stage, so an odd count ends on a tile past K that
    arrives zero-filled."""
    if os.environ.get("TK_HOPPER_BM64") == "0":
        pytest.skip("TK_HOPPER_BM64=0 turns 64-row tiles off")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    assert plan["bm"] == 64, f"shape no longer exercises 64-row tiles: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (900, 1000, 2040)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_mid64_pairs(shape, layout, dtype):
    """One wave of 64x128 tiles in 2-CTA clusters multicasting the B tile (plan_rules.h kMid64Pairs), the
    plan for a B whose line pitch splits 32-B sectors (2000 / 4080 B in F.linear's layout; the
    other layouts get their own plans, checked all the same): N and K tails, and an M tail whose
    last pair's second CTA lies past M (900 rows: 15 row tiles in 8 pairs), addmm terms."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    mid64 = int(os.environ.get("TK_HOPPER_MID64", "3"))
    want = (64, 128, 2, 1) if mid64 == 3 else (64, 128, 1, 1) if mid64 == 1 else (128, 64, 1, 1)
    assert (plan["bm"], plan["bn"], plan["cluster"], plan["splits"]) == want, plan
    _check_gemm_and_addmm(shape, layout, dtype, "mid64 pairs")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
def test_gemm_sector_clusters(layout, dtype):
    """128x256 plans of a wave or more in 2-CTA clusters for a B pitch that splits 32-B sectors
    (plan_rules.h kSplitSectorClusters; 2000 B in F.linear's layout): 2200x4000x1000, 144 cluster units
    on the dynamic schedule, M / N / K tails (the last row-tile pair half past M)."""
    M, N, K = 2200, 4000, 1000
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    if os.environ.get("TK_HOPPER_CLUSTER"):
        pytest.skip("TK_HOPPER_CLUSTER overrides the plan's clusters")
    on = os.environ.get("TK_HOPPER_SECTOR_CLUSTERS", "1") != "0"
    assert (plan["bm"], plan["bn"], plan["splits"]) == (128, 256, 1) and plan["cluster"] == (2 if on else 1), plan
    assert plan["dynamic"], plan
    _check_gemm_and_addmm((M, N, K), layout, dtype, "sector clusters")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(100, 20000, 520), (250, 33696, 256)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_swap_ab_tma_store(shape, layout, dtype):
    """Swap-AB plans without a K split store a 16-bit output with a 16-B row pitch through the
    transposed TMA-store epilogue (epilogue.cuh kStoreTmaTransposed: each 64x64 staging box holds
    one 128-B line per token): 128x128 and 128x256 tiles, a token tail (M not a multiple of 64),
    a weight tail (N not a multiple of 64), addmm terms, 4 layouts."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    assert plan["swap_ab"] and plan["splits"] == 1 and N % 8 == 0, f"shape no longer takes this path: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,out_fp32", [((240, 8200, 520), False), ((130, 8200, 999), True),
                                            ((330, 4000, 1000), False), ((500, 4000, 130), True),
                                            ((240, 8192, 8192), False), ((240, 8199, 8191), False)],
                         ids=["240x8200x520", "130x8200x999-fp32out", "330x4000x1000", "500x4000x130-fp32out",
                              "240x8192x8192", "240x8199x8191"])
def test_gemm_one_warpgroup_128x128(shape, out_fp32, layout, dtype):
    """128x128 tiles run by one consumer warpgroup as two 64-row strips (plan_rules.h kOneWarpgroupWidths,
    gemm_layout WG_ROWS_ = 128): unswapped (16-bit output: plan_rules.h kUnswapOneWave128) and swapped
    (fp32 output; 16-bit too under TK_HOPPER_UNSWAP128=0, test_unswap128_off_in_child_process),
    token and weight tails, odd K, 16-bit output through the TMA-store epilogue (one staging area
    per strip) and fp32 output from registers, addmm terms, 4 layouts. From K = 6144 (plan_rules.h
    kRingStagingMinKTiles) the staging boxes lie in the stage ring (the last two shapes: a TMA
    store, and an odd output pitch through the staged copy-out after an odd-K re-pitch copy)."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32)
    if os.environ.get("TK_HOPPER_ONE_WG") in ("0", "2"):
        assert plan["wg_rows"] == 64
        pytest.skip("TK_HOPPER_ONE_WG turns one-warpgroup 128x128 tiles off")
    assert plan["wg_rows"] == 128 and plan["bm"] == 128 and plan["bn"] == 128, f"shape no longer takes this path: {plan}"
    ring = os.environ.get("TK_HOPPER_RING_STAGING")  # the knob, else the rule (K >= 6144)
    assert plan["ring_staging"] == (not out_fp32 and (ring == "1" or (ring is None and -(-K // 64) >= 96))), plan
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
def test_unswap128_off_in_child_process():
    """Swapped one-wave 128x128 plans kept swapped (TK_HOPPER_UNSWAP128=0): the one-warpgroup
    kernels' transposed TMA-store epilogue, one staging area per strip (240x8200x520)."""
    out = _pytest_child({"TK_HOPPER_UNSWAP128": "0"}, "test_gemm_one_warpgroup_128x128", timeout=400)
    assert re.search(r"\b48 passed", out), out[-4000:]


@needs_hopper
def test_dispatch_plan_is_the_default_plan():
    """hopper_dispatch_plan (what the dispatcher and bench_gemm's plan column use) is hopper_plan
    with this GPU's SM count when no TK_HOPPER_* knob is set, for contiguous operands in each layout:
    the odd widths only where the Y operand is K-major (odd_layouts), the sector bits from the
    pitches TMA reads (a pitch that is not a 16-B multiple is re-pitched into whole lines)."""
    if any(k.startswith("TK_HOPPER_") for k in os.environ):
        pytest.skip("a TK_HOPPER_* knob is set in this process")
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def split(pitch_bytes):
        return pitch_bytes % 16 == 0 and pitch_bytes % 32 != 0  # plan_rules.h split_sectors_contiguous

    for M, N, K in [(8192, 8192, 8192), (128, 4096, 4096), (1000, 1001, 999), (64, 4100, 4000), (1024, 1024, 1024),
                    (256, 8192, 8192), (172, 8192, 4096),  # ring staging
                    (4097, 4097, 4097), (1024, 14336, 4096), (1536, 1536, 1000), (1500, 6152, 1032)]:  # odd widths, sectors
        for out_fp32 in (False, True):
            assert torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32) == \
                torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32)
            for lay in LAYOUTS:
                a_mn, b_mn = lay[0] == "t", lay[1] == "n"
                sectors = (1 if split(2 * (M if a_mn else K)) else 0) | (2 if split(2 * (N if b_mn else K)) else 0)
                want = torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32, odd_layouts=(0 if a_mn else 1) | (0 if b_mn else 2),
                                               split_sectors=sectors)
                assert torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32, _lay(lay)) == want, (M, N, K, lay)
    # 5 waves of 128x256 or of 128x224: unswapped where B is column-major (plan_rules.h kOddWidthsMidM224),
    # swapped where only A is row-major (torch.mm's NN: kOddWidthsSwappedMid224), none for TN
    want224 = {"NT": (False, 224), "NN": (True, 224), "TT": (False, 224), "TN": (False, 256)}
    for lay, want in want224.items():
        p = torch_tk._C.hopper_dispatch_plan(4097, 4097, 4097, 0, False, lay)
        assert (p["swap_ab"], p["bn"]) == (want if sms == 132 or lay == "TN" else (p["swap_ab"], p["bn"])), (lay, p)
    with pytest.raises(ValueError, match="layout"):
        torch_tk._C.hopper_dispatch_plan(64, 64, 64, 0, False, "XT")



@needs_hopper
@pytest.mark.parametrize("variant", ["stmatrix", "copy", "deferred", "tma"])
def test_store_variants_in_child_process(variant):
    """TK_HOPPER_STORE=stmatrix (staging box filled by stmatrix, epilogue.cuh), =copy (no TMA
    store), =deferred (rounds stored under the next unit's mainloop) and =tma (stored at once)
    pass the epilogue tests; the child confirms it ran that variant."""
    env = dict(os.environ, TK_HOPPER_STORE=variant)
    q = subprocess.run([sys.executable, "-c", "import torch_tk; print(torch_tk._C.hopper_store_variant())"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert q.stdout.strip() == variant, q.stdout + q.stderr
    out = _pytest_child({"TK_HOPPER_STORE": variant}, _EPILOGUE_TESTS)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-4000:]


@needs_hopper
def test_general_body_in_child_process():
    """TK_HOPPER_PLAIN_BODY=0: plain GEMMs take the kernels' general body (the one addmm and the
    other store variants take) instead of their plain bodies (csrc/gemm/hopper/plain_body.cuh), and
    pass the epilogue tests."""
    out = _pytest_child({"TK_HOPPER_PLAIN_BODY": "0"}, _EPILOGUE_TESTS)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-4000:]


@needs_hopper
@pytest.mark.parametrize("knob", ["TK_HOPPER_PRE_ISSUE", "TK_HOPPER_EARLY_START"])
def test_start_forms_in_child_process(knob):
    """The unclustered kernels' start without the pre-issue (TK_HOPPER_PRE_ISSUE=0: the first loads
    from the producer branch) and without the early start (TK_HOPPER_EARLY_START=0: behind a
    __syncthreads, no pre-issue either) passes the epilogue tests (gemm_kernel.cuh)."""
    out = _pytest_child({knob: "0"}, _EPILOGUE_TESTS)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-4000:]


@needs_hopper
@pytest.mark.parametrize("bits", ["0", "3"])
def test_l2_evict_first_in_child_process(bits):
    """TK_HOPPER_EVICT_FIRST=0 (no L2 policy, also where the plan sets one for B: M <= 256) and =3
    (both operands under evict_first, through the plain and the multicast TMA loads) pass the
    64-row, swap-AB and dynamic-schedule tests."""
    out = _pytest_child({"TK_HOPPER_EVICT_FIRST": bits},
                        "test_gemm_bm64 or test_gemm_swap_ab_tma_store or test_gemm_dynamic_schedule")
    assert re.search(r"\b120 passed", out), out[-4000:]


@needs_hopper
def test_fused_split_k_in_child_process():
    out = _pytest_child({"TK_HOPPER_FUSED_SPLIT": "1"}, "test_gemm_fused_split_k", timeout=300)
    assert re.search(r"\b48 passed", out), out[-4000:]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(250, 1300, 9001), (200, 4100, 14400), (232, 4100, 11000), (255, 8199, 14335)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_split_k_wide(shape, layout, dtype):
    """Split 128x256 plans of 193..256 tokens: swapped 128x256 tiles x 4 splits (200x4100x14400), or,
    where the partials cost more (plan_rules.h kUnswapOneWave128 = 2), unswapped 128x128 tiles with fewer
    splits (12 -> 6, 4 -> 2) or none (255x8199x14335: 2 -> unsplit, one warpgroup, ring staging);
    under TK_HOPPER_ONE_WG bit 3 (test_one_warpgroup_split_k_in_child_process) swapped 128x128
    one-warpgroup tiles with fewer splits instead; tails in M, N and K, addmm terms."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    want = {  # (swap_ab, bn, splits, wg_rows): default, TK_HOPPER_ONE_WG=13
        (250, 1300, 9001): ((False, 128, 6, 64), (True, 128, 6, 128)),
        (200, 4100, 14400): ((True, 256, 4, 64), (True, 128, 2, 128)),
        (232, 4100, 11000): ((False, 128, 2, 64), (True, 128, 2, 128)),
        (255, 8199, 14335): ((False, 128, 1, 128), (False, 128, 1, 128)),
    }[shape][(int(os.environ.get("TK_HOPPER_ONE_WG", _ONE_WG_DEFAULT)) & 13) == 13]
    assert (plan["swap_ab"], plan["bn"], plan["splits"], plan["wg_rows"]) == want, f"shape no longer takes this plan: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(190, 1030, 14001), (177, 1999, 14335), (192, 4100, 14400), (150, 4100, 14001)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_split_k_192(shape, layout, dtype):
    """Split 128x192 plans of 129..192 tokens: where the partials cost more (plan_rules.h
    kUnswapOneWave128 = 3) unswapped 128x128 tiles at half the splits (14 -> 7, 8 -> 4), the second
    token tile mostly past M; else swapped 128x192 tiles x 4 splits, or up to 160 tokens with a
    row-major A swapped 128x160 ones (kOddWidths bit 5; a column-major A keeps 128x192); tails in M,
    N and K, addmm terms."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    want = {(190, 1030, 14001): (False, 128, 7, 64), (177, 1999, 14335): (False, 128, 4, 64),
            (192, 4100, 14400): (True, 192, 4, 64), (150, 4100, 14001): (True, 160, 4, 64)}[shape]
    assert (plan["swap_ab"], plan["bn"], plan["splits"], plan["wg_rows"]) == want, f"shape no longer takes this plan: {plan}"
    if want[1] == 160:  # this layout's plan (the dispatcher's odd_layouts: bit 0 A row-major, bit 1 B column-major)
        lay = (layout[0] == "n") | (layout[1] == "t") << 1
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        assert torch_tk._C.hopper_plan(M, N, K, sms, odd_layouts=lay)["bn"] == (160 if lay & 1 else 192)
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
def test_one_warpgroup_split_k_in_child_process():
    """The one-warpgroup (two-strip) 128x128 kernels on split-K plans, and split 128x256 plans
    re-planned as those (TK_HOPPER_ONE_WG=13: bits 0, 2, 3; opt-in)."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": "13"}, "test_gemm_split_k_128x128 or test_gemm_split_k_wide", timeout=400)
    assert re.search(r"\b64 passed", out), out[-4000:]


@needs_hopper
def test_partial_register_stores_in_child_process():
    """TK_HOPPER_PARTIAL_TMA=0: split-K partials stored from registers (store_unit; the path that
    N % 4 != 0 and the fp32-output kernels always take) instead of the staged TMA rounds
    (store_unit_partial_tma), on the 128x128 and 128x256 split tests."""
    out = _pytest_child({"TK_HOPPER_PARTIAL_TMA": "0"}, "test_gemm_split_k_128x128 or test_gemm_split_k_wide",
                        timeout=400)
    assert re.search(r"\b64 passed", out), out[-4000:]
