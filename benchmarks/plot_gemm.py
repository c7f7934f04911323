#!/usr/bin/env python3
"""Plot a bench_gemm.py JSON: TFLOP/s per case, ours vs cuBLAS (torch.mm) vs Triton when timed.

    python benchmarks/plot_gemm.py benchmarks/results/h100.json [--png out.png]

Writes one bar chart per suite (stacked vertically) into one PNG (default: the JSON's name with
.png). Needs matplotlib (pip install matplotlib); it is not a dependency of torch_tk itself.
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", help="a bench_gemm.py --out file")
    p.add_argument("--png", default=None, help="output path (default: <json>.png)")
    args = p.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_gemm.py: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 2
    data = json.load(open(args.json))
    results = [r for r in data["results"] if "ours_tflops" in r]
    suites = list(dict.fromkeys(r["suite"] for r in results))
    fig, axes = plt.subplots(len(suites), 1, figsize=(max(8, 0.45 * max(
        sum(r["suite"] == s for r in results) for s in suites)), 4.2 * len(suites)), squeeze=False)
    for ax, suite in zip(axes[:, 0], suites):
        rs = [r for r in results if r["suite"] == suite]
        labels = [f"{r['M']}x{r['N']}x{r['K']} {r['layout']}" + ("" if r["dtype"] == "bf16" else f" {r['dtype']}")
                  for r in rs]
        series = [("ours (torch_tk)", "ours_tflops"), ("cuBLAS (torch.mm)", "torch_tflops")]
        if any("triton_tflops" in r for r in rs):
            series.append(("Triton (max-autotune)", "triton_tflops"))
        w = 0.8 / len(series)
        for i, (name, key) in enumerate(series):
            ax.bar([j + (i - (len(series) - 1) / 2) * w for j in range(len(rs))], [r.get(key, 0) for r in rs], w,
                   label=name)
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{suite} — {data['meta']['device']}")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out = args.png or args.json.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
