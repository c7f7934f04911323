"""Shared helpers of the CPU op tests (test_ops_cpu.py, test_ops_grad_cpu.py, test_ops_errors_cpu.py):
the ops by name, dtype ids, the output check and addmm's self shapes."""

from __future__ import annotations

import torch

import torch_tk  # noqa: F401  (registers torch.ops.tk)

OPS = {
    "gemm": torch.ops.tk.gemm,
    "addmm": torch.ops.tk.addmm,
    "linear": torch.ops.tk.linear,
}


def _dt(d):
    return str(d).replace("torch.", "")


def _check_out(out, shape, dtype):
    assert isinstance(out, torch.Tensor)
    assert out.device.type == "cpu"
    assert out.dtype == dtype, f"dtype {out.dtype} != {dtype}"
    assert tuple(out.shape) == tuple(shape), f"shape {tuple(out.shape)} != {tuple(shape)}"
    assert out.is_contiguous(), f"output not contiguous: strides {out.stride()}"


SELF_SHAPES = {
    "full": lambda M, N: (M, N),
    "row": lambda M, N: (1, N),
    "col": lambda M, N: (M, 1),
    "vec": lambda M, N: (N,),
    "vec1": lambda M, N: (1,),
    "one1": lambda M, N: (1, 1),
    "scalar": lambda M, N: (),
}
