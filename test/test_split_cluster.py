"""Host tests of the split-K-in-clusters index math (csrc/kittens/common/split_cluster.h), used by
the Hopper kernels that finish split-K in distributed shared memory (csrc/gemm/hopper/split_dsmem.cuh).

Checked against independent models: every (strip, round) of a tile has exactly one owner among the
cluster's CTAs, with even shares where the rounds allow; cluster c's rank r gets split r of tile c
under kittens::work_unit's split-major unit numbering; the partial area's 16-B chunks are a
bijection onto [0, BM x BN x 4) and a warp's 32 chunks are 512 contiguous bytes (4 shared-memory
wavefronts, no bank conflict).
"""

from __future__ import annotations

import itertools

import pytest

from torch_tk import _C

STRIPS = 2  # 64-row strips of a 128-row tile
WIDTHS = [64, 128, 192, 256]  # tile widths of the kernels with the split-K-in-clusters variant


@pytest.mark.parametrize("bn", WIDTHS)
@pytest.mark.parametrize("splits", [2, 3, 4])
def test_every_round_has_one_owner_in_range(bn, splits):
    rounds = bn // 64
    owners = {(h, s): _C.split_round_owner(h, s, rounds, STRIPS, splits) for h in range(rounds) for s in range(STRIPS)}
    assert all(0 <= o < splits for o in owners.values())
    shares = [sum(1 for o in owners.values() if o == r) for r in range(splits)]
    pairs = rounds * STRIPS
    # Round-robin over (round, strip) pairs: shares differ by at most one.
    assert max(shares) - min(shares) <= 1 and sum(shares) == pairs
    if rounds % splits == 0:
        # Each CTA owns the same rounds of both strips: its two consumer warpgroups work alike.
        for r in range(splits):
            mine = [(h, s) for (h, s), o in owners.items() if o == r]
            assert sorted(h for h, s in mine if s == 0) == sorted(h for h, s in mine if s == 1)


@pytest.mark.parametrize("tiles,splits", [(1, 2), (32, 4), (33, 4), (64, 2), (43, 3)])
def test_cluster_rank_takes_its_split_of_the_clusters_tile(tiles, splits):
    units = tiles * splits
    seen = set()
    for block in range(units):
        u = _C.split_cluster_unit(block, units, splits)
        # kittens::work_unit: units are split-major (tile = u % tiles, split = u // tiles).
        tm, tn, split = _C.work_unit(u, 1, tiles, 1)
        assert (tn, split) == (block // splits, block % splits)
        seen.add(u)
    assert seen == set(range(units))


@pytest.mark.parametrize("bn", WIDTHS)
def test_partial_chunks_fill_the_tile_bytes_once(bn):
    rounds = bn // 64
    offs = [
        _C.split_partial_offset(s, h, c, t, rounds)
        for s, h, c, t in itertools.product(range(STRIPS), range(rounds), range(8), range(128))
    ]
    assert all(o % 16 == 0 for o in offs)
    assert sorted(offs) == list(range(0, 128 * bn * 4, 16))  # BM x BN fp32, each 16 B once


@pytest.mark.parametrize("s,h,c", [(0, 0, 0), (1, 3, 7), (0, 2, 5)])
def test_a_warps_chunks_are_512_contiguous_bytes(s, h, c):
    for warp in range(4):
        offs = [_C.split_partial_offset(s, h, c, 32 * warp + lane, 4) for lane in range(32)]
        assert offs == list(range(offs[0], offs[0] + 512, 16))
