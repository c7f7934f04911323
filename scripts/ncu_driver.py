#!/usr/bin/env python3
"""torch.mm and torch_tk.gemm launches for scripts/ncu_profile.sh.

    python3 scripts/ncu_driver.py MxNxK[:LAYOUT] [WARM_PAIRS]

Without WARM_PAIRS: three unprofiled pairs, then one pair inside a CUDA profiler range (ncu
--profile-from-start off). With WARM_PAIRS = N: N back-to-back pairs (torch.mm, then ours) with
the profiler on from the start, so ncu --launch-skip 2N --launch-count 2 profiles the pair after N
sustained ones (the GPU at its power-capped clocks, when run with --clock-control none).
"""
import os
import sys

import torch

import torch_tk

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from operands import layout_operands  # noqa: E402


def main(argv):
    shape, _, lay = argv[1].partition(":")
    warm = int(argv[2]) if len(argv) > 2 else 0
    lay = lay or "NT"
    M, N, K = (int(x) for x in shape.split("x"))
    a, b = layout_operands(M, N, K, lay)
    if warm > 0:
        for _ in range(warm + 1):
            torch.mm(a, b)
            torch_tk.gemm(a, b)
        torch.cuda.synchronize()
        return 0
    for _ in range(3):
        torch.mm(a, b)
        torch_tk.gemm(a, b)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.mm(a, b)
    torch_tk.gemm(a, b)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
