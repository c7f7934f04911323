"""GPU tests of the tile widths other than 128 / 256 (192, 160, 144, 224, token widths, 64-row
pairs) and of forced tiles (TK_HOPPER_TILE, set by child processes), and ring staging.

Every test is marked `gpu` and skipped without CUDA; the kernel tests are also skipped unless
torch_tk.hopper_available() (sm_90 + sm_90a build). Helpers and the correctness standard: gpu_common.py.
"""

from __future__ import annotations

import os
import re

import pytest
import torch

import torch_tk
from gpu_common import (
    _check_gemm_and_addmm, _dt, _forced_tile_case, _forced_tile_params, GPU_MARKS, _lay, LAYOUTS, LOWP,
    needs_hopper, _ODD_144_UNALIGNED, _ODD_MID192, _ODD_MID_M, _ODD_MID_M224, _ODD_SWAP_M144, _ODD_SWAP_M224,
    _ODD_UNSPLIT224, _ODD_WIDTHS_DEFAULT, _ONE_WG_DEFAULT, _pytest_child,
)

pytestmark = GPU_MARKS


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(190, 20000, 520), (180, 5000, 9000), (250, 11000, 300), (17000, 150, 8300),
                                   (330, 4100, 9000), (200, 6000, 16000), (380, 14300, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_bn192(shape, layout, dtype):
    """128x192 tiles (plan_rules.h kWidth192, default TK_HOPPER_BN192=3): swapped
    190 tokens over 157 units on <= 132 CTAs (dynamic schedule: a CTA's next unit reuses the
    epilogue's 3 staging buffers while the previous unit's held rounds are stored), swapped 180
    tokens split 3 ways (fp32 partials + the reduction; on 8200-wide weights 180 tokens now take
    64 x 192 tiles, test_gemm_token_rows64), and 250x11000 re-planned unswapped (116
    tiles instead of 86 swapped 128x256), and 17000x150 unswapped over 133 units (a 300-B output
    pitch: the staged copy-out epilogue, its 3 buffers reused across units); split 128x256 plans
    re-planned (330x4100x9000: 66 tiles x 2 splits; 200x6000x16000: swapped 47 x 2 -> unswapped
    64 x 2), and 380x14300x1000 in 225 tiles instead of 168 of 128x256 (two waves either way);
    tails in M, N and K, plain GEMM and addmm terms."""
    if os.environ.get("TK_HOPPER_BN192", "3") != "3":
        pytest.skip("TK_HOPPER_BN192 is set to another rule: these shapes no longer take 128x192 tiles")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    assert plan["bm"] == 128 and plan["bn"] == 192, f"shape no longer takes 128x192 tiles: {plan}"
    _check_gemm_and_addmm(shape, layout, dtype, "bn192")


def _odd_width_bits():
    return int(os.environ.get("TK_HOPPER_ODD_WIDTHS", _ODD_WIDTHS_DEFAULT))


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(320, 8200, 520), (300, 8200, 999), (150, 20000, 256), (150, 16000, 4100),
                                   (320, 8201, 520), (300, 4100, 9000)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_bn160(shape, layout, dtype):
    """128x160 tiles (plan_rules.h kOddWidths bit 0, swap-AB with a row-major A; a column-major A gets
    another plan): the tokens on wgmma's n side in 160-wide tiles whose last epilogue round is 32 columns
    (its own transposed TMA box): two full token tiles (320), a token tail (300: the second tile's
    Y box holds 140 rows), 157 units on <= 132 CTAs (a CTA's second unit reuses the 3 staging
    buffers), one wave with a K tail, and an odd output pitch (register stores); 300x4100x9000 split
    2 ways (plan.h bn192 = 3: fp32 partials through 5 TMA rounds of 32 columns, the reduction);
    weight tails (8200 = 64 x 128 + 8), plain GEMM and addmm terms."""
    if not _odd_width_bits() & 1:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the 160-wide tiles")
    M, N, K = shape
    if K > 8192 and os.environ.get("TK_HOPPER_BN192", "3") != "3":
        pytest.skip("TK_HOPPER_BN192 is set to another rule: split plans keep 128x256 tiles")
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A)
    assert plan["swap_ab"] and plan["bn"] == 160, f"shape no longer takes 128x160 tiles: {plan}"
    _check_gemm_and_addmm(shape, layout, dtype, "bn160")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(384, 6144, 520), (340, 6150, 8200), (380, 6144, 4100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_bn144(shape, layout, dtype):
    """Unswapped 128x144 tiles (plan_rules.h kOddWidths bit 1, for a column-major B; other layouts get
    other plans, checked all the same): the narrow last epilogue round (16 columns) copied out by
    rows after two TMA-stored rounds (6144: 16-B output pitch) or every round copied out (6150:
    odd pitch, a 102-column last tile; one wave of those only from 128 k tiles, bit 14), an M tail
    (340, 380) and a K tail (4100, 8200). Plain GEMM and addmm terms."""
    if not _odd_width_bits() & 2:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the 144-wide tiles")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    assert (plan["swap_ab"], plan["bn"], plan["splits"]) == (False, 144, 1), f"shape no longer takes 128x144: {plan}"
    _check_gemm_and_addmm(shape, layout, dtype, "bn144")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,width,units", [((1536, 1544, 1008), 144, 132), ((700, 3104, 2000), 144, 132),
                                               ((3000, 1536, 4112), 144, 264), ((2500, 2552, 2064), 224, 240),
                                               ((2600, 2512, 3008), 224, 252)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else str(s))
