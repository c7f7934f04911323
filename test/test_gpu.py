"""GPU tests of the tk ops. Every test is marked `gpu` and skipped without CUDA; the
kernel tests are also skipped unless torch_tk.hopper_available() (sm_90 + sm_90a build).

Correctness standard: fresh randn inputs, float64 reference, relative-norm error
||out - ref|| / ||ref||:
  bf16 < 1e-2, fp16 < 2e-3 (fp32 accumulate; output rounding alone gives ~2e-3 / ~3e-4),
  out_dtype=float32 < 1e-5 against the float64 product of the (already rounded) inputs.
Every output is checked to be fully written: before each call the caching allocator is
filled with NaN garbage (blocks of the output's size and larger are allocated, filled
with 0xFF bytes -- NaN in bf16, fp16 and fp32 -- and freed), so an unwritten element
shows up as NaN. Calls are made twice and must agree bitwise.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest
import torch

import torch_tk
from conftest import make_matrix, rel_err

_ONE_WG_DEFAULT = "81"  # TK_HOPPER_ONE_WG's default: plan_rules.h kOneWarpgroupWidths
_ODD_WIDTHS_DEFAULT = "262143"  # TK_HOPPER_ODD_WIDTHS's default: plan_rules.h kOddWidths
_ODD_MID_M, _ODD_UNSPLIT224 = 2048, 4096  # its bits 11 and 12: plan_rules.h kOddWidthsMidM, kOddWidthsRows64Unsplit224
_ODD_MID_M224, _ODD_144_UNALIGNED = 8192, 16384  # its bits 13 and 14: plan_rules.h kOddWidthsMidM224, kOddWidths144Unaligned
_ODD_SWAP_M224, _ODD_SWAP_M144 = 32768, 65536  # its bits 15 and 16: plan_rules.h kOddWidthsSwappedMid224 / 144
_ODD_MID192 = 131072  # its bit 17: plan_rules.h kOddWidthsMid192160

HAS_CUDA = torch.cuda.is_available()

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device"),
]

needs_hopper = pytest.mark.skipif(
    not (HAS_CUDA and torch_tk.hopper_available()),
    reason="needs the Hopper kernel (sm_90 GPU and an sm_90a build)",
)

DEV = "cuda"
TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}
FP32_OUT_TOL = 1e-5
LOWP = [torch.bfloat16, torch.float16]
LAYOUTS = [("n", "n"), ("n", "t"), ("t", "n"), ("t", "t")]


def _dt(d):
    return str(d).replace("torch.", "")


def _lay(x):
    return "".join(x).upper()


# ============================================================================ helpers


def poison_allocator(*nbytes_list, copies=3):
    """Fill caching-allocator blocks with 0xFF (NaN for every float dtype) and free them,
    so that the next allocations of these sizes come back full of NaN."""
    junk = []
    for nb in nbytes_list:
        nb = max(int(nb), 1)
        for _ in range(copies):
            junk.append(torch.full((nb,), 255, dtype=torch.uint8, device=DEV))
    # plus a large block that can be split for anything else
    junk.append(torch.full((64 << 20,), 255, dtype=torch.uint8, device=DEV))
    torch.cuda.synchronize()
    del junk


def _nbytes(shape, dtype):
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()


def run_poisoned(fn, out_shape, out_dtype, extra_bytes=()):
    """Call fn() twice, each time right after poisoning the allocator; both results must
    be bitwise identical (and are returned once)."""
    nb = _nbytes(out_shape, out_dtype)
    results = []
    for _ in range(2):
        poison_allocator(nb, *extra_bytes)
        out = fn()
        torch.cuda.synchronize()
        results.append(out)
    a, b = results
    assert a.shape == b.shape and a.dtype == b.dtype
    # bitwise equality (NaN-safe): compare raw bytes
    assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)), (
        "two identical calls gave different bits (unwritten output or a race)"
    )
    return a


class KernelWatch:
    """Counter / fallback-reason deltas over a block."""

    def __enter__(self):
        torch.cuda.synchronize()
        self.c0 = dict(torch_tk.kernel_counters())
        self.r0 = set(torch_tk.fallback_reasons())
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()
        c1 = dict(torch_tk.kernel_counters())
        self.delta = {k: c1[k] - self.c0.get(k, 0) for k in c1}
        self.new_reasons = set(torch_tk.fallback_reasons()) - self.r0
        return False

    def assert_hopper(self, at_least=1):
        assert self.delta["hopper"] >= at_least, f"Hopper kernel did not run: counters moved by {self.delta}"
        assert self.delta["fallback"] == 0, f"fell back: {self.delta}, reasons {self.new_reasons}"
        assert not self.new_reasons, f"new fallback reasons: {self.new_reasons}"


def ref64(a, b):
    return a.detach().double() @ b.detach().double()


def check(out, ref, tol, what):
    err = rel_err(out, ref)
    assert err < tol, f"{what}: relative error {err:.3e} >= {tol:.1e}"
    return err


def _check_meta(out, shape, dtype):
    assert out.device.type == "cuda"
    assert tuple(out.shape) == tuple(shape)
    assert out.dtype == dtype
    assert out.is_contiguous()


# ============================================================================ sanity of the method


def test_poison_helper_is_effective():
    nb = _nbytes((257, 333), torch.bfloat16)
    poison_allocator(nb)
    x = torch.empty((257, 333), dtype=torch.bfloat16, device=DEV)
    assert torch.isnan(x).all(), "poisoning does not reach fresh allocations: tests would be blind"


# ============================================================================ gemm grid

DIM_VALUES = [1, 7, 127, 129, 1000, 4095, 8192]
BASE = (256, 320, 288)  # moderate M, N, K

GRID_SHAPES = []
for _d in DIM_VALUES:
    GRID_SHAPES += [(_d, BASE[1], BASE[2]), (BASE[0], _d, BASE[2]), (BASE[0], BASE[1], _d)]
GRID_SHAPES += [(127, 129, 1000), (1000, 4095, 129), (129, 127, 4095), (4095, 1000, 127), (7, 8192, 1),
                (1, 1, 1), (1, 1, 8192), (8192, 1, 7), (64, 128, 64), (128, 256, 64), (192, 320, 80)]
GRID_SHAPES = list(dict.fromkeys(GRID_SHAPES))


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", GRID_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_grid(shape, layout, dtype):
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    w.assert_hopper(2)
    _check_meta(out, (M, N), dtype)
    check(out, ref64(a, b), TOL[dtype], f"gemm {shape} {_lay(layout)} {dtype}")


@needs_hopper
def test_gemm_8192_cube_bf16_nn():
    n = 8192
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (n, n), torch.bfloat16)
    w.assert_hopper(2)
    _check_meta(out, (n, n), torch.bfloat16)
    check(out, ref64(a, b), TOL[torch.bfloat16], "gemm 8192^3 bf16")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(129, 127, 1000), (256, 320, 4095), (1, 257, 64), (1000, 7, 8192)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_out_dtype_fp32(shape, layout, dtype):
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b, out_dtype=torch.float32), (M, N), torch.float32)
    w.assert_hopper(2)
    _check_meta(out, (M, N), torch.float32)
    check(out, ref64(a, b), FP32_OUT_TOL, f"gemm out fp32 {shape} {_lay(layout)}")


NONCONTIG = [
    ("slice", "n"), ("n", "slice"), ("offset", "t"), ("t", "offset"), ("expand", "n"), ("n", "expand"),
    ("slice", "slice"),
]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", NONCONTIG, ids=lambda x: "-".join(x))
@pytest.mark.parametrize("shape", [(129, 200, 136), (1, 64, 96), (300, 1, 40)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_noncontiguous(shape, layout, dtype):
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    w.assert_hopper(2)
    check(out, ref64(a, b), TOL[dtype], f"gemm {layout}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("case", ["aligned_ld", "misaligned_base", "odd_ld", "aligned_ld_colmajor",
                                  "row_vector_t", "col_vector"])
def test_gemm_pitch_and_alignment(case, dtype):
    """Row pitch != width (TMA reads a pitched matrix), misaligned base pointers and pitches
    that TMA cannot describe (must be copied), and degenerate 1-row/1-col views."""
    M, N, K = 200, 136, 264
    if case == "aligned_ld":  # row-major, ld = K + 8 (16-B multiple), base offset 16 B
        a = torch.randn(M, K + 16, device=DEV).to(dtype)[:, 8:K + 8]
        b = torch.randn(K, N + 24, device=DEV).to(dtype)[:, 16:N + 16]
    elif case == "misaligned_base":  # base 2 B off
        a = torch.randn(M, K + 1, device=DEV).to(dtype)[:, 1:]
        b = torch.randn(K, N + 1, device=DEV).to(dtype)[:, 1:]
    elif case == "odd_ld":  # ld*2 bytes not a multiple of 16
        a = torch.randn(M, K + 3, device=DEV).to(dtype)[:, :K]
        b = torch.randn(K, N + 5, device=DEV).to(dtype)[:, :N]
    elif case == "aligned_ld_colmajor":
        a = torch.randn(K + 8, M, device=DEV).to(dtype)[8:].t()
        b = torch.randn(N + 16, K + 8, device=DEV).to(dtype)[:N, :K].t()
    elif case == "row_vector_t":  # (1, K) with strides (1, 1), B (K, N) column-major
        M = 1
        a = torch.randn(K, 1, device=DEV).to(dtype).t()
        b = torch.randn(N, K, device=DEV).to(dtype).t()
    else:  # (M, 1) @ (1, N) (K = 1), both as weird views
        K = 1
        a = torch.randn(1, M, device=DEV).to(dtype).t()
        b = torch.randn(N, 1, device=DEV).to(dtype).t()
    assert a.shape == (M, K) and b.shape == (K, N)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    w.assert_hopper(2)
    check(out, ref64(a, b), TOL[dtype], case)


@needs_hopper
@pytest.mark.parametrize("shape", [(1000, 1001, 999), (300, 257, 100), (4097, 1100, 4097)],
                         ids=lambda s: "x".join(map(str, s)))
def test_repitch_copy_then_gemm_in_order(shape):
    """Both operands re-pitched (odd pitches) by one pad_lines launch, the GEMM launched as its
    programmatic dependent (GemmArgs::dependent): back-to-back calls on fresh operands, each
    result checked, so a GEMM that read a copy before the copy grid finished would show."""
    M, N, K = shape
    dtype = torch.bfloat16
    pairs = [(make_matrix(M, K, dtype, "n", device=DEV), make_matrix(K, N, dtype, "n", device=DEV)) for _ in range(4)]
    refs = [ref64(a, b) for a, b in pairs]
    with KernelWatch() as w:
        outs = [torch_tk.gemm(a, b) for a, b in pairs for _ in range(2)]
    w.assert_hopper(8)
    for i, out in enumerate(outs):
        check(out, refs[i // 2], TOL[dtype], f"call {i}")


@needs_hopper
@pytest.mark.parametrize("chunks", ["1", "4"])
def test_repitch_copy_chunks_in_child_process(chunks):
    """The re-pitch copy with 1 or 4 16-B chunks per thread (TK_HOPPER_COPY_CHUNKS; the default, 2,
    runs in every other test) on the tests of copied operands: odd and misaligned pitches, the
    dependent launch after the copy, and the unaligned-row shapes (odd K and N re-pitched)."""
    out = _pytest_child({"TK_HOPPER_COPY_CHUNKS": chunks},
                        "test_gemm_pitch_and_alignment or test_repitch_copy_then_gemm_in_order or test_gemm_unaligned_rows")
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 3 + len(UNALIGNED_ROW_SHAPES) * 4, out[-4000:]


# ============================================================================ addmm

SELF_SHAPES = {
    "vec": lambda M, N: (N,),
    "full": lambda M, N: (M, N),
    "row": lambda M, N: (1, N),
    "col": lambda M, N: (M, 1),
    "scalar": lambda M, N: (),
}


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("self_kind", list(SELF_SHAPES))
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (-1.0, 0.25), (0, 1.5)])
@pytest.mark.parametrize("shape,layout", [((129, 1000, 127), ("n", "t")), ((1000, 129, 4095), ("t", "n")),
                                          ((7, 320, 256), ("n", "n")), ((256, 7, 129), ("t", "t"))],
                         ids=lambda x: "x".join(map(str, x)) if isinstance(x[0], int) else _lay(x))
def test_addmm(shape, layout, beta, alpha, self_kind, dtype):
    M, N, K = shape
    m1 = make_matrix(M, K, dtype, layout[0], device=DEV)
    m2 = make_matrix(K, N, dtype, layout[1], device=DEV)
    if beta == 0:
        s = torch.full(SELF_SHAPES[self_kind](M, N), math.nan, device=DEV).to(dtype)
        ref = alpha * ref64(m1, m2)
    else:
        s = torch.randn(SELF_SHAPES[self_kind](M, N), device=DEV).to(dtype)
        ref = beta * s.double() + alpha * ref64(m1, m2)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.addmm(s, m1, m2, beta=beta, alpha=alpha), (M, N), dtype)
    w.assert_hopper(2)
    _check_meta(out, (M, N), dtype)
    check(out, ref, TOL[dtype], f"addmm {self_kind} beta={beta} alpha={alpha}")


# M x N x K with N % 8 != 0: rows that are not 16-B aligned, copied out of the staging box by the
# output's 16-B granules (copy_out_rows.cuh copy_out_granules; every misalignment 1..7 of a row start
# over the rows), with row tails, N tails inside a round and a single all-tail round (N < 64),
# many units per CTA (dynamic schedule), the ~1k problems of the suites, and the two-strip
# (one-warpgroup 128x128) kernels of ~256-token plans (255x7993x264, 250x8191x520), the 64x128 pairs
# (1003x1001x1032: B's 2064-B pitch splits sectors) and the 128x64 tiles below 16 k tiles (1003x1001x520).
UNALIGNED_ROW_SHAPES = [(1000, 1001, 999), (64, 1001, 64), (17, 65, 100), (1003, 1001, 520), (1003, 1001, 1032), (515, 130, 64),
                        (8, 9, 16), (300, 1027, 256), (2049, 2055, 1000), (129, 4100, 300), (255, 7993, 264),
                        (250, 8191, 520)]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", [("n", "n"), ("t", "t")], ids=_lay)
@pytest.mark.parametrize("shape", UNALIGNED_ROW_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_unaligned_rows(shape, layout, dtype):
    """Outputs whose rows are not 16-B aligned: the plain GEMM and addmm with a full C (beta,
    alpha), poisoned, twice bitwise equal, against the float64 reference."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    c = torch.randn(M, N, device=DEV).to(dtype)
    for what, fn, ref in [("gemm", lambda: torch_tk.gemm(a, b), lambda: ref64(a, b)),
                          ("addmm", lambda: torch_tk.addmm(c, a, b, beta=-0.5, alpha=2.0),
                           lambda: 2.0 * ref64(a, b) - 0.5 * c.double())]:
        with KernelWatch() as w:
            out = run_poisoned(fn, (M, N), dtype)
        w.assert_hopper(2)
        _check_meta(out, (M, N), dtype)
        check(out, ref(), TOL[dtype], f"{what} {shape} {_lay(layout)} {dtype}")


