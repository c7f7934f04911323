"""DTensor sharding rules of the tk ops (torch_tk/distributed.py) on 2 CPU ranks over gloo.

One module-scoped fixture spawns 2 processes once; each rank runs every check below, writes
{check: {"ok": bool, "err": str, ...}} as JSON, and the tests here assert per check on both ranks.
Covered: every sharding strategy of tk.gemm / tk.addmm / tk.linear / tk.gemm_pair / tk.linear_backward (DTensor inputs from
distribute_tensor, compared with a float64 reference of the full tensors, including Partial
outputs reduced by redistribute -> Replicate), and a ColwiseParallel/RowwiseParallel MLP of
patched layers (fwd + bwd vs a single-process stock model, CommDebugMode counts equal to stock TP).
"""
import traceback

import pytest
import torch
from dist_helpers import spawn

WORLD = 2
TIMEOUT_S = 150


def _skip_reason():
    import torch.distributed as dist

    if not dist.is_available():
        return "torch.distributed is not available"
    if not dist.is_gloo_available():
        return "the gloo backend is not available"
    import torch_tk

    if not torch_tk._distributed.sharding_rules_registered():
        return "tk DTensor sharding rules not registered: %s" % torch_tk._distributed.unavailable_reason()
    return None


# ----------------------------------------------------------------------------------------------
# Rank side
# ----------------------------------------------------------------------------------------------
def _close(out, ref, tol):
    out = out.detach().to(torch.float64)
    ref = ref.detach().to(torch.float64)
    assert out.shape == ref.shape, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    err = ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    assert err <= tol, f"relative error {err:.3e} > {tol:.1e}"


def _check_dt(out, expect_placement, ref, mesh, tol=1e-5):
    from torch.distributed.tensor import DTensor, Partial, Replicate

    assert isinstance(out, DTensor), f"output is {type(out).__name__}, not DTensor"
    assert tuple(out.placements) == (expect_placement,), f"placements {out.placements} != ({expect_placement},)"
    _close(out.full_tensor(), ref, tol)
    if isinstance(expect_placement, Partial):  # the all-reduce path: Partial -> Replicate
        rep = out.redistribute(mesh, [Replicate()])
        assert tuple(rep.placements) == (Replicate(),)
        _close(rep.to_local(), ref, tol)


