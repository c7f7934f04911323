"""scripts/ab_summary.py on synthetic bench_gemm logs: medians per variant, failed runs reported."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _log(path, rows):
    # bench_gemm's table: label, shape, layout, dtype, ours TF/s, torch TF/s, triton, ours/torch, ours ms, ...
    path.write_text("".join(f"custom {s} NT bf16 1 1 - {r} {t} - -\n" for s, r, t in rows))


def test_medians_and_failed_variant(tmp_path):
    _log(tmp_path / "ab___1.log", [("64x64x64", "0.900", "0.0200")])
    _log(tmp_path / "ab___2.log", [("64x64x64", "0.950", "0.0190")])
    _log(tmp_path / "ab___3.log", [("64x64x64", "0.910", "0.0210")])
    _log(tmp_path / "ab_TK_X_1_1.log", [("64x64x64", "-", "-")])
    out = subprocess.run([sys.executable, str(ROOT / "scripts/ab_summary.py"), str(tmp_path), "custom", "-", "TK_X=1"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "64x64x64:NT -: 0.0200 ms (0.910x) | TK_X=1: failed"
