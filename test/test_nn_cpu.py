"""patch_linear / unpatch_linear / patch_report / TKLinear on CPU: a small MLP and a
tiny randomly initialised HF LlamaForCausalLM (no downloads)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import torch_tk
from conftest import assert_close_rel, counter_delta, counters


def _linear_fqns(model, exact=True):
    return [n for n, m in model.named_modules() if (type(m) is nn.Linear if exact else isinstance(m, nn.Linear))]


def _param_ids(model):
    return {n: id(p) for n, p in model.named_parameters()}


def make_mlp():
    return nn.Sequential(
        nn.Linear(16, 32),
        nn.GELU(),
        nn.Linear(32, 32, bias=False),
        nn.ReLU(),
        nn.Linear(32, 8),
    )


# ============================================================================ MLP


def test_tklinear_is_linear_subclass():
    assert issubclass(torch_tk.nn.TKLinear, nn.Linear)
    assert torch_tk.nn.TKLinear is not nn.Linear


def test_patch_mlp_forward_identity_and_counters():
    model = make_mlp()
    x = torch.randn(4, 7, 16)
    with torch.no_grad():
        ref = model(x)
    fqns = _linear_fqns(model)
    ids = _param_ids(model)
    keys = list(model.state_dict().keys())
    sd_ptrs = {k: v.data_ptr() for k, v in model.state_dict().items()}

    ret = torch_tk.patch_linear(model)
    assert ret is model
    for name, m in model.named_modules():
        if name in fqns:
            assert type(m) is torch_tk.nn.TKLinear, name
            assert isinstance(m, nn.Linear)
    assert _param_ids(model) == ids, "patch_linear must keep the same Parameter objects"
    assert list(model.state_dict().keys()) == keys
    assert {k: v.data_ptr() for k, v in model.state_dict().items()} == sd_ptrs
    assert model[2].bias is None

    report = torch_tk.patch_report(model)
    assert set(report) >= {"patched", "skipped"}
    assert sorted(report["patched"]) == sorted(fqns)
    assert isinstance(report["skipped"], dict)

    before = counters()
    with torch.no_grad():
        out = model(x)
    d = counter_delta(before, counters())
    assert d["cpu"] == len(fqns), f"expected {len(fqns)} tk op calls, counters moved by {d}"
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert_close_rel(out, ref, 1e-5, "patched MLP")

    # inference_mode and 1-D inputs work too
    with torch.inference_mode():
        out1 = model(x[0, 0])
    assert_close_rel(out1, ref[0, 0], 1e-5)


def test_patch_twice_is_noop():
    model = make_mlp()
    x = torch.randn(5, 16)
    torch_tk.patch_linear(model)
    ids = _param_ids(model)
    rep1 = torch_tk.patch_report(model)
    out1 = model(x).detach()
    assert torch_tk.patch_linear(model) is model
    for name in _linear_fqns(make_mlp()):
        assert type(model.get_submodule(name)) is torch_tk.nn.TKLinear
    assert _param_ids(model) == ids
    rep2 = torch_tk.patch_report(model)
    assert sorted(rep2["patched"]) == sorted(rep1["patched"])
    assert rep2["skipped"] == rep1["skipped"]
    before = counters()
    out2 = model(x).detach()
    assert counter_delta(before, counters())["cpu"] == 3, "patching twice must not double-dispatch"
    assert torch.equal(out1, out2)


def test_unpatch_restores_linear():
    model = make_mlp()
    x = torch.randn(3, 16)
    with torch.no_grad():
        ref = model(x)
    ids = _param_ids(model)
    fqns = _linear_fqns(model)
    torch_tk.patch_linear(model)
    ret = torch_tk.unpatch_linear(model)
    assert ret is model or ret is None
    for name in fqns:
        assert type(model.get_submodule(name)) is nn.Linear, name
    assert _param_ids(model) == ids
    before = counters()
    with torch.no_grad():
        out = model(x)
    assert counter_delta(before, counters())["cpu"] == 0, "unpatched model must not call tk ops"
    assert torch.equal(out, ref)
    # and it can be patched again
    torch_tk.patch_linear(model)
    assert all(type(model.get_submodule(n)) is torch_tk.nn.TKLinear for n in fqns)


def test_patch_mlp_backward_matches_stock():
    model = make_mlp()
    x = torch.randn(6, 16, requires_grad=True)
    target = torch.randn(6, 8)
    loss = nn.functional.mse_loss(model(x), target)
    loss.backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    ref_xgrad = x.grad.clone()
    model.zero_grad(set_to_none=True)
    x.grad = None

    torch_tk.patch_linear(model)
    before = counters()
    loss2 = nn.functional.mse_loss(model(x), target)
    loss2.backward()
    assert counter_delta(before, counters())["cpu"] > 3, "backward must also run tk ops"
    assert_close_rel(loss2, loss, 1e-6)
    assert_close_rel(x.grad, ref_xgrad, 1e-5, "input grad")
    for n, p in model.named_parameters():
        assert p.grad is not None, n
        assert_close_rel(p.grad, ref_grads[n], 1e-5, f"grad {n}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_patch_mlp_other_dtypes(dtype):
    model = make_mlp().to(dtype)
    x = torch.randn(4, 16).to(dtype)
    ref = model.double()(x.double()).detach()
    model.to(dtype)
    torch_tk.patch_linear(model)
    out = model(x)
    assert out.dtype == dtype
    tol = {torch.bfloat16: 3e-2, torch.float16: 1e-2, torch.float64: 1e-12}[dtype]
    assert_close_rel(out, ref, tol)


def test_subclass_is_skipped_and_reported():
    class MyLinear(nn.Linear):
        pass

    model = nn.Sequential(nn.Linear(8, 8), MyLinear(8, 8), nn.Sequential(nn.Linear(8, 4)))
    torch_tk.patch_linear(model)
    assert type(model[0]) is torch_tk.nn.TKLinear
    assert type(model[1]) is MyLinear, "subclasses of nn.Linear are not exact nn.Linear: leave them"
    assert type(model[2][0]) is torch_tk.nn.TKLinear
    rep = torch_tk.patch_report(model)
    assert sorted(rep["patched"]) == ["0", "2.0"]
    assert "1" in rep["skipped"], rep
    assert isinstance(rep["skipped"]["1"], str) and rep["skipped"]["1"]
    torch_tk.unpatch_linear(model)
    assert type(model[0]) is nn.Linear and type(model[1]) is MyLinear


def test_root_module_linear():
    lin = nn.Linear(10, 6)
    x = torch.randn(3, 10)
    ref = lin(x).detach()
    assert torch_tk.patch_linear(lin) is lin
    assert type(lin) is torch_tk.nn.TKLinear
    before = counters()
    assert_close_rel(lin(x), ref, 1e-5)
    assert counter_delta(before, counters())["cpu"] == 1
    torch_tk.unpatch_linear(lin)
    assert type(lin) is nn.Linear


def test_shared_module_and_deepcopy():
    shared = nn.Linear(8, 8)
    model = nn.Sequential(shared, nn.Tanh(), shared)
    x = torch.randn(2, 8)
    ref = model(x).detach()
    torch_tk.patch_linear(model)
    assert type(shared) is torch_tk.nn.TKLinear
    before = counters()
    assert_close_rel(model(x), ref, 1e-5)
    assert counter_delta(before, counters())["cpu"] == 2
    clone = copy.deepcopy(model)
    assert type(clone[0]) is torch_tk.nn.TKLinear
    assert clone[0] is clone[2]
    assert_close_rel(clone(x), ref, 1e-5)


def test_load_state_dict_into_patched():
    stock = make_mlp()
    model = make_mlp()
    torch_tk.patch_linear(model)
    missing, unexpected = model.load_state_dict(stock.state_dict())
    assert not missing and not unexpected
    x = torch.randn(3, 16)
    assert_close_rel(model(x), stock(x).detach(), 1e-5)


# ============================================================================ tiny Llama


def _tiny_llama():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
        max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(cfg).float()
    model.eval()
    return model


def _check_llama_report(model, fqns):
    """Every exact nn.Linear is accounted for: patched, or skipped with a reason. The decoder
    layers' projections are always patched; the output projection (lm_head) may be skipped
    by default (it then must be listed with a reason)."""
    rep = torch_tk.patch_report(model)
    patched, skipped = set(rep["patched"]), rep["skipped"]
    assert patched.isdisjoint(skipped)
    assert patched | set(skipped) >= set(fqns), f"unaccounted: {set(fqns) - patched - set(skipped)}"
    for n in fqns:
        if n != "lm_head":
            assert n in patched, f"{n} not patched: {skipped.get(n)}"
    for n, why in skipped.items():
        assert isinstance(why, str) and why, n
    for n in fqns:
        m = model.get_submodule(n)
        assert isinstance(m, nn.Linear)
        assert (type(m) is torch_tk.nn.TKLinear) == (n in patched), n
    return sorted(patched)


def test_llama_patch_forward_backward():
    model = _tiny_llama()
    ids = torch.randint(0, 128, (2, 12))
    fqns = _linear_fqns(model)
    assert len(fqns) == 2 * 7 + 1  # q,k,v,o,gate,up,down per layer + lm_head
    param_ids = _param_ids(model)
    keys = list(model.state_dict().keys())

    out_ref = model(input_ids=ids, labels=ids)
    out_ref.loss.backward()
    ref_logits = out_ref.logits.detach()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)

    assert torch_tk.patch_linear(model) is model
    patched = _check_llama_report(model, fqns)
    assert len(patched) >= 14
    assert _param_ids(model) == param_ids
    assert list(model.state_dict().keys()) == keys

    before = counters()
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert counter_delta(before, counters())["cpu"] == len(patched), "every patched Linear must run tk.linear"
    assert_close_rel(logits, ref_logits, 2e-5, "llama logits")

    out = model(input_ids=ids, labels=ids)
    assert_close_rel(out.loss, out_ref.loss, 1e-5, "llama loss")
    before = counters()
    out.loss.backward()
    assert counter_delta(before, counters())["cpu"] >= len(patched), "backward must run tk ops"
    assert set(n for n, p in model.named_parameters() if p.grad is not None) == set(ref_grads)
    for n, p in model.named_parameters():
        if n in ref_grads:
            assert_close_rel(p.grad, ref_grads[n], 1e-4, f"grad {n}")

    torch_tk.unpatch_linear(model)
    for n in fqns:
        assert type(model.get_submodule(n)) is nn.Linear, n
    assert _param_ids(model) == param_ids
    before = counters()
    with torch.no_grad():
        logits2 = model(input_ids=ids).logits
    assert counter_delta(before, counters())["cpu"] == 0
    assert_close_rel(logits2, ref_logits, 1e-6)


def test_llama_patch_all_including_lm_head():
    """With the output projection included (patch_linear(..., skip_lm_head=False) where the
    option exists), all 15 Linear layers run on tk.linear."""
    import inspect

    if "skip_lm_head" not in inspect.signature(torch_tk.patch_linear).parameters:
        pytest.skip("patch_linear has no skip_lm_head option (lm_head is patched by default)")
    model = _tiny_llama()
    ids = torch.randint(0, 128, (1, 10))
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    torch_tk.patch_linear(model, skip_lm_head=False)
    fqns = _linear_fqns(model, exact=False)
    assert sorted(torch_tk.patch_report(model)["patched"]) == sorted(fqns)
    before = counters()
    with torch.no_grad():
        out = model(input_ids=ids).logits
    assert counter_delta(before, counters())["cpu"] == 15
    assert_close_rel(out, ref, 2e-5)


def test_llama_patch_twice_noop_and_bf16():
    model = _tiny_llama()
    ids = torch.randint(0, 128, (1, 9))
    with torch.no_grad():
        ref = model(input_ids=ids).logits.double()
    fqns = _linear_fqns(model)
    torch_tk.patch_linear(model)
    patched1 = _check_llama_report(model, fqns)
    torch_tk.patch_linear(model)
    patched2 = _check_llama_report(model, fqns)
    assert patched1 == patched2
    model.to(torch.bfloat16)
    before = counters()
    with torch.no_grad():
        out = model(input_ids=ids).logits
    assert counter_delta(before, counters())["cpu"] == len(patched2)
    assert out.dtype == torch.bfloat16
    # bf16 through a 2-layer model: loose, but catches garbage
    assert_close_rel(out, ref, 5e-2, "bf16 llama logits")
