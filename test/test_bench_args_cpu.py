"""benchmarks/bench_gemm.py's L2-state option (--l2 / TK_BENCH_L2), on the CPU: the default, the
environment default the A/B scripts pass on, and a clear error for anything else."""
import pytest

from conftest import load_script


def _bench_gemm():
    return load_script("benchmarks/bench_gemm.py", "bench_gemm_under_test")


def test_l2_default_is_the_do_bench_flush(monkeypatch):
    monkeypatch.delenv("TK_BENCH_L2", raising=False)
    assert _bench_gemm().parse_args([]).l2 == "dirty"


def test_l2_flag_and_environment(monkeypatch):
    monkeypatch.setenv("TK_BENCH_L2", "clean")
    b = _bench_gemm()
    assert b.parse_args([]).l2 == "clean"
    assert b.parse_args(["--l2", "dirty"]).l2 == "dirty"  # the flag wins over the environment
    assert b.parse_args(["--l2", "warm"]).l2 == "warm"


def test_l2_bad_value_names_the_option(monkeypatch, capsys):
    monkeypatch.setenv("TK_BENCH_L2", "hot")
    with pytest.raises(SystemExit):
        _bench_gemm().parse_args([])
    assert "TK_BENCH_L2" in capsys.readouterr().err
    monkeypatch.delenv("TK_BENCH_L2")
    with pytest.raises(SystemExit):
        _bench_gemm().parse_args(["--l2", "hot"])


def test_geomeans_report_triton_only_where_timed():
    b = _bench_gemm()
    recs = [
        {"suite": "large", "ratio_ours_over_torch": 1.0, "ratio_ours_over_triton": 1.21},
        {"suite": "large", "ratio_ours_over_torch": 0.81, "ratio_ours_over_triton": 0.9},
        {"suite": "skinny", "ratio_ours_over_torch": 1.1},
    ]
    g = b.geomeans(recs)
    assert g["large"]["geomean"] == pytest.approx(0.9)
    assert g["large"]["triton_geomean"] == pytest.approx((1.21 * 0.9) ** 0.5)
    assert g["large"]["triton_min"] == 0.9 and g["large"]["triton_n"] == 2
    assert "triton_geomean" not in g["skinny"]


def test_layouts_default_and_filter():
    b = _bench_gemm()
    assert b.parse_args([]).layouts is None  # suites keep every layout unless asked
    assert b.parse_args(["--layouts", "nt, TN"]).layouts == ["NT", "TN"]


def test_layouts_bad_value_names_the_option(capsys):
    with pytest.raises(SystemExit):
        _bench_gemm().parse_args(["--layouts", "NT,XY"])
    assert "--layouts" in capsys.readouterr().err


def test_printed_columns_keep_the_positions_the_ab_scripts_read():
    # scripts/ab_knob.sh, ab_build.sh, ab_session.sh: awk $8 = ours/torch, python p[8] = ours ms
    names = [name for name, _ in _bench_gemm().COLS]
    assert names[0] == "suite" and names[7] == "ours/torch" and names[8] == "ours ms"


def test_l2_flush_rejects_unknown_states_by_name():
    # The shared flush (benchmarks/l2_state.py) checks the state before allocating anything.
    l2 = load_script("benchmarks/l2_state.py", "l2_state_under_test")
    for bad in ("warm", "hot", ""):
        with pytest.raises(ValueError, match="state"):
            l2.l2_flush(bad, device="cpu")
    assert callable(l2.l2_flush("dirty", device="cpu"))


def test_l2_raster_sim_lru_model():
    """scripts/l2_raster_sim.py: with room for everything each box is read once; with no room every
    wave re-reads its boxes; the orders are permutations of the tiles."""
    sim = load_script("scripts/l2_raster_sim.py", "l2_raster_sim_under_test")
    import torch_tk

    order = sim.row_bands(4, 3, 2, lambda i, tm, tn, g: tuple(torch_tk._C.grouped_tile(i, tm, tn, g)))
    assert sorted(order) == [(m, n) for m in range(4) for n in range(3)]
    assert sorted(sim.column_bands(4, 3, 2)) == sorted(order)
    box_mb = (128 + 256) * 64 * 2 / 1e6  # one A and one B box
    unique = (4 * 128 * 64 * 2 + 3 * 256 * 64 * 2) * 5 / 1e6  # 4 A and 3 B panels of 5 k tiles
    assert abs(sim.dram_read_mb(order, 5, 1024) - unique) < 1e-9
    # two waves of 6 units, an L2 of one box: every access misses
    assert abs(sim.dram_read_mb(order, 5, 0.01, sms=6) - 12 * 5 * box_mb) < 1e-9


def test_round_time_is_a_round_not_an_average():
    b = _bench_gemm()
    assert b.round_time([0.034, 0.169]) == 0.034  # 2 rounds: one slow round does not move the case
    assert b.round_time([0.30, 0.10, 0.20]) == 0.20  # odd: the median
    assert b.round_time([4.0, 1.0, 3.0, 2.0]) == 2.0  # even: the lower middle round