@needs_hopper
def test_unaligned_rows_reach_the_two_strip_kernels():
    """Guard for UNALIGNED_ROW_SHAPES: its ~256-token shapes still run the two-strip kernels."""
    for M, N, K in [(255, 7993, 264), (250, 8191, 520)]:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, torch.cuda.current_device())
        assert (plan["bm"], plan["bn"], plan["wg_rows"], plan["splits"]) == (128, 128, 128, 1), plan


@needs_hopper
def test_forced_clustered_256_is_taken():
    """Guard for the clustered256 child below: the forced tile clusters the unaligned-row shape
    with a wave of 128x256 tiles (plan.h keeps a forced cluster only there; fewer tiles run
    unclustered, i.e. the row passes)."""
    if os.environ.get("TK_HOPPER_TILE") != "0:128:256:1:2":
        pytest.skip("runs in a child process with TK_HOPPER_TILE=0:128:256:1:2 (test_copy_out_forms_in_child_process)")
    assert (2049, 2055, 1000) in UNALIGNED_ROW_SHAPES
    plan = torch_tk._C.hopper_dispatch_plan(2049, 2055, 1000, torch.cuda.current_device())
    assert (plan["bn"], plan["cluster"]) == (256, 2), plan


@needs_hopper
def test_unaligned_rows_reach_the_64_row_kernels():
    """Guard for the staged plain body (default) and the general_staged child below:
    UNALIGNED_ROW_SHAPES has unswapped, unsplit plans of one 64-row strip per warpgroup up to 128
    wide (64x128 and 128x64 tiles), the kernels with a staged plain body (plain_body.cuh
    has_staged_plain_body)."""
    for (M, N, K), bm in [((1000, 1001, 999), 64), ((1003, 1001, 520), 128)]:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, torch.cuda.current_device())
        assert (plan["bm"], plan["swap_ab"], plan["splits"], plan["wg_rows"]) == (bm, False, 1, 64), plan
        assert plan["bn"] <= 128, plan


@needs_hopper
@pytest.mark.parametrize("knobs", [{"TK_HOPPER_COPY_GRANULES": "0"}, {"TK_HOPPER_COPY_GRANULES": "1"},
                                   {"TK_HOPPER_TILE": "0:128:256:1:2"}, {"TK_HOPPER_PLAIN_STAGED": "0"}],
                         ids=["elements", "granule_loops", "clustered256", "general_staged"])
def test_copy_out_forms_in_child_process(knobs):
    """The other copy-outs of unaligned rows on the same outputs: element by element (=0), the
    granule loops in the kernels wider than 128 (=1), the clustered 128x256 kernels (forced
    tile), which keep those loops under the default, and the staged copy-out of the 64-row kernels'
    general body (TK_HOPPER_PLAIN_STAGED=0: by default the plain GEMMs of the test take the staged
    plain body, its addmm calls the general one). On 2026-12-02 this child (then with the staged
    plain body opt-in) failed on the H200: ptxas had put accumulator reads above the wgmma wait."""
    out = _pytest_child(knobs, "test_gemm_unaligned_rows or test_gemm_grid or test_forced_clustered_256", timeout=400)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= len(UNALIGNED_ROW_SHAPES) * 4, out[-4000:]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("self_dtype", ["input", "fp32"])
@pytest.mark.parametrize("self_kind", ["vec", "full", "full_t"])
def test_addmm_out_dtype_fp32(self_kind, self_dtype, dtype):
    M, N, K = 333, 200, 1000
    m1 = make_matrix(M, K, dtype, "n", device=DEV)
    m2 = make_matrix(K, N, dtype, "t", device=DEV)
    sd = dtype if self_dtype == "input" else torch.float32
    if self_kind == "full_t":
        s = torch.randn(N, M, device=DEV).to(sd).t()
    else:
        s = torch.randn(SELF_SHAPES[self_kind](M, N), device=DEV).to(sd)
    with KernelWatch() as w:
        out = run_poisoned(
            lambda: torch_tk.addmm(s, m1, m2, beta=0.75, alpha=-1.25, out_dtype=torch.float32), (M, N), torch.float32
        )
    w.assert_hopper(2)
    _check_meta(out, (M, N), torch.float32)
    check(out, 0.75 * s.double() - 1.25 * ref64(m1, m2), FP32_OUT_TOL, "addmm out fp32")


# ============================================================================ linear


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("has_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("in_shape", [(4, 129, 1000), (1000,), (3, 7, 4095), (2, 2, 2, 64)], ids=str)
def test_linear(in_shape, has_bias, dtype):
    K = in_shape[-1]
    N = 320 if K != 4095 else 129
    x = torch.randn(in_shape, device=DEV).to(dtype)
    w_ = torch.randn(N, K, device=DEV).to(dtype)
    bias = torch.randn(N, device=DEV).to(dtype) if has_bias else None
    ref = x.double() @ w_.double().t()
    if bias is not None:
        ref = ref + bias.double()
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.linear(x, w_, bias), (*in_shape[:-1], N), dtype)
    w.assert_hopper(2)
    _check_meta(out, (*in_shape[:-1], N), dtype)
    check(out, ref, TOL[dtype], f"linear {in_shape}")


@needs_hopper
def test_linear_noncontiguous_3d_input():
    dtype = torch.bfloat16
    x = torch.randn(7, 5, 264, device=DEV).to(dtype).transpose(0, 1)
    w_ = torch.randn(200, 264, device=DEV).to(dtype)
    bias = torch.randn(200, device=DEV).to(dtype)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.linear(x, w_, bias), (5, 7, 200), dtype)
    w.assert_hopper(2)
    check(out, x.double() @ w_.double().t() + bias.double(), TOL[dtype], "linear transposed input")


