"""Host tests of the Hopper GEMM planner (csrc/gemm/hopper/plan.h) through torch_tk._C.hopper_plan.

The planner picks, per (M, N, K) and SM count, the swap-AB orientation, tile (bm x bn), K splits,
2-CTA clusters, warpgroup rows and schedule; these tests pin its invariants (every tile covered,
one wave where promised, valid kernel choices) on random shapes and the measured rules on the
shapes that motivated them (benchmarks/NOTES.md has the measurements). CPU only: the planner is
plain C++ shared by the CUDA dispatcher and this binding.

This file: the invariants on random shapes, the documented examples, the mid64 rules, forced tiles
and the dispatch binding's arguments. The width rules are in test_plan_widths_cpu.py (one-warpgroup,
192-wide and odd-width tiles) and test_plan_tokens_cpu.py (129..512-token plans: token widths,
64-row token tiles, ring staging, 128 x 224, unswapped splits); the shared masks in plan_helpers.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C
from plan_helpers import _ODD_ALL, _ODD_MID_M, _ODD_BEFORE_03E, _ODD_MID_M224, _ODD_144_UNALIGNED, _ODD_MID192


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
    assert _C.hopper_plan(4097, 4097, 4097, 132, odd_widths=ow, stream_k=0)["sk_tiles"] == 0
    # the default (mode 5) takes mode 2's aligned split for this 1/4-full last wave (below)
    assert _C.hopper_plan(4097, 4097, 4097, 132, odd_widths=ow)["sk_parts"] == 132
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



@pytest.mark.skipif(not hasattr(_C, "hopper_dispatch_plan"), reason="a build without the CUDA kernels")
@pytest.mark.parametrize("layout", ["XT", "NTT", "", "nt"])
def test_dispatch_plan_layout_argument(layout):
    """hopper_dispatch_plan's layout names A then B, 'N' or 'T' each (module.cpp); anything else is a
    ValueError naming the argument, raised before the device is touched."""
    with pytest.raises(ValueError, match="layout must be one of"):
        _C.hopper_dispatch_plan(64, 64, 64, 0, False, layout)
