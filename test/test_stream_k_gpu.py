"""The stream-K kernels on an H100/H200 -- the tail over all CTAs (TK_HOPPER_STREAMK=1), the
aligned last-wave split (TK_HOPPER_STREAMK=2, and =4 over generations of CTAs), the even tail
(TK_HOPPER_STREAMK=5) and the fill mode
(TK_HOPPER_SK_FILL=2) --
correctness, bitwise repeatability and that stream-K ran, checked in a child process
(test/stream_k_case.py) because the dispatcher reads its environment knobs once per process."""
import os
import subprocess
import sys

import pytest
import torch

import torch_tk

HERE = os.path.dirname(os.path.abspath(__file__))


def _hopper():
    try:
        return torch.cuda.is_available() and torch_tk.hopper_available(0)
    except Exception:  # noqa: BLE001 - no CUDA build
        return False


# TK_HOPPER_ODD_WIDTHS without bits 11, 13, 15, 16 and 17 (plan_rules.h kOddWidthsMidM, kOddWidthsMidM224,
# kOddWidthsSwappedMid224 / 144, kOddWidthsMid192160): the stream-K tails are built for 128x256 tiles, which those bits re-plan as
# 128x144 / 128x224 at the tail and split shapes (2432x1792x4096: 133 tiles of 128x256 -> 247 of 128x144).
_ODD_WIDTHS_128X256 = str(262143 & ~(2048 | 8192 | 32768 | 65536 | 131072))


@pytest.mark.skipif(not _hopper(), reason="needs the Hopper kernel (sm_90 GPU and an sm_90a build)")
# The stream-K tails apply to unclustered plans only: the K = 520 / 1000 shapes (pitches that
# split 32-B sectors) would otherwise cluster (plan_rules.h kSplitSectorClusters).
@pytest.mark.parametrize("mode,knob", [("tail", {"TK_HOPPER_STREAMK": "1", "TK_HOPPER_SK_FILL": "0",
                                                 "TK_HOPPER_SECTOR_CLUSTERS": "0",
                                                 "TK_HOPPER_ODD_WIDTHS": _ODD_WIDTHS_128X256}),
                                       ("split", {"TK_HOPPER_STREAMK": "2", "TK_HOPPER_SK_FILL": "0",
                                                  "TK_HOPPER_SECTOR_CLUSTERS": "0",
                                                  "TK_HOPPER_ODD_WIDTHS": _ODD_WIDTHS_128X256}),
                                       ("waves", {"TK_HOPPER_STREAMK": "4", "TK_HOPPER_SK_FILL": "0",
                                                  "TK_HOPPER_SECTOR_CLUSTERS": "0",
                                                  "TK_HOPPER_ODD_WIDTHS": _ODD_WIDTHS_128X256}),
                                       ("even", {"TK_HOPPER_STREAMK": "5", "TK_HOPPER_SK_FILL": "0",
                                                 "TK_HOPPER_SECTOR_CLUSTERS": "0",
                                                 "TK_HOPPER_ODD_WIDTHS": _ODD_WIDTHS_128X256}),
                                       ("fill", {"TK_HOPPER_SK_FILL": "2", "TK_HOPPER_STREAMK": "0"})])
def test_stream_k_in_child_process(mode, knob):
    env = dict(os.environ, **knob, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    # A hang (a flag never raised) must fail the test, not the run: time-boxed.
    r = subprocess.run([sys.executable, os.path.join(HERE, "stream_k_case.py"), mode], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "0 failures" in r.stdout
