"""Shared by the distributed tests: spawning ranks that report JSON, and running the example.

spawn(body, world, tmp_path, backend, *args, env=...): starts `world` processes (multiprocessing
spawn) with `env` added to their environment; rank r initialises a process group (`backend`: "gloo" or "nccl", file:// rendezvous; NCCL ranks
take cuda:r), runs body(rank, *args) -> dict, and writes it as rank<r>.json; an exception is
reported as {"ok": False, "err": traceback}. Returns the per-rank dicts.
run_example(script, args, nproc, env_extra, timeout): the example under torch.distributed.run
(nproc > 1) or plain python; returns (returncode, stdout + stderr, the last "JSON {...}" line).
"""
import json
import os
import socket
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rank_main(rank, world, init_file, out_dir, backend, body, args, env):
    os.environ.update(env)  # before torch.distributed initialises anything
    import torch
    import torch.distributed as dist

    res = {}
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        else:
            torch.set_num_threads(1)
        dist.init_process_group(backend, init_method="file://" + init_file, rank=rank, world_size=world)
        res = body(rank, *args)
    except Exception:
        res = {"ok": False, "err": traceback.format_exc()}
    finally:
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(res, f)
        try:
            dist.destroy_process_group()
        except Exception:
            pass


def spawn(body, world, tmp_path, backend, *args, timeout=300, env=None):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    init, out = str(Path(tmp_path) / "init"), str(tmp_path)
    procs = [ctx.Process(target=_rank_main, args=(r, world, init, out, backend, body, args, env or {}))
             for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        if p.is_alive():
            p.kill()
            p.join()
    results = []
    for r in range(world):
        f = Path(tmp_path) / f"rank{r}.json"
        assert f.exists(), f"rank {r} wrote no results (exit code {procs[r].exitcode})"
        results.append(json.loads(f.read_text()))
    return results


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_example(script, args, nproc, env_extra=None, timeout=300):
    env = dict(os.environ, **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
               "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(script)]
    else:
        cmd = [sys.executable, str(script)]
    cmd += list(args)
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    js = [ln[len("JSON "):] for ln in p.stdout.splitlines() if ln.startswith("JSON ")]
    return p.returncode, p.stdout + p.stderr, (json.loads(js[-1]) if js else None)


_memo = {}


def memo(key, fn, *args):
    """fn(*args), computed once per key per test session (the example runs are shared by tests)."""
    if key not in _memo:
        _memo[key] = fn(*args)
    return _memo[key]
