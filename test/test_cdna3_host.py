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
