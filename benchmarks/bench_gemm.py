#!/usr/bin/env python3
"""Benchmark torch_tk.gemm against torch.mm (cuBLAS), and optionally Triton, in bf16/fp16.

    python benchmarks/bench_gemm.py --suite all [--out results.json] [--md table.md] [--triton]

Suites (issue 5; M x N x K, out = A(MxK) @ B(KxN)):
  large      the LLM/training shapes, in the layouts training uses: NT (forward, x @ W^T),
             NN (dX = dY @ W), TN (dW = dY^T @ X)
  unaligned  any of M, N, K odd / not a multiple of 8 (NN and NT)
  skinny     M in {1, 8, 16, 64, 128, 256} x (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336),
             (8192, 8192)}, NT (decode: x @ W^T); also reports the HBM roofline fraction
             (A, B and C bytes once over the measured device-to-device copy bandwidth)
  quick      a few of each
  tails      (not in all) token counts that are not a multiple of the tile, NT: M in {96, 129, 192,
             200, 320} x (N, K) in {(4096, 4096), (8192, 8192)}: their last tile's operand boxes
             (NOTES.md, tail boxes)
  sectors    (not in all) 16-B-aligned pitches that split 32-B sectors (K = 1000, 2040, 4104), NT and
             NN: the 2-CTA clustered plans for them (NOTES.md, 2026-11-27)
  model      (not in all) bench_model.py's linears: forward (NT), dX (NN), dW (TN)
Both ops get the SAME fresh random inputs. Timings are interleaved in one process: each round
times ours and the baseline back to back, alternating which goes first, with
triton.testing.do_bench (median; it flushes L2 between calls) or, when triton is missing, a
CUDA-event median with an L2 flush before each call. The reported time of each op is the median
over rounds (`round_time`). Correctness of ours is checked once per case against torch.mm on
fp32-upcast inputs.
While each op is timed, benchmarks/gpu_sampler.py samples the GPU's SM clock, power and temperature
(nvidia-smi, every 20 ms); the JSON keeps their means per case and op (ours_sm_mhz, torch_sm_mhz, ...;
None without nvidia-smi) and the table shows the clocks: at a power cap they move the ratios.
--triton also times torch.compile(mode="max-autotune-no-cudagraphs") of the same matmul with
Inductor's GEMM backends limited to its Triton templates (max_autotune_gemm_backends="TRITON": with
the default "ATEN,TRITON" the column would be cuBLAS whenever cuBLAS wins the autotuning), compiled
afresh per case (one compiled function across cases would hit dynamo's recompile limit after 8
shapes and silently run eager); its autotuning happens before timing, ~10-60 s per case, so it is
opt-in. The JSON holds every raw number;
a table is printed last (and written as markdown with --md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time

import torch

LLM = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (8192, 6144, 4096), (8192, 4096, 4096),
       (8192, 28672, 4096), (8192, 4096, 14336), (8192, 10240, 8192), (8192, 57344, 8192), (8192, 8192, 28672)]
SUITES = {
    "large": [(s, lay) for s in LLM for lay in ("NT", "NN", "TN")],
    "unaligned": [(s, lay) for s in [(8191, 8191, 8191), (4095, 4095, 4095), (8192, 8192, 8191), (4097, 4097, 4097),
                                     (1000, 1001, 999)] for lay in ("NN", "NT")],
    "skinny": [((m, n, k), "NT") for m in (1, 8, 16, 64, 128, 256)
               for (n, k) in ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192))],
    "quick": [((4096, 4096, 4096), "NT"), ((8192, 8192, 8192), "NN"), ((8192, 28672, 4096), "TN"),
              ((8191, 8191, 8191), "NN"), ((1, 4096, 4096), "NT"), ((128, 14336, 4096), "NT")],
    "tails": [((m, n, k), "NT") for m in (96, 129, 192, 200, 320) for (n, k) in ((4096, 4096), (8192, 8192))],
    "sectors": [(s, lay) for s in [(1000, 1000, 1000), (1024, 1024, 2040), (2048, 512, 2040), (4096, 4096, 4104),
                                   (8192, 4096, 4104)] for lay in ("NT", "NN")],
    # bench_model.py's linears (8192 tokens, hidden 2048, intermediate 5632): forward, dX, dW
    "model": [((8192, n, k), "NT") for (n, k) in ((2048, 2048), (5632, 2048), (2048, 5632))]
             + [((8192, n, k), "NN") for (n, k) in ((2048, 2048), (2048, 5632), (5632, 2048))]
             + [((m, n, 8192), "TN") for (m, n) in ((2048, 2048), (5632, 2048), (2048, 5632))],
}
NOT_IN_ALL = ("quick", "tails", "sectors", "model")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default="all", help="comma list of " + ",".join(SUITES) + " or all (default)")
    p.add_argument("--shapes", default=None, help="instead of suites: 'MxNxK,...' in --layouts")
    p.add_argument("--layouts", default=None,
                   help="layouts for --shapes (comma list of NT,NN,TN,TT; default NT); with suites, keep only these")
    p.add_argument("--dtype", default="bf16", help="comma list of bf16,fp16 (default bf16)")
    p.add_argument("--out", default=None, help="write all raw numbers to this JSON file")
    p.add_argument("--md", default=None, help="write the table as markdown to this file")
    p.add_argument("--triton", action="store_true", help="also time torch.compile max-autotune (Triton) GEMMs")
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds per case (default 3)")
    p.add_argument("--warmup-ms", type=float, default=15.0, help="do_bench warm-up per measurement (ms)")
    p.add_argument("--rep-ms", type=float, default=60.0, help="do_bench measuring time per measurement (ms)")
    p.add_argument("--min-calls", type=int, default=20,
                   help="at least this many timed calls (and a quarter as many warm-up calls) per measurement: long kernels "
                        "(8192x57344x8192: 11 ms) otherwise get ~5 calls, too few to ride out the clock "
                        "changes of a power-capped GPU (default 20)")
    p.add_argument("--l2", default=os.environ.get("TK_BENCH_L2", "dirty"),
                   help="dirty or clean: the L2 state before each timed call (default: $TK_BENCH_L2, else dirty, which the A/B "
                        "scripts pass on): dirty (triton do_bench's 256 MB memset, "
                        "which leaves the L2 full of dirty lines that the GEMM's misses must write back) or "
                        "clean (the same memset, then a 256 MB read, so the GEMM's misses evict clean lines: "
                        "closer to a decode step, whose earlier kernels mostly read), or warm (no flush: the operands "
                        "stay in the L2 from the previous call, as a layer's activations do after the kernel that wrote them)")
    args = p.parse_args(argv)
    if args.l2 not in ("dirty", "clean", "warm"):  # checked here, not by choices=: the default comes from the environment
        p.error(f"--l2 / TK_BENCH_L2: {args.l2!r} is not dirty, clean or warm")
    if args.layouts is not None:  # normalised once; a typo would otherwise select no case at all
        args.layouts = [s.strip().upper() for s in args.layouts.split(",") if s.strip()]
        bad = [s for s in args.layouts if s not in ("NT", "NN", "TN", "TT")]
        if bad or not args.layouts:
            p.error(f"--layouts: {bad or args.layouts!r} not a comma list of NT, NN, TN, TT")
    return args


# ----------------------------------------------------------------------------- timing


def make_timer(args):
    if args.l2 == "clean":
        return clean_l2_timer(args)
    if args.l2 == "warm":
        return warm_timer(args)
    try:
        import triton.testing as tt  # noqa: F401

        def bench(fn):
            # do_bench sizes its loops from rep/warmup (ms) over an estimate of one call; stretch both
            # so that long kernels still get --min-calls timed calls.
            fn()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            est = s.elapsed_time(e)
            rep = max(args.rep_ms, args.min_calls * est)
            warmup = max(args.warmup_ms, args.min_calls / 4 * est)
            return float(tt.do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))

        import triton

        return bench, f"triton.testing.do_bench(median, >= {args.min_calls} calls) triton {triton.__version__}"
    except Exception:  # noqa: BLE001 - triton missing or broken: CUDA events
        pass

    return dirty_l2_timer(args)


def _l2_flush(state):
    """l2_state.l2_flush, imported from this file's folder (also when loaded by path)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from l2_state import l2_flush

    return l2_flush(state)


