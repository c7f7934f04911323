"""Host tests of the Hopper planner's rules for 129..512-token problems (csrc/gemm/hopper/plan.h,
plan_rules.h) through torch_tk._C.hopper_plan: the swapped 72 / 80-wide token tiles, the 64-row token
tiles (144..224 wide), ring staging, 128 x 224 in place of 128 x 256, and split plans re-planned as
unswapped 128x128 or swapped 128x160 tiles. CPU only; the planner's invariants are in test_plan_cpu.py.
"""

from __future__ import annotations

import pytest

from torch_tk import _C
from plan_helpers import _ODD_ALL, _ODD_UNSPLIT224


@pytest.mark.parametrize("M,N,K,want", [
    # want: (swap_ab, bn, units) with odd_widths bit 3 (token widths); None: the plan without it
    (320, 4096, 4096, (True, 80, 128)),     # 96 128x128 tiles (cost 256) -> 128 of 128x80 (208), cuBLAS's tile
    (288, 4096, 4096, (True, 72, 128)),
    (129, 8192, 8192, (True, 72, 128)),     # 128 128x128, the second row tile 1/128 used -> 128x72
    (144, 8192, 8192, (True, 72, 128)),
    (160, 8192, 8192, None),                # 80 wide only from 257 tokens (kTokenWidth80MinM: measured slower here)
    (152, 8192, 8192, None),
    (300, 4100, 999, (True, 80, 132)),      # 33 row tiles x 4
    (129, 4096, 4096, None),                # 96 64x128 tiles (cost 192); 128x72: 64 tiles
    (200, 8192, 8192, None),                # 104 wide would fit one wave: not built (measured slower)
    (200, 4096, 4096, None),                # 128 64x128 tiles
    (256, 8192, 8192, None),                # 128x128 either way
    (320, 8192, 8192, None),                # swapped 128x160 already (nothing narrower fits one wave)
    (128, 4096, 4096, None),                # below kTokenWidthsMinM
    (384, 4096, 4096, None),                # above kTokenWidthsMaxM
    (320, 4096, 14336, None),               # split plans: unchanged
    (320, 14336, 4096, None),               # 112 row tiles: no width fits one wave below 320
    (300, 257, 100, None),                  # 15 tiles: under half a wave
    (300, 4000, 136, (True, 80, 128)),      # short K too
])
def test_plan_token_widths(M, N, K, want):
    """plan_rules.h kTokenWidths (odd_widths bit 3, default on): for 129..320 tokens an unsplit plan of at
    most one wave takes swapped 128 x 72 or (from 257 tokens) 128 x 80 tiles, the narrower that fits one wave, when
    that gives no fewer tiles, at least half a wave, and >= 5% less 128 + w than the plan's bm + bn;
    a row-major A only (odd_layouts bit 0); fp32 outputs keep 128-wide tiles."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=7)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=15)
    d = _C.hopper_plan(M, N, K, 132)  # the default: the same, but where the 64-row token tiles (bits 4, 7..12) take over
    rows64 = 144 if M <= 144 else 160 if M <= 160 else 176 if M <= 176 else 192 if M <= 192 else 224
    assert p == d or ((d["bm"], d["bn"]) == (64, rows64) and 129 <= M <= 224), d
    if want is None:
        assert p == base
        return
    assert (p["swap_ab"], p["bn"], p["units"]) == want, p
    assert p["bm"] == 128 and p["cluster"] == 1 and p["splits"] == 1 and p["sk_tiles"] == 0
    # one consumer warpgroup (one_wg bit 4, default) where >= 3 token tiles share each weight tile
    # (plan_rules.h kTokenWidthOneWgMinTiles), two otherwise
    assert p["wg_rows"] == (128 if -(-M // p["bn"]) >= 3 else 64), p
    assert p["units"] <= 132 and p["grid"] == p["units"]
    # the plan it replaces fits one wave and streams >= 5% more bytes per CTA
    assert base["units"] <= 132 and 20 * (128 + p["bn"]) <= 19 * (base["bm"] + base["bn"])
    # no narrower built width fits one wave
    assert p["bn"] == 80 or -(-N // 128) * -(-M // 72) <= 132  # 72 wherever it fits one wave
    assert p["bn"] == 72 or M >= 257  # 80 from 257 tokens (plan_rules.h kTokenWidth80MinM)
    assert 2 * p["units"] >= 132 and p["units"] >= base["units"]
    assert _C.hopper_plan(M, N, K, 132, odd_widths=15, odd_layouts=2) == _C.hopper_plan(M, N, K, 132, odd_widths=7, odd_layouts=2)
    assert _C.hopper_plan(M, N, K, 132, False, odd_widths=15)["bn"] == 128
    # one_wg bit 4 off (TK_HOPPER_ONE_WG=1): the same tiles on two consumer warpgroups; the rest unchanged
    q = _C.hopper_plan(M, N, K, 132, one_wg=1, odd_widths=15)
    assert q["wg_rows"] == 64 and {k: v for k, v in q.items() if k != "wg_rows"} == {k: v for k, v in p.items() if k != "wg_rows"}
    # bit 5 with bit 4 (TK_HOPPER_ONE_WG=49, A/B): one consumer warpgroup at any token-tile count
    q = _C.hopper_plan(M, N, K, 132, one_wg=49, odd_widths=15)
    assert q["wg_rows"] == 128 and {k: v for k, v in q.items() if k != "wg_rows"} == {k: v for k, v in p.items() if k != "wg_rows"}


@pytest.mark.parametrize("M,N,K,want", [
    # want: (width, units) of the swapped one-token-tile 64-row plan (odd_widths bits 4, 6, 7, default);
    # None: the plan without them
    (129, 8192, 8192, (144, 128)),   # cuBLAS's 64 x 136 plan there; without bit 4: swapped 128 x 72, two token tiles
    (144, 8192, 4096, (144, 128)),
    (136, 8200, 4100, (144, 129)),   # weight tail: 129 tiles
    (140, 8448, 1000, (144, 132)),   # exactly one wave
    (144, 6400, 520, (144, 100)),    # >= 3/4 of a wave (kTokenRows64MinFill4)
    (136, 6336, 4096, (144, 99)),    # the least fill taken on 132 SMs
    (136, 6272, 4096, None),         # 98 tiles: under 3/4 of a wave (measured slower at 79: 144x5000x4096)
    (144, 5000, 520, None),
    (136, 4096, 4096, None),         # 64 tiles
    (145, 8192, 8192, (160, 128)),   # bit 7: 64 x 160 for 145..160 tokens
    (160, 8200, 4100, (160, 129)),
    (152, 6400, 520, (160, 100)),
    (160, 6272, 4096, None),
    (161, 8192, 8192, (176, 128)),   # bit 8: 64 x 176 for 161..176 tokens
    (176, 8200, 4100, (176, 129)),
    (170, 6400, 520, (176, 100)),
    (176, 8192, 14336, (176, 128)),  # in place of a split plan (swapped 128 x 192 x 2)
    (177, 8192, 8192, (192, 128)),   # bit 9: 64 x 192 for 177..192 tokens
    (192, 8200, 4100, (192, 129)),
    (185, 6400, 520, (192, 100)),
    (192, 8192, 14336, (192, 128)),  # in place of a split plan (swapped 128 x 192 x 2)
    (190, 6272, 4096, None),         # under 3/4 of a wave
    (193, 8192, 8192, (224, 128)),   # bit 12: 64 x 224 in place of an unsplit 128 x 128 plan
    (208, 8200, 4100, (224, 129)),
    (208, 6144, 4096, None),         # 96 tiles: under 3/4 of a wave
    (224, 8192, 14336, (224, 128)),  # bit 10: 64 x 224 for 193..224 tokens, in place of split plans
    (193, 8192, 14336, (224, 128)),
    (216, 6400, 11008, (224, 100)),
    (224, 8192, 8192, (224, 128)),   # bit 12 (the one-warpgroup 128 x 128 plan before 2026-12-03d)
    (230, 8192, 14336, None),        # more tokens than one 224-wide tile
    (128, 8192, 8192, None),         # below kTokenRows64MinM
    (136, 8456, 1000, None),         # 133 tiles: more than one wave
    (136, 8192, 14336, (144, 128)),  # bit 6: in place of a split plan (swapped 128 x 160 x 2)
    (160, 8192, 14336, (160, 128)),
    (129, 8192, 28672, (144, 128)),
    (160, 4096, 14336, None),        # 64 tiles: the split plan stays
])
def test_plan_token_rows64(M, N, K, want):
    """plan.h odd_widths bit 4 (default since 2026-12-01b; TK_HOPPER_ODD_WIDTHS=15 leaves it out):
    129..144 tokens with a row-major A, an unsplit plan of at most one wave re-planned as swapped
    64 x 144 tiles (one token tile for all tokens) when those fill 3/4 of a wave to one; bit 7
    (since 2026-12-02h): 64 x 160 tiles for 145..160 tokens, bit 8 64 x 176 for 161..176, bit 9 (since
    2026-12-03) 64 x 192 for 177..192, bit 10 (since 2026-12-03) 64 x 224 for 193..224 in place of split
    plans, bit 12 (since 2026-12-03d) also of unsplit unswapped 128 x 128 ones; bit 6 (since 2026-12-02h):
    also in place of a split plan; 16-bit outputs only."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=15 | 32)  # bit 5 is the split plans' (test_plan_split_160)
    p = _C.hopper_plan(M, N, K, 132)
    assert p == _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL)
    if want is None:
        assert p == base
        return
    width, units = want
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == (True, 64, width, 1, 1, units), p
    assert p["grid"] == units and p["wg_rows"] == 64 and not p["dynamic"] and p["sk_tiles"] == 0
    assert base["bn"] not in (144, 160, 176, 192, 224) or base["bm"] == 128
    assert base["units"] <= 132
    # each bit on its own: bits 7, 8, 9 the 160, 176, 192 widths, bit 6 the split plans
    split = base["splits"] > 1
    if split:
        assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL & ~64) == base
    else:
        assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL & ~64) == p
        if width == 224:  # bit 12's own
            assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL & ~_ODD_UNSPLIT224) == base
    wider = {144: 0, 160: 128 | 256 | 512 | 1024, 176: 256 | 512 | 1024, 192: 512 | 1024, 224: 1024}[width]  # (without its bit, a wider tile)
    if wider:
        assert _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL & ~wider) == base
        wbit = {160: 128, 176: 256, 192: 512, 224: 1024}[width]
        q = _C.hopper_plan(M, N, K, 132, odd_widths=_ODD_ALL & ~wbit)
        assert q == base or (q["bm"], q["bn"]) == (64, {160: 176, 176: 192, 192: 224, 224: 0}[width]), q
    assert _C.hopper_plan(M, N, K, 132, odd_layouts=2) == _C.hopper_plan(M, N, K, 132, odd_widths=15, odd_layouts=2)
    assert _C.hopper_plan(M, N, K, 132, False) == _C.hopper_plan(M, N, K, 132, False, odd_widths=15)


