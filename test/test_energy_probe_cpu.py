"""benchmarks/energy_probe.py's arithmetic on the CPU (the measurement itself needs a GPU)."""
import pytest
from conftest import load_script


def _mod():
    return load_script("benchmarks/energy_probe.py", "energy_probe_under_test")


def test_parse_case_defaults_to_nt():
    m = _mod()
    assert m.parse_case("8192x5632x2048:tn") == ((8192, 5632, 2048), "TN")
    assert m.parse_case("256x8192x8192") == ((256, 8192, 8192), "NT")


def test_turn_stats_energy_is_power_times_time_per_call():
    m = _mod()
    # 500 calls in 2 s at 400 W: 4 ms per call, 1.6 J = 1600 mJ per call
    ms, w, mhz, mj = m.turn_stats({"watts": 400.0, "sm_mhz": 1755.0, "samples": 90}, 500, 2.0)
    assert ms == pytest.approx(4.0) and w == 400.0 and mhz == 1755.0 and mj == pytest.approx(1600.0)
    assert m.turn_stats({"watts": None, "sm_mhz": None, "samples": 0}, 500, 2.0) is None
    assert m.turn_stats({"watts": 400.0, "sm_mhz": 1755.0, "samples": 3}, 0, 2.0) is None


def test_slope_of_the_counter_staircase_is_the_mean_power():
    m = _mod()
    # 450 W: a counter refreshed every 0.1 s steps by 45000 mJ; read every 0.02 s, the readings are a
    # staircase whose least-squares slope in mJ per ms (= W) is ~450
    readings = [(0.02 * i, 45000.0 * int(0.02 * i / 0.1 + 1e-9)) for i in range(1, 151)]
    p = m.slope([(t * 1e3, e) for t, e in readings])  # ms, mJ -> W
    assert p == pytest.approx(450.0, rel=0.03)
    assert m.slope([(1.0, 5.0)]) is None and m.slope([(1.0, 5.0), (1.0, 6.0)]) is None
