"""The main job: ``python3 -m torch_tk.demo``.

On an sm_90 GPU: checks tk.gemm on 8192^3 bf16 against a float64-accumulated reference, times it
against torch.mm (cuBLAS) interleaved in one process, then patches a small HF transformers
Llama (random init, tiny config), runs it under torch.compile and compares with stock.
Without a GPU it runs the same steps on the CPU reference path at smaller sizes and says so.
"""
import argparse
import time

import torch

import torch_tk


def _rel(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def _bench(fn, reps):
    """Median milliseconds of fn() over `reps` runs (CUDA events on GPU, wall clock on CPU)."""
    times = []
    for _ in range(reps):
        if torch.cuda.is_available():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def gemm_check(n, dev):
    torch.manual_seed(0)
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    torch_tk.reset_kernel_counters()
    out = torch_tk.gemm(a, b)
    path = max(torch_tk.kernel_counters().items(), key=lambda kv: kv[1])[0]
    # Reference: the same bf16 inputs, float64 on the GPU would be slow; fp32 without TF32 is
    # exact enough (~1e-6) next to bf16 output rounding (~2e-3).
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = torch.mm(a.float(), b.float())
    torch.backends.cuda.matmul.allow_tf32 = prev
    err = _rel(out, ref)
    flop = 2 * n ** 3
    reps = 20 if dev == "cuda" else 3
    fns = {"tk.gemm": lambda: torch_tk.gemm(a, b), "torch.mm": lambda: torch.mm(a, b)}
    for f in fns.values():  # warm-up
        f()
    ms = {k: [] for k in fns}
    for _ in range(3):  # interleave ours and the baseline
        for k, f in fns.items():
            ms[k].append(_bench(f, reps))
    ms = {k: sorted(v)[1] for k, v in ms.items()}
    tflops = {k: flop / (v * 1e-3) / 1e12 for k, v in ms.items()}
    return {"n": n, "path": path, "rel_err": err, "ms": ms, "tflops": tflops}


def llama_check(dev):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=256, intermediate_size=768, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=1024, max_position_embeddings=256)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    stock = LlamaForCausalLM(cfg).to(dev, dtype).eval()
    model = LlamaForCausalLM(cfg).to(dev, dtype).eval()
    model.load_state_dict(stock.state_dict())
    torch_tk.patch_linear(model)
    report = torch_tk.patch_report(model)
    ids = torch.randint(0, cfg.vocab_size, (2, 64), device=dev)
    compiled = torch.compile(model, fullgraph=False)
    torch_tk.reset_kernel_counters()
    with torch.no_grad():
        ref = stock(ids).logits
        out = compiled(ids).logits
    counters = torch_tk.kernel_counters()
    return {"patched": len(report["patched"]), "skipped": len(report["skipped"]),
            "rel_err": _rel(out, ref), "counters": counters}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None, help="cube size for the GEMM check (default 8192 on GPU, 512 on CPU)")
    args = p.parse_args(argv)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cpu":
        print("torch_tk demo: no CUDA GPU here -- running the CPU reference path (timings below are CPU, not a GPU kernel).")
    else:
        print(f"torch_tk demo on {torch.cuda.get_device_name()} (hopper kernel available: "
              f"{torch_tk.hopper_available()})")
    n = args.n or (8192 if dev == "cuda" else 512)
    g = gemm_check(n, dev)
    print(f"gemm {n}^3 bf16: path={g['path']} rel_err={g['rel_err']:.2e}")
    l = llama_check(dev)
    print(f"llama (tiny, torch.compile): patched {l['patched']} nn.Linear, skipped {l['skipped']}, "
          f"logits rel_err vs stock={l['rel_err']:.2e}, calls per path {l['counters']}")
    print()
    print(f"{'op':<10}{'ms':>10}{'TFLOP/s':>10}")
    for k in g["ms"]:
        print(f"{k:<10}{g['ms'][k]:>10.3f}{g['tflops'][k]:>10.1f}")
    ratio = g["tflops"]["tk.gemm"] / g["tflops"]["torch.mm"]
    print(f"ratio tk/torch.mm: {ratio:.3f}")
    ok = g["rel_err"] < 1e-2 and l["rel_err"] < 3e-2
    print("demo:", "OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