# ============================================================================ empty / K = 0


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_k0_and_empty(dtype):
    M, N = 129, 200
    a = torch.randn(M, 0, device=DEV).to(dtype)
    b = torch.randn(0, N, device=DEV).to(dtype)
    out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    _check_meta(out, (M, N), dtype)
    assert (out == 0).all()
    out = run_poisoned(lambda: torch_tk.gemm(a, b, out_dtype=torch.float32), (M, N), torch.float32)
    assert out.dtype == torch.float32 and (out == 0).all()
    s = torch.randn(N, device=DEV).to(dtype)
    out = run_poisoned(lambda: torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0), (M, N), dtype)
    check(out, (0.5 * s.double()).expand(M, N), TOL[dtype], "addmm K=0")
    nan_s = torch.full((M, N), math.nan, device=DEV).to(dtype)
    out = run_poisoned(lambda: torch_tk.addmm(nan_s, a, b, beta=0), (M, N), dtype)
    assert (out == 0).all()
    x = torch.randn(3, 5, 0, device=DEV).to(dtype)
    out = run_poisoned(lambda: torch_tk.linear(x, torch.randn(N, 0, device=DEV).to(dtype), s), (3, 5, N), dtype)
    check(out, s.double().expand(3, 5, N), TOL[dtype], "linear K=0")
    for M_, N_ in [(0, N), (M, 0), (0, 0)]:
        o = torch_tk.gemm(torch.randn(M_, 64, device=DEV).to(dtype), torch.randn(64, N_, device=DEV).to(dtype))
        _check_meta(o, (M_, N_), dtype)


# ============================================================================ fallback


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=_dt)
def test_fallback_visible_and_correct(dtype):
    M, N, K = 129, 127, 300
    a = torch.randn(M, K, device=DEV, dtype=dtype)
    b = torch.randn(N, K, device=DEV, dtype=dtype).t()
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    _check_meta(out, (M, N), dtype)
    assert w.delta["fallback"] >= 2, w.delta
    assert w.delta["hopper"] == 0, w.delta
    assert torch_tk.fallback_reasons(), "a fallback must leave a reason"
    assert all(isinstance(r, str) and r for r in torch_tk.fallback_reasons())
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32:
        tol = 2e-3
    check(out, ref64(a, b), tol, f"fallback {dtype}")


def test_fallback_reason_is_warned_once():
    import warnings

    a = torch.randn(33, 65, device=DEV, dtype=torch.float64)
    b = torch.randn(65, 17, device=DEV, dtype=torch.float64)
    torch_tk.gemm(a, b)  # the reason may have been warned already by an earlier test
    reasons = set(torch_tk.fallback_reasons())
    assert reasons
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        torch_tk.gemm(a, b)
    assert set(torch_tk.fallback_reasons()) == reasons, "same cause must not add a new reason"
    assert not [r for r in rec if "torch_tk" in str(r.message)], "a reason is warned only once"


# ============================================================================ errors on CUDA


@pytest.mark.parametrize(
    "case",
    ["gemm_b_cpu", "gemm_a_cpu", "addmm_self_cpu", "addmm_mat2_cpu", "linear_weight_cpu", "linear_bias_cpu"],
)
def test_device_mismatch_raises_value_error(case):
    """The real CUDA kernel (dispatch picks CUDA for mixed CPU/CUDA arguments) raises
    ValueError, like the fake impl."""
    dt = torch.bfloat16
    c = lambda *s: torch.randn(*s, device=DEV).to(dt)  # noqa: E731
    h = lambda *s: torch.randn(*s).to(dt)  # noqa: E731
    calls = {
        "gemm_b_cpu": lambda: torch.ops.tk.gemm(c(4, 5), h(5, 3)),
        "gemm_a_cpu": lambda: torch.ops.tk.gemm(h(4, 5), c(5, 3)),
        "addmm_self_cpu": lambda: torch.ops.tk.addmm(h(4, 3), c(4, 5), c(5, 3)),
        "addmm_mat2_cpu": lambda: torch.ops.tk.addmm(c(3), c(4, 5), h(5, 3)),
        "linear_weight_cpu": lambda: torch.ops.tk.linear(c(2, 5), h(3, 5), None),
        "linear_bias_cpu": lambda: torch.ops.tk.linear(c(2, 5), c(3, 5), h(3)),
    }
    with pytest.raises(ValueError):
        calls[case]()


_ERRORS_ON_CUDA = r"""
import torch, torch_tk
c = lambda *s, dt=torch.bfloat16: torch.randn(*s, device="cuda").to(dt)
cases = [
    (ValueError, "mat2", lambda: torch.ops.tk.addmm(c(3), c(4, 5), c(6, 3))),
    (ValueError, "self", lambda: torch.ops.tk.addmm(c(4), c(4, 5), c(5, 3))),
    (ValueError, "bias", lambda: torch.ops.tk.linear(c(2, 5), c(3, 5), c(4))),
    (ValueError, "a", lambda: torch.ops.tk.gemm(c(5), c(5, 3))),
    (ValueError, "weight", lambda: torch.ops.tk.linear(c(2, 5), c(3, 6))),
    (TypeError, "out_dtype", lambda: torch.ops.tk.gemm(c(4, 5), c(5, 3), out_dtype=torch.float16)),
    (TypeError, "b", lambda: torch.ops.tk.gemm(c(4, 5), c(5, 3, dt=torch.float16))),
]
for i, (exc, name, fn) in enumerate(cases):
    print("case", i, flush=True)
    try:
        fn()
    except exc as e:
        assert name in str(e), (i, str(e))
    else:
        raise AssertionError(f"case {i}: no {exc.__name__}")
print("ALL OK")
"""


def test_shape_and_dtype_errors_on_cuda():
    """Shape/dtype errors raised by the real CUDA kernel. Run in a subprocess so that a
    crash (e.g. a segfault while building the error message) is reported as a failure
    instead of killing the test session."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _ERRORS_ON_CUDA], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ALL OK" in r.stdout, (
        f"rc={r.returncode} (negative = killed by signal)\nstdout:\n{r.stdout[-2000:]}\nstderr:\n{r.stderr[-2000:]}"
    )


# ============================================================================ determinism, streams, graphs


def _check_gemm_and_addmm(shape, layout, dtype, what):
    """A plain GEMM (one Hopper call, poisoned twice, bitwise equal) on fresh operands of `layout`
    against the float64 reference, then _check_addmm_case (16-bit output); `what` names the path."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.gemm(a, b), (M, N), dtype)
    w.assert_hopper(1)
    check(out, ref64(a, b), TOL[dtype], f"gemm {shape} {_lay(layout)} {dtype} {what}")
    _check_addmm_case(shape, layout, dtype, False)


def _check_addmm_case(shape, layout, dtype, out_fp32):
    """2 * A @ B + 0.5 * bias on fresh operands of `layout`, twice after poisoning the allocator
    (bitwise equal), on the Hopper kernel, against the float64 reference."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, layout[0], device=DEV)
    b = make_matrix(K, N, dtype, layout[1], device=DEV)
    bias = torch.randn(N, device=DEV).to(torch.float32 if out_fp32 else dtype)
    out_dtype = torch.float32 if out_fp32 else dtype
    with KernelWatch() as w:
        out = run_poisoned(lambda: torch_tk.addmm(bias, a, b, beta=0.5, alpha=2.0,
                                                  out_dtype=torch.float32 if out_fp32 else None), (M, N), out_dtype)
    w.assert_hopper(2)
    _check_meta(out, (M, N), out_dtype)
    ref = 2.0 * ref64(a, b) + 0.5 * bias.double()
    check(out, ref, 1e-5 if out_fp32 else TOL[dtype], f"addmm {shape} {_lay(layout)} {dtype} fp32out={out_fp32}")


@needs_hopper
@pytest.mark.parametrize("out_fp32", [False, True], ids=["same", "fp32out"])
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(2049, 2055, 1000), (2049, 2055, 960), (4097, 1100, 520)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_dynamic_schedule(shape, layout, dtype, out_fp32):
    """Several waves of units handed out by the atomic ticket counter (plan.h `dynamic`), with
    tails in M, N and K; the addmm terms ride along. Under TK_HOPPER_STREAMK=3 (plan.h
    kStreamKTail) 2049x2055x1000 (153 tiles, 16 k tiles) takes the stream-K tail in 16-bit outputs,
    the 960-deep one not."""
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32)["dynamic"], "shape no longer exercises the dynamic schedule"
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(2049, 4104, 64), (4097, 2056, 130), (3000, 3000, 200), (1500, 5000, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_short_k_many_units(shape, layout, dtype):
    """Several units per CTA whose k ranges are shorter than a unit's epilogue rounds (1-4 k
    tiles against 4 rounds of 64 columns; N % 8 == 0: TMA-store epilogue): the deferred epilogue (TK_HOPPER_STORE=deferred,
    epilogue.cuh pack_unit) must store a held round before packing the next unit's."""
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = torch_tk._C.hopper_plan(M, N, K, sms, True)
    # (1500x5000x1000: 2-CTA clusters, plan_rules.h kSplitSectorClusters; units are per cluster)
    assert plan["units"] > plan["grid"] // plan["cluster"] and plan["splits"] == 1, \
        f"shape no longer gives several units per CTA: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("shape", [(2049, 4104, 64), (3000, 3000, 200), (60, 1032, 100), (330, 4000, 136)],
                         ids=lambda s: "x".join(map(str, s)))
def test_addmm_alpha_without_c(shape, dtype):
    """alpha != 1 and no C term (beta = 0): the epilogue's affine path with no C rows
    (epilogue.cuh out_pair), in the deferred 128x256 rounds (several units per CTA), the swapped
    transposed store and the one-warpgroup 128x128 tiles; alpha = 1 the plain path (TK_PLAIN_EPILOGUE, default 1)."""
    M, N, K = shape
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    nan_s = torch.full((N,), math.nan, device=DEV).to(dtype)  # ignored at beta = 0
    for alpha in (-1.75, 1.0):
        out = run_poisoned(lambda: torch_tk.addmm(nan_s, a, b, beta=0, alpha=alpha), (M, N), dtype)
        check(out, alpha * ref64(a, b), TOL[dtype], f"addmm beta=0 alpha={alpha} {shape}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
def test_gemm_long_run_cluster(layout, dtype):
    """A long-running plan (plan_rules.h kLongRunWork: 561 tiles x 257 k tiles) takes 2-CTA clusters
    multicasting the B tile and a 16-row-tile raster band by default: 33 row tiles, so the last
    pair's second CTA lies past M; tails in N and K; the addmm terms ride along."""
    shape = (4100, 4100, 16390)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = torch_tk._C.hopper_plan(*shape, sms, True)
    if os.environ.get("TK_HOPPER_CLUSTER") is None and os.environ.get("TK_HOPPER_GROUP_M") is None:
        assert (plan["cluster"], plan["group_m"], plan["bn"]) == (2, 16, 256), plan
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("out_fp32", [False, True], ids=["same", "fp32out"])
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(64, 2100, 4000), (300, 200, 3000), (129, 1000, 8200)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_fused_split_k(shape, layout, dtype, out_fp32):
    """Split-K finished inside the GEMM kernel (opt-in TK_HOPPER_FUSED_SPLIT=1, plan.h
    `fused_split`): the splits of a tile wait for each other's ready flags, then each stores a
    slice. Swapped and unswapped plans, 4-16 splits, tails in M, N and K; two poisoned runs must
    agree bitwise. The knob is read once per process: test_fused_split_k_in_child_process runs
    this test under it."""
    if os.environ.get("TK_HOPPER_FUSED_SPLIT") != "1":
        pytest.skip("runs in a child process with TK_HOPPER_FUSED_SPLIT=1 (test_fused_split_k_in_child_process)")
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32, fuse_split=True)
    assert plan["splits"] > 1 and plan["fused_split"], f"shape no longer exercises fused split-K: {plan}"
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,out_fp32", [((120, 1000, 9000), False), ((120, 1000, 9000), True),
                                            ((256, 1000, 3000), True), ((121, 1001, 9000), False)],
                         ids=["120x1000x9000", "120x1000x9000-fp32out", "256x1000x3000-fp32out", "121x1001x9000"])
