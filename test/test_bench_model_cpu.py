"""benchmarks/bench_model.py's profile helpers, on the CPU: GEMM shapes from the profiler's recorded
input shapes, and the per-model merge of profiled runs (kernel classes, GEMMs by shape)."""
import pytest

from conftest import load_script


def _bench_model():
    return load_script("benchmarks/bench_model.py", "bench_model_under_test")


def test_gemm_mnk_from_recorded_shapes():
    b = _bench_model()
    assert b.gemm_mnk("aten::mm", [[8192, 2048], [2048, 5632]]) == (8192, 5632, 2048)
    assert b.gemm_mnk("tk::gemm", [[2048, 8192], [8192, 5632]]) == (2048, 5632, 8192)
    assert b.gemm_mnk("tk::linear", [[4, 2048, 2048], [5632, 2048], []]) == (8192, 5632, 2048)
    assert b.gemm_mnk("aten::addmm", [[5632], [8192, 2048], [2048, 5632], [], []]) == (8192, 5632, 2048)


def test_merge_profiles_means_and_classes(capsys):
    b = _bench_model()
    ours = {"void tk::hopper::gemm_kernel<x>": (84.0, 14000.0), "nvjet_sm90_tst_256x128": (3.0, 4000.0),
            "cudnn_generated_fort_native_sdpa_sm90_flash_bprop": (4.0, 5000.0), "triton_poi_fused_mul": (10.0, 300.0)}
    run1 = (ours, {(8192, 2048, 2048): (32.0, 3200.0)})
    run2 = (ours, {(8192, 2048, 2048): (32.0, 3000.0)})
    m = b.merge_profiles([run1, run2])
    assert m["classes"] == {"tk gemm": 14000.0, "attention": 5000.0, "vendor gemm": 4000.0,
                            "triton (inductor)": 300.0, "other": 0.0}
    assert m["gemms"] == [["8192x2048x2048", 32.0, 3100.0]]
    stock = b.merge_profiles([({"nvjet_sm90_x": (87.0, 17000.0)}, {(8192, 2048, 2048): (32.0, 2900.0)})])
    b.print_profile({"stock": stock, "tk": m})
    out = capsys.readouterr().out
    assert "8192x2048x2048" in out and "stock/tk 0.935" in out


def test_annotation_spans_are_not_kernel_time():
    b = _bench_model()
    m = b.merge_profiles([({"## Call CompiledFxGraph abc ##": (1.0, 19000.0), "triton_poi_fused_add": (3.0, 120.0)}, {})])
    assert m["classes"]["other"] == 0.0 and m["busy"] == 120.0
    assert m["top"][0][0].startswith("## Call")  # still listed among the longest entries


def test_ceiling_from_a_profile(capsys):
    """The numbers of the 2026-11-28i profile (H200, us per step, annotation spans removed)."""
    b = _bench_model()

    def prof(classes):
        return {"classes": classes, "busy": sum(classes.values()), "top": [], "gemms": []}

    stock = prof({"tk gemm": 0.0, "attention": 6379.0, "vendor gemm": 16723.0, "triton (inductor)": 3500.0, "other": 1231.0})
    tk = prof({"tk gemm": 13209.0, "attention": 6572.0, "vendor gemm": 4039.0, "triton (inductor)": 3520.0, "other": 1165.0})
    c = b.ceiling({"stock": stock, "tk": tk})
    replaced = 16723.0 - 4039.0
    assert c["gemm_ratio"] == pytest.approx(replaced / 13209.0)
    rest_tk, rest_stock = tk["busy"] - 13209.0, stock["busy"] - replaced
    assert c["rest_ratio"] == pytest.approx(rest_tk / rest_stock)
    allowed = stock["busy"] / 1.03
    assert c["gemm_ratio_needed"] == pytest.approx(replaced / (allowed - rest_tk))
    assert 1.06 < c["gemm_ratio_needed_even_rest"] < c["gemm_ratio_needed"] < 1.09  # 1.068, 1.082
    # the patched step reaches the target iff the GEMMs reach the needed ratio
    ours_needed = replaced / c["gemm_ratio_needed"]
    assert stock["busy"] / (rest_tk + ours_needed) == pytest.approx(1.03)
    b.print_profile({"stock": stock, "tk": tk}, {"stock": {"sm_mhz": 1830.0}, "tk": {"sm_mhz": 1816.0}})
    out = capsys.readouterr().out
    att = 6572.0 / 6379.0
    assert f"{att:.3f}" in out and f"{att * 1816.0 / 1830.0:.3f}" in out and "SM MHz while profiled" in out


