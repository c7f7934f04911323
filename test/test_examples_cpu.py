"""examples/train_fsdp_tp.py on 2 CPU ranks over gloo (torch.distributed.run subprocesses).

Configurations: tp=1 (FSDP2 over 2 ranks), tp=2 (TP only), tp=1 with --patch-first; each with
--compare (stock vs patched on the same seed and batches; the example exits non-zero when the
loss curves differ by more than 1e-4 abs in fp32). Also: the 2-rank FSDP2 patched losses match a
single-process stock run of the same seed and batches within 1e-4.
"""
from pathlib import Path

import pytest
from dist_helpers import memo, run_example, spawn

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_fsdp_tp.py"
STEPS = 5
TIMEOUT_S = 90
TOL = 1e-4


def _skip_reason():
    try:
        import torch.distributed as dist
    except ImportError:
        return "torch.distributed cannot be imported"
    if not dist.is_available():
        return "torch.distributed is not available"
    if not dist.is_gloo_available():
        return "the gloo backend is not available"
    try:
        import transformers  # noqa: F401
    except ImportError:
        return "transformers is not installed"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def _run(args, nproc):
    return run_example(EXAMPLE, ["--device", "cpu", "--steps", str(STEPS), *args], nproc,
                       {"OMP_NUM_THREADS": "1"}, TIMEOUT_S)  # no oversubscription of small CI machines


def _cached(key, args, nproc):
    return memo(("cpu", key), _run, args, nproc)


CONFIGS = {
    "fsdp2_tp1": ["--compare", "--tp", "1"],
    "tp2": ["--compare", "--tp", "2"],
    "fsdp2_patch_first": ["--compare", "--tp", "1", "--patch-first"],
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compare_stock_vs_patched(name):
    rc, out, s = _cached(name, CONFIGS[name], 2)
    assert rc == 0, f"rc={rc}\n{out[-4000:]}"
    assert s is not None, f"no JSON line printed\n{out[-4000:]}"
    assert s["world"] == 2 and s["tp"] == int(CONFIGS[name][2])
    assert s["ok"] is True
    assert len(s["losses"]["stock"]) == len(s["losses"]["patched"]) == STEPS
    assert s["max_abs_loss_diff"] <= TOL, s
    assert "tk calls {'cpu': " in out and "'cpu': 0," not in out, out[-2000:]
    assert "max abs loss diff" in out


def test_fsdp2_patched_matches_single_process_stock():
    rc, out, s2 = _cached("fsdp2_tp1", CONFIGS["fsdp2_tp1"], 2)
    assert rc == 0 and s2 is not None, out[-4000:]
    rc1, out1, s1 = _cached("single_stock", ["--stock"], 1)
    assert rc1 == 0 and s1 is not None, out1[-4000:]
    assert s1["world"] == 1
    single, fsdp = s1["losses"]["stock"], s2["losses"]["patched"]
    assert len(single) == len(fsdp) == STEPS
    diff = max(abs(a - b) for a, b in zip(single, fsdp))
    assert diff <= TOL, f"single-process stock {single} vs 2-rank FSDP2 patched {fsdp}: max diff {diff:.3e}"


def test_2d_mesh_fsdp2_x_tp_on_4_ranks():
    """dp=2 x tp=2: FSDP2 over the "dp" mesh dim and TP over "tp" at once (4 gloo ranks)."""
    rc, out, s = _cached("fsdp2_tp2_4ranks", ["--compare", "--tp", "2"], 4)
    assert rc == 0, f"rc={rc}\n{out[-4000:]}"
    assert s is not None and s["ok"] is True, out[-4000:]
    assert s["world"] == 4 and s["dp"] == 2 and s["tp"] == 2
    assert s["max_abs_loss_diff"] <= TOL, s
    assert "'cpu': 0," not in out, out[-2000:]  # the patched run used the tk ops on the local shards


def test_fsdp2_gradients_match_single_process_cpu(tmp_path):
    """The 2-rank FSDP2 gradient check of test_distributed_gpu.py, on gloo + the CPU reference (fp32)."""
    from test_distributed_gpu import fsdp_grad_body

    for res in spawn(fsdp_grad_body, 2, tmp_path, "gloo", "cpu", timeout=TIMEOUT_S):
        assert res["ok"], res.get("err")
        assert res["cpu_calls"] > 0 and res["n_params"] > 10
        assert abs(res["loss_fsdp"] - res["loss_single"]) <= TOL, res
        assert res["max_grad_rel_err"] <= 1e-4, res