def _ops_checks(mesh):
    import torch_tk
    from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor

    R, P = Replicate(), Partial()
    res = {}

    def run(name, fn):
        before = torch_tk.kernel_counters()["cpu"]
        try:
            fn()
            grew = torch_tk.kernel_counters()["cpu"] - before
            assert grew >= 1, "the tk CPU kernel did not run on the local shards"
            res[name] = {"ok": True}
        except Exception:
            res[name] = {"ok": False, "err": traceback.format_exc()}

    g = torch.Generator().manual_seed(1234)  # same data on every rank
    M, K, N = 8, 12, 6
    a, b = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
    ref_mm = a.double() @ b.double()
    mm_table = {"R": (R, R, R), "S0": (Shard(0), R, Shard(0)), "S1": (R, Shard(1), Shard(1)), "P": (Shard(1), Shard(0), P)}

    for key, (pa, pb, po) in mm_table.items():
        def f(pa=pa, pb=pb, po=po):
            da, db = distribute_tensor(a, mesh, [pa]), distribute_tensor(b, mesh, [pb])
            _check_dt(torch.ops.tk.gemm(da, db), po, ref_mm, mesh)
        run(f"gemm_{key}", f)

    def gemm_bf16():
        ab, bb = a.bfloat16(), b.bfloat16()
        ref = ab.double() @ bb.double()
        for pa, pb, po in mm_table.values():
            da, db = distribute_tensor(ab, mesh, [pa]), distribute_tensor(bb, mesh, [pb])
            out = torch.ops.tk.gemm(da, db, out_dtype=torch.float32)
            assert out.dtype == torch.float32
            _check_dt(out, po, ref, mesh, tol=1e-2)
    run("gemm_bf16_out_fp32", gemm_bf16)

    # gemm_pair: the two products placed independently (each pair of mm_table entries)
    a1, b1 = torch.randn(K, M, generator=g), torch.randn(M, N + 2, generator=g)
    ref_mm1 = a1.double() @ b1.double()
    for k0, (pa0, pb0, po0) in mm_table.items():
        for k1, (pa1, pb1, po1) in mm_table.items():
            def f(pa0=pa0, pb0=pb0, po0=po0, pa1=pa1, pb1=pb1, po1=po1):
                ins = [distribute_tensor(t, mesh, [p]) for t, p in ((a, pa0), (b, pb0), (a1, pa1), (b1, pb1))]
                c0, c1 = torch.ops.tk.gemm_pair(*ins)
                _check_dt(c0, po0, ref_mm, mesh)
                _check_dt(c1, po1, ref_mm1, mesh)
            run(f"pair_{k0}_{k1}", f)

    # linear_backward(g, w, x) -> (g w, g^T x): tokens, column-parallel and row-parallel placements
    gl, wl, xl = torch.randn(M, N, generator=g), torch.randn(N, K, generator=g), torch.randn(M, K, generator=g)
    ref_gi, ref_gw = gl.double() @ wl.double(), gl.double().t() @ xl.double()
    lb_table = {"R": ((R, R, R), (R, R)), "S0": ((Shard(0), R, Shard(0)), (Shard(0), P)),
                "col": ((Shard(1), Shard(0), R), (P, Shard(0))), "row": ((R, Shard(1), Shard(1)), (Shard(1), Shard(1)))}
    for key, (pins, (pgi, pgw)) in lb_table.items():
        def f(pins=pins, pgi=pgi, pgw=pgw):
            ins = [distribute_tensor(t, mesh, [p]) for t, p in zip((gl, wl, xl), pins)]
            gi, gw = torch.ops.tk.linear_backward(*ins)
            _check_dt(gi, pgi, ref_gi, mesh)
            _check_dt(gw, pgw, ref_gw, mesh)
        run(f"lb_{key}", f)

    beta, alpha = 0.5, 2.0
    selfs = {"vec": torch.randn(N, generator=g), "full": torch.randn(M, N, generator=g),
             "row": torch.randn(1, N, generator=g), "col": torch.randn(M, 1, generator=g)}
    for skey, s in selfs.items():
        ref = beta * s.double() + alpha * ref_mm
        for key, (pa, pb, po) in mm_table.items():
            # self given Replicate (DTensor redistributes it as the rule asks) and, where the rule
            # shards it, given already in that placement
            s_placements = [R]
            if key == "S0" and skey in ("full", "col"):
                s_placements.append(Shard(0))
            if key == "S1" and skey in ("vec",):
                s_placements.append(Shard(0))
            if key == "S1" and skey in ("full", "row"):
                s_placements.append(Shard(1))

            def f(pa=pa, pb=pb, po=po, s=s, ref=ref, s_placements=s_placements):
                for ps in s_placements:
                    ds = distribute_tensor(s, mesh, [ps])
                    da, db = distribute_tensor(a, mesh, [pa]), distribute_tensor(b, mesh, [pb])
                    _check_dt(torch.ops.tk.addmm(ds, da, db, beta=beta, alpha=alpha), po, ref, mesh)
            run(f"addmm_{skey}_{key}", f)

    w, bias = torch.randn(N, K, generator=g), torch.randn(N, generator=g)
    for xkey, x in {"2d": torch.randn(M, K, generator=g), "3d": torch.randn(2, 4, K, generator=g)}.items():
        nd = x.dim()
        table = {"R": (R, R, R, R), "S_last": (R, Shard(0), Shard(0), Shard(nd - 1)),
                 "P": (Shard(nd - 1), Shard(1), R, P)}  # replicated bias, added once overall
        for d in range(nd - 1):
            table[f"S{d}"] = (Shard(d), R, R, Shard(d))
        for has_bias in (True, False):
            ref = (x.double() @ w.double().t() + (bias.double() if has_bias else 0))
            for key, (px, pw, pbias, po) in table.items():
                def f(px=px, pw=pw, pbias=pbias, po=po, has_bias=has_bias, ref=ref, x=x):
                    dx, dw = distribute_tensor(x, mesh, [px]), distribute_tensor(w, mesh, [pw])
                    db = distribute_tensor(bias, mesh, [pbias]) if has_bias else None
                    _check_dt(torch.ops.tk.linear(dx, dw, db), po, ref, mesh)
                    if has_bias and key == "S_last":  # a replicated bias is sharded to match
                        _check_dt(torch.ops.tk.linear(dx, dw, distribute_tensor(bias, mesh, [R])), po, ref, mesh)
                run(f"linear_{xkey}_{'bias' if has_bias else 'nobias'}_{key}", f)
    return res


