#!/usr/bin/env python3
"""One torch.mm and one torch_tk.gemm launch inside a CUDA profiler range (scripts/ncu_profile.sh).

    python3 scripts/ncu_driver.py MxNxK[:LAYOUT]
"""
import sys

import torch

import torch_tk


def main(argv):
    shape, _, lay = argv[1].partition(":")
    lay = lay or "NT"
    M, N, K = (int(x) for x in shape.split("x"))
    a = torch.randn(M, K, device="cuda").bfloat16() if lay[0] == "N" else torch.randn(K, M, device="cuda").bfloat16().t()
    b = torch.randn(K, N, device="cuda").bfloat16() if lay[1] == "N" else torch.randn(N, K, device="cuda").bfloat16().t()
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
