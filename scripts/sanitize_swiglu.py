"""A small tk.linear_swiglu + tk.swiglu_down_backward workload for compute-sanitizer (memcheck /
racecheck / synccheck): the SwiGLU GEMM (csrc/gemm/hopper/epilogue_swiglu.cuh) and the SwiGLU
backward GEMM (epilogue_swiglu_grad.cuh: gate / up tiles through the stage ring) on shapes with M
and K tails, I with a half tile past it (384, 1280), units of one k tile (held rounds flushed by the
next unit's epilogue) and several units per CTA; also tk.linear_rope (the RoPE GEMM,
epilogue_rope.cuh: cos / sin tables through the stage ring, then the held rounds) on the same
shapes as (M, K, N = I); tk.swiglu_down_backward_cat (row pitch 2 I) and tk.linear_backward_cat's
K-parts GEMM (two and three parts of B; three of A and B: tk.linear_backward_parts); each result checked against float64 (relative Frobenius norm). Exit status
1 on a wrong result.

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_swiglu.py [--kparts-only | --swiglu-only]

--kparts-only: the K-parts GEMM's cases alone (on a random joint gradient); --swiglu-only: the SwiGLU
GEMM and the SwiGLU backward GEMM alone (no RoPE, no K-parts) -- for racecheck, which takes minutes
over the whole set.
"""
import sys

import torch

import torch_tk

SHAPES = ((300, 64, 384), (1100, 520, 2560), (4097, 72, 1280), (129, 1000, 256))  # (M, K, I)


def kparts_case(m, k, i, dt, x, wg, wu, both, both_ref):
    """The K-parts GEMM over the gate / up weights (two parts) on `both` (M x 2 I), and with a third
    part of 40 rows (a k tile past its end), B by parts and A by parts too (linear_backward_parts);
    `both_ref`: `both`'s float64 reference (None: not checked). Returns 1 if wrong."""
    w3 = (torch.randn(40, k, device="cuda") * 0.2).to(dt)
    g3 = torch.cat((both, torch.randn(m, 40, device="cuda", dtype=dt)), 1)
    refs = [both_ref, both.double() @ torch.cat((wg, wu)).double(), g3.double() @ torch.cat((wg, wu, w3)).double()]
    refs.append(refs[2])
    parts = [t.contiguous() for t in torch.split(g3, [i, i, 40], 1)]
    outs = [both, torch_tk.linear_backward_cat(both, [wg, wu], x)[0],
            torch_tk.linear_backward_cat(g3, [wg, wu, w3], x)[0],
            torch_tk.linear_backward_parts(parts, [wg, wu, w3], x)[0]]
    errs = [((a.double() - b).norm() / b.norm()).item() if b is not None else 0.0 for a, b in zip(outs, refs)]
    ok = all(e < 1e-2 for e in errs)
    first = f"{errs[0]:.1e}" if both_ref is not None else "(not checked)"
    print(f"{m}x{k}x{i} {dt}: rel err d_gate|d_up {first}, K-parts 2 / 3 / 3 of A {errs[1]:.1e} "
          f"{errs[2]:.1e} {errs[3]:.1e} {'ok' if ok else 'WRONG'}")
    return int(not ok)


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    kparts_only, swiglu_only = "--kparts-only" in args, "--swiglu-only" in args
    if not (torch.cuda.is_available() and torch_tk.hopper_available()):
        print("sanitize_swiglu.py: needs a Hopper GPU", file=sys.stderr)
        return 2
    bad = 0
    for m, k, i in SHAPES:
        for dt in (torch.bfloat16, torch.float16):
            x = torch.randn(m, k, device="cuda", dtype=dt)
            wg, wu = ((torch.randn(i, k, device="cuda") * k ** -0.5).to(dt) for _ in range(2))
            if kparts_only:
                bad += kparts_case(m, k, i, dt, x, wg, wu, torch.randn(m, 2 * i, device="cuda", dtype=dt), None)
                continue
            gu, h = torch_tk.linear_swiglu(x, wg, wu)
            g64, u64 = x.double() @ wg.double().t(), x.double() @ wu.double().t()
            h64 = torch.nn.functional.silu(g64) * u64
            g, u = torch_tk.gate_up_views(gu)
            errs = [((a.reshape(m, i).double() - b).norm() / b.norm()).item() for a, b in ((g, g64), (u, u64), (h, h64))]
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
            errs = [((a.double() - b).norm() / b.norm()).item() for a, b in zip((d_g, d_u), refs)]
            ok = all(e < 1e-2 for e in errs)
            bad += not ok
            print(f"{m}x{k}x{i} {dt}: backward rel err d_gate/d_up {errs[0]:.1e} {errs[1]:.1e} {'ok' if ok else 'WRONG'}")
            if swiglu_only:
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
            err = ((y.double() - ref.view(m, i)).norm() / ref.norm()).item()
            bad += not err < 1e-2
            print(f"{m}x{k}x{i} {dt}: RoPE rel err {err:.1e} {'ok' if err < 1e-2 else 'WRONG'}")
            # [d_gate | d_up] into one tensor (row pitch 2 I), then the K-parts GEMM on it.
            bad += kparts_case(m, k, i, dt, x, wg, wu, torch_tk.swiglu_down_backward_cat(dy, wd, gu),
                               torch.cat(refs, 1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
