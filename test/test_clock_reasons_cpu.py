"""benchmarks/clock_reasons.py on the CPU: nvidia-smi lines with a reason mask, and the per-model
shares of samples inside bench_model's round windows."""
from conftest import load_script


def test_parse_and_summarize():
    c = load_script("benchmarks/clock_reasons.py", "clock_reasons_under_test")
    a = c.parse("2026/12/05 05:20:01.000, 1755, 412.5, 0x0000000000000004")
    b = c.parse("2026/12/05 05:20:01.020, 1800, 380, 0x0000000000000000")
    d = c.parse("2026/12/05 05:20:02.000, 1980, 90, 0x0000000000000001")
    assert a[1:] == (1755.0, 412.5, 4) and b[3] == 0 and c.parse("[N/A], 1, 2, 0x0") is None
    t = a[0]
    res = c.summarize([a, b, d], {"stock": [(t - 0.001, t + 0.03)], "tk": [(t + 0.5, t + 1.5)], "none": [(0, 1)]})
    assert res["stock"]["samples"] == 2 and abs(res["stock"]["sm_mhz"] - 1777.5) < 1e-9
    assert res["stock"]["SW power cap"] == 0.5 and res["stock"]["idle"] == 0.0
    assert res["tk"]["samples"] == 1 and res["tk"]["idle"] == 1.0
    assert res["none"]["samples"] == 0 and res["none"]["sm_mhz"] is None