def test_gemm_odd_widths_mid_m(shape, width, units, layout, dtype):
    """Mid-size products past 512 tokens on unswapped 128 x 144 / 128 x 224 tiles (plan_rules.h
    kOddWidthsMidM, odd_widths bit 11, for a column-major B whose pitch keeps whole sectors and
    16-B-aligned output rows; other layouts get other plans, checked all the same): one wave of 132
    one-warpgroup 144-wide tiles (M = 1536 = 12 x 128 exactly, an M tail at 700), two waves of
    144 / 224 on two warpgroups from the dynamic schedule (3000, 2500, 2600: M tails), K tails (1008,
    4112, 2064, 3008), the 16- / 32-column last epilogue round, N tails (last tiles 104, 80, 96 of 144
    columns; 88, 48 of 224). Plain GEMM and addmm terms."""
    need = _ODD_MID_M | (2 if width == 144 else 4)  # with bit 1 (144) or bit 2 (224)
    if _odd_width_bits() & need != need:
        pytest.skip(f"TK_HOPPER_ODD_WIDTHS leaves out the mid-size 128 x {width} plans")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["units"]) == (False, 128, width, 1, units), plan
    _check_gemm_and_addmm(shape, layout, dtype, f"mid-size 128x{width}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,units", [((2600, 2601, 2000), 252), ((4097, 4097, 1030), 627),
                                         ((1024, 14336, 1024), 512)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else str(s))
def test_gemm_odd_widths_mid_m224(shape, units, layout, dtype):
    """Multi-wave unswapped 128 x 224 plans past 512 tokens (plan_rules.h kOddWidthsMidM224, odd_widths
    bit 13, for a column-major B whose pitch keeps whole sectors; other layouts get other plans,
    checked all the same), from the dynamic schedule: 2 waves with M, N and K tails and output rows
    copied out (2601 columns: a 137-column last tile), 5 waves with re-pitched operand copies (K = 1030)
    and a 65-column last tile, 4 full waves without tails. Plain GEMM and addmm terms."""
    if _odd_width_bits() & (_ODD_MID_M224 | 4) != _ODD_MID_M224 | 4:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the multi-wave 128 x 224 plans")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["units"]) == (False, 128, 224, 1, units), plan
        assert plan["dynamic"], plan
    _check_gemm_and_addmm(shape, layout, dtype, "mid-size 128x224, several waves")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,bn,units", [((2600, 2601, 2000), 224, 252), ((2500, 2601, 1030), 224, 252),
                                            ((1500, 1536, 1030), 144, 132), ((3000, 1536, 2000), 144, 252)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else str(s))
