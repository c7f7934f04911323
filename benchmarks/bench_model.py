"""Training-step throughput of a Llama-style decoder, stock vs patch_linear, both torch.compile'd.

Shapes (~1B-class layers): hidden 2048, intermediate 5632, 16 heads, 4 layers, seq 2048,
batch 4, vocab 32000, bf16 weights. A step is forward + loss + backward (no optimizer; the
optimizer is the same elementwise work for both). Stock and patched run interleaved in one
process; each round times `--steps` steps with CUDA events; tokens/s from the median round.
While each model's rounds run, benchmarks/gpu_sampler.py samples the SM clock, board power and
temperature (nvidia-smi; None without it): on a power-capped GPU the clock decides as much as the
kernels (benchmarks/NOTES.md, 2026-11-27g), and power x step time gives the energy per step (J).
The defaults (8 rounds of 5 steps per model, ~1.2 s of steps each) measure the sustained state of a
training run: on the H200 both models then run at the 700-W cap's power-cap clock limit in every
sample (clock_reasons.py), while short runs (--rounds 3 --steps 3) read boost clocks and ratios
1-3% higher for the patched model (2026-12-05c: 0.993-1.007 short, 0.978-0.984 sustained).
The output projection (lm_head) is skipped by patch_linear's defaults and runs on cuBLAS in
both models (--lm-head patches it too: H100 2026-12-07d 1.027 / 1.031 / 1.025 against the default's
1.031 / 1.021 / 1.029 in alternating processes, even; its GEMMs alone, warm L2, ours / cuBLAS 1.001
forward, 0.978 dX, 0.952 dW: benchmarks/results/h100_2026-12-07d_lmhead.txt).
The patched model is patch_linear(model, fuse_mlp=True, fuse_rope=True): its SwiGLU MLPs run as tk.swiglu_mlp (gate / up
and the activation as one tk.linear_swiglu; the backward's activation gradient in the down projection's
dX GEMM): H100 2026-12-06e 1.000 / 1.001 / 1.005, against 0.991 / 0.983 with --no-fuse-mlp-backward
(gate / up only; 0.991 / 0.990 on 2026-12-06d against 0.983 / 0.985 with --no-fuse-mlp, the linear layers only).
Since 2026-12-06g also fuse_rope=True (the attention's q / k projections as tk.linear_rope, the rotary
embedding in the GEMM's epilogue): H100 1.018 / 1.009 / 1.022 / 1.020 against 1.011 / 0.995 / 0.998 /
1.001 with --no-fuse-rope (alternating processes, benchmarks/results/h100_2026-12-06g_rope.txt).
Since 2026-12-06h the MLP's gate / up and the attention's q / k / v backwards run as two GEMMs each
(tk.linear_backward_cat; --no-cat-backward / --no-qkv-cat for the A/B): H100 1.016 / 1.013 against
1.021 / 1.019 without, even within the spread (benchmarks/results/h100_2026-12-06h_cat_backward.txt).
Since 2026-12-06i the q / k / v backward reads the three gradients in place (tk.linear_backward_parts;
--no-qkv-parts: 2026-12-06h's Inductor cat): H100 1.021 / 1.031 / 1.028 / 1.033 against 1.008 / 1.031 /
1.022 (alternating processes, benchmarks/results/h100_2026-12-06i_parts.txt); 2026-12-06j 1.033 / 1.032 /
1.032 (benchmarks/results/h100_2026-12-06j_checks.txt): median 1.032 over the seven sustained runs.
Since 2026-12-07d fuse_rope's backward rotates dL/dq, dL/dk back without a cat (torch_tk.rope.rotate_flip;
--rope-back cat for the A/B): H100 median 1.035 over ten runs (1.028-1.041) against 1.025 over nine with
the cat (1.021-1.032), one kernel of 368.7 us per step where the cat form took three of 695.4
(benchmarks/results/h100_2026-12-07d_rope_back.txt); on a fresh H100 (2026-12-07e) ten more runs had median
1.033 (1.020-1.044) against 1.016 with the cat, six on a third median 1.034 (0.997-1.044)
(benchmarks/results/h100_2026-12-07e_model.txt); on a fourth (2026-12-07f) median 1.0395 over ten (1.025-1.044)
against 1.024 over seven with the cat (benchmarks/results/h100_2026-12-07f_checks.txt); on a fifth
(2026-12-07g) median 1.039 over ten (1.019-1.040) against 1.026 over seven with the cat, on a sixth 1.0365
over four (1.022-1.047) against 1.023 over three (benchmarks/results/h100_2026-12-07g_checks.txt).
On an H200 (2026-12-07h) the same default falls short: median 1.027 over 17 runs (1.015-1.038, 5 of 17 >= 1.03)
against 1.015 / 1.020 / 1.025 with the cat; the patched step ran ~4% of clock below stock's at the same power
(benchmarks/results/h200_2026-12-07h_checks.txt).
Usage: python benchmarks/bench_model.py [--out results.json] [--layers 4] [--rounds 8] [--steps 5]
"""
import argparse
import copy
import json
import math
import os
import sys
import time

