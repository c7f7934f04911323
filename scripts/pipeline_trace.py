#!/usr/bin/env python3
"""Pipeline trace of one Hopper GEMM call (needs a TK_EXPERIMENTS=1 build; kXpTrace in gemm_kernel.cuh).

    python3 scripts/pipeline_trace.py MxNxK[:LAYOUT] [...]

For CTAs 0, 1 and the last two, the kernel records the SM clock (cycles since the CTA started)
at which the producer won each k tile's empty slot (= issued its TMA loads) and at which
consumer 0 saw the tile full. This script runs the call in a child process with
TK_HOPPER_EXPERIMENT=16, then prints per CTA: the start offset (globaltimer, ns), the first
tile's load latency, the median issue->full latency, the median interval between full tiles,
and the end (after the epilogue; with more than 135 k tiles, the last recorded one: kTraceLen =
136 records per role), all in cycles, plus the full gaps' and latencies' p10 / p90 (the first 16
records of each; TK_TRACE_FULL=1: all). TK_TRACE_L2=dirty|clean: bench_gemm's L2 states before the
traced call (default warm: right after 3 untraced calls); TK_TRACE_PRIME=MxNxK[:LAYOUT]: a call
of that shape after the flush, before the traced one (the same kernel on other data brings the
kernel's code back into L2). TK_TRACE_EXTRA adds kXp bits: 2 (no loads),
32 + 2 (no barriers either), 64 (consumer 0 records each unit's start, the end of its issue
(the next unit decoded) and its last wgmma's completion instead of k tiles: mainloop, drain and
epilogue cycles per unit; 64 + 128: also the deferred epilogue's immediate rounds and packing),
8192 (every CTA's SM, start and end: the spread of CTA run times), 16384 + (d << 16) (an L2
prefetch of each unit's output boxes d k tiles before its end; d = 0: at its first k tile).
"""
import os
import re
import statistics
import subprocess
import sys


def child(spec):
    import torch

    import torch_tk

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
    from l2_state import l2_flush
    from operands import layout_operands

    shape, _, lay = spec.partition(":")
    lay = lay or "NT"
    M, N, K = (int(x) for x in shape.split("x"))
    a, b = layout_operands(M, N, K, lay)
    for _ in range(3):  # warm: descriptors, attributes, L2 state like a benchmark loop
        torch_tk.gemm(a, b)
    prime = os.environ.get("TK_TRACE_PRIME")  # MxNxK[:LAYOUT] (default: the traced call's layout)
    keep = []  # the prime's output, alive until the traced call has run (so that one writes elsewhere)
    if prime:
        pshape, _, play = prime.partition(":")
        pm, pn, pk = (int(x) for x in pshape.split("x"))
        pa, pb = layout_operands(pm, pn, pk, play or lay)
    state = os.environ.get("TK_TRACE_L2", "warm")
    if state != "warm":  # bench_gemm's --l2 states (l2_state.py)
        flush = l2_flush(state)
        torch.cuda.synchronize()
        flush()
    if prime:  # the kernel's code (not its data) back in L2 / the instruction caches
        keep.append(torch_tk.gemm(pa, pb))
        print("prime plan", torch_tk._C.hopper_dispatch_plan(pm, pn, pk, 0, False))
    torch.cuda.synchronize()
    # Re-read per call in an experiment build; TK_TRACE_EXTRA adds other kXp bits (e.g. 32).
    os.environ["TK_HOPPER_EXPERIMENT"] = str(16 | int(os.environ.get("TK_TRACE_EXTRA", "0")))
    torch_tk.gemm(a, b)
    torch.cuda.synchronize()
    print("plan", torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False))


