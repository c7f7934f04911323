"""benchmarks/host_overhead.py on the CPU: every variant computes the same product, and the script runs."""
import pytest
import torch

from conftest import load_script


def _mod():
    return load_script("benchmarks/host_overhead.py", "host_overhead_under_test")


@pytest.mark.parametrize("op", ["gemm", "linear", "module"])
def test_variants_agree(op):
    g = torch.Generator().manual_seed(3)
    a, w = torch.randn(5, 9, generator=g, dtype=torch.float64), torch.randn(4, 9, generator=g, dtype=torch.float64)
    fns = _mod().variants(op, a, w.t() if op == "gemm" else w)
    assert set(fns) == {"torch", "torch_no_grad", "tk", "tk_no_grad", "tk_below"}
    ref = a @ w.t()
    for name, f in fns.items():
        assert torch.allclose(f(), ref, rtol=1e-12, atol=1e-12), name


def test_variants_reject_unknown_op():
    with pytest.raises(ValueError, match="op"):
        _mod().variants("conv", torch.ones(1, 1), torch.ones(1, 1))


def test_main_times_every_variant_per_shape(capsys):
    rows = _mod().main(["--shapes", "3x8x5,1x4x4", "--calls", "3", "--rounds", "2", "--op", "gemm"])
    assert [spec for spec, _ in rows] == ["3x8x5", "1x4x4"]
    for _, med in rows:
        assert set(med) == {"torch", "torch_no_grad", "tk", "tk_no_grad", "tk_below"} and all(v > 0 for v in med.values())
    assert "host us per call" in capsys.readouterr().out