import torch

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_sampler, also when loaded by path
from gpu_sampler import sampler_for_device  # noqa: E402


def add_model_args(p):
    """The model's shape and the rounds' arguments (shared with benchmarks/boundary_probe.py)."""
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=5632)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--fuse-mlp", action=argparse.BooleanOptionalAction, default=True,
                   help="patch_linear(fuse_mlp=True) (default): each SwiGLU MLP's gate / up GEMMs and activation as "
                        "one tk.linear_swiglu (torch_tk/mlp.py); --no-fuse-mlp: the linear layers only")
    p.add_argument("--fuse-mlp-backward", action=argparse.BooleanOptionalAction, default=True,
                   help="with --fuse-mlp (default): the whole MLP as tk.swiglu_mlp, its activation gradient in the "
                        "down projection's dX GEMM; --no-fuse-mlp-backward: gate / up fused only (an A/B)")
    p.add_argument("--cat-backward", action=argparse.BooleanOptionalAction, default=True,
                   help="with --fuse-mlp-backward (default): the gate / up backward as tk.swiglu_down_backward_cat + "
                        "tk.linear_backward_cat (two GEMMs); --no-cat-backward: two tk.gemm_pair calls and a sum (an A/B)")
    p.add_argument("--qkv-cat", action=argparse.BooleanOptionalAction, default=True,
                   help="with --fuse-rope (default): q / k / v as tk.linear_qkv_rope, its backward one input-gradient "
                        "and one weight-gradient GEMM (tk.linear_backward_cat); --no-qkv-cat: three backwards (an A/B)")
    p.add_argument("--qkv-parts", action=argparse.BooleanOptionalAction, default=True,
                   help="with --qkv-cat (default): its backward reads the q / k / v gradients in place "
                        "(tk.linear_backward_parts); --no-qkv-parts: side by side by an Inductor cat first (an A/B)")
    p.add_argument("--fuse-rope", action=argparse.BooleanOptionalAction, default=True,
                   help="patch_linear(fuse_rope=True) (default): q / k projections as tk.linear_rope, the rotary "
                        "embedding in the GEMM's epilogue (torch_tk/attention.py); --no-fuse-rope: without (an A/B)")
    p.add_argument("--rope-back", choices=("cat", "flip"), default=None,
                   help="the form in which fuse_rope's backward rotates dL/dq, dL/dk back (torch_tk.rope.BACKWARD_ROTATION; "
                        "default: the package's, flip); an A/B needs an Inductor cache directory per form "
                        "(TORCHINDUCTOR_CACHE_DIR: the cache key does not see the autograd code)")
    p.add_argument("--lm-head", action=argparse.BooleanOptionalAction, default=False,
                   help="also patch the output projection (patch_linear(skip_lm_head=False)): its forward, dX and dW "
                        "(8192x32000x2048 NT, 8192x2048x32000 NN, 32000x2048x8192 TN) on tk; default: left on cuBLAS")