def summarize(text, units=False):
    rows = {}
    starts = {}
    counts = {}
    ghz = []
    for line in text.splitlines():
        m = re.match(r"tk-trace (\w+) block (\d+) sm-start-ns (\d+) n (\d+) ns (\d+) cycles (\d+)", line)
        if m:
            ghz.append(int(m.group(6)) / max(1, int(m.group(5))))
            starts[int(m.group(2))] = int(m.group(3))
            counts[(m.group(1), int(m.group(2)))] = int(m.group(4))
            continue
        m = re.match(r"tk-trace (\w+) block (\d+) k (\d+): (.*)", line)
        if m:
            key = (m.group(1), int(m.group(2)))
            rows.setdefault(key, {})[int(m.group(3))] = [int(v) for v in m.group(4).split()]
    summarize_spans(text)
    if not starts:
        print("no trace lines (is this a TK_EXPERIMENTS=1 build?)")
        return
    g0 = min(starts.values())
    print(f"SM clock over the traced CTAs: {min(ghz):.2f}-{max(ghz):.2f} GHz")
    print(f"{'block':>5} {'start ns':>8} {'1st full':>8} {'lat med':>8} {'full gap med':>12} {'last full':>9} {'end':>7}")
    for blk in sorted(starts):
        prod = [v for k in sorted(rows.get(("producer", blk), {})) for v in rows[("producer", blk)][k]]
        cons = [v for k in sorted(rows.get(("consumer", blk), {})) for v in rows[("consumer", blk)][k]]
        prod = prod[: counts.get(("producer", blk), 0)] or [0]
        cons = cons[: counts.get(("consumer", blk), 0)] or [0]
        n = min(len(prod), len(cons) - 1)
        lat = [cons[i] - prod[i] for i in range(n)] or [0]
        gaps = [cons[i + 1] - cons[i] for i in range(len(cons) - 2)] or [0]
        print(f"{blk:>5} {starts[blk] - g0:>8} {cons[0]:>8} {statistics.median(lat):>8.0f} "
              f"{statistics.median(gaps):>12.0f} {cons[-2] if len(cons) > 1 else 0:>9} {cons[-1]:>7}")
        if len(gaps) >= 10 and not units:  # spread: a few slow k tiles or a uniformly slower pace
            q = statistics.quantiles(gaps, n=10)
            ql = statistics.quantiles(lat, n=10) if len(lat) >= 10 else [0] * 9
            print(f"      full gap p10 / p90 {q[0]:.0f} / {q[-1]:.0f}, mean {statistics.fmean(gaps):.0f}; "
                  f"issue->full latency p10 / p90 {ql[0]:.0f} / {ql[-1]:.0f}")
            qs = [gaps[i * len(gaps) // 4:(i + 1) * len(gaps) // 4] for i in range(4)]
            print("      full gap mean by quarter of the k loop: " + " / ".join(f"{statistics.fmean(g):.0f}" for g in qs))
        show = None if os.environ.get("TK_TRACE_FULL") else 16  # TK_TRACE_FULL=1: every record
        print(f"      issue: {prod[:show]} ...")
        print(f"      full : {cons[:show]} ...")
        if units:  # cons = [start_0, issued_0, done_0, (stored_0, packed_0,) start_1, ..., after the last epilogue]
            w = {1: 3, 2: 5, 3: 17}[units]  # kXpTraceEpi: 2 records per deferred epilogue; kXpTraceRound: 12 more
            t = cons[: len(cons) - 1]
            main = [t[i + 2] - t[i] for i in range(0, len(t) - 2, w)] or [0]
            drain = [t[i + 2] - t[i + 1] for i in range(0, len(t) - 2, w)] or [0]
            epi = [(t[i + w] if i + w < len(t) else cons[-1]) - t[i + 2] for i in range(0, len(t) - 2, w)] or [0]
            print(f"      units {len(main)}: mainloop {statistics.median(main):.0f} (of which the last group's drain "
                  f"after the next unit's decode {statistics.median(drain):.0f}), epilogue + next unit start "
                  f"{statistics.median(epi):.0f} cycles (medians); epilogues {epi[:8]}")
            if w == 17:  # per round, from the previous record: wait, barrier, fill, fence, barrier, issue
                names = ["wait", "barrier 1", "fill", "fence", "barrier 2", "issue"]
                for rd in range(2):
                    parts = []
                    for j in range(6):
                        a = 3 + 6 * rd + j  # record after phase j of round rd
                        d = [t[i + a] - t[i + a - 1] for i in range(0, len(t) - 16, w)] or [0]
                        parts.append(f"{names[j]} {statistics.median(d):.0f}")
                    print(f"      round {rd} (medians): " + ", ".join(parts))
            if w in (5, 17):
                e = w - 2  # records of the unit's epilogue: [done, ..., stored, packed]
                imm = [t[i + e] - t[i + 2] for i in range(0, len(t) - (w - 1), w)] or [0]
                pack = [t[i + e + 1] - t[i + e] for i in range(0, len(t) - (w - 1), w)] or [0]
                rest = [(t[i + w] if i + w < len(t) else cons[-1]) - t[i + e + 1] for i in range(0, len(t) - (w - 1), w)] or [0]
                print(f"      epilogue parts (medians): immediate rounds {statistics.median(imm):.0f}, pack "
                      f"{statistics.median(pack):.0f}, to the next unit's start {statistics.median(rest):.0f}; "
                      f"immediate {imm[:8]}")


def summarize_spans(text):
    """kXpSpans (TK_TRACE_EXTRA=8192): every CTA's SM, start and end (ns from the first start)."""
    spans = [tuple(int(v) for v in m.groups()) for m in
             re.finditer(r"tk-span block (\d+) sm (\d+) start-ns (\d+) end-ns (\d+)", text)]
    if not spans:
        return
    dur = sorted(e - s for _, _, s, e in spans)
    q = statistics.quantiles(dur, n=10) if len(dur) >= 10 else [dur[0]] * 9
    print(f"CTA spans ({len(spans)} CTAs, ns): start max {max(s for _, _, s, _ in spans)}, end min / median / max "
          f"{min(e for *_, e in spans)} / {statistics.median(e for *_, e in spans):.0f} / {max(e for *_, e in spans)}; "
          f"run time min / p10 / median / p90 / max {dur[0]} / {q[0]:.0f} / {statistics.median(dur):.0f} / "
          f"{q[-1]:.0f} / {dur[-1]}")
    slow = sorted(spans, key=lambda t: t[2] - t[3])[:8]
    print("  slowest (block, sm, run ns): " + ", ".join(f"({b}, {sm}, {e - s})" for b, sm, s, e in slow))
    fast = sorted(spans, key=lambda t: t[3] - t[2])[:4]
    print("  fastest (block, sm, run ns): " + ", ".join(f"({b}, {sm}, {e - s})" for b, sm, s, e in fast))
    if os.environ.get("TK_TRACE_FULL"):
        print("  by block (run ns): " + " ".join(str(e - s) for _, _, s, e in sorted(spans)))


def main(argv):
    if len(argv) > 1 and argv[1] == "--child":
        child(argv[2])
        return 0
    for spec in argv[1:] or ["128x4096x4096:NT"]:
        r = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True, text=True)
        print(f"==== {spec} (rc {r.returncode})")
        if r.returncode:
            print(r.stderr[-2000:])
        print("\n".join(line for line in r.stdout.splitlines() if line.startswith(("plan", "prime plan"))))
        extra = int(os.environ.get("TK_TRACE_EXTRA", "0"))
        summarize(r.stdout, units=(3 if extra & 4096 else 2 if extra & 128 else 1) if extra & 64 else 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
