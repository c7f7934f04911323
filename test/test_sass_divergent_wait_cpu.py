"""scripts/sass_divergent_wait.py on hand-written SASS shaped as the k loops of libraries d39 and d41
(2026-12-05h): a wgmma wait behind a warp's own non-blocking barrier test is found; the same wait
behind the warpgroup's vote (BAR.RED.OR), or after a blocking wait, is not."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import sass_divergent_wait  # noqa: E402

HEAD = "\t\tFunction : _ZN2tk6hopper11gemm_kernelIxEEv\n"


def sass(*insns):
    return HEAD + "".join(f"        /*{0x7500 + 16 * i:04x}*/                   {t} ;   /* 0x0 */\n" for i, t in enumerate(insns))


TEST = "SYNCS.PHASECHK.TRANS64 P2, [R5+UR12+0x30000], R6"
DRAIN = ["@P2 BRA 0x7680", "WARPSYNC.ALL", "WARPGROUP.DEPBAR.LE gsb0, 0x0",
         "@!P1 SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R4+UR12+0x30020], RZ"]
ISSUE = ["SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R5+UR12+0x30000], R6", "WARPGROUP.ARRIVE",
         "HGMMA.64x160x16.F32.BF16 R24, gdesc[UR16].tnspA, R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x1"]


def test_wait_behind_a_per_warp_test_is_found():
    hits = sass_divergent_wait.scan(sass(TEST, *DRAIN, *ISSUE))
    assert list(hits.values()) == [[0x7500 + 16 * 3]]  # the DEPBAR of the drain, not the loop's own


def test_wait_behind_the_vote_is_not():
    vote = "BAR.RED.OR.DEFER_BLOCKING R119, 0x80, !P2"
    assert sass_divergent_wait.scan(sass(TEST, vote, *DRAIN, *ISSUE)) == {}


def test_wait_after_a_blocking_wait_or_the_next_issue_is_not():
    assert sass_divergent_wait.scan(sass(*ISSUE, "WARPGROUP.DEPBAR.LE gsb0, 0x0")) == {}
    assert sass_divergent_wait.scan(sass(TEST, *ISSUE, "WARPGROUP.DEPBAR.LE gsb0, 0x0")) == {}
