#!/usr/bin/env python3
"""Summary of an A/B's bench_gemm logs (scripts/ab_knob.sh, scripts/ab_devso.sh): per shape, the
median over rounds of ours in ms and of ours/torch.mm, per variant (the lower middle round when
their number is even, bench_gemm.round_time's rule: one slow round must not move a case); a
variant whose call raised in every round (a "-" row, e.g. a forced tile not built) reads "failed". Logs are OUT/ab_<variant with
every character outside [A-Za-z0-9_] as _>_<round>.log; their result lines start with LABEL.

Usage: python3 scripts/ab_summary.py OUT LABEL VARIANT [VARIANT ...]"""
import glob
import re
import statistics
import sys


def main(out, label, variants):
    rows, failed = {}, {}
    for v in variants:
        tag = re.sub(r"[^A-Za-z0-9_]", "_", v)
        # ab_<tag>_<round>.log exactly: a longer setting's tag may start with this one's.
        for f in glob.glob(f"{out}/ab_{tag}_*.log"):
            if not re.fullmatch(rf"ab_{tag}_\d+\.log", f.split("/")[-1]):
                continue
            for line in open(f):
                p = line.split()
                if p and p[0] == label:
                    by = rows.setdefault(f"{p[1]}:{p[2]}", {})
                    if p[8] == "-" or p[7] == "-":  # the call raised (bench_gemm's note says why)
                        failed.setdefault(f"{p[1]}:{p[2]}", set()).add(v)
                        continue
                    by.setdefault(v, []).append((float(p[8]), float(p[7])))
    for shape, by in rows.items():
        print(shape, " | ".join(cell(v, by.get(v), v in failed.get(shape, ())) for v in variants))


def cell(v, runs, failed):
    """One variant's median ms and ratio, or why there is none (runs: [(ms, ratio)] or None)."""
    if not runs:
        return f"{v}: {'failed' if failed else 'no run'}"
    return (f"{v}: {statistics.median_low(t for t, _ in runs):.4f} ms "
            f"({statistics.median_low(r for _, r in runs):.3f}x)" + (" (some rounds failed)" if failed else ""))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
