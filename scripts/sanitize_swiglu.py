"""A small tk.linear_swiglu + tk.swiglu_down_backward workload for compute-sanitizer (memcheck /
racecheck / synccheck): the SwiGLU GEMM (csrc/gemm/hopper/epilogue_swiglu.cuh) and the SwiGLU
backward GEMM (epilogue_swiglu_grad.cuh: gate / up tiles through the stage ring) on shapes with M
and K tails, I with a half tile past it (384, 1280), units of one k tile (held rounds flushed by the
next unit's epilogue) and several units per CTA; also tk.linear_rope (the RoPE GEMM,
epilogue_rope.cuh: cos / sin tables through the stage ring, then the held rounds) on the same
shapes as (M, K, N = I); tk.swiglu_down_backward_cat (row pitch 2 I) and tk.linear_backward_cat's
K-parts GEMM (two and three parts of B; three of A and B: tk.linear_backward_parts, whose weight
gradients run the M-parts GEMM: three parts of A by rows); each result checked against float64
(relative Frobenius norm). Exit status 1 on a wrong result.

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_swiglu.py [--kparts-only | --swiglu-only] [--shapes MxKxI,...]

--kparts-only: the K-parts and M-parts GEMMs' cases alone (on a random joint gradient); --swiglu-only: the SwiGLU
GEMM and the SwiGLU backward GEMM (both outputs forms) alone, no RoPE, no K-parts -- for racecheck,
which takes minutes over the whole set.
"""
import argparse
import sys

import torch

import torch_tk

SHAPES = ((300, 64, 384), (1100, 520, 2560), (4097, 72, 1280), (129, 1000, 256))  # (M, K, I)


def rel_err(a, ref):
    """Relative Frobenius-norm error of `a` against its float64 reference."""
    return ((a.double() - ref).norm() / ref.norm()).item()


def kparts_case(m, k, i, dt, x, wg, wu, both):
    """The K-parts GEMM over the gate / up weights (two parts) on `both` (M x 2 I), and with a third
    part of 40 rows (a k tile past its end), B by parts and A by parts too (linear_backward_parts).
    Returns 1 if wrong."""
    w3 = (torch.randn(40, k, device="cuda") * 0.2).to(dt)
    g3 = torch.cat((both, torch.randn(m, 40, device="cuda", dtype=dt)), 1)
    ref2, ref3 = both.double() @ torch.cat((wg, wu)).double(), g3.double() @ torch.cat((wg, wu, w3)).double()
    parts = [t.contiguous() for t in torch.split(g3, [i, i, 40], 1)]
    gi_parts, gw_parts = torch_tk.linear_backward_parts(parts, [wg, wu, w3], x)
    errs = [rel_err(torch_tk.linear_backward_cat(both, [wg, wu], x)[0], ref2),
            rel_err(torch_tk.linear_backward_cat(g3, [wg, wu, w3], x)[0], ref3),
            rel_err(gi_parts, ref3),
            rel_err(torch.cat(gw_parts), g3.double().t() @ x.double())]  # the M-parts GEMM (three parts of A)
    ok = all(e < 1e-2 for e in errs)
    print(f"{m}x{k}x{i} {dt}: rel err K-parts 2 / 3 / 3 of A {errs[0]:.1e} {errs[1]:.1e} {errs[2]:.1e}, "
          f"M-parts {errs[3]:.1e} {'ok' if ok else 'WRONG'}")
    return int(not ok)


