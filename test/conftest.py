"""Shared pytest configuration and helpers for the torch_tk test suite.

Helpers defined here are imported by the test modules with ``from conftest import ...``
(pytest's default "prepend" import mode puts this directory on sys.path).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import re

import pytest
import torch

# Relative-norm tolerances ||out - ref|| / ||ref|| against a float64 reference
# computed from the (already low-precision) inputs.
CPU_TOL = {
    torch.bfloat16: 1e-2,
    torch.float16: 5e-3,
    torch.float32: 1e-5,
    torch.float64: 1e-12,
}

ALL_DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float64]
LOW_DTYPES = [torch.bfloat16, torch.float16]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA device (skipped when torch.cuda.is_available() is False)"
    )


def pytest_runtest_logstart(nodeid, location):
    """With TK_TEST_CURRENT=FILE, FILE holds the test that is running (scripts/gpu_check.sh names it
    when a part is cut by its time box: a hang and a slow machine then read differently)."""
    path = os.environ.get("TK_TEST_CURRENT")
    if path:
        pathlib.Path(path).write_text(nodeid + "\n")


@pytest.fixture(autouse=True)
def _seed_per_test(request):
    """Fresh, different, but reproducible random data for every test."""
    digest = hashlib.sha256(request.node.nodeid.encode()).digest()
    torch.manual_seed(int.from_bytes(digest[:4], "little"))
    yield


# ----------------------------------------------------------------------------- helpers


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| computed in float64 (on ref's device). NaN/Inf in out -> inf.

    If ref is all zeros the absolute norm of out is returned instead.
    """
    r = ref.detach().to(dtype=torch.float64)
    o = out.detach().to(device=r.device, dtype=torch.float64)
    assert o.shape == r.shape, f"shape mismatch: {tuple(o.shape)} vs {tuple(r.shape)}"
    if o.numel() == 0:
        return 0.0
    if not bool(torch.isfinite(o).all()):
        return float("inf")
    rn = torch.linalg.vector_norm(r).item()
    dn = torch.linalg.vector_norm(o - r).item()
    if rn == 0.0:
        return dn
    return dn / rn


def assert_close_rel(out, ref, tol, what=""):
    err = rel_err(out, ref)
    assert err <= tol, f"{what} relative error {err:.3e} > tol {tol:.1e}"
    return err


def make_matrix(rows, cols, dtype, layout="n", device="cpu", requires_grad=False):
    """A (rows, cols) matrix of randn values with a given memory layout.

    layout:
      "n"      contiguous (row-major)
      "t"      column-major: the transpose of a contiguous (cols, rows) tensor
      "slice"  non-contiguous column slice x[:, ::2] of a wider tensor
      "offset" row-major with a leading dimension > cols and a storage offset (x[1:, 3:])
      "expand" stride-0 rows (a (1, cols) row expanded), only sensible as an input
    The returned tensor is a leaf when requires_grad is set (gradients flow to it).
    """
    if layout == "n":
        x = torch.randn(rows, cols, device=device, dtype=torch.float32).to(dtype)
    elif layout == "t":
        x = torch.randn(cols, rows, device=device, dtype=torch.float32).to(dtype).t()
    elif layout == "slice":
        x = torch.randn(rows, 2 * cols, device=device, dtype=torch.float32).to(dtype)[:, ::2]
    elif layout == "offset":
        x = torch.randn(rows + 1, cols + 3, device=device, dtype=torch.float32).to(dtype)[1:, 3:]
    elif layout == "expand":
        x = torch.randn(1, cols, device=device, dtype=torch.float32).to(dtype).expand(rows, cols)
    else:
        raise ValueError(layout)
    assert x.shape == (rows, cols)
    if requires_grad:
        # detach() keeps the strides; the result is a leaf.
        x = x.detach().requires_grad_(True)
    return x


def ref_mm(a, b):
    return a.detach().to(dtype=torch.float64) @ b.detach().to(dtype=torch.float64)


def ref_addmm(self_, m1, m2, beta=1, alpha=1):
    prod = alpha * ref_mm(m1, m2)
    if beta == 0:
        return prod
    return beta * self_.detach().to(dtype=torch.float64) + prod


def ref_linear(x, w, bias=None):
    out = x.detach().to(dtype=torch.float64) @ w.detach().to(dtype=torch.float64).t()
    if bias is not None:
        out = out + bias.detach().to(dtype=torch.float64)
    return out


def names_argument(msg: str, names) -> bool:
    """True if the exception message mentions one of the argument names as a word.

    (For one-letter names such as "a" this is necessarily weak: the article "a"
    also matches.)
    """
    if isinstance(names, str):
        names = (names,)
    return any(re.search(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])", msg) for n in names)


def counters():
    import torch_tk

    return dict(torch_tk.kernel_counters())


def counter_delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}


def sample_id(name, args, kwargs=None):
    """A readable pytest id for an (op, args, kwargs) sample."""
    parts = [name]
    for a in args:
        if isinstance(a, torch.Tensor):
            dt = str(a.dtype).replace("torch.", "").replace("bfloat16", "bf16").replace("float", "f")
            lay = "" if a.is_contiguous() else "s" + ",".join(map(str, a.stride()))
            parts.append(f"{dt}[{','.join(map(str, a.shape))}]{lay}")
        else:
            parts.append(str(a))
    for k, v in (kwargs or {}).items():
        parts.append(f"{k}={str(v).replace('torch.', '')}")
    return "-".join(parts)


def load_script(relpath: str, name: str):
    """Imports a repository script that is not a package module (e.g. benchmarks/bench_gemm.py)
    afresh, so that its module-level defaults see the test's environment."""
    path = pathlib.Path(__file__).resolve().parents[1] / relpath
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
