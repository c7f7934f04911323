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
import os
import sys

import torch
import torch.nn.functional as F

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # interleave, also when loaded by path
import interleave  # noqa: E402


def forms():
    act = torch.compile(lambda g, u: F.silu(g) * u)
    return {
        "stock": lambda x, wg, wu: act(F.linear(x, wg), F.linear(x, wu)),
        "tk": lambda x, wg, wu: act(torch_tk.linear(x, wg), torch_tk.linear(x, wu)),
        "fused": lambda x, wg, wu: torch_tk.linear_swiglu(x, wg, wu)[1],
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interleave.add_options(p)
    p.add_argument("--backward", action="store_true")
    args = p.parse_args(argv)
    ready = interleave.setup(args, "swiglu_bench.py")
    if ready is None:
        return 2
    dt, gen = ready
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

    for f in fs.values():
        call(f), call(f)  # compile / warm up
    times = interleave.rounds({n: (lambda f=f: call(f)) for n, f in fs.items()}, args.rounds, args.iters)
    print(f"swiglu_bench: {torch.cuda.get_device_name()}, {args.dtype}, x {args.tokens} x {k}, I {i}, "
          f"{'forward + backward' if args.backward else 'forward'}, {args.rounds} rounds x {args.iters} calls; "
          f"fused rel err {err:.1e}")
    interleave.print_summary(times, "stock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