def dirty_l2_timer(args):
    """A 256 MB memset before each call, as triton's do_bench (its dirty lines stay in the L2)."""
    return events_timer(args, _l2_flush("dirty"), "cuda events (median), L2 flushed before each call")


def clean_l2_timer(args):
    """The same memset, then a 256 MB read: the memset's dirty lines are evicted outside the timed
    window (l2_state.py)."""
    return events_timer(args, _l2_flush("clean"), "cuda events (median), L2 flushed clean before each call "
                                                  "(256 MB memset, then a 256 MB read)")


def warm_up(args, fn, sync_each):
    """Calls fn for ~args.warmup_ms (at least 3 times; a host sync after each when sync_each, else
    once at the end) and returns how many calls to time: ~args.rep_ms worth, args.min_calls..1000."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < args.warmup_ms / 1e3 or k < 3:
        fn()
        if sync_each:
            torch.cuda.synchronize()
        k += 1
    torch.cuda.synchronize()
    est = (time.perf_counter() - t0) / k
    return max(args.min_calls, min(1000, int(args.rep_ms / 1e3 / max(est, 1e-6))))


def warm_timer(args):
    """Back-to-back calls, each between two CUDA events, no flush and no host sync in between: the
    operands stay in the L2 from the previous call and the host's launch work overlaps the GPU's
    (as in a model's step, where a GEMM's input was just written by the kernel before it)."""

    def bench(fn):
        n = warm_up(args, fn, sync_each=False)
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for s, e in ev:
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in ev)

    return bench, "cuda events (median), back-to-back calls, no flush (operands warm in the L2)"


def events_timer(args, flush, desc):
    """Per-call CUDA events with flush() (evicting the L2) before each call; median."""

    def bench(fn):
        n = warm_up(args, fn, sync_each=True)  # then time n calls one by one
        times = []
        for _ in range(n):
            flush()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)

    return bench, desc


# ----------------------------------------------------------------------------- one case


def make_inputs(M, N, K, layout, dtype, gen):
    """layout[0]: A row-major (N) or column-major (T); layout[1]: B row-major K x N (N) or the
    transpose of a row-major N x K weight (T, the nn.Linear case)."""

    def randn(r, c):
        return torch.randn(r, c, device="cuda", dtype=torch.float32, generator=gen).to(dtype)

    a = randn(M, K) if layout[0] == "N" else randn(K, M).t()
    b = randn(K, N) if layout[1] == "N" else randn(N, K).t()
    return a, b


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    if not torch.isfinite(out).all():
        return math.inf
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def copy_bandwidth(bench):
    """Device-to-device copy bandwidth in bytes/s (read + write) over 1 GiB buffers."""
    src = torch.randn(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / (t * 1e-3)


def triton_mm():
    """A fresh torch.compile'd mm (Triton templates only, see the module docstring) for one case."""
    import torch._dynamo
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()  # each case compiles its own graph: no recompile limit, no eager fallback
    inductor_config.max_autotune_gemm_backends = "TRITON"
    return torch.compile(lambda x, y: torch.mm(x, y), mode="max-autotune-no-cudagraphs", dynamic=False)


