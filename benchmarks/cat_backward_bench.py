"""Time the backward of linear layers sharing an input, at bench_model's shapes, two ways, interleaved:
  sep: one tk.linear_backward per layer (dX and dW of each) and the sum of the dX (torch add), as
       autograd runs separately patched layers (the form before 2026-12-06h);
  cat: tk.linear_backward_cat on the gradients side by side (one K-parts GEMM for dX over the weights
       in place, one GEMM for all dW; torch_tk/cat_backward.py);
  cat+copy: the same after torch.cat of the separate gradients (what a cat costs where they come apart);
  parts: tk.linear_backward_parts on the separate gradients (the K-parts GEMM reading them in place too,
       and since 2026-12-07 the M-parts GEMM: one dW GEMM over them all, each read in place);
  dW x1 / dW each: the weight gradients alone, as cat's one GEMM or one per layer (parts' form before
       2026-12-07; parts against cat now shows what the M-parts GEMM costs against one plain GEMM).
Cases: the SwiGLU MLP's gate / up (2 x intermediate rows) and the attention's q / k / v (3 x hidden).
Operands are random (never zeros); cat's dX is checked against float64 first. Prints us per call
(median of rounds) and each over sep.

    python benchmarks/cat_backward_bench.py [--tokens 8192] [--hidden 2048] [--intermediate 5632]
"""
import argparse
import os
import sys

import torch

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # interleave, also when loaded by path
import interleave  # noqa: E402


def case(name, m, rows, k, dt, gen, args):
    g = torch.randn(m, sum(rows), device="cuda", dtype=dt, generator=gen)
    ws = [(torch.randn(r, k, device="cuda", generator=gen) * r ** -0.5).to(dt) for r in rows]
    x = torch.randn(m, k, device="cuda", dtype=dt, generator=gen)
    parts = [p.contiguous() for p in torch.split(g, rows, 1)]  # (the separate layers' own gradients)

    def sep():
        outs = [torch_tk.linear_backward(p, w, x) for p, w in zip(parts, ws)]
        dx = outs[0][0]
        for o in outs[1:]:
            dx = dx + o[0]
        return dx

    fs = {"sep": sep, "cat": lambda: torch_tk.linear_backward_cat(g, ws, x)[0],
          "cat+copy": lambda: torch_tk.linear_backward_cat(torch.cat(parts, 1), ws, x)[0],
          "parts": lambda: torch_tk.linear_backward_parts(parts, ws, x)[0],
          # the weight gradients alone: one GEMM over the joint gradient (cat's) or one per layer (parts')
          "dW x1": lambda: torch_tk.gemm(g.t(), x),
          "dW each": lambda: [torch_tk.gemm(p.t(), x) for p in parts][-1]}
    ref = g.double() @ torch.cat(ws).double()
    for f in ("cat", "parts"):
        err = ((fs[f]().double() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise SystemExit(f"cat_backward_bench: {name}: {f} dX wrong, relative error {err:.2e}")
    times = interleave.rounds(fs, args.rounds, args.iters)
    print(f"{name}: grad {m} x {sum(rows)}, weights {rows} x {k}; parts dX rel err {err:.1e}")
    interleave.print_summary(times, "sep")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interleave.add_options(p)
    args = p.parse_args(argv)
    ready = interleave.setup(args, "cat_backward_bench.py")
    if ready is None:
        return 2
    dt, gen = ready
    m, h, i = args.tokens, args.hidden, args.intermediate
    print(f"cat_backward_bench: {torch.cuda.get_device_name()}, {args.dtype}, {args.rounds} rounds x {args.iters} calls")
    case("gate / up", m, [i, i], h, dt, gen, args)
    case("q / k / v", m, [h, h, h], h, dt, gen, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
