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
    # 192-wide tiles (plan.h kWidth192, the default 2) replace 256-wide ones only: 16-bit outputs,
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
    # long-running plans (plan.h kLongRunWork = 131072 tile k-tiles): raster band 16, and by
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
    # 64-row tiles (default): rule 1, 65..256 tokens unswapped (unclustered: plan.h kBm64RowPairs
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
                         "evict_first": p["evict_first"], "wg_rows": 64}
        else:
            assert f == b


def test_hopper_plan_examples():
    # the decisions documented in benchmarks/NOTES.md
    assert _C.hopper_plan(8192, 8192, 8192, 132, True, 2) == {"swap_ab": False, "bm": 128, "bn": 256, "splits": 1, "cluster": 2,
                                                     "group_m": 16, "units": 1024, "grid": 132, "dynamic": True, "sk_tiles": 0, "sk_parts": 0,
                                                     "fused_split": False, "evict_first": 0, "wg_rows": 64}
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
                                                  "fused_split": False, "evict_first": 2, "wg_rows": 64}
    assert _C.hopper_plan(1, 4096, 4096, 132, fuse_split=True, bm64=False)["fused_split"] is True  # opt-in
    assert _C.hopper_plan(128, 4096, 14336, 132)["splits"] == 4
    # small problems: narrower tiles before split-K (1000x1001x999: 128 tiles of 128x64, no split;
    # mid64=3: without plan.h kMid64UnalignedRows, which makes them 64x128)
    assert _C.hopper_plan(1000, 1001, 999, 132, mid64=3) == {"swap_ab": False, "bm": 128, "bn": 64, "splits": 1, "cluster": 1,
                                                    "group_m": 8, "units": 128, "grid": 128, "dynamic": False, "sk_tiles": 0, "sk_parts": 0,
                                                    "fused_split": False, "evict_first": 0, "wg_rows": 64}
    assert _C.hopper_plan(1000, 1001, 999, 132, fill_narrow_max_k_tiles=0)["bn"] == 256
    # L2 evict_first for B (the weights, streamed about once) exactly when M <= 256
    assert [_C.hopper_plan(M, 4096, 4096, 132)["evict_first"] for M in (1, 64, 256, 257, 8192)] == [2, 2, 2, 0, 0]
    # stream-K tail over all CTAs (mode 1): 4096^3 = 512 tiles of 128x256 on 132 SMs -> the last 248 by k iteration
    assert _C.hopper_plan(4096, 4096, 4096, 132, stream_k=1)["sk_tiles"] == 248
    assert _C.hopper_plan(4096, 4096, 4096, 132, stream_k=3)["sk_tiles"] == 0
    # mode 3: 4097^3 = 561 tiles, the last wave 33 of 132 (15% of the run idle) -> the last 165
    # tiles over all CTAs; not with K past 65 k tiles or under 16, nor a 3%-idle last wave (4096^3)
    assert _C.hopper_plan(4097, 4097, 4097, 132, stream_k=3)["sk_tiles"] == 165
    assert _C.hopper_plan(4097, 4097, 4097, 132)["sk_tiles"] == 0  # not the default
    assert _C.hopper_plan(4097, 4097, 4161, 132, stream_k=3)["sk_tiles"] == 0
    assert _C.hopper_plan(4097, 4097, 960, 132, stream_k=3)["sk_tiles"] == 0
    assert _C.sk_tiles(561, 132, 10) == 165 and _C.sk_tiles(512, 132, 10) == 0
    # the aligned last-wave split: 4097^3 = 561 tiles (4 waves + 33) -> 33 tail tiles x 4 slots
    # on 132 CTAs; 6144x4097x4097 = 816 tiles -> 24 x 4; K = 2048 (32 k tiles) -> 2 slots of 16;
    # 4096^3 (r = 116 > 66) and 8192x10240x8192 (r = 52: 2 slots save 2.5% < 3%) stay whole
    split = lambda M, N, K: (lambda q: (q["sk_tiles"], q["sk_parts"]))(_C.hopper_plan(M, N, K, 132, stream_k=2))  # noqa: E731
    assert split(4097, 4097, 4097) == (33, 132) and split(6144, 4097, 4097) == (24, 96)
    assert split(4097, 4097, 2048) == (33, 66)
    assert split(4096, 4096, 4096) == (0, 0) and split(8192, 10240, 8192) == (0, 0)
    assert _C.hopper_plan(4096, 4096, 4096, 132)["sk_tiles"] == 0
    assert _C.hopper_plan(256, 4096, 14336, 132)["bn"] == 256  # long K: split instead (224 k tiles)
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
    """plan.h kMid64: unswapped 128x64 plans (the narrowing's end for ~1k problems) run as unsplit
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
    into unsplit unclustered 64x128 plans."""
    q0 = _C.hopper_plan(M, N, K, sms, all_widths, mid64=0, out_tma=out_tma, split_sectors=0)
    q = _C.hopper_plan(M, N, K, sms, all_widths, mid64=1, out_tma=out_tma, split_sectors=0)
    # bit 2 (kMid64UnalignedRows) treats a 16-bit output copied out by granules as TMA-stored from
    # 16 k tiles on (kMid64UnalignedRowsMinKTiles)
    assert (_C.hopper_plan(M, N, K, sms, all_widths, mid64=5, out_tma=out_tma, split_sectors=0)
            == _C.hopper_plan(M, N, K, sms, all_widths, mid64=1,
                              out_tma=out_tma or (all_widths and -(-K // 64) >= 16), split_sectors=0))
    t64 = -(-M // 64) * -(-N // 128)
    eligible = (all_widths and out_tma and -(-K // 64) <= 128 and not q0["swap_ab"] and (q0["bm"], q0["bn"]) == (128, 64)
                and t64 <= sms and (q0["splits"] == 1 or 8 * t64 >= 3 * sms))
    # bit 1 (kMid64Pairs) pairs them only where B's pitch splits sectors and they fill 3/4 of the SMs
    for split in (0, 1, 2, 3):
        assert _C.hopper_plan(M, N, K, sms, all_widths, mid64=1, out_tma=out_tma, split_sectors=split,
                              sector_clusters=0) == q
        q2 = _C.hopper_plan(M, N, K, sms, all_widths, mid64=3, out_tma=out_tma, split_sectors=split, sector_clusters=0)
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
    """plan.h kOneWarpgroupWidths: one consumer warpgroup (two 64-row strips) on 128x128 tiles when
    every CTA runs one unit, unclustered and unsplit; one_wg=0 (TK_HOPPER_ONE_WG=0) never."""
    p = _C.hopper_plan(M, N, K, 132, all_widths)
    assert p["wg_rows"] == want, p
    if want == 128:
        assert (p["bm"], p["bn"], p["splits"], p["cluster"], p["sk_tiles"]) == (128, 128, 1, 1, 0) and p["units"] <= p["grid"]
    off = _C.hopper_plan(M, N, K, 132, all_widths, one_wg=0)
    assert off["wg_rows"] == 64 and {**off, "wg_rows": p["wg_rows"]} == p  # nothing else changes
    split = _C.hopper_plan(M, N, K, 132, all_widths, one_wg=5)  # bit 2: split-K plans too
    assert split["wg_rows"] == (128 if want == 128 or (p["bm"], p["bn"], p["splits"], p["cluster"]) == (128, 128, 4, 1) else 64)
    assert {**split, "wg_rows": p["wg_rows"]} == p


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
        assert p["wg_rows"] == 128 and _C.hopper_plan(M, N, K, 132)["bn"] in (192, 256)


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
    """plan.h kWidth192 (TK_HOPPER_BN192): 128x192 tiles for 129..192 kernel columns (1), and for
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
    (256, 4096, 14336, (True, 256, 4, 128)),   # 160 would need 2 x 56 k tiles per SM: unchanged
])
def test_plan_split_160(M, N, K, want):
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
])
def test_plan_forced_tile(M, N, K, tile, want):
    """plan.h TileChoice (TK_HOPPER_TILE, A/B only): the forced swap, tile and splits, units and
    grid derived as for the rules' plans; invalid choices leave the rules' plan."""
    p = _C.hopper_plan(M, N, K, 132, tile=tile)
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == want, p
    assert p["grid"] == p["cluster"] * min(p["units"], 132 // p["cluster"])
    for bad in [(False, 64, 256, 1, 1), (False, 128, 88, 1, 1), (False, 128, 128, 0, 1), (False, 128, 128, 1, 3),
                (False, 128, 144, 1, 2), (False, 128, 112, 1, 1), (True, 64, 144, 2, 1), (True, 64, 144, 1, 2),
                (False, 64, 160, 1, 1), (False, 64, 224, 1, 1),
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
    """plan.h kOddWidths (TK_HOPPER_ODD_WIDTHS): for mid-M problems an unsplit 128-row plan takes
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
        assert p["bm"] == 128 and p["cluster"] == 1 and p["splits"] == 1 and p["wg_rows"] == 64 and p["sk_tiles"] == 0
        assert p["grid"] == min(p["units"], 132)
        # the orientation needs its Y K-major: without that layout, no odd width in it
        q = _C.hopper_plan(M, N, K, 132, odd_widths=odd, odd_layouts=2 if w[0] else 1)
        assert q["bn"] in (64, 128, 192, 256) or q["swap_ab"] != w[0], q
        assert _C.hopper_plan(M, N, K, 132, odd_widths=odd, odd_layouts=0) == base
        assert _C.hopper_plan(M, N, K, 132, False, odd_widths=odd)["bn"] == 128


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
    """plan.h kTokenWidths (odd_widths bit 3, default on): for 129..320 tokens an unsplit plan of at
    most one wave takes swapped 128 x 72 or (from 257 tokens) 128 x 80 tiles, the narrower that fits one wave, when
    that gives no fewer tiles, at least half a wave, and >= 5% less 128 + w than the plan's bm + bn;
    a row-major A only (odd_layouts bit 0); fp32 outputs keep 128-wide tiles."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=7)
    p = _C.hopper_plan(M, N, K, 132, odd_widths=15)
    d = _C.hopper_plan(M, N, K, 132)  # the default: the same, but where the 64 x 144 tiles (bit 4) take over
    assert p == d or ((d["bm"], d["bn"]) == (64, 144) and 129 <= M <= 144), d
    if want is None:
        assert p == base
        return
    assert (p["swap_ab"], p["bn"], p["units"]) == want, p
    assert p["bm"] == 128 and p["cluster"] == 1 and p["splits"] == 1 and p["sk_tiles"] == 0
    # one consumer warpgroup (one_wg bit 4, default) where >= 3 token tiles share each weight tile
    # (plan.h kTokenWidthOneWgMinTiles), two otherwise
    assert p["wg_rows"] == (128 if -(-M // p["bn"]) >= 3 else 64), p
    assert p["units"] <= 132 and p["grid"] == p["units"]
    # the plan it replaces fits one wave and streams >= 5% more bytes per CTA
    assert base["units"] <= 132 and 20 * (128 + p["bn"]) <= 19 * (base["bm"] + base["bn"])
    # no narrower built width fits one wave
    assert p["bn"] == 80 or -(-N // 128) * -(-M // 72) <= 132  # 72 wherever it fits one wave
    assert p["bn"] == 72 or M >= 257  # 80 from 257 tokens (plan.h kTokenWidth80MinM)
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
    # want: units of the swapped 64 x 144 plan (odd_widths bit 4, default); None: the plan without it
    (129, 8192, 8192, 128),   # cuBLAS's 64 x 136 plan there; without bit 4: swapped 128 x 72, two token tiles
    (144, 8192, 4096, 128),
    (136, 8200, 4100, 129),   # weight tail: 129 tiles
    (140, 8448, 1000, 132),   # exactly one wave
    (144, 6400, 520, 100),    # >= 3/4 of a wave (kTokenRows64MinFill4)
    (136, 6336, 4096, 99),    # the least fill taken on 132 SMs
    (136, 6272, 4096, None),  # 98 tiles: under 3/4 of a wave (measured slower at 79: 144x5000x4096)
    (144, 5000, 520, None),
    (136, 4096, 4096, None),  # 64 tiles
    (145, 8192, 8192, None),  # more tokens than one 144-wide tile
    (128, 8192, 8192, None),  # below kTokenRows64MinM
    (136, 8456, 1000, None),  # 133 tiles: more than one wave
    (136, 8192, 14336, None), # split plans: unchanged
])
def test_plan_token_rows64(M, N, K, want):
    """plan.h odd_widths bit 4 (default since 2026-12-01b; TK_HOPPER_ODD_WIDTHS=15 leaves it out):
    129..144 tokens with a row-major A, an unsplit plan of at most one wave re-planned as swapped
    64 x 144 tiles (one token tile for all tokens) when those fill 3/4 of a wave to one; 16-bit
    outputs only."""
    base = _C.hopper_plan(M, N, K, 132, odd_widths=15)
    p = _C.hopper_plan(M, N, K, 132)
    assert p == _C.hopper_plan(M, N, K, 132, odd_widths=31)
    if want is None:
        assert p == base
        return
    assert (p["swap_ab"], p["bm"], p["bn"], p["splits"], p["cluster"], p["units"]) == (True, 64, 144, 1, 1, want), p
    assert p["grid"] == want and p["wg_rows"] == 64 and not p["dynamic"] and p["sk_tiles"] == 0
    assert base["bn"] != 144 and base["units"] <= 132 and base["splits"] == 1
    assert _C.hopper_plan(M, N, K, 132, odd_layouts=2) == _C.hopper_plan(M, N, K, 132, odd_widths=15, odd_layouts=2)
    assert _C.hopper_plan(M, N, K, 132, False) == _C.hopper_plan(M, N, K, 132, False, odd_widths=15)


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
    (512, 28672, 32768, None),               # long-running (plan.h kLongRunWork): keeps its 2-CTA clusters
    (600, 14336, 4096, None),                # > 512 tokens
])
def test_plan_width224(M, N, K, want):
    """plan.h kOddWidths bit 2: up to 512 tokens, an unsplit 128 x 256 plan that is not long-running
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
