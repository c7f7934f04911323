"""Can Inductor write SwiGLU's backward into a packed gate | up gradient at full speed?

Why (docs/epilogue-fusion.md, step 1): running gate and up as one GEMM needs their gradient packed in
the packed weight's block layout -- in each 2 x BLOCK columns, the first BLOCK hold gate features
BLOCK j .. BLOCK j + BLOCK - 1 and the next BLOCK the up features of the same indices -- and the
2026-12-05c sibling fusion lost ~1 ms per step where Inductor built such a packed gradient as a cat
inside its pointwise kernels (~0.65 TB/s; benchmarks/NOTES.md step table). This times, each compiled
by torch.compile (Inductor), SwiGLU's backward (dg, du from dh, g, u; h = silu(g) * u) in three forms:
  separate: dg and du as two tensors from separate g and u (what the stock model runs);
  stack:    packed dgu from packed gu, by torch.stack over the gate / up halves of each block;
  scatter:  packed dgu from packed gu, by writing dg and du into the halves of one new tensor;
and prints us per call and GB/s over the bytes the op must move (read dh, g, u; write dg, du), with
the ratio to `separate` (> 1: slower than the stock form). Operands are random (never zeros); every
form is checked against a float64 reference first (relative Frobenius norm).

    python benchmarks/swiglu_probe.py [--tokens 8192] [--intermediate 5632] [--block 128] [--rounds 5]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # interleave, also when loaded by path
import interleave  # noqa: E402

FORMS = ("separate", "stack", "scatter")


def pack(g, u, block):
    """[M, I] gate and up -> [M, 2I] in the packed block layout (module docstring)."""
    m, i = g.shape
    return torch.stack((g.view(m, i // block, block), u.view(m, i // block, block)), dim=2).reshape(m, 2 * i)


def unpack(gu, block):
    """[M, 2I] packed -> (gate, up) as [M, I / block, block] views."""
    m, i2 = gu.shape
    v = gu.view(m, i2 // (2 * block), 2, block)
    return v[:, :, 0], v[:, :, 1]


def swiglu_grads(dh, g, u):
    """dg, du of h = silu(g) * u (math in fp32, results in dh's dtype): du = dh silu(g),
    dg = dh u s (1 + g (1 - s)) with s = sigmoid(g)."""
    dh32, g32, u32 = dh.float(), g.float(), u.float()
    s = torch.sigmoid(g32)
    du = dh32 * g32 * s
    dg = dh32 * u32 * s * (1 + g32 * (1 - s))
    return dg.to(dh.dtype), du.to(dh.dtype)


def stacked(dh, gu, block):
    g, u = unpack(gu, block)
    m, i = dh.shape
    dg, du = swiglu_grads(dh.view(m, i // block, block), g, u)
    return pack(dg.view(m, i), du.view(m, i), block)  # torch.stack over each block's halves


def scattered(dh, gu, block):
    g, u = unpack(gu, block)
    m, i = dh.shape
    dg, du = swiglu_grads(dh.view(m, i // block, block), g, u)
    out = torch.empty_like(gu)
    o = out.view(m, i // block, 2, block)
    o[:, :, 0] = dg
    o[:, :, 1] = du
    return out


def make_forms(block, compile_=True):
    """form name -> fn(dh, g, u, gu): `separate` returns (dg, du), the packed forms dgu ([M, 2I])."""
    c = torch.compile if compile_ else (lambda f: f)
    sep, stk, sca = c(swiglu_grads), c(lambda dh, gu: stacked(dh, gu, block)), c(lambda dh, gu: scattered(dh, gu, block))
    return {"separate": lambda dh, g, u, gu: sep(dh, g, u),
            "stack": lambda dh, g, u, gu: stk(dh, gu),
            "scatter": lambda dh, g, u, gu: sca(dh, gu)}


def check(forms, dh, g, u, block, tol):
    """Each form's result (packed) against float64; returns {form: relative error}. ValueError past tol."""
    dg64, du64 = swiglu_grads(dh.double(), g.double(), u.double())
    ref = pack(dg64, du64, block)
    errs = {}
    for name, fn in forms.items():
        got = fn(dh, g, u, pack(g, u, block))
        got = pack(*got, block) if isinstance(got, tuple) else got
        errs[name] = ((got.double() - ref).norm() / ref.norm()).item()
        if not errs[name] <= tol:
            raise ValueError(f"swiglu_probe: form {name!r} is wrong: relative error {errs[name]:.3g} > {tol:g}")
    return errs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--intermediate", type=int, default=5632)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args(argv)
    if args.intermediate % args.block:
        p.error(f"--intermediate {args.intermediate} is not a multiple of --block {args.block}")
    if not torch.cuda.is_available():
        print("swiglu_probe.py: no CUDA device (the timing needs one)", file=sys.stderr)
        return 2
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (args.tokens, args.intermediate)
    dh, g, u = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    gu = pack(g, u, args.block)
    forms = make_forms(args.block)
    errs = check(forms, dh, g, u, args.block, tol=1e-2)
    times = interleave.rounds({f: (lambda fn=forms[f]: fn(dh, g, u, gu)) for f in FORMS}, args.rounds, args.iters)
    moved = 5 * args.tokens * args.intermediate * 2  # read dh, g, u; write dg, du (bf16)
    print(f"swiglu_probe: {torch.cuda.get_device_name()}, {args.tokens} x {args.intermediate}, block {args.block}, "
          f"{args.rounds} rounds x {args.iters} calls")
    for f, us, ratio in interleave.summary(times, "separate"):
        print(f"  {f:<9} {us:8.1f} us  {moved / us / 1e3:7.0f} GB/s  x{ratio:.3f} of separate  rel err {errs[f]:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
