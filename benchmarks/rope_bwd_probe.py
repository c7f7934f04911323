"""How fast can the q / k / v backward's pointwise pass run, and which form of the inverse rotation gets there?

bench_model's profile (H100, 2026-12-07d, `results/h100_2026-12-07d_model_prof.json`) spends ~107 us
per layer in the Inductor kernel that rotates dL/dq and dL/dk back for tk.linear_backward_parts
(`rope.rotate(..., inverse=True)`: 64 MB read, 64 MB written, ~1.2 TB/s), plus ~34 us each for two
copies that add the KV cache's (zero) tangents to dL/dk and dL/dv. This compiles that pass alone, with
the model's layouts -- the attention gradients as (B, H, S, D) views of (B, S, H, D) memory (cuDNN
matches q's layout), the cache tangents (B, H, S, D)-contiguous (AOTAutograd makes tangents
contiguous), half tables (B, S, D / 2) bf16 -- in several forms of the rotation:
  cat:   rope.rotate (two halves joined by torch.cat; the backwards' form before 2026-12-07d);
  flip:  rope.rotate_flip, y[i] * cos + y[1 - i] * sin * (2 i - 1) over the halves i of each head
         (the default since);
  none:  no rotation (the adds and copies only: the floor for the rest).
Each form is checked against `cat` in fp32, timed by CUDA events (ms per call over --calls calls,
median of --rounds interleaved rounds) and its generated code written to --code if given. H100
(2026-12-07d, `results/h100_2026-12-07d_rope_back.txt`): cat 196.9 us, flip 118.5, none 120.6 -- the
cat form's code writes one rotated gradient as an fp32 buffer and rounds it in a second kernel.

    python benchmarks/rope_bwd_probe.py [--batch 4] [--seq 2048] [--heads 16] [--rounds 5] [--code FILE]
        [--model-code FILE]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_model
from torch_tk import rope  # noqa: E402


ROTATIONS = {"cat": rope.rotate, "flip": rope.rotate_flip, "none": None}


def make_pass(rot):
    """The backward's pointwise pass: cache tangents added, q / k rotated back, the three (T, N) parts."""
    def f(dq, dk, dv, tk, tv, cos, sin):
        b, hh, s, d = dq.shape
        n = hh * d
        dk, dv = dk + tk, dv + tv
        g = [t.transpose(1, 2).reshape(b * s, n) for t in (dq, dk, dv)]
        c2d, s2d = cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])
        if rot is not None:
            g[0], g[1] = (rot(x, c2d, s2d, inverse=True).to(dq.dtype) for x in g[:2])
        return [x.contiguous() for x in g]
    return f


def model_code(path):
    """The compiled forward and backward of one step of bench_model's patched model, one layer."""
    import bench_model
    from torch._inductor.utils import run_and_get_code
    ns = argparse.Namespace(layers=1, hidden=2048, intermediate=5632, seq=2048, batch=4)
    _, _, patched, _ = bench_model.stock_and_patched(ns)
    ids = torch.randint(0, 32000, (4, 2048), device="cuda")
    step = bench_model.make_step(ids)
    _, codes = run_and_get_code(step, torch.compile(patched))
    with open(path, "w") as fh:
        fh.write("\n\n######## next graph\n".join(codes))
    torch._dynamo.reset()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--code", default=None, help="file for the forms' generated code (appended)")
    p.add_argument("--model-code", default=None,
                   help="also write the generated code of one step of bench_model's patched model (1 layer) to this file")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("rope_bwd_probe: needs a CUDA GPU")
        return 2
    b, s, hh, d, dt = args.batch, args.seq, args.heads, 128, torch.bfloat16
    torch.manual_seed(0)

    def sdpa_grad():  # (B, H, S, D) view of (B, S, H, D) memory, as cuDNN's gradients
        return torch.randn(b, s, hh, d, device="cuda", dtype=dt).transpose(1, 2)
    dq, dk, dv = sdpa_grad(), sdpa_grad(), sdpa_grad()
    tk, tv = (torch.randn(b, hh, s, d, device="cuda", dtype=dt) * 0.1 for _ in range(2))
    ang = torch.rand(b, s, d // 2, device="cuda") * 6.0
    cos, sin = ang.cos().to(dt), ang.sin().to(dt)
    args_ = (dq, dk, dv, tk, tv, cos, sin)
    forms = {k: torch.compile(make_pass(r)) for k, r in ROTATIONS.items()}
    ref = [x.float() for x in make_pass(rope.rotate)(*args_)]
    for k, f in forms.items():
        out = f(*args_)
        errs = [((o.float() - r).norm() / r.norm()).item() for o, r in zip(out, ref)]
        print(f"{k}: relative error against eager cat per part {', '.join(f'{e:.1e}' for e in errs)}")
        assert k == "none" or max(errs) < 1e-2, (k, errs)
        assert all(o.is_contiguous() and o.shape == (b * s, hh * d) for o in out)
    if args.code:
        from torch._inductor.utils import run_and_get_code
        with open(args.code, "a") as fh:
            for k, r in ROTATIONS.items():
                torch._dynamo.reset()
                _, codes = run_and_get_code(torch.compile(make_pass(r)), *args_)
                for c in codes:
                    fh.write(f"\n\n######## form {k}\n{c}")
        torch._dynamo.reset()
        forms = {k: torch.compile(make_pass(r)) for k, r in ROTATIONS.items()}
        for f in forms.values():
            f(*args_)
    ms = {k: [] for k in forms}
    for _ in range(args.rounds):
        for k, f in forms.items():
            for _ in range(3):
                f(*args_)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(args.calls):
                f(*args_)
            e1.record()
            e1.synchronize()
            ms[k].append(e0.elapsed_time(e1) / args.calls)
    mb = b * s * hh * d * 2 / 1e6  # one (T, N) bf16 tensor
    print(f"\nB={b} S={s} H={hh} D={d}: us per call, median of {args.rounds} rounds of {args.calls} calls "
          f"(the unavoidable bytes: 5 reads + 3 writes of {mb:.0f} MB)")
    for k, v in ms.items():
        med = sorted(v)[len(v) // 2] * 1e3
        print(f"{k:6s} {med:8.1f} us   {8 * mb / med:5.2f} TB/s at 8 tensors   rounds {' '.join(f'{x * 1e3:.1f}' for x in v)}")
    if args.model_code:
        model_code(args.model_code)


if __name__ == "__main__":
    main()