def main(argv=None):
    p = argparse.ArgumentParser(description="tk SwiGLU / RoPE / K-parts GEMMs for compute-sanitizer")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--kparts-only", action="store_true", help="the K-parts GEMM's cases alone")
    only.add_argument("--swiglu-only", action="store_true", help="the SwiGLU forward / backward GEMMs alone")
    p.add_argument("--shapes", default=None, metavar="MxKxI[,MxKxI...]",
                   help="these (M, K, I) instead of the built-in set (e.g. to finish a racecheck in a second call)")
    args = p.parse_args(argv)
    try:
        shapes = SHAPES if args.shapes is None else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
        if any(len(s) != 3 or min(s) < 1 for s in shapes):
            raise ValueError
    except ValueError:
        p.error(f"--shapes: expected MxKxI[,MxKxI...] of positive integers, got {args.shapes!r}")
    if not (torch.cuda.is_available() and torch_tk.hopper_available()):
        print("sanitize_swiglu.py: needs a Hopper GPU", file=sys.stderr)
        return 2
    bad = 0
    for m, k, i in shapes:
        for dt in (torch.bfloat16, torch.float16):
            x = torch.randn(m, k, device="cuda", dtype=dt)
            wg, wu = ((torch.randn(i, k, device="cuda") * k ** -0.5).to(dt) for _ in range(2))
            if args.kparts_only:
                bad += kparts_case(m, k, i, dt, x, wg, wu, torch.randn(m, 2 * i, device="cuda", dtype=dt))
                continue
            gu, h = torch_tk.linear_swiglu(x, wg, wu)
            g64, u64 = x.double() @ wg.double().t(), x.double() @ wu.double().t()
            h64 = torch.nn.functional.silu(g64) * u64
            g, u = torch_tk.gate_up_views(gu)
            errs = [rel_err(a.reshape(m, i), b) for a, b in ((g, g64), (u, u64), (h, h64))]
            ok = all(e < 1e-2 for e in errs)
            bad += not ok
            print(f"{m}x{k}x{i} {dt}: rel err gate/up/h {errs[0]:.1e} {errs[1]:.1e} {errs[2]:.1e} {'ok' if ok else 'WRONG'}")
            # The backward GEMM on the same gu, with K (the hidden size) = k.
            dy = torch.randn(m, k, device="cuda", dtype=dt)
            wd = (torch.randn(k, i, device="cuda") * k ** -0.5).to(dt)
            d_g, d_u = torch_tk.swiglu_down_backward(dy, wd, gu)
            dh = dy.double() @ wd.double()
            gd, ud = (t.reshape(m, i).double() for t in (g, u))
            s = torch.sigmoid(gd)
            refs = (dh * ud * s * (1 + gd * (1 - s)), dh * gd * s)
            errs = [rel_err(a, b) for a, b in zip((d_g, d_u), refs)]
            ok = all(e < 1e-2 for e in errs)
            bad += not ok
            print(f"{m}x{k}x{i} {dt}: backward rel err d_gate/d_up {errs[0]:.1e} {errs[1]:.1e} {'ok' if ok else 'WRONG'}")
            # The same into one tensor [d_gate | d_up] (row pitch 2 I).
            both = torch_tk.swiglu_down_backward_cat(dy, wd, gu)
            err = rel_err(both, torch.cat(refs, 1))
            bad += not err < 1e-2
            print(f"{m}x{k}x{i} {dt}: rel err d_gate|d_up {err:.1e} {'ok' if err < 1e-2 else 'WRONG'}")
            if args.swiglu_only:
                continue
            # The RoPE GEMM: x (m x k) against I / 128 heads, tables of m shuffled positions.
            wq = (torch.randn(i, k, device="cuda") * k ** -0.5).to(dt)
            ang = torch.randperm(m, device="cuda").double().unsqueeze(1) * 10000.0 ** (
                -torch.arange(64, device="cuda").double() / 64)
            cos, sin = ang.cos().to(dt), ang.sin().to(dt)
            y = torch_tk.linear_rope(x, wq, cos, sin)
            y3 = (x.double() @ wq.double().t()).view(m, -1, 128)
            c, sn = cos.double().unsqueeze(1), sin.double().unsqueeze(1)
            ref = torch.cat((y3[..., :64] * c - y3[..., 64:] * sn, y3[..., 64:] * c + y3[..., :64] * sn), -1)
            err = rel_err(y, ref.view(m, i))
            bad += not err < 1e-2
            print(f"{m}x{k}x{i} {dt}: RoPE rel err {err:.1e} {'ok' if err < 1e-2 else 'WRONG'}")
            bad += kparts_case(m, k, i, dt, x, wg, wu, both)  # (the K-parts GEMM on [d_gate | d_up])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
