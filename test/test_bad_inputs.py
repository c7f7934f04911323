"""Bad inputs to torch.ops.tk.{gemm, addmm, linear}: one table, run on CPU, meta and CUDA.

Every row of BAD_INPUTS is (id, op, argument factories, kwargs, expected exception type,
substrings that must all appear in the message, requirement). Each row must raise exactly
the expected type (ValueError for shapes / ranks / devices / broadcasting / bias length,
TypeError for dtypes / out_dtype / integer tensors) with a message naming the argument(s)
(`a`, `b`, `self`, `mat1`, `mat2`, `input`, `weight`, `bias`, out_dtype) -- never a
RuntimeError, never a crash, never a hang: every call runs in a worker thread and must
return within CALL_TIMEOUT_S seconds.

The table runs
  * on CPU (the C++ checks of csrc/ops.cpp),
  * on meta tensors (the Python fakes of torch_tk/ops.py: the same exception types),
  * on CUDA, in-process (marked `gpu`; skipped without CUDA); the rows mixing CPU and CUDA
    tensors need CUDA, the rows spreading tensors over two GPUs need two GPUs.
After the CUDA rows the device must still work (no sticky CUDA error).

`pytest -s -k table test/test_bad_inputs.py` prints the whole table (case, device,
exception type, message): the evidence for a report.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch

import torch_tk  # noqa: F401  (registers the ops)

HAS_CUDA = torch.cuda.is_available()
N_GPUS = torch.cuda.device_count() if HAS_CUDA else 0
CALL_TIMEOUT_S = 30.0

B, H, F, D = torch.bfloat16, torch.float16, torch.float32, torch.float64
OPS = {"gemm": torch.ops.tk.gemm, "addmm": torch.ops.tk.addmm, "linear": torch.ops.tk.linear}


def t(*shape, dtype=B, on=None):
    """Factory of a tensor of `shape`/`dtype` on the run's device (or on the device `on`)."""

    def make(dev):
        d = on or dev
        if dtype in (torch.float8_e4m3fn,):
            return torch.empty(shape, dtype=dtype, device=d)
        return torch.ones(shape, dtype=dtype, device=d)

    make.desc = f"{'x'.join(map(str, shape)) or 'scalar'}:{str(dtype).replace('torch.', '')}" + (f"@{on}" if on else "")
    return make


@dataclasses.dataclass
class Row:
    id: str
    op: str
    args: tuple
    kwargs: dict
    exc: type
    must: tuple          # substrings that must all appear in the message
    needs: str | None = None  # None, "cuda" (CPU/CUDA mix) or "2gpu"

    def build(self, dev):
        args = tuple(a(dev) if callable(a) else a for a in self.args)
        return OPS[self.op], args, dict(self.kwargs)


V, T_ = ValueError, TypeError
C0, C1 = "cuda:0", "cuda:1"