def _counts(cm):
    return {str(k): int(v) for k, v in cm.get_comm_counts().items() if v}


def _tp_check(mesh):
    import copy

    import torch_tk
    from torch import nn
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16)).double()
    plan = {"0": ColwiseParallel(), "2": RowwiseParallel()}
    stock = parallelize_module(copy.deepcopy(ref), mesh, plan)
    patched = copy.deepcopy(ref)
    torch_tk.patch_linear(patched)
    assert type(patched[0]) is torch_tk.TKLinear and type(patched[2]) is torch_tk.TKLinear
    patched = parallelize_module(patched, mesh, plan)

    g = torch.Generator().manual_seed(7)
    x0 = torch.randn(3, 5, 16, generator=g, dtype=torch.float64)
    gy = torch.randn(3, 5, 16, generator=g, dtype=torch.float64)

    xr = x0.clone().requires_grad_()
    yr = ref(xr)
    (yr * gy).sum().backward()

    out = {}
    for name, model in (("stock", stock), ("patched", patched)):
        torch_tk.reset_kernel_counters()
        x = x0.clone().requires_grad_()
        with CommDebugMode() as cm_f:
            y = model(x)
        with CommDebugMode() as cm_b:
            (y * gy).sum().backward()
        _close(y, yr, 1e-12)
        _close(x.grad, xr.grad, 1e-12)
        for (pn, p), (_, pr) in zip(model.named_parameters(), ref.named_parameters()):
            gfull = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
            try:
                _close(gfull, pr.grad, 1e-12)
            except AssertionError as e:
                raise AssertionError(f"{name} grad of {pn}: {e}")
        out[name] = {"fwd": _counts(cm_f), "bwd": _counts(cm_b), "tk_cpu_calls": torch_tk.kernel_counters()["cpu"]}
    return out


def _rank_body(rank):
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (WORLD,))
    res = dict(_ops_checks(mesh))
    try:
        res["tp_mlp"] = {"ok": True, **_tp_check(mesh)}
    except Exception:
        res["tp_mlp"] = {"ok": False, "err": traceback.format_exc()}
    return res


# ----------------------------------------------------------------------------------------------
# Parent side
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def results(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    out = spawn(_rank_body, WORLD, tmp_path_factory.mktemp("tk_dist"), "gloo", timeout=TIMEOUT_S)
    for r, res in enumerate(out):
        assert res.get("ok") is not False, f"rank {r} failed:\n{res.get('err')}"  # spawn's report of an exception
    return out


def _assert_ok(results, prefix):
    names = sorted(k for k in results[0] if k.startswith(prefix))
    assert names, f"no checks named {prefix}*"
    bad = []
    for r, res in enumerate(results):
        for n in names:
            if not res.get(n, {}).get("ok"):
                bad.append(f"rank {r} {n}:\n{res.get(n, {}).get('err', 'missing')}")
    assert not bad, "\n".join(bad)
    return names


def test_gemm_strategies(results):
    names = _assert_ok(results, "gemm_")
    assert len(names) == 5


def test_addmm_strategies(results):
    names = _assert_ok(results, "addmm_")
    assert len(names) == 16


def test_gemm_pair_strategies(results):
    names = _assert_ok(results, "pair_")
    assert len(names) == 4 * 4


def test_linear_backward_strategies(results):
    names = _assert_ok(results, "lb_")
    assert len(names) == 4


def test_linear_strategies(results):
    names = _assert_ok(results, "linear_")
    assert len(names) == 2 * 4 + 2 * 5


def test_tp_mlp_matches_stock(results):
    _assert_ok(results, "tp_mlp")
    for r, res in enumerate(results):
        tp = res["tp_mlp"]
        stock, patched = tp["stock"], tp["patched"]
        # RowwiseParallel's single all-reduce in forward, and exactly the stock TP communication
        all_reduce_f = sum(v for k, v in patched["fwd"].items() if "all_reduce" in k)
        assert all_reduce_f == 1, f"rank {r}: forward comms {patched['fwd']}"
        assert patched["fwd"] == stock["fwd"], f"rank {r}: forward comms {patched['fwd']} != stock {stock['fwd']}"
        assert patched["bwd"] == stock["bwd"], f"rank {r}: backward comms {patched['bwd']} != stock {stock['bwd']}"
        # the tk kernel ran on the local shards: 2 forward linears + 3 backward gemms at least
        assert stock["tk_cpu_calls"] == 0
        assert patched["tk_cpu_calls"] >= 5, patched
