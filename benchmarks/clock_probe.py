"""The SM clock each GEMM leaves the GPU at, read by the GPU itself, ours next to torch.mm.

Why: at the power cap nvidia-smi's clocks.sm reads above the clock kernels get (H200, 2026-11-28:
do_bench's sustained times matched Nsight Compute's 1.35-GHz base-clock times while nvidia-smi
said ~1.5 GHz; benchmarks/NOTES.md), and a single profiled launch runs after a pause, in a
different power state. Here each op runs in blocks of back-to-back calls, alternating with the
other op, and after every block a one-CTA probe kernel spins for `--spin-us` and reads the SM
cycle counter (%clock64) and the global nanosecond timer (%globaltimer) at its start and end
(PTX ISA, special registers): cycles / ns is the SM clock right after that block. The probe runs
for tens of microseconds on one SM, far shorter than the power controller's reaction, so it reads
the state the block left behind; all SMs share the clock.

    python benchmarks/clock_probe.py [--shapes 8192x8192x28672:NT,...] [--seconds 4] [--block 8] [--flush]

Prints per case and op: ms per call (median; CUDA events over each block, or around each call
with --flush), the probed clock (MHz, median and p10..p90) and cycles per call (ms x MHz).
Operands are random bf16. By default no L2 flush between calls (blocks are back to back, as
inside a model); --flush puts triton do_bench's 256 MB memset before every call (bench_gemm.py's
default regime), timing the calls only.
"""
import argparse
import json
import os
import statistics
import sys

import torch

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from operands import layout_operands  # noqa: E402


def clock_mhz(ns, cycles):
    """SM clock in MHz from a probe's (globaltimer ns, clock64 cycles) span; None for an empty span."""
    return cycles / ns * 1e3 if ns > 0 else None


def percentiles(xs):
    """(median, p10, p90) of a non-empty list."""
    s = sorted(xs)
    return statistics.median(s), s[len(s) // 10], s[(len(s) * 9) // 10]


def _probe_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def clock_probe_kernel(out_ptr, spin_ns):
        z = tl.program_id(0)  # (an operand the asm ignores: inline_asm_elementwise needs one)
        t0 = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [z], dtype=tl.int64, is_pure=False, pack=1)
        c0 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [z], dtype=tl.int64, is_pure=False, pack=1)
        t = t0
        while t - t0 < spin_ns:
            t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [z], dtype=tl.int64, is_pure=False, pack=1)
        c1 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [z], dtype=tl.int64, is_pure=False, pack=1)
        tl.store(out_ptr, t - t0)
        tl.store(out_ptr + 1, c1 - c0)

    return clock_probe_kernel


def run_case(shape, lay, seconds, block, spin_ns, probe, flush=None):
    M, N, K = shape
    a, b = layout_operands(M, N, K, lay, generator=torch.Generator(device="cuda").manual_seed(0))
    ops = {"torch": lambda: torch.mm(a, b), "ours": lambda: torch_tk.gemm(a, b)}
    for f in ops.values():  # warm-up (and Triton's compile of the probe)
        f()
    slots = torch.zeros(4096, 2, dtype=torch.int64, device="cuda")
    probe[(1,)](slots[0], spin_ns)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for f in ops.values():
        f()
    e.record()
    e.synchronize()
    per_call = s.elapsed_time(e) / 2  # ms, both ops: sets the number of blocks
    n_blocks = max(4, min(len(slots) // 2, int(seconds * 1e3 / (per_call * block + spin_ns * 1e-6))))
    events, order = [], []
    def timed(n):  # n (start, end) event pairs: one for a whole block, or one per call (flush)
        return [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]

    for i in range(n_blocks):
        name = list(ops)[i % 2]
        if flush is None:
            (s, e), = timed(1)
            s.record()
            for _ in range(block):
                ops[name]()
            e.record()
            events.append([(s, e)])
        else:
            pairs = timed(block)
            for s, e in pairs:
                flush.zero_()
                s.record()
                ops[name]()
                e.record()
            events.append(pairs)
        probe[(1,)](slots[i], spin_ns)
        order.append(name)
    torch.cuda.synchronize()
    spans = slots[:n_blocks].tolist()
    out = {}
    for name in ops:
        idx = [i for i in range(n_blocks) if order[i] == name and i >= 2]  # the first pair warms the power state
        # ms per call: the block's span / calls, or (with flush) the median of its timed calls
        ms = [statistics.median(s.elapsed_time(e) for s, e in events[i]) if flush is not None
              else events[i][0][0].elapsed_time(events[i][0][1]) / block for i in idx]
        mhz = [m for m in (clock_mhz(*spans[i]) for i in idx) if m is not None]
        med_ms, _, _ = percentiles(ms)
        med, p10, p90 = percentiles(mhz)
        out[name] = {"ms": med_ms, "mhz": med, "mhz_p10": p10, "mhz_p90": p90, "blocks": len(idx),
                     "cycles_per_call": med_ms * 1e-3 * med * 1e6}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="8192x8192x28672:NT,8192x4096x14336:NN,8192x8192x8192:NT,8192x2048x2048:NT")
    p.add_argument("--seconds", type=float, default=4.0, help="per case, both ops")
    p.add_argument("--block", type=int, default=8, help="back-to-back calls per block")
    p.add_argument("--spin-us", type=float, default=50.0)
    p.add_argument("--flush", action="store_true", help="a 256 MB memset before every call (do_bench's L2 flush)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("clock_probe: needs a CUDA GPU")
        return 2
    probe = _probe_kernel()
    flush = torch.empty(1 << 26, dtype=torch.int32, device="cuda") if args.flush else None  # 256 MB
    print(f"# {torch.cuda.get_device_name()}; blocks of {args.block} calls alternating, probe {args.spin_us:.0f} us after each"
          + ("; 256 MB memset before every call" if flush is not None else "; no flush"))
    print(f"{'case':<24}{'op':<7}{'ms/call':>9}{'MHz':>7}{'p10..p90':>12}{'Mcycles/call':>14}{'blocks':>8}")
    results = []
    for spec in args.shapes.split(","):
        shape_s, _, lay = spec.partition(":")
        shape = tuple(int(x) for x in shape_s.split("x"))
        r = run_case(shape, lay or "NT", args.seconds, args.block, int(args.spin_us * 1e3), probe, flush)
        for name, v in r.items():
            print(f"{spec:<24}{name:<7}{v['ms']:>9.4f}{v['mhz']:>7.0f}{v['mhz_p10']:>6.0f}..{v['mhz_p90']:<5.0f}"
                  f"{v['cycles_per_call'] * 1e-6:>14.3f}{v['blocks']:>8}")
        print(f"{'':<24}ours/torch: time {r['ours']['ms'] / r['torch']['ms']:.3f}, clock {r['ours']['mhz'] / r['torch']['mhz']:.3f}, "
              f"cycles {r['ours']['cycles_per_call'] / r['torch']['cycles_per_call']:.3f}")
        results.append({"case": spec, **r})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "args": vars(args), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
