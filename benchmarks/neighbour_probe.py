"""Does a GEMM slow the kernels that run after it? A probe op's time right after ours vs after torch.mm.

Why: in bench_model's profile (`--profile`) kernels that are the same in both models -- the cuDNN
attention kernels and the unpatched lm_head's cuBLAS GEMMs -- take 2-5% longer in the patched
model at the same mean SM clock (H200 2026-12-06b: attention 6504 -> 6776 us per step, lm_head
1273 -> 1328, 1366 -> 1420 us; 2026-11-26l and 2026-11-28i: attention +3%). If a GEMM leaves the
GPU slower for what follows (power-management lag, L2 contents), that costs the patched model
time outside the GEMMs themselves.

Method: per neighbour case, blocks alternate between ours and torch.mm as the neighbour; each block
runs `--iters` times [neighbour x `--burst`, probe], back to back with no flush and no
synchronisation inside the block (as in a model's step), and CUDA events time each probe call only.
Probes: `mm` (torch.mm, 8192x2048x2048 NN: bench_model's dX GEMM), `sdpa` (causal
F.scaled_dot_product_attention, batch 4, 16 heads, 2048 x 128: bench_model's attention),
`sdpa_bwd` (its backward alone, autograd.grad of a fixed output gradient, with the model's layout:
q / k / v as (B, H, S, D) views of (B, S, H, D) memory; in the model the o_proj dX GEMM,
8192x2048x2048 NN, runs right before it: 2026-12-07h's H200 profile had cuDNN's backward 1.9% and
the H100's of 2026-12-07d 4.2% slower in the patched step), `copy` (a 256 MB device copy:
memory-bound). benchmarks/gpu_sampler.py records the mean SM clock of each
block. Operands: random bf16 (benchmarks/operands.py).

    python benchmarks/neighbour_probe.py [--cases 8192x2048x2048:NN,...] [--probes mm,sdpa,sdpa_bwd,copy]
        [--burst 4] [--iters 50] [--blocks 6]

Prints per case and probe: median probe ms after each neighbour, the ratio (after ours / after
torch.mm; > 1: the probe is slower after ours), and the mean SM MHz of each side's blocks.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from energy_probe import parse_case  # noqa: E402
from gpu_sampler import sampler_for_device  # noqa: E402
from operands import layout_operands  # noqa: E402

DEFAULT_CASES = "8192x2048x2048:NN,8192x2048x2048:NT,2048x2048x8192:TN"


def make_probes(names, gen):
    """name -> zero-argument callable, each on fresh random bf16 data."""
    probes = {}
    for n in names:
        if n == "mm":
            a, b = layout_operands(8192, 2048, 2048, "NN", generator=gen)
            probes[n] = lambda a=a, b=b: torch.mm(a, b)
        elif n == "sdpa":
            q, k, v = (torch.randn(4, 16, 2048, 128, device="cuda", generator=gen).bfloat16() for _ in range(3))
            probes[n] = lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif n == "sdpa_bwd":
            q, k, v = (torch.randn(4, 2048, 16, 128, device="cuda", generator=gen).bfloat16().transpose(1, 2)
                       .requires_grad_() for _ in range(3))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            dout = torch.randn(out.shape, device="cuda", generator=gen).bfloat16()
            probes[n] = lambda q=q, k=k, v=v, o=out, g=dout: torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
        elif n == "copy":
            src = torch.randn(64 << 20, device="cuda", generator=gen)  # 256 MB of fp32
            dst = torch.empty_like(src)
            probes[n] = lambda s=src, d=dst: d.copy_(s)
        else:
            raise ValueError(f"--probes: unknown probe {n!r}; choose from mm, sdpa, sdpa_bwd, copy")
    return probes


def run_block(neighbour, probe, burst, iters):
    """Probe times (ms) of one block: iters x [neighbour x burst, probe], no sync inside."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for start, end in events:
        for _ in range(burst):
            neighbour()
        start.record()
        probe()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=DEFAULT_CASES, help="comma list of neighbour GEMMs MxNxK:LAY")
    p.add_argument("--probes", default="mm,sdpa,sdpa_bwd,copy", help="comma list of mm, sdpa, sdpa_bwd, copy")
    p.add_argument("--burst", type=int, default=4, help="neighbour calls before each probe call")
    p.add_argument("--iters", type=int, default=50, help="[burst, probe] iterations per block")
    p.add_argument("--blocks", type=int, default=6, help="blocks per neighbour, ours and torch.mm alternating")
    args = p.parse_args()
    for name in ("burst", "iters", "blocks"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if not torch.cuda.is_available():
        print("neighbour_probe: needs a CUDA GPU")
        return 2
    dev = torch.cuda.current_device()
    sampler = sampler_for_device(torch.cuda.get_device_properties(dev), dev)
    gen = torch.Generator(device="cuda").manual_seed(0)
    probes = make_probes(args.probes.split(","), gen)
    print(f"# {torch.cuda.get_device_name(dev)}; {args.blocks} blocks per neighbour of {args.iters} x "
          f"[neighbour x {args.burst}, probe], no flush, no sync inside a block")
    print(f"{'neighbour':22s} {'probe':6s} {'after torch':>11s} {'after ours':>10s} {'ratio':>6s} "
          f"{'MHz torch':>9s} {'MHz ours':>8s}")
    for text in args.cases.split(","):
        (M, N, K), lay = parse_case(text)
        a, b = layout_operands(M, N, K, lay, generator=gen)
        neighbours = {"torch": lambda: torch.mm(a, b), "ours": lambda: torch_tk.gemm(a, b)}
        for pname, probe in probes.items():
            times = {n: [] for n in neighbours}
            for n, fn in neighbours.items():  # warm-up: code, plans, clocks
                run_block(fn, probe, args.burst, 2)
            for blk in range(args.blocks):
                order = list(neighbours) if blk % 2 == 0 else list(reversed(list(neighbours)))
                for n in order:
                    with sampler.window(f"{text}/{pname}/{n}"):
                        times[n] += run_block(neighbours[n], probe, args.burst, args.iters)
            time.sleep(0.1)  # the sampler's last lines
            med = {n: statistics.median(t) for n, t in times.items()}
            mhz = {n: sampler.means(f"{text}/{pname}/{n}")["sm_mhz"] for n in neighbours}
            mhz = {n: "-" if m is None else f"{m:.0f}" for n, m in mhz.items()}
            print(f"{text:22s} {pname:6s} {med['torch']:11.4f} {med['ours']:10.4f} {med['ours'] / med['torch']:6.3f} "
                  f"{mhz['torch']:>9s} {mhz['ours']:>8s}", flush=True)
    sampler.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
