"""Host proofs of the CDNA3 (gfx942) GEMM backend (no AMD GPU needed).

test/cdna3_host/host_checks.cpp is compiled once per session with g++ against csrc/ and each
case runs as its own test; the ISA gate (scripts/cdna3_gate.py) runs when clang++-19 exists.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "test", "cdna3_host", "host_checks.cpp")
GATE = os.path.join(ROOT, "scripts", "cdna3_gate.py")
CASES = ["fragments", "swizzle", "banks", "copy_cover", "raster", "model", "pingpong"]


@pytest.fixture(scope="session")
def host_bin(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    exe = str(tmp_path_factory.mktemp("cdna3_host") / "host_checks")
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Werror", "-I", os.path.join(ROOT, "csrc"), SRC, "-o", exe],
                   check=True)
    return exe


@pytest.mark.parametrize("case", CASES)
def test_host_case(host_bin, case):
    r = subprocess.run([host_bin, case], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"PASS {case}" in r.stdout


def _gate_module():
    spec = importlib.util.spec_from_file_location("cdna3_gate", GATE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gate_lint_catches_missing_wait():
    gate = _gate_module()
    bad = ["\tds_read_b128 v[0:3], v10", "\tv_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]"]
    good = ["\tds_read_b128 v[0:3], v10", "\ts_waitcnt lgkmcnt(0)", "\tv_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]"]
    partial = ["\tds_read_b128 v[0:3], v10", "\tds_read_b128 v[4:7], v11", "\ts_waitcnt lgkmcnt(1)",
               "\tv_add_u32 v20, v0, v1", "\tv_add_u32 v21, v4, v5"]
    barrier = ["\tds_write_b128 v1, v[0:3]", "\ts_barrier"]
    assert gate.lint_waits(bad)
    assert not gate.lint_waits(good)
    errs = gate.lint_waits(partial)
    assert len(errs) == 1 and "v_add_u32 v21" in errs[0]
    assert gate.lint_waits(barrier)
    assert gate.loop_mfma_counts([".LBB0_1:", "\tv_mfma_x", "\tv_mfma_x", "\ts_cbranch_scc1 .LBB0_1"]) == [2]


def test_gate():
    if shutil.which("clang++-19") is None:
        pytest.skip("clang++-19 not installed")
    r = subprocess.run(["python3", GATE, "--require"], capture_output=True, text=True, timeout=600)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr


def test_gate_ping_pong_shape():
    gate = _gate_module()
    mm = ["\ts_setprio 1"] + ["\tv_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]"] * 2 + ["\ts_setprio 0"]
    body = ["\ts_barrier", ".LBB0_1:", "\tds_write_b128 v1, v[0:3]", "\ts_barrier", "\ts_barrier",
            "\tds_read_b128 v[4:7], v2", "\ts_barrier", *mm, "\ts_barrier", "\ts_cbranch_scc1 .LBB0_1", "\ts_barrier"]
    pp = gate.ping_pong_shape(body)
    assert pp == {"barriers": 4, "mfma_groups": [2], "prio_ok": True, "outside": 2}
    no_prio = [l for l in body if "s_setprio" not in l]
    assert gate.ping_pong_shape(no_prio)["prio_ok"] is False


# ----------------------------------------------------------------------------- ROCm build path


def _setup_module():
    spec = importlib.util.spec_from_file_location("tk_setup", os.path.join(ROOT, "setup.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # __name__ != "__main__": defines backend_plan, runs no build
    return mod


def test_setup_backend_plan_rocm_builds_cdna3_only():
    s = _setup_module()
    p = s.backend_plan(None, "6.4.0", None, "/opt/rocm", {}, "-std=c++17")
    assert p["backend"] == "cdna3" and p["env"] == {"PYTORCH_ROCM_ARCH": "gfx942"}
    assert p["define"] == [("TK_WITH_HIP", "1")]
    assert all(src.startswith("csrc/gemm/cdna3/") for src in p["sources"])
    assert any(src.endswith(".hip") for src in p["sources"]) and not any("hopper" in src for src in p["sources"])
    for src in p["sources"]:
        assert os.path.exists(os.path.join(ROOT, src)), src
    assert s.backend_plan(None, "6.4.0", None, "/opt/rocm", {"PYTORCH_ROCM_ARCH": "gfx942;gfx90a"},
                          "-std=c++17")["env"]["PYTORCH_ROCM_ARCH"] == "gfx942;gfx90a"
    none = s.backend_plan(None, "6.4.0", None, None, {}, "-std=c++17")  # ROCm torch, no hipcc: visible
    assert none["backend"] is None and "CPU reference only" in none["message"]


def test_setup_backend_plan_cuda_and_cpu():
    s = _setup_module()
    p = s.backend_plan("13.0", None, "/usr/local/cuda", None, {}, "-std=c++17")
    assert p["backend"] == "hopper" and ("TK_WITH_CUDA", "1") in p["define"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in p["device_flags"]
    assert not any("cdna3" in src for src in p["sources"]) and len(p["sources"]) >= 11
    for src in p["sources"]:
        assert os.path.exists(os.path.join(ROOT, src)), src
    assert s.backend_plan(None, None, None, None, {}, "-std=c++17")["backend"] is None


@pytest.mark.parametrize("src", ["csrc/gemm/cdna3/dispatch.cpp", "csrc/module.cpp", "csrc/counters.cpp"])
def test_rocm_host_sources_compile(src):
    """The ROCm build's host C++ (TK_WITH_HIP) against the installed torch headers: it uses only
    backend-neutral c10/ATen APIs, so the CUDA/CPU torch headers here check it."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    import sysconfig

    from torch.utils import cpp_extension

    std = _setup_module()._cxx_std()
    inc = [f"-I{p}" for p in cpp_extension.include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    try:
        import pybind11

        inc.append(f"-I{pybind11.get_include()}")
    except ImportError:
        pass
    r = subprocess.run(["g++", std, "-fsyntax-only", "-DTK_WITH_HIP", "-I", os.path.join(ROOT, "csrc"), *inc,
                        os.path.join(ROOT, src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def test_hipify_leaves_rocm_sources_intact(tmp_path):
    """ROCm torch's CUDAExtension runs hipify over every source: for ours it may only rename
    includes (to the hipified copies), touch comments and the __CUDACC__ test; the ops must stay
    registered under the CUDA dispatch key (ROCm torch's key for AMD GPUs)."""
    try:
        from torch.utils.hipify import hipify_python
    except ImportError:
        pytest.skip("torch.utils.hipify not available")
    import difflib

    proj = tmp_path / "proj"
    shutil.copytree(os.path.join(ROOT, "csrc"), proj / "csrc")
    s = _setup_module()
    plan = s.backend_plan(None, "6.4.0", None, "/opt/rocm", {}, "-std=c++17")
    srcs = ["csrc/ops.cpp", "csrc/counters.cpp", "csrc/autocast.cpp", "csrc/module.cpp", *plan["sources"]]
    res = hipify_python.hipify(project_directory=str(proj), output_directory=str(proj),
                               header_include_dirs=[str(proj / "csrc")], includes=[str(proj / "*")],
                               extra_files=[str(proj / p) for p in srcs], show_detailed=False,
                               is_pytorch_extension=True, hipify_extra_files_only=True)
    changed = 0
    for orig, r in res.items():
        hip = getattr(r, "hipified_path", None)
        if not hip or hip == orig:
            continue
        changed += 1
        a = open(orig).read().splitlines()
        b = [l for l in open(hip).read().splitlines() if "automatically generated by hipify" not in l]
        for line in difflib.unified_diff(a, b, lineterm="", n=0):
            if line.startswith(("---", "+++", "@@")):
                continue
            body = line[1:].strip()
            assert body.startswith(("#include", "//")) or "__CUDACC__" in body or "__HIPCC__" in body, \
                f"hipify changed code in {os.path.relpath(orig, proj)}: {line}"
    assert changed >= 1
    dispatch = res[str(proj / "csrc/gemm/cdna3/dispatch.cpp")].hipified_path
    assert "TORCH_LIBRARY_IMPL(tk, CUDA, m)" in open(dispatch).read()
