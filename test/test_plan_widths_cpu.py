"""Host tests of the Hopper planner's tile-width rules (csrc/gemm/hopper/plan.h, plan_rules.h) through
torch_tk._C.hopper_plan: one consumer warpgroup on 128x128 / 128x144 tiles, split 128x256 plans as
128x128 or 128x160, the 128x192 rule (kWidth192), and the odd widths (144 / 160 / 224, and 192 / 160
past 512 tokens) for mid-size problems. CPU only; the planner's invariants are in test_plan_cpu.py.
"""

from __future__ import annotations

import pytest

from torch_tk import _C
from plan_helpers import (
    _ODD_ALL, _ODD_BEFORE_03D, _ODD_MID_M, _ODD_BEFORE_03E, _ODD_MID_M224, _ODD_144_UNALIGNED, _ODD_BEFORE_04,
    _ODD_SWAP_M224, _ODD_SWAP_M144, _ODD_BEFORE_04B, _ODD_MID192,
)


@pytest.mark.parametrize("M,N,K,all_widths,want", [
    (256, 8192, 8192, True, 128),   # 128 swapped 128x128 tiles, one per CTA
    (128, 14336, 4096, True, 128),  # 112 of them
    (512, 4096, 1000, True, 128),   # unswapped
    (200, 8200, 520, False, 128),   # fp32-output plans (128-wide only) too
    (128, 4096, 14336, True, 64),   # split-K: only under mask bit 2 (below)
    (8192, 8192, 8192, True, 64),   # 128x256 tiles
    (250, 12000, 256, False, 64),   # 188 units on 132 CTAs: the epilogue would not overlap
    (1000, 1001, 999, True, 64),    # 128x64 tiles
])
def test_plan_one_warpgroup_128x128(M, N, K, all_widths, want):
    """plan_rules.h kOneWarpgroupWidths: one consumer warpgroup (two 64-row strips) on 128x128 tiles when
    every CTA runs one unit, unclustered and unsplit; one_wg=0 (TK_HOPPER_ONE_WG=0) never."""
    p = _C.hopper_plan(M, N, K, 132, all_widths)
    assert p["wg_rows"] == want, p
    if want == 128:
        assert (p["bm"], p["bn"], p["splits"], p["cluster"], p["sk_tiles"]) == (128, 128, 1, 1, 0) and p["units"] <= p["grid"]
    off = _C.hopper_plan(M, N, K, 132, all_widths, one_wg=0)
    # nothing else changes but the ring staging, which needs the one-warpgroup kernel
    assert off["wg_rows"] == 64 and not off["ring_staging"]
    assert {**off, "wg_rows": p["wg_rows"], "ring_staging": p["ring_staging"]} == p
    split = _C.hopper_plan(M, N, K, 132, all_widths, one_wg=5)  # bit 2: split-K plans too
    assert split["wg_rows"] == (128 if want == 128 or (p["bm"], p["bn"], p["splits"], p["cluster"]) == (128, 128, 4, 1) else 64)
    assert {**split, "wg_rows": p["wg_rows"], "ring_staging": p["ring_staging"]} == p


@pytest.mark.parametrize("M,N,K,ring", [
    (384, 6144, 4096, False), (256, 8960, 8960, True), (340, 6150, 8200, True), (250, 8999, 8191, True),
])
def test_plan_one_warpgroup_144(M, N, K, ring):
    """plan_rules.h kOneWarpgroupWidths bit 6 (default since 2026-12-03c; TK_HOPPER_ONE_WG=17 turns it
    off): the unswapped unsplit one-unit-per-CTA 128 x 144 plans on one consumer warpgroup, with ring
    staging from 96 k tiles; nothing else changes. Swapped 144-wide tiles keep two warpgroups."""
    p = _C.hopper_plan(M, N, K, 132, one_wg=17)
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["wg_rows"], p["ring_staging"]) == (False, 128, 144, 1, 64, False), p
    assert p["units"] <= p["grid"] and not p["dynamic"]
    q = _C.hopper_plan(M, N, K, 132)
    assert (q["wg_rows"], q["ring_staging"]) == (128, ring), q
    assert {**q, "wg_rows": 64, "ring_staging": False} == p
    f = _C.hopper_plan(M, N, K, 132, one_wg=17 | 64, tile=(True, 128, 144, 1, 1))
    assert f["bn"] != 144 or not f["swap_ab"] or f["wg_rows"] == 64, f


