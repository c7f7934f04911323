"""The L2 state a GEMM is timed or traced in, shared by bench_gemm.py (--l2) and scripts/pipeline_trace.py.

dirty: a 256 MB memset before the call, as triton's do_bench (the memset's dirty lines stay in
the L2); clean: the same memset, then a 256 MB read, which evicts those dirty lines outside the
call (H200, 2026-11-26d: cuBLAS at 64x4096x4096 17.5 -> 14.2 us with it, ours 18.1 -> 18.4;
benchmarks/NOTES.md). Either flush also evicts the kernels' code (2026-11-28f).
"""
import torch


def l2_flush(state, device="cuda"):
    """A callable that puts the L2 in `state` ("dirty" or "clean"); its buffers are allocated once."""
    if state not in ("dirty", "clean"):
        raise ValueError(f"state: 'dirty' or 'clean', got {state!r}")
    dirty = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    if state == "dirty":
        return dirty.zero_
    clean = torch.ones(64 << 20, dtype=torch.float32, device=device)

    def flush():
        dirty.zero_()
        torch.sum(clean)

    return flush
