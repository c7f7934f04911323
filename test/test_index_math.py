"""Host tests of the Hopper kernel's index math exported by torch_tk._C.

Where possible the checks are independent of the formulas in the implementation:
bijection / contiguity properties, CuTe's Swizzle<3,4,3> and canonical GMMA layouts
evaluated by a small generic layout evaluator, the GmmaDescriptor bitfield layout
encoded through ctypes, the PTX accumulator fragment figure, and Triton-style
grouped rasterisation.
"""

from __future__ import annotations

import ctypes
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torch_tk import _C

ATOM = 1024  # bytes: 8 rows x 128 B, the SWIZZLE_128B repeat unit


# ============================================================================ independent models


def cute_swizzle(addr: int, B: int = 3, M: int = 4, S: int = 3) -> int:
    """CuTe Swizzle<B,M,S>: xor bits [M, M+B) with bits [M+S, M+S+B)."""
    yyy_mask = ((1 << B) - 1) << (M + S)
    return addr ^ ((addr & yyy_mask) >> S)


def tma_swizzle128(row: int, byte: int) -> int:
    """SWIZZLE_128B as described for TMA: in a 1024-B aligned region of 128-B rows, the
    16-B chunk index within a row is xor-ed with (row % 8)."""
    chunk, within = divmod(byte, 16)
    return row * 128 + ((chunk ^ (row % 8)) * 16) + within


def _flatten(shape, stride):
    """Flatten nested (shape, stride) into lists of leaf modes, colexicographic."""
    if isinstance(shape, int):
        return [shape], [stride]
    shp, std = [], []
    for s, d in zip(shape, stride):
        a, b = _flatten(s, d)
        shp += a
        std += b
    return shp, std


def layout_eval(shape, stride, coord):
    """Evaluate a CuTe layout at a coordinate given per top-level mode as a 1-D index
    (each mode's index is decomposed colexicographically over its sub-shape)."""
    off = 0
    for s, d, c in zip(shape, stride, coord):
        shp, std = _flatten(s, d)
        size = 1
        for x in shp:
            size *= x
        assert 0 <= c < size, (c, size)
        for x, y in zip(shp, std):
            off += (c % x) * y
            c //= x
    return off


def gmma_kmajor_sw128_addr(mn, k, eb, sbo_bytes=1024, m_groups=32, start=0):
    """Canonical K-major SW128 layout ((8,m),(T,2k)):((8T,SBO),(1,T)) in elements,
    T = 16/eb, composed with Swizzle<3,4,3> on byte addresses (start must keep the
    1024-B alignment of the swizzle pattern)."""
    T = 16 // eb
    sbo = sbo_bytes // eb
    shape = ((8, m_groups), (T, 128 // 16))  # 8 chunks of 16 B across the 128-B row
    stride = ((8 * T, sbo), (1, T))
    lin = layout_eval(shape, stride, (mn, k)) * eb
    return cute_swizzle(start + lin)


def gmma_mnmajor_sw128_addr(mn, k, eb, lbo_bytes=8192, sbo_bytes=1024, m_groups=4, k_groups=8, start=0):
    """Canonical MN-major SW128 layout ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)) in elements,
    composed with Swizzle<3,4,3> on byte addresses."""
    T = 16 // eb
    lbo, sbo = lbo_bytes // eb, sbo_bytes // eb
    shape = ((T, 8, m_groups), (8, k_groups))
    stride = ((1, T, lbo), (8 * T, sbo))
    lin = layout_eval(shape, stride, (mn, k)) * eb
    return cute_swizzle(start + lin)


class _GmmaDescBits(ctypes.LittleEndianStructure):
    """cute::GmmaDescriptor bitfields (mma_sm90_desc.hpp)."""

    _pack_ = 1
    _fields_ = [
        ("start_address", ctypes.c_uint16, 14),
        ("_r0", ctypes.c_uint16, 2),
        ("leading_byte_offset", ctypes.c_uint16, 14),
        ("_r1", ctypes.c_uint16, 2),
        ("stride_byte_offset", ctypes.c_uint16, 14),
        ("_r2", ctypes.c_uint16, 2),
        ("_r3", ctypes.c_uint8, 1),
        ("base_offset", ctypes.c_uint8, 3),
        ("_r4", ctypes.c_uint8, 4),
        ("_r5", ctypes.c_uint8, 6),
        ("layout_type", ctypes.c_uint8, 2),
    ]


def cute_desc(addr, lbo, sbo, layout_type=1):
    assert ctypes.sizeof(_GmmaDescBits) == 8
    d = _GmmaDescBits()
    d.start_address = (addr & 0x3FFFF) >> 4
    d.leading_byte_offset = lbo >> 4
    d.stride_byte_offset = sbo >> 4
    d.base_offset = 0
    d.layout_type = layout_type  # SW128 = 1
    return int.from_bytes(bytes(d), "little")


def ptx_acc_fragment(n):
    """The PTX ISA figure 'WGMMA .m64nNk16 register fragment layout for accumulator
    matrix D', written out: {(thread, reg) -> (row, col)} for a 64 x n tile."""
    frag = {}
    for warp in range(4):
        for lane in range(32):
            t = warp * 32 + lane
            group, tig = lane // 4, lane % 4  # groupID, threadID_in_group
            for i in range(n // 8):  # one 8-column group: 4 registers d[4i..4i+3]
                for j in range(4):
                    row = 16 * warp + group + (8 if j >= 2 else 0)
                    col = 8 * i + 2 * tig + (j % 2)
                    frag[(t, 4 * i + j)] = (row, col)
    return frag


def grouped_raster_ref(pid, tiles_m, tiles_n, group_m):
    """Triton-tutorial grouped ordering: bands of group_m row-tiles; inside a band the
    row index moves fastest, then the column."""
    in_group = group_m * tiles_n
    group_id = pid // in_group
    first_m = group_id * group_m
    size_m = min(tiles_m - first_m, group_m)
    r = pid % in_group
    return first_m + r % size_m, r // size_m


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
