"""Energy per GEMM call, ours next to torch.mm: board power and SM clock while each op runs back to back.

Why: bench_model's patched step draws more power than the stock one at about the same clock
(H200 2026-12-02e / f, benchmarks/results/*_bench_model.json: 454 vs 431 W and 404 vs 380 W, 13.5
vs 12.7 J and 12.4 vs 11.5 J per step), and where the clock is limited by power, an op that needs
more energy per call runs at a lower clock. This measures each GEMM alone, without other kernels
between calls.

Method: per case, the ops alternate `--alternations` times; each turn runs the op back to back
(no flush, as inside a model) for `--settle` seconds unrecorded (nvidia-smi's power reading lags)
and then `--seconds` recorded, synchronising every few calls so the queue stays short.
benchmarks/gpu_sampler.py samples power.draw (W) and clocks.sm (MHz) through nvidia-smi; energy
per call = mean W x recorded seconds / calls (mJ). Where NVIDIA's NVML bindings are installed
(cuda.bindings.nvml, from the cuda-bindings package torch's CUDA wheels depend on), the board's
energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ; refreshed every 20-100 ms) is read after
every chunk of calls as well, and the slope of a least-squares line through those (time, mJ)
readings gives the turn's mean power without the counter's refresh steps: the "nvml" column.
Operands: random bf16 (benchmarks/operands.py).

    python benchmarks/energy_probe.py [--shapes 8192x5632x2048:NT,...] [--seconds 2] [--settle 1]
        [--alternations 3]

Prints per case and op: ms per call, mean W, mean MHz, mJ per call (medians over the turns) and
ours / torch ratios. Env knobs of torch_tk (TK_HOPPER_*) apply to ours as usual.
"""
import argparse
import os
import statistics
import sys
import time

import torch

import torch_tk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from gpu_sampler import sampler_for_device  # noqa: E402
from operands import layout_operands  # noqa: E402

DEFAULT_SHAPES = "8192x5632x2048:NT,8192x2048x2048:NT,8192x2048x5632:NT,2048x5632x8192:TN"


def parse_case(text):
    """'MxNxK:LAY' -> ((M, N, K), LAY); LAY defaults to NT."""
    dims, _, lay = text.partition(":")
    M, N, K = (int(x) for x in dims.lower().split("x"))
    return (M, N, K), (lay or "NT").upper()


class EnergyCounter:
    """The GPU's NVML energy counter (mJ since driver load) through cuda.bindings.nvml; `read()` is
    None when the bindings or the counter are unavailable."""

    def __init__(self, props, dev):
        self._nvml, self._handle = None, None
        try:
            from cuda.bindings import nvml
            nvml.init_v2()
            uuid = getattr(props, "uuid", None)
            self._handle = (nvml.device_get_handle_by_uuid(f"GPU-{uuid}") if uuid is not None
                            else nvml.device_get_handle_by_index_v2(dev))
            nvml.device_get_total_energy_consumption(self._handle)
            self._nvml = nvml
        except Exception:  # not installed, no driver library, or a GPU without the counter
            self._nvml = None

    def read(self):
        if self._nvml is None:
            return None
        return float(self._nvml.device_get_total_energy_consumption(self._handle))


