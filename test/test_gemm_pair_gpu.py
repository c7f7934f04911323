"""GPU tests of tk.gemm_pair (autograd's dX and dW in one op; its two products run in turn on the
current stream).

Same standard as gpu_common.py: fresh randn data, a NaN-poisoned allocator, float64 references with
relative-norm tolerances, tails; each product must equal tk.gemm's bits (same kernels and plans);
ordering is checked by using and overwriting the operands' memory on the caller's stream right
after the call, without a synchronize, and inside a CUDA graph."""

import pytest
import torch

import torch_tk
from gpu_common import DEV, TOL, KernelWatch, check, needs_hopper, poison_allocator, ref64

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

# (tokens T, in features IN, out features OUT) of a linear's backward: dX = grad @ W (T x IN, K =
# OUT, torch.mm's NN) beside dW = grad^T @ X (OUT x IN, K = T, TN). bench_model's gate / up
# projection, a multi-wave pair with tails, one with odd pitches (re-pitched), and a skinny one
# (dX on a token plan, dW with K = 64).
LINEARS = [(8192, 2048, 5632), (4100, 1000, 2056), (1000, 4104, 999), (300, 1030, 4096), (64, 4096, 4096)]


def _operands(T, IN, OUT, dtype):
    grad = torch.randn(T, OUT, device=DEV, dtype=dtype)
    w = torch.randn(OUT, IN, device=DEV, dtype=dtype)
    x = torch.randn(T, IN, device=DEV, dtype=dtype)
    return grad, w, x


@needs_hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", LINEARS, ids=lambda s: "x".join(map(str, s)))
def test_pair_matches_two_gemms(shape, dtype):
    T, IN, OUT = shape
    grad, w, x = _operands(T, IN, OUT, dtype)
    poison_allocator(T * IN * 2, OUT * IN * 2)
    stream = torch.cuda.current_stream()
    with KernelWatch() as kw:
        dx, dw = torch_tk.gemm_pair(grad, w, grad.t(), x)
    kw.assert_hopper(2)
    assert torch.cuda.current_stream() == stream
    assert dx.shape == (T, IN) and dw.shape == (OUT, IN) and dx.is_contiguous() and dw.is_contiguous()
    check(dx, ref64(grad, w), TOL[dtype], "dX")
    check(dw, ref64(grad.t(), x), TOL[dtype], "dW")
    assert torch.equal(dx, torch_tk.gemm(grad, w)) and torch.equal(dw, torch_tk.gemm(grad.t(), x))


@needs_hopper
def test_pair_ordered_on_a_side_stream_without_sync():
    """The caller's stream (not the default one) makes the operands right before the call, reads
    the results right after, and overwrites the operands' memory -- all queued without a
    synchronize: the results must be those of the operands as they were at the call."""
    T, IN, OUT = 8192, 2048, 5632
    s = torch.cuda.Stream()
    src = _operands(T, IN, OUT, torch.bfloat16)
    refs = (ref64(src[0], src[1]), ref64(src[0].t(), src[2]))
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        grad, w, x = (t * 1.0 for t in src)  # made on s just before the call
        dx, dw = torch_tk.gemm_pair(grad, w, grad.t(), x)
        sums = (dx.float().sum(), dw.float().sum())  # read on s at once
        for t in (grad, w, x):
            t.fill_(float("nan"))  # overwritten on s while the products may still run elsewhere
        dx2, dw2 = dx.clone(), dw.clone()
    s.synchronize()
    check(dx2, refs[0], TOL[torch.bfloat16], "dX")
    check(dw2, refs[1], TOL[torch.bfloat16], "dW")
    assert torch.isclose(sums[0].double(), dx2.double().sum(), rtol=1e-3) and torch.isfinite(sums[1])


@needs_hopper
def test_pair_in_cuda_graph():
    T, IN, OUT = 4100, 1000, 2056
    grad, w, x = _operands(T, IN, OUT, torch.bfloat16)
    torch_tk.gemm_pair(grad, w, grad.t(), x)  # warm-up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dx, dw = torch_tk.gemm_pair(grad, w, grad.t(), x)
    for _ in range(2):
        for t in (grad, w, x):
            t.copy_(torch.randn_like(t))
        g.replay()
        torch.cuda.synchronize()
        check(dx, ref64(grad, w), TOL[torch.bfloat16], "dX (graph)")
        check(dw, ref64(grad.t(), x), TOL[torch.bfloat16], "dW (graph)")


@needs_hopper
@pytest.mark.parametrize("shape", [(4100, 1000, 2056), (300, 1030, 4096)], ids=lambda s: "x".join(map(str, s)))
def test_linear_backward_through_the_pair(shape):
    T, IN, OUT = shape
    x = torch.randn(T, IN, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(OUT, IN, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(T, OUT, device=DEV, dtype=torch.bfloat16)
    with KernelWatch() as kw:
        torch_tk.linear(x, w).backward(g)
    kw.assert_hopper(3)
    check(x.grad, ref64(g, w), TOL[torch.bfloat16], "dX")
    check(w.grad, ref64(g.t(), x), TOL[torch.bfloat16], "dW")


@needs_hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", LINEARS[1:3], ids=lambda s: "x".join(map(str, s)))
def test_linear_backward_is_the_pair(shape, dtype):
    # tk.linear_backward(grad, W, x) runs tk.gemm_pair(grad, W, grad^T, x): the same kernels and bits
    T, IN, OUT = shape
    grad, w, x = _operands(T, IN, OUT, dtype)
    poison_allocator(T * IN * 2, OUT * IN * 2)
    with KernelWatch() as kw:
        dx, dw = torch_tk.linear_backward(grad, w, x)
    kw.assert_hopper(2)
    check(dx, ref64(grad, w), TOL[dtype], "dX")
    check(dw, ref64(grad.t(), x), TOL[dtype], "dW")
    p0, p1 = torch_tk.gemm_pair(grad, w, grad.t(), x)
    assert torch.equal(dx, p0) and torch.equal(dw, p1)
