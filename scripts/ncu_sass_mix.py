#!/usr/bin/env python3
"""Executed-instruction mix per kernel from Nsight Compute's SASS source page: how many warp-level
instructions of each class (tensor, barrier waits and arrivals, TMA, shared / global memory,
conversion, float, integer / address, uniform datapath, control) each kernel issued, per 128 x 256 x
64 block of multiply-adds, and where its warp-stall samples sit by class. Ours and cuBLAS's kernel
on the same call side by side: the count of issued instructions is the one part of a GEMM's energy
that the two kernels' code decides (2026-11-26b: at the power cap ours ran at a lower clock than
cuBLAS at the same board power; ncu 2026-11-25k: issue slots busy 21.6% against 12.8%).

    python3 scripts/ncu_sass_mix.py SOURCE.csv[.gz] MxNxK [--top N]

SOURCE.csv: `ncu --import REPORT --page source --print-source sass --csv` of a report with the
SourceCounters section (scripts/ncu_profile.sh NCU_SOURCE=1 writes one per cache state; the same
file scripts/ncu_fetch_stalls.py reads). MxNxK: the GEMM's shape, to put kernels with different
tiles on one scale. "Instructions Executed" is ncu's warp-level count per SASS instruction
(predicated-off instances included, as CUPTI's `executed`).
"""
import argparse
import re
import sys

from ncu_fetch_stalls import _num, load

# Opcode (the SASS mnemonic before its first '.') -> class. Order of the report's columns.
CLASSES = ("tensor", "wait", "arrive", "tma", "smem", "gmem", "convert", "float", "int", "uniform", "control", "other")
_EXACT = {
    "HGMMA": "tensor", "WARPGROUP": "tensor",
    "UTMALDG": "tma", "UTMASTG": "tma", "UBLKCP": "tma", "UTMACMDFLUSH": "tma", "UTMAPF": "tma", "UBLKPF": "tma",
    "UTMACCTL": "tma", "UBLKRED": "tma", "UTMAREDG": "tma",
    "LDS": "smem", "STS": "smem", "LDSM": "smem", "STSM": "smem", "ATOMS": "smem", "LDGSTS": "smem",
    "LDG": "gmem", "STG": "gmem", "LD": "gmem", "ST": "gmem", "ATOMG": "gmem", "RED": "gmem", "LDC": "gmem",
    "F2FP": "convert", "F2F": "convert", "F2I": "convert", "I2F": "convert", "I2FP": "convert",
    "FMUL": "float", "FADD": "float", "FFMA": "float", "FSEL": "float", "FSETP": "float", "FMNMX": "float",
    "HADD2": "float", "HFMA2": "float", "HMUL2": "float", "MUFU": "float",
    "BRA": "control", "BRX": "control", "JMP": "control", "CALL": "control", "RET": "control", "EXIT": "control",
    "BSSY": "control", "BSYNC": "control", "WARPSYNC": "control", "BAR": "control", "NANOSLEEP": "control",
    "YIELD": "control", "BMOV": "control", "ELECT": "control", "VOTE": "control", "VOTEU": "control",
    "ACQBULK": "control", "MEMBAR": "control", "FENCE": "control", "CCTL": "control", "ERRBAR": "control",
    "DEPBAR": "control", "NOP": "control", "PMTRIG": "control",
}
_INT = {"IMAD", "IADD3", "IADD", "LOP3", "SHF", "LEA", "ISETP", "MOV", "SEL", "PRMT", "IABS", "IMNMX", "POPC",
        "FLO", "BREV", "SHFL", "S2R", "CS2R", "R2UR", "P2R", "R2P", "PLOP3", "IMUL", "IDP", "LOP", "SGXT", "BMSK"}


def opcode(source):
    """('SYNCS', 'SYNCS.PHASECHK.TRANS64.TRYWAIT') from one SASS line; ('', '') for none."""
    s = re.sub(r"^\s*(/\*[0-9a-fA-F]+\*/)?\s*", "", source or "")
    s = re.sub(r"^@!?U?P[0-9T]\s+", "", s)
    full = s.split(" ", 1)[0].strip().rstrip(";")
    return full.split(".", 1)[0], full


def classify(op, full):
    """The class of one opcode: SYNCS splits into waits (PHASECHK / try_wait) and arrivals."""
    if op == "SYNCS":
        return "wait" if "PHASECHK" in full or "TRYWAIT" in full else "arrive"
    if op in _EXACT:
        return _EXACT[op]
    if op in _INT:
        return "int"
    if op.startswith("U") or op in ("S2UR", "R2UR"):
        return "uniform"
    return "other"


def _source_column(rows):
    if "Source" in rows[0]:
        return "Source"
    for k, v in rows[0].items():  # any column whose text reads like a SASS mnemonic
        if k != "Address" and re.match(r"^\s*(@!?U?P[0-9T]\s+)?[A-Z][A-Z0-9]+(\.|\s|$)", v or ""):
            return k
    raise ValueError(f"no SASS text column among {list(rows[0])}")


def mix(rows):
    """({class: executed}, {class: stall samples}, {full opcode: executed}) of one kernel's rows."""
    col = _source_column(rows)
    execd = {c: 0.0 for c in CLASSES}
    stalls = {c: 0.0 for c in CLASSES}
    ops = {}
    for r in rows:
        op, full = opcode(r.get(col, ""))
        if not op:
            continue
        c = classify(op, full)
        n = _num(r.get("Instructions Executed", "0"))
        execd[c] += n
        stalls[c] += _num(r.get("Warp Stall Sampling (All Samples)", "0"))
        if n:
            ops[full] = ops.get(full, 0.0) + n
    return execd, stalls, ops


def blocks(shape):
    """How many 128 x 256 x 64 multiply-add blocks an MxNxK GEMM is (fractional)."""
    m, n, k = (int(x) for x in shape.lower().split("x"))
    if min(m, n, k) <= 0:
        raise ValueError(f"shape must be MxNxK with positive sizes, got {shape!r}")
    return m * n * k / (128 * 256 * 64)


def report(path, shape, top=12, out=sys.stdout):
    nb = blocks(shape)
    kernels = {k: v for k, v in load(path).items() if v}
    if not kernels:
        raise ValueError(f"{path}: no kernel rows (was the report taken with --section SourceCounters?)")
    res = {name: mix(rows) for name, rows in kernels.items()}
    names = list(res)
    print(f"# executed warp instructions per 128x256x64 MAC block ({shape}: {nb:.0f} blocks); stall-sample share", file=out)
    print("class     " + "".join(f"{n[:34]:>36}" for n in names), file=out)
    for c in CLASSES + ("total",):
        cells = []
        for n in names:
            e, s, _ = res[n]
            ev = sum(e.values()) if c == "total" else e[c]
            st = (sum(s.values()) if c == "total" else s[c]) / (sum(s.values()) or 1.0)
            cells.append(f"{ev / nb:12.1f} {st * 100:5.1f}%")
        print(f"{c:10}" + "".join(f"{x:>36}" for x in cells), file=out)
    for n in names:
        ops = sorted(res[n][2].items(), key=lambda kv: -kv[1])[:top]
        print(f"== {n[:100]}: top opcodes per block", file=out)
        print("   " + ", ".join(f"{o} {v / nb:.1f}" for o, v in ops), file=out)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("shape", help="MxNxK of the profiled GEMM")
    p.add_argument("--top", type=int, default=12)
    a = p.parse_args(argv)
    report(a.csv, a.shape, a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
