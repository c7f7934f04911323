"""benchmarks/neighbour_probe.py on the CPU: an unknown probe name is a clear error naming the flag, and
the cases parse as energy_probe's."""
import pytest

from conftest import load_script


def test_unknown_probe_names_the_flag():
    npb = load_script("benchmarks/neighbour_probe.py", "neighbour_probe_under_test")
    with pytest.raises(ValueError, match="--probes: unknown probe 'gemm'; choose from mm, sdpa, sdpa_bwd, copy"):
        npb.make_probes(["gemm"], None)


def test_default_cases_parse():
    npb = load_script("benchmarks/neighbour_probe.py", "neighbour_probe_under_test")
    cases = [npb.parse_case(c) for c in npb.DEFAULT_CASES.split(",")]
    assert cases == [((8192, 2048, 2048), "NN"), ((8192, 2048, 2048), "NT"), ((2048, 2048, 8192), "TN")]