# gemm: a (4, 5) @ b (5, 3); addmm: self (3,), mat1 (4, 5), mat2 (5, 3); linear: input (2, 5),
# weight (3, 5), bias (3,). Tensors are bf16 unless the row says otherwise.
BAD_INPUTS = [
    # ------------------------------------------------------------------ gemm
    Row("gemm-dtype-mismatch-bf16-fp16", "gemm", (t(4, 5, dtype=B), t(5, 3, dtype=H)), {}, T_, ("`a`", "`b`")),
    Row("gemm-dtype-mismatch-fp32-fp64", "gemm", (t(4, 5, dtype=F), t(5, 3, dtype=D)), {}, T_, ("`a`", "`b`")),
    Row("gemm-complex64", "gemm", (t(4, 5, dtype=torch.complex64), t(5, 3, dtype=torch.complex64)), {}, T_, ("`a`",)),
    Row("gemm-int32", "gemm", (t(4, 5, dtype=torch.int32), t(5, 3, dtype=torch.int32)), {}, T_, ("`a`",)),
    Row("gemm-int64-b-only", "gemm", (t(4, 5, dtype=F), t(5, 3, dtype=torch.int64)), {}, T_, ("`b`",)),
    Row("gemm-uint8", "gemm", (t(4, 5, dtype=torch.uint8), t(5, 3, dtype=torch.uint8)), {}, T_, ("`a`",)),
    Row("gemm-int8-a-only", "gemm", (t(4, 5, dtype=torch.int8), t(5, 3)), {}, T_, ("`a`",)),
    Row("gemm-bool", "gemm", (t(4, 5, dtype=torch.bool), t(5, 3, dtype=torch.bool)), {}, T_, ("`a`",)),
    Row("gemm-float8", "gemm", (t(4, 5, dtype=torch.float8_e4m3fn), t(5, 3, dtype=torch.float8_e4m3fn)), {}, T_,
        ("`a`",)),
    Row("gemm-inner-dims", "gemm", (t(4, 5), t(6, 3)), {}, V, ("`a`", "`b`")),
    Row("gemm-a-1d", "gemm", (t(5), t(5, 3)), {}, V, ("`a`",)),
    Row("gemm-a-3d", "gemm", (t(2, 4, 5), t(5, 3)), {}, V, ("`a`",)),
    Row("gemm-b-1d", "gemm", (t(4, 5), t(5)), {}, V, ("`b`",)),
    Row("gemm-b-3d", "gemm", (t(4, 5), t(2, 5, 3)), {}, V, ("`b`",)),
    Row("gemm-b-0d", "gemm", (t(4, 5), t()), {}, V, ("`b`",)),
    Row("gemm-out-int32", "gemm", (t(4, 5), t(5, 3)), {"out_dtype": torch.int32}, T_, ("out_dtype",)),
    Row("gemm-out-bool", "gemm", (t(4, 5), t(5, 3)), {"out_dtype": torch.bool}, T_, ("out_dtype",)),
    Row("gemm-out-fp16-for-bf16", "gemm", (t(4, 5), t(5, 3)), {"out_dtype": H}, T_, ("out_dtype",)),
    Row("gemm-out-bf16-for-fp16", "gemm", (t(4, 5, dtype=H), t(5, 3, dtype=H)), {"out_dtype": B}, T_, ("out_dtype",)),
    Row("gemm-out-fp64-for-bf16", "gemm", (t(4, 5), t(5, 3)), {"out_dtype": D}, T_, ("out_dtype",)),
    Row("gemm-out-fp64-for-fp32", "gemm", (t(4, 5, dtype=F), t(5, 3, dtype=F)), {"out_dtype": D}, T_, ("out_dtype",)),
    Row("gemm-out-fp32-for-fp64", "gemm", (t(4, 5, dtype=D), t(5, 3, dtype=D)), {"out_dtype": F}, T_, ("out_dtype",)),
    Row("gemm-a-on-cpu", "gemm", (t(4, 5, on="cpu"), t(5, 3)), {}, V, ("`a`", "`b`"), "cuda"),
    Row("gemm-b-on-cpu", "gemm", (t(4, 5), t(5, 3, on="cpu")), {}, V, ("`a`", "`b`"), "cuda"),
    Row("gemm-two-gpus", "gemm", (t(4, 5, on=C0), t(5, 3, on=C1)), {}, V, ("`a`", "`b`"), "2gpu"),
    # ------------------------------------------------------------------ addmm
    Row("addmm-dtype-mismatch-bf16-fp16", "addmm", (t(3), t(4, 5, dtype=B), t(5, 3, dtype=H)), {}, T_,
        ("`mat1`", "`mat2`")),
    Row("addmm-self-fp16-for-bf16", "addmm", (t(3, dtype=H), t(4, 5), t(5, 3)), {}, T_, ("`self`",)),
    Row("addmm-self-fp32-without-out-dtype", "addmm", (t(4, 3, dtype=F), t(4, 5), t(5, 3)), {}, T_, ("`self`",)),
    Row("addmm-self-fp64-with-out-fp32", "addmm", (t(3, dtype=D), t(4, 5), t(5, 3)), {"out_dtype": F}, T_,
        ("`self`",)),
    Row("addmm-complex64", "addmm", (t(3, dtype=torch.complex64), t(4, 5, dtype=torch.complex64),
                                     t(5, 3, dtype=torch.complex64)), {}, T_, ("`mat1`",)),
    Row("addmm-int32", "addmm", (t(3, dtype=torch.int32), t(4, 5, dtype=torch.int32), t(5, 3, dtype=torch.int32)),
        {}, T_, ("`mat1`",)),
    Row("addmm-int64-self", "addmm", (t(3, dtype=torch.int64), t(4, 5), t(5, 3)), {}, T_, ("`self`",)),
    Row("addmm-bool", "addmm", (t(3, dtype=torch.bool), t(4, 5, dtype=torch.bool), t(5, 3, dtype=torch.bool)),
        {}, T_, ("`mat1`",)),
    Row("addmm-inner-dims", "addmm", (t(3), t(4, 5), t(6, 3)), {}, V, ("`mat1`", "`mat2`")),
    Row("addmm-mat1-1d", "addmm", (t(3), t(5), t(5, 3)), {}, V, ("`mat1`",)),
    Row("addmm-mat1-3d", "addmm", (t(3), t(2, 4, 5), t(5, 3)), {}, V, ("`mat1`",)),
    Row("addmm-mat2-1d", "addmm", (t(3), t(4, 5), t(5)), {}, V, ("`mat2`",)),
    Row("addmm-mat2-3d", "addmm", (t(3), t(4, 5), t(1, 5, 3)), {}, V, ("`mat2`",)),
    Row("addmm-self-length", "addmm", (t(4), t(4, 5), t(5, 3)), {}, V, ("`self`",)),
    Row("addmm-self-rows", "addmm", (t(5, 3), t(4, 5), t(5, 3)), {}, V, ("`self`",)),
    Row("addmm-self-cols", "addmm", (t(4, 2), t(4, 5), t(5, 3)), {}, V, ("`self`",)),
    Row("addmm-self-transposed", "addmm", (t(3, 4), t(4, 5), t(5, 3)), {}, V, ("`self`",)),
    Row("addmm-self-3d", "addmm", (t(1, 4, 3), t(4, 5), t(5, 3)), {}, V, ("`self`",)),
    Row("addmm-self-length-beta0", "addmm", (t(4), t(4, 5), t(5, 3)), {"beta": 0}, V, ("`self`",)),
    Row("addmm-out-int32", "addmm", (t(3), t(4, 5), t(5, 3)), {"out_dtype": torch.int32}, T_, ("out_dtype",)),
    Row("addmm-out-fp16-for-bf16", "addmm", (t(3), t(4, 5), t(5, 3)), {"out_dtype": H}, T_, ("out_dtype",)),
    Row("addmm-out-fp64-for-fp32", "addmm", (t(3, dtype=F), t(4, 5, dtype=F), t(5, 3, dtype=F)),
        {"out_dtype": D}, T_, ("out_dtype",)),
    Row("addmm-self-on-cpu", "addmm", (t(3, on="cpu"), t(4, 5), t(5, 3)), {}, V, ("`self`",), "cuda"),
    Row("addmm-0d-self-on-cpu", "addmm", (t(on="cpu"), t(4, 5), t(5, 3)), {}, V, ("`self`",), "cuda"),
    Row("addmm-mat2-on-cpu", "addmm", (t(3), t(4, 5), t(5, 3, on="cpu")), {}, V, ("`mat1`", "`mat2`"), "cuda"),
    Row("addmm-two-gpus-mat2", "addmm", (t(3, on=C0), t(4, 5, on=C0), t(5, 3, on=C1)), {}, V,
        ("`mat1`", "`mat2`"), "2gpu"),
    Row("addmm-two-gpus-self", "addmm", (t(3, on=C1), t(4, 5, on=C0), t(5, 3, on=C0)), {}, V, ("`self`",), "2gpu"),
    # ------------------------------------------------------------------ linear
    Row("linear-dtype-mismatch-bf16-fp16", "linear", (t(2, 5, dtype=B), t(3, 5, dtype=H), None), {}, T_,
        ("`input`", "`weight`")),
    Row("linear-bias-fp16-for-bf16", "linear", (t(2, 5), t(3, 5), t(3, dtype=H)), {}, T_, ("`bias`",)),
    Row("linear-bias-fp32-for-bf16", "linear", (t(2, 5), t(3, 5), t(3, dtype=F)), {}, T_, ("`bias`",)),
    Row("linear-bias-int32", "linear", (t(2, 5), t(3, 5), t(3, dtype=torch.int32)), {}, T_, ("`bias`",)),
    Row("linear-complex64", "linear", (t(2, 5, dtype=torch.complex64), t(3, 5, dtype=torch.complex64), None), {},
        T_, ("`input`",)),
    Row("linear-int32", "linear", (t(2, 5, dtype=torch.int32), t(3, 5, dtype=torch.int32), None), {}, T_,
        ("`input`",)),
    Row("linear-int64-3d-input", "linear", (t(2, 2, 5, dtype=torch.int64), t(3, 5, dtype=torch.int64), None), {},
        T_, ("`input`",)),
    Row("linear-bool", "linear", (t(2, 5, dtype=torch.bool), t(3, 5, dtype=torch.bool), None), {}, T_,
        ("`input`",)),
    Row("linear-inner-dims", "linear", (t(2, 5), t(3, 4), None), {}, V, ("`input`", "`weight`")),
    Row("linear-inner-dims-3d", "linear", (t(2, 4, 5), t(3, 4), t(3)), {}, V, ("`input`", "`weight`")),
    Row("linear-input-0d", "linear", (t(), t(3, 1), None), {}, V, ("`input`",)),
    Row("linear-weight-0d", "linear", (t(2, 5), t(), None), {}, V, ("`weight`",)),
    Row("linear-weight-1d", "linear", (t(2, 5), t(5), None), {}, V, ("`weight`",)),
    Row("linear-weight-3d", "linear", (t(2, 5), t(1, 3, 5), None), {}, V, ("`weight`",)),
    Row("linear-bias-length", "linear", (t(2, 5), t(3, 5), t(4)), {}, V, ("`bias`",)),
    Row("linear-bias-2d", "linear", (t(2, 5), t(3, 5), t(1, 3)), {}, V, ("`bias`",)),
    Row("linear-bias-0d", "linear", (t(2, 5), t(3, 5), t()), {}, V, ("`bias`",)),
    Row("linear-input-on-cpu", "linear", (t(2, 5, on="cpu"), t(3, 5), t(3)), {}, V, ("`input`", "`weight`"), "cuda"),
    Row("linear-weight-on-cpu", "linear", (t(2, 5), t(3, 5, on="cpu"), t(3)), {}, V, ("`input`", "`weight`"),
        "cuda"),
    Row("linear-bias-on-cpu", "linear", (t(2, 5), t(3, 5), t(3, on="cpu")), {}, V, ("`bias`",), "cuda"),
    Row("linear-two-gpus-weight", "linear", (t(2, 5, on=C0), t(3, 5, on=C1), None), {}, V, ("`input`", "`weight`"),
        "2gpu"),
    Row("linear-two-gpus-bias", "linear", (t(2, 5, on=C0), t(3, 5, on=C0), t(3, on=C1)), {}, V, ("`bias`",),
        "2gpu"),
]
ROWS = {r.id: r for r in BAD_INPUTS}
assert len(ROWS) == len(BAD_INPUTS), "duplicate row ids"
LOCAL_IDS = [r.id for r in BAD_INPUTS if r.needs is None]


