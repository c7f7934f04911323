#!/usr/bin/env python3
"""Per-kernel GPU times of torch_tk.gemm (and torch.mm) on a few shapes, from torch.profiler:
where the time of a call goes (re-pitch copies, GEMM, split-K reduction).

    python benchmarks/profile_shapes.py [--flush] [--l2 clean] [--between [--between-parts sdpa,gemm,add] [--prime-k K [--prime-fresh]]] [MxNxK[:LAYOUT],...]

--flush runs each call as triton's do_bench times it: a 256 MB `zero_` (the L2 flush), a CUDA
event record, the call. It then also prints the launch gap: microseconds from the end of the
flush kernel to the start of the call's first kernel (mean over the calls), which a programmatic
dependent launch (TK_HOPPER_PDL=1) can shorten.
--l2 clean (implies --flush) follows the memset with a 256 MB read, as bench_gemm.py --l2 clean
(l2_state.py): the memset's dirty lines are written back before the call, not during it. Why:
the skinny suite's mid-M calls (M = 16-256) beat torch.mm after the memset and lose to it after
the read (H100 2026-12-07j, benchmarks/NOTES.md); the kernel times say where.
--between (implies --flush) also runs, after the flush and before each call, the kind of kernels
a transformer step has between its GEMMs: an SDPA forward (bf16, batch 4, 16 heads, 2048 x 128),
a cuBLAS GEMM of another shape (4096 x 4096 x 1024) and an element-wise add. Why: inside
bench_model.py our GEMMs took ~5% more kernel time than after a bare flush while cuBLAS's took
the same (H200 2026-11-28i, benchmarks/NOTES.md): other kernels' code may evict ours from the
SMs' instruction caches, which a flush alone (one small memset kernel) does not.
--between-parts picks a subset of those kernels; --prime-k K then adds, last before each call, a
torch_tk.gemm on the first K columns of A and rows of B: the same kernel (when the plan matches;
the "before:" line says so) brings its code into L2 just before the call, which tells a cold
code fetch (H200 2026-11-28f: ~5 us of a flushed call's epilogue) from other causes.
--prime-fresh runs that prime on operands of its own (same layout, K = PRIME_K), so the call's
first k tile is not warmed along with the code.
"""
import argparse
import collections
import os
import sys

import torch

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from l2_state import l2_flush  # noqa: E402
from operands import layout_operands  # noqa: E402

DEFAULT = "1000x1001x999:NN,4097x4097x4097:NN,128x4096x4096:NT,8192x8192x8192:NT"


def kernels(prof):
    """CUDA kernel events of a profile, in start order: (name, start us, end us)."""
    out = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            out.append((e.name.split("(")[0], e.time_range.start, e.time_range.end))
    return sorted(out, key=lambda k: k[1])


def profile(fn, reps, flush, between=None):
    """Kernel events of `reps` calls of fn, each after `flush()` when given (l2_state.l2_flush) and
    then `between()` when given."""
    ev = torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            if flush is not None:
                flush()
                if between is not None:
                    between()
                ev.record()
            fn()
        torch.cuda.synchronize()
    return kernels(prof)


