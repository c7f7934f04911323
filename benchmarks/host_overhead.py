"""Host (CPU) time per call of the tk ops next to torch's, and which layer of the call it is spent in.

Why: with no L2 flush between calls (bench_gemm --l2 warm, a decode loop in eager mode) a small
GEMM's time per call is the host's enqueue time, not the GPU's, whenever the host is slower
(H200, 2026-11-28: 64x4096x4096 back to back 28.1 us for ours against 20.6 for torch.mm, while
the same calls after do_bench's memset take 18.3 us). This script times only the enqueue: `--calls`
calls in a row without synchronising (the GPU queue absorbs them), wall time / calls, median of
`--rounds` rounds, each variant in turn within a round. Variants, outermost layer first:

  torch        torch.mm(a, b) (F.linear(x, w) for --op linear; a stock nn.Linear for --op module)
  torch_no_grad  the same under torch.no_grad()
  tk           torch_tk.gemm / torch_tk.linear / a patched nn.Linear (torch_tk.patch_linear)
  tk_no_grad   the same under torch.no_grad()
  tk_below     torch.ops.tk.*.default under torch._C._AutoDispatchBelowAutograd(): the dispatcher
               and the C++ op only, without the Python autograd kernel that
               torch.library.register_autograd installs (since 2026-11-28b the tk entry points
               take this route themselves when no gradient is needed: torch_tk.ops._call_op)

--op module's weights require grad (a training model's), so its tk / torch rows take the autograd
path; the operands of gemm / linear do not.

    python benchmarks/host_overhead.py [--shapes 64x4096x4096,1x4096x4096] [--op gemm|linear|module]

Runs on the CPU too (float32 reference path; only the layers above the kernel are comparable).
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import torch_tk


def variants(op, a, b):
    """{name: zero-argument callable} for one op on operands a (M x K) and b (K x N for gemm, N x K otherwise)."""
    if op == "gemm":
        base, ours, raw = (lambda: torch.mm(a, b)), (lambda: torch_tk.gemm(a, b)), (lambda: torch.ops.tk.gemm.default(a, b))
    elif op == "linear":
        base, ours, raw = (lambda: F.linear(a, b)), (lambda: torch_tk.linear(a, b)), (lambda: torch.ops.tk.linear.default(a, b))
    elif op == "module":
        stock = torch.nn.Linear(b.shape[1], b.shape[0], bias=False, device=b.device, dtype=b.dtype)
        patched = torch.nn.Linear(b.shape[1], b.shape[0], bias=False, device=b.device, dtype=b.dtype)
        with torch.no_grad():
            stock.weight.copy_(b)
            patched.weight.copy_(b)
        torch_tk.patch_linear(patched)
        base, ours = (lambda: stock(a)), (lambda: patched(a))
        raw = lambda: torch.ops.tk.linear.default(a, patched.weight, None)  # noqa: E731
    else:
        raise ValueError(f"op: gemm, linear or module, got {op!r}")

    def no_grad(f):
        def run():
            with torch.no_grad():
                return f()
        return run

    def below():
        with torch._C._AutoDispatchBelowAutograd():
            return raw()

    return {"torch": base, "torch_no_grad": no_grad(base), "tk": ours, "tk_no_grad": no_grad(ours), "tk_below": below}


def enqueue_us(fn, calls, sync):
    """Host microseconds per call over `calls` calls in a row, GPU queue drained before and not after."""
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="64x4096x4096,128x4096x4096,1x4096x4096,4096x4096x4096")
    p.add_argument("--op", default="linear", choices=("gemm", "linear", "module"))
    p.add_argument("--calls", type=int, default=100, help="calls per timing (fewer than the GPU queue holds)")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    cuda = torch.cuda.is_available()
    dev, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    gen = torch.Generator(device=dev).manual_seed(0)
    print(f"# {torch.cuda.get_device_name() if cuda else 'cpu'}, torch {torch.__version__}, op {args.op}, "
          f"{args.calls} calls per timing, median of {args.rounds} rounds; host us per call")
    rows = []
    for spec in args.shapes.split(","):
        M, N, K = (int(x) for x in spec.split("x"))
        a = torch.randn(M, K, device=dev, generator=gen).to(dtype)
        b = torch.randn(N, K, device=dev, generator=gen).to(dtype)  # nn.Linear's (N, K) weight
        fns = variants(args.op, a, b.t() if args.op == "gemm" else b)
        for f in fns.values():  # warm-up: plans, descriptors, lazy inits
            f()
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, f in fns.items():
                times[k].append(enqueue_us(f, args.calls, sync))
        sync()
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((spec, med))
        print(f"{spec:<18}" + "".join(f"{k} {v:6.1f}  " for k, v in med.items()))
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
