"""benchmarks/operands.py on the CPU: shapes, storage order per layout letter, bad layouts."""
import pytest
import torch

from conftest import load_script


def _mod():
    return load_script("benchmarks/operands.py", "operands_under_test")


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_layout_operands_shapes_and_storage(layout):
    a, b = _mod().layout_operands(5, 7, 3, layout, device="cpu", generator=torch.Generator().manual_seed(1))
    assert a.shape == (5, 3) and b.shape == (3, 7) and a.dtype == b.dtype == torch.bfloat16
    assert a.is_contiguous() == (layout[0] == "N") and a.t().is_contiguous() == (layout[0] == "T")
    assert b.is_contiguous() == (layout[1] == "N") and b.t().is_contiguous() == (layout[1] == "T")
    assert a.abs().sum() > 0 and b.abs().sum() > 0


def test_layout_operands_rejects_bad_layout():
    with pytest.raises(ValueError, match="layout"):
        _mod().layout_operands(2, 2, 2, "NX", device="cpu")
