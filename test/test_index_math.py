"""Host tests of the Hopper kernel's index math exported by torch_tk._C.

Where possible the checks are independent of the formulas in the implementation:
bijection / contiguity properties, CuTe's Swizzle<3,4,3> and canonical GMMA layouts
evaluated by a small generic layout evaluator, the GmmaDescriptor bitfield layout
encoded through ctypes, the PTX accumulator fragment figure, and Triton-style
grouped rasterisation (the models: index_models.py).

This file: the shared-memory layouts (swizzle, K-/MN-major offsets, wgmma descriptors), the epilogue's
staging and copy-out math and the accumulator fragment; the tile schedule (grouped rasterisation,
split-K ranges, work units, stream-K) is in test_schedule_math.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C
from index_models import (
    ATOM, cute_swizzle, tma_swizzle128, layout_eval, gmma_kmajor_sw128_addr, gmma_mnmajor_sw128_addr, cute_desc,
    ptx_acc_fragment,
)


# sanity of the independent models themselves (they must agree with each other)
def test_models_agree_swizzle():
    for row in range(32):
        for byte in range(128):
            assert cute_swizzle(row * 128 + byte) == tma_swizzle128(row, byte)


def test_model_desc_layout():
    d = cute_desc(0x1230, 0x2000, 0x400)
    assert d >> 62 == 1
    assert d & 0x3FFF == 0x123
    assert (d >> 16) & 0x3FFF == 0x200
    assert (d >> 32) & 0x3FFF == 0x40


# ============================================================================ swizzle128_offset


def test_swizzle_bijection_per_atom_and_chunks_contiguous():
    for atom in range(4):
        offs = set()
        for r in range(8):
            row = 8 * atom + r
            for c in range(8):
                base = _C.swizzle128_offset(row, 16 * c)
                # a 16-byte chunk stays contiguous and 16-B aligned
                assert base % 16 == 0
                for w in range(16):
                    assert _C.swizzle128_offset(row, 16 * c + w) == base + w
            for byte in range(128):
                o = _C.swizzle128_offset(row, byte)
                # the 128 bytes of a row stay in that row's 128-B line
                assert row * 128 <= o < row * 128 + 128
                offs.add(o)
        assert offs == set(range(atom * ATOM, (atom + 1) * ATOM)), "not a bijection onto the 1024-B atom"


def test_swizzle_row0_identity_and_periodic():
    for byte in range(128):
        assert _C.swizzle128_offset(0, byte) == byte
    for row in range(8):
        for byte in range(0, 128, 7):
            assert _C.swizzle128_offset(row + 8, byte) == _C.swizzle128_offset(row, byte) + ATOM


def test_swizzle_columns_conflict_free():
    """The point of the swizzle: the same 16-B column of 8 consecutive rows lands in 8
    distinct 16-B bank groups (conflict-free ldmatrix/wgmma reads)."""
    for c in range(8):
        groups = {(_C.swizzle128_offset(r, 16 * c) % 128) // 16 for r in range(8)}
        assert len(groups) == 8


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4095), st.integers(0, 127))
def test_swizzle_matches_cute_and_tma(row, byte):
    o = _C.swizzle128_offset(row, byte)
    assert o == cute_swizzle(row * 128 + byte)
    assert o == tma_swizzle128(row, byte)


# ============================================================================ kmajor_offset


@pytest.mark.parametrize("rows", [64, 128, 192, 256])
def test_kmajor_bijection_bf16(rows):
    eb = 2
    tile = rows * 128
    seen = set()
    for mn in range(rows):
        for k in range(64):
            o = _C.kmajor_offset(mn, k, eb)
            assert o % eb == 0
            for byte in range(eb):
                seen.add(o + byte)
    assert len(seen) == tile and seen == set(range(tile))


@pytest.mark.parametrize("eb", [1, 2, 4])
def test_kmajor_is_swizzled_row(eb):
    for mn in range(0, 130, 3):
        for k in range(128 // eb):
            assert _C.kmajor_offset(mn, k, eb) == _C.swizzle128_offset(mn, k * eb)


@pytest.mark.parametrize("eb", [2])
def test_kmajor_matches_canonical_gmma_layout(eb):
    for mn in range(256):
        for k in range(128 // eb):
            assert _C.kmajor_offset(mn, k, eb) == gmma_kmajor_sw128_addr(mn, k, eb, sbo_bytes=1024)


def test_kmajor_k16_slices_match_descriptor_advance():
    """wgmma k16 slice j of a 64-wide bf16 K-major tile is addressed by advancing the
    descriptor start by 32*j bytes; the hardware swizzles the absolute address."""
    eb = 2
    for j in range(4):
        for mn in range(0, 128, 5):
            for kk in range(16):
                want = _C.kmajor_offset(mn, 16 * j + kk, eb)
                T = 16 // eb
                lin = layout_eval(((8, 16), (T, 2)), ((8 * T, 1024 // eb), (1, T)), (mn, kk)) * eb
                assert want == cute_swizzle(32 * j + lin)


# ============================================================================ mnmajor_offset


@pytest.mark.parametrize("mn_size", [64, 128, 192, 256])
def test_mnmajor_bijection_bf16(mn_size):
    eb = 2
    tile = mn_size * 64 * eb
    seen = set()
    for mn in range(mn_size):
        for k in range(64):
            o = _C.mnmajor_offset(mn, k, eb)
            assert o % eb == 0
            for byte in range(eb):
                seen.add(o + byte)
    assert seen == set(range(tile))


def test_mnmajor_chunks_and_definition_properties():
    eb = 2
    for mn in range(0, 256, 3):
        for k in range(64):
            o = _C.mnmajor_offset(mn, k, eb)
            # chunk of 64 mn x 64 k = 8192 B
            assert o // 8192 == mn // 64
            # row k of the chunk holds 64 consecutive mn (128 B)
            assert (o % 8192) // 128 == k
            assert o == (mn // 64) * 8192 + _C.swizzle128_offset(k, (mn % 64) * eb)
    # 8 consecutive mn (16 B) stay contiguous
    for k in range(8):
        for mn0 in range(0, 128, 8):
            base = _C.mnmajor_offset(mn0, k, eb)
            assert [_C.mnmajor_offset(mn0 + i, k, eb) for i in range(8)] == [base + 2 * i for i in range(8)]


def test_mnmajor_matches_canonical_gmma_layout():
    eb = 2
    for mn in range(256):
        for k in range(64):
            assert _C.mnmajor_offset(mn, k, eb) == gmma_mnmajor_sw128_addr(
                mn, k, eb, lbo_bytes=8192, sbo_bytes=1024
            ), (mn, k)


def test_mnmajor_k16_slices_match_descriptor_advance():
    """k16 slice j starts 16 rows of 128 B = 2048*j bytes into the chunk."""
    eb = 2
    for j in range(4):
        for mn in range(0, 256, 7):
            for kk in range(16):
                want = _C.mnmajor_offset(mn, 16 * j + kk, eb)
                got = gmma_mnmajor_sw128_addr(mn, kk, eb, lbo_bytes=8192, sbo_bytes=1024, k_groups=2,
                                              start=2048 * j)
                assert want == got


# ============================================================================ wgmma_desc


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, (1 << 32) - 1).map(lambda x: x & ~0xF),
    st.integers(0, (1 << 14) - 1).map(lambda x: x << 4),
    st.integers(0, (1 << 14) - 1).map(lambda x: x << 4),
)
def test_wgmma_desc_matches_cute_bitfields(addr, lbo, sbo):
    d = _C.wgmma_desc(addr, lbo, sbo)
    assert isinstance(d, int)
    d &= (1 << 64) - 1  # accept a signed int64 view as well
    assert d == cute_desc(addr, lbo, sbo)
    assert (d & 0x3FFF) == (addr & 0x3FFFF) >> 4
    assert (d >> 16) & 0x3FFF == lbo >> 4
    assert (d >> 32) & 0x3FFF == sbo >> 4
    assert (d >> 62) == 1  # SWIZZLE_128B
    reserved = (0x3 << 14) | (0x3 << 30) | (((1 << 16) - 1) << 46)
    assert d & reserved == 0, f"reserved/base_offset bits set: {d & reserved:#x}"


@pytest.mark.parametrize("mn_major", [False, True])
def test_desc_constant_advance_equals_reencoding(mn_major):
    """The mainloop's descriptors (gemm_kernel.cuh): stage 0's low word + stage bytes / 16 +
    kk * desc_k16_step must equal encoding the slice's address afresh, for every stage of the
    128x256 ring (4 x 48 KB after a 1-KB aligned base), every warpgroup row offset and k slice."""
    eb = 2
    step = _C.desc_k16_step(mn_major, eb)
    assert step == (128 if mn_major else 2)
    lbo = 8192 if mn_major else 16
    off = (lambda mn, k: _C.mnmajor_offset(mn, k, eb)) if mn_major else (lambda mn, k: _C.kmajor_offset(mn, k, eb))
    mask = (1 << 64) - 1
    for base in (0x400, 0x800, 0x1000):
        for stage_bytes, stages in ((49152, 4), (32768, 6), (24576, 8)):
            for mn0 in (0, 64, 128, 192):
                d0 = _C.wgmma_desc(base + off(mn0, 0), lbo, 1024) & mask
                for s in range(stages):
                    for kk in range(4):
                        want = _C.wgmma_desc(base + s * stage_bytes + off(mn0, 16 * kk), lbo, 1024) & mask
                        assert d0 + (s * stage_bytes >> 4) + kk * step == want, (base, s, mn0, kk)


def test_wgmma_desc_typical_values():
    # smem address 0x400 (a 1024-aligned tile), LBO 8192 (MN-major chunk), SBO 1024
    d = _C.wgmma_desc(0x400, 8192, 1024) & ((1 << 64) - 1)
    assert d == (1 << 62) | (64 << 32) | (512 << 16) | 64
    # high address bits (shared window of a generic address) are masked away
    assert (_C.wgmma_desc(0x7F000000 | 0x2400, 16, 1024) & 0x3FFF) == 0x2400 >> 4


# ============================================================================ stmatrix staging


def _stmatrix_landing(transposed, round_h=1):
    """Where each accumulator element of a 64-column epilogue round lands when the 4 warps issue
    stmatrix.x4 m = 0..3 with registers (pack of pair r = 32 * round_h + 8 * m + 2 * q) and lane
    addresses _C.stmatrix_x4_offset, per the PTX ISA's stmatrix semantics (modelled here on
    their own): lane 8q + i gives matrix q's row i; lane 4i + j's register q holds elements
    (i, 2j), (i, 2j + 1); .trans stores element (i, c) in row c at position i.
    Returns {(row, col in the round): byte offset}."""
    land = {}
    for warp in range(4):
        for m in range(4):
            addr = [_C.stmatrix_x4_offset(warp, lane, m, transposed) for lane in range(32)]
            for lane in range(32):
                i, j = lane // 4, lane % 4
                for q in range(4):
                    r = 32 * round_h + 8 * m + 2 * q
                    for e in range(2):  # the two 16-bit halves of the register
                        row, col = _C.wgmma_acc_coord(32 * warp + lane, r + e)
                        if transposed:
                            off = addr[8 * q + 2 * j + e] + 2 * i
                        else:
                            off = addr[8 * q + i] + 2 * (2 * j + e)
                        land[(row, col - 64 * round_h)] = off
    return land


@pytest.mark.parametrize("transposed", [False, True])
def test_stmatrix_staging_matches_the_box_layout(transposed):
    land = _stmatrix_landing(transposed)
    assert len(land) == 64 * 64  # every element of the round's 64 x 64 box, once
    assert len(set(land.values())) == 64 * 64 and max(land.values()) < 64 * 128
    for (row, col), off in land.items():
        # the layouts the TMA-store epilogue's box has (epilogue.cuh stage_round_impl)
        want = _C.kmajor_offset(col, row, 2) if transposed else _C.mnmajor_offset(col, row, 2)
        assert off == want, (row, col, off, want)


def test_stmatrix_rows_are_16_byte_aligned_and_distinct_banks():
    for transposed in (False, True):
        for warp in range(4):
            for m in range(4):
                addr = [_C.stmatrix_x4_offset(warp, lane, m, transposed) for lane in range(32)]
                assert all(a % 16 == 0 for a in addr)
                for q in range(4):  # one 8x8 matrix = 8 rows of 16 B: 8 distinct 16-B bank groups
                    assert len({(a // 16) % 8 for a in addr[8 * q: 8 * q + 8]}) == 8


# ============================================================================ partial_box_offset


@pytest.mark.parametrize("transposed", [False, True])
def test_partial_box_is_the_tma_box_image(transposed):
    """Every (row, col) of a 64 x 32 fp32 round lands once, where TMA's SWIZZLE_128B image of the
    box (untransposed: {32 columns, 64 rows}; transposed: two {32 rows, 32 columns} boxes of 4 KB)
    has it: CuTe's Swizzle<3,4,3> over the box's dense byte offset."""
    seen = set()
    for row in range(64):
        for col in range(32):
            off = _C.partial_box_offset(row, col, transposed)
            if transposed:
                want = 4096 * (row // 32) + cute_swizzle(col * 128 + (row % 32) * 4)
            else:
                want = cute_swizzle(row * 128 + col * 4)
            assert off == want, (row, col, off, want)
            seen.add(off)
    assert len(seen) == 64 * 32 and max(seen) < 8192 and all(o % 4 == 0 for o in seen)


def _wavefronts(word_addrs):
    """Shared-memory wavefronts of one access: the most distinct 4-byte words in any of the 32 banks."""
    banks = {}
    for a in word_addrs:
        banks.setdefault((a // 4) % 32, set()).add(a // 4)
    return max(len(v) for v in banks.values())


def test_partial_staging_stores_are_bank_friendly():
    """The epilogue's staging stores (epilogue_split_k.cuh store_unit_partial_tma) for every warp and
    register of a round: transposed, one float per lane, conflict-free (one wavefront); untransposed,
    a float2 per lane (256 B, two wavefronts at best), at most 2-way per half warp."""
    for h in range(2):
        for warp in range(4):
            for r in range(16 * h, 16 * h + 16, 2):
                coords = [_C.wgmma_acc_coord(32 * warp + lane, r) for lane in range(32)]
                for e in range(2):  # transposed: the pair's two floats, one store each
                    addrs = [_C.partial_box_offset(row, col - 32 * h + e, True) for row, col in coords]
                    assert _wavefronts(addrs) == 1, (h, warp, r, e)
                for half in range(2):
                    addrs = []
                    for row, col in coords[16 * half:16 * half + 16]:
                        a = _C.partial_box_offset(row, col - 32 * h, False)
                        assert a % 8 == 0  # st.shared.v2.f32 alignment
                        addrs += [a, a + 4]
                    assert _wavefronts(addrs) <= 2, (h, warp, r, half)


# ============================================================================ row_run


@pytest.mark.parametrize("ncols", [0, 1, 5, 7, 8, 9, 15, 16, 41, 63, 64])
@pytest.mark.parametrize("s", range(8))
def test_row_run_cuts_at_the_output_granules(s, ncols):
    """A run of ncols 16-bit elements starting s elements past a 16-B boundary (the staged copy-out
    of unaligned rows, copy_out_rows.cuh copy_out_granules): the whole granules start on boundaries,
    and they and the loose elements cover the run once."""
    head, chunks, tail = _C.row_run(s, ncols)
    assert head + 8 * chunks + tail == max(ncols, 0) and 0 <= head < 8 and 0 <= tail < 8
    granule_cols = {head + 8 * k + j for k in range(chunks) for j in range(8)}
    for k in range(chunks):
        assert (s + head + 8 * k) % 8 == 0  # the granule's first element sits on a 16-B boundary
    loose = [_C.row_run_loose_col(s, ncols, e) for e in range(head + tail)]
    assert len(set(loose)) == len(loose) and not granule_cols & set(loose)
    assert granule_cols | set(loose) == set(range(ncols))
    # a whole granule could not start earlier: the head never holds a boundary
    assert all((s + c) % 8 != 0 for c in range(1, head)) and (head == 0 or s != 0 or ncols < 8)
    if ncols % 8 == 0:
        assert head + tail in (0, 8)  # the copy-out's 8 loose tasks a row


def _halves(words):
    """16-bit elements of little-endian 32-bit words (element 2k is the low half of word k)."""
    return [h for w in words for h in (w & 0xFFFF, w >> 16)]


@given(st.lists(st.integers(0, 2**32 - 1), min_size=8, max_size=8), st.integers(0, 7))
@settings(max_examples=200, deadline=None)
def test_halfword_window_is_the_8_elements_from_h(words, h):
    """kittens::halfword_window (the re-pitch copy and the staged copy-out): elements h..h+7 of
    the 16-element window, whatever h (the branch-free select steps and funnel shift)."""
    out = _C.halfword_window(words, h)
    assert _halves(out) == _halves(words)[h:h + 8]


@pytest.mark.parametrize("ncols", [1, 5, 7, 8, 9, 15, 16, 33, 41, 56, 63, 64])
@pytest.mark.parametrize("s", range(8))
def test_copy_out_granules_model(s, ncols):
    """The staged copy-out of one unaligned row as copy_out_rows.cuh copy_out_granules runs it: lane k
    stores whole granule k (row_run_granule_col: the window of staging chunks col / 8 and col / 8 + 1
    at element col % 8; the second chunk is read only when col % 8 != 0 and always exists then) and
    loose elements k and k + 8. The row starts s elements past a 16-B boundary; every column is
    written once with its own value, nothing outside the run, and each 16-B store is aligned."""
    staging = [0x1000 + c for c in range(64)] + [0xDEAD] * 8  # 8 chunks of a 128-B line
    out = {}
    head, chunks, tail = _C.row_run(s, ncols)
    for k in range(8):
        if k < chunks:
            col = _C.row_run_granule_col(s, ncols, k)
            ch, h = col // 8, col % 8
            assert ch == k and (s + col) % 8 == 0  # a 16-B store at the output's granule
            assert h == 0 or ch + 1 < 8
            lo = staging[8 * ch:8 * ch + 8]
            hi = staging[8 * ch + 8:8 * ch + 16] if h else [0] * 8
            words = [lo[i] | lo[i + 1] << 16 for i in range(0, 8, 2)] + [hi[i] | hi[i + 1] << 16 for i in range(0, 8, 2)]
            for i, v in enumerate(_halves(_C.halfword_window(words, h))):
                assert col + i not in out
                out[col + i] = v
        for e in (k, k + 8):
            if e < head + tail:
                x = _C.row_run_loose_col(s, ncols, e)
                assert x not in out
                out[x] = staging[x]
    assert out == {c: 0x1000 + c for c in range(ncols)}


# ============================================================================ wgmma_acc_coord


@pytest.mark.parametrize("n", [8, 16, 40, 48, 64, 72, 80, 104, 128, 144, 160, 192, 224, 256])
def test_acc_coord_covers_tile_once(n):
    regs = n // 2
    seen = {}
    for t in range(128):
        for r in range(regs):
            rc = tuple(_C.wgmma_acc_coord(t, r))
            assert len(rc) == 2
            row, col = rc
            assert 0 <= row < 64 and 0 <= col < n, (t, r, rc)
            assert rc not in seen, f"{rc} owned by {seen[rc]} and {(t, r)}"
            seen[rc] = (t, r)
    assert len(seen) == 64 * n


@pytest.mark.parametrize("n", [40, 48, 64, 72, 80, 104, 128, 144, 160, 192, 224, 256])
def test_acc_coord_epilogue_rounds(n):
    """The epilogue (csrc/gemm/hopper/epilogue.cuh) stores 64-column rounds from accumulator
    registers [32 H, 32 H + 32), the last round of a width that is not a multiple of 64 from
    [32 H, n / 2) (gemm_layout::LAST_COLS): those registers hold exactly the round's columns."""
    rounds = (n + 63) // 64
    for h in range(rounds):
        regs = range(32 * h, min(32 * (h + 1), n // 2))
        cols = {_C.wgmma_acc_coord(t, r)[1] for t in range(128) for r in regs}
        assert cols == set(range(64 * h, min(64 * (h + 1), n))), (n, h)


def test_acc_coord_matches_ptx_figure():
    frag = ptx_acc_fragment(256)
    for (t, r), rc in frag.items():
        assert tuple(_C.wgmma_acc_coord(t, r)) == rc, (t, r)


def test_acc_coord_structure():
    for t in range(128):
        warp = t // 32
        rows = {_C.wgmma_acc_coord(t, r)[0] for r in range(64)}
        # each warp owns 16 rows; a thread holds exactly 2 rows, 8 apart
        assert all(16 * warp <= x < 16 * warp + 16 for x in rows)
        assert len(rows) == 2 and max(rows) - min(rows) == 8
        for g in range(16):  # per 8-column group: 2 rows x 2 adjacent columns
            cells = [tuple(_C.wgmma_acc_coord(t, 4 * g + j)) for j in range(4)]
            cols = sorted({c for _, c in cells})
            assert len(cols) == 2 and cols[1] == cols[0] + 1 and cols[0] % 2 == 0
            assert all(8 * g <= c < 8 * g + 8 for c in cols)
            assert len({r for r, _ in cells}) == 2
            # register pairs (2i, 2i+1) are adjacent columns of one row (float2 stores)
            assert cells[0][0] == cells[1][0] and cells[1][1] == cells[0][1] + 1
            assert cells[2][0] == cells[3][0] == cells[0][0] + 8


@pytest.mark.parametrize("span, reg_step", [(128, 64), (64, 32)])
def test_acc_coord_column_pairs_in_one_thread(span, reg_step):
    """Fusion facts benchmarks/NOTES-states-2026-12-06b.md (2026-12-06c) relies on: in a 128 x 256 tile's 64 x 256
    accumulator strip, column c and c + 128 (gate / up of one feature, with the two weights packed
    in 128-row blocks) are registers r and r + 64 of one thread, and c and c + 64 (RoPE's rotate-half
    pairs in a 128-wide head) are registers r and r + 32 -- one row, so an epilogue needs no shuffle."""
    for t in range(128):
        for r in range(128 - reg_step):
            row, col = _C.wgmma_acc_coord(t, r)
            if col % (2 * span) >= span:
                continue  # the pair's first half only
            assert tuple(_C.wgmma_acc_coord(t, r + reg_step)) == (row, col + span), (t, r)