def slope(points):
    """Least-squares slope of [(x, y), ...]; None for fewer than two distinct x."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def turn_stats(means, calls, secs):
    """(ms per call, W, MHz, mJ per call) of one recorded turn from gpu_sampler means; None without samples."""
    if means["watts"] is None or calls <= 0:
        return None
    per_call_s = secs / calls
    return per_call_s * 1e3, means["watts"], means["sm_mhz"], means["watts"] * per_call_s * 1e3


def run_turn(fn, settle_s, seconds, chunk, counter):
    """Runs fn back to back for settle_s, then for seconds; returns (calls, t0, t1, readings) of the
    second part, readings: [(s since t0, counter mJ)] after every chunk (empty without a counter)."""
    t_end = time.time() + settle_s
    while time.time() < t_end:
        for _ in range(chunk):
            fn()
        torch.cuda.synchronize()
    calls, t0, readings = 0, time.time(), []
    while time.time() - t0 < seconds:
        for _ in range(chunk):
            fn()
        torch.cuda.synchronize()
        calls += chunk
        e = counter.read()
        if e is not None:
            readings.append((time.time() - t0, e))
    return calls, t0, time.time(), readings


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help="comma list of MxNxK:LAY (default: bench_model's GEMMs)")
    p.add_argument("--seconds", type=float, default=2.0, help="recorded seconds per turn")
    p.add_argument("--settle", type=float, default=1.0, help="unrecorded seconds before each turn's record")
    p.add_argument("--alternations", type=int, default=3, help="turns per op and case (ops alternate)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("energy_probe: needs a CUDA GPU")
        return 2
    dev = torch.cuda.current_device()
    sampler = sampler_for_device(torch.cuda.get_device_properties(dev), dev)
    if not sampler.enabled:
        print("energy_probe: nvidia-smi sampling unavailable")
        return 2
    print(f"# {torch.cuda.get_device_name(dev)}; {args.alternations} turns per op, {args.settle:g} s settle + "
          f"{args.seconds:g} s recorded each, back to back, no flush")
    counter = EnergyCounter(torch.cuda.get_device_properties(dev), dev)
    print(f"# energy counter (NVML): {'yes' if counter.read() is not None else 'unavailable'}")
    print(f"{'case':22s} {'op':6s} {'ms/call':>8s} {'W':>6s} {'MHz':>6s} {'mJ/call':>8s} {'nvml W':>7s} {'nvml mJ':>8s}")
    for text in args.shapes.split(","):
        (M, N, K), lay = parse_case(text)
        a, b = layout_operands(M, N, K, lay, generator=torch.Generator(device="cuda").manual_seed(0))
        ops = {"torch": lambda: torch.mm(a, b), "ours": lambda: torch_tk.gemm(a, b)}
        per_call = {}
        for name, fn in ops.items():  # warm-up, and the chunk size: ~20 ms of calls between syncs
            fn()
            torch.cuda.synchronize()
            t0 = time.time()
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            per_call[name] = (time.time() - t0) / 5
        stats = {name: [] for name in ops}
        for r in range(args.alternations):
            order = list(ops) if r % 2 == 0 else list(reversed(list(ops)))
            for name in order:
                chunk = max(1, int(0.02 / max(per_call[name], 1e-6)))
                wname = f"{text}/{name}/{r}"
                calls, t0, t1, readings = run_turn(ops[name], args.settle, args.seconds, chunk, counter)
                sampler.windows.append((wname, t0, t1))
                stats[name].append((wname, calls, t1 - t0, slope(readings)))
        time.sleep(0.2)  # the sampler's last lines
        rows = {}
        for name, turns in stats.items():
            got = [t for t in (turn_stats(sampler.means(w), c, secs) for w, c, secs, _ in turns) if t is not None]
            # NVML: mean power (W = mJ/ms) from the counter's slope, and mJ per call at the turn's rate
            nv = [(p / 1e3, p * secs / c) for _, c, secs, p in turns if p is not None]
            if not got:
                print(f"{text:22s} {name:6s} no samples")
                continue
            rows[name] = tuple(statistics.median(col) for col in zip(*got)) + (
                tuple(statistics.median(col) for col in zip(*nv)) if nv else (None, None))
            r = rows[name]
            nvs = f"{r[4]:7.1f} {r[5]:8.2f}" if r[4] is not None else f"{'-':>7s} {'-':>8s}"
            print(f"{text:22s} {name:6s} {r[0]:8.4f} {r[1]:6.1f} {r[2]:6.0f} {r[3]:8.2f} {nvs}")
        if len(rows) == 2:
            o, t = rows["ours"], rows["torch"]
            nvr = f", nvml power {o[4] / t[4]:.3f}, nvml energy {o[5] / t[5]:.3f}" if o[4] and t[4] else ""
            print(f"{'':22s} ours/torch: time {o[0] / t[0]:.3f}, power {o[1] / t[1]:.3f}, clock {o[2] / t[2]:.3f}, "
                  f"energy {o[3] / t[3]:.3f}{nvr}")
    sampler.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
