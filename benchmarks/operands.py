"""Random bf16 GEMM operands in a named layout, for the benchmark and profiling scripts.

layout: two letters for A (M x K) and B (K x N): "N" stores the operand row-major as written,
"T" stores its transpose row-major and returns a transposed view (so "NT" is a row-major A and
a column-major B, the nn.Linear forward). Values: standard normal, rounded to bf16 (never zeros).
"""
import torch


def layout_operands(M, N, K, layout="NT", device="cuda", generator=None):
    """(a, b): a is M x K, b is K x N, bf16, stored as `layout` says."""
    if len(layout) != 2 or any(c not in "NT" for c in layout):
        raise ValueError(f"layout: two letters of N/T, got {layout!r}")

    def randn(*shape):
        return torch.randn(*shape, device=device, generator=generator).bfloat16()

    a = randn(M, K) if layout[0] == "N" else randn(K, M).t()
    b = randn(K, N) if layout[1] == "N" else randn(N, K).t()
    return a, b
