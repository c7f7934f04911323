#!/usr/bin/env python3
"""In-process A/B of Hopper GEMM settings (environment knobs), interleaved with torch.mm.

Needs a build with the experiment hooks, where the knobs are re-read on every call (in a normal
build they are read once per process) and TK_HOPPER_EXPERIMENT exists (stage removal: its
modified runs give WRONG results, so the hooks are not in a normal build):

    TK_EXPERIMENTS=1 python3 -m pip install --no-build-isolation --no-deps -e .
    python3 benchmarks/ab_env.py [--shapes MxNxK:LAYOUT,...] [--variants name=VAR=VAL+VAR=VAL;...]

Default variants: stage removal, TK_HOPPER_EXPERIMENT = 0 (full), 1 (no epilogue stores),
2 (no TMA loads: shared memory holds stale data, so the wgmma power differs), 3 (no loads, no
stores). With --clocks it samples SM clock and power (nvidia-smi) and the time per call while
torch.mm and each variant in turn run back to back for ~1.5 s. Times are medians of --rounds (3) interleaved rounds.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import threading
import time

import torch
import triton.testing as tt

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from operands import layout_operands  # noqa: E402

DEFAULT = ("8192x8192x8192:NT,4096x4096x4096:NT,8192x4096x4096:NT,8192x57344x8192:NN,"
           "8192x8192x28672:NT,8192x28672x4096:TN")
STAGE_REMOVAL = ("full=TK_HOPPER_EXPERIMENT=0;no_store=TK_HOPPER_EXPERIMENT=1;no_load=TK_HOPPER_EXPERIMENT=2;"
                 "mma_only=TK_HOPPER_EXPERIMENT=3")


def parse_variants(spec):
    """'name=VAR=VAL+VAR=VAL;name2=...' -> {name: {VAR: VAL}}"""
    out = {}
    for item in spec.split(";"):
        name, _, env = item.strip().partition("=")
        out[name] = dict(kv.split("=", 1) for kv in env.split("+") if kv)
    return out


def inputs(M, N, K, lay):
    a, b = layout_operands(M, N, K, lay)
    return a, b


def with_env(env, keys, fn):
    def run():
        for k in keys:  # every knob any variant sets: unset ones go back to their default
            if k in env:
                os.environ[k] = env[k]
            else:
                os.environ.pop(k, None)
        return fn()
    return run


def sample_clocks(fn, seconds=1.5):
    """Median SM clock (MHz) and power (W) from nvidia-smi while fn runs back to back (no L2
    flush), the sustained time per call (s) over that run and the most frequent clock event reason
    mask (nvidia-smi clocks_throttle_reasons.active)."""
    samples = []
    reasons = {}  # nvidia-smi's clock event reason masks (0x4 SW power cap, 0x80 HW power brake, ...)
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True)
            try:
                c, p, why = r.stdout.strip().split(",")
                samples.append((float(c), float(p)))
                reasons[why.strip()] = reasons.get(why.strip(), 0) + 1
            except ValueError:
                pass
            time.sleep(0.1)

    fn()
    torch.cuda.synchronize()
    th = threading.Thread(target=poll)
    th.start()
    t0 = time.time()
    calls = 0
    while time.time() - t0 < seconds:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        calls += 20
    per_call = (time.time() - t0) / calls
    stop.set()
    th.join()
    samples = sorted(samples)
    if not samples:
        return float("nan"), float("nan"), per_call, ""
    mid = samples[len(samples) // 2]
    why = max(reasons, key=reasons.get) if reasons else ""
    return mid[0], sorted(p for _, p in samples)[len(samples) // 2], per_call, why


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--variants", default=STAGE_REMOVAL)
    ap.add_argument("--clocks", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv[1:])
    variants = parse_variants(args.variants)
    keys = sorted({k for env in variants.values() for k in env})
    bench = lambda fn: float(tt.do_bench(fn, warmup=15, rep=60, return_mode="median"))  # noqa: E731
    rows = []
    for item in args.shapes.split(","):
        shape, _, lay = item.partition(":")
        lay = lay or "NT"
        M, N, K = (int(x) for x in shape.split("x"))
        a, b = inputs(M, N, K, lay)
        fns = {"torch.mm": lambda: torch.mm(a, b)}
        for name, env in variants.items():
            fns[name] = with_env(env, keys, lambda: torch_tk.gemm(a, b))
        t = {k: [] for k in fns}
        order = list(fns)
        for r in range(args.rounds):  # interleaved rounds, the order rotated each round
            for k in order[r % len(order):] + order[:r % len(order)]:
                t[k].append(bench(fns[k]))
        med = {k: statistics.median(v) for k, v in t.items()}
        clk = ""
        if args.clocks:  # sustained: MHz, W, us per call and mJ per call, each fn in turn
            parts = []
            for k, fn in fns.items():
                c, w, s, why = sample_clocks(fn)
                parts.append(f"{k} {c:.0f} MHz {w:.0f} W {s * 1e6:.0f} us {w * s * 1e3:.2f} mJ ({why})")
            clk = "; ".join(parts)
        for k in keys:
            os.environ.pop(k, None)
        flop = 2.0 * M * N * K
        print(f"{M}x{N}x{K} {lay}: " + "  ".join(f"{k} {v * 1e3:.0f}us ({flop / v / 1e9:.0f}TF)"
                                                for k, v in med.items()) + ("  | " + clk if clk else ""), flush=True)
        rows.append((f"{M}x{N}x{K} {lay}", med, clk))
    names = list(variants)
    print("\n| shape | torch.mm us | " + " | ".join(f"{n} us (torch/{n})" for n in names) +
          (" | sustained: clock, power, time and energy per call" if args.clocks else "") + " |")
    print("|---|---|" + "---|" * len(names) + ("---|" if args.clocks else ""))
    for name, med, clk in rows:
        cells = [f"{med[n] * 1e3:.0f} ({med['torch.mm'] / med[n]:.3f})" for n in names]
        print(f"| {name} | {med['torch.mm'] * 1e3:.0f} | " + " | ".join(cells) + (f" | {clk}" if clk else "") + " |")
    geo = {n: math.exp(sum(math.log(med['torch.mm'] / med[n]) for _, med, _ in rows) / len(rows)) for n in names}
    print("geomean torch/variant: " + "  ".join(f"{n} {g:.4f}" for n, g in geo.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
