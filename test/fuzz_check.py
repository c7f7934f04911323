"""The checking half of the seeded fuzz tests (test_fuzz.py, whose docstring describes the method):
allocator poisoning, the relative Frobenius and per-element error bounds, one case's run (run_case)
and a whole fuzz run with its per-category report (run_fuzz, TK_FUZZ_REPORT)."""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections import defaultdict

import numpy as np
import torch

from fuzz_cases import LAYOUTS, build

# Relative Frobenius-norm tolerance by OUTPUT dtype, against the float64 product of the
# (already low-precision) inputs. bf16/fp16: output rounding (~2e-3 / ~3e-4 rms) plus margin;
# fp32: fp32 accumulation only (~1e-6 for K <= 5000).
TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 2e-5}


# ============================================================================ checking


def poison(nbytes, device, copies=3):
    """Fill allocator blocks of nbytes with 0xFF bytes (NaN in bf16/fp16/fp32) and free them:
    the op's next allocation of that size comes back full of NaN, so unwritten output
    elements are detected. Several copies consume every cached free block of that size."""
    nbytes = max(int(nbytes), 1)
    junk = [torch.full((nbytes,), 255, dtype=torch.uint8, device=device) for _ in range(copies)]
    del junk


def rel_fro(out, ref, floor=0.0):
    """||out - ref||_F / max(||ref||_F, floor) in float64 (absolute norm when both are 0; inf if
    out is not finite)."""
    o = out.double()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    rn = max(torch.linalg.vector_norm(ref).item(), floor)
    dn = torch.linalg.vector_norm(o - ref).item()
    return dn / rn if rn > 0 else dn


UNIT_ROUNDOFF = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}


def check_elementwise(out, ref, absb, K, out_t):
    """Per-element bound (catches errors confined to a few elements or one tile, which a norm
    over a large output can hide):
        |out - ref| <= u_out |ref| + (1 + u_out) * 2 (K + 4) u_fp32 * 1.1 |alpha||a|@|b| + |beta||self|)
                       + 2^-24
    = output rounding + a worst-case bound of fp32 accumulation (any order, with a factor 2 for
    tensor-core truncation) + the fp16 subnormal spacing. Returns (worst |out-ref|/allowed,
    description of the worst element)."""
    u = UNIT_ROUNDOFF[out_t]
    gamma = 2.0 * (K + 4) * 2.0 ** -24
    allowed = u * ref.abs() + (1 + u) * gamma * 1.1 * absb.double() + 2.0 ** -24
    ratio = (out.double() - ref).abs() / allowed
    flat = int(torch.argmax(ratio).item())
    idx = np.unravel_index(flat, tuple(out.shape))
    worst = ratio.reshape(-1)[flat].item()
    return worst, (f"worst element {tuple(int(i) for i in idx)}: out={out.reshape(-1)[flat].item():.6g} "
                   f"ref={ref.reshape(-1)[flat].item():.6g} allowed |diff|={allowed.reshape(-1)[flat].item():.3g}")


@dataclasses.dataclass
class Result:
    err: float = math.nan     # relative Frobenius error
    tol: float = math.nan
    elem: float = math.nan    # worst |out - ref| / allowed (elementwise, <= 1 passes)
    fail: str | None = None


def run_case(case, device):
    res = Result(tol=TOL[case.out_t])
    try:
        call, ref_fn, abs_fn, out_shape = build(case, device)
        poison(math.prod(out_shape) * torch.empty((), dtype=case.out_t).element_size(), device)
        out = call()
    except Exception as e:  # noqa: BLE001 - any exception is a failure of the case
        res.fail = f"raised {type(e).__name__}: {e}"
        return res
    if (tuple(out.shape) != tuple(out_shape) or out.dtype != case.out_t
            or out.device.type != torch.device(device).type):
        res.fail = f"got {tuple(out.shape)} {out.dtype} on {out.device}, expected {out_shape} {case.out_t}"
        return res
    if not out.is_contiguous():
        res.fail = f"output not contiguous: strides {out.stride()}"
        return res
    if out.numel() == 0:
        res.err = res.elem = 0.0
        return res
    ref = ref_fn()
    if not bool(torch.isfinite(out).all()):  # every input that is not ignored is finite
        res.err = math.inf
        res.fail = f"{int((~torch.isfinite(out)).sum())} non-finite output elements (unwritten/poisoned or NaN leak)"
        return res
    if case.K == 0:  # must be exactly beta*self (rounded once) or zeros
        res.err = rel_fro(out, ref)
        res.elem = 0.0
        if not torch.equal(out, ref.to(case.out_t)):
            res.fail = f"K == 0 output differs from beta*self / zeros (rel err {res.err:.3e})"
        return res
    absb = abs_fn()
    # Denominator floor ||(|alpha||a|@|b| + |beta||self|)||_F / (2 sqrt(K)): a third to a half of
    # ||ref||_F for random-sign data, so it does not loosen ordinary cases. It only matters when
    # the output holds few distinct values that cancel heavily (stride-0 layouts with M or N
    # small make the whole output one dot product, whose relative error is then its condition
    # number times the accumulation error).
    res.err = rel_fro(out, ref, floor=torch.linalg.vector_norm(absb.double()).item() / (2 * math.sqrt(case.K)))
    res.elem, where = check_elementwise(out, ref, absb, case.K, case.out_t)
    if not res.err <= res.tol:
        res.fail = f"relative error {res.err:.3e} > {res.tol:.1e}"
    elif not res.elem <= 1.0:
        res.fail = f"elementwise bound exceeded {res.elem:.2f}x; {where}"
    return res