def round_time(ts):
    """An op's time over its rounds (ms), the same rule for every op: the median, the lower of the two
    middle rounds when their number is even (statistics.median would average them: with 2 rounds one
    torch.mm round of 169 us against 34 us made 1000x1001x999 NT read 6.1x, H100 2026-12-06)."""
    return statistics.median_low(ts)


def run_case(torch_tk, bench, suite, M, N, K, layout, dtype_name, rounds, gen, bw, with_triton, sampler=None, key=""):
    dtype = DTYPES[dtype_name]
    rec = {"suite": suite, "M": M, "N": N, "K": K, "layout": layout, "dtype": dtype_name}
    a, b = make_inputs(M, N, K, layout, dtype, gen)
    rec["a_strides"], rec["b_strides"] = list(a.stride()), list(b.stride())

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
    try:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        # with this process's TK_HOPPER_* knobs, for this layout's contiguous operands
        rec["plan"] = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, layout.upper())
        rec["skinny_plan"] = torch_tk._C.hopper_skinny_plan(M, N, K, a.stride(1) == 1, b.stride(0) == 1, sms)
    except Exception:  # noqa: BLE001 - CPU-only build
        pass

    fns = {"ours": lambda: torch_tk.gemm(a, b), "torch": lambda: torch.mm(a, b)}
    if with_triton:
        try:
            tri = triton_mm()
            tri(a, b)  # autotune now, not while timing
            fns["triton"] = lambda: tri(a, b)
        except Exception as e:  # noqa: BLE001 - record and go on
            rec["triton_error"] = f"{type(e).__name__}: {e}"[:200]
    times = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for name in order:
            with sampler.window(f"{key}:{name}") if sampler else contextlib.nullcontext():
                times[name].append(bench(fns[name]))
    flop = 2.0 * M * N * K
    for name, ts in times.items():
        rec[f"{name}_ms_rounds"] = ts
        rec[f"{name}_ms"] = round_time(ts)
        rec[f"{name}_tflops"] = flop / (rec[f"{name}_ms"] * 1e-3) / 1e12
    rec["ratio_ours_over_torch"] = rec["torch_ms"] / rec["ours_ms"]
    if "triton_ms" in rec:
        rec["ratio_ours_over_triton"] = rec["triton_ms"] / rec["ours_ms"]
    if bw:
        el = torch.tensor([], dtype=dtype).element_size()
        t_roof = el * (M * K + K * N + M * N) / bw
        rec["roofline_ms"] = t_roof * 1e3
        rec["ours_roofline_frac"] = t_roof / (rec["ours_ms"] * 1e-3)
        rec["torch_roofline_frac"] = t_roof / (rec["torch_ms"] * 1e-3)
    return rec


