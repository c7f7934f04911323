"""GPU tests of the tk ops: the gemm grid over layouts and dtypes, pitches and re-pitch copies,
addmm, unaligned rows, linear, empty / K = 0, fallbacks and errors on CUDA.

Every test is marked `gpu` and skipped without CUDA; the kernel tests are also skipped unless
torch_tk.hopper_available() (sm_90 + sm_90a build). Helpers and the correctness standard: gpu_common.py.
"""

from __future__ import annotations

import math
import os
import re

import pytest
import torch

import torch_tk
from conftest import make_matrix
from gpu_common import (
    check, _check_meta, DEV, _dt, FP32_OUT_TOL, GPU_MARKS, KernelWatch, _lay, LAYOUTS, LOWP, _nbytes,
    needs_hopper, poison_allocator, _pytest_child, ref64, run_poisoned, TOL,
)

pytestmark = GPU_MARKS


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
