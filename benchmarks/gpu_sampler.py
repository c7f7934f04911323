"""SM clock, board power and temperature of the GPU while a benchmark times each op.

On a power-capped H100/H200 the clock an op runs at decides many ratios as much as the kernel does:
2026-11-27g (benchmarks/NOTES.md, results/h100_2026-11-27g_power_cap.txt) measured the same build's
8192x10240x8192 NT at 1.04-1.10x torch.mm in a fresh process and 0.93x late in a full suite run,
and at the 700 W cap our kernel at 0.6-3.2% lower SM clocks than cuBLAS's on bench_model's
shapes. So bench_gemm.py records, per case and op, the mean of the samples taken while that op was
being timed.

Source: `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv
-lms PERIOD` (NVIDIA's documented query interface; clocks in MHz, power in W, temperature in C),
read by a background thread. Its timestamps are local wall-clock time, matched against
time.time() windows. Without nvidia-smi (or if it fails) the sampler is off: every mean is None.
Resolution: one sample per period at best (the driver refreshes some readings more slowly), so a
window shorter than a few periods may hold no sample.
Caveat (H200, 2026-11-28, results/h200_2026-11-28_ncu_sustained.txt): at the power cap clocks.sm
reads above the clock the kernels get -- do_bench's sustained times matched Nsight Compute's
base-clock (1.35 GHz) times while nvidia-smi reported 1470-1580 MHz -- so read the column as the
driver's clock state, not as effective cycles per second.
"""
from __future__ import annotations

import contextlib
import datetime
import shutil
import subprocess
import threading
import time

FIELDS = ("sm_mhz", "watts", "temp_c")


def parse_timestamp(text: str) -> float:
    """nvidia-smi's timestamp field ('2026/12/05 05:20:01.123') -> epoch seconds; ValueError if not one."""
    return datetime.datetime.strptime(text, "%Y/%m/%d %H:%M:%S.%f").timestamp()


def parse_line(line: str):
    """One nvidia-smi CSV line (noheader, nounits) -> (epoch seconds, MHz, W, C), or None if it does
    not parse (e.g. '[N/A]' readings)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 4:
        return None
    try:
        return (parse_timestamp(parts[0]), float(parts[1]), float(parts[2]), float(parts[3]))
    except ValueError:
        return None


def window_means(samples, windows, name):
    """Mean clock / power / temperature over the samples inside every window called `name`.
    samples: [(t, MHz, W, C)]; windows: [(name, t0, t1)]. Returns {field: value or None, 'samples': n}."""
    spans = [(t0, t1) for (n, t0, t1) in windows if n == name]
    sel = [s for s in samples if any(t0 <= s[0] <= t1 for t0, t1 in spans)]
    out = {"samples": len(sel)}
    for i, f in enumerate(FIELDS, start=1):
        out[f] = sum(s[i] for s in sel) / len(sel) if sel else None
    return out


class GpuSampler:
    """Background nvidia-smi sampling; `window(name)` marks when an op was being timed.

    gpu: an nvidia-smi -i selector ('GPU-<uuid>', a PCI bus id or an index); period_ms: sampling
    period. `enabled` is False when nvidia-smi is missing or exits at once."""

    def __init__(self, gpu: str = "0", period_ms: int = 20):
        self.samples: list = []
        self.windows: list = []
        self._proc = None
        self._thread = None
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return
        cmd = [exe, "-i", gpu, "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
               "--format=csv,noheader,nounits", "-lms", str(period_ms)]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self._proc = None
            return
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    @property
    def enabled(self) -> bool:
        return self._proc is not None and (self._proc.poll() is None or bool(self.samples))

    def _read(self):
        for line in self._proc.stdout:
            s = parse_line(line)
            if s is not None:
                self.samples.append(s)

    @contextlib.contextmanager
    def window(self, name: str):
        t0 = time.time()
        try:
            yield
        finally:
            self.windows.append((name, t0, time.time()))

    def means(self, name: str):
        """window_means over the samples so far (let the sampler catch up ~2 periods first)."""
        return window_means(list(self.samples), self.windows, name)

    def close(self):
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=2)  # drain what it had written


def sampler_for_device(props, dev, settle_s: float = 0.3) -> GpuSampler:
    """GpuSampler on a CUDA device: nvidia-smi selects it by UUID (`props.uuid`, from
    torch.cuda.get_device_properties; CUDA's device index need not be nvidia-smi's), else by the
    index `dev`."""
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        s = GpuSampler(f"GPU-{uuid}")
        time.sleep(settle_s)  # a bad selector makes nvidia-smi exit at once
        if s.enabled:
            return s
        s.close()
    return GpuSampler(str(dev))
