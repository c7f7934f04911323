#!/usr/bin/env python3
"""Per-kernel warp-stall reasons and the executed stretches of code from Nsight Compute's source
page: where a kernel waits on instruction fetches (`stall_no_inst`) and how its executed
instructions are spread over its binary.

    python3 scripts/ncu_fetch_stalls.py SOURCE.csv[.gz] [...]

SOURCE.csv: `ncu --import REPORT --page source --print-source sass --csv` of a report taken with
`--section WarpStateStats --section SourceCounters` (scripts/ncu_profile.sh, NCU_SOURCE=1, writes
one per cache state). Each kernel: its instruction count, how many ran, the stall reasons' shares
of its warp samples, then one line per stretch of consecutive executed instructions (offset from
the kernel's first instruction, length, samples, `stall_no_inst` samples). Column names are ncu's
(CUDA 13.0); a stretch is a run of instructions with a nonzero "Instructions Executed".
"""
import csv
import gzip
import sys


def _num(x):
    try:
        return float(x.replace(",", ""))
    except (AttributeError, ValueError):
        return 0.0


def load(path):
    """{kernel name: [row dicts]} from one source-page CSV (a "Kernel Name" line starts each kernel)."""
    kernels, cur, hdr = {}, None, None
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for r in csv.reader(f):
            if r and r[0] == "Kernel Name":
                cur, hdr = r[1], None
                kernels[cur] = []
            elif r and r[0] == "Address":
                hdr = r
            elif hdr and r and cur is not None:
                kernels[cur].append(dict(zip(hdr, r)))
    return kernels


def stretches(rows):
    """[(first, last)] index ranges of consecutive executed instructions."""
    out, start = [], None
    for i, x in enumerate(rows + [{}]):
        ran = _num(x.get("Instructions Executed", "0")) > 0
        if ran and start is None:
            start = i
        elif not ran and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def report(path):
    for name, rows in load(path).items():
        if not rows:
            continue
        reasons = [h for h in rows[0] if h.startswith("stall_") and "Not Issued" not in h]
        samples = sum(_num(x["Warp Stall Sampling (All Samples)"]) for x in rows) or 1.0
        shares = sorted(((sum(_num(x[r]) for x in rows) / samples, r[6:]) for r in reasons), reverse=True)
        spans = stretches(rows)
        print(f"== {name[:100]}: {len(rows)} instructions, {sum(b - a + 1 for a, b in spans)} executed, "
              f"{samples:.0f} samples")
        print("   " + " ".join(f"{r} {s * 100:.1f}%" for s, r in shares if s >= 0.003))
        base = int(rows[0]["Address"], 16)
        for a, b in spans:
            s = sum(_num(rows[i]["Warp Stall Sampling (All Samples)"]) for i in range(a, b + 1))
            ni = sum(_num(rows[i]["stall_no_inst"]) for i in range(a, b + 1))
            print(f"   +0x{int(rows[a]['Address'], 16) - base:06x} {b - a + 1:5d} instr  samples {s:7.0f}  no_inst {ni:6.0f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        report(p)