@pytest.mark.parametrize("M,N,K,want", [
    (256, 4096, 14336, (128, 2)),  # 32 128x256 tiles x 4 splits -> 64 128x128 tiles x 2
    (250, 1100, 9001, (128, 7)),   # 9 x 14 -> 18 x 7
    (256, 14336, 4096, (256, 1)),  # unsplit: unchanged
    (1, 4096, 14336, (64, 4)),     # not a 128x256 plan: unchanged
])
def test_plan_split_wide_as_128x128(M, N, K, want):
    """plan.h one_wg bit 3 (A/B): a split 128x256 plan takes 128x128 tiles when they need fewer
    splits, then (bits 0 and 2) on one warpgroup; the default plans are unchanged."""
    p = _C.hopper_plan(M, N, K, 132, one_wg=13, odd_widths=3)
    assert (p["bn"], p["splits"]) == want, p
    assert p["units"] <= p["grid"] or want[1] == 1
    if want[0] == 128:
        # (the default plan stays wide: 256, or 192 where plan.h's bn192 = 3 rule re-plans it)
        assert p["wg_rows"] == 128 and _C.hopper_plan(M, N, K, 132, unswap128=1)["bn"] in (192, 256)


@pytest.mark.parametrize("M,N,K,bn192,want", [
    # (swap_ab, bn, units) with the knob; None: the bn192 = 0 plan
    (160, 28672, 4096, 1, (True, 192, 224)),   # 160 tokens: 192-wide instead of 256-wide tiles
    (192, 14336, 4096, 1, (True, 192, 112)),
    (130, 8200, 9000, 1, (True, 192, 130)),    # 65 tiles x 2 splits
    (256, 11008, 4096, 1, None),               # 256 tokens: rule 1 leaves it
    (256, 11008, 4096, 2, (False, 192, 116)),  # 86 swapped 128x256 -> 116 unswapped 128x192
    (250, 11000, 300, 2, (False, 192, 116)),
    (256, 14336, 4096, 2, None),               # 112 tiles: 192-wide would take 2 waves
    (256, 4096, 14336, 2, None),               # split plans: unchanged
    (8192, 8192, 8192, 2, None),               # several waves: unchanged
    (200, 4096, 4096, 2, None),                # 64-row tiles (rule 1): unchanged
    (384, 4096, 14336, 2, None),
    (384, 4096, 14336, 3, (False, 192, 132)),  # split plans too: 48 tiles x 2 splits -> 66 x 2
    (200, 6000, 16000, 3, (False, 192, 128)),  # swapped 47 x 2 -> unswapped 64 x 2
    (384, 14336, 4096, 3, (False, 192, 225)),  # any number of waves: 168 tiles (2 waves) -> 225
    (256, 4096, 14336, 3, None),               # 44 x 3 unswapped: not 10% less work
    (8192, 8192, 8192, 3, None),
    (4097, 4097, 4097, 3, None),               # 5 waves of 256 -> 6 of 192: exactly 10% less, kept
])
def test_plan_bn192(M, N, K, bn192, want):
    """plan_rules.h kWidth192 (TK_HOPPER_BN192): 128x192 tiles for 129..192 kernel columns (1), and for
    part-filled single waves of unsplit 128x256 tiles when waves x width drops by >= 10% (2); 3 (the
    default): also unsplit plans of any number of waves, and split plans by waves x width x k tiles
    per unit; 192-wide tiles narrow to 128 (not 96) below one wave; 0: never 192-wide."""
    base = _C.hopper_plan(M, N, K, 132, bn192=0, odd_widths=0)
    assert base["bn"] != 192
    assert _C.hopper_plan(M, N, K, 132, odd_widths=0) == _C.hopper_plan(M, N, K, 132, bn192=3, odd_widths=0)  # the default
    p = _C.hopper_plan(M, N, K, 132, bn192=bn192, odd_widths=0)
    if want is None:
        assert p == base
    else:
        assert (p["swap_ab"], p["bn"], p["units"]) == want, p
        assert p["bm"] == 128 and p["cluster"] == 1 and p["sk_tiles"] == 0
    assert _C.hopper_plan(M, N, K, 132, False, bn192=bn192, odd_widths=0)["bn"] == 128  # fp32 outputs: 128-wide only
    for rows in (300, 1000, 2000):  # narrowing below one wave: 192 -> 128 -> 64, never 96
        assert _C.hopper_plan(rows, 160, 1000, 132, bn192=1, odd_widths=0)["bn"] in (64, 128, 192)


