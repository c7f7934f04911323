#!/usr/bin/env python3
"""ISA gate of the CDNA3 (gfx942) GEMM: compile every instantiation device-only with clang++-19,
parse the .s, print a table and assert resource / MFMA-count / waitcnt invariants.

Compile: clang++-19 -x hip --offload-arch=gfx942 -nogpulib --cuda-device-only -O3 -std=c++17 -S
(Debian's libamdhip64-dev puts hip_runtime.h in /usr/include/hip; -nogpulib is enough, no ROCm tree.)
Exit 0: all pass, or clang++-19 missing without --require (skip). Exit 1: any assertion fails.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "csrc", "gemm", "cdna3", "launch.hip")
CLANG = "clang++-19"
EXPECTED_MFMA_PER_KTILE = 256 * 256 * 64 // (16 * 16 * 16) // 8  # 128 per wave
MAX_REGS = 256      # VGPR + AGPR per lane for 2 waves / SIMD (512-entry unified file)
MAX_LDS = 65536
WAVES_PER_BLOCK = 8
# 8-wave ping-pong (csrc/gemm/cdna3/config.h): 10 barrier-ended phases per k tile, 4 of them MFMA
# phases of 32 v_mfma at s_setprio 1; the two wave groups' stagger barriers sit outside the loop.
PHASES_PER_KTILE = 10
MMA_PHASES = 4
MFMA_PER_PHASE = EXPECTED_MFMA_PER_KTILE // MMA_PHASES


def compile_asm(out_dir: str) -> str:
    asm = os.path.join(out_dir, "launch.s")
    cmd = [CLANG, "-x", "hip", "--offload-arch=gfx942", "-nogpulib", "--cuda-device-only", "-O3",
           "-std=c++17", "-S", SRC, "-o", asm]
    subprocess.run(cmd, check=True)
    return asm


def compile_host(out_dir: str) -> str | None:
    """The launcher's host side (argument checks, hipLaunchKernelGGL) must compile too; returns an
    error text or None. (A full host+device object needs lld for the device link; not installed.)"""
    cmd = [CLANG, "-x", "hip", "--offload-arch=gfx942", "-nogpulib", "--cuda-host-only", "-O2",
           "-std=c++17", "-I", os.path.join(ROOT, "csrc"), "-c", SRC, "-o", os.path.join(out_dir, "launch_host.o")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr[-2000:] or "host compile failed")


def split_kernels(text: str) -> dict[str, list[str]]:
    """Kernel symbol -> its body lines (from the label to s_endpgm)."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^(_Z\S*gemm_cdna3_kernel\S*):", line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        if cur is not None:
            out[cur].append(line)
            if "s_endpgm" in line:
                cur = None
    return out


def metadata(text: str, name: str) -> dict[str, int]:
    """Values from the .amdhsa_kernel block and the trailing '; Name: value' comments."""
    md: dict[str, int] = {}
    start = text.find(f".amdhsa_kernel {name}")
    block = text[start:text.find(".end_amdhsa_kernel", start)]
    for key in ("group_segment_fixed_size", "private_segment_fixed_size", "next_free_vgpr",
                "next_free_sgpr", "accum_offset"):
        m = re.search(rf"\.amdhsa_{key}\s+(\d+)", block)
        if m:
            md[key] = int(m.group(1))
    tail = text[text.find(".end_amdhsa_kernel", start):]
    for key in ("NumVgprs", "NumAgprs", "TotalNumVgprs", "NumSgprs", "ScratchSize", "Occupancy"):
        m = re.search(rf"; {key}: (\d+)", tail)
        if m:
            md[key] = int(m.group(1))
    return md


def loop_mfma_counts(body: list[str]) -> list[int]:
    """MFMA count of every loop (a block from label L to a later branch back to L)."""
    labels = {}
    for i, line in enumerate(body):
        m = re.match(r"^(\.LBB\S+):", line)
        if m:
            labels[m.group(1)] = i
    counts = []
    for i, line in enumerate(body):
        m = re.search(r"s_cbranch_\w+\s+(\.LBB\S+)|s_branch\s+(\.LBB\S+)", line)
        if not m:
            continue
        tgt = m.group(1) or m.group(2)
        if tgt in labels and labels[tgt] < i:
            counts.append(sum(1 for l in body[labels[tgt]:i + 1] if "v_mfma" in l))
    return counts