# ============================================================================ running one row


def call_with_timeout(fn, timeout=CALL_TIMEOUT_S):
    """Runs fn() in a daemon thread. Returns ("raised", exc) / ("returned", value) / ("hung", None)."""
    box = {}

    def target():
        try:
            box["value"] = fn()
            box["kind"] = "returned"
        except BaseException as e:  # noqa: BLE001 - we report whatever comes out
            box["value"] = e
            box["kind"] = "raised"

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        return "hung", None
    return box["kind"], box["value"]


def run_row(row, dev):
    """Returns (exception or None, problem description or None)."""
    op, args, kwargs = row.build(dev)
    kind, value = call_with_timeout(lambda: op(*args, **kwargs))
    if kind == "hung":
        return None, f"did not return within {CALL_TIMEOUT_S:.0f} s"
    if kind == "returned":
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        return None, f"did not raise (returned {shape})"
    exc = value
    problems = []
    if type(exc) is not row.exc:
        problems.append(f"raised {type(exc).__name__}, expected {row.exc.__name__}")
    msg = str(exc)
    missing = [m for m in row.must if m not in msg]
    if missing:
        problems.append(f"message does not name {missing}")
    return exc, ("; ".join(problems) or None)


def _check(row, dev):
    exc, problem = run_row(row, dev)
    assert problem is None, f"{row.id} on {dev}: {problem}; message: {str(exc) if exc else ''!r}"