# ----------------------------------------------------------------------------- main

def _plan_text(r):
    if r.get("counters_delta_one_call", {}).get("hopper_skinny", 0) >= 1 and "skinny_plan" in r:
        return f"skinny rows{r['skinny_plan']['rows']} tn{r['skinny_plan']['tn']}"
    if "plan" not in r:
        return "-"
    p = r["plan"]
    extra = (" c2" if p["cluster"] == 2 else "") + (" sk" if p.get("sk_tiles") else "") + \
        (" fused" if p.get("fused_split") else "") + (" wg128" if p.get("wg_rows", 64) == 128 else "") + \
        (" ring" if p.get("ring_staging") else "")
    bm = "" if p.get("bm", 128) == 128 else f"bm{p['bm']} "
    return ("swapAB " if p["swap_ab"] else "") + bm + f"bn{p['bn']} s{p['splits']}" + extra


COLS = [
    ("suite", lambda r: r["suite"]),
    ("shape MxNxK", lambda r: f"{r['M']}x{r['N']}x{r['K']}"),
    ("lay", lambda r: r["layout"]),
    ("dtype", lambda r: r["dtype"]),
    ("ours TF/s", lambda r: f"{r['ours_tflops']:.1f}" if "ours_tflops" in r else "-"),
    ("torch TF/s", lambda r: f"{r['torch_tflops']:.1f}" if "torch_tflops" in r else "-"),
    ("triton TF/s", lambda r: f"{r['triton_tflops']:.1f}" if "triton_tflops" in r else "-"),
    ("ours/torch", lambda r: f"{r['ratio_ours_over_torch']:.3f}" if "ratio_ours_over_torch" in r else "-"),
    ("ours ms", lambda r: f"{r['ours_ms']:.4f}" if "ours_ms" in r else "-"),
    # after `ours ms`: scripts/ab_*.sh read the printed columns by position (ratio 8th, ms 9th)
    ("ours/triton", lambda r: f"{r['ratio_ours_over_triton']:.3f}" if "ratio_ours_over_triton" in r else "-"),
    ("roofline", lambda r: f"{100 * r['ours_roofline_frac']:.0f}% (torch {100 * r['torch_roofline_frac']:.0f}%)"
     if "ours_roofline_frac" in r else "-"),
    ("rel err", lambda r: f"{r['rel_err_vs_fp32']:.1e}" if "rel_err_vs_fp32" in r else "-"),
    ("SM MHz ours/torch", lambda r: f"{r['ours_sm_mhz']:.0f}/{r['torch_sm_mhz']:.0f}"
     if r.get("ours_sm_mhz") is not None and r.get("torch_sm_mhz") is not None else "-"),
    ("plan", lambda r: _plan_text(r)),
    ("note", lambda r: ("" if r.get("hopper_ran", True) else "NOT HOPPER ") + r.get("error", "")[:60]),
]


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def geomeans(results):
    out = {}
    for suite in sorted({r["suite"] for r in results}):
        rs = [r["ratio_ours_over_torch"] for r in results if r["suite"] == suite and "ratio_ours_over_torch" in r]
        if rs:
            out[suite] = {"geomean": _geomean(rs), "min": min(rs), "n": len(rs)}
        rt = [r["ratio_ours_over_triton"] for r in results if r["suite"] == suite and "ratio_ours_over_triton" in r]
        if rt and suite in out:
            out[suite]["triton_geomean"] = _geomean(rt)
            out[suite]["triton_min"], out[suite]["triton_n"] = min(rt), len(rt)
    return out


