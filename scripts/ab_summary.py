#!/usr/bin/env python3
"""Summary of an A/B's bench_gemm logs (scripts/ab_knob.sh, scripts/ab_devso.sh): per shape, the
median over rounds of ours in ms and of ours/torch.mm, per variant (the lower middle round when
their number is even, bench_gemm.round_time's rule: one slow round must not move a case). Logs are OUT/ab_<variant with
every character outside [A-Za-z0-9_] as _>_<round>.log; their result lines start with LABEL.

Usage: python3 scripts/ab_summary.py OUT LABEL VARIANT [VARIANT ...]"""
import glob
import re
import statistics
import sys


def main(out, label, variants):
    rows = {}
    for v in variants:
        tag = re.sub(r"[^A-Za-z0-9_]", "_", v)
        # ab_<tag>_<round>.log exactly: a longer setting's tag may start with this one's.
        for f in glob.glob(f"{out}/ab_{tag}_*.log"):
            if not re.fullmatch(rf"ab_{tag}_\d+\.log", f.split("/")[-1]):
                continue
            for line in open(f):
                p = line.split()
                if p and p[0] == label:
                    rows.setdefault(f"{p[1]}:{p[2]}", {}).setdefault(v, []).append((float(p[8]), float(p[7])))
    for shape, by in rows.items():
        cells = [f"{v}: {statistics.median_low(t for t, _ in by.get(v, [(float('nan'), 0)])):.4f} ms "
                 f"({statistics.median_low(r for _, r in by.get(v, [(0, float('nan'))])):.3f}x)" for v in variants]
        print(shape, " | ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
