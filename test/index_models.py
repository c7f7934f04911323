"""Independent models of the Hopper kernel's index math, for the host tests (test_index_math.py,
test_schedule_math.py): CuTe's Swizzle<3,4,3> and TMA's SWIZZLE_128B, a small generic CuTe layout
evaluator with the canonical GMMA layouts, the GmmaDescriptor bitfield layout encoded through ctypes,
the PTX accumulator fragment figure, and Triton-style grouped rasterisation. None of them uses the
implementation's formulas.
"""

from __future__ import annotations

import ctypes

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

