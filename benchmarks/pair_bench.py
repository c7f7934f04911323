#!/usr/bin/env python3
"""A linear's backward GEMM pair -- dX = grad @ W (T x IN, K = OUT) beside dW = grad^T @ X
(OUT x IN, K = T) -- timed three ways in one process, interleaved by round: torch.mm twice
(what a stock model's backward runs), torch_tk.gemm twice, and torch_tk.gemm_pair (autograd's
backward of the tk ops; its products on two streams when TK_PAIR_STREAMS=1, else in turn).

    TK_PAIR_STREAMS=1 python3 benchmarks/pair_bench.py [--linears T:IN:OUT,...] [--rounds 3]
        [--l2 warm|dirty] [--dtype bfloat16|float16]

Default linears: bench_model.py's (8192 tokens; q/k/v/o 2048 -> 2048, gate/up 2048 -> 5632,
down 5632 -> 2048). Prints us per pair (median over rounds of each round's median) and the ratios
tk pair / tk in turn and torch.mm in turn / tk pair. --l2 warm (default): back to back, no flush,
as inside a training step; dirty: do_bench's 256 MB memset before each call (bench_gemm.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

DEFAULT_LINEARS = "8192:2048:2048,8192:2048:5632,8192:5632:2048"


def parse_linears(text):
    """'T:IN:OUT,...' -> [(T, IN, OUT)]; ValueError naming --linears on a bad entry."""
    out = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            t, i, o = (int(p) for p in parts)
        except ValueError:
            raise ValueError(f"--linears: expected T:IN:OUT with positive integers, got {item!r}") from None
        if min(t, i, o) <= 0:
            raise ValueError(f"--linears: sizes must be positive, got {item!r}")
        out.append((t, i, o))
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--linears", default=DEFAULT_LINEARS, type=parse_linears)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--l2", choices=("warm", "dirty"), default="warm")
    p.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("pair_bench: no CUDA device")
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_gemm
    import torch_tk

    # warm: back-to-back events; dirty: per-call events after do_bench's memset (not do_bench itself,
    # whose loop would time the pair's host work between its own events the same way)
    opts = bench_gemm.parse_args(["--l2", args.l2])
    bench, desc = bench_gemm.warm_timer(opts) if args.l2 == "warm" else bench_gemm.dirty_l2_timer(opts)
    dtype = getattr(torch, args.dtype)
    print(f"# pair_bench: {torch.cuda.get_device_name()}, {args.dtype}, timer: {desc}; "
          f"tk.gemm_pair on two streams: {torch_tk._C.pair_streams()}")
    print(f"{'T:IN:OUT':>18} {'mm x2 us':>10} {'tk x2 us':>10} {'tk pair us':>11} {'pair/tk x2':>11} {'mm/pair':>8}")
    for T, IN, OUT in args.linears:
        g = torch.randn(T, OUT, device="cuda", dtype=dtype)
        w = torch.randn(OUT, IN, device="cuda", dtype=dtype)
        x = torch.randn(T, IN, device="cuda", dtype=dtype)
        gt = g.t()
        fns = {"mm": lambda: (torch.mm(g, w), torch.mm(gt, x)),
               "tk": lambda: (torch_tk.gemm(g, w), torch_tk.gemm(gt, x)),
               "pair": lambda: torch_tk.gemm_pair(g, w, gt, x)}
        c0 = dict(torch_tk.kernel_counters())
        fns["pair"]()
        torch.cuda.synchronize()
        assert torch_tk.kernel_counters()["hopper"] - c0["hopper"] == 2, "the pair did not run on the Hopper kernels"
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                times[k].append(bench(fn) * 1e3)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{f'{T}:{IN}:{OUT}':>18} {med['mm']:10.1f} {med['tk']:10.1f} {med['pair']:11.1f} "
              f"{med['pair'] / med['tk']:11.3f} {med['mm'] / med['pair']:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
