"""Interleaved timing of a few callables on the current CUDA stream (swiglu_probe.py, swiglu_bench.py).

rounds(fns, rounds, iters) -> {name: [us per call, one per round]}: every round calls each callable once
untimed, then `iters` times between two CUDA events, one callable after another, so clock and power
drift fall on all of them alike. summary(times, base) -> [(name, median us, median / base's median)].
"""
import statistics

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
