"""scripts/sass_hazards.py on hand-written SASS: the hazard ptxas 13.0 produced (an F2FP pack of a
wgmma accumulator, and a scratch write into one, before the WARPGROUP.DEPBAR of the wait) is found;
the same code with the wait first, and accesses to registers outside the accumulators, are not."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import sass_hazards  # noqa: E402

HEAD = "\t\tFunction : _ZN2tk6hopper11gemm_kernelIxEEv\n"


def sass(*insns):
    return HEAD + "".join(f"        /*{0x1000 + 16 * i:04x}*/                   {t} ;   /* 0x0 */\n" for i, t in enumerate(insns))


LOOP_EXIT = [
    "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24",
    "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0",
    "WARPGROUP.DEPBAR.LE gsb0, 0x1",
    "@!P0 BRA 0xe00",
    "LDS.128 R12, [R2+0x340d0]",
]


def test_pack_and_scratch_write_before_the_wait_are_found():
    hits = sass_hazards.scan(sass(*LOOP_EXIT, "F2FP.BF16.F32.PACK_AB R106, R25, R24", "@!P1 LEA R24, R107, 0xfffffff8, 0x3",
                                  "IMAD.MOV.U32 R90, RZ, RZ, R87", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "STS [R23], R106"))
    (fn, found), = hits.items()
    assert "gemm_kernel" in fn
    # R24..R87 are the 64 accumulators of a 64 x 128 tile: R87 is the last one, R106 / R107 are not.
    assert [a for a, _ in found] == [0x1050, 0x1060, 0x1070], found


def test_wait_first_is_clean():
    assert sass_hazards.scan(sass(*LOOP_EXIT[:3], "WARPGROUP.DEPBAR.LE gsb0, 0x0", "F2FP.BF16.F32.PACK_AB R106, R25, R24",
                                  "@!P1 LEA R24, R107, 0xfffffff8, 0x3")) == {}


def test_registers_past_the_accumulators_are_not_hazards():
    assert sass_hazards.scan(sass(*LOOP_EXIT, "IMAD R88, R12, 0x4, RZ", "LEA R23, R88, R2, 0x2",
                                  "WARPGROUP.DEPBAR.LE gsb0, 0x0")) == {}


def test_two_strips_both_count():
    # A one-warpgroup 128-row tile: two 64 x 128 strips, R24..R87 and R88..R151.
    hits = sass_hazards.scan(sass("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24",
                                  "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR8], R88, gsb0",
                                  "WARPGROUP.DEPBAR.LE gsb0, 0x1", "F2FP.BF16.F32.PACK_AB R200, R151, R150"))
    assert len(next(iter(hits.values()))) == 1
