"""patch_linear's selection rules and guarantees (issue: Training and torch.compile end to end)."""
import copy
import io
import logging

import pytest
import torch
from torch import nn

import torch_tk
from torch_tk.nn import TKLinear


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.up = nn.Linear(d, 2 * d)
        self.down = nn.Linear(2 * d, d)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.blocks10 = Block()  # "blocks1" prefix must not match "blocks10"
        self.head = nn.Linear(16, 32, bias=False)
        self.head.weight = self.emb.weight  # tied

    def forward(self, ids):
        h = self.emb(ids)
        for b in self.blocks:
            h = b(h)
        return self.head(self.blocks10(h))


def patched_names(model):
    return sorted(n for n, m in model.named_modules() if type(m) is TKLinear)


def test_default_skips_tied_and_reports():
    m = torch_tk.patch_linear(Net())
    r = torch_tk.patch_report(m)
    assert "head" in r["skipped"] and "tied" in r["skipped"]["head"]
    assert patched_names(m) == sorted(r["patched"])
    assert len(r["patched"]) == 6


def test_skip_tied_false_patches_tied_layer():
    m = torch_tk.patch_linear(Net(), skip_tied=False)
    assert "head" in patched_names(m)


@pytest.mark.parametrize("pattern, expect_excluded", [
    ("blocks.1", {"blocks.1.up", "blocks.1.down"}),          # dotted prefix
    ("blocks.1.up", {"blocks.1.up"}),                           # exact
    ("blocks1", set()),                                          # never a substring / partial segment
    ("up", set()),                                               # substring of many FQNs: no match
    ("re:blocks\\.\\d+\\.down", {"blocks.0.down", "blocks.1.down"}),  # full regex match
    ("re:down", set()),                                          # regex must match the whole FQN
])
def test_exclude_patterns(pattern, expect_excluded):
    base = set(torch_tk.patch_report(torch_tk.patch_linear(Net()))["patched"])
    m = torch_tk.patch_linear(Net(), exclude=[pattern])
    r = torch_tk.patch_report(m)
    assert base - set(r["patched"]) == expect_excluded
    for fqn in expect_excluded:
        assert "exclude" in r["skipped"][fqn]
    assert "head" in r["skipped"]  # user excludes add to the defaults


def test_include_and_filter_fn():
    m = torch_tk.patch_linear(Net(), include=["blocks10"])
    assert patched_names(m) == ["blocks10.down", "blocks10.up"]
    m = torch_tk.patch_linear(Net(), filter_fn=lambda mod, fqn: mod.in_features == 16)
    assert patched_names(m) == ["blocks.0.up", "blocks.1.up", "blocks10.up"]
    assert "filter_fn" in torch_tk.patch_report(m)["skipped"]["blocks.0.down"]


def test_one_pattern_string_is_one_pattern():
    # list("blocks10") would be eight one-character patterns matching nothing
    assert patched_names(torch_tk.patch_linear(Net(), include="blocks10")) == ["blocks10.down", "blocks10.up"]
    assert "blocks.0.up" not in torch_tk.patch_report(torch_tk.patch_linear(Net(), exclude="blocks.0"))["patched"]


@pytest.mark.parametrize("kw, exc, word", [
    (dict(include=3), TypeError, "`include`"),
    (dict(exclude=["blocks.0", 7]), TypeError, "`exclude`"),
    (dict(exclude=["re:blocks.("]), ValueError, "`exclude` pattern 're:blocks.\\('"),
    (dict(filter_fn="up"), TypeError, "`filter_fn`"),
])
def test_bad_arguments_name_the_argument(kw, exc, word):
    m = Net()
    with pytest.raises(exc, match=word):
        torch_tk.patch_linear(m, **kw)
    assert patched_names(m) == []  # refused before any change


@pytest.mark.parametrize("fn", [torch_tk.patch_linear, torch_tk.unpatch_linear, torch_tk.patch_report])
def test_model_must_be_a_module(fn):
    with pytest.raises(TypeError, match="`model` must be an nn.Module, got dict"):
        fn({"up": torch.nn.Linear(2, 2)})


def test_dry_run_changes_nothing_and_strict():
    m = Net()
    torch_tk.patch_linear(m, dry_run=True)
    assert patched_names(m) == []
    r = torch_tk.patch_report(m)
    assert r["dry_run"] and len(r["patched"]) == 6
    with pytest.raises(RuntimeError, match="nothing was patched"):
        torch_tk.patch_linear(Net(), include=["nope"], strict=True)


def test_same_objects_state_dict_and_optimizer_references():
    torch.manual_seed(0)
    m = Net()
    params_before = {n: p for n, p in m.named_parameters()}
    modules_before = {n: mod for n, mod in m.named_modules()}
    sd_keys = list(m.state_dict().keys())
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    ids = torch.randint(0, 32, (3, 5))
    ref = copy.deepcopy(m)
    torch_tk.patch_linear(m)
    assert {n: p for n, p in m.named_parameters()} == params_before
    assert all(modules_before[n] is mod for n, mod in m.named_modules())
    assert list(m.state_dict().keys()) == sd_keys
    assert all(isinstance(mod, nn.Linear) for mod in m.modules() if type(mod) is TKLinear)
    # the optimizer still steps the same Parameter objects
    torch_tk.reset_kernel_counters()
    m(ids).sum().backward()
    assert torch_tk.kernel_counters()["cpu"] > 0
    opt.step()
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    ref(ids).sum().backward()
    ref_opt.step()
    for (n, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=n)


