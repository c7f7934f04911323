#!/usr/bin/env python3
"""Stage-removal timing of the Hopper GEMM (benchmarks/NOTES.md): where a tile's time goes.

Needs a build with the experiment hooks (the results of the modified runs are WRONG, so the
hooks are not in a normal build):

    TK_EXPERIMENTS=1 python3 -m pip install --no-build-isolation --no-deps -e .
    python3 benchmarks/stage_removal.py [MxNxK:LAYOUT,...]

For each shape it times, interleaved in one process, torch.mm and torch_tk.gemm with
TK_HOPPER_EXPERIMENT = 0 (full), 1 (no epilogue stores), 2 (no TMA loads), 4 (no wgmma) and
3 (no loads, no stores: wgmma + pipeline only), then samples SM clock and power while each of
torch.mm and the full kernel runs for ~1.5 s (nvidia-smi), to see whether clocks differ.
"""
import os
import subprocess
import sys
import threading
import time

import torch
import triton.testing as tt

import torch_tk

DEFAULT = ("8192x8192x8192:NT,4096x4096x4096:NT,8192x4096x4096:NT,8192x57344x8192:NN,"
           "8192x8192x28672:NT,8192x28672x4096:TN")
MODES = {"full": 0, "no_store": 1, "no_load": 2, "no_mma": 4, "mma_only": 3}


def inputs(M, N, K, lay):
    a = torch.randn(M, K, device="cuda").bfloat16() if lay[0] == "N" else torch.randn(K, M, device="cuda").bfloat16().t()
    b = torch.randn(K, N, device="cuda").bfloat16() if lay[1] == "N" else torch.randn(N, K, device="cuda").bfloat16().t()
    return a, b


def with_mode(mode, fn):
    def run():
        os.environ["TK_HOPPER_EXPERIMENT"] = str(mode)
        return fn()
    return run


def sample_clocks(fn, seconds=1.5):
    """Median SM clock (MHz) and power (W) from nvidia-smi while fn runs back to back."""
    samples = []
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True)
            try:
                c, p = r.stdout.strip().split(",")
                samples.append((float(c), float(p)))
            except ValueError:
                pass
            time.sleep(0.1)

    fn()
    torch.cuda.synchronize()
    th = threading.Thread(target=poll)
    th.start()
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    stop.set()
    th.join()
    samples = sorted(samples)
    if not samples:
        return float("nan"), float("nan")
    mid = samples[len(samples) // 2]
    return mid[0], sorted(p for _, p in samples)[len(samples) // 2]


def main(argv):
    spec = argv[1] if len(argv) > 1 else DEFAULT
    bench = lambda fn: float(tt.do_bench(fn, warmup=15, rep=60, return_mode="median"))  # noqa: E731
    rows = []
    for item in spec.split(","):
        shape, _, lay = item.partition(":")
        M, N, K = (int(x) for x in shape.split("x"))
        a, b = inputs(M, N, K, lay or "NT")
        fns = {"torch.mm": lambda: torch.mm(a, b)}
        for name, mode in MODES.items():
            fns[name] = with_mode(mode, lambda: torch_tk.gemm(a, b))
        t = {k: [] for k in fns}
        for _ in range(3):  # interleaved rounds
            for k, fn in fns.items():
                t[k].append(bench(fn))
        os.environ["TK_HOPPER_EXPERIMENT"] = "0"
        med = {k: sorted(v)[1] for k, v in t.items()}
        clk_mm = sample_clocks(lambda: torch.mm(a, b))
        clk_tk = sample_clocks(lambda: torch_tk.gemm(a, b))
        flop = 2.0 * M * N * K
        line = f"{M}x{N}x{K} {lay}: " + "  ".join(f"{k} {v * 1e3:.0f}us ({flop / v / 1e9:.0f}TF)" for k, v in med.items())
        line += f"  | clock/power torch {clk_mm[0]:.0f}MHz {clk_mm[1]:.0f}W, tk {clk_tk[0]:.0f}MHz {clk_tk[1]:.0f}W"
        print(line, flush=True)
        rows.append((f"{M}x{N}x{K} {lay}", med, clk_mm, clk_tk))
    print("\n| shape | torch.mm us | tk full | no store | no load | no mma | mma only | clk torch/tk MHz | W torch/tk |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, med, cm, ck in rows:
        us = lambda k: f"{med[k] * 1e3:.0f}"  # noqa: E731
        print(f"| {name} | {us('torch.mm')} | {us('full')} | {us('no_store')} | {us('no_load')} | {us('no_mma')} | "
              f"{us('mma_only')} | {cm[0]:.0f}/{ck[0]:.0f} | {cm[1]:.0f}/{ck[1]:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
