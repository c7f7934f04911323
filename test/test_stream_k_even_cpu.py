"""Host tests of stream-K mode 5 (TK_HOPPER_STREAMK=5; kittens/common/stream_k.h sk_tail_even): mode 2's
aligned split for a last wave at most half full, and for a fuller one its r tiles dealt evenly to all
CTAs of the persistent grid where their k offsets take few values. CPU only; the GPU check is
test_stream_k_gpu.py `even`.
"""

from __future__ import annotations

from math import gcd

from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C
from test_schedule_math import check_sk_partition


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 20000), st.integers(2, 132), st.integers(1, 300), st.integers(1, 8), st.integers(1, 32),
       st.integers(0, 10))
def test_even_tail_rule(tiles, grid, k_tiles, max_offsets, min_iters, gain):
    sk, parts = _C.sk_tail_even(tiles, grid, k_tiles, max_offsets, min_iters, gain)
    w, r = divmod(tiles, grid)
    if (tiles <= grid or r == 0 or grid // gcd(r, grid) > max_offsets or r * k_tiles < grid * min_iters
            or (grid - r) * 100 < gain * grid * (w + 1)):
        assert (sk, parts) == (0, 0)
        return
    assert (sk, parts) == (r, grid)


def offsets(segs):
    """The k offsets at which the CTAs' ranges start within their tiles (the last segment walked
    is the range's start: the kernel walks from the back)."""
    return {seg[-1][1] for seg in segs if seg}


def makespan(tiles, grid, k_tiles, partial_cost=0.0):
    """Tile times per SM under mode 5 (a static schedule; the dynamic one balances the same whole
    tiles): each CTA runs its W whole tiles, then its tail segments from the back -- the partial of a
    tile's head first, then the segment it finishes, which waits for the tile's other CTAs' partials
    and adds them (partial_cost tiles each)."""
    w = tiles // grid
    segs = _C.sk_partition(tiles, k_tiles, grid, mode=5)
    if not segs:
        return float(w + (1 if tiles % grid else 0))
    ready, end = {}, []
    for c, walk in enumerate(segs):  # partials first: CTA c's partial is ready after its first segment
        t = float(w)
        for tile, b, e, slot, slots in walk:
            t += (e - b) / k_tiles
            if slot < slots - 1:
                ready[(tile, slot)] = t
        end.append(t)
    for c, walk in enumerate(segs):
        t = float(w)
        for tile, b, e, slot, slots in walk:
            t += (e - b) / k_tiles
            if slot == slots - 1 and slots > 1:
                t = max([t] + [ready[(tile, j)] for j in range(slots - 1)]) + (slots - 1) * partial_cost
        end[c] = t
    return max(end)