def test_gemm_split_k_128x128(shape, out_fp32, layout, dtype):
    """Split-K on 128 x 128 tiles with an odd number of k tiles (141: 16 splits; 47: 8 splits of
    fp32-out plans): with several k tiles per stage (TK_BM128_KT=2 builds) every split range must
    start on a stage and the last one ends on a zero-filled tile past K (kittens::split_k_range
    align); tails in M, N and K, addmm terms. The reduction's vector path (M * N a multiple of 4)
    and, at 121x1001 (odd), its scalar path (splitk_reduce.cuh)."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32)
    assert plan["bm"] == 128 and plan["bn"] == 128 and plan["splits"] > 1, f"shape no longer splits 128x128 tiles: {plan}"
    # TK_HOPPER_ONE_WG with bit 2 (test_one_warpgroup_split_k_in_child_process): one warpgroup, two strips
    one_wg = int(os.environ.get("TK_HOPPER_ONE_WG", _ONE_WG_DEFAULT))  # (bit 3 leaves these 128-wide plans as they are)
    assert plan["wg_rows"] == (128 if (one_wg & 5) == 5 else 64), plan
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(150, 2100, 1000), (200, 4100, 1000), (128, 4096, 1000), (40, 8200, 520),
                                   (100, 8200, 8300), (128, 4096, 40), (130, 2100, 130)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_bm64(shape, layout, dtype):
    """64-row tiles (one consumer warpgroup; plan.h `bm`): unswapped, unclustered (64x64 with an
    odd number of row tiles; 64x128; a 16-B output pitch: the TMA-store epilogue; the CTA pairs
    those plans had before 2026-11-28e: test_bm64_pairs_in_child_process) and swapped unsplit
    plans (64x64, 64x128), tails in M, N and K, addmm terms; one k tile (K = 40), three and nine:
    the 64x64 kernels load two k tiles per stage, so an odd count ends on a tile past K that
    arrives zero-filled."""
    if os.environ.get("TK_HOPPER_BM64") == "0":
        pytest.skip("TK_HOPPER_BM64=0 turns 64-row tiles off")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    assert plan["bm"] == 64, f"shape no longer exercises 64-row tiles: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (900, 1000, 2040)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_mid64_pairs(shape, layout, dtype):
    """One wave of 64x128 tiles in 2-CTA clusters multicasting the B tile (plan_rules.h kMid64Pairs), the
    plan for a B whose line pitch splits 32-B sectors (2000 / 4080 B in F.linear's layout; the
    other layouts get their own plans, checked all the same): N and K tails, and an M tail whose
    last pair's second CTA lies past M (900 rows: 15 row tiles in 8 pairs), addmm terms."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    mid64 = int(os.environ.get("TK_HOPPER_MID64", "3"))
    want = (64, 128, 2, 1) if mid64 == 3 else (64, 128, 1, 1) if mid64 == 1 else (128, 64, 1, 1)
    assert (plan["bm"], plan["bn"], plan["cluster"], plan["splits"]) == want, plan
    _check_gemm_and_addmm(shape, layout, dtype, "mid64 pairs")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
def test_gemm_sector_clusters(layout, dtype):
    """128x256 plans of a wave or more in 2-CTA clusters for a B pitch that splits 32-B sectors
    (plan_rules.h kSplitSectorClusters; 2000 B in F.linear's layout): 2200x4000x1000, 144 cluster units
    on the dynamic schedule, M / N / K tails (the last row-tile pair half past M)."""
    M, N, K = 2200, 4000, 1000
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    if os.environ.get("TK_HOPPER_CLUSTER"):
        pytest.skip("TK_HOPPER_CLUSTER overrides the plan's clusters")
    on = os.environ.get("TK_HOPPER_SECTOR_CLUSTERS", "1") != "0"
    assert (plan["bm"], plan["bn"], plan["splits"]) == (128, 256, 1) and plan["cluster"] == (2 if on else 1), plan
    assert plan["dynamic"], plan
    _check_gemm_and_addmm((M, N, K), layout, dtype, "sector clusters")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(100, 20000, 520), (250, 33696, 256)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_swap_ab_tma_store(shape, layout, dtype):
    """Swap-AB plans without a K split store a 16-bit output with a 16-B row pitch through the
    transposed TMA-store epilogue (epilogue.cuh kStoreTmaTransposed: each 64x64 staging box holds
    one 128-B line per token): 128x128 and 128x256 tiles, a token tail (M not a multiple of 64),
    a weight tail (N not a multiple of 64), addmm terms, 4 layouts."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    assert plan["swap_ab"] and plan["splits"] == 1 and N % 8 == 0, f"shape no longer takes this path: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,out_fp32", [((240, 8200, 520), False), ((130, 8200, 999), True),
                                            ((330, 4000, 1000), False), ((500, 4000, 130), True),
                                            ((240, 8192, 8192), False), ((240, 8199, 8191), False)],
                         ids=["240x8200x520", "130x8200x999-fp32out", "330x4000x1000", "500x4000x130-fp32out",
                              "240x8192x8192", "240x8199x8191"])
def test_gemm_one_warpgroup_128x128(shape, out_fp32, layout, dtype):
    """128x128 tiles run by one consumer warpgroup as two 64-row strips (plan_rules.h kOneWarpgroupWidths,
    gemm_layout WG_ROWS_ = 128): unswapped (16-bit output: plan_rules.h kUnswapOneWave128) and swapped
    (fp32 output; 16-bit too under TK_HOPPER_UNSWAP128=0, test_unswap128_off_in_child_process),
    token and weight tails, odd K, 16-bit output through the TMA-store epilogue (one staging area
    per strip) and fp32 output from registers, addmm terms, 4 layouts. From K = 6144 (plan_rules.h
    kRingStagingMinKTiles) the staging boxes lie in the stage ring (the last two shapes: a TMA
    store, and an odd output pitch through the staged copy-out after an odd-K re-pitch copy)."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32)
    if os.environ.get("TK_HOPPER_ONE_WG") in ("0", "2"):
        assert plan["wg_rows"] == 64
        pytest.skip("TK_HOPPER_ONE_WG turns one-warpgroup 128x128 tiles off")
    assert plan["wg_rows"] == 128 and plan["bm"] == 128 and plan["bn"] == 128, f"shape no longer takes this path: {plan}"
    ring = os.environ.get("TK_HOPPER_RING_STAGING")  # the knob, else the rule (K >= 6144)
    assert plan["ring_staging"] == (not out_fp32 and (ring == "1" or (ring is None and -(-K // 64) >= 96))), plan
    _check_addmm_case(shape, layout, dtype, out_fp32)


@needs_hopper
def test_unswap128_off_in_child_process():
    """Swapped one-wave 128x128 plans kept swapped (TK_HOPPER_UNSWAP128=0): the one-warpgroup
    kernels' transposed TMA-store epilogue, one staging area per strip (240x8200x520)."""
    out = _pytest_child({"TK_HOPPER_UNSWAP128": "0"}, "test_gemm_one_warpgroup_128x128", timeout=400)
    assert re.search(r"\b48 passed", out), out[-4000:]


@needs_hopper
def test_dispatch_plan_is_the_default_plan():
    """hopper_dispatch_plan (what the dispatcher and bench_gemm's plan column use) is hopper_plan
    with this GPU's SM count when no TK_HOPPER_* knob is set, for contiguous operands in each layout:
    the odd widths only where the Y operand is K-major (odd_layouts), the sector bits from the
    pitches TMA reads (a pitch that is not a 16-B multiple is re-pitched into whole lines)."""
    if any(k.startswith("TK_HOPPER_") for k in os.environ):
        pytest.skip("a TK_HOPPER_* knob is set in this process")
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def split(pitch_bytes):
        return pitch_bytes % 16 == 0 and pitch_bytes % 32 != 0  # plan_rules.h split_sectors_contiguous

    for M, N, K in [(8192, 8192, 8192), (128, 4096, 4096), (1000, 1001, 999), (64, 4100, 4000), (1024, 1024, 1024),
                    (256, 8192, 8192), (172, 8192, 4096),  # ring staging
                    (4097, 4097, 4097), (1024, 14336, 4096), (1536, 1536, 1000), (1500, 6152, 1032)]:  # odd widths, sectors
        for out_fp32 in (False, True):
            assert torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32) == \
                torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32)
            for lay in LAYOUTS:
                a_mn, b_mn = lay[0] == "t", lay[1] == "n"
                sectors = (1 if split(2 * (M if a_mn else K)) else 0) | (2 if split(2 * (N if b_mn else K)) else 0)
                want = torch_tk._C.hopper_plan(M, N, K, sms, not out_fp32, odd_layouts=(0 if a_mn else 1) | (0 if b_mn else 2),
                                               split_sectors=sectors)
                assert torch_tk._C.hopper_dispatch_plan(M, N, K, 0, out_fp32, _lay(lay)) == want, (M, N, K, lay)
    # 5 waves of 128x256 or of 128x224: unswapped where B is column-major (plan_rules.h kOddWidthsMidM224),
    # swapped where only A is row-major (torch.mm's NN: kOddWidthsSwappedMid224), none for TN
    want224 = {"NT": (False, 224), "NN": (True, 224), "TT": (False, 224), "TN": (False, 256)}
    for lay, want in want224.items():
        p = torch_tk._C.hopper_dispatch_plan(4097, 4097, 4097, 0, False, lay)
        assert (p["swap_ab"], p["bn"]) == (want if sms == 132 or lay == "TN" else (p["swap_ab"], p["bn"])), (lay, p)
    with pytest.raises(ValueError, match="layout"):
        torch_tk._C.hopper_dispatch_plan(64, 64, 64, 0, False, "XT")


# The tests whose calls go through the 16-bit epilogue's staging box (TMA store, transposed TMA
# store, staged copy-out) or around it (register stores, fp32 output, split-K).
_EPILOGUE_TESTS = ("test_gemm_grid or test_addmm or test_gemm_pitch_and_alignment or test_gemm_bm64 or "
                   "test_gemm_one_warpgroup_128x128 or "
                   "test_gemm_swap_ab_tma_store or test_gemm_dynamic_schedule or test_linear or test_gemm_noncontiguous or "
                   "test_gemm_short_k_many_units")


def _pytest_child(knobs, tests, timeout=400):
    """Runs this file's `tests` (a -k expression) in a child process with the TK_HOPPER_* `knobs`
    set (they are read once per process) and returns its pytest stdout; the child must pass."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.abspath(__file__),
                        "-k", tests], env=dict(os.environ, **knobs), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0 and "failed" not in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]
    return r.stdout


@needs_hopper
@pytest.mark.parametrize("variant", ["stmatrix", "copy", "deferred", "tma"])
def test_store_variants_in_child_process(variant):
    """TK_HOPPER_STORE=stmatrix (staging box filled by stmatrix, epilogue.cuh), =copy (no TMA
    store), =deferred (rounds stored under the next unit's mainloop) and =tma (stored at once)
    pass the epilogue tests; the child confirms it ran that variant."""
    env = dict(os.environ, TK_HOPPER_STORE=variant)
    q = subprocess.run([sys.executable, "-c", "import torch_tk; print(torch_tk._C.hopper_store_variant())"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert q.stdout.strip() == variant, q.stdout + q.stderr
    out = _pytest_child({"TK_HOPPER_STORE": variant}, _EPILOGUE_TESTS)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-4000:]


@needs_hopper
def test_general_body_in_child_process():
    """TK_HOPPER_PLAIN_BODY=0: plain GEMMs take the kernels' general body (the one addmm and the
    other store variants take) instead of their plain bodies (csrc/gemm/hopper/plain_body.cuh), and
    pass the epilogue tests."""
    out = _pytest_child({"TK_HOPPER_PLAIN_BODY": "0"}, _EPILOGUE_TESTS)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-4000:]


@needs_hopper
@pytest.mark.parametrize("knob", ["TK_HOPPER_PRE_ISSUE", "TK_HOPPER_EARLY_START"])
def test_start_forms_in_child_process(knob):
    """The unclustered kernels' start without the pre-issue (TK_HOPPER_PRE_ISSUE=0: the first loads
    from the producer branch) and without the early start (TK_HOPPER_EARLY_START=0: behind a
    __syncthreads, no pre-issue either) passes the epilogue tests (gemm_kernel.cuh)."""
    out = _pytest_child({knob: "0"}, _EPILOGUE_TESTS)
    m = re.search(r"\b(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-4000:]


@needs_hopper
@pytest.mark.parametrize("bits", ["0", "3"])
def test_l2_evict_first_in_child_process(bits):
    """TK_HOPPER_EVICT_FIRST=0 (no L2 policy, also where the plan sets one for B: M <= 256) and =3
    (both operands under evict_first, through the plain and the multicast TMA loads) pass the
    64-row, swap-AB and dynamic-schedule tests."""
    out = _pytest_child({"TK_HOPPER_EVICT_FIRST": bits},
                        "test_gemm_bm64 or test_gemm_swap_ab_tma_store or test_gemm_dynamic_schedule")
    assert re.search(r"\b120 passed", out), out[-4000:]


@needs_hopper
def test_fused_split_k_in_child_process():
    out = _pytest_child({"TK_HOPPER_FUSED_SPLIT": "1"}, "test_gemm_fused_split_k", timeout=300)
    assert re.search(r"\b48 passed", out), out[-4000:]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(250, 1300, 9001), (200, 4100, 14400), (232, 4100, 11000), (255, 8199, 14335)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_split_k_wide(shape, layout, dtype):
    """Split 128x256 plans of 193..256 tokens: swapped 128x256 tiles x 4 splits (200x4100x14400), or,
    where the partials cost more (plan_rules.h kUnswapOneWave128 = 2), unswapped 128x128 tiles with fewer
    splits (12 -> 6, 4 -> 2) or none (255x8199x14335: 2 -> unsplit, one warpgroup, ring staging);
    under TK_HOPPER_ONE_WG bit 3 (test_one_warpgroup_split_k_in_child_process) swapped 128x128
    one-warpgroup tiles with fewer splits instead; tails in M, N and K, addmm terms."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    want = {  # (swap_ab, bn, splits, wg_rows): default, TK_HOPPER_ONE_WG=13
        (250, 1300, 9001): ((False, 128, 6, 64), (True, 128, 6, 128)),
        (200, 4100, 14400): ((True, 256, 4, 64), (True, 128, 2, 128)),
        (232, 4100, 11000): ((False, 128, 2, 64), (True, 128, 2, 128)),
        (255, 8199, 14335): ((False, 128, 1, 128), (False, 128, 1, 128)),
    }[shape][(int(os.environ.get("TK_HOPPER_ONE_WG", _ONE_WG_DEFAULT)) & 13) == 13]
    assert (plan["swap_ab"], plan["bn"], plan["splits"], plan["wg_rows"]) == want, f"shape no longer takes this plan: {plan}"
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(190, 1030, 14001), (177, 1999, 14335), (192, 4100, 14400), (150, 4100, 14001)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_split_k_192(shape, layout, dtype):
    """Split 128x192 plans of 129..192 tokens: where the partials cost more (plan_rules.h
    kUnswapOneWave128 = 3) unswapped 128x128 tiles at half the splits (14 -> 7, 8 -> 4), the second
    token tile mostly past M; else swapped 128x192 tiles x 4 splits, or up to 160 tokens with a
    row-major A swapped 128x160 ones (kOddWidths bit 5; a column-major A keeps 128x192); tails in M,
    N and K, addmm terms."""
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    want = {(190, 1030, 14001): (False, 128, 7, 64), (177, 1999, 14335): (False, 128, 4, 64),
            (192, 4100, 14400): (True, 192, 4, 64), (150, 4100, 14001): (True, 160, 4, 64)}[shape]
    assert (plan["swap_ab"], plan["bn"], plan["splits"], plan["wg_rows"]) == want, f"shape no longer takes this plan: {plan}"
    if want[1] == 160:  # this layout's plan (the dispatcher's odd_layouts: bit 0 A row-major, bit 1 B column-major)
        lay = (layout[0] == "n") | (layout[1] == "t") << 1
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        assert torch_tk._C.hopper_plan(M, N, K, sms, odd_layouts=lay)["bn"] == (160 if lay & 1 else 192)
    _check_addmm_case(shape, layout, dtype, False)


