#!/usr/bin/env python3
"""DRAM bytes a persistent GEMM reads under a raster order, by an LRU model of the L2.

    python3 scripts/l2_raster_sim.py MxNxK [...] [--cap-mb 32] [--bands 2,4,8,16,32]

Model: 132 CTAs run units in ticket order in lockstep (wave w = units 132w .. 132w + 131); at each
k step every running unit reads its A box (128 x 64) and B box (256 x 64) of 2-byte elements; a
unit's 128 x 256 output is allocated in the L2 when it ends; one LRU over boxes of `--cap-mb`
bytes; a missed A / B box is a DRAM read. Orders: the kernels' grouped raster
(`torch_tk._C.grouped_tile`: bands of g row tiles, down a band then one column right), and, for
comparison, bands of g column tiles (along a band, then one row down; not in the kernels, but a
swap-AB plan's row bands of 2g over C^T sweep the same bands of C's columns with 256 x 128 tiles of
C: TK_HOPPER_SWAP=1 TK_HOPPER_GROUP_M=2g; pass the swapped shape, NxMxK, to model that).

Calibration (H200, ncu, caches flushed, unclustered, band 8 unless said), measured / modelled at
32 MB: 8192x8192x8192 NT 1490 / 1493 MB, band 16 ~1250 / 1225 (2026-11-26c); 8192x4096x4096 NN
382 / 384, band 16 ~292 / 323 (2026-11-26c); 8192x2048x5632 213.5 / 213 (at any capacity >= 25 MB);
8192x5632x2048 153.7 / 165, band 16 ~124 / 130 (104 / 126 at 34 MB); 8192x2048x2048 44.7 / 42
(2026-11-26f). The real L2 (two partitions, not LRU) degrades more smoothly than the model's
cliffs where a reuse distance crosses the capacity: near a cliff (a band whose result jumps
between 32 and 36 MB) read the model as a direction, not a number.

The planner's opt-in band rule (TK_HOPPER_BAND_RULE=1) minimises the same model at panel
granularity (csrc/gemm/hopper/l2_band.h, `torch_tk._C.raster_dram_mb`; test/test_l2_band_cpu.py
checks the two agree).
"""
import argparse
import math
import sys
from collections import OrderedDict


def dram_read_mb(order, k_tiles, cap_mb, bm=128, bn=256, sms=132):
    """MB of A / B boxes missed by an LRU L2 of cap_mb over the unit `order` [(m, n)]."""
    cap, used, miss = cap_mb * 2**20, 0, 0
    lru = OrderedDict()

    def touch(key, size):
        nonlocal used, miss
        if key in lru:
            lru.move_to_end(key)
            return
        if key[0] != "C":
            miss += size
        lru[key] = size
        used += size
        while used > cap:
            used -= lru.popitem(last=False)[1]

    for w0 in range(0, len(order), sms):
        wave = order[w0:w0 + sms]
        for k in range(k_tiles):
            for m, n in wave:
                touch(("A", m, k), bm * 64 * 2)
                touch(("B", n, k), bn * 64 * 2)
        for m, n in wave:
            touch(("C", m, n), bm * bn * 2)
    return miss / 1e6


def row_bands(tiles_m, tiles_n, g, grouped_tile):
    return [tuple(grouped_tile(i, tiles_m, tiles_n, g)) for i in range(tiles_m * tiles_n)]


def column_bands(tiles_m, tiles_n, g):
    return [(m, n) for b in range(0, tiles_n, g) for m in range(tiles_m) for n in range(b, min(tiles_n, b + g))]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shapes", nargs="+", help="MxNxK")
    p.add_argument("--cap-mb", type=float, default=32.0)
    p.add_argument("--bands", default="2,4,8,16,32")
    a = p.parse_args(argv)
    from torch_tk import _C

    def grouped(i, tm, tn, g):
        return tuple(_C.grouped_tile(i, tm, tn, g))  # (m, n): the kernels' own raster (raster.h)

    bands = [int(b) for b in a.bands.split(",")]
    for s in a.shapes:
        M, N, K = (int(x) for x in s.split("x"))
        tm, tn, kt = math.ceil(M / 128), math.ceil(N / 256), math.ceil(K / 64)
        unique = (M * K + N * K) * 2 / 1e6
        rows = " ".join(f"g{g}:{dram_read_mb(row_bands(tm, tn, g, grouped), kt, a.cap_mb):.0f}" for g in bands)
        cols = " ".join(f"g{g}:{dram_read_mb(column_bands(tm, tn, g), kt, a.cap_mb):.0f}" for g in bands)
        print(f"{s}: unique {unique:.0f} MB; row bands {rows} | column bands {cols}  (L2 {a.cap_mb:g} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