def _tol_of(key):
    """Tolerance of a category key (op, dtype, out_dtype, ...) with short dtype names."""
    return TOL[torch.float32] if key[2] == "fp32" else TOL[torch.bfloat16 if key[1] == "bf16" else torch.float16]


def run_fuzz(cases, device, title):
    stats = defaultdict(lambda: [0, 0, 0.0, 0.0, 0])  # category -> [cases, non-empty, worst err, worst elem, fails]
    failures = []
    worst = (0.0, None)
    t0 = time.perf_counter()
    for c in cases:
        r = run_case(c, device)
        st = stats[c.category()]
        st[0] += 1
        st[1] += 0 if c.empty else 1
        if not math.isnan(r.err):
            st[2] = max(st[2], r.err)
            if r.err / r.tol > worst[0]:
                worst = (r.err / r.tol, c)
        if not math.isnan(r.elem):
            st[3] = max(st[3], r.elem)
        if r.fail:
            st[4] += 1
            failures.append(f"{c.describe()}: {r.fail}")
    if device != "cpu":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0

    # Full per-category table first, compact summaries last (scripts/gpu_check.sh shows the
    # report's last 30 lines).
    lines = [f"== {title}: per category (op, dtype, out_dtype, layout of a, layout of b); "
             f"'elem' = worst per-element |out-ref| / bound (must be <= 1)",
             f"   {'op':<7}{'dtype':<6}{'out':<6}{'a':<8}{'b':<8}{'n':>5}{'n>0':>5}"
             f"{'worst rel err':>15}{'tol':>8}{'elem':>7}{'fail':>6}"]
    for key in sorted(stats):
        n, ne, err, elem, nf = stats[key]
        lines.append(f"   {key[0]:<7}{key[1]:<6}{key[2]:<6}{key[3]:<8}{key[4]:<8}{n:>5}{ne:>5}"
                     f"{err:>15.3e}{_tol_of(key):>8.0e}{elem:>7.3f}{nf:>6}")
    marg = defaultdict(lambda: [0, 0, 0.0, 0.0, 0])
    grid = defaultdict(lambda: [0, 0])
    for key, st in stats.items():
        m = marg[key[:3]]
        m[0] += st[0]
        m[1] += st[1]
        m[2] = max(m[2], st[2])
        m[3] = max(m[3], st[3])
        m[4] += st[4]
        grid[key[3:]][0] += st[0]
        grid[key[3:]][1] += st[4]
    lines.append("   -- by op / dtype / out_dtype:")
    for k, m in sorted(marg.items()):
        lines.append(f"   {k[0]:<7}{k[1]:<6}{k[2]:<6} n={m[0]:<5} n>0={m[1]:<5} worst rel err={m[2]:.3e} "
                     f"(tol {_tol_of(k):.0e})  elem={m[3]:.3f}  fail={m[4]}")
    lines.append("   -- by layout, cases/failures (rows: a, columns: b):")
    lines.append("   " + " " * 8 + "".join(f"{lb:>9}" for lb in LAYOUTS))
    for la in LAYOUTS:
        lines.append(f"   {la:<8}" + "".join(f"{grid[(la, lb)][0]:>6}/{grid[(la, lb)][1]:<2}" for lb in LAYOUTS))
    for f in failures[:20]:
        lines.append("   FAIL " + f)
    if len(failures) > 20:
        lines.append(f"   ... {len(failures) - 20} more failures")
    if worst[1] is not None:
        lines.append(f"   worst err/tol = {worst[0]:.3f} at {worst[1].describe()}")
    lines.append(f"== {title}: {len(cases)} cases on {device} in {elapsed:.1f} s "
                 f"({sum(c.empty for c in cases)} empty, {sum(c.K == 0 and not c.empty for c in cases)} with K == 0, "
                 f"{sum(c.runs_kernel for c in cases)} reached the matmul backend): {len(failures)} FAILURES")
    report = "\n".join(lines)
    print("\n" + report)
    path = os.environ.get("TK_FUZZ_REPORT")
    if path:
        with open(path, "a") as fh:
            fh.write(report + "\n\n")
    return failures, elapsed
