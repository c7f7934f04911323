"""Host tests of the Hopper GEMM planner (csrc/gemm/hopper/plan.h) through torch_tk._C.hopper_plan.

The planner picks, per (M, N, K) and SM count, the swap-AB orientation, tile (bm x bn), K splits,
2-CTA clusters, warpgroup rows and schedule; these tests pin its invariants (every tile covered,
one wave where promised, valid kernel choices) on random shapes and the measured rules on the
shapes that motivated them (benchmarks/NOTES.md has the measurements). CPU only: the planner is
plain C++ shared by the CUDA dispatcher and this binding.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C

# TK_HOPPER_ODD_WIDTHS masks (plan_rules.h): the default kOddWidths, the plans before 2026-12-03d, and
# bits 11 / 12 (kOddWidthsMidM, kOddWidthsRows64Unsplit224); the plans before 2026-12-03e, and bits 13 / 14
# (kOddWidthsMidM224, kOddWidths144Unaligned)
_ODD_ALL, _ODD_BEFORE_03D, _ODD_MID_M, _ODD_UNSPLIT224 = 262143, 2047, 2048, 4096
_ODD_BEFORE_03E, _ODD_MID_M224, _ODD_144_UNALIGNED = 8191, 8192, 16384
# the plans before 2026-12-04, and bits 15 / 16 (kOddWidthsSwappedMid224, kOddWidthsSwappedMid144); the
# plans before bit 17, and bit 17 (kOddWidthsMid192160)
_ODD_BEFORE_04, _ODD_SWAP_M224, _ODD_SWAP_M144 = 32767, 32768, 65536
_ODD_BEFORE_04B, _ODD_MID192 = 131071, 131072


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 60000), st.integers(1, 30000), st.sampled_from([78, 114, 132]),
       st.booleans())
def test_hopper_plan_invariants(M, N, K, sms, all_widths):
    def base(*args, **kw):  # the 128-row planner without 192-wide tiles (64-row rules: last; 192: below)
        return _C.hopper_plan(M, N, K, sms, all_widths, *args, bm64=False, **{"stream_k_fill": 0, "bn192": 0, "unswap128": 0, "odd_widths": 0, "stream_k": 0, "mid64": 0,
                                                                   "split_sectors": 0, **kw})

    p = base(2)
    assert p["swap_ab"] == (M <= 256 and N > M)
    assert p["evict_first"] == (2 if M <= 256 else 0)  # B (weights) streamed about once
    rows, cols = (N, M) if p["swap_ab"] else (M, N)
    assert p["bn"] in ((64, 128, 256) if all_widths else (128,))
    k_tiles = -(-K // 64)
    # one-wave swapped unsplit 128x128 plans (16-bit outputs) run unswapped (kUnswapOneWave128):
    # the same tiles, nothing else changes
    un = base(2, unswap128=1)
    if p["swap_ab"] and (p["bn"], p["splits"]) == (128, 1) and p["units"] <= sms and all_widths:
        assert un == {**p, "swap_ab": False}
    else:
        assert un == p
    # 192-wide tiles (plan_rules.h kWidth192, the default 2) replace 256-wide ones only: 16-bit outputs,
    # 128-row, unclustered, the 256-wide plan's splits or none
    w = base(2, bn192=2)
    if w["bn"] == 192:
        assert all_widths and base(2)["bn"] == 256 and w["bm"] == 128 and w["cluster"] == 1
        assert w["splits"] == base(2)["splits"] or w["splits"] == 1
    else:
        assert w == base(2)
    covering = 64 if cols <= 64 else 128 if cols <= 128 else 256  # the narrowest covering width

    assert p["bm"] == 128

    def n_tiles(bn, bm=128):
        return -(-rows // bm) * -(-cols // bn)

    if all_widths:
        assert p["bn"] <= covering
        if p["bn"] < covering:  # narrowed only for small problems, while the tiles fit one wave
            assert k_tiles <= 128 and n_tiles(p["bn"]) <= sms and n_tiles(2 * p["bn"]) < sms
        elif k_tiles <= 128 and covering > 64 and n_tiles(covering) < sms:
            assert n_tiles(covering // 2) > sms
    tiles = n_tiles(p["bn"])
    assert 1 <= p["splits"] <= max(1, k_tiles // 4) and p["splits"] <= 16
    if tiles >= sms:
        assert p["splits"] == 1
    tiles_m = -(-rows // 128)
    assert p["cluster"] in (1, 2)
    if p["cluster"] == 2:  # only unsplit 128x256 problems of a wave or more, or swapped, share B
        assert p["bn"] == 256 and p["splits"] == 1 and tiles_m >= 2 and (tiles >= sms or p["swap_ab"])
    assert p["units"] == -(-tiles_m // p["cluster"]) * (tiles // tiles_m) * p["splits"]
    assert p["grid"] == p["cluster"] * min(p["units"], sms // p["cluster"])
    assert p["grid"] <= sms and p["grid"] % p["cluster"] == 0
    assert base(1)["cluster"] == 1
    # long-running plans (plan_rules.h kLongRunWork = 131072 tile k-tiles): raster band 16, and by
    # default (max_cluster 0) 2-CTA clusters; every other plan as with clusters off
    long_run = (p["bm"], p["bn"], p["splits"]) == (128, 256, 1) and tiles >= sms and tiles * k_tiles >= 131072
    assert p["group_m"] == base(1)["group_m"] == (16 if long_run else 8)
    assert base() == (base(2) if long_run and tiles_m >= 2 else base(1))
    # kSplitSectorClusters: a Y pitch (B, or A when swapped) that splits 32-B sectors clusters the
    # unsplit 128x256 plans of a wave or more (max_cluster 0); nothing else changes
    for split in (1, 2, 3):
        y_split = split & (1 if p["swap_ab"] else 2)
        sc = (p["bm"], p["bn"], p["splits"]) == (128, 256, 1) and tiles >= sms and tiles_m >= 2 and y_split
        assert base(split_sectors=split) == (base(2) if sc or (long_run and tiles_m >= 2) else base(1))
        assert base(split_sectors=split, sector_clusters=0) == base()
    # dynamic schedule: more units than clusters, each long enough to hide the ticket
    assert p["dynamic"] == (p["units"] > p["grid"] // p["cluster"] and k_tiles // p["splits"] >= 8)
    assert not base(2, allow_dynamic=False)["dynamic"]
    # split-K finished inside the GEMM kernel (opt-in): every unit's CTA resident at once
    assert not p["fused_split"]
    f = base(2, fuse_split=True)
    assert f["fused_split"] == (f["splits"] > 1 and f["cluster"] == 1 and f["units"] <= f["grid"])
    if f["splits"] > 1 and f["cluster"] == 1:
        assert f["fused_split"]
    # stream-K tail: only for unclustered, unsplit 128x256 plans, ids below 2^31; mode 1 over all
    # CTAs, mode 2 the aligned last-wave split over sk_parts CTAs, mode 3 mode 1 where
    # the last wave idles >= 10% of the run and K is 16..65 k tiles; nothing else in the plan changes
    assert p["sk_tiles"] == 0 and p["sk_parts"] == 0
    for mode in (1, 2, 3):
        q = base(1, stream_k=mode)
        q0 = base(1)
        want = {1: (_C.sk_tiles(q0["units"], q0["grid"]), 0),
                2: _C.sk_split_tail(q0["units"], q0["grid"], k_tiles),
                3: (_C.sk_tiles(q0["units"], q0["grid"], 10) if 16 <= k_tiles <= 65 else 0, 0)}[mode]
        eligible = q0["bn"] == 256 and q0["splits"] == 1 and q0["cluster"] == 1 and q0["bm"] == 128
        if not eligible or q0["units"] + want[0] * k_tiles >= 2**31:
            want = (0, 0)
        assert (q["sk_tiles"], q["sk_parts"]) == want
        assert {**q, "sk_tiles": 0, "sk_parts": 0} == q0
    # 64-row tiles (default): rule 1, 65..256 tokens unswapped (unclustered: plan_rules.h kBm64RowPairs
    # = 0), at most 128 wide, filling at least half the SMs unsplit; rule 2, swapped plans that
    # the 128-row tiles split, when 64-row tiles at most 128 wide need no split
    b = _C.hopper_plan(M, N, K, sms, all_widths, 2, stream_k_fill=0, bn192=0, unswap128=0, odd_widths=0, stream_k=0, mid64=0)
    assert b == _C.hopper_plan(M, N, K, sms, all_widths, 2, bm64=True, stream_k_fill=0, bn192=0, unswap128=0, odd_widths=0,
                               stream_k=0, mid64=0)
    # one consumer warpgroup (two strips) exactly on unsplit, unclustered 128x128 tiles, one per CTA
    one_wg = (b["bm"], b["bn"], b["splits"], b["cluster"], b["sk_tiles"]) == (128, 128, 1, 1, 0) and b["units"] <= b["grid"]
    assert b["wg_rows"] == (128 if one_wg else 64)
    if b["bm"] == 128:
        assert b == p
    elif not b["swap_ab"]:
        assert p["swap_ab"] and 64 < M <= 256 and all_widths and k_tiles <= 128
        t64 = -(-M // 64) * -(-N // b["bn"])
        assert b["cluster"] == 1 and b["splits"] == 1 and b["bn"] <= 128 and 2 * t64 >= sms
        assert b["units"] == t64 and b["grid"] == min(t64, sms)
    else:
        assert p["swap_ab"] and all_widths and p["splits"] > 1
        assert b["splits"] == 1 and b["bn"] <= 128 and b["cluster"] == 1 and b["sk_tiles"] == 0
        assert b["units"] == n_tiles(b["bn"], 64) and b["grid"] == min(b["units"], sms)
        # unsplit: the 64-row tiles needed no split, or K is within the narrowing bound and they
        # fill at least 3/8 of the SMs
        fills = k_tiles <= 128 and 8 * b["units"] >= 3 * sms
        assert b["units"] >= sms or fills or min(sms // b["units"], k_tiles // 4, 16) <= 1
    # stream-K fill: fewer 128x256 tiles than SMs, each CTA >= 16 k tiles; level 1 only where the
    # plan was 128x256 unsplit unclustered already, level 2 also for kernels wider than 128
    t256 = n_tiles(256)
    fill_ok = all_widths and _C.sk_fill_tiles(t256, k_tiles, sms, 16) > 0 and t256 + t256 * k_tiles < 2**31
    for level in (1, 2):
        f = _C.hopper_plan(M, N, K, sms, all_widths, 2, stream_k_fill=level, bn192=0, unswap128=0, odd_widths=0, mid64=0)
        want = fill_ok and ((b["bm"], b["bn"], b["splits"], b["cluster"]) == (128, 256, 1, 1) or (level == 2 and cols > 128))
        if want:
            assert f == {"swap_ab": p["swap_ab"], "bm": 128, "bn": 256, "splits": 1, "cluster": 1, "group_m": 8,
                         "units": t256, "grid": sms, "dynamic": False, "sk_tiles": t256, "sk_parts": 0, "fused_split": False,
                         "evict_first": p["evict_first"], "wg_rows": 64, "ring_staging": False}
        else:
            assert f == b


def test_hopper_plan_examples():
    # the decisions documented in benchmarks/NOTES.md
    assert _C.hopper_plan(8192, 8192, 8192, 132, True, 2) == {"swap_ab": False, "bm": 128, "bn": 256, "splits": 1, "cluster": 2,
                                                     "group_m": 16, "units": 1024, "grid": 132, "dynamic": True, "sk_tiles": 0, "sk_parts": 0,
                                                     "fused_split": False, "evict_first": 0, "wg_rows": 64, "ring_staging": False}
    # long-running plans (2048 tiles x 128 k tiles >= 131072) cluster by default, with a 16-row
    # band; 8192x4096x4096 (1024 x 64) and 8192x6144x4096 (1536 x 64) do not; 8192x4096x14336 does
    assert _C.hopper_plan(8192, 8192, 8192, 132) == _C.hopper_plan(8192, 8192, 8192, 132, True, 2)
    assert [(q["cluster"], q["group_m"]) for q in (_C.hopper_plan(8192, n, k, 132) for n, k in
            ((4096, 4096), (6144, 4096), (4096, 14336), (28672, 4096)))] == [(1, 8), (1, 8), (2, 16), (2, 16)]
    assert (lambda q: (q["cluster"], q["group_m"]))(_C.hopper_plan(8192, 8192, 8192, 132, True, 1)) == (1, 16)
    assert _C.hopper_plan(8192, 8192, 8192, 132, True, 1, 8)["group_m"] == 8
    assert _C.hopper_plan(8192, 8192, 8192, 132)["dynamic"]  # 1024 units on 132 CTAs
    assert _C.hopper_plan(1, 4096, 4096, 132, bm64=False) == {"swap_ab": True, "bm": 128, "bn": 64, "splits": 4, "cluster": 1,
                                                  "group_m": 8, "units": 128, "grid": 128, "dynamic": False, "sk_tiles": 0, "sk_parts": 0,
                                                  "fused_split": False, "evict_first": 2, "wg_rows": 64, "ring_staging": False}
    assert _C.hopper_plan(1, 4096, 4096, 132, fuse_split=True, bm64=False)["fused_split"] is True  # opt-in
    assert _C.hopper_plan(128, 4096, 14336, 132)["splits"] == 4
    # small problems: narrower tiles before split-K (1000x1001x999: 128 tiles of 128x64, no split;
    # mid64=3: without plan_rules.h kMid64UnalignedRows, which makes them 64x128)
    assert _C.hopper_plan(1000, 1001, 999, 132, mid64=3) == {"swap_ab": False, "bm": 128, "bn": 64, "splits": 1, "cluster": 1,
                                                    "group_m": 8, "units": 128, "grid": 128, "dynamic": False, "sk_tiles": 0, "sk_parts": 0,
                                                    "fused_split": False, "evict_first": 0, "wg_rows": 64, "ring_staging": False}
    assert _C.hopper_plan(1000, 1001, 999, 132, fill_narrow_max_k_tiles=0)["bn"] == 256
    # L2 evict_first for B (the weights, streamed about once) exactly when M <= 256
    assert [_C.hopper_plan(M, 4096, 4096, 132)["evict_first"] for M in (1, 64, 256, 257, 8192)] == [2, 2, 2, 0, 0]
    # stream-K tail over all CTAs (mode 1): 4096^3 = 512 tiles of 128x256 on 132 SMs -> the last 248 by k iteration
    assert _C.hopper_plan(4096, 4096, 4096, 132, stream_k=1)["sk_tiles"] == 248
    assert _C.hopper_plan(4096, 4096, 4096, 132, stream_k=3)["sk_tiles"] == 0
    # mode 3: 4097^3 = 561 tiles, the last wave 33 of 132 (15% of the run idle) -> the last 165
    # tiles over all CTAs; not with K past 65 k tiles or under 16, nor a 3%-idle last wave (4096^3).
    # (The stream-K tails are for 128x256 tiles: 4097-wide shapes take 128x224 by default since
    # 2026-12-03e, odd_widths bit 13, hence _ODD_BEFORE_03E below.)
    ow = _ODD_BEFORE_03E
    assert _C.hopper_plan(4097, 4097, 4097, 132, stream_k=3, odd_widths=ow)["sk_tiles"] == 165
    assert _C.hopper_plan(4097, 4097, 4097, 132, odd_widths=ow)["sk_tiles"] == 0  # not the default
    assert _C.hopper_plan(4097, 4097, 4097, 132, stream_k=3)["sk_tiles"] == 0  # 128x224 tiles: no tail
    assert _C.hopper_plan(4097, 4097, 4161, 132, stream_k=3, odd_widths=ow)["sk_tiles"] == 0
    assert _C.hopper_plan(4097, 4097, 960, 132, stream_k=3, odd_widths=ow)["sk_tiles"] == 0
    assert _C.sk_tiles(561, 132, 10) == 165 and _C.sk_tiles(512, 132, 10) == 0
    # the aligned last-wave split: 4097^3 = 561 tiles (4 waves + 33) -> 33 tail tiles x 4 slots
    # on 132 CTAs; 6144x4097x4097 = 816 tiles -> 24 x 4; K = 2048 (32 k tiles) -> 2 slots of 16;
    # 4096^3 (r = 116 > 66) and 8192x10240x8192 (r = 52: 2 slots save 2.5% < 3%) stay whole
    split = lambda M, N, K: (lambda q: (q["sk_tiles"], q["sk_parts"]))(_C.hopper_plan(M, N, K, 132, stream_k=2,  # noqa: E731
                                                                                   odd_widths=ow))
    assert split(4097, 4097, 4097) == (33, 132) and split(6144, 4097, 4097) == (24, 96)
    assert split(4097, 4097, 2048) == (33, 66)
    assert split(4096, 4096, 4096) == (0, 0) and split(8192, 10240, 8192) == (0, 0)
    assert _C.hopper_plan(4096, 4096, 4096, 132)["sk_tiles"] == 0
    assert _C.hopper_plan(256, 4096, 14336, 132, unswap128=1)["bn"] == 256  # long K: split instead (224 k tiles)
    assert _C.hopper_plan(256, 8192, 8192, 132)["bn"] == 128  # 128 tiles; 64 would be 256 tiles
    # 64-row tiles: 128x4096x4096 -> 128 unsplit, unclustered 64x64 tiles instead of 64 swapped
    # 128x64 tiles x 2 K splits (forced CTA pairs: 64 units)
    b = _C.hopper_plan(128, 4096, 4096, 132)
    assert (b["swap_ab"], b["bm"], b["bn"], b["splits"], b["cluster"], b["units"]) == (False, 64, 64, 1, 1, 128)
    b = _C.hopper_plan(128, 4096, 4096, 132, tile=(False, 64, 64, 1, 2))
    assert (b["swap_ab"], b["bm"], b["bn"], b["splits"], b["cluster"], b["units"]) == (False, 64, 64, 1, 2, 64)
    b = _C.hopper_plan(64, 8192, 8192, 132)  # swapped 64x64 tiles: 128, unsplit (128-row: 64 x 2 splits)
    assert (b["swap_ab"], b["bm"], b["bn"], b["splits"], b["cluster"]) == (True, 64, 64, 1, 1)
    assert _C.hopper_plan(256, 8192, 8192, 132)["bm"] == 128  # 64-row tiles would be 64x256
    # 64 tiles of 64x64 would split twice; unsplit they fill 3/8 of the SMs (K <= 8192)
    b = _C.hopper_plan(64, 4096, 4096, 132)
    assert (b["swap_ab"], b["bm"], b["bn"], b["splits"], b["units"]) == (True, 64, 64, 1, 64)
    assert _C.hopper_plan(64, 2048, 4096, 132)["splits"] > 1  # 32 tiles: too few SMs unsplit
    assert _C.hopper_plan(128, 4096, 14336, 132)["bm"] == 128  # K past the bound: split
    assert _C.hopper_plan(256, 4096, 14336, 132)["bm"] == 128  # K past the narrowing bound
    assert _C.hopper_plan(128, 4096, 4096, 132, bm64=False)["bm"] == 128


def test_plan_mid64_examples():
    """plan_rules.h kMid64: unswapped 128x64 plans (the narrowing's end for ~1k problems) run as unsplit
    64x128 tiles when those fit one wave and the output is TMA-stored or (kMid64UnalignedRows, a
    16-bit output with rows that are not 16-B aligned) copied out by granules."""
    tile = lambda q: (q["swap_ab"], q["bm"], q["bn"], q["splits"], q["cluster"], q["units"])  # noqa: E731
    assert tile(_C.hopper_plan(1024, 1024, 1024, 132)) == (False, 64, 128, 1, 1, 128)
    assert tile(_C.hopper_plan(1024, 1024, 1024, 132, mid64=0)) == (False, 128, 64, 1, 1, 128)
    assert tile(_C.hopper_plan(512, 1024, 1024, 132)) == (False, 64, 128, 1, 1, 64)  # was 128x64 x 2 splits
    assert tile(_C.hopper_plan(512, 1024, 1024, 132, mid64=0)) == (False, 128, 64, 2, 1, 128)
    assert _C.hopper_plan(1536, 1024, 1024, 132)["bm"] == 128  # 192 64x128 tiles: two waves
    assert tile(_C.hopper_plan(300, 200, 3000, 132))[1:4] == (128, 64, 11)  # 10 64x128 tiles: too few unsplit
    # N % 8 != 0: the output is copied out by granules; 64x128 too by default (kMid64UnalignedRows)
    assert tile(_C.hopper_plan(1000, 1001, 999, 132)) == (False, 64, 128, 1, 1, 128)
    assert tile(_C.hopper_plan(1000, 1001, 999, 132, mid64=3)) == (False, 128, 64, 1, 1, 128)
    assert tile(_C.hopper_plan(512, 1001, 999, 132)) == (False, 64, 128, 1, 1, 64)  # was 128x64 x 2 splits
    # from 16 k tiles only (kMid64UnalignedRowsMinKTiles): 1003x1001x520 (9) stays 128x64; K = 1032
    # (17, a B pitch of 2064 B, which splits sectors) takes the 64x128 pairs
    assert tile(_C.hopper_plan(1003, 1001, 520, 132)) == (False, 128, 64, 1, 1, 128)
    assert tile(_C.hopper_plan(1003, 1001, 1032, 132)) == (False, 64, 128, 1, 2, 64)
    assert tile(_C.hopper_plan(1000, 1001, 960, 132)) == (False, 128, 64, 1, 1, 128)  # 15 k tiles
    assert tile(_C.hopper_plan(1000, 1001, 961, 132))[1:3] == (64, 128)  # 16 k tiles
    assert tile(_C.hopper_plan(1003, 1001, 520, 132, out_tma=True))[1:3] == (64, 128)  # TMA-stored: no floor
    assert tile(_C.hopper_plan(1000, 1001, 999, 132, out_tma=True))[1:3] == (64, 128)
    assert tile(_C.hopper_plan(1000, 1001, 999, 132, False))[1:3] == (128, 128)  # fp32 output: not 64-row
    assert _C.hopper_plan(1024, 1024, 1024, 132, False)["bn"] == 128  # fp32 outputs: 128-wide only
    assert _C.hopper_plan(2048, 2048, 2048, 132)["bn"] == 256  # not a 128x64 plan
    # kMid64Pairs: a B pitch that splits 32-B sectors (F.linear's layout: K = 1000, 2040; by default
    # derived from K) pairs the 64x128 tiles in 2-CTA clusters sharing B, at >= 3/4 of the SMs
    pair = (False, 64, 128, 1, 2, 64)
    assert tile(_C.hopper_plan(1000, 1000, 1000, 132)) == pair
    assert tile(_C.hopper_plan(1024, 1024, 2040, 132)) == pair
    assert tile(_C.hopper_plan(2048, 512, 2040, 132)) == pair
    assert tile(_C.hopper_plan(1000, 1000, 1000, 132, mid64=1)) == (False, 64, 128, 1, 1, 128)
    assert tile(_C.hopper_plan(1024, 1024, 1000, 132, split_sectors=1)) == (False, 64, 128, 1, 1, 128)  # NN: B pitch 2048
    assert tile(_C.hopper_plan(1024, 1024, 1024, 132, split_sectors=2)) == pair  # a B pitch like 2000 B
    assert tile(_C.hopper_plan(768, 768, 1000, 132))[4] == 1  # 72 tiles: below 3/4 of the SMs
    assert tile(_C.hopper_plan(1008, 1008, 1008, 132))[4] == 1  # 2016-B pitch: whole sectors
    assert tile(_C.hopper_plan(1000, 1001, 999, 132))[1:5] == (64, 128, 1, 1)  # odd K: re-pitched, whole lines
    # kSplitSectorClusters: 128x256 plans of a wave or more cluster for such a Y pitch
    assert tile(_C.hopper_plan(4096, 4096, 4104, 132))[1:5] == (128, 256, 1, 2)
    assert tile(_C.hopper_plan(4096, 4096, 4104, 132, split_sectors=1))[1:5] == (128, 256, 1, 1)  # NN: B aligned
    assert tile(_C.hopper_plan(4096, 4096, 4104, 132, sector_clusters=0))[1:5] == (128, 256, 1, 1)
    assert tile(_C.hopper_plan(2048, 2048, 2040, 132))[4] == 1  # 128 tiles: below one wave


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 12000), st.sampled_from([78, 114, 132]),
       st.booleans(), st.booleans())
def test_plan_mid64_invariants(M, N, K, sms, all_widths, out_tma):
    """mid64 changes exactly the unswapped 128x64 plans within the narrowing's K bound whose
    64x128 tiles fit one wave (and fill 3/8 of it if the plan splits K), with a TMA-stored output,
    into unsplit unclustered 64x128 plans. (odd_widths bit 11 off: its mid-size plans also depend on
    out_tma and split_sectors, test_plan_odd_widths_mid_m; bits 13, 14 and 17 likewise.)"""
    ow = _ODD_ALL & ~(_ODD_MID_M | _ODD_MID_M224 | _ODD_144_UNALIGNED | _ODD_MID192)
    q0 = _C.hopper_plan(M, N, K, sms, all_widths, odd_widths=ow, mid64=0, out_tma=out_tma, split_sectors=0)
    q = _C.hopper_plan(M, N, K, sms, all_widths, odd_widths=ow, mid64=1, out_tma=out_tma, split_sectors=0)
    # bit 2 (kMid64UnalignedRows) treats a 16-bit output copied out by granules as TMA-stored from
    # 16 k tiles on (kMid64UnalignedRowsMinKTiles)
    assert (_C.hopper_plan(M, N, K, sms, all_widths, odd_widths=ow, mid64=5, out_tma=out_tma, split_sectors=0)
            == _C.hopper_plan(M, N, K, sms, all_widths, odd_widths=ow, mid64=1,
                              out_tma=out_tma or (all_widths and -(-K // 64) >= 16), split_sectors=0))
    t64 = -(-M // 64) * -(-N // 128)
    eligible = (all_widths and out_tma and -(-K // 64) <= 128 and not q0["swap_ab"] and (q0["bm"], q0["bn"]) == (128, 64)
                and t64 <= sms and (q0["splits"] == 1 or 8 * t64 >= 3 * sms))
    # bit 1 (kMid64Pairs) pairs them only where B's pitch splits sectors and they fill 3/4 of the SMs
    for split in (0, 1, 2, 3):
        assert _C.hopper_plan(M, N, K, sms, all_widths, odd_widths=ow, mid64=1, out_tma=out_tma, split_sectors=split,
                              sector_clusters=0) == q
        q2 = _C.hopper_plan(M, N, K, sms, all_widths, odd_widths=ow, mid64=3, out_tma=out_tma, split_sectors=split, sector_clusters=0)
        if not (eligible and split & 2 and 4 * t64 >= 3 * sms):
            assert q2 == q
            continue
        pairs = -(-(-(-M // 64)) // 2) * -(-N // 128)
        assert (q2["swap_ab"], q2["bm"], q2["bn"], q2["splits"], q2["cluster"], q2["sk_tiles"]) == (False, 64, 128, 1, 2, 0)
        assert q2["units"] == pairs and q2["grid"] == 2 * min(pairs, sms // 2) and q2["wg_rows"] == 64
    if not eligible:
        assert q == q0
        return
    assert (q["swap_ab"], q["bm"], q["bn"], q["splits"], q["cluster"], q["sk_tiles"]) == (False, 64, 128, 1, 1, 0)
    assert q["units"] == t64 and q["grid"] == t64 and not q["dynamic"] and q["wg_rows"] == 64


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


@pytest.mark.parametrize("M,N,K,tile,want", [
    # tile = (swap_ab, bm, bn, splits, cluster); want = (swap_ab, bm, bn, splits, cluster, units)
    (256, 4096, 14336, (False, 128, 128, 2, 1), (False, 128, 128, 2, 1, 128)),
    (256, 8192, 8192, (False, 64, 128, 1, 2), (False, 64, 128, 1, 2, 128)),  # units: CTA pairs
    (256, 8192, 8192, (True, 128, 256, 1, 2), (True, 128, 256, 1, 2, 32)),  # a swapped pair shares the tokens
    (4096, 4096, 4096, (False, 128, 256, 3, 2), (False, 128, 256, 3, 1, 1536)),  # split: no cluster
    (100, 100, 100, (False, 128, 128, 16, 1), (False, 128, 128, 2, 1, 2)),  # splits <= k tiles
    (256, 14336, 4096, (False, 128, 144, 1, 1), (False, 128, 144, 1, 1, 200)),  # odd widths, either orientation
    (272, 8192, 8192, (True, 128, 144, 1, 1), (True, 128, 144, 1, 1, 128)),
    (256, 14336, 4096, (False, 128, 224, 1, 1), (False, 128, 224, 1, 1, 128)),
    (136, 8192, 8192, (True, 64, 144, 1, 1), (True, 64, 144, 1, 1, 128)),  # 64 x 144 (plan.h kTokenRows64Width)
    (150, 8192, 14336, (True, 64, 160, 1, 1), (True, 64, 160, 1, 1, 128)),  # 64 x 160 (kTokenRows64Width160)
    (170, 8192, 8192, (True, 64, 176, 1, 1), (True, 64, 176, 1, 1, 128)),  # 64 x 176 (kTokenRows64Width176)
])
def test_plan_forced_tile(M, N, K, tile, want):
    """plan.h TileChoice (TK_HOPPER_TILE, A/B only): the forced swap, tile and splits, units and
    grid derived as for the rules' plans; invalid choices leave the rules' plan."""
    p = _C.hopper_plan(M, N, K, 132, tile=tile)
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == want, p
    assert p["grid"] == p["cluster"] * min(p["units"], 132 // p["cluster"])
    for bad in [(False, 64, 256, 1, 1), (False, 128, 88, 1, 1), (False, 128, 128, 0, 1), (False, 128, 128, 1, 3),
                (False, 128, 144, 1, 2), (False, 128, 112, 1, 1), (True, 64, 144, 2, 1),
                (True, 64, 160, 2, 1), (False, 64, 224, 2, 1), (False, 64, 192, 2, 1), (True, 64, 208, 1, 1),
                (True, 128, 176, 1, 1), (False, 128, 176, 1, 1),  # (64-row token-tile pairs: test_plan_token_rows64_forced)
                (False, 128, 224, 1, 2), (False, 128, 240, 1, 1)]:
        assert _C.hopper_plan(M, N, K, 132, tile=bad) == _C.hopper_plan(M, N, K, 132)
    # an odd width only in an orientation whose Y is K-major (odd_layouts bit 0: swapped, bit 1: not)
    for swap in (False, True):
        odd = (swap, 128, 144, 1, 1)
        for layouts in (0, 1, 2, 3):
            p = _C.hopper_plan(M, N, K, 132, tile=odd, odd_layouts=layouts)
            if layouts & (1 if swap else 2):
                assert (p["swap_ab"], p["bn"]) == (swap, 144), p
            else:
                assert p == _C.hopper_plan(M, N, K, 132, odd_layouts=layouts)
    assert _C.hopper_plan(M, N, K, 132, False, tile=(False, 128, 256, 1, 1)) == _C.hopper_plan(M, N, K, 132, False)


def test_plan_forced_wg128_pair():
    """A forced one-warpgroup 128x128 pair (TK_HOPPER_TILE=0:128:128:1:2) keeps its cluster only in a
    TK_WG128_CLUSTER build (kernel_variants.h, A/B only); the default build has no such kernel, so the
    plan drops the cluster and runs the tile unclustered on one warpgroup."""
    p = _C.hopper_plan(256, 8192, 8192, 132, tile=(False, 128, 128, 1, 2))
    assert (p["bm"], p["bn"], p["splits"], p["cluster"], p["wg_rows"], p["units"]) == (128, 128, 1, 1, 128, 128), p


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


@pytest.mark.skipif(not hasattr(_C, "hopper_dispatch_plan"), reason="a build without the CUDA kernels")
@pytest.mark.parametrize("layout", ["XT", "NTT", "", "nt"])
def test_dispatch_plan_layout_argument(layout):
    """hopper_dispatch_plan's layout names A then B, 'N' or 'T' each (module.cpp); anything else is a
    ValueError naming the argument, raised before the device is touched."""
    with pytest.raises(ValueError, match="layout must be one of"):
        _C.hopper_dispatch_plan(64, 64, 64, 0, False, layout)
