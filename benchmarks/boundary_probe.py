"""What the custom-op boundary alone costs bench_model: cuBLAS behind an opaque op, next to stock and tk.

Why: bench_model's patched step is ~1% slower than stock (0.988-0.993 sustained, 2026-12-06/06b),
and its profile shows kernels that are the same in both models -- cuDNN attention, the unpatched
lm_head's cuBLAS GEMMs -- 2-5% slower in the patched model at the same mean clock, while
benchmarks/neighbour_probe.py finds no kernel slower right after one of our GEMMs. A third model
separates the two causes: "boundary" replaces the same nn.Linear layers as patch_linear by an opaque
custom op (`tk_probe::linear`, torch.library) that runs F.linear, with a backward that runs dX and
dW through one opaque op as tk.gemm_pair does (`tk_probe::pair`, two torch.mm). Its GEMMs are
cuBLAS's, as in stock; its graph has the patched model's op boundaries (Inductor cannot see
through them: no fusion of views or casts into the GEMMs, the same allocation pattern). So
  boundary / stock < 1: the op boundary costs that much, whatever the kernels;
  tk / boundary: our kernels against cuBLAS's inside the same graph.

Method: bench_model's model and step (benchmarks/bench_model.py), three models compiled, rounds of
`--steps` steps rotating the order, per model the lower middle round (statistics.median_low); benchmarks/gpu_sampler.py's mean SM
clock and power per model. `--profile` adds bench_model's per-kernel-class table for all three.

    python benchmarks/boundary_probe.py [--rounds 8] [--steps 5] [--profile] [--out result.json]

(tk's model patches the linear layers only, as the boundary model does: bench_model's --fuse-mlp is
off here unless given.)
"""
import argparse
import copy
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from bench_model import (add_model_args, make_step, merge_profiles, print_profile, profile_step, stock_and_patched,  # noqa: E402
                         time_rounds, warm_up)
from gpu_sampler import sampler_for_device  # noqa: E402


@torch.library.custom_op("tk_probe::linear", mutates_args=())
def probe_linear(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """F.linear(input, weight) behind an op Inductor cannot see into (cuBLAS runs it)."""
    return F.linear(input, weight)


@probe_linear.register_fake
def _probe_linear_fake(input, weight):
    return input.new_empty((*input.shape[:-1], weight.shape[0]))


@torch.library.custom_op("tk_probe::pair", mutates_args=())
def probe_pair(a0: torch.Tensor, b0: torch.Tensor, a1: torch.Tensor, b1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a0 @ b0, a1 @ b1) by torch.mm, as one opaque op (tk.gemm_pair's role in the backward)."""
    return torch.mm(a0, b0), torch.mm(a1, b1)


@probe_pair.register_fake
def _probe_pair_fake(a0, b0, a1, b1):
    return a0.new_empty((a0.shape[0], b0.shape[1])), a1.new_empty((a1.shape[0], b1.shape[1]))


def _probe_setup(ctx, inputs, output):
    x, w = inputs
    ctx.input_shape = x.shape
    ctx.save_for_backward(x, w)


def _probe_backward(ctx, grad):  # the same reshapes and operand order as torch_tk.ops._linear_backward
    x, w = ctx.saved_tensors
    g2d = grad.reshape(-1, grad.shape[-1])
    gi, gw = probe_pair(g2d, w, g2d.t(), x.reshape(-1, x.shape[-1]))
    return gi.reshape(ctx.input_shape), gw


probe_linear.register_autograd(_probe_backward, setup_context=_probe_setup)


class ProbeLinear(nn.Linear):
    """nn.Linear (bias-free) whose forward is tk_probe::linear."""

    def forward(self, input):
        return probe_linear(input, self.weight)


def boundary_model(stock, patched_fqns):
    """A copy of `stock` whose nn.Linear modules named in patched_fqns run ProbeLinear."""
    m = copy.deepcopy(stock)
    for fqn, mod in m.named_modules():
        if fqn in patched_fqns:
            if mod.bias is not None:
                raise ValueError(f"boundary_model: {fqn} has a bias; tk_probe::linear takes none")
            mod.__class__ = ProbeLinear
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(p)
    p.add_argument("--profile", action="store_true", help="after timing, bench_model's kernel-class profile of each model")
    p.add_argument("--out", default=None)
    # The boundary model replaces linear layers only, so tk's model does too unless asked (--fuse-mlp,
    # --fuse-rope).
    p.set_defaults(fuse_mlp=False, fuse_rope=False)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("boundary_probe: needs a CUDA GPU")
        return 2
    cfg, stock, patched, report = stock_and_patched(args)
    fqns = set(report["patched"])
    models = {"stock": torch.compile(stock), "boundary": torch.compile(boundary_model(stock, fqns)),
              "tk": torch.compile(patched)}
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")
    step = make_step(ids)
    losses = warm_up(models, step)
    names = list(models)
    sampler = sampler_for_device(torch.cuda.get_device_properties(0), torch.cuda.current_device())
    ms = time_rounds(models, step, args.rounds, args.steps, sampler)
    time.sleep(0.1)
    sampler.close()
    med = {k: statistics.median_low(v) for k, v in ms.items()}
    clocks = {k: sampler.means(k) for k in models}
    print(f"boundary_probe: {torch.cuda.get_device_name()}, {len(fqns)} linears behind an op "
          f"(patch_linear's), {args.rounds} rounds x {args.steps} steps")
    print("loss after warm-up: " + "  ".join(f"{k} {v:.4f}" for k, v in losses.items()))
    print(f"{'model':<10}{'step ms':>9}{'vs stock':>10}{'SM MHz':>8}{'W':>6}")
    for k in models:
        c = clocks[k]
        mhz = f"{c['sm_mhz']:8.0f}" if c["sm_mhz"] is not None else f"{'-':>8}"
        w = f"{c['watts']:6.0f}" if c["watts"] is not None else f"{'-':>6}"
        print(f"{k:<10}{med[k]:9.2f}{med['stock'] / med[k]:10.3f}{mhz}{w}")
    print(f"tk / boundary (our kernels against cuBLAS's in the same graph): {med['boundary'] / med['tk']:.3f}")
    result = {"device": torch.cuda.get_device_name(), "config": vars(args), "step_ms_rounds": ms,
              "step_ms_median": med, "clocks": clocks, "losses": losses}
    if args.profile:
        passes = [(k, profile_step(step, models[k], 2)) for k in names + names[::-1]]
        result["profile_us"] = {k: merge_profiles([pr for n, pr in passes if n == k]) for k in names}
        print_profile(result["profile_us"])
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