def test_gemm_odd_widths_swapped_mid(shape, bn, units, layout, dtype):
    """Swapped 128 x 224 / 128 x 144 plans past 320 tokens for a row-major A and B (torch.mm's NN;
    plan_rules.h kOddWidthsSwappedMid224 / 144, odd_widths bits 15 / 16: the odd width runs along M,
    A^T as the K-major Y): 224 in 2 waves with M, N and K tails and output rows copied out (2601
    columns), 224 with re-pitched operand copies (K = 1030), 144 in one wave with an M tail (1500 rows:
    a 60-row last column tile) and a re-pitched K, 144 in 2 waves from the dynamic schedule. Other
    layouts get other plans, checked all the same. Plain GEMM and addmm terms."""
    bits = _ODD_SWAP_M224 if bn == 224 else _ODD_SWAP_M144
    if _odd_width_bits() & bits != bits:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the swapped mid-size plans")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, "NN")
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["units"]) == (True, 128, bn, 1, units), plan
        assert plan["dynamic"] == (units > 132), plan
        assert torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, "NT")["swap_ab"] is False
    _check_gemm_and_addmm(shape, layout, dtype, f"swapped mid-size 128x{bn}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(3000, 3001, 2000), (2030, 2555, 1030), (3000, 1600, 4000), (6100, 1000, 1040)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_mid_widths_192_160(shape, layout, dtype):
    """Mid-size 128 x 192 and 128 x 160 plans (plan_rules.h kOddWidthsMid192160, odd_widths bit 17):
    192 in either orientation for any layout, 160 unswapped for a column-major B and swapped for a
    row-major A and B (as the 224 candidate), from the dynamic schedule; M, N and K tails, output rows
    copied out (3001 / 2555 / 1000 columns), re-pitched operand copies (K = 1030), swapped 192 at 6100
    tokens (8 x 32 tiles: a 148-row last column tile). Plain GEMM and addmm terms."""
    if _odd_width_bits() & _ODD_MID192 != _ODD_MID192:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the mid-size 192 / 160 candidates")
    M, N, K = shape
    want = {(3000, 3001, 2000): {"NT": (False, 192, 384), "NN": (False, 192, 384), "TN": (False, 192, 384),
                                 "TT": (False, 192, 384)},
            (2030, 2555, 1030): {"NT": (False, 160, 256), "NN": (True, 160, 260), "TN": (False, 192, 224),
                                 "TT": (False, 160, 256)},
            (3000, 1600, 4000): {"NT": (False, 160, 240), "NN": (True, 160, 247), "TN": (False, 192, 216),
                                 "TT": (False, 160, 240)},
            (6100, 1000, 1040): {lay: (True, 192, 256) for lay in ("NT", "NN", "TN", "TT")}}[shape][_lay(layout)]
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, _lay(layout))
        assert (plan["swap_ab"], plan["bn"], plan["units"]) == want and plan["splits"] == 1 and plan["dynamic"], plan
    _check_gemm_and_addmm(shape, layout, dtype, f"mid-size 128x{want[1]}")



_ONE_WG_144 = "81"  # TK_HOPPER_ONE_WG: the default bits 0 and 4, and bit 6 (128 x 144 on one warpgroup)


