"""Host tests of the skinny (decode-shape) kernel's index math and plan (torch_tk._C).

The mma.m16n8k16 fragment maps are checked against the PTX ISA's formulas for
"Matrix Fragments for mma.m16n8k16 with floating point type" written out independently
here; the kernel's K order (each lane loads one 16-B vector per row and feeds words 2s,
2s+1 to mma step s) is checked by simulating a warp's two mma steps on integer data.
"""

from __future__ import annotations

import random

import pytest

from torch_tk import _C


def ptx_a(lane, i):
    """PTX: A element a_i (i = 0..7, two per 32-bit register) of a lane."""
    g, q = lane // 4, lane % 4
    row = g if (i < 2 or 4 <= i < 6) else g + 8
    col = q * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def ptx_b(lane, i):
    g, q = lane // 4, lane % 4
    return q * 2 + (i & 1) + (8 if i >= 2 else 0), g


def ptx_c(lane, i):
    g, q = lane // 4, lane % 4
    return (g if i < 2 else g + 8), q * 2 + (i & 1)


def test_mma16816_maps_match_ptx():
    for lane in range(32):
        for reg in range(4):
            for half in range(2):
                assert _C.mma16816_coord("a", lane, reg, half) == ptx_a(lane, 2 * reg + half)
            assert _C.mma16816_coord("c", lane, reg) == ptx_c(lane, reg)
        for reg in range(2):
            for half in range(2):
                assert _C.mma16816_coord("b", lane, reg, half) == ptx_b(lane, 2 * reg + half)
    # each map covers its matrix exactly once across the warp
    a = {_C.mma16816_coord("a", l, r, h) for l in range(32) for r in range(4) for h in range(2)}
    b = {_C.mma16816_coord("b", l, r, h) for l in range(32) for r in range(2) for h in range(2)}
    c = {_C.mma16816_coord("c", l, r) for l in range(32) for r in range(4)}
    assert a == {(r, k) for r in range(16) for k in range(16)}
    assert b == {(k, n) for k in range(16) for n in range(8)}
    assert c == {(r, n) for r in range(16) for n in range(8)}


def test_skinny_chunk_k_is_a_bijection_within_the_lane_vector():
    seen = set()
    for s in range(2):
        for lk in range(16):
            k = _C.skinny_chunk_k(s, lk)
            q = (lk % 8) // 2
            assert 8 * q <= k < 8 * q + 8, "a lane's logical columns must lie in its own 16-B vector"
            seen.add(k)
    assert seen == set(range(32))


@pytest.mark.parametrize("seed", range(5))
def test_warp_simulation_of_one_k_chunk(seed):
    """What the kernel does with one 32-wide chunk: lane (g, q) loads the vector k = 8q..8q+7 of
    weight rows g, g+8 and token row g; step s uses words 2s, 2s+1. Summed over both steps the
    mma results must equal W . X^T exactly (integers)."""
    rnd = random.Random(seed)
    W = [[rnd.randint(-9, 9) for _ in range(32)] for _ in range(16)]
    X = [[rnd.randint(-9, 9) for _ in range(32)] for _ in range(8)]
    D = [[0] * 8 for _ in range(16)]
    for s in range(2):
        A = [[None] * 16 for _ in range(16)]
        B = [[None] * 8 for _ in range(16)]
        for lane in range(32):
            g, q = lane // 4, lane % 4
            vec_w = {0: W[g][8 * q:8 * q + 8], 1: W[g + 8][8 * q:8 * q + 8]}
            vec_x = X[g][8 * q:8 * q + 8]
            # A registers {row g: word 2s, row g+8: word 2s, row g: word 2s+1, row g+8: word 2s+1}
            for reg, (which, word) in enumerate([(0, 2 * s), (1, 2 * s), (0, 2 * s + 1), (1, 2 * s + 1)]):
                for half in range(2):
                    r, lk = _C.mma16816_coord("a", lane, reg, half)
                    assert A[r][lk] is None
                    A[r][lk] = vec_w[which][2 * word + half]
                    assert _C.skinny_chunk_k(s, lk) == 8 * q + 2 * word + half
            for reg, word in enumerate([2 * s, 2 * s + 1]):
                for half in range(2):
                    lk, n = _C.mma16816_coord("b", lane, reg, half)
                    assert B[lk][n] is None
                    B[lk][n] = vec_x[2 * word + half]
        for r in range(16):
            for n in range(8):
                D[r][n] += sum(A[r][k] * B[k][n] for k in range(16))
    assert D == [[sum(W[r][k] * X[n][k] for k in range(32)) for n in range(8)] for r in range(16)]


