"""Seeded fuzz tests of torch.ops.tk.{gemm, addmm, linear} (reliability evidence).

Standalone on purpose (only torch, numpy, torch_tk; no helpers from conftest.py), so that this
file with its two helpers, fuzz_cases.py (case generator, tensors) and fuzz_check.py (checks,
report), documents the method:

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

import math
import sys

import pytest
import torch

import torch_tk
from fuzz_cases import DTYPES, LAYOUTS, OPS, SELF_KINDS, make_cases, make_operand, _randn, _dt
from fuzz_check import TOL, poison, rel_fro, run_case, run_fuzz

HAS_CUDA = torch.cuda.is_available()
HAS_HOPPER = HAS_CUDA and torch_tk.hopper_available()

CPU_CASES, CPU_MAX_DIM, CPU_MAX_WORK, CPU_SEED = 300, 300, 27_000_000, 20240601
GPU_CASES, GPU_MAX_DIM, GPU_MAX_WORK, GPU_SEED = 2000, 5000, 2_000_000_000, 20240602


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