def main_loop(body: list[str]) -> tuple[int, int]:
    """(start, end) line indices of the loop with the most MFMAs (label .. back-edge branch)."""
    labels = {}
    best = (0, 0, -1)
    for i, line in enumerate(body):
        m = re.match(r"^(\.LBB\S+):", line)
        if m:
            labels[m.group(1)] = i
        m = re.search(r"s_cbranch_\w+\s+(\.LBB\S+)|s_branch\s+(\.LBB\S+)", line)
        if m:
            tgt = m.group(1) or m.group(2)
            if tgt in labels and labels[tgt] < i:
                n = sum(1 for l in body[labels[tgt]:i + 1] if "v_mfma" in l)
                if n > best[2]:
                    best = (labels[tgt], i, n)
    return best[0], best[1]


def ping_pong_shape(body: list[str]) -> dict:
    """The main loop's phase structure: s_barriers in it, MFMAs between consecutive barriers
    (non-zero groups), whether each MFMA group runs at raised priority (s_setprio 1 ... 0), and
    the s_barriers outside the loop (the one-slot stagger of the two wave groups)."""
    lo, hi = main_loop(body)
    groups, cur, prio, prio_ok, barriers = [], 0, 0, True, 0
    for line in body[lo:hi + 1]:
        op = line.split(";")[0].strip().split()
        if not op:
            continue
        if op[0] == "s_setprio":
            prio = int(op[1], 0)
        elif op[0].startswith("v_mfma"):
            cur += 1
            prio_ok &= prio > 0
        elif op[0] == "s_barrier":
            barriers += 1
            if cur:
                groups.append(cur)
            cur = 0
    if cur:
        groups.append(cur)
    outside = sum(1 for i, l in enumerate(body) if not lo <= i <= hi and l.strip().startswith("s_barrier"))
    return {"barriers": barriers, "mfma_groups": groups, "prio_ok": prio_ok, "outside": outside}


REG = re.compile(r"\b([va])(?:\[(\d+):(\d+)\]|(\d+))")


def regs_of(operand: str) -> set[str]:
    out = set()
    for m in REG.finditer(operand):
        kind = m.group(1)
        if m.group(4) is not None:
            out.add(f"{kind}{m.group(4)}")
        else:
            out.update(f"{kind}{r}" for r in range(int(m.group(2)), int(m.group(3)) + 1))
    return out


def lint_waits(body: list[str]) -> list[str]:
    """(1) every ds_read's destination is preceded by an s_waitcnt covering it before its first
    use (straight-line, conservative: any lgkmcnt(N) with N <= reads issued after it counts);
    (2) every s_barrier after a ds_write is preceded by s_waitcnt lgkmcnt(0)."""
    errors = []
    pending: list[tuple[int, set[str]]] = []   # (issue index, dest regs) of outstanding ds_reads
    ds_write_since_wait0 = False
    for i, raw in enumerate(body):
        line = raw.split(";")[0].strip()
        if not line or line.endswith(":") or line.startswith("."):
            if re.match(r"^\.LBB", raw):
                pending.clear()  # control-flow join: the compiler's waitcnt pass owns this edge
            continue
        op = line.split()[0]
        if op == "s_waitcnt" and "lgkmcnt" in line:
            n = int(re.search(r"lgkmcnt\((\d+)\)", line).group(1))
            # lgkmcnt(n): all but the last n LDS/SMEM ops have completed
            pending = pending[len(pending) - n:] if n else []
            if n == 0:
                ds_write_since_wait0 = False
            continue
        if op == "s_barrier" and ds_write_since_wait0:
            errors.append(f"line {i}: s_barrier after ds_write without s_waitcnt lgkmcnt(0)")
        operands = line[len(op):]
        srcs = operands.split(",", 1)[1] if op.startswith("ds_read") and "," in operands else operands
        used = regs_of(srcs if not op.startswith(("ds_read", "ds_write")) else operands)
        if op.startswith("ds_read"):
            used = regs_of(operands.split(",", 1)[1]) if "," in operands else set()
        for _, dst in pending:
            if dst & used:
                errors.append(f"line {i}: '{line}' uses a ds_read result without s_waitcnt lgkmcnt")
                break
        if op.startswith("ds_read"):
            pending.append((i, regs_of(operands.split(",", 1)[0])))
        elif op.startswith("ds_write"):
            ds_write_since_wait0 = True
        elif op.startswith(("s_load", "s_buffer_load")):
            pending.append((i, set()))  # SMEM shares lgkmcnt
    return errors