@pytest.mark.parametrize("M,N,K,want", [
    # (swap_ab, bn, splits, units) of the default plan
    (320, 4096, 14336, (True, 160, 2, 128)),   # 48 128x256 x 2 -> 64 swapped 128x160 x 2
    (300, 4100, 9000, (True, 160, 2, 132)),
    (330, 4100, 9000, (False, 192, 2, 132)),   # > 320 tokens: 128x192
    (240, 4096, 14336, (True, 256, 4, 128)),   # 160 would need 2 x 56 k tiles per SM: unchanged
])
def test_plan_split256_as_160(M, N, K, want):
    """plan.h bn192 = 3 with odd_widths bit 0: a split 128x256 plan of up to 320 tokens takes
    swapped 128x160 tiles with their own splits when they do the least work per SM; only for a
    row-major A (odd_layouts bit 0), else the 128x192 candidate."""
    p = _C.hopper_plan(M, N, K, 132)
    assert (p["swap_ab"], p["bn"], p["splits"], p["units"]) == want, p
    if want[1] == 160:
        q = _C.hopper_plan(M, N, K, 132, odd_layouts=2)  # column-major A
        assert q["bn"] == 192 and q["splits"] > 1, q
        assert _C.hopper_plan(M, N, K, 132, odd_widths=0)["bn"] == 192