def print_table(results, md=None):
    rows = [[name for name, _ in COLS]] + [[f(r) for _, f in COLS] for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLS))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    gm = geomeans(results)
    for suite, g in gm.items():
        print(f"{suite}: geomean ours/torch {g['geomean']:.3f}, worst {g['min']:.3f} over {g['n']} cases")
        if "triton_geomean" in g:
            print(f"{suite}: geomean ours/triton {g['triton_geomean']:.3f}, worst {g['triton_min']:.3f} "
                  f"over {g['triton_n']} cases")
    if md:
        with open(md, "w") as f:
            f.write("| " + " | ".join(rows[0]) + " |\n|" + "---|" * len(COLS) + "\n")
            for row in rows[1:]:
                f.write("| " + " | ".join(row) + " |\n")
            f.write("\n")
            for suite, g in gm.items():
                f.write(f"- {suite}: geomean ours/torch **{g['geomean']:.3f}**, worst {g['min']:.3f} ({g['n']} cases)\n")
                if "triton_geomean" in g:
                    f.write(f"- {suite}: geomean ours/triton **{g['triton_geomean']:.3f}**, worst {g['triton_min']:.3f} "
                            f"({g['triton_n']} cases)\n")


def make_sampler(props, dev):
    """gpu_sampler.sampler_for_device, imported from this file's folder (also when bench_gemm is
    loaded by path, as the tests do)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_sampler import sampler_for_device

    return sampler_for_device(props, dev)


def add_clocks(results, sampler):
    """Per case and op, the mean SM clock / power / temperature while it was timed (None if no sample)."""
    time.sleep(0.1)  # the last samples
    sampler.close()
    for i, rec in enumerate(results):
        for name in ("ours", "torch", "triton"):
            if f"{name}_ms" in rec:
                m = sampler.means(f"{i}:{name}")
                rec[f"{name}_sm_mhz"], rec[f"{name}_watts"] = m["sm_mhz"], m["watts"]
                rec[f"{name}_temp_c"], rec[f"{name}_clock_samples"] = m["temp_c"], m["samples"]


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_gemm.py: no CUDA device is available (torch.cuda.is_available() is False); "
              "this benchmark needs an NVIDIA GPU (the Hopper kernel needs sm_90).", file=sys.stderr)
        return 2

    import torch_tk

    if args.shapes:
        lays = args.layouts or ["NT"]
        cases = [("custom", tuple(int(x) for x in sh.lower().split("x")), lay)
                 for sh in args.shapes.split(",") for lay in lays]
    else:
        names = []  # "all" may stand in a comma list (e.g. all,tails)
        for n in (x.strip() for x in args.suite.split(",") if x.strip()):
            names += [m for m in SUITES if m not in NOT_IN_ALL] if n == "all" else [n]
        for n in names:
            if n not in SUITES:
                print(f"bench_gemm.py: unknown suite {n!r}; choose from {', '.join(SUITES)} or all", file=sys.stderr)
                return 2
        cases = [(n, shape, lay) for n in names for (shape, lay) in SUITES[n]
                 if args.layouts is None or lay in args.layouts]
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    for d in dtypes:
        if d not in DTYPES:
            print(f"bench_gemm.py: unknown --dtype {d!r}; choose from {', '.join(DTYPES)}", file=sys.stderr)
            return 2

    bench, timer_desc = make_timer(args)
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    bw = copy_bandwidth(bench)
    meta = {
        "device": torch.cuda.get_device_name(dev),
        "capability": list(torch.cuda.get_device_capability(dev)),
        "sm_count": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hopper_available": bool(torch_tk.hopper_available()),
        "timer": timer_desc,
        "l2": args.l2,
        "rounds": args.rounds,
        "warmup_ms": args.warmup_ms,
        "rep_ms": args.rep_ms,
        "min_calls": args.min_calls,
        "copy_bandwidth_GBps": bw / 1e9,
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    print(f"# {meta['device']} (sm_{meta['capability'][0]}{meta['capability'][1]}, {meta['sm_count']} SMs), "
          f"torch {meta['torch']}, CUDA {meta['cuda']}, hopper_available={meta['hopper_available']}, "
          f"copy bandwidth {bw / 1e9:.0f} GB/s")
    print(f"# timer: {timer_desc}; {args.rounds} interleaved rounds per case")
    if not meta["hopper_available"]:
        print("# WARNING: the Hopper kernel is not available here: 'ours' is the fallback path", file=sys.stderr)

    sampler = make_sampler(props, dev)
    meta["gpu_sampler"] = "nvidia-smi -lms 20 (benchmarks/gpu_sampler.py)" if sampler.enabled else "off"
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    torch_tk.reset_kernel_counters()
    results = []
    t_start = time.time()
    for dname in dtypes:
        for suite, (M, N, K), layout in cases:
            try:
                rec = run_case(torch_tk, bench, suite, M, N, K, layout, dname, args.rounds, gen,
                               bw if suite == "skinny" else None, args.triton, sampler, str(len(results)))
            except Exception as e:  # noqa: BLE001 - record and go on
                rec = {"suite": suite, "M": M, "N": N, "K": K, "layout": layout, "dtype": dname,
                       "error": f"{type(e).__name__}: {e}"}
            results.append(rec)
            line = " ".join(f"{name}={f(rec)}" for name, f in COLS[1:])
            print(line, flush=True)
            torch.cuda.empty_cache()
    meta["seconds"] = time.time() - t_start
    add_clocks(results, sampler)
    meta["kernel_counters_total"] = dict(torch_tk.kernel_counters())
    meta["fallback_reasons"] = list(torch_tk.fallback_reasons())
    meta["geomeans"] = geomeans(results)

    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)
        print(f"# wrote {args.out}")
    print()
    print_table(results, args.md)
    ok = all("error" not in r for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
