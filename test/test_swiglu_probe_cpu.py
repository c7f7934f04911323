"""benchmarks/swiglu_probe.py on the CPU, eager (the timing needs a GPU): the packed block layout, and
every form of SwiGLU's backward against a float64 reference, with tails of random data."""
import pytest
import torch

from conftest import load_script


def _probe():
    return load_script("benchmarks/swiglu_probe.py", "swiglu_probe_under_test")


def test_pack_layout():
    sp = _probe()
    m, i, block = 3, 8, 4
    g = torch.arange(m * i, dtype=torch.float32).view(m, i)
    u = -g - 1
    gu = sp.pack(g, u, block)
    assert gu.shape == (m, 2 * i)
    for r in range(m):
        for j in range(i // block):
            for c in range(block):  # gate feature block j + c, then up of the same feature
                assert gu[r, 2 * block * j + c] == g[r, block * j + c]
                assert gu[r, 2 * block * j + block + c] == u[r, block * j + c]
    g2, u2 = sp.unpack(gu, block)
    assert torch.equal(g2.reshape(m, i), g) and torch.equal(u2.reshape(m, i), u)


def test_swiglu_grads_match_autograd():
    sp = _probe()
    torch.manual_seed(0)
    g = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    u = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    dh = torch.randn(5, 12, dtype=torch.float64)
    (torch.nn.functional.silu(g) * u).backward(dh)
    dg, du = sp.swiglu_grads(dh, g.detach(), u.detach())
    assert torch.allclose(dg, g.grad) and torch.allclose(du, u.grad)


@pytest.mark.parametrize("m, i, block", [(7, 256, 128), (3, 24, 8)])
def test_every_form_is_right(m, i, block):
    sp = _probe()
    gen = torch.Generator().manual_seed(1)
    dh, g, u = (torch.randn(m, i, generator=gen).to(torch.bfloat16) for _ in range(3))
    errs = sp.check(sp.make_forms(block, compile_=False), dh, g, u, block, tol=1e-2)
    assert set(errs) == set(sp.FORMS) and all(e < 1e-2 for e in errs.values())


def test_a_wrong_form_is_caught():
    sp = _probe()
    gen = torch.Generator().manual_seed(2)
    dh, g, u = (torch.randn(4, 16, generator=gen).to(torch.bfloat16) for _ in range(3))
    forms = sp.make_forms(8, compile_=False)
    forms["swapped"] = lambda dh, g, u, gu: sp.pack(*reversed(sp.swiglu_grads(dh, g, u)), 8)
    with pytest.raises(ValueError, match="form 'swapped' is wrong"):
        sp.check(forms, dh, g, u, 8, tol=1e-2)
