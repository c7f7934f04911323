"""tk.gemm_pair on the CPU reference: two independent products in one op (autograd's dX and dW).

Fresh randn data, float64 references with relative-norm tolerances, tails (sizes that are not
tile multiples), either K the longer (results in argument order), argument errors
naming the argument, the fake implementation under torch.compile, autograd, autocast."""
import pytest
import torch

import torch_tk
from conftest import CPU_TOL, assert_close_rel, counter_delta, counters, make_matrix, names_argument, ref_mm

# (M0, K0, N0, M1, K1, N1): K0 > K1, K0 < K1, equal K,
# and the shapes of a linear's backward (dX = grad @ W, dW = grad^T @ X) with tails.
PAIRS = [(33, 65, 17, 7, 3, 9), (5, 2, 130, 129, 257, 6), (64, 64, 64, 64, 64, 64), (70, 48, 24, 48, 70, 24)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shapes", PAIRS)
@pytest.mark.parametrize("layouts", [("n", "n", "n", "n"), ("t", "n", "n", "t")])
def test_gemm_pair_matches_reference(dtype, shapes, layouts):
    M0, K0, N0, M1, K1, N1 = shapes
    a0, b0 = make_matrix(M0, K0, dtype, layouts[0]), make_matrix(K0, N0, dtype, layouts[1])
    a1, b1 = make_matrix(M1, K1, dtype, layouts[2]), make_matrix(K1, N1, dtype, layouts[3])
    before = counters()
    c0, c1 = torch_tk.gemm_pair(a0, b0, a1, b1)
    assert counter_delta(before, counters())["cpu"] == 2
    for c, (M, N) in ((c0, (M0, N0)), (c1, (M1, N1))):
        assert c.shape == (M, N) and c.dtype == dtype and c.is_contiguous()
    assert_close_rel(c0, ref_mm(a0, b0), CPU_TOL[dtype], "first product")
    assert_close_rel(c1, ref_mm(a1, b1), CPU_TOL[dtype], "second product")
    # each product is what tk.gemm gives
    assert torch.equal(c0, torch_tk.gemm(a0, b0)) and torch.equal(c1, torch_tk.gemm(a1, b1))


def test_gemm_pair_empty_and_zero_k():
    a0, b0 = torch.randn(0, 5), torch.randn(5, 3)
    a1, b1 = torch.randn(4, 0), torch.randn(0, 6)
    c0, c1 = torch_tk.gemm_pair(a0, b0, a1, b1)
    assert c0.shape == (0, 3) and c1.shape == (4, 6) and torch.count_nonzero(c1) == 0


@pytest.mark.parametrize("bad,name,exc", [
    (lambda t: (t[0].reshape(-1), *t[1:]), "a0", ValueError),
    (lambda t: (t[0], t[1][:-1], *t[2:]), "b0", ValueError),
    (lambda t: (*t[:2], t[2].double(), t[3]), "b1", TypeError),
    (lambda t: (*t[:3], t[3].to(torch.int32)), "b1", TypeError),
    (lambda t: (*t[:2], t[2].to("meta"), t[3].to("meta")), "a1", ValueError),
])
def test_gemm_pair_errors_name_the_argument(bad, name, exc):
    ops = (torch.randn(6, 5), torch.randn(5, 4), torch.randn(3, 7), torch.randn(7, 2))
    with pytest.raises(exc) as e:
        torch_tk.gemm_pair(*bad(ops))
    assert "tk.gemm_pair" in str(e.value) and names_argument(str(e.value), name), str(e.value)


def test_gemm_pair_autograd_all_four_inputs():
    a0, b0 = make_matrix(9, 13, torch.float64, requires_grad=True), make_matrix(13, 5, torch.float64, requires_grad=True)
    a1, b1 = make_matrix(4, 6, torch.float64, requires_grad=True), make_matrix(6, 11, torch.float64, requires_grad=True)
    g0, g1 = torch.randn(9, 5, dtype=torch.float64), torch.randn(4, 11, dtype=torch.float64)
    c0, c1 = torch_tk.gemm_pair(a0, b0, a1, b1)
    ((c0 * g0).sum() + (c1 * g1).sum()).backward()
    refs = [t.detach().clone().requires_grad_() for t in (a0, b0, a1, b1)]
    ((refs[0] @ refs[1] * g0).sum() + (refs[2] @ refs[3] * g1).sum()).backward()
    for t, r in zip((a0, b0, a1, b1), refs):
        assert_close_rel(t.grad, r.grad, 1e-12, "gradient")


def test_gemm_pair_autograd_one_output_used():
    a0, b0 = make_matrix(9, 13, torch.float64, requires_grad=True), make_matrix(13, 5, torch.float64)
    a1, b1 = make_matrix(4, 6, torch.float64), make_matrix(6, 11, torch.float64, requires_grad=True)
    c0, c1 = torch_tk.gemm_pair(a0, b0, a1, b1)
    c0.sum().backward()
    assert b1.grad is None and a0.grad is not None
    assert_close_rel(a0.grad, torch.ones(9, 5, dtype=torch.float64) @ b0.t(), 1e-12, "a0 grad")


def test_linear_backward_is_one_pair_and_matches():
    """The backward of tk.linear computes dX and dW by one tk.gemm_pair (two CPU products)."""
    x = make_matrix(12, 33, torch.float64, requires_grad=True)
    w = make_matrix(17, 33, torch.float64, requires_grad=True)
    y = torch_tk.linear(x, w)
    g = torch.randn_like(y)
    before = counters()
    y.backward(g)
    assert counter_delta(before, counters())["cpu"] == 2
    assert_close_rel(x.grad, g @ w.detach(), 1e-12, "dX")
    assert_close_rel(w.grad, g.t() @ x.detach(), 1e-12, "dW")


def test_gemm_pair_compiles_fullgraph():
    def f(a0, b0, a1, b1):
        c0, c1 = torch_tk.gemm_pair(a0, b0, a1, b1)
        return c0.relu() + 1, c1 * 2

    args = (torch.randn(7, 9), torch.randn(9, 5), torch.randn(6, 4), torch.randn(4, 3))
    out = torch.compile(f, fullgraph=True, backend="aot_eager")(*args)
    ref = f(*args)
    for o, r in zip(out, ref):
        assert torch.equal(o, r)
    torch.library.opcheck(torch.ops.tk.gemm_pair.default, args)


def test_gemm_pair_under_cpu_autocast():
    a0, b0, a1, b1 = (torch.randn(s) for s in ((8, 16), (16, 4), (3, 5), (5, 7)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        c0, c1 = torch_tk.gemm_pair(a0, b0, a1, b1)
    assert c0.dtype == c1.dtype == torch.bfloat16
    assert_close_rel(c0, ref_mm(a0.bfloat16(), b0.bfloat16()), CPU_TOL[torch.bfloat16], "autocast")
