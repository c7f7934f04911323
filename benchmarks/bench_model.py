"""Training-step throughput of a Llama-style decoder, stock vs patch_linear, both torch.compile'd.

Shapes (~1B-class layers): hidden 2048, intermediate 5632, 16 heads, 4 layers, seq 2048,
batch 4, vocab 32000, bf16 weights. A step is forward + loss + backward (no optimizer; the
optimizer is the same elementwise work for both). Stock and patched run interleaved in one
process; each round times `--steps` steps with CUDA events; tokens/s from the median round.
The output projection (lm_head) is skipped by patch_linear's defaults and runs on cuBLAS in
both models. Usage: python benchmarks/bench_model.py [--out results.json] [--layers 4] [--rounds 5]
"""
import argparse
import copy
import json
import sys
import time

import torch

import torch_tk


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=5632)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("bench_model: needs a CUDA GPU")
        return 2
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=args.hidden, intermediate_size=args.intermediate, num_hidden_layers=args.layers,
                      num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                      max_position_embeddings=args.seq)
    stock = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).train()
    patched = torch_tk.patch_linear(copy.deepcopy(stock))
    report = torch_tk.patch_report(patched)
    models = {"stock": torch.compile(stock), "tk": torch.compile(patched)}
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")
    tokens = args.batch * args.seq

    def step(m):
        loss = m(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss

    t0 = time.time()
    losses = {}
    for name, m in models.items():  # compile + warm up
        for _ in range(2):
            losses[name] = step(m).item()
            for prm in m.parameters():
                prm.grad = None
    compile_s = time.time() - t0
    torch_tk.reset_kernel_counters()
    step(models["tk"])
    counters = torch_tk.kernel_counters()
    ms = {k: [] for k in models}
    for r in range(args.rounds):
        order = list(models) if r % 2 == 0 else list(reversed(list(models)))
        for name in order:
            m = models[name]
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(args.steps):
                step(m)
            e.record()
            e.synchronize()
            ms[name].append(s.elapsed_time(e) / args.steps)
            for prm in m.parameters():
                prm.grad = None
    med = {k: sorted(v)[len(v) // 2] for k, v in ms.items()}
    tps = {k: tokens / (v * 1e-3) for k, v in med.items()}
    result = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "config": vars(args),
        "patched_layers": len(report["patched"]), "skipped": report["skipped"],
        "tk_calls_per_step": counters, "first_losses": losses, "compile_and_warmup_s": compile_s,
        "step_ms_rounds": ms, "step_ms_median": med, "tokens_per_s": tps, "ratio_tk_over_stock": tps["tk"] / tps["stock"],
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"bench_model: {torch.cuda.get_device_name()}, {args.layers} layers, hidden {args.hidden}, "
          f"intermediate {args.intermediate}, batch {args.batch} x seq {args.seq}, bf16, torch.compile")
    print(f"patched {len(report['patched'])} linears (skipped: {list(report['skipped'])}); tk calls per step {counters}")
    print(f"loss after warm-up: stock {losses['stock']:.4f}  tk {losses['tk']:.4f}")
    print(f"{'model':<8}{'step ms':>10}{'tokens/s':>12}")
    for k in models:
        print(f"{k:<8}{med[k]:>10.2f}{tps[k]:>12.0f}")
    print(f"ratio tk/stock: {result['ratio_tk_over_stock']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
