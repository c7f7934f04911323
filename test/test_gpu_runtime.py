"""GPU tests of the ops in use: determinism, streams, threads, CUDA graphs, torch.compile,
autograd, a patched nn module and the device guard on a second GPU.

Every test is marked `gpu` and skipped without CUDA; the kernel tests are also skipped unless
torch_tk.hopper_available() (sm_90 + sm_90a build). Helpers and the correctness standard: gpu_common.py.
"""

from __future__ import annotations

import math

import pytest
import torch

import torch_tk
from conftest import make_matrix
from gpu_common import (
    check, DEV, _dt, GPU_MARKS, HAS_CUDA, KernelWatch, LOWP, needs_hopper, ref64, TOL,
)

pytestmark = GPU_MARKS


# ============================================================================ determinism, streams, graphs


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_determinism(dtype):
    M, N, K = 1000, 4095, 1000
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    s = torch.randn(N, device=DEV).to(dtype)
    outs = [torch_tk.addmm(s, a, b, beta=0.5) for _ in range(5)]
    assert not torch.isnan(outs[0]).any()
    for o in outs[1:]:
        assert torch.equal(o, outs[0]), "same inputs gave different bits"


@needs_hopper
def test_non_default_stream():
    dtype = torch.bfloat16
    M, N, K = 1000, 1000, 4095
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    bias = torch.randn(N, device=DEV).to(dtype)
    eager = torch_tk.addmm(bias, a, b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with KernelWatch() as w:
        with torch.cuda.stream(side):
            # long work queued first on the side stream: a kernel launched on the wrong
            # stream would race with it
            big = torch.randn(4096, 4096, device=DEV, dtype=dtype)
            for _ in range(3):
                big = big @ big
                big = big / big.abs().amax()
            out = torch_tk.addmm(bias, a, b)
            out2 = torch_tk.linear(a, b.t(), bias)
        torch.cuda.current_stream().wait_stream(side)
    w.assert_hopper(2)
    assert torch.equal(out, eager)
    assert torch.equal(out2, eager)


@needs_hopper
def test_first_call_in_a_new_thread():
    """The op must work as the first CUDA call of a thread (autograd runs backward on its
    own device thread; DataLoader-style workers, serving threads). Such a thread may have
    no current CUDA context until something makes one current."""
    import threading

    dtype = torch.bfloat16
    a = torch.randn(387, 320, device=DEV).to(dtype)
    b = torch.randn(320, 1000, device=DEV).to(dtype)
    ref = torch_tk.gemm(a, b)
    result = {}

    def worker():
        try:
            out = torch_tk.gemm(a, b)
            torch.cuda.synchronize()
            result["out"] = out
        except Exception as e:  # noqa: BLE001 - reported below
            result["err"] = repr(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "err" not in result, f"tk.gemm failed as the first CUDA call of a new thread: {result['err']}"
    assert torch.equal(result["out"], ref)


@needs_hopper
def test_cuda_graph_capture_replay():
    dtype = torch.bfloat16
    M, N, K = 777, 1000, 640
    a = make_matrix(M, K, dtype, "n", device=DEV)
    b = make_matrix(K, N, dtype, "t", device=DEV)
    s = torch.randn(N, device=DEV).to(dtype)
    x3 = torch.randn(3, 5, K, device=DEV).to(dtype)

    def work():
        return (
            torch_tk.gemm(a, b),
            torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0),
            torch_tk.linear(x3, b.t(), s),
            torch_tk.gemm(a, b, out_dtype=torch.float32),
        )

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            work()
    torch.cuda.current_stream().wait_stream(side)

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = work()

    for trial in range(3):
        # new inputs copied into the captured buffers
        with torch.no_grad():
            a.copy_(torch.randn_like(a, dtype=torch.float32))
            b.copy_(torch.randn(N, K, device=DEV).to(dtype).t())
            s.copy_(torch.randn_like(s, dtype=torch.float32))
            x3.copy_(torch.randn_like(x3, dtype=torch.float32))
        for o in static_out:
            o.fill_(math.nan)
        with KernelWatch() as w:
            g.replay()
        assert w.delta["fallback"] == 0
        eager = work()
        for o, e in zip(static_out, eager):
            assert not torch.isnan(o).any(), "graph replay left elements unwritten"
            assert torch.equal(o, e), f"replay {trial} differs from eager"
        check(static_out[0], ref64(a, b), TOL[dtype], "graph gemm")


# ============================================================================ compile, autograd, nn


@needs_hopper
def test_torch_compile_cuda():
    dtype = torch.bfloat16

    def f(x, w, bias, m2):
        h = torch_tk.linear(x, w, bias)
        h = torch.nn.functional.silu(h)
        h2 = h.reshape(-1, h.shape[-1])
        return torch_tk.addmm(bias[: m2.shape[1]], h2, m2, beta=0.5) + torch_tk.gemm(h2, m2)

    x = torch.randn(4, 33, 256, device=DEV).to(dtype)
    w_ = (torch.randn(320, 256, device=DEV) / 16).to(dtype)
    bias = torch.randn(320, device=DEV).to(dtype)
    m2 = (torch.randn(200, 320, device=DEV) / 16).to(dtype).t()
    eager = f(x, w_, bias, m2)
    cf = torch.compile(f, fullgraph=True)
    with KernelWatch() as w:
        out = cf(x, w_, bias, m2)
    w.assert_hopper(3)
    assert out.dtype == eager.dtype and out.shape == eager.shape
    # inductor may fuse silu/add differently: compare with a bf16-level tolerance
    check(out, eager.double(), 1e-2, "compiled vs eager")


@needs_hopper
@pytest.mark.parametrize("dtype", LOWP, ids=_dt)
def test_backward_linear_cuda(dtype):
    B, S, K, N = 3, 129, 1000, 320
    x = torch.randn(B, S, K, device=DEV).to(dtype).requires_grad_()
    w_ = torch.randn(N, K, device=DEV).to(dtype).requires_grad_()
    bias = torch.randn(N, device=DEV).to(dtype).requires_grad_()
    g = torch.randn(B, S, N, device=DEV).to(dtype)
    with KernelWatch() as w:
        out = torch_tk.linear(x, w_, bias)
        out.backward(g)
    w.assert_hopper(3)  # forward + grad_input + grad_weight
    gd, xd, wd = g.double(), x.detach().double(), w_.detach().double()
    check(out, xd @ wd.t() + bias.detach().double(), TOL[dtype], "forward")
    check(x.grad, gd @ wd, TOL[dtype], "grad input")
    check(w_.grad, gd.reshape(-1, N).t() @ xd.reshape(-1, K), TOL[dtype], "grad weight")
    check(bias.grad, gd.reshape(-1, N).sum(0), TOL[dtype], "grad bias")
    assert x.grad.dtype == w_.grad.dtype == bias.grad.dtype == dtype


@needs_hopper
def test_backward_gemm_addmm_out_fp32_cuda():
    dtype = torch.bfloat16
    a = torch.randn(300, 129, device=DEV).to(dtype).requires_grad_()
    b = torch.randn(129, 257, device=DEV).to(dtype).requires_grad_()
    s = torch.randn(257, device=DEV).to(dtype).requires_grad_()
    g = torch.randn(300, 257, device=DEV)
    with KernelWatch() as w:
        out = torch_tk.addmm(s, a, b, beta=0.5, alpha=2.0, out_dtype=torch.float32)
        out.backward(g)
    w.assert_hopper(3)
    gd = g.double()
    check(a.grad, 2.0 * gd @ b.detach().double().t(), TOL[dtype], "grad mat1")
    check(b.grad, 2.0 * a.detach().double().t() @ gd, TOL[dtype], "grad mat2")
    check(s.grad, 0.5 * gd.sum(0), TOL[dtype], "grad self")


@needs_hopper
def test_patched_mlp_cuda():
    dtype = torch.bfloat16
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 128))
    model = model.to(DEV, dtype)
    x = torch.randn(8, 65, 256, device=DEV).to(dtype)
    with torch.no_grad():
        ref = model.double()(x.double())
    model.to(dtype)
    torch_tk.patch_linear(model)
    with KernelWatch() as w, torch.no_grad():
        out = model(x)
    w.assert_hopper(2)
    check(out, ref, 2e-2, "patched MLP bf16")


# ============================================================================ multi-GPU device guard


@needs_hopper
@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_second_device():
    dev = torch.device("cuda", 1)
    if not torch_tk.hopper_available(dev):
        pytest.skip("device 1 is not sm_90")
    a = torch.randn(300, 200, device=dev).to(torch.bfloat16)
    b = torch.randn(200, 129, device=dev).to(torch.bfloat16)
    assert torch.cuda.current_device() == 0
    out = torch_tk.gemm(a, b)  # the op must guard device 1 itself
    torch.cuda.synchronize(dev)
    assert out.device == dev
    check(out, ref64(a, b), TOL[torch.bfloat16], "gemm on cuda:1")