@_forced_tile_params([(330, 6100, 520), (370, 6150, 1000), (250, 8999, 8191), (384, 6144, 6144)])
def test_gemm_one_warpgroup_144(shape, layout, dtype):
    """Unswapped unsplit 128x144 plans (plan_rules.h kOddWidths bit 1) on one consumer warpgroup,
    two 64-row strips (kOneWarpgroupWidths bit 6, the default since 2026-12-03c;
    test_one_warpgroup_144_in_child_process runs this with TK_HOPPER_ONE_WG=81 set explicitly):
    126-129 units, one per CTA; a 16-column last epilogue round copied out by rows per strip; M tails (330, 370, 250 of 384 / 256 rows), N tails and
    odd output pitches (6100, 6150, 8999), K tails (520, 1000, 8191); from K = 6144 (8191, 6144)
    the staging boxes lie in the stage ring. Other layouts than a column-major B get other plans,
    checked all the same. The child also leaves out TK_HOPPER_ODD_WIDTHS bit 14 (kOddWidths144Unaligned),
    which plans the short-K odd-pitch shapes (520, 1000) as 128 x 192 by default."""
    if os.environ.get("TK_HOPPER_ONE_WG") != _ONE_WG_144:
        pytest.skip(f"runs in a child process with TK_HOPPER_ONE_WG={_ONE_WG_144} "
                    "(test_one_warpgroup_144_in_child_process)")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["wg_rows"]) == (False, 128, 144, 1, 128), plan
    assert plan["ring_staging"] == (K >= 6081), plan  # plan_rules.h kRingStagingMinKTiles: 96 k tiles
    _check_gemm_and_addmm(shape, layout, dtype, "one-warpgroup 128x144")


