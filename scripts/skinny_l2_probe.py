"""Skinny shapes under both L2 states, default plan against forced tiles, next to F.linear.

Needs a TK_EXPERIMENTS=1 build (knobs re-read per call). For M in PROBE_M (default 8,16,64,128,256)
x the suite's weights (or PROBE_NK="NxK,..."): the default plan and a few TK_HOPPER_TILE settings
(swap:bm:bn:splits:cluster, or PROBE_TILES="t1,t2,..." for every M; invalid ones skipped), each checked against a float64 reference, timed
per call (CUDA events, median of 50, 3 interleaved rounds) after a 256 MB memset ("dirty": the L2
left full of dirty lines, as triton's do_bench leaves it) or the memset and a 256 MB read ("clean").
Prints shape, L2 state, variant, ours us, F.linear us, F.linear / ours. Results 2026-11-26d:
benchmarks/results/h200_2026-11-26d_l2.txt. Usage: python3 scripts/skinny_l2_probe.py
"""
import argparse
import os
import pathlib
import statistics
import sys

import torch
import torch_tk

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_gemm  # noqa: E402  (its CUDA-event timers: the two L2 states)

# 50 timed calls per measurement (min_calls; rep_ms 0), a short warm-up.
_TIMING = argparse.Namespace(warmup_ms=5.0, rep_ms=0.0, min_calls=50)
_BENCH = {"dirty": bench_gemm.dirty_l2_timer(_TIMING)[0], "clean": bench_gemm.clean_l2_timer(_TIMING)[0]}


def per_call(fn, mode):
    return _BENCH[mode](fn) * 1e3  # us


def cands(M):
    if os.environ.get("PROBE_TILES"):  # comma list of TK_HOPPER_TILE settings for every M
        return os.environ["PROBE_TILES"].split(",")
    if M <= 16:
        return ["1:128:64:1:1", "1:128:64:2:1", "1:128:64:4:1"]
    if M <= 64:
        return ["1:64:64:1:1", "1:128:64:1:1", "1:128:64:2:1", "1:128:64:4:1"]
    if M <= 128:
        return ["0:64:64:1:2", "1:128:128:1:1", "1:128:128:2:1", "1:128:128:4:1", "1:64:128:1:1"]
    return ["0:128:128:1:1", "0:128:128:2:1", "1:128:256:1:1", "1:128:256:2:1", "1:128:128:2:1"]


g = torch.Generator(device="cuda").manual_seed(0)
Ms = [int(x) for x in os.environ.get("PROBE_M", "8,16,64,128,256").split(",")]
NKs = [(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)] if "PROBE_NK" not in os.environ else [tuple(int(y) for y in x.split("x")) for x in os.environ["PROBE_NK"].split(",")]
print("shape mode variant ours_us torch_us torch/ours plan")
for M in Ms:
    for N, K in NKs:
        a = torch.randn(M, K, device="cuda", generator=g).bfloat16()
        w = torch.randn(N, K, device="cuda", generator=g).bfloat16()
        ref = (a.double() @ w.double().t())
        variants = ["default"] + cands(M)
        for mode in ("dirty", "clean"):
            res = {v: [] for v in variants}
            tt = []
            plans = {}
            for r in range(3):
                for v in variants:
                    if v == "default":
                        os.environ.pop("TK_HOPPER_TILE", None)
                    else:
                        os.environ["TK_HOPPER_TILE"] = v
                    f = lambda: torch_tk.linear(a, w)
                    try:
                        out = f()
                    except RuntimeError:
                        res[v].append(float("nan")); continue
                    err = ((out.double() - ref).norm() / ref.norm()).item()
                    assert err < 2e-2, (M, N, K, v, err)
                    plans[v] = str(torch_tk._C.hopper_dispatch_plan(M, N, K, 0)) if M > 8 or v != "default" else "skinny?"
                    res[v].append(per_call(f, mode))
                os.environ.pop("TK_HOPPER_TILE", None)
                tt.append(per_call(lambda: torch.nn.functional.linear(a, w), mode))
            t = statistics.median(tt)
            for v in variants:
                if any(x != x for x in res[v]):
                    continue
                o = statistics.median(res[v])
                print(f"{M}x{N}x{K} {mode} {v} {o:.1f} {t:.1f} {t / o:.3f}" + (f" {plans[v][:80]}" if v == "default" else ""))
