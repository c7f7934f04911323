"""Big operands (>= 2^31 elements), streams, threads, devices and determinism on CUDA
(issue: Reliability). Every test needs an sm_90 GPU with the Hopper kernels."""
import threading

import pytest
import torch

import torch_tk

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

BIG = 2 ** 31


@pytest.fixture(autouse=True)
def _hopper():
    if not torch_tk.hopper_available():
        pytest.skip("needs an sm_90 GPU with the Hopper kernels")
    yield
    torch.cuda.empty_cache()


def _rel(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def _sample(n, k=48):
    """Random indices plus both ends, on the GPU."""
    idx = torch.cat([torch.tensor([0, n - 1, n // 2]), torch.randint(0, n, (k,))])
    return idx.cuda()


@pytest.mark.parametrize("a_layout", ["row", "col"])
def test_operand_a_over_2_31_elements(a_layout):
    M, K, N = 65536, 32768, 136  # A: 2^31 bf16 elements (4 GiB); N is a tail of the 128-wide tile
    assert M * K >= BIG
    g = torch.Generator(device="cuda").manual_seed(1)
    a = (torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g) if a_layout == "row"
         else torch.randn(K, M, device="cuda", dtype=torch.bfloat16, generator=g).t())
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16, generator=g)
    before = torch_tk.kernel_counters()["hopper"]
    out = torch_tk.gemm(a, b)
    assert torch_tk.kernel_counters()["hopper"] == before + 1
    rows = _sample(M)
    ref = a[rows].double() @ b.double()
    assert _rel(out[rows], ref) < 1e-2
    assert torch.isfinite(out).all()


def test_operand_b_over_2_31_elements():
    M, K, N = 200, 32768, 65536  # B (K x N) row-major: 2^31 elements
    g = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16, generator=g)
    out = torch_tk.gemm(a, b)
    cols = _sample(N)
    ref = a.double() @ b[:, cols].double()
    assert _rel(out[:, cols], ref) < 1e-2


def test_output_and_self_over_2_31_elements():
    M, N, K = 65536, 32768, 72  # C and self: 2^31 elements each; K tail (72 = 64 + 8)
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g).t()  # nn.Linear layout
    c = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)
    out = torch_tk.addmm(c, a, b, beta=0.5, alpha=2.0)
    assert out.numel() >= BIG
    rows, cols = _sample(M), _sample(N)
    ref_rows = 0.5 * c[rows].double() + 2.0 * (a[rows].double() @ b.double())
    assert _rel(out[rows], ref_rows) < 1e-2
    ref_cols = 0.5 * c[:, cols].double() + 2.0 * (a.double() @ b[:, cols].double())
    assert _rel(out[:, cols], ref_cols) < 1e-2
    # the very last element (largest offset)
    last = 0.5 * c[-1, -1].double() + 2.0 * (a[-1].double() @ b[:, -1].double())
    assert abs(out[-1, -1].double() - last) <= 2e-2 * (abs(last) + 1)