def _skip_unless_possible(row):
    if row.needs == "2gpu" and N_GPUS < 2:
        pytest.skip("needs two CUDA devices")


# ============================================================================ tests


def test_rows_are_well_formed():
    ops_covered = {r.op for r in BAD_INPUTS}
    assert ops_covered == set(OPS)
    for r in BAD_INPUTS:
        assert r.exc in (ValueError, TypeError)
        assert r.must and all(isinstance(m, str) for m in r.must)
        assert r.needs in (None, "cuda", "2gpu")
    for op in OPS:  # every op has dtype, rank/shape and device rows
        rows = [r for r in BAD_INPUTS if r.op == op]
        assert any(r.exc is TypeError for r in rows) and any(r.exc is ValueError for r in rows)
        assert any(r.needs == "cuda" for r in rows) and any(r.needs == "2gpu" for r in rows)


@pytest.mark.parametrize("case_id", LOCAL_IDS)
def test_bad_input_cpu(case_id):
    _check(ROWS[case_id], "cpu")


@pytest.mark.parametrize("case_id", LOCAL_IDS)
def test_bad_input_meta(case_id):
    _check(ROWS[case_id], "meta")


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("case_id", list(ROWS))
def test_bad_input_cuda(case_id):
    row = ROWS[case_id]
    _skip_unless_possible(row)
    _check(row, "cuda")
    # no sticky CUDA error: the device still computes
    x = torch.ones(8, 8, dtype=B, device="cuda")
    y = torch.ops.tk.gemm(x, x)
    torch.cuda.synchronize()
    assert bool((y == 8).all())


