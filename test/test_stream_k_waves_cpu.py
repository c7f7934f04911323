"""Host tests of stream-K mode 4 (TK_HOPPER_STREAMK=4; kittens/common/stream_k.h sk_split_tail_waves):
the aligned last-wave split, and for a last wave more than half full the same split over W
whole-tile CTAs per SM launched in turn. CPU only; the GPU check is test_stream_k_gpu.py `waves`.
"""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C
from test_schedule_math import check_sk_partition


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 20000), st.integers(2, 132), st.integers(1, 300), st.integers(1, 8), st.integers(1, 32),
       st.integers(0, 10), st.integers(1, 4))
def test_waves_split_rule(tiles, grid, k_tiles, max_slots, min_iters, gain, max_waves):
    sk, parts, ctas = _C.sk_split_tail_waves(tiles, grid, k_tiles, max_slots, min_iters, gain, max_waves)
    w, r = divmod(tiles, grid)
    if tiles > grid and r and 2 * r <= grid:  # mode 2's case, unchanged
        assert (sk, parts, ctas) == (*_C.sk_split_tail(tiles, grid, k_tiles, max_slots, min_iters, gain), 0)
        return
    s = min(w * grid // r, max_slots, k_tiles // min_iters) if tiles > grid and r else 0
    if tiles <= grid or r == 0 or w > max_waves or s <= w or (s - w) * 100 < gain * s * (w + 1):
        assert (sk, parts, ctas) == (0, 0, 0)
        return
    assert (sk, parts, ctas) == (r, r * s, w * grid)
    assert parts <= ctas and ctas == tiles - r  # one whole tile per CTA


def makespan(tiles, grid, k_tiles, sk, parts, ctas, partial_cost=0.0):
    """Tile times per SM when `ctas` CTAs run on `grid` SMs one after another (each CTA on the SM
    that frees first, in blockIdx order): CTA c runs whole tile c, then its tail range; a finisher
    also waits for its tile's other ranges and adds their partials (partial_cost tiles each)."""
    segs = _C.sk_partition(tiles, k_tiles, grid, mode=4) if sk else []
    free = [0.0] * grid
    heapq.heapify(free)
    end = {}
    for c in range(ctas):
        t = heapq.heappop(free) + 1.0  # the whole tile
        for tile, b, e, slot, slots in (segs[c] if c < len(segs) else []):
            t += (e - b) / k_tiles
            if slot == slots - 1:
                t = max([t] + [end[c - j] for j in range(1, slots)]) + (slots - 1) * partial_cost
        end[c] = t
        heapq.heappush(free, t)
    return max(free)


@settings(max_examples=200, deadline=None)
@given(st.integers(133, 600), st.integers(16, 256))
def test_waves_partition_and_time(tiles, k_tiles):
    grid = 132
    sk, parts, ctas = _C.sk_split_tail_waves(tiles, grid, k_tiles)  # plan_rules.h's limits, as sk_partition uses
    segs = _C.sk_partition(tiles, k_tiles, grid, mode=4)
    if ctas == 0:
        return
    s = parts // sk
    assert len(segs) == parts
    assert set(check_sk_partition(segs, sk, k_tiles, parts).values()) == {s}
    for c, seg in enumerate(segs):  # CTA c: range c % s of tail tile c // s, one segment
        assert seg == [(c // s, (c % s) * k_tiles // s, (c % s + 1) * k_tiles // s, c % s, s)]
    w = tiles // grid
    # W whole tiles and W ranges of ~1/s (whole k tiles) per SM, instead of W + 1 tiles (free partials).
    part = -(-k_tiles // s) / k_tiles
    assert w + w * (k_tiles // s) / k_tiles - 1e-9 <= makespan(tiles, grid, k_tiles, sk, parts, ctas) <= w + w * part + 1e-9
    assert w + w * part < w + 1


def test_waves_on_the_model_dw_gemms():
    # 5632x2048x8192 / 2048x5632x8192: 352 tiles of 128 x 256 = 2 waves + 88 on 132 SMs.
    assert _C.sk_split_tail_waves(352, 132, 128) == (88, 264, 264)
    base = _C.hopper_plan(5632, 2048, 8192, 132, stream_k=0)
    p = _C.hopper_plan(5632, 2048, 8192, 132, stream_k=4)
    assert (p["sk_tiles"], p["sk_parts"], p["grid"], p["dynamic"]) == (88, 264, 264, False)
    assert {**p, "sk_tiles": 0, "sk_parts": 0, "grid": 132, "dynamic": True} == base
    # 2 + 2/3 tile times per SM instead of 3; with the finisher's two adds at ~4.3k cycles each
    # (benchmarks/NOTES.md, 2026-11-26) against ~131k per K = 8192 tile, once per generation, 2.80.
    assert makespan(352, 132, 128, 88, 264, 264) == 2 + 2 * 43 / 128  # ranges of 42 / 43 / 43 k tiles
    assert makespan(352, 132, 128, 88, 264, 264, partial_cost=4.3 / 131) < 2.81
    # Without mode 4 the plan keeps whole tiles: 3 tile times.
    assert makespan(352, 132, 128, 0, 0, 352) == 3.0
    # A last wave at most half full: mode 2's plan (no generations).
    q2, q4 = (_C.hopper_plan(2049, 2055, 4100, 132, stream_k=m, odd_widths=0) for m in (2, 4))
    assert q2 == q4 and q4["grid"] <= 132
