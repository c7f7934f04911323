"""Why the SM clock is where it is, per model of a bench_model run.

Run on the GPU machine next to bench_model.py:
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active \
        --format=csv,noheader,nounits -lms 20 > smi.csv &
    python3 benchmarks/bench_model.py --out bm.json; kill %1
    python3 benchmarks/clock_reasons.py smi.csv bm.json
Prints, for the samples inside each model's timed rounds (bench_model's `round_windows_s`), the mean
SM clock and power and the share of samples with each clock-event reason set.

Reason bits: NVML's nvmlClocksEventReasons (nvml.h; nvidia-smi's clocks_event_reasons.active is that
mask in hex): 0x1 GPU idle, 0x2 applications clocks setting, 0x4 SW power cap, 0x8 HW slowdown,
0x10 sync boost, 0x20 SW thermal slowdown, 0x40 HW thermal slowdown, 0x80 HW power brake.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_sampler, also when loaded by path
from gpu_sampler import parse_timestamp  # noqa: E402

REASONS = ((0x1, "idle"), (0x2, "app clocks"), (0x4, "SW power cap"), (0x8, "HW slowdown"), (0x10, "sync boost"),
           (0x20, "SW thermal"), (0x40, "HW thermal"), (0x80, "HW power brake"))


def parse(line):
    """'2026/12/05 05:20:01.123, 1755, 412.3, 0x0000000000000004' -> (epoch s, MHz, W, mask), or None."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 4:
        return None
    try:
        return parse_timestamp(parts[0]), float(parts[1]), float(parts[2]), int(parts[3], 16)
    except ValueError:
        return None


def summarize(samples, windows):
    """{model: {"samples", "sm_mhz", "watts", reason name: share of samples}} for samples inside each
    model's windows [(t0, t1)]."""
    out = {}
    for name, spans in windows.items():
        sel = [s for s in samples if any(t0 <= s[0] <= t1 for t0, t1 in spans)]
        row = {"samples": len(sel), "sm_mhz": None, "watts": None}
        if sel:
            row["sm_mhz"] = sum(s[1] for s in sel) / len(sel)
            row["watts"] = sum(s[2] for s in sel) / len(sel)
        for bit, label in REASONS:
            row[label] = sum(1 for s in sel if s[3] & bit) / len(sel) if sel else None
        out[name] = row
    return out


def main(argv):
    with open(argv[1]) as f:
        samples = [s for s in map(parse, f) if s is not None]
    with open(argv[2]) as f:
        windows = json.load(f)["round_windows_s"]
    res = summarize(samples, windows)
    labels = [label for _, label in REASONS]
    print(f"{'model':<8}{'samples':>8}{'MHz':>7}{'W':>6}  " + "  ".join(labels))
    for name, r in res.items():
        if not r["samples"]:
            print(f"{name:<8}{0:>8}  (no samples inside its rounds)")
            continue
        print(f"{name:<8}{r['samples']:>8}{r['sm_mhz']:>7.0f}{r['watts']:>6.0f}  "
              + "  ".join(f"{r[label]:>{len(label)}.2f}" for label in labels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
