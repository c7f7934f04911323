"""benchmarks/gpu_sampler.py on the CPU: nvidia-smi's CSV lines, the per-window means, and the
sampler's behaviour without nvidia-smi (off, every mean None) -- no GPU needed."""
import datetime

from conftest import load_script


def _mod():
    return load_script("benchmarks/gpu_sampler.py", "gpu_sampler_under_test")


def _ts(t):
    return datetime.datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def test_parse_line_reads_the_four_fields():
    m = _mod()
    t = 1_790_000_000.25
    s = m.parse_line(f"{_ts(t)}, 1755, 612.37, 58\n")
    assert s is not None and abs(s[0] - t) < 1e-3 and s[1:] == (1755.0, 612.37, 58.0)


def test_parse_line_rejects_na_and_headers():
    m = _mod()
    assert m.parse_line("2026/11/27 23:12:01.123, [N/A], 600.0, 50") is None
    assert m.parse_line("timestamp, clocks.current.sm [MHz], power.draw [W], temperature.gpu") is None
    assert m.parse_line("") is None


def test_window_means_only_counts_samples_inside_that_ops_windows():
    m = _mod()
    samples = [(0.5, 1000.0, 100.0, 40.0), (1.5, 1500.0, 500.0, 50.0), (2.5, 1700.0, 690.0, 60.0),
               (3.5, 1300.0, 700.0, 70.0)]
    windows = [("0:ours", 1.0, 2.0), ("0:torch", 2.0, 3.0), ("0:ours", 3.0, 4.0)]
    ours = m.window_means(samples, windows, "0:ours")
    assert ours["samples"] == 2 and ours["sm_mhz"] == 1400.0 and ours["watts"] == 600.0 and ours["temp_c"] == 60.0
    torch_ = m.window_means(samples, windows, "0:torch")
    assert torch_["samples"] == 1 and torch_["sm_mhz"] == 1700.0
    none = m.window_means(samples, windows, "1:ours")
    assert none == {"samples": 0, "sm_mhz": None, "watts": None, "temp_c": None}


def test_sampler_without_nvidia_smi_is_off(monkeypatch):
    m = _mod()
    monkeypatch.setattr(m.shutil, "which", lambda name: None)
    s = m.GpuSampler()
    assert not s.enabled
    with s.window("0:ours"):
        pass
    assert s.means("0:ours")["sm_mhz"] is None
    s.close()


def test_sampler_for_device_prefers_the_uuid_then_the_index(monkeypatch):
    m = _mod()
    made = []

    class Fake:
        def __init__(self, gpu="0", period_ms=20):
            self.gpu, self.closed = gpu, False
            made.append(self)

        @property
        def enabled(self):
            return self.gpu.startswith("GPU-") and "good" in self.gpu

        def close(self):
            self.closed = True

    monkeypatch.setattr(m, "GpuSampler", Fake)
    props = type("P", (), {"uuid": "good-uuid"})()
    s = m.sampler_for_device(props, 3, settle_s=0)
    assert s.gpu == "GPU-good-uuid" and len(made) == 1
    made.clear()
    s = m.sampler_for_device(type("P", (), {"uuid": "bad"})(), 3, settle_s=0)  # nvidia-smi refused the UUID
    assert [x.gpu for x in made] == ["GPU-bad", "3"] and made[0].closed and s.gpu == "3"
    made.clear()
    assert m.sampler_for_device(object(), 1, settle_s=0).gpu == "1"  # no uuid attribute