@pytest.mark.parametrize("M,N,K,want1,want3", [
    # want1: (swap_ab, bn, units) under odd_widths=1 (swapped 160 only), want3 under 3 (the
    # default: also unswapped 144); None: the odd_widths=0 plan
    (320, 8192, 8192, (True, 160, 128), (True, 160, 128)),   # 129 unswapped 128x192 -> 64 x 2 swapped 128x160
    (272, 8192, 8192, (True, 160, 128), (True, 160, 128)),   # (cuBLAS: 128x144; measured as fast)
    (160, 28672, 4096, (True, 160, 224), (True, 160, 224)),  # 2 waves of 192-wide -> 2 of 160-wide
    (150, 20000, 256, (True, 160, 157), (True, 160, 157)),
    (150, 16000, 4100, (True, 160, 125), (True, 160, 125)),  # one wave of 192-wide -> one of 160-wide
    (320, 6144, 4096, (True, 160, 96), (True, 160, 96)),     # swapped 160 (no padded rows), not 144
    (384, 6144, 4096, None, (False, 144, 129)),   # 96 128x192 -> 129 128x144, one wave (cuBLAS: 144 wide)
    (336, 6144, 4096, None, (False, 144, 129)),
    (384, 14336, 4096, None, None),    # 144 would take 3 waves where 128x256 takes 2
    (256, 8192, 8192, None, None),     # one-warpgroup 128x128: narrower already
    (256, 14336, 4096, None, None),    # 112 swapped 128x256 tiles
    (256, 4096, 14336, None, None),    # split plans: unchanged
    (384, 4096, 4096, None, None),     # 96 128x128 tiles
    (512, 4096, 4096, None, None),     # 128 tiles of 128x128: nothing narrower fills one wave
    (640, 8192, 8192, None, None),     # > 512 tokens
    (190, 20000, 520, None, None),     # 160: 314 tiles, 3 waves x 160 > 2 x 192
    (200, 4096, 4096, None, None),     # 64-row pairs: unchanged
])
def test_plan_odd_widths(M, N, K, want1, want3):
    """plan_rules.h kOddWidths (TK_HOPPER_ODD_WIDTHS): for mid-M problems an unsplit 128-row plan takes
    the 144/160-wide candidate of least waves x width when that is >= 10% less (bit 0: swapped
    160; bit 1: unswapped 144 in place of an unswapped plan, in as many waves); an orientation
    only where its Y is K-major (odd_layouts); fp32 outputs keep 128-wide tiles."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=0)
    assert base["bn"] in (64, 128, 192, 256)
    assert _C.hopper_plan(M, N, K, 132) == _C.hopper_plan(M, N, K, 132, odd_widths=15)  # the default
    for odd, w in ((1, want1), (3, want3)):
        p = _C.hopper_plan(M, N, K, 132, odd_widths=odd)
        if w is None:
            assert p == base
            continue
        assert (p["swap_ab"], p["bn"], p["units"]) == w, p
        # unswapped 144: one warpgroup (kOneWarpgroupWidths bit 6, default since 2026-12-03c)
        assert p["bm"] == 128 and p["cluster"] == 1 and p["splits"] == 1 and p["sk_tiles"] == 0
        assert p["wg_rows"] == (128 if (w[0], w[1]) == (False, 144) else 64), p
        assert p["grid"] == min(p["units"], 132)
        # the orientation needs its Y K-major: without that layout, no odd width in it
        q = _C.hopper_plan(M, N, K, 132, odd_widths=odd, odd_layouts=2 if w[0] else 1)
        assert q["bn"] in (64, 128, 192, 256) or q["swap_ab"] != w[0], q
        assert _C.hopper_plan(M, N, K, 132, odd_widths=odd, odd_layouts=0) == base
        assert _C.hopper_plan(M, N, K, 132, False, odd_widths=odd)["bn"] == 128


@pytest.mark.parametrize("M,N,K,want", [
    # want: (bn, units, wg_rows) under odd_widths bit 11 (kOddWidthsMidM); None: the plan without it
    (1536, 1536, 1536, (144, 132, 128)),   # 96 128x192 tiles -> 132 of 128x144, one wave, one warpgroup
    (1280, 1792, 4096, (144, 130, 128)),   # 100 128x192 -> 130 of 128x144
    (3072, 1536, 4096, (144, 264, 64)),    # 144 128x256 in 2 waves -> 264 of 128x144 in 2
    (1024, 3584, 4096, (224, 128, 64)),    # 112 128x256 -> 128 of 128x224
    (4096, 1536, 4096, (224, 224, 64)),    # 192 128x256 -> 224 of 128x224, both 2 waves
    (2048, 2048, 2048, None),              # 128 128x256 tiles: nothing narrower in one wave
    (8192, 6144, 4096, None),              # many waves (clustered, long-running): unchanged
    (8192, 2048, 5632, None),              # bench_model's linears: unchanged
    (4096, 4096, 4096, None),
    (1024, 1024, 1024, None),              # 64-row tiles
    (2560, 5120, 4096, None),              # 4 waves of 128x256: past kOddWidthsMidMMaxWaves
    (4097, 4097, 4097, None),              # 5 waves (and output rows not 16-B aligned)
    (700, 3100, 2000, None),               # 6200-B output rows: copied out, not TMA-stored (measured slower)
    (1536, 1536, 1000, None),              # B's 2000-B pitch splits 32-B sectors
])
def test_plan_odd_widths_mid_m(M, N, K, want):
    """plan_rules.h kOddWidthsMidM (odd_widths bit 11): odd_widths bits 1 and 2 (unswapped 128 x 144
    in as many waves, 128 x 224 in place of a 128 x 256 plan that is not long-running) past 512 tokens,
    by the same >= 10% waves x width test, in place of plans of at most 2 waves (kOddWidthsMidMMaxWaves);
    only for a column-major B (odd_layouts bit 1) whose pitch keeps whole sectors, and an output whose rows
    can be TMA-stored."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03D)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03D | _ODD_MID_M)
    if want is None:
        assert p == base
        return
    assert base["bn"] in (192, 256) and not base["swap_ab"], base
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"]) == (False, 128, want[0], 1, 1), p
    assert (p["units"], p["wg_rows"]) == want[1:], p
    assert p["grid"] == min(p["units"], 132)
    # A row-major B (torch.mm's NN) has no odd-width kernel: the plan stays.
    assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03D | _ODD_MID_M, odd_layouts=1) == \
        _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03D, odd_layouts=1)


