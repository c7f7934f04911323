"""benchmarks/bench_model.py's profile helpers, on the CPU: GEMM shapes from the profiler's recorded
input shapes, and the per-model merge of profiled runs (kernel classes, GEMMs by shape)."""
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