def test_error_table_printed():
    """Runs every row on every available device and prints the table (pytest -s -k table)."""
    devices = ["cpu", "meta"] + (["cuda"] if HAS_CUDA else [])
    lines, problems = [], []
    wid = max(len(r.id) for r in BAD_INPUTS)
    lines.append(f"{'case':<{wid}}  {'device':<6} {'expected':<10} {'raised':<10} message")
    lines.append("-" * (wid + 100))
    n_run = 0
    for row in BAD_INPUTS:
        for dev in devices:
            if row.needs == "cuda" and dev != "cuda":
                continue
            if row.needs == "2gpu" and (dev != "cuda" or N_GPUS < 2):
                continue
            exc, problem = run_row(row, dev)
            n_run += 1
            raised = type(exc).__name__ if exc is not None else "-"
            msg = str(exc).splitlines()[0] if exc is not None and str(exc) else ""
            lines.append(f"{row.id:<{wid}}  {dev:<6} {row.exc.__name__:<10} {raised:<10} {msg}"
                         + (f"   <-- PROBLEM: {problem}" if problem else ""))
            if problem:
                problems.append(f"{row.id} on {dev}: {problem}")
    skipped = [r.id for r in BAD_INPUTS if (r.needs == "cuda" and not HAS_CUDA) or (r.needs == "2gpu" and N_GPUS < 2)]
    lines.append(f"{n_run} calls on {devices}, {len(problems)} problems; rows not run here (need CUDA / 2 GPUs): "
                 f"{len(skipped)}")
    print("\n" + "\n".join(lines))
    assert not problems, "\n".join(problems)