@pytest.mark.parametrize("M,N,K,want", [
    # want: units of unswapped 128x224 under odd_widths bit 13 (kOddWidthsMidM224); None: the plan without it
    (4097, 4097, 4097, 627),     # 561 128x256 tiles (5 waves) -> 627 (5): 7/8 of the width; rows copied out
    (1024, 14336, 4096, 512),    # 448 (4 waves) -> 512 (4)
    (3072, 3072, 4096, 336),     # 288 (3) -> 336 (3)
    (6144, 3584, 4096, 768),     # 672 (6) -> 768 (6)
    (2049, 8191, 4096, 629),     # 544 (5) -> 629 (5), output rows copied out
    (3000, 3001, 2000, 336),     # M, N, K tails; output rows copied out
    (2200, 4000, 1030, 324),     # K = 1030: re-pitched operand copies (whole lines)
    (8192, 6144, 4096, None),    # long-running 128x256 plans keep their clusters
    (8192, 2048, 2048, None),    # bench_model's linears: 512 tiles (4 waves) -> 640 (5)
    (8192, 5632, 2048, None),
    (2048, 2048, 2048, None),    # one wave of 128x256
    (2200, 4000, 4104, None),    # B's 8208-B pitch splits 32-B sectors
    (256, 14336, 4096, None),    # <= 512 tokens: bit 2 alone (128 tiles of 128x224 already)
])
def test_plan_odd_widths_mid_m224(M, N, K, want):
    """plan_rules.h kOddWidthsMidM224 (odd_widths bit 13): bit 2's unswapped 128 x 224 candidate past
    512 tokens by the same >= 10% waves x width test, in any number of waves and whatever the output
    rows (bit 11's limits), in place of a 128 x 256 plan that is not long-running; only for a
    column-major B (odd_layouts bit 1) whose pitch keeps whole sectors. Not the 144 candidate."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E | _ODD_MID_M224)
    assert _C.hopper_plan(M, N, K, 132) == _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL)  # the default
    if want is None:
        assert p == base
        return
    assert (base["swap_ab"], base["bm"], base["bn"], base["splits"]) == (False, 128, 256, 1), base
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == (False, 128, 224, 1, 1, want), p
    assert p["wg_rows"] == 64 and p["grid"] == min(want, 132) and p["sk_tiles"] == 0
    assert p["dynamic"] == base["dynamic"]
    # the output-row and sector limits: only B's sectors matter here
    assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E | _ODD_MID_M224, out_tma=False)["bn"] == 224
    assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E | _ODD_MID_M224, split_sectors=1)["bn"] == 224
    assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E | _ODD_MID_M224, split_sectors=2)["bn"] != 224
    # A row-major B (torch.mm's NN) has no odd-width kernel: the plan stays.
    assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E | _ODD_MID_M224, odd_layouts=1) == \
        _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E, odd_layouts=1)


@pytest.mark.parametrize("M,N,K,want", [
    # want: (bn, units) of the swapped plan for a row-major A and B (odd_layouts 1), None: unchanged
    (4097, 4097, 4097, (224, 627)),   # 561 128x256 (5 waves) -> 33 x 19 swapped 128x224 (5)
    (3000, 3001, 2000, (224, 336)),   # 288 (3) -> 24 x 14 (3); M, N, K tails
    (2200, 4000, 1030, (224, 320)),   # 288 (3) -> 32 x 10 (3)
    (400, 14336, 4096, (224, 224)),   # 321..512 tokens too: 224 (2) -> 112 x 2 (2)
    (3072, 1536, 4096, (144, 264)),   # bit 16: 144 128x256 (2 waves) -> 12 x 22 swapped 128x144 (2)
    (1536, 1536, 1536, (144, 132)),   # 96 128x192 (1) -> 12 x 11 (1)
    (1024, 14336, 4096, None),        # 224 along M = 1024: 5 waves against 4 of 128x256
    (8192, 2048, 2048, None),         # bench_model's dX: 592 swapped 128x224 (5 waves) against 512 (4)
    (8192, 6144, 4096, None),         # long-running 128x256 plans keep their clusters
    (320, 14336, 4096, None),         # <= 320 tokens: the token rules
])
def test_plan_odd_widths_swapped_mid(M, N, K, want):
    """plan_rules.h kOddWidthsSwappedMid224 / 144 (odd_widths bits 15 / 16): for a row-major A and B
    (torch.mm's NN: no unswapped odd width, odd_layouts 1) past 320 tokens, bit 13's 224 candidate
    and, within bit 11's limits (at most 2 waves, TMA-stored output rows), bit 11's 144 candidate,
    swapped (the odd width along M), where A's pitch keeps whole sectors. Other layouts unchanged.
    (Without bit 17, which re-plans some of these shapes as 128 x 192: test_plan_mid_widths_192_160.)"""
    ow = _ODD_BEFORE_04B
    base = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_04, odd_layouts=1)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=ow, odd_layouts=1)
    for layouts in (0, 2, 3):  # a Y that is K-major unswapped, or none: bits 15 / 16 change nothing
        assert _C.hopper_plan(M, N, K, 132, odd_widths=ow, odd_layouts=layouts) == \
            _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_04, odd_layouts=layouts)
    if want is None:
        assert p == base
        return
    assert not base["swap_ab"] and base["bn"] in (192, 256), base
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == (True, 128) + want[:1] + (1, 1, want[1]), p
    assert p["wg_rows"] == 64 and p["grid"] == min(want[1], 132) and p["sk_tiles"] == 0
    bit = _ODD_SWAP_M224 if want[0] == 224 else _ODD_SWAP_M144
    assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_04 | bit, odd_layouts=1) == p
    assert _C.hopper_plan(M, N, K, 132, odd_widths=ow & ~bit, odd_layouts=1)["bn"] != want[0]
    # A's pitch splitting 32-B sectors (split_sectors bit 0) keeps the plan; B's does not matter
    assert _C.hopper_plan(M, N, K, 132, odd_widths=ow, odd_layouts=1, split_sectors=1) == \
        _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_04, odd_layouts=1, split_sectors=1)
    assert _C.hopper_plan(M, N, K, 132, odd_widths=ow, odd_layouts=1, split_sectors=2)["bn"] == want[0]
    # the 144 candidate only with TMA-stored output rows; the 224 one whatever the output rows
    assert (_C.hopper_plan(M, N, K, 132, odd_widths=ow, odd_layouts=1, out_tma=False)["bn"] == want[0]) == (want[0] == 224)
    assert _C.hopper_plan(M, N, K, 132, False, odd_layouts=1)["bn"] == 128  # fp32 outputs: 128 wide


@pytest.mark.parametrize("M,N,K,want", [
    # want: {odd_layouts: (swap_ab, bn, units)} under bit 17 (kOddWidthsMid192160); None: unchanged
    (3072, 2048, 4096, {3: (False, 192, 264), 1: (False, 192, 264), 0: (False, 192, 264)}),  # 224 / 256 -> 192
    (6144, 1536, 4096, {3: (False, 192, 384), 1: (False, 192, 384), 0: (False, 192, 384)}),
    (2048, 2560, 4096, {3: (False, 160, 256), 1: (True, 160, 260), 0: (False, 192, 224), 2: (False, 160, 256)}),
    (3000, 3001, 2000, {3: (False, 192, 384), 1: (False, 192, 384), 0: (False, 192, 384)}),
    (2560, 2560, 4096, None),      # 128x224 (2 waves x 224) stays: 192 / 160 need 3 waves
    (2048, 5632, 2048, None),      # 128x256: 192 the same waves x width, weighted 5% dearer
    (3072, 6144, 1024, None),      # 128x256 (5 waves): 192 is 6 waves, exactly 10% less before its weight
    (4097, 4097, 4097, None),      # 4097^3 keeps 128x224 (NT) / 128x256 (TN)
    (8192, 4096, 4096, None),      # the large suite: 8 waves of 128x256
    (1024, 5632, 2048, None),      # <= 1024 tokens: bn192 = 3's 128x192 already
])
def test_plan_mid_widths_192_160(M, N, K, want):
    """plan_rules.h kOddWidthsMid192160 (odd_widths bit 17): past 512 tokens, in place of an unsplit
    128 x 256 plan that is not long-running, the 128 x 192 candidate (either orientation, any layout,
    cost weighted kMid192Weight / 20) and the 128 x 160 one (where the 224 one may go: unswapped for a
    column-major B, swapped for a row-major A and B; kMid160Weight / 20) in the waves x width choice,
    each only where its Y's pitch keeps whole sectors; fp32 outputs keep 128-wide tiles."""
    for layouts in (0, 1, 2, 3):
        base = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_04B, odd_layouts=layouts)
        p = _C.hopper_plan(M, N, K, 132, odd_layouts=layouts)
        assert p == _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL, odd_layouts=layouts)  # the default
        w = (want or {}).get(layouts)
        if w is None:
            if want is None:
                assert p == base, (layouts, p, base)
            continue
        assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == (w[0], 128, w[1], 1, 1, w[2]), (layouts, p)
        assert p["grid"] == 132 and p["dynamic"] and p["sk_tiles"] == 0 and p["wg_rows"] == 64, p
        assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_04B | _ODD_MID192, odd_layouts=layouts) == p
        # a Y pitch that splits 32-B sectors keeps that orientation out (B unswapped, A swapped)
        assert _C.hopper_plan(M, N, K, 132, odd_layouts=layouts, split_sectors=1 if w[0] else 2)["bn"] != w[1] or \
            _C.hopper_plan(M, N, K, 132, odd_layouts=layouts, split_sectors=1 if w[0] else 2)["swap_ab"] != w[0]
        assert _C.hopper_plan(M, N, K, 132, False, odd_layouts=layouts)["bn"] == 128  # fp32 outputs
        if w[1] == 192:  # bn192 = 0 (TK_HOPPER_BN192=0): no 192-wide tiles at all
            assert _C.hopper_plan(M, N, K, 132, odd_layouts=layouts, bn192=0)["bn"] != 192


