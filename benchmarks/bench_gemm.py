#!/usr/bin/env python3
"""Benchmark torch_tk.gemm against torch.mm (cuBLAS) in bf16.

    python benchmarks/bench_gemm.py [--out results.json] [--quick] [--rounds N]

For every (M, N, K) shape and layout (NN: b is a contiguous (K, N) tensor; NT: b is
weight.t() of a contiguous (N, K) weight, the nn.Linear case) both ops get the SAME fresh
random inputs. Timings are interleaved in one process: each round times ours and the
baseline back to back, alternating which goes first, with triton.testing.do_bench
(median; it flushes L2 between calls) or, when triton is missing, a CUDA-event median
with an L2 flush before each call. The reported time of each op is the median over rounds.
Correctness of ours is checked once per shape against torch.mm on the fp32-upcast inputs.
The JSON holds every raw number; a short table is printed last.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import torch

FULL_SHAPES = [
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (8191, 8191, 8191),  # unaligned
    (4000, 4000, 4000),
    (1, 4096, 4096),
    (128, 4096, 4096),
    (4096, 4096, 1000),
    (16384, 4096, 4096),
]
QUICK_SHAPES = [(4096, 4096, 4096), (8191, 8191, 8191), (128, 4096, 4096), (4096, 4096, 1000)]
LAYOUTS = ["NN", "NT"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="write all raw numbers to this JSON file")
    p.add_argument("--quick", action="store_true", help=f"only {len(QUICK_SHAPES)} shapes: {QUICK_SHAPES}")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds per case (default 5)")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warm-up per measurement (ms)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench measuring time per measurement (ms)")
    p.add_argument("--layouts", default=",".join(LAYOUTS), help="comma list of NN,NT (default both)")
    p.add_argument("--shapes", default=None, help="override shapes: 'MxNxK,MxNxK,...'")
    return p.parse_args(argv)


# ----------------------------------------------------------------------------- timing


def make_timer(args):
    try:
        import triton.testing as tt  # noqa: F401

        def bench(fn):
            return float(tt.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median"))

        import triton

        return bench, f"triton.testing.do_bench(median) triton {triton.__version__}"
    except Exception:  # noqa: BLE001 - triton missing or broken: CUDA events
        pass

    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def bench(fn):
        # warm up for ~warmup_ms, estimate the per-call time, then time n calls one by one
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        k = 0
        while time.perf_counter() - t0 < args.warmup_ms / 1e3 or k < 3:
            fn()
            torch.cuda.synchronize()
            k += 1
        est = (time.perf_counter() - t0) / k
        n = max(10, min(1000, int(args.rep_ms / 1e3 / max(est, 1e-6))))
        times = []
        for _ in range(n):
            flush.zero_()  # evict L2 between calls
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)

    return bench, "cuda events (median), L2 flushed before each call"


# ----------------------------------------------------------------------------- one case


def make_inputs(M, N, K, layout, gen):
    a = torch.randn(M, K, device="cuda", dtype=torch.float32, generator=gen).to(torch.bfloat16)
    if layout == "NN":
        b = torch.randn(K, N, device="cuda", dtype=torch.float32, generator=gen).to(torch.bfloat16)
    elif layout == "NT":
        b = torch.randn(N, K, device="cuda", dtype=torch.float32, generator=gen).to(torch.bfloat16).t()
    else:
        raise ValueError(layout)
    return a, b


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    if not torch.isfinite(out).all():
        return math.inf
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def run_case(torch_tk, bench, M, N, K, layout, rounds, gen):
    rec = {"M": M, "N": N, "K": K, "layout": layout, "dtype": "bfloat16"}
    a, b = make_inputs(M, N, K, layout, gen)
    rec["b_strides"] = list(b.stride())

    # correctness of ours, once, against torch.mm on fp32-upcast inputs (true fp32, no TF32)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.cuda.synchronize()
        c0 = dict(torch_tk.kernel_counters())
        r0 = set(torch_tk.fallback_reasons())
        ours = torch_tk.gemm(a, b)
        torch.cuda.synchronize()
        c1 = dict(torch_tk.kernel_counters())
        ref = torch.mm(a.float(), b.float())
        rec["rel_err_vs_fp32"] = rel_err(ours, ref)
        rec["rel_err_torch_vs_fp32"] = rel_err(torch.mm(a, b), ref)
        del ours, ref
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    delta = {k: c1[k] - c0.get(k, 0) for k in c1}
    rec["counters_delta_one_call"] = delta
    rec["hopper_ran"] = delta.get("hopper", 0) >= 1 and delta.get("fallback", 0) == 0
    rec["new_fallback_reasons"] = sorted(set(torch_tk.fallback_reasons()) - r0)

    def f_ours():
        return torch_tk.gemm(a, b)

    def f_torch():
        return torch.mm(a, b)

    ours_ms, torch_ms, order = [], [], []
    for r in range(rounds):
        pair = [("ours", f_ours), ("torch", f_torch)]
        if r % 2:
            pair.reverse()
        order.append([p[0] for p in pair])
        for name, fn in pair:
            t = bench(fn)
            (ours_ms if name == "ours" else torch_ms).append(t)
    flop = 2.0 * M * N * K
    rec["ours_ms_rounds"] = ours_ms
    rec["torch_ms_rounds"] = torch_ms
    rec["round_order"] = order
    rec["ours_ms"] = statistics.median(ours_ms)
    rec["torch_ms"] = statistics.median(torch_ms)
    rec["ours_ms_spread"] = [min(ours_ms), max(ours_ms)]
    rec["torch_ms_spread"] = [min(torch_ms), max(torch_ms)]
    rec["ours_tflops"] = flop / (rec["ours_ms"] * 1e-3) / 1e12
    rec["torch_tflops"] = flop / (rec["torch_ms"] * 1e-3) / 1e12
    rec["ratio_ours_over_torch"] = rec["ours_tflops"] / rec["torch_tflops"]
    return rec


# ----------------------------------------------------------------------------- main


def print_table(results):
    cols = [
        ("shape MxNxK", lambda r: f"{r['M']}x{r['N']}x{r['K']}"),
        ("lay", lambda r: r["layout"]),
        ("ours ms", lambda r: f"{r['ours_ms']:.4f}" if "ours_ms" in r else "-"),
        ("torch ms", lambda r: f"{r['torch_ms']:.4f}" if "torch_ms" in r else "-"),
        ("ours TF/s", lambda r: f"{r['ours_tflops']:.1f}" if "ours_tflops" in r else "-"),
        ("torch TF/s", lambda r: f"{r['torch_tflops']:.1f}" if "torch_tflops" in r else "-"),
        ("ours/torch", lambda r: f"{r['ratio_ours_over_torch']:.3f}" if "ratio_ours_over_torch" in r else "-"),
        ("rel err", lambda r: f"{r['rel_err_vs_fp32']:.2e}" if "rel_err_vs_fp32" in r else "-"),
        ("hopper", lambda r: ("yes" if r.get("hopper_ran") else "NO") if "hopper_ran" in r else "-"),
        ("note", lambda r: r.get("error", "")[:60]),
    ]
    rows = [[name for name, _ in cols]] + [[f(r) for _, f in cols] for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(cols))]
    for i, row in enumerate(rows):
        print("  ".join(cell.rjust(w) if j not in (0, 1, 9) else cell.ljust(w)
                        for j, (cell, w) in enumerate(zip(row, widths))).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_gemm.py: no CUDA device is available (torch.cuda.is_available() is False); "
              "this benchmark needs an NVIDIA GPU (the Hopper kernel needs sm_90).", file=sys.stderr)
        return 2

    import torch_tk

    if args.shapes:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes.split(",")]
    else:
        shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    layouts = [s.strip().upper() for s in args.layouts.split(",") if s.strip()]

    bench, timer_desc = make_timer(args)
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    meta = {
        "device": torch.cuda.get_device_name(dev),
        "capability": list(torch.cuda.get_device_capability(dev)),
        "sm_count": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "torch_tk": getattr(torch_tk, "__version__", None),
        "hopper_available": bool(torch_tk.hopper_available()),
        "timer": timer_desc,
        "rounds": args.rounds,
        "warmup_ms": args.warmup_ms,
        "rep_ms": args.rep_ms,
        "quick": args.quick,
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    print(f"# {meta['device']} (sm_{meta['capability'][0]}{meta['capability'][1]}, {meta['sm_count']} SMs), "
          f"torch {meta['torch']}, CUDA {meta['cuda']}, hopper_available={meta['hopper_available']}")
    print(f"# timer: {timer_desc}; {args.rounds} interleaved rounds per case")
    if not meta["hopper_available"]:
        print("# WARNING: the Hopper kernel is not available here: 'ours' is the fallback path", file=sys.stderr)

    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    torch_tk.reset_kernel_counters()
    results = []
    t_start = time.time()
    for (M, N, K) in shapes:
        for layout in layouts:
            try:
                rec = run_case(torch_tk, bench, M, N, K, layout, args.rounds, gen)
            except Exception as e:  # noqa: BLE001 - record and go on
                rec = {"M": M, "N": N, "K": K, "layout": layout, "error": f"{type(e).__name__}: {e}"}
            results.append(rec)
            if "error" in rec:
                print(f"{M}x{N}x{K} {layout}: ERROR {rec['error']}", flush=True)
            else:
                print(f"{M}x{N}x{K} {layout}: ours {rec['ours_tflops']:.1f} TF/s ({rec['ours_ms']:.4f} ms), "
                      f"torch {rec['torch_tflops']:.1f} TF/s ({rec['torch_ms']:.4f} ms), "
                      f"ratio {rec['ratio_ours_over_torch']:.3f}, rel err {rec['rel_err_vs_fp32']:.2e}, "
                      f"hopper {'yes' if rec['hopper_ran'] else 'NO'}", flush=True)
            torch.cuda.empty_cache()
    meta["seconds"] = time.time() - t_start
    meta["kernel_counters_total"] = dict(torch_tk.kernel_counters())
    meta["fallback_reasons"] = list(torch_tk.fallback_reasons())

    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)
        print(f"# wrote {args.out}")
    print()
    print_table(results)
    ok = all("error" not in r for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