def test_no_implicit_synchronization():
    a = torch.randn(1000, 777, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(777, 1029, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(1029, device="cuda", dtype=torch.bfloat16)
    torch_tk.gemm(a, b)  # first call: descriptors, attributes
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any synchronizing CUDA call raises
    try:
        out = torch_tk.addmm(bias, a, b)
        out2 = torch_tk.linear(a, b.t(), bias)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    ref = bias.double() + a.double() @ b.double()
    assert _rel(out, ref) < 1e-2 and _rel(out2, ref) < 1e-2


def test_host_returns_while_stream_is_busy():
    s = torch.cuda.Stream()
    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    torch_tk.gemm(a, b)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time on this stream
        out = torch_tk.gemm(a, b)
        busy = not s.query()  # the host got here before the stream drained: no sync was added
    s.synchronize()
    assert busy
    assert _rel(out, a.double() @ b.double()) < 1e-2


def test_two_threads_two_streams():
    results, errors = {}, []

    def work(tid):
        try:
            s = torch.cuda.Stream()
            g = torch.Generator(device="cuda").manual_seed(100 + tid)
            with torch.cuda.stream(s):
                for i in range(20):
                    M, N, K = 64 + 37 * i + tid, 200 + 11 * i, 96 + 29 * i
                    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
                    b = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=g).t()
                    out = torch_tk.gemm(a, b)
                    results[(tid, i)] = (out, a, b)
            s.synchronize()
        except Exception as e:  # surfaced below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(results) == 40
    worst = max(_rel(out, a.double() @ b.double()) for out, a, b in results.values())
    assert worst < 2e-3


def test_dynamic_schedule_ticket_counter_reused():
    """Dynamically scheduled calls reuse their stream's ticket counter, which each kernel's last
    draw zeroes (csrc/gemm/hopper/ticket_counter.h): a counter left nonzero would make the next
    call skip units, left NaN by the poisoned allocator. Calls queued back to back without a
    sync, shapes of different unit counts alternating (one in 2-CTA clusters, whose units and
    tickets are counted per cluster), on two streams, then replayed from a CUDA graph (whose
    capture zeroes a counter of its own)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ops, clusters = [], set()
    # (K = 1000: a 2000-B pitch, so 2-CTA clusters too, plan_rules.h kSplitSectorClusters; 528: none)
    for M, N, K in [(2049, 2055, 1000), (4097, 1100, 528), (4096, 8192, 8192)]:
        plan = torch_tk._C.hopper_plan(M, N, K, sms, True)
        assert plan["dynamic"], "shape no longer exercises the dynamic schedule"
        clusters.add(plan["cluster"])
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
        ops.append((a, b, a.double() @ b.double()))
    assert clusters == {1, 2}, f"the shapes no longer cover clustered and unclustered plans: {clusters}"
    for stream in (torch.cuda.current_stream(), torch.cuda.Stream()):
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            # Blocks of the outputs' sizes filled with NaN (0xFF) and freed into this stream's pool.
            junk = [torch.full((a.shape[0] * b.shape[1] * 2,), 255, dtype=torch.uint8, device="cuda")
                    for a, b, _ in ops for _ in range(4)]
            del junk
            before = torch_tk.kernel_counters()["hopper"]
            outs = [(torch_tk.gemm(a, b), ref) for _ in range(3) for a, b, ref in ops]
        stream.synchronize()
        assert torch_tk.kernel_counters()["hopper"] == before + len(outs)
        for i, (out, ref) in enumerate(outs):
            assert not torch.isnan(out).any(), f"call {i} on {stream} left units unwritten"
            assert _rel(out, ref) < 1e-2, f"call {i} on {stream}"
    a, b, ref = ops[0]
    torch_tk.gemm(a, b)  # warm-up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = torch_tk.gemm(a, b)
    for _ in range(2):
        static_out.fill_(float("nan"))
        g.replay()
        eager = torch_tk.gemm(a, b)
        torch.cuda.synchronize()
        assert torch.equal(static_out, eager), "graph replay differs from the eager call"
    assert _rel(static_out, ref) < 1e-2


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_tensor_on_second_gpu_runs_there():
    with torch.cuda.device(0):
        a = torch.randn(300, 200, device="cuda:1", dtype=torch.bfloat16)
        b = torch.randn(200, 100, device="cuda:1", dtype=torch.bfloat16)
        out = torch_tk.gemm(a, b)
        assert out.device == torch.device("cuda:1")
        assert torch.cuda.current_device() == 0  # the device guard restored the caller's device
    assert _rel(out, a.double() @ b.double()) < 1e-2


# Shapes that take each kernel path (csrc/gemm/hopper/plan.h): split-K with the fixed-order
# reduction, swap-AB for few rows, and 2-CTA multicast clusters.
@pytest.mark.parametrize("shape", [(1000, 777, 3000), (16, 4096, 4096), (2048, 4096, 512)],
                         ids=["splitk", "swapab", "cluster"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_bitwise_deterministic(layout, shape):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    if layout[0] == "T":
        a = a.t().contiguous().t()
    if layout[1] == "T":
        b = b.t().contiguous().t()
    outs = [torch_tk.gemm(a, b) for _ in range(5)]
    assert all(torch.equal(outs[0], o) for o in outs[1:])
