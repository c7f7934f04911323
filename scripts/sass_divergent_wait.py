"""SASS check: no wgmma wait behind a warp's own, non-blocking barrier test unless the warpgroup voted.

PTX ISA (wgmma.wait_group): `.sync.aligned` -- all threads of the warpgroup must execute the same
wgmma.wait_group, so a branch around one must be uniform across the warpgroup. The k loop's early
release (gemm kernel_variants.h TK_EARLY_RELEASE) drains when the next stage has not landed; until
2026-12-05h each warp decided by its own `mbarrier.test_wait` (SASS `SYNCS.PHASECHK.TRANS64`
without TRYWAIT), so warps of one warpgroup could run different waits (compute-sanitizer synccheck:
"Mismatching warpgroup instruction pc between warps"). Now the warpgroup votes (`bar.red.or.pred`,
SASS `BAR.RED.OR`) first. The scan, per function in address order: after a non-blocking
`SYNCS.PHASECHK.TRANS64`, a `WARPGROUP.DEPBAR` before any `BAR.RED` is reported; the window closes at
the next `WARPGROUP.ARRIVE` (the stage's wgmmas issued) or blocking wait (`...TRYWAIT`).

Usage: python3 scripts/sass_divergent_wait.py FILE   (FILE: a .so / .o / cubin, or cuobjdump -sass text)
"""
import sys

from sass_hazards import instructions, sass_of


def scan(sass_text):
    """{function name: [address of each WARPGROUP.DEPBAR behind an unvoted per-warp test]}."""
    hits = {}
    cur, test_at = None, None
    for fn, addr, insn in instructions(sass_text):
        if fn != cur:
            cur, test_at = fn, None
        if "SYNCS.PHASECHK.TRANS64" in insn:
            test_at = None if "TRYWAIT" in insn else addr
        elif "BAR.RED" in insn or "WARPGROUP.ARRIVE" in insn:
            test_at = None
        elif test_at is not None and "WARPGROUP.DEPBAR" in insn:
            hits.setdefault(fn, []).append(addr)
    return hits


def report(hits, limit=3):
    lines = [f"{len(h)} wgmma waits behind a per-warp barrier test in {fn[:150]}" for fn, h in hits.items()]
    for fn, h in list(hits.items())[:limit]:
        lines.append(f"  {fn[:150]}: " + ", ".join(f"{a:05x}" for a in h[:4]))
    return "\n".join(lines)


if __name__ == "__main__":
    found = scan(sass_of(sys.argv[1]))
    print(report(found, limit=len(found)) if found else "sass_divergent_wait: none")
    sys.exit(1 if found else 0)
