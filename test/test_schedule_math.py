"""Host tests of the Hopper kernel's tile schedule exported by torch_tk._C: grouped rasterisation
(against the Triton-style model in index_models.py), split-K ranges, persistent work units and the
stream-K tail partition (stream_k.h). The shared-memory index math is in test_index_math.py.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C
from index_models import grouped_raster_ref


# ============================================================================ grouped_tile


@pytest.mark.parametrize(
    "tiles_m,tiles_n,group_m",
    [(1, 1, 1), (1, 7, 8), (7, 1, 8), (8, 8, 8), (13, 5, 8), (16, 3, 4), (5, 9, 1), (65, 33, 8), (3, 4, 16)],
)
def test_grouped_tile_bijection_and_reference(tiles_m, tiles_n, group_m):
    seen = set()
    for pid in range(tiles_m * tiles_n):
        tm, tn = tuple(_C.grouped_tile(pid, tiles_m, tiles_n, group_m))
        assert 0 <= tm < tiles_m and 0 <= tn < tiles_n
        assert (tm, tn) == grouped_raster_ref(pid, tiles_m, tiles_n, group_m), pid
        seen.add((tm, tn))
    assert len(seen) == tiles_m * tiles_n


def test_grouped_tile_walks_band_rows_first():
    tiles_m, tiles_n, g = 10, 6, 4
    order = [tuple(_C.grouped_tile(p, tiles_m, tiles_n, g)) for p in range(tiles_m * tiles_n)]
    # first band: rows 0..3 of column 0, then rows 0..3 of column 1, ...
    assert order[:8] == [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1)]
    # band 0 occupies exactly the first g * tiles_n block ids
    assert {m for m, _ in order[: g * tiles_n]} == set(range(g))
    # the last band is short (rows 8, 9)
    assert order[2 * g * tiles_n: 2 * g * tiles_n + 4] == [(8, 0), (9, 0), (8, 1), (9, 1)]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 16))
def test_grouped_tile_property(tiles_m, tiles_n, group_m):
    got = [tuple(_C.grouped_tile(p, tiles_m, tiles_n, group_m)) for p in range(tiles_m * tiles_n)]
    assert sorted(got) == list(itertools.product(range(tiles_m), range(tiles_n)))
    assert got == [grouped_raster_ref(p, tiles_m, tiles_n, group_m) for p in range(tiles_m * tiles_n)]


# ----------------------------------------------------------------------------- persistent schedule


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(1, 64))
def test_split_k_ranges_tile_k_in_order(k_tiles, splits):
    splits = min(splits, k_tiles)
    ranges = [_C.split_k_range(s, splits, k_tiles) for s in range(splits)]
    assert ranges[0][0] == 0 and ranges[-1][1] == k_tiles
    for (b0, e0), (b1, e1) in zip(ranges, ranges[1:]):
        assert e0 == b1
    assert all(e > b for b, e in ranges)  # every split has work


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(1, 64), st.sampled_from([1, 2, 4]))
def test_split_k_ranges_aligned_to_stages(k_tiles, splits, align):
    """Kernels with several k tiles per stage (gemm_layout::KT) need every range to start on a
    stage and end on one or at K (the stage's tiles past K arrive zero-filled)."""
    ranges = [_C.split_k_range(s, splits, k_tiles, align) for s in range(splits)]
    assert ranges[0][0] == 0 and ranges[-1][1] == k_tiles
    for (b0, e0), (b1, e1) in zip(ranges, ranges[1:]):
        assert e0 == b1 and e0 % align == 0
    assert all(e >= b for b, e in ranges)
    if splits <= -(-k_tiles // align):
        assert all(e > b for b, e in ranges)  # every split has work
    if align == 1:
        assert ranges == [_C.split_k_range(s, splits, k_tiles) for s in range(splits)]


@pytest.mark.parametrize("k_tiles", [2**25, 2**25 - 1, 33554431 // 3, 1 << 20])
@pytest.mark.parametrize("splits,align", [(16, 1), (16, 2), (64, 1), (7, 2)])
def test_split_k_ranges_exact_at_the_largest_k(k_tiles, splits, align):
    """split_k_range computes in 32 bits (raster.h): exact up to K = 2^31 (2^25 k tiles of 64) and
    64 splits, against the 64-bit formula."""
    n = -(-k_tiles // align)
    for s in (0, 1, splits // 2, splits - 1):
        b, e = s * n // splits * align, min((s + 1) * n // splits * align, k_tiles)
        assert _C.split_k_range(s, splits, k_tiles, align) == (b, e)


@pytest.mark.parametrize("tm,tn,g,splits", [(1, 1, 8, 1), (3, 5, 8, 2), (17, 9, 8, 3), (64, 32, 8, 1), (2, 40, 8, 4)])
def test_work_units_cover_every_tile_and_split_once(tm, tn, g, splits):
    seen = {_C.work_unit(u, tm, tn, g) for u in range(tm * tn * splits)}
    assert seen == {(m, n, s) for m in range(tm) for n in range(tn) for s in range(splits)}


# ============================================================================ stream-K tail (stream_k.h)


def check_sk_partition(ctas, sk, k_tiles, grid):
    """The invariants of a stream-K partition in the kernel's walk order (stream_k.h): balanced
    ranges, each tile covered once by consecutive CTAs in slot order, at most one partial per
    CTA and it is the first segment a CTA walks (so a finisher, the tile's last slot, waits only
    on lower-numbered CTAs, which produced their partial first). Returns the slots per tile."""
    assert len(ctas) == grid
    counts = [sum(e - b for _, b, e, _, _ in segs) for segs in ctas]
    assert max(counts) - min(counts) <= 1 and min(counts) >= 1
    assert sum(counts) == sk * k_tiles
    covered = {}
    for c, segs in enumerate(ctas):
        tiles_seen = [t for t, *_ in segs]
        assert tiles_seen == sorted(tiles_seen, reverse=True) and len(set(tiles_seen)) == len(tiles_seen)
        for i, (t, b, e, slot, slots) in enumerate(segs):
            assert 0 <= t < sk and 0 <= b < e <= k_tiles and 0 <= slot < slots
            if slot < slots - 1:  # a partial: a tile's head (or a CTA's only segment), walked first
                assert i == 0 and e < k_tiles and (b == 0 or len(segs) == 1)
            covered.setdefault(t, []).append((slot, b, e, slots, c))
    assert sorted(covered) == list(range(sk))
    for t, parts in covered.items():
        parts.sort()
        assert [p[0] for p in parts] == list(range(len(parts))) and all(p[3] == len(parts) for p in parts)
        assert parts[0][1] == 0 and parts[-1][2] == k_tiles
        assert all(parts[i][2] == parts[i + 1][1] for i in range(len(parts) - 1))  # contiguous, in order
        assert all(parts[i][4] + 1 == parts[i + 1][4] for i in range(len(parts) - 1))  # CTAs c, c + 1, ...
    return {t: len(parts) for t, parts in covered.items()}


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 300), st.integers(1, 132))
def test_stream_k_tail_covers_each_sk_tile_once_in_two_slots(tiles, k_tiles, grid):
    sk = _C.sk_tiles(tiles, grid)
    r = tiles % grid
    if tiles <= grid or r == 0 or (grid - r) * 100 < grid * (tiles // grid + 1):
        assert sk == 0 and _C.sk_partition(tiles, k_tiles, grid) == []
        return
    assert sk == grid + r and (tiles - sk) % grid == 0  # the whole tiles fill whole waves
    ctas = _C.sk_partition(tiles, k_tiles, grid)
    assert min(sum(e - b for _, b, e, _, _ in segs) for segs in ctas) >= k_tiles  # >= one tile each
    assert max(check_sk_partition(ctas, sk, k_tiles, grid).values()) <= 2


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 132))
def test_stream_k_fill_covers_every_tile_once(tiles, k_tiles, grid):
    sk = _C.sk_fill_tiles(tiles, k_tiles, grid, 1)
    if tiles >= grid or tiles * k_tiles < grid:
        assert sk == 0 and _C.sk_partition(tiles, k_tiles, grid, fill=True) == []
        return
    assert sk == tiles
    slots = check_sk_partition(_C.sk_partition(tiles, k_tiles, grid, fill=True), sk, k_tiles, grid)
    per = tiles * k_tiles // grid  # a tile meets at most ceil((k_tiles - 1) / per) + 1 ranges
    assert max(slots.values()) <= -(-(k_tiles - 1) // per) + 1
    assert _C.sk_fill_tiles(tiles, k_tiles, grid, 16) == (sk if tiles * k_tiles >= 16 * grid else 0)


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 300), st.integers(2, 132), st.integers(1, 8), st.integers(1, 32),
       st.integers(0, 10))
def test_stream_k_split_tail_deals_last_wave_tiles_in_aligned_ranges(tiles, k_tiles, grid, max_slots, min_iters, gain):
    """sk_split_tail: only a part-filled last wave of at most half the grid, s = min(grid // r,
    max_slots, k_tiles // min_iters) >= 2 slots per tile, and only where (1 - 1/s) of one of the
    W + 1 waves is at least `gain` percent."""
    sk, parts = _C.sk_split_tail(tiles, grid, k_tiles, max_slots, min_iters, gain)
    r, waves = tiles % grid, tiles // grid + 1
    s = min(grid // r, max_slots, k_tiles // min_iters) if r else 0
    if tiles <= grid or r == 0 or 2 * r > grid or s < 2 or (s - 1) * 100 < gain * s * waves:
        assert (sk, parts) == (0, 0)
        return
    assert (sk, parts) == (r, r * s) and parts <= grid


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 4000), st.integers(1, 300), st.integers(2, 132))
def test_stream_k_split_tail_partition(tiles, k_tiles, grid):
    """The split's partition gives CTA c < r * s exactly the k range c % s of tail tile c // s
    (one segment; all CTAs of a slot at the same k offsets), and nothing to the other CTAs."""
    sk, parts = _C.sk_split_tail(tiles, grid, k_tiles)  # plan.h's limits, as sk_partition uses
    ctas = _C.sk_partition(tiles, k_tiles, grid, split=True)
    if sk == 0:
        assert ctas == []
        return
    s = parts // sk
    assert len(ctas) == parts
    slots = check_sk_partition(ctas, sk, k_tiles, parts)
    assert set(slots.values()) == {s}
    for c, segs in enumerate(ctas):
        assert segs == [(c // s, (c % s) * k_tiles // s, (c % s + 1) * k_tiles // s, c % s, s)]


def test_stream_k_tail_examples():
    # 4096^3 with 128x256 tiles on an H100: 512 tiles = 3 waves of 132 + 116 -> 248 sk tiles
    assert _C.sk_tiles(512, 132) == 248
    assert _C.sk_tiles(1024, 132) == 132 + 100  # 8192x4096x4096: 7.76 waves
    assert _C.sk_tiles(7168, 132) == 132 + 40   # 8192x28672x4096
    assert _C.sk_tiles(8192, 132) == 132 + 8    # 16384^3: 62.06 waves
    assert _C.sk_tiles(2 * 132 + 130, 132) == 0  # idle 2/132 of one of 3 waves: 0.5%, left whole
    assert _C.sk_tiles(2 * 132 + 120, 132) == 252  # idle 12/132 of one of 3 waves: 3%
    assert _C.sk_tiles(100 * 132 + 1, 132) == 0  # idle 131/132 of one of 101 waves: 0.98%
    assert _C.sk_tiles(112, 132) == 0            # fewer tiles than SMs: split-K's case
    # 512 tiles, 64 k tiles (4096^3): 248 * 64 = 15872 iterations, 120 or 121 per CTA, each
    # walked from the back: CTA 0 stores tile 1's head as a partial, then computes tile 0 whole;
    # CTA 1 first stores tile 3's head, computes tile 2, then finishes tile 1 with CTA 0's partial
    ctas = _C.sk_partition(512, 64, 132)
    assert ctas[0] == [(1, 0, 56, 0, 2), (0, 0, 64, 0, 1)]
    assert ctas[1] == [(3, 0, 48, 0, 2), (2, 0, 64, 0, 1), (1, 56, 64, 1, 2)]
    # fill: 112 tiles of 64 k tiles on 132 CTAs (256x14336x4096 swapped): 54-55 per CTA, up to 3
    # CTAs per tile
    ctas = _C.sk_partition(112, 64, 132, fill=True)
    assert ctas[0] == [(0, 0, 54, 0, 2)] and ctas[1] == [(1, 0, 44, 0, 2), (0, 54, 64, 1, 2)]
    assert _C.sk_fill_tiles(112, 64, 132, 16) == 112 and _C.sk_fill_tiles(32, 64, 132, 16) == 0
