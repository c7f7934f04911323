"""Time a SwiGLU MLP's backward through the down projection to the activation's gradients,
d_gate and d_up from dy (dh = dy @ W_down, then the SwiGLU backward), three ways, interleaved in one
process:
  stock: torch.mm (cuBLAS) for dh + swiglu_grads torch.compile'd (Inductor: what the stock step runs);
  tk:    tk.gemm for dh + the same compiled activation gradient (patch_linear's linear layers alone);
  fused: tk.swiglu_down_backward (one GEMM, the activation gradient in its epilogue; torch_tk/swiglu.py);
and dh alone (mm: torch.mm, gemm: tk.gemm), for what the fused epilogue costs over a plain one;
--xp: the fused form with stages of its epilogue removed (a TK_EXPERIMENTS=1 build).
Operands are random (never zeros; gate values over sigmoid's curved range); the fused form is checked
against float64 first. Prints us per call (median of rounds) and each form's time over stock's.

    python benchmarks/swiglu_grad_bench.py [--tokens 8192] [--hidden 2048] [--intermediate 5632]
"""
import argparse
import os
import sys

import torch

import torch_tk
from torch_tk.swiglu import swiglu_grads

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # interleave, also when loaded by path
import interleave  # noqa: E402


def forms():
    grads = torch.compile(swiglu_grads)
    return {
        "stock": lambda dy, wd, gu: grads(torch.mm(dy, wd), gu),
        "tk": lambda dy, wd, gu: grads(torch_tk.gemm(dy, wd), gu),
        "fused": lambda dy, wd, gu: torch_tk.swiglu_down_backward(dy, wd, gu),
        # dh alone, for what the fused epilogue costs over the plain GEMM's
        "mm": lambda dy, wd, gu: torch.mm(dy, wd),
        "gemm": lambda dy, wd, gu: torch_tk.gemm(dy, wd),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interleave.add_options(p)
    p.add_argument("--xp", default="", help="comma-separated TK_HOPPER_EXPERIMENT values: one more fused form each "
                   "(a TK_EXPERIMENTS=1 build; gemm_experiments.cuh: e.g. 16777216 = kXpGradNoMath, 3840 = no "
                   "store stages; such forms store WRONG values)")
    args = p.parse_args(argv)
    ready = interleave.setup(args, "swiglu_grad_bench.py")
    if ready is None:
        return 2
    dt, gen = ready
    h, i = args.hidden, args.intermediate
    dy = torch.randn(args.tokens, h, device="cuda", dtype=dt, generator=gen)
    wd = (torch.randn(h, i, device="cuda", generator=gen) * h ** -0.5).to(dt)
    gu = (torch.randn(args.tokens, 2 * i, device="cuda", generator=gen) * 2).to(dt)
    with torch.no_grad():
        refs = swiglu_grads(dy.double() @ wd.double(), gu.double())
        errs = [((a.double() - b).norm() / b.norm()).item()
                for a, b in zip(torch_tk.swiglu_down_backward(dy, wd, gu), refs)]
    if not max(errs) < 1e-2:
        raise SystemExit(f"swiglu_grad_bench: fused result wrong: relative errors {errs}")
    fs = forms()
    for v in filter(None, args.xp.split(",")):
        def xp_form(dy, wd, gu, v=v):
            os.environ["TK_HOPPER_EXPERIMENT"] = v
            try:
                return torch_tk.swiglu_down_backward(dy, wd, gu)
            finally:
                os.environ["TK_HOPPER_EXPERIMENT"] = "0"
        fs[f"xp{v}"] = xp_form

    def call(f):
        with torch.no_grad():
            f(dy, wd, gu)

    for f in fs.values():
        call(f), call(f)  # compile / warm up
    times = interleave.rounds({n: (lambda f=f: call(f)) for n, f in fs.items()}, args.rounds, args.iters)
    print(f"swiglu_grad_bench: {torch.cuda.get_device_name()}, {args.dtype}, dy {args.tokens} x {h}, I {i}, "
          f"{args.rounds} rounds x {args.iters} calls; fused rel err d_gate {errs[0]:.1e} d_up {errs[1]:.1e}")
    interleave.print_summary(times, "stock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
