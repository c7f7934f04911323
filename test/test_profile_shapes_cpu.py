"""benchmarks/profile_shapes.py on the CPU: how profiled kernel events are split into calls."""
import pytest

from conftest import load_script


def _mod():
    return load_script("benchmarks/profile_shapes.py", "profile_shapes_under_test")


def _events(calls, pre_names, call_names, t0=100.0):
    """Synthetic (name, start, end) events: per call, the `pre` kernels (1 us each, 0.5 us apart),
    then the call's kernels (call index + 10 us each, 2 us after the last pre kernel)."""
    ks, t = [], t0
    for c in range(calls):
        for n in pre_names:
            ks.append((n, t, t + 1.0))
            t += 1.5
        t += 1.5  # gap after the last pre kernel: 2.0 us from its end
        for n in call_names:
            ks.append((n, t, t + 10.0 + c))
            t += 11.0 + c
    return ks


@pytest.mark.parametrize("pre_names", [[], ["flush"], ["flush", "sdpa", "nvjet", "add"]])
def test_group_calls_splits_pre_kernels_from_the_call(pre_names):
    ks = _events(4, pre_names, ["gemm", "reduce"])
    tot, cnt, gaps, calls, pre_tot, spans = _mod().group_calls(ks, 2, len(pre_names))
    assert calls == 4
    assert set(tot) == {"gemm", "reduce"} and cnt == {"gemm": 4, "reduce": 4}
    assert tot["gemm"] == pytest.approx(10 + 11 + 12 + 13) and tot["reduce"] == pytest.approx(46)
    assert gaps == ([] if not pre_names else pytest.approx([2.0] * 4))
    assert pre_tot == {n: pytest.approx(4.0) for n in pre_names}  # 1 us each, 4 calls
    assert spans == pytest.approx([(10 + c) + 1 + (10 + c) for c in range(4)])  # gemm, 1 us apart, reduce


def test_group_calls_drops_an_incomplete_trailing_call():
    ks = _events(3, ["flush"], ["gemm"])[:-1]  # the last call's kernel missing
    tot, cnt, gaps, calls, pre_tot, spans = _mod().group_calls(ks, 1, 1)
    assert cnt == {"gemm": 2} and len(gaps) == 2 and len(spans) == 2


def test_group_calls_span_covers_an_overlapping_reduction():
    # a PDL-launched reduction starts 0.5 us after the GEMM and ends 2 us after it: the span is
    # the GEMM's start to the reduction's end, not the sum of the two kernels' times
    ks = [("flush", 0.0, 58.0), ("gemm", 61.0, 107.0), ("reduce", 61.5, 109.0),
          ("flush", 120.0, 178.0), ("gemm", 181.0, 228.0), ("reduce", 181.5, 229.0)]
    tot, cnt, gaps, calls, pre_tot, spans = _mod().group_calls(ks, 2, 1)
    assert spans == pytest.approx([48.0, 48.0]) and gaps == pytest.approx([3.0, 3.0])
    assert tot["reduce"] == pytest.approx(47.5 + 47.5)


def test_parse_parts_accepts_subsets_and_names_bad_ones():
    m = _mod()
    assert m.parse_parts("sdpa") == ("sdpa",)
    assert m.parse_parts("gemm,add") == ("gemm", "add")
    for bad in ("", "sdpa,mlp", "add"):
        with pytest.raises(ValueError, match="--between-parts"):
            m.parse_parts(bad)