def test_print_profile_three_models(capsys):
    """benchmarks/boundary_probe.py prints three models: a shape that the tk model's profile lacks (its
    backward GEMMs run inside tk.gemm_pair) gets no ratio instead of a KeyError."""
    b = _bench_model()
    stock = b.merge_profiles([({"nvjet_sm90_x": (2.0, 300.0)}, {(2048, 2048, 8192): (1.0, 100.0), (8192, 2048, 2048): (1.0, 200.0)})])
    boundary = b.merge_profiles([({"nvjet_sm90_x": (2.0, 310.0)}, {(2048, 2048, 8192): (1.0, 105.0), (8192, 2048, 2048): (1.0, 205.0)})])
    tk = b.merge_profiles([({"void tk::hopper::gemm_kernel<x>": (2.0, 320.0)}, {(8192, 2048, 2048): (1.0, 210.0)})])
    b.print_profile({"stock": stock, "boundary": boundary, "tk": tk})
    out = capsys.readouterr().out
    assert "2048x2048x8192" in out and "boundary" in out and "stock/tk nan" in out


def test_time_rounds_rotates_order_and_drops_grads(monkeypatch):
    """bench_model's (and boundary_probe's) round loop on the CPU: each model leads equally often
    (two models alternate, as before the helper), each round runs `steps` steps inside the sampler's
    window of that model, and grads are dropped between rounds."""
    import contextlib

    import torch
    from torch import nn

    b = _bench_model()
    clock = [0.0]

    class FakeEvent:  # CUDA events on a counter: each step advances it by 1 ms
        def __init__(self, enable_timing=True):
            self.t = None

        def record(self):
            self.t = clock[0]

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return other.t - self.t

    monkeypatch.setattr(b.torch.cuda, "Event", FakeEvent)
    order, windows = [], []

    class Sampler:
        @contextlib.contextmanager
        def window(self, name):
            windows.append(name)
            yield

    models = {k: nn.Linear(3, 1) for k in ("stock", "boundary", "tk")}

    def step(m):
        order.append(next(k for k, v in models.items() if v is m))
        clock[0] += 1.0
        loss = m(torch.ones(2, 3)).sum()
        loss.backward()
        return loss

    losses = b.warm_up(models, step)
    assert set(losses) == set(models) and all(m.weight.grad is None for m in models.values())
    order.clear()
    ms = b.time_rounds(models, step, rounds=3, steps=2, sampler=Sampler())
    assert windows == ["stock", "boundary", "tk", "boundary", "tk", "stock", "tk", "stock", "boundary"]
    assert order == [w for w in windows for _ in range(2)]
    assert ms == {k: [1.0, 1.0, 1.0] for k in models}
    assert all(m.weight.grad is None for m in models.values())
    windows.clear()
    b.time_rounds({k: models[k] for k in ("stock", "tk")}, step, rounds=2, steps=1, sampler=Sampler())
    assert windows == ["stock", "tk", "tk", "stock"]


def test_fusable_pointwise_and_its_bound():
    """The SwiGLU / RoPE kernels of the patched step (names as in the 2026-12-06c H100 profile) are summed
    over every kernel, not only the longest; ratio_if_fused is stock's kernel time over the patched one
    without them."""
    b = _bench_model()
    tk = b.merge_profiles([({"void tk::hopper::gemm_kernel<x>": (84.0, 13644.0),
                             "triton_poi_fused_mul_silu_silu_backward_view_2": (4.0, 593.0),
                             "triton_poi_fused_mul_silu_6": (4.0, 355.0),
                             "triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3": (4.0, 271.0),
                             "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_8": (6.0, 260.0),  # RMSNorm: neither
                             "silu_in_a_vendor_kernel": (1.0, 50.0)}, {})])  # not an Inductor kernel: neither
    assert tk["fusable"] == {"swiglu": 948.0, "rope": 271.0}
    stock = b.merge_profiles([({"nvjet_sm90_x": (87.0, 13277.0), "triton_poi_fused_mul_silu_6": (4.0, 347.0)}, {})])
    c = b.ceiling({"stock": stock, "tk": tk})
    assert c["fusable_us"] == {"swiglu": 948.0, "rope": 271.0}
    assert c["ratio_if_fused"] == pytest.approx(stock["busy"] / (tk["busy"] - 1219.0))
    # a fuse_mlp model's SwiGLU backward (torch_tk/swiglu.py swiglu_grads; H100 2026-12-06d name)
    fused = b.merge_profiles([({"triton_poi_fused__to_copy_add_mul_rsub_select_sigmoid_view_0": (4.0, 600.0)}, {})])
    assert fused["fusable"] == {"swiglu": 600.0, "rope": 0.0}