def short(name: str) -> str:
    m = re.search(r"kernelILb(\d)ELb(\d)ELb(\d)ELb(\d)E", name)
    f16, o32, amn, bmn = (m.group(k) == "1" for k in range(1, 5))
    return f"{'fp16' if f16 else 'bf16'}->{'fp32' if o32 else ('fp16' if f16 else 'bf16')} A{'mn' if amn else 'k'} B{'mn' if bmn else 'k'}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--require", action="store_true", help="fail (not skip) when clang++-19 is missing")
    args = ap.parse_args()
    if shutil.which(CLANG) is None:
        print(f"cdna3_gate: SKIP: {CLANG} not installed")
        return 1 if args.require else 0
    with tempfile.TemporaryDirectory(prefix="cdna3_gate_") as tmp:
        text = open(compile_asm(tmp)).read()
        host_err = compile_host(tmp)
    kernels = split_kernels(text)
    failures = [] if host_err is None else [f"host launcher does not compile: {host_err}"]
    print(f"host launcher (--cuda-host-only): {'compiles' if host_err is None else 'FAILS'}")
    hdr = (f"{'kernel':<24}{'VGPR':>5}{'AGPR':>5}{'tot':>5}{'SGPR':>5}{'LDS':>7}{'scr':>5}{'occ':>4}{'mfma/kt':>8}"
           f"{'lint':>6}  ping-pong (barriers/loop, MFMA groups, stagger barriers)")
    print(hdr)
    print("-" * len(hdr))
    if len(kernels) != 16:
        failures.append(f"expected 16 instantiations, found {len(kernels)}")
    for name, body in sorted(kernels.items(), key=lambda kv: short(kv[0])):
        md = metadata(text, name)
        loops = loop_mfma_counts(body)
        per_k = max(loops) if loops else 0
        pp = ping_pong_shape(body)
        lint = lint_waits(body)
        tot = md.get("TotalNumVgprs", md.get("NumVgprs", 0) + md.get("NumAgprs", 0))
        print(f"{short(name):<24}{md.get('NumVgprs', -1):>5}{md.get('NumAgprs', -1):>5}{tot:>5}"
              f"{md.get('NumSgprs', -1):>5}{md.get('group_segment_fixed_size', -1):>7}"
              f"{md.get('private_segment_fixed_size', -1):>5}{md.get('Occupancy', -1):>4}{per_k:>8}"
              f"{('ok' if not lint else str(len(lint))):>6}  "
              f"{pp['barriers']}, {'x'.join(map(str, sorted(set(pp['mfma_groups']))))}"
              f"x{len(pp['mfma_groups'])}{'' if pp['prio_ok'] else ' (prio 0!)'}, {pp['outside']}")
        tag = short(name)
        if (pp["barriers"] != PHASES_PER_KTILE or pp["mfma_groups"] != [MFMA_PER_PHASE] * MMA_PHASES
                or not pp["prio_ok"] or pp["outside"] < 2):
            failures.append(f"{tag}: main loop is not the 8-wave ping-pong schedule: {pp}")
        if md.get("private_segment_fixed_size", 1) != 0:
            failures.append(f"{tag}: scratch {md.get('private_segment_fixed_size')} B (register spills)")
        if tot > MAX_REGS:
            failures.append(f"{tag}: VGPR+AGPR {tot} > {MAX_REGS}")
        if md.get("group_segment_fixed_size", MAX_LDS + 1) > MAX_LDS:
            failures.append(f"{tag}: LDS {md.get('group_segment_fixed_size')} > {MAX_LDS}")
        if per_k != EXPECTED_MFMA_PER_KTILE:
            failures.append(f"{tag}: {per_k} v_mfma in the main loop, expected {EXPECTED_MFMA_PER_KTILE}")
        failures += [f"{tag}: {e}" for e in lint[:3]]
    print()
    print(f"expected per wave per 64-k tile: {EXPECTED_MFMA_PER_KTILE} v_mfma; "
          f"occupancy = waves/SIMD from the compiler; {WAVES_PER_BLOCK} waves/block -> "
          f"blocks/CU = occ*4/{WAVES_PER_BLOCK}")
    if failures:
        print("FAIL:")
        for f in failures:
            print("  " + f)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