@needs_hopper
def test_one_warpgroup_split_k_in_child_process():
    """The one-warpgroup (two-strip) 128x128 kernels on split-K plans, and split 128x256 plans
    re-planned as those (TK_HOPPER_ONE_WG=13: bits 0, 2, 3; opt-in)."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": "13"}, "test_gemm_split_k_128x128 or test_gemm_split_k_wide", timeout=400)
    assert re.search(r"\b64 passed", out), out[-4000:]


@needs_hopper
def test_partial_register_stores_in_child_process():
    """TK_HOPPER_PARTIAL_TMA=0: split-K partials stored from registers (store_unit; the path that
    N % 4 != 0 and the fp32-output kernels always take) instead of the staged TMA rounds
    (store_unit_partial_tma), on the 128x128 and 128x256 split tests."""
    out = _pytest_child({"TK_HOPPER_PARTIAL_TMA": "0"}, "test_gemm_split_k_128x128 or test_gemm_split_k_wide",
                        timeout=400)
    assert re.search(r"\b64 passed", out), out[-4000:]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(190, 20000, 520), (180, 5000, 9000), (250, 11000, 300), (17000, 150, 8300),
                                   (330, 4100, 9000), (200, 6000, 16000), (380, 14300, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_bn192(shape, layout, dtype):
    """128x192 tiles (plan_rules.h kWidth192, default TK_HOPPER_BN192=3): swapped
    190 tokens over 157 units on <= 132 CTAs (dynamic schedule: a CTA's next unit reuses the
    epilogue's 3 staging buffers while the previous unit's held rounds are stored), swapped 180
    tokens split 3 ways (fp32 partials + the reduction; on 8200-wide weights 180 tokens now take
    64 x 192 tiles, test_gemm_token_rows64), and 250x11000 re-planned unswapped (116
    tiles instead of 86 swapped 128x256), and 17000x150 unswapped over 133 units (a 300-B output
    pitch: the staged copy-out epilogue, its 3 buffers reused across units); split 128x256 plans
    re-planned (330x4100x9000: 66 tiles x 2 splits; 200x6000x16000: swapped 47 x 2 -> unswapped
    64 x 2), and 380x14300x1000 in 225 tiles instead of 168 of 128x256 (two waves either way);
    tails in M, N and K, plain GEMM and addmm terms."""
    if os.environ.get("TK_HOPPER_BN192", "3") != "3":
        pytest.skip("TK_HOPPER_BN192 is set to another rule: these shapes no longer take 128x192 tiles")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
    assert plan["bm"] == 128 and plan["bn"] == 192, f"shape no longer takes 128x192 tiles: {plan}"
    _check_gemm_and_addmm(shape, layout, dtype, "bn192")


def _odd_width_bits():
    return int(os.environ.get("TK_HOPPER_ODD_WIDTHS", _ODD_WIDTHS_DEFAULT))


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(320, 8200, 520), (300, 8200, 999), (150, 20000, 256), (150, 16000, 4100),
                                   (320, 8201, 520), (300, 4100, 9000)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_bn160(shape, layout, dtype):
    """128x160 tiles (plan_rules.h kOddWidths bit 0, swap-AB with a row-major A; a column-major A gets
    another plan): the tokens on wgmma's n side in 160-wide tiles whose last epilogue round is 32 columns
    (its own transposed TMA box): two full token tiles (320), a token tail (300: the second tile's
    Y box holds 140 rows), 157 units on <= 132 CTAs (a CTA's second unit reuses the 3 staging
    buffers), one wave with a K tail, and an odd output pitch (register stores); 300x4100x9000 split
    2 ways (plan.h bn192 = 3: fp32 partials through 5 TMA rounds of 32 columns, the reduction);
    weight tails (8200 = 64 x 128 + 8), plain GEMM and addmm terms."""
    if not _odd_width_bits() & 1:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the 160-wide tiles")
    M, N, K = shape
    if K > 8192 and os.environ.get("TK_HOPPER_BN192", "3") != "3":
        pytest.skip("TK_HOPPER_BN192 is set to another rule: split plans keep 128x256 tiles")
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A)
    assert plan["swap_ab"] and plan["bn"] == 160, f"shape no longer takes 128x160 tiles: {plan}"
    _check_gemm_and_addmm(shape, layout, dtype, "bn160")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(384, 6144, 520), (340, 6150, 8200), (380, 6144, 4100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_bn144(shape, layout, dtype):
    """Unswapped 128x144 tiles (plan_rules.h kOddWidths bit 1, for a column-major B; other layouts get
    other plans, checked all the same): the narrow last epilogue round (16 columns) copied out by
    rows after two TMA-stored rounds (6144: 16-B output pitch) or every round copied out (6150:
    odd pitch, a 102-column last tile; one wave of those only from 128 k tiles, bit 14), an M tail
    (340, 380) and a K tail (4100, 8200). Plain GEMM and addmm terms."""
    if not _odd_width_bits() & 2:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the 144-wide tiles")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    assert (plan["swap_ab"], plan["bn"], plan["splits"]) == (False, 144, 1), f"shape no longer takes 128x144: {plan}"
    _check_gemm_and_addmm(shape, layout, dtype, "bn144")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,width,units", [((1536, 1544, 1008), 144, 132), ((700, 3104, 2000), 144, 132),
                                               ((3000, 1536, 4112), 144, 264), ((2500, 2552, 2064), 224, 240),
                                               ((2600, 2512, 3008), 224, 252)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else str(s))
def test_gemm_odd_widths_mid_m(shape, width, units, layout, dtype):
    """Mid-size products past 512 tokens on unswapped 128 x 144 / 128 x 224 tiles (plan_rules.h
    kOddWidthsMidM, odd_widths bit 11, for a column-major B whose pitch keeps whole sectors and
    16-B-aligned output rows; other layouts get other plans, checked all the same): one wave of 132
    one-warpgroup 144-wide tiles (M = 1536 = 12 x 128 exactly, an M tail at 700), two waves of
    144 / 224 on two warpgroups from the dynamic schedule (3000, 2500, 2600: M tails), K tails (1008,
    4112, 2064, 3008), the 16- / 32-column last epilogue round, N tails (last tiles 104, 80, 96 of 144
    columns; 88, 48 of 224). Plain GEMM and addmm terms."""
    need = _ODD_MID_M | (2 if width == 144 else 4)  # with bit 1 (144) or bit 2 (224)
    if _odd_width_bits() & need != need:
        pytest.skip(f"TK_HOPPER_ODD_WIDTHS leaves out the mid-size 128 x {width} plans")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["units"]) == (False, 128, width, 1, units), plan
    _check_gemm_and_addmm(shape, layout, dtype, f"mid-size 128x{width}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,units", [((2600, 2601, 2000), 252), ((4097, 4097, 1030), 627),
                                         ((1024, 14336, 1024), 512)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else str(s))
def test_gemm_odd_widths_mid_m224(shape, units, layout, dtype):
    """Multi-wave unswapped 128 x 224 plans past 512 tokens (plan_rules.h kOddWidthsMidM224, odd_widths
    bit 13, for a column-major B whose pitch keeps whole sectors; other layouts get other plans,
    checked all the same), from the dynamic schedule: 2 waves with M, N and K tails and output rows
    copied out (2601 columns: a 137-column last tile), 5 waves with re-pitched operand copies (K = 1030)
    and a 65-column last tile, 4 full waves without tails. Plain GEMM and addmm terms."""
    if _odd_width_bits() & (_ODD_MID_M224 | 4) != _ODD_MID_M224 | 4:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the multi-wave 128 x 224 plans")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["units"]) == (False, 128, 224, 1, units), plan
        assert plan["dynamic"], plan
    _check_gemm_and_addmm(shape, layout, dtype, "mid-size 128x224, several waves")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape,bn,units", [((2600, 2601, 2000), 224, 252), ((2500, 2601, 1030), 224, 252),
                                            ((1500, 1536, 1030), 144, 132), ((3000, 1536, 2000), 144, 252)],
                         ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else str(s))
def test_gemm_odd_widths_swapped_mid(shape, bn, units, layout, dtype):
    """Swapped 128 x 224 / 128 x 144 plans past 320 tokens for a row-major A and B (torch.mm's NN;
    plan_rules.h kOddWidthsSwappedMid224 / 144, odd_widths bits 15 / 16: the odd width runs along M,
    A^T as the K-major Y): 224 in 2 waves with M, N and K tails and output rows copied out (2601
    columns), 224 with re-pitched operand copies (K = 1030), 144 in one wave with an M tail (1500 rows:
    a 60-row last column tile) and a re-pitched K, 144 in 2 waves from the dynamic schedule. Other
    layouts get other plans, checked all the same. Plain GEMM and addmm terms."""
    bits = _ODD_SWAP_M224 if bn == 224 else _ODD_SWAP_M144
    if _odd_width_bits() & bits != bits:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the swapped mid-size plans")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, "NN")
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["units"]) == (True, 128, bn, 1, units), plan
        assert plan["dynamic"] == (units > 132), plan
        assert torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, "NT")["swap_ab"] is False
    _check_gemm_and_addmm(shape, layout, dtype, f"swapped mid-size 128x{bn}")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", [(3000, 3001, 2000), (2030, 2555, 1030), (3000, 1600, 4000), (6100, 1000, 1040)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_mid_widths_192_160(shape, layout, dtype):
    """Mid-size 128 x 192 and 128 x 160 plans (plan_rules.h kOddWidthsMid192160, odd_widths bit 17):
    192 in either orientation for any layout, 160 unswapped for a column-major B and swapped for a
    row-major A and B (as the 224 candidate), from the dynamic schedule; M, N and K tails, output rows
    copied out (3001 / 2555 / 1000 columns), re-pitched operand copies (K = 1030), swapped 192 at 6100
    tokens (8 x 32 tiles: a 148-row last column tile). Plain GEMM and addmm terms."""
    if _odd_width_bits() & _ODD_MID192 != _ODD_MID192:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the mid-size 192 / 160 candidates")
    M, N, K = shape
    want = {(3000, 3001, 2000): {"NT": (False, 192, 384), "NN": (False, 192, 384), "TN": (False, 192, 384),
                                 "TT": (False, 192, 384)},
            (2030, 2555, 1030): {"NT": (False, 160, 256), "NN": (True, 160, 260), "TN": (False, 192, 224),
                                 "TT": (False, 160, 256)},
            (3000, 1600, 4000): {"NT": (False, 160, 240), "NN": (True, 160, 247), "TN": (False, 192, 216),
                                 "TT": (False, 160, 240)},
            (6100, 1000, 1040): {lay: (True, 192, 256) for lay in ("NT", "NN", "TN", "TT")}}[shape][_lay(layout)]
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False, _lay(layout))
        assert (plan["swap_ab"], plan["bn"], plan["units"]) == want and plan["splits"] == 1 and plan["dynamic"], plan
    _check_gemm_and_addmm(shape, layout, dtype, f"mid-size 128x{want[1]}")


def _forced_tile_params(shapes):
    """needs_hopper and the dtype x layout x shape grid of the forced-tile tests."""
    def deco(fn):
        fn = pytest.mark.parametrize("shape", shapes, ids=lambda s: "x".join(map(str, s)))(fn)
        fn = pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)(fn)
        fn = pytest.mark.parametrize("dtype", LOWP, ids=_dt)(fn)
        return needs_hopper(fn)
    return deco


def _forced_tile_case(forced, child_test, shape, layout, dtype, want, what, min_units=0):
    """One case of a forced-tile test (TK_HOPPER_TILE=`forced`, set by the child process that
    `child_test` starts; skipped elsewhere): the dispatcher's plan has the `want` fields (and at
    least `min_units` units), then gemm and addmm against the float64 reference."""
    if os.environ.get("TK_HOPPER_TILE") != forced:
        pytest.skip(f"runs in a child process with TK_HOPPER_TILE={forced} ({child_test})")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    assert {k: plan[k] for k in want} == want and plan["units"] >= min_units, plan
    _check_gemm_and_addmm(shape, layout, dtype, what)


_ONE_WG_144 = "81"  # TK_HOPPER_ONE_WG: the default bits 0 and 4, and bit 6 (128 x 144 on one warpgroup)


@_forced_tile_params([(330, 6100, 520), (370, 6150, 1000), (250, 8999, 8191), (384, 6144, 6144)])
def test_gemm_one_warpgroup_144(shape, layout, dtype):
    """Unswapped unsplit 128x144 plans (plan_rules.h kOddWidths bit 1) on one consumer warpgroup,
    two 64-row strips (kOneWarpgroupWidths bit 6, the default since 2026-12-03c;
    test_one_warpgroup_144_in_child_process runs this with TK_HOPPER_ONE_WG=81 set explicitly):
    126-129 units, one per CTA; a 16-column last epilogue round copied out by rows per strip; M tails (330, 370, 250 of 384 / 256 rows), N tails and
    odd output pitches (6100, 6150, 8999), K tails (520, 1000, 8191); from K = 6144 (8191, 6144)
    the staging boxes lie in the stage ring. Other layouts than a column-major B get other plans,
    checked all the same. The child also leaves out TK_HOPPER_ODD_WIDTHS bit 14 (kOddWidths144Unaligned),
    which plans the short-K odd-pitch shapes (520, 1000) as 128 x 192 by default."""
    if os.environ.get("TK_HOPPER_ONE_WG") != _ONE_WG_144:
        pytest.skip(f"runs in a child process with TK_HOPPER_ONE_WG={_ONE_WG_144} "
                    "(test_one_warpgroup_144_in_child_process)")
    M, N, K = shape
    plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A, a column-major B)
    assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["wg_rows"]) == (False, 128, 144, 1, 128), plan
    assert plan["ring_staging"] == (K >= 6081), plan  # plan_rules.h kRingStagingMinKTiles: 96 k tiles
    _check_gemm_and_addmm(shape, layout, dtype, "one-warpgroup 128x144")


@needs_hopper
def test_one_warpgroup_144_in_child_process():
    """The one-warpgroup 128x144 kernels (TK_HOPPER_ONE_WG bit 6, the default since 2026-12-03c)."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": _ONE_WG_144, "TK_HOPPER_ODD_WIDTHS": str(int(_ODD_WIDTHS_DEFAULT) & ~_ODD_144_UNALIGNED)},
                        "test_gemm_one_warpgroup_144", timeout=400)
    assert re.search(r"\b32 passed", out), out[-4000:]