@pytest.mark.parametrize("M,N,K,want", [
    # want: the plan's ring_staging (plan_rules.h kRingStagingMinKTiles: one-warpgroup 128 x 128 from
    # 96 k tiles; kRingStagingMinKTilesRows64: 64-row token tiles from 32), with the expected tile
    (256, 8192, 6144, ((128, 128), True)), (256, 8192, 6081, ((128, 128), True)),
    (256, 8192, 6080, ((128, 128), False)), (128, 14336, 4096, ((128, 128), False)),
    (256, 8192, 8192, ((128, 128), True)),
    (172, 8192, 4096, ((64, 176), True)), (160, 6400, 2048, ((64, 160), True)),
    (140, 8448, 1985, ((64, 144), True)), (140, 8448, 1984, ((64, 144), False)),
    (192, 8192, 1024, ((64, 192), False)),
    (8192, 8192, 8192, ((128, 256), False)),  # many units per CTA: staging beside the ring
])
def test_plan_ring_staging(M, N, K, want):
    """Which plans stage the 16-bit epilogue inside the idle stage ring (plan.h ring_staging, one
    stage more): unsplit one-unit-per-CTA one-warpgroup 128 x 128 plans from K = 6144 and 64-row
    token tiles from K = 2048 (H200 A/Bs in plan_rules.h); never for an fp32 output (no staging)."""
    tile, ring = want
    p = _C.hopper_plan(M, N, K, 132)
    assert (p["bm"], p["bn"]) == tile, p
    assert p["ring_staging"] == ring, p
    if ring:
        assert p["splits"] == 1 and p["cluster"] == 1 and p["units"] <= p["grid"] and not p["dynamic"]
        assert p["wg_rows"] == 128 or p["bm"] == 64
    assert not _C.hopper_plan(M, N, K, 132, all_widths=False)["ring_staging"]


