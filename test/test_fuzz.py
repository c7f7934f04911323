"""Seeded fuzz tests of torch.ops.tk.{gemm, addmm, linear} (reliability evidence).

Standalone on purpose (only torch, numpy, torch_tk; no helpers from conftest.py), so that this
file alone documents the method:

* Cases come from a seeded generator (``make_cases(n, seed, max_dim)``): M, N, K in
  [0, max_dim] drawn from a mixture that favours 0, 1, tile edges (63..257), primes and
  uniform small / large values; each operand has one of five layouts (row-major,
  column-major, sliced with a step, misaligned offset, stride-0 expanded); bf16 or fp16;
  out_dtype None or float32; op gemm / addmm (random dyadic alpha, beta incl. 0, self of
  every broadcast shape, NaN self when beta == 0) / linear (2-D or 3-D input, optional bias).
  Every case carries its own seed: ``make_cases(...)[i]`` rebuilds exactly the same tensors.
* Reference: float64 product of the SAME low-precision inputs, on the same device.
  Relative Frobenius error per case must stay under: bf16 out 1e-2, fp16 out 2e-3,
  fp32 out 2e-5 (fp32 accumulation only). The denominator is max(||ref||_F,
  || |alpha||a|@|b| + |beta||self| ||_F / (2 sqrt(K))): ||ref||_F for random data, the floor
  keeps a degenerate output (stride-0 layouts: one dot product repeated) with heavy
  cancellation from failing on its condition number. Each element must also satisfy a
  rigorous rounding bound (check_elementwise), which catches errors confined to a few
  elements or one tile. Empty outputs: shape/dtype only. K == 0: the output must equal
  beta*self (or zeros) exactly.
* Poisoning: right before each call the allocator is filled with 0xFF bytes (NaN in bf16,
  fp16 and fp32) and freed, so an output element the op never writes reads as NaN; every
  output with finite inputs must be finite.
* The GPU fuzz also checks that every non-empty case ran the Hopper kernel (counter grew by
  exactly the number of non-empty cases, fallback counter unchanged).
* A per-category table (op, dtype, out_dtype, layout of a, layout of b) with counts and the
  worst relative error is printed (``pytest -s`` / ``-rP``) and, when the environment
  variable TK_FUZZ_REPORT names a file, appended to that file.
* NaN/Inf propagation: NaN, +Inf and -Inf injected into a, b (and self when beta != 0) must
  give NaN/+Inf/-Inf exactly where the float64 reference (cast to the output dtype) has them.

Layout names: for linear, "a" is the (M, K) input (before any 3-D view) and "b" is the
(N, K) weight as passed (the op multiplies by weight.t()).

Reproduce one case: ``python3 test/test_fuzz.py cpu 17`` (or ``cuda 17``) prints its
parameters and result.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections import defaultdict

import numpy as np
import pytest
import torch

import torch_tk

HAS_CUDA = torch.cuda.is_available()
HAS_HOPPER = HAS_CUDA and torch_tk.hopper_available()

DTYPES = (torch.bfloat16, torch.float16)
LAYOUTS = ("row", "col", "slice", "offset", "expand")
OPS = ("gemm", "addmm", "linear")
SELF_KINDS = ("0d", "1d", "1xN", "Mx1", "MxN")

# Relative Frobenius-norm tolerance by OUTPUT dtype, against the float64 product of the
# (already low-precision) inputs. bf16/fp16: output rounding (~2e-3 / ~3e-4 rms) plus margin;
# fp32: fp32 accumulation only (~1e-6 for K <= 5000).
TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 2e-5}

TILE_EDGES = (63, 64, 65, 127, 128, 129, 255, 256, 257)
PRIMES = (7, 13, 31, 127, 251, 509, 1021, 2039, 4093)

CPU_CASES, CPU_MAX_DIM, CPU_MAX_WORK, CPU_SEED = 300, 300, 27_000_000, 20240601
GPU_CASES, GPU_MAX_DIM, GPU_MAX_WORK, GPU_SEED = 2000, 5000, 2_000_000_000, 20240602

# Dyadic scalars (few significant bits): exactly representable in fp32 and products with
# bf16/fp16/fp32 values round once, so the K == 0 outputs can be compared bit for bit.
NICE_SCALARS = (1.0, -1.0, 0.5, 2.0, -0.75, 1.25, 0.0625)


def _dt(d):
    return "None" if d is None else str(d).replace("torch.", "").replace("bfloat16", "bf16").replace(
        "float16", "fp16").replace("float32", "fp32")


# ============================================================================ case generator


@dataclasses.dataclass
class Case:
    idx: int
    seed: int
    op: str
    M: int
    N: int
    K: int
    dtype: torch.dtype
    out_dtype: torch.dtype | None
    la: str                      # layout of a / mat1 / input (M, K)
    lb: str                      # layout of b / mat2 (K, N); for linear: weight (N, K)
    alpha: float = 1.0
    beta: float = 1.0
    self_kind: str | None = None  # addmm: 0d / 1d / 1xN / Mx1 / MxN; linear: "bias" or None
    self_layout: str = "row"
    self_fp32: bool = False       # addmm with out_dtype=float32: self given in float32
    self_nan: bool = False        # beta == 0: self filled with NaN (must be ignored)
    batch: int | None = None      # linear: input viewed as (batch, M // batch, K)
    sub_a: int = 0                # variant bits for slice/expand layouts
    sub_b: int = 0
    sub_s: int = 0

    @property
    def out_t(self):
        return self.out_dtype or self.dtype

    @property
    def empty(self):
        return self.M == 0 or self.N == 0

    @property
    def runs_kernel(self):
        return self.M > 0 and self.N > 0 and self.K > 0

    def category(self):
        return (self.op, _dt(self.dtype), _dt(self.out_dtype), self.la, self.lb)

    def describe(self):
        s = (f"#{self.idx} seed={self.seed} {self.op} M={self.M} N={self.N} K={self.K} {_dt(self.dtype)}"
             f" out={_dt(self.out_dtype)} a={self.la}{self.sub_a} b={self.lb}{self.sub_b}")
        if self.op == "addmm":
            s += (f" alpha={self.alpha} beta={self.beta} self={self.self_kind}/{self.self_layout}{self.sub_s}"
                  f"{'/fp32' if self.self_fp32 else ''}{'/NaN' if self.self_nan else ''}")
        if self.op == "linear":
            s += f" bias={self.self_kind == 'bias'} batch={self.batch}"
        return s


def _draw_dim(rng, max_dim):
    """One dimension from a mixture biased towards edge values."""
    r = rng.random()
    if r < 0.05:
        return 0
    if r < 0.13:
        return 1
    if r < 0.33:
        pool = [d for d in TILE_EDGES if d <= max_dim]
        return int(rng.choice(pool)) if pool else int(rng.integers(0, max_dim + 1))
    if r < 0.53:
        pool = [d for d in PRIMES if d <= max_dim]
        return int(rng.choice(pool)) if pool else int(rng.integers(0, max_dim + 1))
    if r < 0.70:
        return int(rng.integers(2, min(32, max_dim) + 1))
    return int(rng.integers(1, max_dim + 1))


def _scalar(rng, allow_zero):
    r = rng.random()
    if allow_zero and r < 0.2:
        return 0.0
    if r < 0.6:
        return float(rng.choice(NICE_SCALARS))
    k = int(rng.integers(-40, 41))
    return k / 16.0 if k != 0 else 1.0


def make_cases(n, seed, max_dim, max_work):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        M, N, K = (_draw_dim(rng, max_dim) for _ in range(3))
        dims = [M, N, K]
        while dims[0] * dims[1] * dims[2] > max_work:  # cap the work: shrink the largest dim
            j = int(np.argmax(dims))
            others = max(1, math.prod(dims) // dims[j])
            dims[j] = max(1, min(dims[j] - 1, max_work // others))
        M, N, K = dims
        op = OPS[int(rng.integers(0, len(OPS)))]
        dtype = DTYPES[int(rng.integers(0, 2))]
        out_dtype = None if (op == "linear" or rng.random() < 0.5) else torch.float32
        c = Case(idx=i, seed=int(seed * 100_003 + i), op=op, M=M, N=N, K=K, dtype=dtype, out_dtype=out_dtype,
                 la=LAYOUTS[int(rng.integers(0, 5))], lb=LAYOUTS[int(rng.integers(0, 5))],
                 sub_a=int(rng.integers(0, 2)), sub_b=int(rng.integers(0, 2)), sub_s=int(rng.integers(0, 2)))
        if (out_dtype is not None and c.la == "expand" and c.sub_a == 1 and c.lb == "expand"
                and c.sub_b == 0):
            # Both operands constant along K make every output a K-term sum of one same-signed
            # value; tensor cores truncate (round toward zero) inside the fp32 accumulation, a
            # bias of up to ~K/8 * 2^-24 relative (~2e-5 at K = 5000) that the fp32-out tolerance
            # (meant for random-sign sums) does not allow for. Vary b along K instead.
            c.sub_b = 1
        if op == "addmm":
            c.alpha = _scalar(rng, allow_zero=rng.random() < 0.1)
            c.beta = _scalar(rng, allow_zero=True)
            c.self_kind = SELF_KINDS[int(rng.integers(0, len(SELF_KINDS)))]
            c.self_layout = LAYOUTS[int(rng.integers(0, 5))] if c.self_kind == "MxN" else (
                ("row", "slice", "offset")[int(rng.integers(0, 3))] if c.self_kind == "1d" else "row")
            c.self_fp32 = out_dtype is not None and rng.random() < 0.5
            c.self_nan = c.beta == 0 and rng.random() < 0.5
        elif op == "linear":
            c.self_kind = "bias" if rng.random() < 0.6 else None
            c.self_layout = ("row", "slice", "offset")[int(rng.integers(0, 3))]
            b = int(rng.choice([2, 3, 4, 8]))
            c.batch = b if (rng.random() < 0.5 and M % b == 0) else None
        cases.append(c)
    return cases


# ============================================================================ tensors


def _randn(shape, gen, device):
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32)


def make_operand(R, C, layout, dtype, gen, device, scale=1.0, sub=0, fill=None):
    """A (R, C) tensor of dtype with the requested memory layout (values randn * scale, or all
    `fill`). The storage is created first and then viewed, so the layout is what it says."""

    def base(*shape):
        t = (_randn(shape, gen, device) * scale).to(dtype)
        return t.fill_(fill) if fill is not None else t

    if layout == "row":
        x = base(R, C)
    elif layout == "col":  # column-major: transpose of a contiguous (C, R)
        x = base(C, R).t()
    elif layout == "slice":  # step 2 along columns or along rows of a bigger tensor
        x = base(R, 2 * C)[:, ::2] if sub == 0 else base(2 * R, C)[::2]
    elif layout == "offset":  # row-major, data pointer one element past an aligned base
        x = base(R * C + 1).view(-1)[1:1 + R * C].view(R, C)
    elif layout == "expand":  # stride 0 along rows (sub 0) or along columns (sub 1)
        x = base(1, C).expand(R, C) if sub == 0 else base(R, 1).expand(R, C)
    else:
        raise ValueError(layout)
    assert tuple(x.shape) == (R, C)
    return x


def make_vector(n, layout, dtype, gen, device, fill=None):
    if layout == "slice":
        x = _randn((2 * n,), gen, device).to(dtype)[::2]
    elif layout == "offset":
        x = _randn((n + 1,), gen, device).to(dtype)[1:]
    else:
        x = _randn((n,), gen, device).to(dtype)
    return x.fill_(fill) if fill is not None else x


def _abs_mm(x, y):
    """|x| @ |y| (elementwise bound material). On CUDA in the input dtype on the tensor cores
    (cheap; positive terms, so its own rounding is a small relative error, covered by the
    1.1 factor in check_elementwise); on the CPU in float32."""
    if x.is_cuda:
        return (x.abs() @ y.abs()).float()
    return x.float().abs() @ y.float().abs()


def build(case, device):
    """(call, ref_fn, abs_fn, out_shape) for a case; all tensors on device.

    ref_fn() is the float64 result of the same inputs; abs_fn() is
    |alpha| |a| @ |b| + |beta| |self| (float32), the scale of the rounding errors."""
    gen = torch.Generator(device=device)
    gen.manual_seed(case.seed)
    M, N, K, dt = case.M, case.N, case.K, case.dtype
    scale = K ** -0.25 if K > 0 else 1.0  # keeps |out| = O(1..100): no fp16 overflow, even for expand x expand
    a = make_operand(M, K, case.la, dt, gen, device, scale, case.sub_a)
    if case.op == "linear":
        w = make_operand(N, K, case.lb, dt, gen, device, scale, case.sub_b)
        bias = make_vector(N, case.self_layout, dt, gen, device) if case.self_kind == "bias" else None
        x = a
        if case.batch is not None:
            try:
                x = a.view(case.batch, M // case.batch, K)
            except RuntimeError:
                x = a.reshape(case.batch, M // case.batch, K)
        out_shape = (*x.shape[:-1], N)

        def call():
            return torch.ops.tk.linear(x, w, bias)

        def ref():
            r = a.double() @ w.double().t()
            if bias is not None:
                r = r + bias.double()
            return r.reshape(out_shape)

        def absb():
            r = _abs_mm(a, w.t())
            if bias is not None:
                r = r + bias.float().abs()
            return r.reshape(out_shape)

        return call, ref, absb, out_shape

    b = make_operand(K, N, case.lb, dt, gen, device, scale, case.sub_b)
    if case.op == "gemm":
        def call():
            return torch.ops.tk.gemm(a, b, out_dtype=case.out_dtype)

        def ref():
            return a.double() @ b.double()

        def absb():
            return _abs_mm(a, b)

        return call, ref, absb, (M, N)

    sdt = torch.float32 if case.self_fp32 else dt
    fill = math.nan if case.self_nan else None
    kind = case.self_kind
    if kind == "0d":
        s = _randn((), gen, device).to(sdt)
    elif kind == "1d":
        s = make_vector(N, case.self_layout, sdt, gen, device)
    elif kind == "1xN":
        s = _randn((1, N), gen, device).to(sdt)
    elif kind == "Mx1":
        s = _randn((M, 1), gen, device).to(sdt)
    else:
        s = make_operand(M, N, case.self_layout, sdt, gen, device, 1.0, case.sub_s, fill=fill)
    if fill is not None and kind != "MxN":
        s.fill_(fill)
    alpha, beta = case.alpha, case.beta

    def call():
        return torch.ops.tk.addmm(s, a, b, beta=beta, alpha=alpha, out_dtype=case.out_dtype)

    def ref():
        r = alpha * (a.double() @ b.double())
        if beta != 0:  # beta == 0: self is ignored (a NaN self must not propagate)
            r = r + beta * s.double()
        return r

    def absb():
        r = abs(alpha) * _abs_mm(a, b)
        if beta != 0:
            r = r + abs(beta) * s.float().abs()
        return r

    return call, ref, absb, (M, N)


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


# ============================================================================ tests


def test_generator_is_deterministic_and_covers_the_space():
    c1 = make_cases(CPU_CASES, CPU_SEED, CPU_MAX_DIM, CPU_MAX_WORK)
    c2 = make_cases(CPU_CASES, CPU_SEED, CPU_MAX_DIM, CPU_MAX_WORK)
    assert c1 == c2
    g = make_cases(GPU_CASES, GPU_SEED, GPU_MAX_DIM, GPU_MAX_WORK)
    for cases, max_dim, max_work in ((c1, CPU_MAX_DIM, CPU_MAX_WORK), (g, GPU_MAX_DIM, GPU_MAX_WORK)):
        assert all(0 <= d <= max_dim for c in cases for d in (c.M, c.N, c.K))
        assert all(c.M * c.N * c.K <= max_work for c in cases)
        assert {c.op for c in cases} == set(OPS)
        assert {c.la for c in cases} == set(LAYOUTS) and {c.lb for c in cases} == set(LAYOUTS)
        assert {c.dtype for c in cases} == set(DTYPES)
        assert {c.out_dtype for c in cases} == {None, torch.float32}
        assert {c.self_kind for c in cases if c.op == "addmm"} == set(SELF_KINDS)
        assert any(c.op == "addmm" and c.beta == 0 and c.self_nan for c in cases)
        assert any(c.op == "linear" and c.batch for c in cases)
        dims = {d for c in cases for d in (c.M, c.N, c.K)}
        assert {0, 1, 63, 64, 65, 127, 128, 129, 7, 13, 31, 251} <= dims
        assert sum(c.K == 0 for c in cases) >= 3 and sum(c.empty for c in cases) >= 3
    assert {509, 1021, 2039, 4093, 255, 256, 257} <= {d for c in g for d in (c.M, c.N, c.K)}
    assert max(c.M * c.N * c.K for c in g) > 10**9


def test_fuzz_cpu():
    cases = make_cases(CPU_CASES, CPU_SEED, CPU_MAX_DIM, CPU_MAX_WORK)
    c0 = dict(torch_tk.kernel_counters())
    failures, elapsed = run_fuzz(cases, "cpu", "tk CPU fuzz")
    c1 = dict(torch_tk.kernel_counters())
    assert not failures, f"{len(failures)} of {len(cases)} fuzz cases failed:\n" + "\n".join(failures[:40])
    n_run = sum(c.runs_kernel for c in cases)
    assert c1["cpu"] - c0["cpu"] == n_run, (c0, c1, n_run)
    assert c1["hopper"] == c0["hopper"] and c1["fallback"] == c0["fallback"]


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_HOPPER, reason="needs CUDA and the Hopper kernel (sm_90 GPU, sm_90a build)")
def test_fuzz_gpu():
    dev = "cuda"
    # the method must be able to see unwritten elements on this allocator
    poison(257 * 333 * 2, dev)
    probe = torch.empty((257, 333), dtype=torch.bfloat16, device=dev)
    assert torch.isnan(probe).all(), "allocator poisoning does not reach fresh allocations"
    del probe
    cases = make_cases(GPU_CASES, GPU_SEED, GPU_MAX_DIM, GPU_MAX_WORK)
    torch.cuda.synchronize()
    c0 = dict(torch_tk.kernel_counters())
    r0 = set(torch_tk.fallback_reasons())
    failures, elapsed = run_fuzz(cases, dev, "tk GPU fuzz (Hopper kernel)")
    c1 = dict(torch_tk.kernel_counters())
    assert not failures, f"{len(failures)} of {len(cases)} fuzz cases failed:\n" + "\n".join(failures[:40])
    n_run = sum(c.runs_kernel for c in cases)
    assert c1["hopper"] - c0["hopper"] == n_run, (
        f"Hopper counter moved by {c1['hopper'] - c0['hopper']}, expected {n_run} (non-empty cases)")
    assert c1["fallback"] == c0["fallback"], (
        f"fallback counter moved: {c0} -> {c1}; reasons {set(torch_tk.fallback_reasons()) - r0}")
    assert elapsed < 90, f"GPU fuzz took {elapsed:.1f} s (budget 90 s)"


# ============================================================================ NaN / Inf propagation

NAN_LAYOUTS = ("row", "col", "slice", "offset")


def _inject(x, gen, device, n_each=2):
    """Write NaN, +Inf and -Inf at n_each random positions each (in place, through the view)."""
    R, C = x.shape
    for v in (math.nan, math.inf, -math.inf):
        for _ in range(n_each):
            i = int(torch.randint(0, R, (1,), generator=gen, device=device).item())
            j = int(torch.randint(0, C, (1,), generator=gen, device=device).item())
            x[i, j] = v


def _nonzero(x):
    """randn values are never exactly 0 in practice; make sure (inf * 0 would be NaN)."""
    return x.masked_fill(x == 0, 1)


def _nan_inf_case(device, op, dtype, out_dtype, la, lb, shape, beta, self_kind, seed, clean_ab=False):
    M, N, K = shape
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = make_operand(M, K, la, dtype, gen, device)
    b = make_operand(K, N, lb, dtype, gen, device)
    a.copy_(_nonzero(a))
    b.copy_(_nonzero(b))
    if not clean_ab:
        _inject(a, gen, device)
        _inject(b, gen, device)
    alpha = -1.5 if seed % 2 else 1.0  # sign flips of +-Inf through alpha
    out_t = out_dtype or dtype
    if op == "gemm":
        out = torch.ops.tk.gemm(a, b, out_dtype=out_dtype)
        ref = a.double() @ b.double()
        s = None
    else:
        s_shape = {"MxN": (M, N), "1d": (N,), "Mx1": (M, 1), "1xN": (1, N)}[self_kind]
        s = _randn(s_shape, gen, device).to(dtype)
        if beta == 0:
            s.fill_(math.nan)
            s.view(-1)[::3] = math.inf
            s.view(-1)[1::3] = -math.inf
        else:
            s2 = s.view(1, -1) if s.dim() == 1 else s
            _inject(s2, gen, device, n_each=1)
        out = torch.ops.tk.addmm(s, a, b, beta=beta, alpha=alpha, out_dtype=out_dtype)
        ref = alpha * (a.double() @ b.double())
        if beta != 0:
            ref = ref + beta * s.double()
    ref_c = ref.to(out_t)
    problems = []
    for name, f in (("NaN", torch.isnan), ("+Inf", torch.isposinf), ("-Inf", torch.isneginf)):
        mo, mr = f(out), f(ref_c)
        if not torch.equal(mo, mr):
            problems.append(f"{name} positions differ: out has {int(mo.sum())}, reference {int(mr.sum())}, "
                            f"{int((mo != mr).sum())} mismatching")
    fin = torch.isfinite(ref_c)
    if clean_ab and beta == 0 and not bool(torch.isfinite(out).all()):
        problems.append("beta == 0 with NaN/Inf self produced non-finite output")
    if bool(fin.any()) and bool(torch.isfinite(out[fin]).all()):
        err = rel_fro(out[fin], ref[fin])
        if err > TOL[out_t]:
            problems.append(f"finite part relative error {err:.3e} > {TOL[out_t]:.1e}")
    n_nonfinite = int((~fin).sum())
    return problems, n_nonfinite, out.numel()


def _nan_inf_sweep(device, op, dtype, out_dtype, shape):
    failures = []
    idx = 0
    total_nonfinite = 0
    kinds = ("MxN", "1d", "Mx1", "1xN")
    for la in NAN_LAYOUTS:
        for lb in NAN_LAYOUTS:
            variants = [(1.0, kinds[idx % 4], False)] if op == "gemm" else [
                (0.5, kinds[idx % 4], False),        # NaN/Inf in a, b and self
                (0.0, kinds[(idx + 1) % 4], False),  # beta == 0: self all NaN/Inf, ignored
                (0.0, "MxN", True),                  # beta == 0, clean a/b: no NaN at all in the output
            ]
            for beta, sk, clean in variants:
                idx += 1
                seed = 1000 + idx
                problems, nnf, numel = _nan_inf_case(device, op, dtype, out_dtype, la, lb, shape, beta, sk, seed, clean)
                total_nonfinite += nnf
                if clean:
                    assert nnf == 0
                for p in problems:
                    failures.append(f"{op} {_dt(dtype)} out={_dt(out_dtype)} a={la} b={lb} beta={beta} self={sk} "
                                    f"seed={seed}: {p}")
    assert total_nonfinite > 0, "the injection produced no non-finite reference values (test is blind)"
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("out_dtype", [None, torch.float32], ids=_dt)
@pytest.mark.parametrize("dtype", DTYPES, ids=_dt)
@pytest.mark.parametrize("op", ["gemm", "addmm"])
def test_nan_inf_propagation_cpu(op, dtype, out_dtype):
    _nan_inf_sweep("cpu", op, dtype, out_dtype, (37, 29, 53))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("out_dtype", [None, torch.float32], ids=_dt)
@pytest.mark.parametrize("dtype", DTYPES, ids=_dt)
@pytest.mark.parametrize("op", ["gemm", "addmm"])
def test_nan_inf_propagation_gpu(op, dtype, out_dtype):
    torch.cuda.synchronize()
    c0 = dict(torch_tk.kernel_counters())
    # several tiles in every direction, with tails
    _nan_inf_sweep("cuda", op, dtype, out_dtype, (300, 260, 200))
    torch.cuda.synchronize()
    c1 = dict(torch_tk.kernel_counters())
    if HAS_HOPPER:
        assert c1["hopper"] > c0["hopper"] and c1["fallback"] == c0["fallback"], (c0, c1)


# ============================================================================ manual reproduction

if __name__ == "__main__":  # python3 test/test_fuzz.py {cpu|cuda} CASE_INDEX [CASE_INDEX ...]
    dev = sys.argv[1]
    all_cases = (make_cases(CPU_CASES, CPU_SEED, CPU_MAX_DIM, CPU_MAX_WORK) if dev == "cpu"
                 else make_cases(GPU_CASES, GPU_SEED, GPU_MAX_DIM, GPU_MAX_WORK))
    for i in map(int, sys.argv[2:]):
        c = all_cases[i]
        r = run_case(c, dev)
        print(c.describe(), f"err={r.err:.3e} tol={r.tol:.0e} elem={r.elem:.3f}", r.fail or "ok")
