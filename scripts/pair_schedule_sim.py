#!/usr/bin/env python3
"""Predicted gain of tk.gemm_pair on two streams (TK_PAIR_STREAMS=1) over its products in turn, by
a lockstep model of the persistent kernels: one CTA per SM, a CTA takes its own unit first (block
b -> unit b), then, in dynamically scheduled plans, the next ticket when it finishes one; a unit
takes (bm x bn) / (128 x 256) x its k tiles "128x256 k-tile times" (narrow tiles' lower efficiency,
epilogues and split-K reductions left out). Two streams: the first kernel's CTAs take the SMs
first, the second kernel's CTAs start on SMs as the first kernel's exit.

    python3 scripts/pair_schedule_sim.py [T:IN:OUT ...]

Each T:IN:OUT is a linear's backward pair: dX = grad @ W (T x IN, K = OUT) beside dW = grad^T @ X
(OUT x IN, K = T); plans from torch_tk._C.hopper_plan on 132 SMs (F.linear's layout). Default:
bench_model.py's linears and smaller token counts. Prints both plans, the makespans in 128x256
k-tile times in turn and as a pair, and their ratio.
"""
import heapq
import math
import sys

DEFAULT = ["8192:2048:2048", "8192:2048:5632", "8192:5632:2048", "512:4096:4096", "2048:4096:4096",
           "512:4096:14336", "2048:4096:14336"]


def makespan(kernels, sms=132):
    """End time of `kernels` [(units, unit_time, grid, dynamic)] queued in order on `sms` SMs."""
    free = [(0.0, s) for s in range(sms)]  # (time the SM is free, SM)
    heapq.heapify(free)
    end = 0.0
    for units, unit_time, grid, dynamic in kernels:
        running, ticket = [], grid
        for b in range(grid):  # CTAs start in block order on the earliest free SMs
            t, sm = heapq.heappop(free)
            if b < units:
                n = 1 if dynamic else len(range(b, units, grid))  # static: units b, b + grid, ...
                heapq.heappush(running, (t + n * unit_time, sm))
            else:
                heapq.heappush(free, (t, sm))
        while running:
            t, sm = heapq.heappop(running)
            if dynamic and ticket < units:
                ticket += 1
                heapq.heappush(running, (t + unit_time, sm))
            else:
                heapq.heappush(free, (t, sm))
                end = max(end, t)
    return end


def kernel_of(plan, K):
    k_tiles = math.ceil(K / 64) / plan["splits"]
    unit_time = plan["bm"] * plan["bn"] / (128 * 256) * k_tiles
    return plan["units"], unit_time, plan["grid"], plan["dynamic"]


def pair(T, IN, OUT, plan_fn, sms=132):
    """(dX plan, dW plan, makespan in turn, makespan as a pair): the longer-K product first."""
    px, pw = plan_fn(T, IN, OUT, sms), plan_fn(OUT, IN, T, sms)
    kx, kw = kernel_of(px, OUT), kernel_of(pw, T)
    first, second = (kw, kx) if T > OUT else (kx, kw)
    return px, pw, makespan([first], sms) + makespan([second], sms), makespan([first, second], sms)


def main(argv):
    from torch_tk import _C

    for item in argv or DEFAULT:
        T, IN, OUT = (int(x) for x in item.split(":"))
        px, pw, seq, both = pair(T, IN, OUT, _C.hopper_plan)
        desc = lambda p: f"{p['units']:5} x {p['bm']}x{p['bn']}/{p['splits']}"  # noqa: E731
        print(f"T={T:5} {IN:5} -> {OUT:5}: dX {desc(px)}, dW {desc(pw)}; in turn {seq:6.1f}, pair {both:6.1f} "
              f"({both / seq:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
