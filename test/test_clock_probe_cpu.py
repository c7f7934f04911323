"""benchmarks/clock_probe.py's arithmetic on the CPU (the probe itself needs a GPU)."""
from conftest import load_script


def _mod():
    return load_script("benchmarks/clock_probe.py", "clock_probe_under_test")


def test_clock_mhz_is_cycles_per_microsecond():
    m = _mod()
    assert m.clock_mhz(50_000, 76_000) == 1520.0  # 76k cycles in 50 us: 1.52 GHz
    assert m.clock_mhz(0, 100) is None


def test_percentiles_median_p10_p90():
    m = _mod()
    med, p10, p90 = m.percentiles([float(x) for x in range(100, 0, -1)])
    assert (med, p10, p90) == (50.5, 11.0, 91.0)


def test_probe_kernel_compiles_to_ptx_reading_both_timers():
    import pytest

    triton = pytest.importorskip("triton")
    try:
        from triton.backends.compiler import GPUTarget
    except ImportError:
        pytest.skip("this Triton cannot compile for a named target")
    k = _mod()._probe_kernel()
    try:
        src = triton.compiler.ASTSource(fn=k, signature={"out_ptr": "*i64", "spin_ns": "i64"}, constexprs={})
    except TypeError:
        pytest.skip(f"Triton {triton.__version__}: another ASTSource signature")
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert "%globaltimer" in ptx and "%clock64" in ptx