@settings(max_examples=300, deadline=None)
# Last waves of 132 SMs: r = 88 (q = 3) and 99 (q = 4) take the even tail; 66 and 44 are mode 2's;
# the others (q = 33, 11, 132) keep whole tiles.
@given(st.integers(1, 14), st.sampled_from([44, 66, 67, 84, 88, 99, 100, 116, 131]), st.integers(1, 256))
def test_even_partition_and_time(w, r, k_tiles):
    grid = 132
    tiles = w * grid + r
    if 2 * r <= grid:  # mode 2's case under mode 5, where it saves >= 8% of the run (kSkTailMinGainPct)
        s = min(grid // r, 4, k_tiles // 16)
        split = s >= 2 and (s - 1) * 100 >= 8 * s * (w + 1)
        mode2 = _C.sk_partition(tiles, k_tiles, grid, mode=2)
        assert _C.sk_partition(tiles, k_tiles, grid, mode=5) == (mode2 if split else [])
        return
    segs = _C.sk_partition(tiles, k_tiles, grid, mode=5)
    # plan_rules.h: q <= 4, K >= 64 k tiles, >= 16 k tiles per CTA, >= 8% of the run saved.
    taken = r in (88, 99) and k_tiles >= 64 and r * k_tiles >= grid * 16 and (grid - r) * 100 >= 8 * grid * (w + 1)
    assert bool(segs) == taken
    if not taken:
        return
    sk = r
    assert _C.sk_tail_even(tiles, grid, k_tiles) == (r, grid) and len(segs) == grid
    slots = check_sk_partition(segs, sk, k_tiles, grid)
    # More than half a tile per CTA: every tail tile is covered by two CTAs (one partial add), and
    # the CTAs start at q = grid / gcd(r, grid) <= 4 k offsets (within a k tile of each other's
    # rounding), as a whole wave's would sit at one.
    assert set(slots.values()) == {2}
    q = grid // gcd(r, grid)
    starts = offsets(segs)
    assert q <= 4 and all(min(abs(o - j * k_tiles / q) for j in range(q)) < 1 for o in starts)
    assert len(starts) <= 2 * q  # each of the q offsets rounded down or up at most
    w = tiles // grid
    # W + r / grid tile times per SM (whole k tiles: within one k tile), instead of W + 1.
    assert abs(makespan(tiles, grid, k_tiles) - (w + r / grid)) <= 1.0 / k_tiles + 1e-9


def test_even_on_the_model_dw_gemms():
    # 5632x2048x8192 / 2048x5632x8192: 352 tiles of 128 x 256 = 2 waves + 88 on 132 SMs: q = 3.
    assert _C.sk_tail_even(352, 132, 128) == (88, 132)
    for m, n in ((5632, 2048), (2048, 5632)):
        base = _C.hopper_plan(m, n, 8192, 132, stream_k=0)
        p = _C.hopper_plan(m, n, 8192, 132, stream_k=5)
        assert (p["sk_tiles"], p["sk_parts"], p["grid"]) == (88, 132, 132)
        assert {**p, "sk_tiles": 0, "sk_parts": 0} == base  # the persistent grid, schedule and tile kept
    segs = _C.sk_partition(352, 128, 132, mode=5)
    assert segs[:3] == [[(0, 0, 85, 0, 2)], [(1, 0, 42, 0, 2), (0, 85, 128, 1, 2)], [(1, 42, 128, 1, 2)]]
    # 2 + 2/3 tile times per SM instead of 3; with the finisher's one add (~4.3k cycles against
    # ~131k per K = 8192 tile, benchmarks/NOTES.md 2026-11-26) 2.70, where mode 4 models 2.80.
    assert abs(makespan(352, 132, 128) - (2 + 86 / 128)) < 1e-9
    assert makespan(352, 132, 128, partial_cost=4.3 / 131) < 2.71
    # Short K keeps whole tiles (kSkEvenMinKTiles: the stream-K kernels lack the deferred epilogue):
    # 8192x5632x2048 (1408 tiles, r = 88, 32 k tiles).
    assert _C.hopper_plan(8192, 5632, 2048, 132, stream_k=5)["sk_tiles"] == 0
    # Last waves whose CTAs would sit at many k offsets keep whole tiles: 4096^3 (r = 116, q = 33),
    # 8192x4096x4096 (r = 100, q = 33), 8192x6144x4096 (r = 84, q = 11).
    for m, n, k in ((4096, 4096, 4096), (8192, 4096, 4096), (8192, 6144, 4096)):
        assert _C.hopper_plan(m, n, k, 132, stream_k=5)["sk_tiles"] == 0


def test_mode5_only_where_its_model_saves_enough():
    # plan_rules.h kSkTailMinGainPct = 8 (H200 2026-12-05f): the even tail at 2 waves + 88 tiles
    # (11% of the run modelled) stays; at 6 and 10 waves + 88 (4.8%, 3.0%: measured 2.5% slower)
    # whole tiles. The aligned split (r <= 66) likewise: 4096x5632x4096 (5 waves + 44, 3 slots:
    # 11%), 3072x6144x4096 (4 + 48, 2 slots: 10%) and 2048x11008x4096 (5 + 28, 4 slots: 12.5%)
    # split; 3072x14336x4096 (10 + 24, 4 slots: 6.8%, measured 1-2% slower) does not.
    sk = lambda m, n, k, **kw: (lambda p: (p["sk_tiles"], p["sk_parts"]))(_C.hopper_plan(m, n, k, 132, **kw))  # noqa: E731
    assert sk(5632, 2048, 8192) == (88, 132) and sk(2048, 5632, 4096) == (88, 132)  # the default
    for m, n, k in ((5120, 5632, 4096), (8192, 5632, 4096), (3072, 14336, 4096)):
        assert sk(m, n, k) == (0, 0)
    assert sk(8192, 5632, 4096, stream_k=2) == (0, 0)  # r = 88 > 66: mode 2 has no split there
    assert sk(3072, 14336, 4096, stream_k=2) == (24, 96)  # mode 2 alone keeps its 3% bound
    assert sk(4096, 5632, 4096) == (44, 132) and sk(3072, 6144, 4096) == (48, 96)
    assert sk(2048, 11008, 4096) == (28, 112)
