"""SASS check: no instruction touches a wgmma's accumulator registers while the wgmma may still run.

PTX (wgmma.mma_async, "Asynchronous warpgroup level matrix multiply-accumulate"): the accumulator
registers of a wgmma may be read or written by other instructions only after a wgmma.wait_group
that retires its group. ptxas 13.0 broke that in our kernels: it scheduled F2FP packs of
accumulators and the next unit's decode temporaries (in accumulator registers) above the
`WARPGROUP.DEPBAR.LE gsb0, 0x0` of the wait that followed the decode (benchmarks/NOTES.md,
2026-12-02b; the fix is gemm kernel_variants.h TK_WAIT_FIRST). The scan, per function in address
order: after an HGMMA, until the next `WARPGROUP.DEPBAR.LE gsb0, 0x0`, any other instruction that
names a register of an HGMMA destination seen in that window is reported. Address order is a
stand-in for control flow: it is exact for the straight code after a k loop, which is where ptxas
put the hazards, and the kernels' out-of-line blocks (barrier retry loops) use no accumulators.

Usage: python3 scripts/sass_hazards.py FILE   (FILE: a .so / .o / cubin, or cuobjdump -sass text)
"""
import os
import re
import shutil
import subprocess
import sys

_INSN = re.compile(r"\s*/\*([0-9a-f]{4,6})\*/\s*(.*?)\s*;")
# HGMMA.64xNx16.F32.<type> Rd, ...: a 64 x N fp32 accumulator tile, N / 2 registers per thread from Rd.
_HGMMA = re.compile(r"HGMMA\.64x(\d+)x\d+\.F32\S*\s+R(\d+)")
_REG = re.compile(r"\bR(\d+)\b")


def instructions(sass_text):
    """(function name, address, instruction) of every instruction of cuobjdump -sass text, in order."""
    fn = None
    for line in sass_text.splitlines():
        if "Function :" in line:
            fn = line.split("Function :", 1)[1].strip()
            continue
        m = _INSN.match(line)
        if m and fn is not None:
            yield fn, int(m.group(1), 16), m.group(2)


def scan(sass_text):
    """{function name: [(address, instruction), ...]} of accumulator accesses while a wgmma may run."""
    hits = {}
    cur, ranges = None, []
    for fn, addr, insn in instructions(sass_text):
        if fn != cur:
            cur, ranges = fn, []
        if "HGMMA" in insn:
            h = _HGMMA.search(insn)
            if h:
                lo = int(h.group(2))
                ranges.append((lo, lo + int(h.group(1)) // 2 - 1))
            continue
        if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in insn:
            ranges = []
            continue
        if ranges and any(lo <= int(r) <= hi for r in _REG.findall(insn) for lo, hi in ranges):
            hits.setdefault(fn, []).append((addr, insn))
    return hits


def cuobjdump():
    """The toolkit's cuobjdump, else the one triton ships, else None."""
    exe = shutil.which("cuobjdump")
    if exe:
        return exe
    try:
        import triton  # noqa: PLC0415
    except ImportError:
        return None
    cand = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    return cand if os.path.exists(cand) else None


def sass_of(path):
    if path.endswith((".so", ".o", ".cubin")):
        exe = cuobjdump()
        if exe is None:
            raise SystemExit("sass_hazards: no cuobjdump")
        return subprocess.run([exe, "--dump-sass", path], capture_output=True, text=True, check=True).stdout
    return open(path).read()


def report(hits, limit=3):
    lines = [f"{len(h)} accumulator accesses before the wgmma wait in {fn[:150]}" for fn, h in hits.items()]
    for fn, h in list(hits.items())[:limit]:
        lines.append(f"  {fn[:150]}: " + "; ".join(f"{a:05x} {i}" for a, i in h[:4]))
    return "\n".join(lines)


if __name__ == "__main__":
    found = scan(sass_of(sys.argv[1]))
    print(report(found, limit=len(found)) if found else "sass_hazards: none")
    sys.exit(1 if found else 0)
