"""Interleaved timing of a few callables on the current CUDA stream (swiglu_probe.py, swiglu_bench.py).

rounds(fns, rounds, iters) -> {name: [us per call, one per round]}: every round calls each callable once
untimed, then `iters` times between two CUDA events, one callable after another, so clock and power
drift fall on all of them alike. summary(times, base) -> [(name, median us, median / base's median)];
print_summary(times, base) prints it, one line per callable with its rounds' range.
add_options(p) / setup(args, name): the shape and timing options of the SwiGLU benches, and their
CUDA dtype and seeded generator (None, said on stderr, without a CUDA device).
"""
import statistics
import sys

import torch


def rounds(fns, n_rounds, iters):
    times = {name: [] for name in fns}
    for _ in range(n_rounds):
        for name, fn in fns.items():
            fn()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) * 1e3 / iters)
    return times


def summary(times, base):
    b = statistics.median(times[base])
    return [(name, statistics.median(t), statistics.median(t) / b) for name, t in times.items()]


def print_summary(times, base):
    for name, us, ratio in summary(times, base):
        print(f"  {name:<6} {us:9.1f} us  x{ratio:.3f} of {base}  (rounds {min(times[name]):.1f}..{max(times[name]):.1f})")


def add_options(p):
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=5632)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16")


def setup(args, name):
    if not torch.cuda.is_available():
        print(f"{name}: no CUDA device", file=sys.stderr)
        return None
    return getattr(torch, args.dtype), torch.Generator(device="cuda").manual_seed(0)
