"""Time a SwiGLU MLP's first half, h = silu(x Wg^T) * (x Wu^T), three ways, interleaved in one process:
  stock: F.linear twice (cuBLAS) + the activation, torch.compile'd (Inductor fuses silu * mul);
  tk:    tk.linear twice + the same compiled activation (what patch_linear alone runs);
  fused: tk.linear_swiglu (one GEMM, h in its epilogue; torch_tk/swiglu.py);
and, with --backward, each form's forward + backward (d_h random, weights and x requiring grad).
Operands are random (never zeros); the fused form is checked against float64 first. Prints us per
call (median of rounds) and each form's time over stock's.

    python benchmarks/swiglu_bench.py [--tokens 8192] [--hidden 2048] [--intermediate 5632] [--backward]
"""
import argparse
import statistics
import sys

import torch
import torch.nn.functional as F

import torch_tk


def forms():
    act = torch.compile(lambda g, u: F.silu(g) * u)
    return {
        "stock": lambda x, wg, wu: act(F.linear(x, wg), F.linear(x, wu)),
        "tk": lambda x, wg, wu: act(torch_tk.linear(x, wg), torch_tk.linear(x, wu)),
        "fused": lambda x, wg, wu: torch_tk.linear_swiglu(x, wg, wu)[1],
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=5632)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--backward", action="store_true")
    p.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("swiglu_bench.py: no CUDA device", file=sys.stderr)
        return 2
    dt = getattr(torch, args.dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    k, i = args.hidden, args.intermediate
    x = torch.randn(args.tokens, k, device="cuda", dtype=dt, generator=gen)
    wg = (torch.randn(i, k, device="cuda", generator=gen) * k ** -0.5).to(dt)
    wu = (torch.randn(i, k, device="cuda", generator=gen) * k ** -0.5).to(dt)
    d_h = torch.randn(args.tokens, i, device="cuda", dtype=dt, generator=gen)
    with torch.no_grad():
        g, u = x.double() @ wg.double().t(), x.double() @ wu.double().t()
        ref = F.silu(g) * u
        got = torch_tk.linear_swiglu(x, wg, wu)[1].double()
        err = ((got - ref).norm() / ref.norm()).item()
    if not err < 1e-2:
        raise SystemExit(f"swiglu_bench: fused result wrong: relative error {err:.3g}")
    if args.backward:
        for t in (x, wg, wu):
            t.requires_grad_()
    fs = forms()

    def call(f):
        if args.backward:
            f(x, wg, wu).backward(d_h)
            for t in (x, wg, wu):
                t.grad = None
        else:
            with torch.no_grad():
                f(x, wg, wu)

    times = {n: [] for n in fs}
    for f in fs.values():
        call(f), call(f)  # compile / warm up
    for _ in range(args.rounds):
        for n, f in fs.items():
            call(f)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(args.iters):
                call(f)
            e.record()
            torch.cuda.synchronize()
            times[n].append(s.elapsed_time(e) * 1e3 / args.iters)
    print(f"swiglu_bench: {torch.cuda.get_device_name()}, {args.dtype}, x {args.tokens} x {k}, I {i}, "
          f"{'forward + backward' if args.backward else 'forward'}, {args.rounds} rounds x {args.iters} calls; "
          f"fused rel err {err:.1e}")
    base = statistics.median(times["stock"])
    for n in fs:
        us = statistics.median(times[n])
        print(f"  {n:<6} {us:9.1f} us  x{us / base:.3f} of stock  (rounds {min(times[n]):.1f}..{max(times[n]):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
