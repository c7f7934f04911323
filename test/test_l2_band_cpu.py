"""Host tests of the band rule's L2 model (csrc/gemm/hopper/l2_band.h) and its use in the planner.

`_C.raster_dram_mb` is the wave-level LRU model the opt-in band rule (TK_HOPPER_BAND_RULE=1,
plan_rules.h kBandRule) minimises; scripts/l2_raster_sim.py is the box-level LRU model it
abbreviates, itself fitted to ncu's DRAM reads on an H200 (its docstring). CPU only.
"""

from __future__ import annotations

import math
import pathlib
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts"))
import l2_raster_sim  # noqa: E402

DEFAULT_MB = 32.0  # plan_rules.h kL2ModelBytes


def units(M, N, K):
    return math.ceil(M / 128), math.ceil(N / 256), math.ceil(K / 64)


def box_lru_mb(M, N, K, g):
    tm, tn, kt = units(M, N, K)
    order = l2_raster_sim.row_bands(tm, tn, g, lambda i, a, b, c: tuple(_C.grouped_tile(i, a, b, c)))
    return l2_raster_sim.dram_read_mb(order, kt, DEFAULT_MB)


# Shapes whose box-level LRU is quick (< ~1 s each for all bands).
SHAPES = ["8192x2048x2048", "8192x2048x5632", "2048x5632x8192", "4096x4096x4096", "8192x5632x2048"]


@pytest.mark.parametrize("shape", SHAPES)
def test_wave_model_matches_box_lru(shape):
    M, N, K = map(int, shape.split("x"))
    tm, tn, kt = units(M, N, K)
    for g in (1, 4, 8, 16, 32):
        wave = _C.raster_dram_mb(tm, tn, kt, group_m=g)
        box = box_lru_mb(M, N, K, g)
        # Equal except near a capacity cliff (8192x5632x2048: 181 / 165 MB at band 8, 98 / 109 at 32).
        assert wave == pytest.approx(box, rel=0.12), (shape, g, wave, box)
        if shape != "8192x5632x2048":
            assert wave == pytest.approx(box, rel=0.02), (shape, g, wave, box)


def test_model_bounds_and_calibration():
    # Never below the unique operand bytes; the whole problem in L2 reads each panel once.
    tm, tn, kt = units(8192, 8192, 8192)
    unique = (8192 * 8192 * 2) * 2 / 1e6
    for g in (1, 8, 16):
        assert _C.raster_dram_mb(tm, tn, kt, group_m=g) >= unique * 0.999
        assert _C.raster_dram_mb(tm, tn, kt, group_m=g, cap_mb=1e6) == pytest.approx(unique, rel=1e-6)
    # ncu on an H200 (scripts/l2_raster_sim.py's calibration), measured MB, unclustered band 8:
    # 8192^3 1490, 8192x4096x4096 382, 8192x2048x5632 213.5; 2-CTA clusters in band 16 (8 units of
    # 256 rows, 66 at a time) 8192^3 1230 (benchmarks/NOTES.md, 2026-11-26c).
    for (M, N, K), mb in {(8192, 8192, 8192): 1490, (8192, 4096, 4096): 382, (8192, 2048, 5632): 213.5}.items():
        assert _C.raster_dram_mb(*units(M, N, K), group_m=8) == pytest.approx(mb, rel=0.05)
    assert _C.raster_dram_mb(32, 32, 128, 256, 256, 8, 66) == pytest.approx(1230, rel=0.05)


def plan(M, N, K, **kw):
    return _C.hopper_plan(M, N, K, 132, **kw)


def test_rule_off_by_default_and_bands_it_picks():
    model = {(8192, 5632, 2048): 32, (8192, 2048, 5632): 1, (5632, 2048, 8192): 1, (2048, 5632, 8192): 16,
             (8192, 2048, 2048): 8, (4096, 4096, 4096): 16}
    for shape, band in model.items():
        off, on = plan(*shape), plan(*shape, band_rule=1)
        assert off["group_m"] == 8  # the default band (kBandRule = 0)
        assert on["group_m"] == band, (shape, on)
        assert {k: v for k, v in on.items() if k != "group_m"} == {k: v for k, v in off.items() if k != "group_m"}
    # Long-running clustered plans: the kernel's band in units is group_m / 2; the model keeps 16.
    for shape in [(8192, 8192, 8192), (8192, 28672, 4096), (8192, 57344, 8192)]:
        off, on = plan(*shape), plan(*shape, band_rule=1)
        assert off["cluster"] == 2 and off["group_m"] == on["group_m"] == 16


def test_rule_with_stream_k_tails():
    # The even tail (mode 5) keeps the persistent grid: the dW GEMMs take the rule's bands as without
    # it; mode 4's generations (264 CTAs, 132 resident) keep the default band.
    for shape, band in {(5632, 2048, 8192): 1, (2048, 5632, 8192): 16}.items():
        even, waves = plan(*shape, band_rule=1, stream_k=5), plan(*shape, band_rule=1, stream_k=4)
        assert (even["group_m"], even["sk_tiles"], even["grid"]) == (band, 88, 132)
        assert (waves["group_m"], waves["sk_tiles"], waves["grid"]) == (8, 88, 264)


def test_rule_leaves_forced_bands_and_single_waves_alone():
    assert plan(8192, 5632, 2048, band_rule=1, group_m=4)["group_m"] == 4  # TK_HOPPER_GROUP_M wins
    assert plan(2048, 2048, 8192, band_rule=1)["group_m"] == 8  # 128 tiles: one wave
    p = plan(256, 8192, 8192, band_rule=1)  # skinny: one wave
    assert p["group_m"] == plan(256, 8192, 8192)["group_m"]
    forced = plan(8192, 5632, 2048, band_rule=1, tile=(False, 128, 256, 1, 1))
    assert forced["group_m"] == 8


@settings(max_examples=60, deadline=None)
@given(st.integers(1024, 16384), st.integers(1024, 32768), st.integers(512, 16384))
def test_rule_never_models_more_bytes(M, N, K):
    off, on = plan(M, N, K), plan(M, N, K, band_rule=1)
    if on["group_m"] == off["group_m"]:
        return
    c = off["cluster"]
    assert off["splits"] == 1 and off["units"] > off["grid"] // c
    tiles_m = -(-M // off["bm"]) if not off["swap_ab"] else -(-N // off["bm"])
    cols = N if not off["swap_ab"] else M
    um, un, kt = -(-tiles_m // c), -(-cols // off["bn"]), -(-K // 64)

    def mb(group_m):
        return _C.raster_dram_mb(um, un, kt, off["bm"] * c, off["bn"], group_m // c, off["grid"] // c)

    assert on["group_m"] % c == 0 and on["group_m"] // c in (1, 2, 4, 8, 12, 16, 24, 32)
    assert mb(on["group_m"]) <= 0.9 * mb(off["group_m"]) + 1e-9  # kBandRuleMinGain
