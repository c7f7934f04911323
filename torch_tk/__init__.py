"""torch_tk: ThunderKittens-style GEMM kernels as PyTorch custom operators.

Importing this package loads the compiled library ``torch_tk._C`` (which registers
``torch.ops.tk.gemm``, ``torch.ops.tk.addmm``, ``torch.ops.tk.linear``, ``torch.ops.tk.gemm_pair``,
``torch.ops.tk.linear_backward``, ``torch.ops.tk.linear_backward_cat`` / ``_parts``, the SwiGLU and
RoPE ops) and then the fake (meta) and autograd registrations in :mod:`torch_tk.ops`.

Where the ops run (queryable):
  * CPU tensors: fp32-accumulate reference (``kernel_counters()["cpu"]``).
  * CUDA bf16/fp16 on an sm_90 GPU (H100/H200): the Hopper kernel (``["hopper"]``).
  * Any other CUDA case (other GPUs, fp32/fp64, a build without nvcc): the reference matmul,
    warned once per reason, counted in ``["fallback"]`` and listed by ``fallback_reasons()``.
"""
import torch

try:
    from . import _C
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError(
        "torch_tk: the compiled extension torch_tk._C is missing or was built against another torch. "
        "Build it with: python3 -m pip install --no-build-isolation -e .  (original error: %s)" % e
    ) from e

from . import ops as _ops  # noqa: E402  (registers fakes and autograd)
from .nn import TKLinear, patch_linear, patch_report, unpatch_linear  # noqa: E402
from .ops import addmm, gemm, gemm_pair, linear, linear_backward  # noqa: E402
from .cat_backward import linear_backward_cat, linear_backward_parts  # noqa: E402
from .rope import linear_rope  # noqa: E402
from .swiglu import (gate_up_views, linear_swiglu, swiglu_down_backward, swiglu_down_backward_cat,  # noqa: E402
                     swiglu_grads, swiglu_mlp)
from . import distributed as _distributed  # noqa: E402,F401  (DTensor sharding rules; never raises)

__version__ = "0.1.0"


def kernel_counters():
    """Number of tk op calls per path since import or the last reset.

    Returns:
        dict with int values under "hopper" (the sm_90a kernel ran), "fallback" (a CUDA call ran
        the reference matmul; see :func:`fallback_reasons`), "cpu" (the CPU reference ran) and
        "hopper_skinny" (the part of "hopper" that ran the decode-shape kernel: M <= 16,
        9..16 only in the CTA shape skinny_plan.h picks; TK_HOPPER_SKINNY_MAX_M lowers it),
        "hopper_stream_k" (the part that ran a stream-K tail: plan_rules.h kStreamKTail, TK_HOPPER_STREAMK);
        ROCm builds add "cdna3" (the gfx942 HIP kernel ran).
    """
    counts = dict(_C.kernel_counters())
    counts["fallback"] += _ops._py_fallback_count
    return counts


def reset_kernel_counters():
    """Sets every counter of :func:`kernel_counters` to zero."""
    _C.reset_kernel_counters()
    _ops._py_fallback_count = 0


def fallback_reasons():
    """Distinct reasons (list of str) why CUDA calls ran the reference matmul instead of the kernel.

    Each reason is also warned once (``UserWarning``) the first time it happens.
    """
    return sorted(set(_C.fallback_reasons()) | _ops._py_fallback_reasons)


def hopper_available(device=None):
    """True when this build has the sm_90a kernels and ``device`` (default: current) is sm_90.

    Args:
        device: a CUDA ``torch.device``, index or string; None means the current CUDA device.
    Returns False when CUDA is unavailable.
    """
    if not torch.cuda.is_available():
        return False
    index = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    if index.type != "cuda":
        return False
    return bool(_C.hopper_available(index.index if index.index is not None else torch.cuda.current_device()))


def cdna3_available(device=None):
    """True on a ROCm build of torch_tk whose ``device`` (default: current) is a gfx942 GPU
    (MI300X/MI325X), where the tk ops run the CDNA3 HIP kernel; False everywhere else. That
    kernel is compiled and ISA-checked in CI but has never run on AMD hardware (docs/CDNA3.md).
    """
    if not torch.cuda.is_available() or not getattr(torch.version, "hip", None):
        return False
    index = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    if index.type != "cuda":
        return False
    return bool(_C.cdna3_available(index.index if index.index is not None else torch.cuda.current_device()))


__all__ = [
    "gemm", "addmm", "linear", "gemm_pair", "linear_backward", "linear_backward_cat", "linear_backward_parts",
    "linear_swiglu", "linear_rope",
    "swiglu_mlp", "swiglu_down_backward", "swiglu_down_backward_cat", "gate_up_views",
    "swiglu_grads", "patch_linear", "unpatch_linear", "patch_report", "TKLinear",
    "kernel_counters", "reset_kernel_counters", "fallback_reasons", "hopper_available", "cdna3_available",
]
