"""scripts/ncu_sass_mix.py on a hand-written Nsight Compute source-page CSV (two kernels, the
layout ncu_fetch_stalls.py reads): opcodes are classified (SYNCS waits apart from arrivals,
predicates stripped), counts are summed per class and scaled to 128x256x64 MAC blocks."""
import csv
import io
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import ncu_sass_mix  # noqa: E402

HDR = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed", "stall_no_inst"]


def _csv(tmp_path, kernels):
    buf = io.StringIO()
    w = csv.writer(buf)
    for name, rows in kernels.items():
        w.writerow(["Kernel Name", name])
        w.writerow(HDR)
        for i, (src, samples, execd) in enumerate(rows):
            w.writerow([f"0x{0x7f0000 + 16 * i:x}", src, str(samples), f"{execd:,}", "0"])
    p = tmp_path / "src.csv"
    p.write_text(buf.getvalue())
    return str(p)


def test_opcode_strips_predicates_and_modifiers():
    assert ncu_sass_mix.opcode("@!P0 SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x30], R3") == (
        "SYNCS", "SYNCS.PHASECHK.TRANS64.TRYWAIT")
    assert ncu_sass_mix.opcode("  HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8], R24, gsb0") == (
        "HGMMA", "HGMMA.64x256x16.F32.BF16")
    assert ncu_sass_mix.opcode("@UP1 UIADD3 UR4, UR4, 0x20, URZ") == ("UIADD3", "UIADD3")
    assert ncu_sass_mix.opcode("") == ("", "")


@pytest.mark.parametrize("full,cls", [
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT", "wait"), ("SYNCS.ARRIVE.TRANS64.RED.A1T0", "arrive"),
    ("HGMMA.64x128x16.F32.BF16", "tensor"), ("UTMALDG.2D", "tma"), ("STSM.16.M88.4", "smem"),
    ("F2FP.BF16.F32.PACK_AB", "convert"), ("IMAD.MOV.U32", "int"), ("ULDC.64", "uniform"),
    ("BRA", "control"), ("FOO.BAR", "other")])
def test_classify(full, cls):
    assert ncu_sass_mix.classify(full.split(".")[0], full) == cls


def test_report_scales_to_blocks_and_sums_classes(tmp_path):
    path = _csv(tmp_path, {
        "ours": [("HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24", 10, 4096),
                 ("@!P0 SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3", 30, 2048),
                 ("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR5], RZ", 0, 1024),
                 ("IADD3 R3, R3, 0x1, RZ", 0, 0)],
        "nvjet_sm90_tst_256x128": [("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24", 5, 8192),
                                    ("BRA 0x7f0000", 5, 1024)],
    })
    out = io.StringIO()
    res = ncu_sass_mix.report(path, "256x512x64", out=out)  # 2 x 2 x 1 = 4 blocks of 128x256x64
    e, s, ops = res["ours"]
    assert (e["tensor"], e["wait"], e["arrive"], e["int"]) == (4096, 2048, 1024, 0)
    assert s["wait"] == 30 and ops == {"HGMMA.64x256x16.F32.BF16": 4096,
                                       "SYNCS.PHASECHK.TRANS64.TRYWAIT": 2048, "SYNCS.ARRIVE.TRANS64.A1T0": 1024}
    assert res["nvjet_sm90_tst_256x128"][0]["control"] == 1024
    text = out.getvalue()
    total_line = next(l for l in text.splitlines() if l.startswith("total"))
    assert "1792.0" in total_line and "2304.0" in total_line  # (4096 + 2048 + 1024) / 4, (8192 + 1024) / 4
    assert "4 blocks" in text


def test_bad_shape_and_empty_report(tmp_path):
    with pytest.raises(ValueError, match="MxNxK"):
        ncu_sass_mix.blocks("0x1x1")
    p = tmp_path / "empty.csv"
    p.write_text("")
    with pytest.raises(ValueError, match="no kernel rows"):
        ncu_sass_mix.report(str(p), "128x256x64")