def test_checkpoint_round_trip_both_ways():
    torch.manual_seed(0)
    stock = Net()
    patched = torch_tk.patch_linear(copy.deepcopy(stock))
    buf = io.BytesIO()
    torch.save(patched.state_dict(), buf)
    buf.seek(0)
    fresh = Net()
    fresh.load_state_dict(torch.load(buf))
    for (n, p), (_, q) in zip(fresh.state_dict().items(), stock.state_dict().items()):
        assert torch.equal(p, q), n
    fresh_patched = torch_tk.patch_linear(Net())
    fresh_patched.load_state_dict(stock.state_dict())  # strict: same keys, no extra state
    ids = torch.randint(0, 32, (2, 4))
    torch.testing.assert_close(fresh_patched(ids), stock(ids), rtol=1e-5, atol=1e-5)


def test_unpatch_restores_exact_stock_behaviour():
    torch.manual_seed(0)
    m = Net()
    ids = torch.randint(0, 32, (2, 4))
    ref = m(ids)
    torch_tk.patch_linear(m)
    torch_tk.unpatch_linear(m)
    assert patched_names(m) == []
    assert all(type(mod) in (nn.Linear, Net, Block, nn.Embedding, nn.ModuleList) for mod in m.modules())
    torch_tk.reset_kernel_counters()
    assert torch.equal(m(ids), ref)
    assert torch_tk.kernel_counters()["cpu"] == 0


def test_meta_device_model_is_patched_without_allocation():
    with torch.device("meta"):
        m = Net()
    torch_tk.patch_linear(m)
    assert len(patched_names(m)) == 6
    assert all(p.is_meta for p in m.parameters())
    out = m(torch.randint(0, 32, (2, 3), device="meta"))
    assert out.is_meta and out.shape == (2, 3, 32)
    m.to_empty(device="cpu")  # materialise afterwards: still patched
    assert len(patched_names(m)) == 6


def test_instance_forward_override_is_left_alone():
    m = Net()
    lin = m.blocks[0].up
    lin.forward = lambda x: nn.functional.linear(x, lin.weight, lin.bias)  # e.g. accelerate hooks
    torch_tk.patch_linear(m)
    r = torch_tk.patch_report(m)
    assert "blocks.0.up" in r["skipped"] and "another library" in r["skipped"]["blocks.0.up"]
    assert type(lin) is nn.Linear


def test_multihead_attention_out_proj_reported_bypassed():
    m = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    torch_tk.patch_linear(m)
    r = torch_tk.patch_report(m)
    assert "self_attn.out_proj" in r["bypassed"]
    assert sorted(r["patched"]) == ["linear1", "linear2"]


def test_one_log_line(caplog):
    with caplog.at_level(logging.INFO, logger="torch_tk"):
        torch_tk.patch_linear(Net())
    lines = [r for r in caplog.records if r.name == "torch_tk"]
    assert len(lines) == 1 and "6 patched" in lines[0].getMessage()


def test_inference_mode_and_no_grad():
    torch.manual_seed(0)
    m = Net()
    ids = torch.randint(0, 32, (2, 4))
    ref = m(ids)
    torch_tk.patch_linear(m)
    with torch.inference_mode():
        a = m(ids)
    with torch.no_grad():
        b = m(ids)
    torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b, ref, rtol=1e-5, atol=1e-5)
    assert not b.requires_grad


def test_autocast_cpu_linear_returns_what_nn_linear_returns():
    torch.manual_seed(0)
    stock = nn.Linear(48, 24)
    patched = torch_tk.patch_linear(copy.deepcopy(stock))
    x = torch.randn(5, 48)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = stock(x)
        out = patched(x)
    assert out.dtype == ref.dtype == torch.bfloat16
    rel = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    assert rel < 1e-2
    out.float().sum().backward()
    assert patched.weight.grad.dtype == torch.float32 and patched.bias.grad.dtype == torch.float32


@pytest.fixture
def gloo_group(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed unavailable")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


@pytest.mark.parametrize("when", ["before", "after"])
def test_fsdp2_patch_before_or_after_wrapping(gloo_group, when):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    stock = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    m = copy.deepcopy(stock)
    mesh = init_device_mesh("cpu", (1,))
    if when == "before":
        torch_tk.patch_linear(m)
    for layer in (m[0], m[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(m, mesh=mesh)
    torch_tk.patch_linear(m)  # "before": a no-op on the FSDP-wrapped tk classes (idempotent)
    assert sorted(torch_tk.patch_report(m)["patched"]) == ["0", "2"]
    assert all(isinstance(m[i], TKLinear) for i in (0, 2))
    x = torch.randn(3, 8)
    torch_tk.reset_kernel_counters()
    out = m(x)
    out.sum().backward()
    assert torch_tk.kernel_counters()["cpu"] >= 4  # two forwards + backward GEMMs
    ref = stock(x)
    ref.sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for (n, p), (_, q) in zip(m.named_parameters(), stock.named_parameters()):
        torch.testing.assert_close(p.grad.full_tensor(), q.grad, rtol=1e-5, atol=1e-6, msg=n)
    torch_tk.unpatch_linear(m)
    assert not any(isinstance(mod, TKLinear) for mod in m.modules())