def test_plan_token_rows64_forced():
    """Forced 64-row token tiles (TK_HOPPER_TILE): 144..224 wide, unsplit, for a K-major Y (a
    row-major A under swap-AB); in pairs only in a TK_BM64_ODD_CLUSTER build."""
    for w in (144, 160, 176, 192, 224):
        p = _C.hopper_plan(185, 8192, 8192, 132, tile=(True, 64, w, 1, 1))
        assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"]) == (True, 64, w, 1, 1), p
        default = _C.hopper_plan(185, 8192, 8192, 132)
        assert _C.hopper_plan(185, 8192, 8192, 132, tile=(True, 64, w, 2, 1)) == default  # no split 64-row token tiles
        assert _C.hopper_plan(185, 8192, 8192, 132, tile=(True, 64, w, 1, 1), odd_layouts=2) == \
            _C.hopper_plan(185, 8192, 8192, 132, odd_layouts=2)  # an MN-major Y: not built
        pair = _C.hopper_plan(185, 8192, 8192, 132, tile=(True, 64, w, 1, 2))
        assert pair == default or (pair["bn"], pair["cluster"], pair["units"]) == (w, 2, 64 * -(-185 // w)), pair
    assert _C.hopper_plan(185, 8192, 8192, 132, tile=(True, 64, 208, 1, 1)) == _C.hopper_plan(185, 8192, 8192, 132)


@pytest.mark.parametrize("M,N,K,want", [
    # want: (swap_ab, bn, units) with odd_widths bit 2 (unswapped 224); None: the plan without it
    (256, 14336, 4096, (False, 224, 128)),   # 112 swapped 128x256 tiles -> 128 of 128x224, one wave
    (200, 14336, 4096, (False, 224, 128)),
    (256, 12288, 4096, None),                # 128 unswapped 128x192 tiles already (bn192 rule)
    (250, 14000, 300, (False, 224, 126)),    # short K, N tail
    (256, 4096, 14336, None),                # split plans: unchanged
    (256, 8192, 8192, None),                 # one-warpgroup 128x128 (narrower already)
    (128, 14336, 4096, None),                # 128-wide
    (300, 14336, 4096, None),                # swapped 128x160 (bit 0)
    (256, 16384, 4096, None),                # 128x224: 148 tiles, two waves where 128x256 takes one
    (256, 28672, 4096, (False, 224, 256)),   # 224 swapped 128x256 tiles -> 256 of 128x224, 2 waves each
    (512, 14336, 4096, (False, 224, 256)),   # 224 -> 256 tiles, 2 waves
    (512, 28672, 4096, (False, 224, 512)),   # 448 -> 512 tiles, 4 waves
    (512, 28672, 32768, None),               # long-running (plan_rules.h kLongRunWork): keeps its 2-CTA clusters
    (600, 14336, 4096, None),                # > 512 tokens
])
def test_plan_width224(M, N, K, want):
    """plan_rules.h kOddWidths bit 2: up to 512 tokens, an unsplit 128 x 256 plan that is not long-running
    re-planned as unswapped 128 x 224 tiles when waves x width is >= 10% less (B column-major only:
    odd_layouts bit 1)."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=3)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=7)
    assert p == _C.hopper_plan(M, N, K, 132)  # the default
    if want is None:
        assert p == base
        return
    assert (p["swap_ab"], p["bn"], p["units"]) == want, p
    assert p["bm"] == 128 and p["cluster"] == 1 and p["splits"] == 1 and p["wg_rows"] == 64 and p["grid"] == min(p["units"], 132)
    assert _C.hopper_plan(M, N, K, 132, odd_widths=7, odd_layouts=1) == _C.hopper_plan(M, N, K, 132, odd_widths=3, odd_layouts=1)
    assert _C.hopper_plan(M, N, K, 132, False, odd_widths=7)["bn"] == 128


@pytest.mark.parametrize("M,N,K,want", [
    # want: (swap_ab, bn, splits, wg_rows) of the default plan; None: the unswap128=1 plan
    (256, 4096, 14336, (False, 128, 2, 64)),    # 4 -> 2 splits: 8 MB of partials saved
    (256, 4096, 11008, (False, 128, 2, 64)),
    (256, 2048, 14336, (False, 128, 4, 64)),    # 8 -> 4
    (224, 2048, 14336, (False, 128, 4, 64)),
    (256, 1024, 14336, (False, 128, 8, 64)),    # 16 -> 8
    (256, 8192, 14336, (False, 128, 1, 128)),   # 2 -> unsplit: one warpgroup (ring staging)
    (224, 4096, 14336, None),                   # 7 MB saved, less than 56 k tiles' worth: kept
    (200, 4096, 14336, None),
    (256, 4096, 28672, None),                   # 112 k tiles per unit: kept
    (224, 8192, 14336, None),
    (256, 3072, 14336, None),                   # 128x128 x 2 splits: 96 units for 120, longer per CTA
    (256, 5120, 14336, None),
    (192, 2048, 14336, None),                   # a 128x192 plan (bn192 rule): not this rule's
    (256, 14336, 4096, None),                   # unsplit
])
def test_plan_unswap_split_256(M, N, K, want):
    """plan_rules.h kUnswapOneWave128 >= 2: a split swapped 128x256 plan re-planned as unswapped 128x128
    tiles with fewer splits (in one wave) when the fp32 partials saved outweigh the longer mainloop
    per CTA (kUnswapSplitBytesPerKTile256); fp32 outputs keep their plans."""
    old = _C.hopper_plan(M, N, K, 132, unswap128=1)
    p = _C.hopper_plan(M, N, K, 132, unswap128=2)
    if M > 192:  # the 128x192 rule of level 3 (the default) leaves these alone
        assert p == _C.hopper_plan(M, N, K, 132)
    if want is None:
        assert p == old
        return
    assert (old["swap_ab"], old["bn"]) == (True, 256) and old["splits"] > p["splits"], old
    assert (p["swap_ab"], p["bn"], p["splits"], p["wg_rows"]) == want, p
    assert p["bm"] == 128 and p["cluster"] == 1 and p["units"] <= p["grid"] <= 132 and p["sk_tiles"] == 0
    assert _C.hopper_plan(M, N, K, 132, False) == _C.hopper_plan(M, N, K, 132, False, unswap128=1)


@pytest.mark.parametrize("M,N,K,want", [
    # want: (bn, splits, wg_rows) of the default unswapped plan; None: the unswap128=2 plan (swapped
    # 128x192, or 128x160 up to 160 tokens: odd_widths bit 5)
    (192, 1024, 14336, (128, 8, 64)),    # 16 -> 8 splits: 6.3 MB saved for 14 extra k tiles per CTA
    (160, 1024, 14336, (128, 8, 64)),
    (129, 1024, 14336, (128, 8, 64)),
    (192, 2048, 14336, (128, 4, 64)),    # 8 -> 4: 6.3 MB for 28
    (176, 2048, 14336, (128, 4, 64)),
    (160, 2048, 14336, None),            # 128x160 x 8: 5.2 MB for 28 at 196 KB each, kept (31.9 against 32.4 us)
    (144, 2048, 14336, None),
    (192, 4096, 14336, None),            # 4 -> 2 would be 56 extra k tiles: measured 49.0 -> 52.0 us
    (160, 4096, 14336, None),
    (192, 4096, 11008, None),
    (192, 2048, 28672, None),
    (192, 8192, 14336, None),            # 2 -> unsplit: measured 84.6 -> 93.1 us
    (128, 2048, 14336, None),            # 128 tokens: one token tile, not this rule's
    (256, 2048, 14336, (128, 4, 64)),    # the 128x256 rule's (level 2)
])
def test_plan_unswap_split_192(M, N, K, want):
    """plan_rules.h kUnswapOneWave128 = 3: a split swapped 128x192 (or 128x160) plan of 129..192 tokens
    re-planned as unswapped 128x128 tiles at half the splits when the partials saved exceed
    kUnswapSplitBytesPerKTile192 (kUnswapSplitBytesPerKTile160) per extra k tile per CTA (H200
    2026-12-02g fit)."""
    p = _C.hopper_plan(M, N, K, 132)
    assert p == _C.hopper_plan(M, N, K, 132, unswap128=3)  # the default
    old = _C.hopper_plan(M, N, K, 132, unswap128=2)
    if want is None:
        assert p == old
        return
    assert (p["swap_ab"], p["bn"], p["splits"], p["wg_rows"]) == (False,) + want, p
    if M <= 192:
        old_bn = 160 if M <= 160 else 192
        assert (old["swap_ab"], old["bm"], old["bn"]) == (True, 128, old_bn) and old["splits"] == 2 * p["splits"], old
    assert p["bm"] == 128 and p["cluster"] == 1 and p["units"] <= p["grid"] <= 132 and p["sk_tiles"] == 0
    assert _C.hopper_plan(M, N, K, 132, False) == _C.hopper_plan(M, N, K, 132, False, unswap128=2)


@pytest.mark.parametrize("M", [129, 136, 144, 160, 161, 192])
@pytest.mark.parametrize("N,K", [(2048, 14336), (4096, 14336), (8192, 14336), (4096, 11008), (4096, 28672)])
def test_plan_split_160(M, N, K):
    """plan_rules.h kOddWidths bit 5: a split swapped 128x192 plan of <= 160 tokens (one token tile)
    takes swapped 128x160 tiles with the same splits, for a row-major A only (odd_layouts bit 0: the
    kernels need a K-major Y); fp32 outputs and 161..192 tokens keep 128x192."""
    p = _C.hopper_plan(M, N, K, 132, unswap128=2, odd_widths=63)  # (bits 6, 7: test_plan_token_rows64)
    old = _C.hopper_plan(M, N, K, 132, unswap128=2, odd_widths=31)
    assert (old["swap_ab"], old["bm"], old["bn"]) == (True, 128, 192) and old["splits"] > 1, old
    if M > 160:
        assert p == old
        return
    assert p["bn"] == 160 and {k: v for k, v in p.items() if k != "bn"} == {k: v for k, v in old.items() if k != "bn"}
    assert _C.hopper_plan(M, N, K, 132, unswap128=2, odd_layouts=2) == old  # column-major A
    assert _C.hopper_plan(M, N, K, 132, False)["bn"] != 160