def stock_and_patched(args):
    """(config, stock, patched, patch report): the stock Llama decoder of `args`' shapes (bf16 on the
    GPU, train mode, seed 0) and a patch_linear'd copy of it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=args.hidden, intermediate_size=args.intermediate, num_hidden_layers=args.layers,
                      num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                      max_position_embeddings=args.seq)
    stock = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).train()
    patched = torch_tk.patch_linear(copy.deepcopy(stock), fuse_mlp=getattr(args, "fuse_mlp", True),
                                    fuse_rope=getattr(args, "fuse_rope", True),
                                    skip_lm_head=not getattr(args, "lm_head", False))
    report = torch_tk.patch_report(patched)
    from torch_tk import swiglu
    swiglu.CAT_BACKWARD = getattr(args, "cat_backward", True)
    from torch_tk import attention
    attention.QKV_CAT_BACKWARD = getattr(args, "qkv_cat", True)
    from torch_tk import rope
    rope.QKV_PARTS = getattr(args, "qkv_parts", True)
    if getattr(args, "rope_back", None):
        rope.BACKWARD_ROTATION = args.rope_back
    if not getattr(args, "fuse_mlp_backward", True):  # the A/B: whole MLPs back to gate / up fused only
        from torch_tk import mlp
        for m in patched.modules():
            if type(m).forward is mlp._whole_forward:
                m.__class__ = mlp.fused_class(mlp._ORIG[type(m)], False)
        report["fused_mlp_backward"] = []
    return cfg, stock, patched, report


def make_step(ids):
    """One training step of a model on token ids `ids` (labels = ids): forward, loss, backward."""
    def step(m):
        loss = m(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss
    return step


def _drop_grads(m):
    for prm in m.parameters():
        prm.grad = None


def warm_up(models, step, steps=2):
    """Compiles and warms up each model ({name: model}) by `steps` steps; {name: last loss}."""
    losses = {}
    for name, m in models.items():
        for _ in range(steps):
            losses[name] = step(m).item()
            _drop_grads(m)
    return losses


def time_rounds(models, step, rounds, steps, sampler):
    """{name: [ms per step of each round]}: `rounds` rounds of `steps` steps per model, timed by CUDA
    events, the models' order rotated by one each round (each first equally often; with two models
    they alternate); each round inside `sampler.window(name)`."""
    names = list(models)
    ms = {k: [] for k in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            m = models[name]
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with sampler.window(name):
                s.record()
                for _ in range(steps):
                    step(m)
                e.record()
                e.synchronize()
            ms[name].append(s.elapsed_time(e) / steps)
            _drop_grads(m)
    return ms


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    add_model_args(p)
    p.add_argument("--profile", action="store_true",
                   help="after timing, profile one step of each model and print GPU time per kernel class")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("bench_model: needs a CUDA GPU")
        return 2
    cfg, stock, patched, report = stock_and_patched(args)
    models = {"stock": torch.compile(stock), "tk": torch.compile(patched)}
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")
    tokens = args.batch * args.seq
    step = make_step(ids)
    t0 = time.time()
    losses = warm_up(models, step)
    compile_s = time.time() - t0
    torch_tk.reset_kernel_counters()
    step(models["tk"])
    counters = torch_tk.kernel_counters()
    sampler = sampler_for_device(torch.cuda.get_device_properties(0), torch.cuda.current_device())
    ms = time_rounds(models, step, args.rounds, args.steps, sampler)
    med = {k: sorted(v)[len(v) // 2] for k, v in ms.items()}
    tps = {k: tokens / (v * 1e-3) for k, v in med.items()}
    time.sleep(0.1)  # the last samples
    sampler.close()
    clocks = {k: sampler.means(k) for k in models}
    for k, c in clocks.items():  # mean power x median step time
        c["joules_per_step"] = c["watts"] * med[k] * 1e-3 if c["watts"] is not None else None
    # each timed round's wall-clock span per model (benchmarks/clock_reasons.py matches other logs to it)
    windows = {k: [(a, b) for n, a, b in sampler.windows if n == k] for k in models}
    result = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "config": vars(args),
        "patched_layers": len(report["patched"]), "skipped": report["skipped"],
        "tk_calls_per_step": counters, "first_losses": losses, "compile_and_warmup_s": compile_s,
        "step_ms_rounds": ms, "round_windows_s": windows, "step_ms_median": med, "tokens_per_s": tps, "ratio_tk_over_stock": tps["tk"] / tps["stock"],
        "gpu_sampler": "nvidia-smi -lms 20 (benchmarks/gpu_sampler.py)" if sampler.enabled else "off",
        "clocks": clocks,
    }
    if args.profile:  # two profiled passes per model, alternating, 2 steps each; microseconds per step
        psampler = sampler_for_device(torch.cuda.get_device_properties(0), torch.cuda.current_device())
        passes = []
        for k in ("stock", "tk", "tk", "stock"):
            with psampler.window(k):
                passes.append(profile_step(step, models[k], 2) + (k,))
        time.sleep(0.1)
        psampler.close()
        result["profile_us"] = {k: merge_profiles([p[:2] for p in passes if p[2] == k]) for k in models}
        result["profile_clocks"] = {k: psampler.means(k) for k in models}  # SM clock while each was profiled
        result["ceiling"] = ceiling(result["profile_us"])
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"bench_model: {torch.cuda.get_device_name()}, {args.layers} layers, hidden {args.hidden}, "
          f"intermediate {args.intermediate}, batch {args.batch} x seq {args.seq}, bf16, torch.compile")
    print(f"patched {len(report['patched'])} linears (skipped: {list(report['skipped'])}); tk calls per step {counters}")
    print(f"loss after warm-up: stock {losses['stock']:.4f}  tk {losses['tk']:.4f}")
    print(f"{'model':<8}{'step ms':>10}{'tokens/s':>12}{'SM MHz':>9}{'W':>6}{'J/step':>8}{'samples':>9}")
    for k in models:
        c = clocks[k]
        f = [f"{c[x]:{w}.{d}f}" if c[x] is not None else f"{'-':>{w}}" for x, w, d in
             (("sm_mhz", 9, 0), ("watts", 6, 0), ("joules_per_step", 8, 2))]
        print(f"{k:<8}{med[k]:>10.2f}{tps[k]:>12.0f}{''.join(f)}{c['samples']:>9}")
    print(f"ratio tk/stock: {result['ratio_tk_over_stock']:.3f}")
    if args.profile:
        print_profile(result["profile_us"], result["profile_clocks"])
        c = result["ceiling"]
        print(f"GEMMs ours replace: torch / ours {c['gemm_ratio']:.3f} in the model; {TARGET} end to end (kernel time) "
              f"needs {c['gemm_ratio_needed']:.3f} with the rest as measured, {c['gemm_ratio_needed_even_rest']:.3f} "
              f"with the rest as stock's (rest tk / stock {c['rest_ratio']:.3f})")
        f = c["fusable_us"]
        print("pointwise an epilogue could absorb (patched step, us): " + ", ".join(f"{k} {v:.0f}" for k, v in f.items())
              + f"; all of it gone at no cost: {c['ratio_if_fused']:.3f} (kernel time)")
    return 0


# Kernel classes by name (substring, first match wins): ours, the vendor GEMMs, attention, inductor.
CLASSES = (("tk gemm", ("gemm_kernel", "skinny_kernel", "splitk_reduce", "pad_lines")),
           ("attention", ("flash", "fmha", "attention", "sdpa")),
           ("vendor gemm", ("nvjet", "gemm", "xmma", "cutlass", "sm90_")),
           ("triton (inductor)", ("triton_",)))


GEMM_OPS = ("aten::mm", "aten::addmm", "tk::gemm", "tk::addmm", "tk::linear")

# Pointwise work a GEMM epilogue could absorb (benchmarks/NOTES.md 2026-12-06c), by Inductor's kernel
# names (which list the fused ops): the SwiGLU forward / backward ("silu"; "sigmoid" where the backward is
# torch_tk/swiglu.py's swiglu_grads, in a fuse_mlp model) and RoPE ("cos" and "sin").
FUSABLE = (("swiglu", lambda low: "triton_" in low and ("silu" in low or "sigmoid" in low)),
           ("rope", lambda low: "triton_" in low and "cos" in low and "sin" in low))


def gemm_mnk(op, shapes):
    """(M, N, K) of a GEMM op from its recorded input shapes (linear: input [..., K], weight [N, K])."""
    if op == "tk::linear":
        x, w = shapes[0], shapes[1]
        return (math.prod(x[:-1]), w[0], w[1])
    a, b = (shapes[1], shapes[2]) if op.endswith("addmm") else (shapes[0], shapes[1])
    return (a[0], b[1], a[1])


def profile_step(step, m, steps):
    """One profiled run of `steps` training steps: (kernel microseconds by kernel name -> (count,
    total), GEMM op microseconds by (M, N, K) -> (count, total)), both per step."""
    for _ in range(2):
        step(m)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                            torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            step(m)
        torch.cuda.synchronize()
    per_kernel = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = e.name.split("(")[0][:100]
        n, tot = per_kernel.get(name, (0, 0.0))
        per_kernel[name] = (n + 1 / steps, tot + (e.time_range.end - e.time_range.start) / steps)
    per_gemm = {}
    for e in prof.events():  # outermost GEMM ops only (an op calling another is counted once)
        if e.device_type != torch.autograd.DeviceType.CPU or e.name not in GEMM_OPS or not e.input_shapes:
            continue
        parent = e.cpu_parent
        while parent is not None and parent.name not in GEMM_OPS:
            parent = parent.cpu_parent
        if parent is not None:
            continue
        mnk = gemm_mnk(e.name, e.input_shapes)
        t = getattr(e, "device_time_total", None)
        t = e.cuda_time_total if t is None else t
        n, tot = per_gemm.get(mnk, (0, 0.0))
        per_gemm[mnk] = (n + 1 / steps, tot + t / steps)
    return per_kernel, per_gemm


def merge_profiles(runs):
    """Mean over profiled runs: kernel classes, busy time, the 80 longest kernels (JSON), GEMMs by shape."""
    per_kernel, per_gemm = {}, {}
    for pk, pg in runs:
        for d, src in ((per_kernel, pk), (per_gemm, pg)):
            for k, (n, t) in src.items():
                n0, t0 = d.get(k, (0, 0.0))
                d[k] = (n0 + n / len(runs), t0 + t / len(runs))
    classes = {c: 0.0 for c, _ in CLASSES}
    classes["other"] = 0.0
    for name, (_, t) in per_kernel.items():
        if name.startswith("## "):  # a user annotation's span (Inductor's "## Call CompiledFxGraph"), not a kernel
            continue
        low = name.lower()
        cls = next((c for c, keys in CLASSES if any(k in low for k in keys)), "other")
        classes[cls] += t
    fusable = {f: sum(t for name, (_, t) in per_kernel.items() if match(name.lower())) for f, match in FUSABLE}
    top = sorted(per_kernel.items(), key=lambda kv: -kv[1][1])[:80]  # printed: the first 10
    gemms = [["x".join(map(str, k)), n, t] for k, (n, t) in sorted(per_gemm.items())]
    return {"busy": sum(classes.values()), "classes": classes, "top": [[n, c, t] for n, (c, t) in top],
            "gemms": gemms, "fusable": fusable}


TARGET = 1.03  # the end-to-end target (tokens/s, patched over stock)


def ceiling(prof, target=TARGET):
    """What the GEMMs we replace must reach for `target`, from the profiled kernel time per step (the
    step runs on one stream, so kernel time adds up): ours ("tk gemm") against the vendor GEMMs they
    replace (stock's vendor GEMMs minus those left to cuBLAS in the patched model, i.e. lm_head).
    gemm_ratio: stock's time / ours on them now; gemm_ratio_needed: the ratio at which the patched
    step's kernel time is stock's / target, the rest as profiled; ..._even_rest: the same with the
    patched model's other kernels as fast as stock's; rest_ratio: those other kernels, tk / stock;
    fusable_us: the patched step's pointwise kernels an epilogue could absorb (FUSABLE), and
    ratio_if_fused: stock / patched kernel time with all of them gone at no cost (an upper bound)."""
    s, t = prof["stock"], prof["tk"]
    ours = t["classes"]["tk gemm"]
    replaced = s["classes"]["vendor gemm"] - t["classes"]["vendor gemm"]
    rest_tk, rest_stock = t["busy"] - ours, s["busy"] - replaced
    allowed = s["busy"] / target
    need = replaced / (allowed - rest_tk) if allowed > rest_tk else float("inf")
    need_even = replaced / (allowed - rest_stock) if allowed > rest_stock else float("inf")
    fusable = t.get("fusable", {})
    return {"gemm_ratio": replaced / ours if ours else float("nan"), "gemm_ratio_needed": need,
            "gemm_ratio_needed_even_rest": need_even, "rest_ratio": rest_tk / rest_stock if rest_stock else float("nan"),
            "fusable_us": fusable, "ratio_if_fused": s["busy"] / (t["busy"] - sum(fusable.values()))}


def print_profile(prof, clocks=None):
    """The profile's tables; with `clocks` (per model, sampler means: sm_mhz) each class's tk / stock
    time and the same at equal clocks (time x MHz: what a lower clock alone does not explain)."""
    print("GPU time of one step (us), by kernel class:")
    names = list(prof)
    mhz = {n: (clocks or {}).get(n, {}).get("sm_mhz") for n in names}
    both = set(names) == {"stock", "tk"} and all(mhz.values())
    print(f"{'class':<20}" + "".join(f"{n:>12}" for n in names) + ("   tk/stock  at equal clock" if both else ""))
    for c in list(prof[names[0]]["classes"]) + ["busy"]:
        us = {n: prof[n]["busy"] if c == "busy" else prof[n]["classes"][c] for n in names}
        line = f"{c:<20}" + "".join(f"{us[n]:>12.0f}" for n in names)
        if both and us["stock"] > 0 and us["tk"] > 0:
            r = us["tk"] / us["stock"]
            line += f"   {r:>8.3f}  {r * mhz['tk'] / mhz['stock']:>13.3f}"
        print(line)
    if any(mhz.values()):
        print("SM MHz while profiled: " + ", ".join(f"{n} {mhz[n]:.0f}" for n in names if mhz[n]))
    print("GEMM ops by shape MxNxK (all layouts): calls, GPU us per step")
    shapes = {}
    for n in names:
        for mnk, cnt, t in prof[n]["gemms"]:
            shapes.setdefault(mnk, {})[n] = (cnt, t)
    for mnk, per in shapes.items():
        cols = "".join(f"  {n} {per[n][0]:>4.0f} x {per[n][1]:>8.0f}" if n in per else f"  {n} {'-':>15}" for n in names)
        ratio = per["stock"][1] / per["tk"][1] if set(per) == {"stock", "tk"} and per["tk"][1] else float("nan")
        print(f"  {mnk:<18}{cols}  stock/tk {ratio:.3f}")
    for n in names:
        print(f"longest kernels ({n}): count, total us")
        for name, cnt, t in prof[n]["top"][:10]:
            print(f"  {cnt:>4.0f} {t:>9.0f}  {name}")


if __name__ == "__main__":
    sys.exit(main())