def group_calls(ks, per_call, pre):
    """Splits kernel events (name, start us, end us; in start order) into calls of `per_call`
    kernels, each after `pre` other kernels (the flush, then the --between ones; 0 for none).
    Returns (microseconds per kernel name, launches per name, launch gaps, calls, microseconds per
    name of the `pre` kernels, spans), the gaps from the end of each call's last preceding kernel to
    the start of its first one, the spans from the start of a call's first kernel to the latest end
    of its kernels (kernels of one call may overlap: a PDL-launched split-K reduction starts with the
    GEMM and waits for it)."""
    period = per_call + pre
    tot, cnt, gaps, pre_tot = collections.defaultdict(float), collections.Counter(), [], collections.defaultdict(float)
    spans = []
    for i in range(0, len(ks) - period + 1, period):
        group = ks[i:i + period]
        call = group[pre:]
        if pre:
            gaps.append(call[0][1] - group[pre - 1][2])
        spans.append(max(t1 for _, _, t1 in call) - call[0][1])
        for name, t0, t1 in group[:pre]:
            pre_tot[name] += t1 - t0
        for name, t0, t1 in call:
            tot[name] += t1 - t0
            cnt[name] += 1
    return tot, cnt, gaps, max(1, len(ks) // period), pre_tot, spans


def report(label, fn, reps, flush, between=None, bench=False):
    per_call = len(profile(fn, 1, None))  # kernels one call launches
    pre = (len(profile(flush, 1, None)) if flush is not None else 0) + (
        len(profile(between, 1, None)) if flush is not None and between else 0)
    tot, cnt, gaps, calls, pre_tot, spans = group_calls(profile(fn, reps, flush, between), per_call, pre)
    spans.sort()
    line = f"{label}: {sum(tot.values()) / calls:.1f} us of kernels per call, span median {spans[len(spans) // 2]:.1f} us"
    if bench:  # the same call as bench_gemm.py times it (do_bench's flush, median), in this process
        import triton.testing
        line += f"; do_bench median {1000 * triton.testing.do_bench(fn, warmup=15, rep=60, return_mode='median'):.1f} us"
    if gaps:
        gaps.sort()
        line += f"; launch gap after the {'kernels between' if between else 'flush'}: mean {sum(gaps) / len(gaps):.2f} us, median {gaps[len(gaps) // 2]:.2f} us"
    print(line)
    for k, v in sorted(tot.items(), key=lambda kv: -kv[1]):
        print(f"    {v / calls:9.1f} us  {cnt[k] // calls} x {k[:90]}")
    # The kernels before each call: if they too run slower next to ours than next to cuBLAS's, the
    # cause is a GPU-wide state (clocks, power), not ours alone.
    for k, v in sorted(pre_tot.items(), key=lambda kv: -kv[1]):
        same = " (the call's kernel)" if k in tot else ""
        print(f"      before: {v / calls:9.1f} us  {k[:90]}{same}")


BETWEEN_PARTS = ("sdpa", "gemm", "add")


def model_kernels(parts=BETWEEN_PARTS):
    """A callable that launches what a transformer step runs between two GEMMs (see --between):
    `parts`, a subset of BETWEEN_PARTS, in that order (the add needs the gemm)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(4, 16, 2048, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    x, w = (torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    r = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16, generator=g)

    def run():
        if "sdpa" in parts:
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        if "gemm" in parts:
            y = x @ w.t()
            if "add" in parts:
                torch.add(y, r)
    return run


def parse_parts(text):
    """`--between-parts` text -> a tuple of BETWEEN_PARTS; ValueError names a bad part."""
    parts = tuple(p for p in text.split(",") if p)
    bad = [p for p in parts if p not in BETWEEN_PARTS]
    if bad or not parts:
        raise ValueError(f"--between-parts: {bad or text!r} not a non-empty subset of {','.join(BETWEEN_PARTS)}")
    if "add" in parts and "gemm" not in parts:
        raise ValueError("--between-parts: 'add' adds to the gemm's output; give 'gemm' too")
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="?", default=DEFAULT, help="comma list MxNxK[:LAYOUT] (layout default NN)")
    ap.add_argument("--flush", action="store_true", help="a 256 MB zero_ + event record before each call")
    ap.add_argument("--l2", choices=("dirty", "clean"), default="dirty",
                    help="the L2 before each call: dirty (with --flush: the memset alone, do_bench's flush) or clean "
                         "(the memset, then a 256 MB read; implies --flush)")
    ap.add_argument("--between", action="store_true",
                    help="implies --flush: then model-like kernels (SDPA, another cuBLAS GEMM, an add) before each call")
    ap.add_argument("--between-parts", default=",".join(BETWEEN_PARTS),
                    help="with --between: which of sdpa,gemm,add to run (default all; e.g. 'sdpa' or 'gemm')")
    ap.add_argument("--prime-k", type=int, default=0,
                    help="with --between: then, last before each call, a torch_tk.gemm of the same operands' first "
                         "PRIME_K columns of A / rows of B (the same kernel when the plan is the same; force it "
                         "with TK_HOPPER_TILE): brings that kernel's code into L2 before the call")
    ap.add_argument("--prime-fresh", action="store_true",
                    help="with --prime-k: the prime on fresh M x PRIME_K / PRIME_K x N operands of the same layout "
                         "instead of slices of the call's, so only code (and not the call's first k tile) is warmed")
    ap.add_argument("--bench", action="store_true",
                    help="also print triton's do_bench median of each call (as bench_gemm.py times it: do_bench's own "
                         "flush only; the --between kernels and --prime-k are not run there)")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    try:
        parts = parse_parts(args.between_parts)
    except ValueError as e:
        ap.error(str(e))
    flushed = args.flush or args.between or args.l2 == "clean"
    flush = l2_flush(args.l2) if flushed else None
    between = model_kernels(parts) if args.between else None
    for item in args.shapes.split(","):
        shape, _, lay = item.partition(":")
        lay = lay or "NN"
        M, N, K = (int(x) for x in shape.split("x"))
        a, b = layout_operands(M, N, K, lay)
        # The dispatcher's plan: this process's TK_HOPPER_* knobs included (a forced TK_HOPPER_TILE too),
        # for this layout's contiguous operands (module.cpp).
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, torch.cuda.current_device(), False, lay.upper())
        print(f"{M}x{N}x{K} {lay}: plan {plan}")
        pre = between
        if between is not None and args.prime_k > 0:
            # --prime-fresh: operands of their own, so the prime warms no line of the call's operands
            # (the slices below put the call's first k tile in L2: its first stage then skips DRAM).
            a_p, b_p = (layout_operands(M, N, args.prime_k, lay) if args.prime_fresh
                        else (a[:, :args.prime_k], b[:args.prime_k, :]))

            def pre():
                between()
                torch_tk.gemm(a_p, b_p)
        report("  tk", lambda: torch_tk.gemm(a, b), args.reps, flush, pre, args.bench)
        report("  torch", lambda: torch.mm(a, b), args.reps, flush, pre, args.bench)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