_FORCED_144 = "0:128:144:1:1"


@_forced_tile_params([(500, 8200, 520), (250, 14330, 1000)])
def test_gemm_bn144_many_units(shape, layout, dtype):
    """128x144 tiles forced (TK_HOPPER_TILE; test_bn144_forced_in_child_process runs this under
    it) where the planner would not take them: 228 / 200 units on <= 132 CTAs (the dynamic
    schedule: a CTA's second unit reuses the staging buffers), N tails (8200, 14330: odd pitch)."""
    _forced_tile_case(_FORCED_144, "test_bn144_forced_in_child_process", shape, layout, dtype,
                      {"swap_ab": False, "bn": 144, "dynamic": True}, "bn144 forced", min_units=133)


@needs_hopper
def test_bn144_forced_in_child_process():
    """The 144-wide kernels running several units per CTA (TK_HOPPER_TILE forces the tile)."""
    out = _pytest_child({"TK_HOPPER_TILE": _FORCED_144}, "test_gemm_bn144_many_units", timeout=400)
    assert re.search(r"\b16 passed", out), out[-4000:]


_TOKEN_WIDTH_SHAPES = {  # shape -> the token width plan_rules.h kTokenWidths gives it (odd_widths bit 3)
    (129, 6144, 777): 72, (288, 4096, 1000): 72, (136, 6150, 4100): 72, (270, 4100, 300): 72,
    (320, 4100, 999): 80, (300, 4096, 4100): 80, (290, 4000, 520): 80,
}


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", list(_TOKEN_WIDTH_SHAPES), ids=lambda s: "x".join(map(str, s)))
def test_gemm_token_widths(shape, layout, dtype):
    """Swapped 128 x w tiles sized to the token count (plan_rules.h kTokenWidths, TK_HOPPER_ODD_WIDTHS bit 3,
    default on): both built widths, 72 and 80 (a last epilogue round of 8 / 16 columns through its
    own transposed TMA box), token tails (129, 136, 270, 290, 300: the last token tile's Y box holds
    fewer rows), weight tails (4100, 6150, 8200), K tails, odd output pitches; other layouts than a
    row-major A get other plans, checked all the same."""
    if not _odd_width_bits() & 8:
        pytest.skip("TK_HOPPER_ODD_WIDTHS leaves out the token widths")
    M, N, K = shape
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A)
        assert (plan["swap_ab"], plan["bn"], plan["splits"]) == (True, _TOKEN_WIDTH_SHAPES[shape], 1), plan
        # one consumer warpgroup (plan.h one_wg bit 4, default) where >= 3 token tiles share each
        # weight tile (kTokenWidthOneWgMinTiles), two otherwise
        one_wg = int(os.environ.get("TK_HOPPER_ONE_WG", _ONE_WG_DEFAULT))
        token_tiles = -(-M // plan["bn"])
        assert plan["wg_rows"] == (128 if one_wg & 16 and token_tiles >= 3 else 64), plan
    _check_gemm_and_addmm(shape, layout, dtype, "token width")


@needs_hopper
def test_token_widths_two_wg_in_child_process():
    """Every token-width tile on two consumer warpgroups (plan.h one_wg bit 4 off; by default the
    shapes with >= 3 token tiles run one warpgroup over two 64-row strips): test_gemm_token_widths
    under TK_HOPPER_ONE_WG=1."""
    out = _pytest_child({"TK_HOPPER_ONE_WG": "1"}, "test_gemm_token_widths", timeout=400)
    assert re.search(r"\b56 passed", out), out[-4000:]


_TOKEN_ROWS64_SHAPES = [(129, 8192, 777), (136, 8200, 4100), (144, 6400, 520), (140, 8448, 1000),
                        (137, 8200, 14001),  # bit 6: in place of a split plan (long, odd K)
                        (150, 8192, 777), (160, 8200, 4100), (145, 6400, 520),  # bit 7: 64 x 160
                        (157, 8448, 14001),
                        (161, 8192, 777), (176, 8200, 4100), (170, 6400, 520),  # bit 8: 64 x 176
                        (173, 8448, 14001),
                        (177, 8192, 777), (192, 8200, 4100), (185, 6400, 520),  # bit 9: 64 x 192
                        (189, 8448, 14001),
                        (224, 8200, 14001), (197, 8448, 14001), (210, 6400, 14001),  # bit 10: 64 x 224 (split plans)
                        (200, 8192, 4100), (216, 8200, 2000), (193, 8200, 6000), (208, 8200, 777)]  # bit 12 (unsplit)
_TOKEN_ROWS64_UNSPLIT224 = _TOKEN_ROWS64_SHAPES[-4:]  # in place of unsplit 128 x 128 plans (odd_widths bit 12)


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
@pytest.mark.parametrize("layout", LAYOUTS, ids=_lay)
@pytest.mark.parametrize("shape", _TOKEN_ROWS64_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_token_rows64(shape, layout, dtype):
    """Swapped 64-row tiles, one token tile for all tokens (plan.h odd_widths bits 4, 6, 7, 8, 9, default
    where they fill 3/4 of a wave): 64 x 144 for 129..144 tokens, 64 x 160 for 145..160, 64 x 176 for
    161..176, 64 x 192 for 177..192, also where the plan would split K, and 64 x 224 for 193..224
    there (bit 10) and in place of unsplit 128 x 128 plans (bit 12); token tails (129, 136, 140 of
    144 rows; 145, 150, 157 of 160; 161, 170, 173 of 176; 177, 185, 189 of 192; 193, 197, 200, 208,
    210, 216 of 224), weight tails (8200, 6400: 100 tiles), K tails, a narrow last epilogue round (16, 32 or 48 columns) through its own
    transposed TMA box; other layouts than a row-major A get other plans, checked all the same. From
    K = 2048 (plan_rules.h kRingStagingMinKTilesRows64) the staging boxes lie in the stage ring."""
    M, N, K = shape
    width = 144 if M <= 144 else 160 if M <= 160 else 176 if M <= 176 else 192 if M <= 192 else 224
    need = 16 | {144: 0, 160: 128, 176: 256, 192: 512, 224: 1024}[width] | (64 if K > 8192 else 0) | \
        (_ODD_UNSPLIT224 if shape in _TOKEN_ROWS64_UNSPLIT224 else 0)
    if _odd_width_bits() & need != need:
        pytest.skip(f"TK_HOPPER_ODD_WIDTHS leaves out the 64 x {width} plan here")
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)  # (for a row-major A)
        assert (plan["swap_ab"], plan["bm"], plan["bn"], plan["splits"], plan["cluster"]) == (True, 64, width, 1, 1), plan
        ring = os.environ.get("TK_HOPPER_RING_STAGING")  # the knob, else the rule (K >= 1985: 32 k tiles)
        assert plan["ring_staging"] == (ring == "1" or (ring is None and K >= 1985)), plan
    _check_gemm_and_addmm(shape, layout, dtype, f"64x{width}")


_ROWS64_PAIR_SHAPES = [(170, 8200, 777), (88, 4100, 520), (80, 2000, 4100), (192, 8192, 1000), (131, 6400, 14001)]


@_forced_tile_params(_ROWS64_PAIR_SHAPES)
def test_gemm_token_rows64_pairs(shape, layout, dtype):
    """Swapped 64-row token tiles (64 x 144..224) in 2-CTA pairs (TK_HOPPER_TILE=1:64:W:1:2, set by
    test_token_rows64_pairs_in_child_process; a TK_BM64_ODD_CLUSTER build): each CTA loads one slice
    of the token tile and multicasts it. Slices ending past the tokens as exact boxes (170 of 176:
    82 of the second 88 rows), slices wholly past them skipped (88, 80 tokens), weight tiles past the
    end (8200: 129 tiles, the last pair's second CTA has none), several units per CTA (two token
    tiles at 170 / 192 on 144 / 160 / 176), long odd K."""
    forced = os.environ.get("TK_HOPPER_TILE", "")
    m = re.fullmatch(r"1:64:(\d+):1:2", forced)
    if m is None:
        pytest.skip("runs in a child process with TK_HOPPER_TILE=1:64:W:1:2 (test_token_rows64_pairs_in_child_process)")
    w = int(m.group(1))
    _forced_tile_case(forced, "test_token_rows64_pairs_in_child_process", shape, layout, dtype,
                      {"swap_ab": True, "bm": 64, "bn": w, "cluster": 2}, f"64x{w} pairs")


@needs_hopper
@pytest.mark.parametrize("w", [144, 160, 176, 192, 224])
def test_token_rows64_pairs_in_child_process(w):
    """The 64-row token-tile pairs, each width (kernel_variants.h TK_BM64_ODD_CLUSTER builds only)."""
    if torch_tk._C.hopper_plan(170, 8200, 777, 132, tile=(True, 64, w, 1, 2))["cluster"] != 2:
        pytest.skip("64-row token-tile pairs are built with TK_BUILD_DEFINES=TK_BM64_ODD_CLUSTER=1 only")
    out = _pytest_child({"TK_HOPPER_TILE": f"1:64:{w}:1:2"}, "test_gemm_token_rows64_pairs", timeout=400)
    assert re.search(r"\b40 passed", out), out[-4000:]


@_forced_tile_params([(320, 8200, 520), (230, 8200, 1000)])
def test_gemm_token_width_many_units(shape, layout, dtype):
    """Each token width forced (TK_HOPPER_TILE=1:128:w:1:1, set by
    test_token_width_forced_in_child_process) where it takes more units than SMs: a CTA's later
    units reuse the staging buffers."""
    forced = os.environ.get("TK_HOPPER_TILE", "")
    w = int(forced.split(":")[2]) if forced.startswith("1:128:") else 0
    if w not in (72, 80):
        pytest.skip("runs in a child process with TK_HOPPER_TILE=1:128:w:1:1 (test_token_width_forced_in_child_process)")
    _forced_tile_case(forced, "test_token_width_forced_in_child_process", shape, layout, dtype,
                      {"swap_ab": True, "bn": w, "dynamic": True}, f"bn{w} forced", min_units=133)


@needs_hopper
@pytest.mark.parametrize("w", [72, 80])
def test_token_width_forced_in_child_process(w):
    """The token-width kernels running several units per CTA (TK_HOPPER_TILE forces the tile)."""
    out = _pytest_child({"TK_HOPPER_TILE": f"1:128:{w}:1:1"}, "test_gemm_token_width_many_units", timeout=400)
    assert re.search(r"\b16 passed", out), out[-4000:]


_FORCED_BM64_PAIRS = "0:64:64:1:2"


@_forced_tile_params([(150, 2100, 1000), (128, 4096, 40), (130, 2100, 130)])
def test_gemm_bm64_pairs_forced(shape, layout, dtype):
    """Unswapped 64x64 tiles in 2-CTA clusters multicasting the weight tile (plan_rules.h kBm64RowPairs,
    off by default since 2026-11-28e; forced by TK_HOPPER_TILE, test_bm64_pairs_in_child_process
    runs this under it): an odd number of row tiles (150: the last pair's second CTA lies past M),
    one k tile (K = 40) and three (the 64x64 kernels load two k tiles per stage, so an odd count
    ends on a tile past K that arrives zero-filled), N tails, plain GEMM and addmm terms."""
    _forced_tile_case(_FORCED_BM64_PAIRS, "test_bm64_pairs_in_child_process", shape, layout, dtype,
                      {"swap_ab": False, "bm": 64, "bn": 64, "cluster": 2}, "bm64 pairs forced")


@needs_hopper
def test_bm64_pairs_in_child_process():
    """The clustered 64x64 kernels (TK_HOPPER_TILE forces the tile)."""
    out = _pytest_child({"TK_HOPPER_TILE": _FORCED_BM64_PAIRS}, "test_gemm_bm64_pairs_forced", timeout=400)
    assert re.search(r"\b24 passed", out), out[-4000:]


_FORCED_224 = "0:128:224:1:1"


@_forced_tile_params([(256, 14336, 4096), (200, 14330, 1000), (500, 8200, 520), (130, 2000, 72)])
def test_gemm_bn224_forced(shape, layout, dtype):
    """Unswapped 128x224 tiles (plan_rules.h kOddWidths bit 2) forced by TK_HOPPER_TILE (test_bn224_in_child_process
    runs this under it; other layouts than a column-major B get other plans, checked all the same):
    one wave of 128 tiles (256x14336x4096, the shape the width is for), 4 epilogue rounds with a
    32-column last one copied out by rows; an odd output pitch and an M tail (200x14330: the last
    tile 214 columns wide), 148 units on <= 132 CTAs (the dynamic schedule), a K tail of one
    partial k tile (72), plain GEMM and addmm terms."""
    _forced_tile_case(_FORCED_224, "test_bn224_in_child_process", shape, layout, dtype,
                      {"swap_ab": False, "bn": 224, "splits": 1}, "bn224 forced")


@needs_hopper
def test_bn224_in_child_process():
    """The 224-wide kernels (TK_HOPPER_TILE forces the tile wherever the layout allows it)."""
    out = _pytest_child({"TK_HOPPER_TILE": _FORCED_224}, "test_gemm_bn224_forced", timeout=400)
    assert re.search(r"\b32 passed", out), out[-4000:]


@needs_hopper
@pytest.mark.parametrize("ring", ["1", "0"])
def test_ring_staging_in_child_process(ring):
    """The one-warpgroup 128x128 kernels with the epilogue's staging boxes in the stage ring (7
    stages) at every K (TK_HOPPER_RING_STAGING=1; by default from K = 6144 only), and beside it at
    every K (=0): swapped and unswapped, tails, addmm terms, 16-bit outputs through the TMA store
    or the staged copy-out (fp32 outputs have no staging: the usual kernel)."""
    out = _pytest_child({"TK_HOPPER_RING_STAGING": ring}, "test_gemm_one_warpgroup_128x128", timeout=400)
    assert re.search(r"\b48 passed", out), out[-4000:]


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_determinism(dtype):
    M, N, K = 1000, 4095, 1000
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    s = torch.randn(N, device=DEV).to(dtype)
    outs = [torch_tk.addmm(s, a, b, beta=0.5) for _ in range(5)]
    assert not torch.isnan(outs[0]).any()
    for o in outs[1:]:
        assert torch.equal(o, outs[0]), "same inputs gave different bits"


@needs_hopper
def test_non_default_stream():
    dtype = torch.bfloat16
    M, N, K = 1000, 1000, 4095
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    bias = torch.randn(N, device=DEV).to(dtype)
    eager = torch_tk.addmm(bias, a, b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with KernelWatch() as w:
        with torch.cuda.stream(side):
            # long work queued first on the side stream: a kernel launched on the wrong
            # stream would race with it
            big = torch.randn(4096, 4096, device=DEV, dtype=dtype)
            for _ in range(3):
                big = big @ big
                big = big / big.abs().amax()
            out = torch_tk.addmm(bias, a, b)
            out2 = torch_tk.linear(a, b.t(), bias)
        torch.cuda.current_stream().wait_stream(side)
    w.assert_hopper(2)
    assert torch.equal(out, eager)
    assert torch.equal(out2, eager)


@needs_hopper
def test_first_call_in_a_new_thread():
    """The op must work as the first CUDA call of a thread (autograd runs backward on its
    own device thread; DataLoader-style workers, serving threads). Such a thread may have
    no current CUDA context until something makes one current."""
    import threading

    dtype = torch.bfloat16
    a = torch.randn(387, 320, device=DEV).to(dtype)
    b = torch.randn(320, 1000, device=DEV).to(dtype)
    ref = torch_tk.gemm(a, b)
    result = {}

    def worker():
        try:
            out = torch_tk.gemm(a, b)
            torch.cuda.synchronize()
            result["out"] = out
        except Exception as e:  # noqa: BLE001 - reported below
            result["err"] = repr(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "err" not in result, f"tk.gemm failed as the first CUDA call of a new thread: {result['err']}"
    assert torch.equal(result["out"], ref)


@needs_hopper
def test_cuda_graph_capture_replay():
    dtype = torch.bfloat16
    M, N, K = 777, 1000, 640
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    s = torch.randn(N, device=DEV).to(dtype)
    x3 = torch.randn(3, 5, K, device=DEV).to(dtype)

    def work():
        return (
            torch_tk.gemm(a, b),
            torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0),
            torch_tk.linear(x3, b.t(), s),
            torch_tk.gemm(a, b, out_dtype=torch.float32),
        )

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            work()
    torch.cuda.current_stream().wait_stream(side)

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = work()

    for trial in range(3):
        # new inputs copied into the captured buffers
        with torch.no_grad():
            a.copy_(torch.randn_like(a, dtype=torch.float32))
            b.copy_(torch.randn(N, K, device=DEV).to(dtype).t())
            s.copy_(torch.randn_like(s, dtype=torch.float32))
            x3.copy_(torch.randn_like(x3, dtype=torch.float32))
        for o in static_out:
            o.fill_(math.nan)
        with KernelWatch() as w:
            g.replay()
        assert w.delta["fallback"] == 0
        eager = work()
        for o, e in zip(static_out, eager):
            assert not torch.isnan(o).any(), "graph replay left elements unwritten"
            assert torch.equal(o, e), f"replay {trial} differs from eager"
        check(static_out[0], ref64(a, b), TOL[dtype], "graph gemm")


# ============================================================================ compile, autograd, nn


@needs_hopper
def test_torch_compile_cuda():
    dtype = torch.bfloat16

    def f(x, w, bias, m2):
        h = torch_tk.linear(x, w, bias)
        h = torch.nn.functional.silu(h)
        h2 = h.reshape(-1, h.shape[-1])
        return torch_tk.addmm(bias[: m2.shape[1]], h2, m2, beta=0.5) + torch_tk.gemm(h2, m2)

    x = torch.randn(4, 33, 256, device=DEV).to(dtype)
    w_ = (torch.randn(320, 256, device=DEV) / 16).to(dtype)
    bias = torch.randn(320, device=DEV).to(dtype)
    m2 = (torch.randn(200, 320, device=DEV) / 16).to(dtype).t()
    eager = f(x, w_, bias, m2)
    cf = torch.compile(f, fullgraph=True)
    with KernelWatch() as w:
        out = cf(x, w_, bias, m2)
    w.assert_hopper(3)
    assert out.dtype == eager.dtype and out.shape == eager.shape
    # inductor may fuse silu/add differently: compare with a bf16-level tolerance
    check(out, eager.double(), 1e-2, "compiled vs eager")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_backward_linear_cuda(dtype):
    B, S, K, N = 3, 129, 1000, 320
    x = torch.randn(B, S, K, device=DEV).to(dtype).requires_grad_()
    w_ = torch.randn(N, K, device=DEV).to(dtype).requires_grad_()
    bias = torch.randn(N, device=DEV).to(dtype).requires_grad_()
    g = torch.randn(B, S, N, device=DEV).to(dtype)
    with KernelWatch() as w:
        out = torch_tk.linear(x, w_, bias)
        out.backward(g)
    w.assert_hopper(3)  # forward + grad_input + grad_weight
    gd, xd, wd = g.double(), x.detach().double(), w_.detach().double()
    check(out, xd @ wd.t() + bias.detach().double(), TOL[dtype], "forward")
    check(x.grad, gd @ wd, TOL[dtype], "grad input")
    check(w_.grad, gd.reshape(-1, N).t() @ xd.reshape(-1, K), TOL[dtype], "grad weight")
    check(bias.grad, gd.reshape(-1, N).sum(0), TOL[dtype], "grad bias")
    assert x.grad.dtype == w_.grad.dtype == bias.grad.dtype == dtype


@needs_hopper
def test_backward_gemm_addmm_out_fp32_cuda():
    dtype = torch.bfloat16
    a = torch.randn(300, 129, device=DEV).to(dtype).requires_grad_()
    b = torch.randn(129, 257, device=DEV).to(dtype).requires_grad_()
    s = torch.randn(257, device=DEV).to(dtype).requires_grad_()
    g = torch.randn(300, 257, device=DEV)
    with KernelWatch() as w:
        out = torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0, out_dtype=torch.float32)
        out.backward(g)
    w.assert_hopper(3)
    gd = g.double()
    check(a.grad, 2.0 * gd @ b.detach().double().t(), TOL[dtype], "grad mat1")
    check(b.grad, 2.0 * a.detach().double().t() @ gd, TOL[dtype], "grad mat2")
    check(s.grad, 0.5 * gd.sum(0), TOL[dtype], "grad self")


@needs_hopper
def test_patched_mlp_cuda():
    dtype = torch.bfloat16
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 128))
    model = model.to(DEV, dtype)
    x = torch.randn(8, 65, 256, device=DEV).to(dtype)
    with torch.no_grad():
        ref = model.double()(x.double())
    model.to(dtype)
    torch_tk.patch_linear(model)
    with KernelWatch() as w, torch.no_grad():
        out = model(x)
    w.assert_hopper(2)
    check(out, ref, 2e-2, "patched MLP bf16")


# ============================================================================ multi-GPU device guard


@needs_hopper
@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_second_device():
    dev = torch.device("cuda", 1)
    if not torch_tk.hopper_available(dev):
        pytest.skip("device 1 is not sm_90")
    a = torch.randn(300, 200, device=dev).to(torch.bfloat16)
    b = torch.randn(200, 129, device=dev).to(torch.bfloat16)
    assert torch.cuda.current_device() == 0
    out = torch_tk.gemm(a, b)  # the op must guard device 1 itself
    torch.cuda.synchronize(dev)
    assert out.device == dev
    check(out, ref64(a, b), TOL[torch.bfloat16], "gemm on cuda:1")
