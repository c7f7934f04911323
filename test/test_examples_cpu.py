"""examples/train_fsdp_tp.py on 2 CPU ranks over gloo (torch.distributed.run subprocesses).

Configurations: tp=1 (FSDP2 over 2 ranks), tp=2 (TP only), tp=1 with --patch-first; each with
--compare (stock vs patched on the same seed and batches; the example exits non-zero when the
loss curves differ by more than 1e-4 abs in fp32). Also: the 2-rank FSDP2 patched losses match a
single-process stock run of the same seed and batches within 1e-4.
"""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

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


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["OMP_NUM_THREADS"] = "1"  # no oversubscription of small CI machines
    return env


def _run(args, nproc):
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
               "--master-addr", "127.0.0.1", "--master-port", str(_free_port()), str(EXAMPLE)]
    else:
        cmd = [sys.executable, str(EXAMPLE)]
    cmd += ["--device", "cpu", "--steps", str(STEPS), *args]
    p = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    out = p.stdout + p.stderr
    js = [ln[len("JSON "):] for ln in p.stdout.splitlines() if ln.startswith("JSON ")]
    summary = json.loads(js[-1]) if js else None
    return p.returncode, out, summary


_cache = {}


def _cached(key, args, nproc):
    if key not in _cache:
        _cache[key] = _run(args, nproc)
    return _cache[key]


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
    import multiprocessing as mp

    from test_distributed_gpu import _fsdp_grad_worker

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_fsdp_grad_worker, args=(r, str(tmp_path / "init"), str(tmp_path), "cpu"))
             for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(TIMEOUT_S)
        if p.is_alive():
            p.kill()
    for r in range(2):
        res = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert res["ok"], res.get("err")
        assert res["cpu_calls"] > 0 and res["n_params"] > 10
        assert abs(res["loss_fsdp"] - res["loss_single"]) <= TOL, res
        assert res["max_grad_rel_err"] <= 1e-4, res