@pytest.mark.parametrize("M,N,K,out_tma,want", [
    # want: bn under odd_widths bit 14 (kOddWidths144Unaligned); without it 144 everywhere here
    (360, 6150, 520, False, 192),    # one wave of 128x144 (129 tiles), rows copied out, 9 k tiles
    (384, 6150, 2048, False, 192),
    (384, 6150, 4096, False, 192),   # 64 k tiles
    (336, 6150, 8192, False, 144),   # 128 k tiles (kOddWidths144UnalignedMinKTiles): kept
    (384, 6150, 4096, True, 144),    # TMA-stored rows (as if aligned): kept
    (384, 6144, 4096, False, 192),
    (384, 6144, 4096, True, 144),    # the default (6144 columns are 16-B aligned)
    (330, 6100, 520, False, 192),
])
def test_plan_odd_widths_144_unaligned(M, N, K, out_tma, want):
    """plan_rules.h kOddWidths144Unaligned (odd_widths bit 14): a one-wave unswapped 128 x 144 plan
    (bit 1) whose output rows are copied out (out_tma false) only from kOddWidths144UnalignedMinKTiles
    (128) k tiles; the 128 x 192 plan stays otherwise."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E, out_tma=out_tma)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_BEFORE_03E | _ODD_144_UNALIGNED, out_tma=out_tma)
    assert (base["swap_ab"], base["bm"], base["bn"], base["units"]) == (False, 128, 144, -(-M // 128) * -(-N // 144))
    assert base["units"] <= 132
    assert _C.hopper_plan(M, N, K, 132, out_tma=out_tma) == p  # the default
    if want == 144:
        assert p == base
    else:
        assert (p["swap_ab"], p["bm"], p["bn"], p["splits"]) == (False, 128, want, 1), p
