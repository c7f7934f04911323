"""tk.linear_backward on the CPU reference: a linear layer's (grad_input, grad_weight) from its output
gradient taken once, tk.linear's backward through it, its own autograd (double backward), its fake
under torch.compile, and the reason it exists: Inductor stores a pointwise gradient once when the op
takes it once, twice when tk.gemm_pair takes two views of it (the generated CPU code's kernels).

Fresh randn data, float64 references with relative-norm tolerances, tails (sizes that are no tile
multiples), argument errors naming the argument in eager and fake mode."""
import re

import pytest
import torch

import torch_tk
from conftest import CPU_TOL, assert_close_rel, counter_delta, counters, names_argument

SHAPES = [(33, 65, 17), (129, 7, 130), (64, 64, 64), (1, 3, 5)]  # (M, out_features, in_features)


def _operands(M, N, K, dtype, requires_grad=False):
    g = torch.randn(M, N, dtype=dtype, requires_grad=requires_grad)
    w = (torch.randn(N, K) * K ** -0.5).to(dtype).requires_grad_(requires_grad)
    x = torch.randn(M, K, dtype=dtype, requires_grad=requires_grad)
    return g, w, x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shape", SHAPES)
def test_linear_backward_matches_reference(dtype, shape):
    g, w, x = _operands(*shape, dtype)
    before = counters()
    gi, gw = torch_tk.linear_backward(g, w, x)
    assert counter_delta(before, counters())["cpu"] == 2  # two products, as tk.gemm_pair runs them
    assert gi.shape == x.shape and gw.shape == w.shape and gi.dtype == gw.dtype == dtype
    assert gi.is_contiguous() and gw.is_contiguous()
    assert_close_rel(gi, g.double() @ w.double(), CPU_TOL[dtype], "grad_input")
    assert_close_rel(gw, g.double().t() @ x.double(), CPU_TOL[dtype], "grad_weight")
    p0, p1 = torch_tk.gemm_pair(g, w, g.t(), x)  # the same products, the same bits
    assert torch.equal(gi, p0) and torch.equal(gw, p1)


_BAD = [
    (lambda g, w, x: (g.reshape(-1), w, x), "grad_output", ValueError),
    (lambda g, w, x: (g, w[:-1], x), "weight", ValueError),
    (lambda g, w, x: (g, w, x[:, :-1]), "input", ValueError),
    (lambda g, w, x: (g, w, x[:-1]), "input", ValueError),
    (lambda g, w, x: (g, w, x.double()), "input", TypeError),
    (lambda g, w, x: (g.to(torch.int32), w.to(torch.int32), x.to(torch.int32)), "weight", TypeError),
]


@pytest.mark.parametrize("bad,name,exc", _BAD)
def test_linear_backward_errors_name_the_argument(bad, name, exc):
    with pytest.raises(exc) as e:
        torch_tk.linear_backward(*bad(*_operands(6, 5, 4, torch.float32)))
    assert "tk.linear_backward" in str(e.value) and names_argument(str(e.value), name), str(e.value)


@pytest.mark.parametrize("bad,name,exc", _BAD[:5])
def test_linear_backward_fake_errors_name_the_argument(bad, name, exc):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        args = bad(*(mode.from_tensor(t) for t in _operands(6, 5, 4, torch.float32)))
        with pytest.raises(exc) as e:
            torch.ops.tk.linear_backward(*args)
    assert "tk.linear_backward" in str(e.value) and names_argument(str(e.value), name), str(e.value)


def test_linear_backward_double_backward():
    # its own autograd formula, against finite differences (float64)
    ops = _operands(5, 4, 3, torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *t: torch_tk.linear_backward(*t), ops)
    assert torch.autograd.gradgradcheck(lambda *t: torch_tk.linear_backward(*t), ops)


def test_linear_backward_one_output_used():
    g, w, x = _operands(7, 6, 5, torch.float64, requires_grad=True)
    gi, _ = torch_tk.linear_backward(g, w, x)
    d = torch.randn_like(gi)
    dg, dw, dx = torch.autograd.grad(gi, (g, w, x), d, allow_unused=True)
    assert dx is None  # grad_input does not depend on input
    assert_close_rel(dg, d @ w.detach().t(), CPU_TOL[torch.float64], "d grad_output")
    assert_close_rel(dw, g.detach().t() @ d, CPU_TOL[torch.float64], "d weight")


def test_linear_autograd_goes_through_linear_backward():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    x = torch.randn(2, 9, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    y = torch_tk.linear(x, w)
    gy = torch.randn_like(y)
    with Log() as log:
        gx, gw = torch.autograd.grad(y, (x, w), gy)
    assert any(o.startswith("tk.linear_backward") for o in log.ops), log.ops
    assert_close_rel(gx, (gy.reshape(-1, 4) @ w.detach()).reshape(x.shape), CPU_TOL[torch.float64], "grad x")
    assert_close_rel(gw, gy.reshape(-1, 4).t() @ x.detach().reshape(-1, 6), CPU_TOL[torch.float64], "grad w")


def test_linear_backward_compiled_matches_eager():
    g, w, x = _operands(40, 24, 16, torch.float32)
    f = torch.compile(lambda g, w, x: torch_tk.linear_backward(g * 2, w, x), backend="inductor", fullgraph=True)
    gi, gw = f(g, w, x)
    assert_close_rel(gi, (2 * g.double()) @ w.double(), CPU_TOL[torch.float32], "grad_input")
    assert_close_rel(gw, (2 * g.double()).t() @ x.double(), CPU_TOL[torch.float32], "grad_weight")


def _kernel_outputs(code):
    """Per generated C++ kernel definition, its number of output pointers."""
    return [len(set(re.findall(r"out_ptr\d+", sig))) for sig in re.findall(r"extern \"C\"[^{]*\(([^)]*)\)", code)]


def test_pointwise_gradient_is_stored_once():
    # A gradient that is still a pointwise expression (here sin(g) * 2): tk.linear_backward takes it
    # once and Inductor stores it once; tk.gemm_pair's two views of it made Inductor store it twice.
    from torch._inductor.utils import run_and_get_code

    g, w, x = _operands(48, 32, 16, torch.float32)

    def once(g, w, x):
        return torch.ops.tk.linear_backward(torch.sin(g) * 2, w, x)

    def twice(g, w, x):
        d = torch.sin(g) * 2
        return torch.ops.tk.gemm_pair(d, w, d.t(), x)

    torch._dynamo.reset()
    _, (code_once,) = run_and_get_code(torch.compile(once, fullgraph=True), g, w, x)
    torch._dynamo.reset()
    _, (code_twice,) = run_and_get_code(torch.compile(twice, fullgraph=True), g, w, x)
    assert _kernel_outputs(code_once) == [1], code_once
    assert sum(_kernel_outputs(code_twice)) >= 2, code_twice  # the behaviour the op avoids
