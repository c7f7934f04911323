"""Why are the compiled model's RoPE kernels slow, and what would a fused RoPE leave?

bench_model's profile (H100, 2026-12-06f) spends ~1 ms per step in the Inductor kernels around
rotary position embedding (transformers' `apply_rotary_pos_emb`, rotate-half form): ~66 us per layer
forward (q and k together) and ~94 us per projection backward -- 64 MB moved per backward call, i.e.
~0.7 TB/s. This times one attention's q / k / v path as the model runs it (projection outputs
[B, S, H * D] -> heads -> RoPE on q, k -> SDPA causal -> [B, S, H * D]), forward and backward, each
compiled by torch.compile, in three forms:
  model:  cos / sin from the position ids inside the compiled graph (transformers' rotary embedding
          module, as bench_model's LlamaModel computes them; Inductor may recompute them per element);
  tables: cos / sin computed once outside and passed in as [B, S, D] tensors (what a fused op reads);
  none:   no rotation (the layout changes and SDPA only: the floor for the rest).
Prints, per form, GPU microseconds per call of the non-attention kernels (forward / backward, from
torch.profiler) and the total. Operands are random; the forms are checked against each other first.

    python benchmarks/rope_probe.py [--batch 4] [--seq 2048] [--heads 16] [--rounds 3] [--code DIR]
"""
import argparse
import os

import torch
import torch.nn.functional as F


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, cos, sin):  # x [B, H, S, D]; cos / sin [B, S, D]: transformers' apply_rotary_pos_emb
    return x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1)


def attention(xq, xk, xv, cos, sin, heads):
    b, s, hd = xq.shape
    q, k, v = (t.view(b, s, heads, hd // heads).transpose(1, 2) for t in (xq, xk, xv))
    if cos is not None:
        q, k = rope(q, cos, sin), rope(k, cos, sin)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(1, 2).reshape(b, s, hd)


def make_forms(rotary, heads):
    def model(xq, xk, xv, pos):
        cos, sin = rotary(xq, pos)
        return attention(xq, xk, xv, cos, sin, heads)

    def tables(xq, xk, xv, cos, sin):
        return attention(xq, xk, xv, cos, sin, heads)

    def none(xq, xk, xv):
        return attention(xq, xk, xv, None, None, heads)
    return {"model": model, "tables": tables, "none": none}


def _kernels(prof, steps, into):
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        n = e.name
        if any(x in n for x in ("cudnn", "flash", "fmha", "sdpa", "Memset", "Memcpy")):
            continue
        into[n] = into.get(n, 0.0) + e.device_time / steps


def kernel_us(fn, args, grad, steps):
    """(forward, backward, {kernel: us}) GPU us per call of the kernels that are not attention's."""
    leaves = [a for a in args if a.requires_grad]  # autograd.grad: no AccumulateGrad adds timed
    out = fn(*args)
    torch.autograd.grad(out, leaves, grad)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    fwd, bwd = {}, {}
    for _ in range(steps):
        with torch.profiler.profile(activities=acts) as prof:
            out = fn(*args)
            torch.cuda.synchronize()
        _kernels(prof, steps, fwd)
        with torch.profiler.profile(activities=acts) as prof:
            torch.autograd.grad(out, leaves, grad)
            torch.cuda.synchronize()
        _kernels(prof, steps, bwd)
    names = {"fwd " + k: v for k, v in fwd.items()}
    names.update({"bwd " + k: v for k, v in bwd.items()})
    return sum(fwd.values()), sum(bwd.values()), names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--code", default=None, help="directory for each form's generated code")
    args = p.parse_args()
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    dev, dt, d = "cuda", torch.bfloat16, 128
    cfg = LlamaConfig(hidden_size=args.heads * d, num_attention_heads=args.heads, max_position_embeddings=args.seq)
    rotary = LlamaRotaryEmbedding(cfg).to(dev)
    b, s, hd = args.batch, args.seq, args.heads * d
    torch.manual_seed(0)
    xs = [(torch.randn(b, s, hd, device=dev, dtype=dt) * 0.5).requires_grad_() for _ in range(3)]
    grad = torch.randn(b, s, hd, device=dev, dtype=dt)
    pos = torch.arange(s, device=dev).unsqueeze(0).expand(b, s)
    with torch.no_grad():
        cos, sin = rotary(xs[0], pos)
    forms = make_forms(rotary, args.heads)
    inputs = {"model": (*xs, pos), "tables": (*xs, cos, sin), "none": tuple(xs)}
    compiled = {k: torch.compile(f) for k, f in forms.items()}
    ref = forms["model"](*inputs["model"]).float()
    for k, f in compiled.items():  # the rotated forms agree with eager; `none` is the floor only
        err = ((f(*inputs[k]).float() - ref).norm() / ref.norm()).item()
        print(f"{k}: relative error against eager model form {err:.2e}")
        assert k == "none" or err < 2e-2, (k, err)
    if args.code:
        from torch._inductor.utils import run_and_get_code
        os.makedirs(args.code, exist_ok=True)
        for k, f in forms.items():
            torch._dynamo.reset()
            cf = torch.compile(f)
            _, codes = run_and_get_code(lambda: torch.autograd.grad(cf(*inputs[k]), xs, grad))
            for i, c in enumerate(codes):
                with open(os.path.join(args.code, f"{k}_{i}.py"), "w") as fh:
                    fh.write(c)
        torch._dynamo.reset()
        compiled = {k: torch.compile(f) for k, f in forms.items()}
    rows = {k: [] for k in forms}
    for r in range(args.rounds):
        for k in forms:  # interleaved rounds
            rows[k].append(kernel_us(compiled[k], inputs[k], grad, args.steps))
    print(f"\nB={b} S={s} H={args.heads} D={d}: non-attention kernels, us per call (median of {args.rounds} rounds)")
    print(f"{'form':8s} {'forward':>9s} {'backward':>9s} {'total':>9s}")
    for k, rs in rows.items():
        fw = sorted(x[0] for x in rs)[len(rs) // 2]
        bw = sorted(x[1] for x in rs)[len(rs) // 2]
        print(f"{k:8s} {fw:9.1f} {bw:9.1f} {fw + bw:9.1f}")
    for k, rs in rows.items():
        print(f"\n{k} kernels (last round):")
        for n, t in sorted(rs[-1][2].items(), key=lambda kv: -kv[1]):
            print(f"  {t:8.1f}  {n[:110]}")


if __name__ == "__main__":
    main()