@needs_hopper
def test_one_warpgroup_144_in_child_process():
    """The one-warpgroup 128x144 kernels (TK_HOPPER_ONE_WG bit 6, the default since 2026-12-03c)."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": _ONE_WG_144, "TK_HOPPER_ODD_WIDTHS": str(int(_ODD_WIDTHS_DEFAULT) & ~_ODD_144_UNALIGNED)},
                        "test_gemm_one_warpgroup_144", timeout=400)
    assert re.search(r"\b32 passed", out), out[-4000:]


_FORCED_144 = "0:128:144:1:1"


@_forced_tile_params([(500, 8200, 520), (250, 14330, 1000)])
def test_gemm_bn144_many_units(shape, layout, dtype):
    """128x144 tiles forced (TK_HOPPER_TILE; test_bn144_forced_in_child_process runs this under
    it) where the planner would not take them: 228 / 200 units on <= 132 CTAs (the dynamic
    schedule: a CTA's second unit reuses the staging buffers), N tails (8200, 14330: odd pitch)."""
    _forced_tile_case(_FORCED_144, "test_bn144_forced_in_child_process", shape, layout, dtype,
                      {"swap_ab": False, "bn": 144, "dynamic": True}, "bn144 forced", min_units=133)


@needs_hopper
def test_bn144_forced_in_child_process():
    """The 144-wide kernels running several units per CTA (TK_HOPPER_TILE forces the tile)."""
    out = _pytest_child({"TK_HOPPER_TILE": _FORCED_144}, "test_gemm_bn144_many_units", timeout=400)
    assert re.search(r"\b16 passed", out), out[-4000:]


_TOKEN_WIDTH_SHAPES = {  # shape -> the token width plan_rules.h kTokenWidths gives it (odd_widths bit 3)
    (129, 6144, 777): 72, (288, 4096, 1000): 72, (136, 6150, 4100): 72, (270, 4100, 300): 72,
    (320, 4100, 999): 80, (300, 4096, 4100): 80, (290, 4000, 520): 80,
}


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", list(_TOKEN_WIDTH_SHAPES), ids=lambda s: "x".join(map(str, s)))
def test_gemm_token_widths(shape, layout, dtype):
    """Swapped 128 x w tiles sized to the token count (plan_rules.h kTokenWidths, TK_HOPPER_ODD_WIDTHS bit 3,
    default on): both built widths, 72 and 80 (a last epilogue round of 8 / 16 columns through its
    own transposed TMA box), token tails (129, 136, 270, 290, 300: the last token tile's Y box holds
    fewer rows), weight tails (4100, 6150, 8200), K tails, odd output pitches; other layouts than a
    row-major A get other plans, checked all the same."""
    if not _odd_width_bits() & 8:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the token widths")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A)
        assert (plan["swap_ab"], plan["bn"], plan["splits"]) == (True, _TOKEN_WIDTH_SHAPES[shape], 1), plan
        # one consumer warpgroup (plan.h one_wg bit 4, default) where >= 3 token tiles share each
        # weight tile (kTokenWidthOneWgMinTiles), two otherwise
        one_wg = int(os.environ.get("TK_HOPPER_ONE_WG", _ONE_WG_DEFAULT))
        token_tiles = -(-M // plan["bn"])
        assert plan["wg_rows"] == (128 if one_wg & 16 and token_tiles >= 3 else 64), plan
    _check_gemm_and_addmm(shape, layout, dtype, "token width")


@needs_hopper
def test_token_widths_two_wg_in_child_process():
    """Every token-width tile on two consumer warpgroups (plan.h one_wg bit 4 off; by default the
    shapes with >= 3 token tiles run one warpgroup over two 64-row strips): test_gemm_token_widths
    under TK_HOPPER_ONE_WG=1."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": "1"}, "test_gemm_token_widths", timeout=400)
    assert re.search(r"\b56 passed", out), out[-4000:]


_TOKEN_ROWS64_SHAPES = [(129, 8192, 777), (136, 8200, 4100), (144, 6400, 520), (140, 8448, 1000),
                        (137, 8200, 14001),  # bit 6: in place of a split plan (long, odd K)
                        (150, 8192, 777), (160, 8200, 4100), (145, 6400, 520),  # bit 7: 64 x 160
                        (157, 8448, 14001),
                        (161, 8192, 777), (176, 8200, 4100), (170, 6400, 520),  # bit 8: 64 x 176
                        (173, 8448, 14001),
                        (177, 8192, 777), (192, 8200, 4100), (185, 6400, 520),  # bit 9: 64 x 192
                        (189, 8448, 14001),
                        (224, 8200, 14001), (197, 8448, 14001), (210, 6400, 14001),  # bit 10: 64 x 224 (split plans)
                        (200, 8192, 4100), (216, 8200, 2000), (193, 8200, 6000), (208, 8200, 777)]  # bit 12 (unsplit)
_TOKEN_ROWS64_UNSPLIT224 = _TOKEN_ROWS64_SHAPES[-4:]  # in place of unsplit 128 x 128 plans (odd_widths bit 12)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", _TOKEN_ROWS64_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_token_rows64(shape, layout, dtype):
    """Swapped 64-row tiles, one token tile for all tokens (plan.h odd_widths bits 4, 6, 7, 8, 9, default
    where they fill 3/4 of a wave): 64 x 144 for 129..144 tokens, 64 x 160 for 145..160, 64 x 176 for
    161..176, 64 x 192 for 177..192, also where the plan would split K, and 64 x 224 for 193..224
    there (bit 10) and in place of unsplit 128 x 128 plans (bit 12); token tails (129, 136, 140 of
    144 rows; 145, 150, 157 of 160; 161, 170, 173 of 176; 177, 185, 189 of 192; 193, 197, 200, 208,
    210, 216 of 224), weight tails (8200, 6400: 100 tiles), K tails, a narrow last epilogue round (16, 32 or 48 columns) through its own
    transposed TMA box; other layouts than a row-major A get other plans, checked all the same. From
    K = 2048 (plan_rules.h kRingStagingMinKTilesRows64) the staging boxes lie in the stage ring."""
    M, N, K = shape
    width = 144 if M <= 144 else 160 if M <= 160 else 176 if M <= 176 else 192 if M <= 192 else 224
    need = 16 | {144: 0, 160: 128, 176: 256, 192: 512, 224: 1024}[width] | (64 if K > 8192 else 0) | \
        (_ODD_UNSPLIT224 if shape in _TOKEN_ROWS64_UNSPLIT224 else 0)
    if _odd_width_bits() & need != need:
        pytest.skip(f"TK_HOPPER_ODD_WIDTHS leaves out the 64 x {width} plan here")
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A)
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["cluster"]) == (True, 64, width, 1, 1), plan
        ring = os.environ.get("TK_HOPPER_RING_STAGING")  # the knob, else the rule (K >= 1985: 32 k tiles)
        assert plan["ring_staging"] == (ring == "1" or (ring is None and K >= 1985)), plan
    _check_gemm_and_addmm(shape, layout, dtype, f"64x{width}")


_ROWS64_PAIR_SHAPES = [(170, 8200, 777), (88, 4100, 520), (80, 2000, 4100), (192, 8192, 1000), (131, 6400, 14001)]


@_forced_tile_params(_ROWS64_PAIR_SHAPES)
def test_gemm_token_rows64_pairs(shape, layout, dtype):
    """Swapped 64-row token tiles (64 x 144..224) in 2-CTA pairs (TK_HOPPER_TILE=1:64:W:1:2, set by
    test_token_rows64_pairs_in_child_process; a TK_BM64_ODD_CLUSTER build): each CTA loads one slice
    of the token tile and multicasts it. Slices ending past the tokens as exact boxes (170 of 176:
    82 of the second 88 rows), slices wholly past them skipped (88, 80 tokens), weight tiles past the
    end (8200: 129 tiles, the last pair's second CTA has none), several units per CTA (two token
    tiles at 170 / 192 on 144 / 160 / 176), long odd K."""
    forced = os.environ.get("TK_HOPPER_TILE", "")
    m = re.fullmatch(r"1:64:(\d+):1:2", forced)
    if m is None:
        pytest.skip("runs in a child process with TK_HOPPER_TILE=1:64:W:1:2 (test_token_rows64_pairs_in_child_process)")
    w = int(m.group(1))
    _forced_tile_case(forced, "test_token_rows64_pairs_in_child_process", shape, layout, dtype,
                      {"swap_ab": True, "bm": 64, "bn": w, "cluster": 2}, f"64x{w} pairs")


@needs_hopper
@pytest.mark.parametrize("w", [144, 160, 176, 192, 224])
def test_token_rows64_pairs_in_child_process(w):
    """The 64-row token-tile pairs, each width (kernel_variants.h TK_BM64_ODD_CLUSTER builds only)."""
    if torch_tk._C.hopper_plan(170, 8200, 777, 132, tile=(True, 64, w, 1, 2))["cluster"] != 2:
        pytest.skip("64-row token-tile pairs are built with TK_BUILD_DEFINES=TK_BM64_ODD_CLUSTER=1 only")
    out = _pytest_child({"TK_HOPPER_TILE": f"1:64:{w}:1:2"}, "test_gemm_token_rows64_pairs", timeout=400)
    assert re.search(r"\b40 passed", out), out[-4000:]


@_forced_tile_params([(320, 8200, 520), (230, 8200, 1000)])
def test_gemm_token_width_many_units(shape, layout, dtype):
    """Each token width forced (TK_HOPPER_TILE=1:128:w:1:1, set by
    test_token_width_forced_in_child_process) where it takes more units than SMs: a CTA's later
    units reuse the staging buffers."""
    forced = os.environ.get("TK_HOPPER_TILE", "")
    w = int(forced.split(":")[2]) if forced.startswith("1:128:") else 0
    if w not in (72, 80):
        pytest.skip("runs in a child process with TK_HOPPER_TILE=1:128:w:1:1 (test_token_width_forced_in_child_process)")
    _forced_tile_case(forced, "test_token_width_forced_in_child_process", shape, layout, dtype,
                      {"swap_ab": True, "bn": w, "dynamic": True}, f"bn{w} forced", min_units=133)


@needs_hopper
@pytest.mark.parametrize("w", [72, 80])
def test_token_width_forced_in_child_process(w):
    """The token-width kernels running several units per CTA (TK_HOPPER_TILE forces the tile)."""
    out = _pytest_child({"TK_HOPPER_TILE": f"1:128:{w}:1:1"}, "test_gemm_token_width_many_units", timeout=400)
    assert re.search(r"\b16 passed", out), out[-4000:]


_FORCED_BM64_PAIRS = "0:64:64:1:2"


@_forced_tile_params([(150, 2100, 1000), (128, 4096, 40), (130, 2100, 130)])
def test_gemm_bm64_pairs_forced(shape, layout, dtype):
    """Unswapped 64x64 tiles in 2-CTA clusters multicasting the weight tile (plan_rules.h kBm64RowPairs,
    off by default since 2026-11-28e; forced by TK_HOPPER_TILE, test_bm64_pairs_in_child_process
    runs this under it): an odd number of row tiles (150: the last pair's second CTA lies past M),
    one k tile (K = 40) and three (the 64x64 kernels load two k tiles per stage, so an odd count
    ends on a tile past K that arrives zero-filled), N tails, plain GEMM and addmm terms."""
    _forced_tile_case(_FORCED_BM64_PAIRS, "test_bm64_pairs_in_child_process", shape, layout, dtype,
                      {"swap_ab": False, "bm": 64, "bn": 64, "cluster": 2}, "bm64 pairs forced")


@needs_hopper
def test_bm64_pairs_in_child_process():
    """The clustered 64x64 kernels (TK_HOPPER_TILE forces the tile)."""
    out = _pytest_child({"TK_HOPPER_TILE": _FORCED_BM64_PAIRS}, "test_gemm_bm64_pairs_forced", timeout=400)
    assert re.search(r"\b24 passed", out), out[-4000:]


_FORCED_224 = "0:128:224:1:1"


@_forced_tile_params([(256, 14336, 4096), (200, 14330, 1000), (500, 8200, 520), (130, 2000, 72)])
def test_gemm_bn224_forced(shape, layout, dtype):
    """Unswapped 128x224 tiles (plan_rules.h kOddWidths bit 2) forced by TK_HOPPER_TILE (test_bn224_in_child_process
    runs this under it; other layouts than a column-major B get other plans, checked all the same):
    one wave of 128 tiles (256x14336x4096, the shape the width is for), 4 epilogue rounds with a
    32-column last one copied out by rows; an odd output pitch and an M tail (200x14330: the last
    tile 214 columns wide), 148 units on <= 132 CTAs (the dynamic schedule), a K tail of one
    partial k tile (72), plain GEMM and addmm terms."""
    _forced_tile_case(_FORCED_224, "test_bn224_in_child_process", shape, layout, dtype,
                      {"swap_ab": False, "bn": 224, "splits": 1}, "bn224 forced")


@needs_hopper
def test_bn224_in_child_process():
    """The 224-wide kernels (TK_HOPPER_TILE forces the tile wherever the layout allows it)."""
    out = _pytest_child({"TK_HOPPER_TILE": _FORCED_224}, "test_gemm_bn224_forced", timeout=400)
    assert re.search(r"\b32 passed", out), out[-4000:]


@needs_hopper
@pytest.mark.parametrize("ring", ["1", "0"])
def test_ring_staging_in_child_process(ring):
    """The one-warpgroup 128x128 kernels with the epilogue's staging boxes in the stage ring (7
    stages) at every K (TK_HOPPER_RING_STAGING=1; by default from K = 6144 only), and beside it at
    every K (=0): swapped and unswapped, tails, addmm terms, 16-bit outputs through the TMA store
    or the staged copy-out (fp32 outputs have no staging: the usual kernel)."""
    out = _pytest_child({"TK_HOPPER_RING_STAGING": ring}, "test_gemm_one_warpgroup_128x128", timeout=400)
    assert re.search(r"\b48 passed", out), out[-4000:]