@pytest.mark.parametrize("M", [1, 7, 8, 9, 16])
def test_skinny_plan_tiles(M):
    p = _C.hopper_skinny_plan(M, 4096, 4096, max_m=16)  # 9..16 tokens: TK_HOPPER_SKINNY_MAX_M=16
    assert p["use"]
    assert p["tn"] == (1 if M <= 8 else 2)  # 8-token mma tiles covering M
    # up to 8 tokens 16 rows x 8 warps; above, 128 CTAs of 32 rows fit one per SM: 16 warps each
    assert (p["rows"], p["warps"], p["grid"]) == ((16, 8, 256) if M <= 8 else (32, 16, 128))
    for forced, want in ((16, (16, 8, 256)), (32, (32, 8, 128)), (33, (32, 16, 128))):
        q = _C.hopper_skinny_plan(M, 4096, 4096, max_m=16, rows_tn2=forced)  # TK_HOPPER_SKINNY_ROWS16
        assert (q["rows"], q["warps"], q["grid"]) == ((16, 8, 256) if M <= 8 else want)


@pytest.mark.parametrize("N,want", [(2048, None), (4096, (32, 16)), (4224, (32, 16)), (4256, None),
                                    (8192, None), (14336, None)])
def test_skinny_plan_cta_shape_for_16_tokens(N, want):
    # 32 rows x 16 warps while those CTAs fill one wave and half the SMs; else the wgmma plan
    p = _C.hopper_skinny_plan(16, N, 4096, vs_gemm=False)
    assert p["use"] == (want is not None)
    if want is not None:
        assert (p["rows"], p["warps"]) == want and p["grid"] == -(-N // p["rows"])
    # forced CTA shapes (TK_HOPPER_SKINNY_ROWS16) run wherever half the SMs fill in 16-row CTAs
    for forced, shape in ((16, (16, 8)), (32, (32, 8)), (33, (32, 16))):
        q = _C.hopper_skinny_plan(16, N, 4096, rows_tn2=forced, vs_gemm=False)
        assert q["use"] and (q["rows"], q["warps"]) == shape and q["grid"] == -(-N // q["rows"])


def test_skinny_plan_declines():
    assert _C.hopper_skinny_plan(9, 4096, 4096)["use"]  # 9..16 tokens: 128 CTAs of 32 rows, one per SM
    assert not _C.hopper_skinny_plan(9, 14336, 4096)["use"]  # 448 of them: the wgmma kernel is faster
    assert not _C.hopper_skinny_plan(9, 4096, 4096, max_m=8)["use"]  # TK_HOPPER_SKINNY_MAX_M=8
    assert not _C.hopper_skinny_plan(17, 4096, 4096, max_m=64)["use"]  # capped at the kernel's 16 tokens
    assert not _C.hopper_skinny_plan(8, 4096, 4096, a_k_contig=False)["use"]
    assert not _C.hopper_skinny_plan(8, 4096, 4096, b_k_contig=False)["use"]
    assert not _C.hopper_skinny_plan(8, 4096, 4096, max_m=0)["use"]  # TK_HOPPER_SKINNY_MAX_M=0
    assert not _C.hopper_skinny_plan(8, 4096, 4096, max_m=4)["use"]
    assert not _C.hopper_skinny_plan(8, 1024, 4096)["use"]  # 64 CTAs cannot pull the bandwidth
    assert _C.hopper_skinny_plan(8, 1056, 4096)["use"]  # 66 CTAs = half the SMs
    assert not _C.hopper_skinny_plan(8, 1056, 4096, sms=264)["use"]


@pytest.mark.parametrize("M,N,K,want", [
    (1, 8192, 8192, False), (8, 8192, 8192, False),  # wgmma: 128 unsplit 64 x 64 tiles, one full wave
    (1, 14336, 4096, True), (8, 14336, 4096, True),  # wgmma: 112 tiles of 132 SMs (< 7/8)
    (8, 4096, 14336, True), (8, 4096, 4096, True),   # wgmma: K splits or 64 tiles
])
def test_skinny_plan_yield_to_a_full_unsplit_wave(M, N, K, want):
    """The opt-in yield (TK_HOPPER_SKINNY_YIELD=1, vs_gemm=True); by default the skinny kernel
    keeps every shape it can run (skinny_plan.h kSkinnyYield)."""
    g = _C.hopper_plan(M, N, K, 132)
    full = g["splits"] == 1 and g["sk_tiles"] == 0 and 8 * g["grid"] >= 7 * 132
    assert full == (not want)  # the rule, restated from the wgmma plan itself
    assert _C.hopper_skinny_plan(M, N, K, vs_gemm=True)["use"] == want
    assert _C.hopper_skinny_plan(M, N, K)["use"]  # the default: no yield
