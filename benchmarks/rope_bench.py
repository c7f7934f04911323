"""Time an attention projection with its rotary position embedding, as the model's q / k path runs it
(projection [tokens, heads x 128] from [tokens, hidden], rotated per head, handed to attention as
[batch, heads, seq, 128] through a transposed view), in three ways, interleaved in one process:
  stock: F.linear (cuBLAS) + transformers' rotate-half RoPE torch.compile'd (Inductor, full-width
         tables: what the stock step runs, minus the tables' recompute);
  tk:    tk.linear + the same compiled rotation (patch_linear's linear layers alone);
  fused: tk.linear_rope (the rotation in the GEMM's epilogue; torch_tk/rope.py);
and the projection alone (mm: F.linear, gemm: tk.linear), for what the epilogue costs over a plain one.
Operands and tables are random (positions shuffled, never zeros); the fused form is checked against
float64 first. Prints us per call (median of rounds) and each form's time over stock's.

    python benchmarks/rope_bench.py [--tokens 8192] [--hidden 2048] [--out-features 2048] [--seq 2048]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # interleave, also when loaded by path
import interleave  # noqa: E402


def rope_heads(y, cos_full, sin_full, seq):
    """transformers' apply_rotary_pos_emb on y [tokens, heads x 128] viewed as [b, heads, seq, 128]."""
    b = y.shape[0] // seq
    q = y.view(b, seq, -1, 128).transpose(1, 2)
    c, s = cos_full.view(b, seq, 128).unsqueeze(1), sin_full.view(b, seq, 128).unsqueeze(1)
    rot = torch.cat((-q[..., 64:], q[..., :64]), dim=-1)
    return q * c + rot * s


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interleave.add_options(p)
    p.add_argument("--out-features", type=int, default=2048)
    p.add_argument("--seq", type=int, default=2048)
    args = p.parse_args(argv)
    ready = interleave.setup(args, "rope_bench.py")
    if ready is None:
        return 2
    dt, gen = ready
    m, k, n = args.tokens, args.hidden, args.out_features
    x = torch.randn(m, k, device="cuda", dtype=dt, generator=gen)
    w = (torch.randn(n, k, device="cuda", generator=gen) * k ** -0.5).to(dt)
    pos = torch.randperm(m, device="cuda", generator=gen).float().unsqueeze(1) % args.seq
    inv = 1.0 / (10000.0 ** (torch.arange(0, 128, 2, device="cuda").float() / 128))
    cos_full = torch.cat(((pos * inv).cos(),) * 2, -1).to(dt)
    sin_full = torch.cat(((pos * inv).sin(),) * 2, -1).to(dt)
    cos, sin = cos_full[:, :64], sin_full[:, :64]
    rot = torch.compile(rope_heads)
    fs = {
        "stock": lambda: rot(F.linear(x, w), cos_full, sin_full, args.seq),
        "tk": lambda: rot(torch_tk.linear(x, w), cos_full, sin_full, args.seq),
        "fused": lambda: torch_tk.linear_rope(x, w, cos, sin),
        "mm": lambda: F.linear(x, w),
        "gemm": lambda: torch_tk.linear(x, w),
    }
    with torch.no_grad():
        ref = rope_heads(x.double() @ w.double().t(), cos_full.double(), sin_full.double(), args.seq)
        got = torch_tk.linear_rope(x, w, cos, sin).view(-1, args.seq, n // 128, 128).transpose(1, 2)
        err = ((got.double() - ref).norm() / ref.norm()).item()
        for f in fs.values():
            f(), f()  # compile / warm up
        times = interleave.rounds(fs, args.rounds, args.iters)
    if not err < 1e-2:
        raise SystemExit(f"rope_bench: fused result wrong: relative error {err:.2e}")
    print(f"rope_bench: {torch.cuda.get_device_name()}, {args.dtype}, x {m} x {k}, W {n} x {k}, seq {args.seq}, "
          f"{args.rounds} rounds x {args.iters} calls; fused rel err {err:.1e}")
    interleave.print_summary(times, "stock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
