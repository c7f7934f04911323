"""Sibling fusion on the CPU: tk.linear_group (eager, autograd, errors), pack_siblings, and the
pre-grad pass under torch.compile (which linears it groups, and that the compiled model still
computes what the stock one does). Fresh randn data, float64 references, sizes off the tiles."""
import copy
import warnings

import pytest
import torch
from torch import nn

import torch_tk
from conftest import CPU_TOL, assert_close_rel, names_argument, ref_linear
from torch_tk import fusion


@pytest.fixture(autouse=True)
def _restore_pre_grad_pass():
    """patch_linear(fuse_siblings=True) installs the pass globally; other test files compare
    compiled graphs, so each test here leaves the config as it found it."""
    import torch._inductor.config as ic
    old = ic.pre_grad_custom_pass
    yield
    ic.pre_grad_custom_pass = old


def _packed(sizes, k, dtype, bias=False):
    """Weights (and biases) back to back in one storage, as pack_siblings leaves them."""
    n = sum(sizes)
    buf = torch.randn(n * k, dtype=torch.float32).to(dtype)
    bbuf = torch.randn(n, dtype=torch.float32).to(dtype)
    ws, bs, off = [], [], 0
    for s in sizes:
        ws.append(buf[off * k:(off + s) * k].view(s, k))
        bs.append(bbuf[off:off + s])
        off += s
    return ws, (bs if bias else [])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("adjacent", [True, False])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_group_matches_reference(dtype, adjacent, bias):
    sizes, k = (37, 64, 9), 70
    ws, bs = _packed(sizes, k, dtype, bias)
    if not adjacent:  # separate storages
        ws, bs = [w.clone() for w in ws], [b.clone() for b in bs]
    x = torch.randn(3, 5, k).to(dtype)
    torch_tk.reset_group_counters()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = torch_tk.linear_group(x, ws, bs)
    assert y.shape == (3, 5, sum(sizes)) and y.dtype == dtype and y.is_contiguous()
    ref = torch.cat([ref_linear(x, w, bs[i] if bias else None) for i, w in enumerate(ws)], -1)
    assert_close_rel(y, ref, CPU_TOL[dtype], "linear_group")
    assert torch_tk.group_counters() == ({"adjacent": 1, "copied": 0} if adjacent else {"adjacent": 0, "copied": 1})


def test_linear_group_copied_path_warns_once():
    from torch_tk import group
    group._warned.discard("weights")
    ws = [torch.randn(8, 16), torch.randn(4, 16)]
    x = torch.randn(2, 16)
    with pytest.warns(UserWarning, match="not back to back"):
        torch_tk.linear_group(x, ws)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch_tk.linear_group(x, ws)


@pytest.mark.parametrize("adjacent", [True, False])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_group_grads(adjacent, bias):
    sizes, k = (33, 17), 40
    ws, bs = _packed(sizes, k, torch.float64, bias)
    if not adjacent:
        ws, bs = [w.clone() for w in ws], [b.clone() for b in bs]
    ws = [w.detach().requires_grad_() for w in ws]
    bs = [b.detach().requires_grad_() for b in bs]
    x = torch.randn(6, 7, k, dtype=torch.float64, requires_grad=True)
    g = torch.randn(6, 7, sum(sizes), dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_tk.linear_group(x, ws, bs).backward(g)
    xr = x.detach().clone().requires_grad_()
    wr = [w.detach().clone().requires_grad_() for w in ws]
    br = [b.detach().clone().requires_grad_() for b in bs]
    torch.cat([torch.nn.functional.linear(xr, w, br[i] if bias else None) for i, w in enumerate(wr)], -1).backward(g)
    assert_close_rel(x.grad, xr.grad, 1e-12, "dX")
    for w, r in zip(ws + bs, wr + br):
        assert w.grad.shape == w.shape
        assert_close_rel(w.grad, r.grad, 1e-12, "dW / db")


def test_linear_group_input_only_grad():
    ws, _ = _packed((8, 24), 16, torch.float64)
    x = torch.randn(5, 16, dtype=torch.float64, requires_grad=True)
    g = torch.randn(5, 32, dtype=torch.float64)
    torch_tk.linear_group(x, ws).backward(g)
    assert_close_rel(x.grad, g @ torch.cat(ws), 1e-12, "dX with frozen weights")


@pytest.mark.parametrize("case, names", [
    (lambda x: torch_tk.linear_group(x, []), "weights"),
    (lambda x: torch_tk.linear_group(x, [torch.randn(4, 16), torch.randn(4, 15)]), "weights[1]"),
    (lambda x: torch_tk.linear_group(x, [torch.randn(4, 16), torch.randn(4, 16, dtype=torch.float64)]), "weights[1]"),
    (lambda x: torch_tk.linear_group(x, [torch.randn(4, 16)], [torch.randn(5)]), "biases[0]"),
    (lambda x: torch_tk.linear_group(x, [torch.randn(4, 16), torch.randn(4, 16)], [torch.randn(4)]), "biases"),
])
def test_linear_group_bad_arguments_name_the_argument(case, names):
    with pytest.raises((ValueError, TypeError)) as e:
        case(torch.randn(3, 16))
    assert names_argument(str(e.value), names), str(e.value)


class _Block(nn.Module):
    """q/k/v on one input, o on another; a second input read by one linear only."""

    def __init__(self, k=48, bias=False):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(k, 40, bias=bias), nn.Linear(k, 24, bias=bias), nn.Linear(k, 8, bias=bias)
        self.o = nn.Linear(40, k, bias=bias)

    def forward(self, x):
        h = torch.softmax(self.q(x) * self.k(x).sum(-1, keepdim=True), -1)
        return self.o(h) * self.v(x).mean(-1, keepdim=True)


def test_pack_siblings_keeps_parameters_and_values():
    m = _Block(bias=True)
    ref = copy.deepcopy(m)
    params = dict(m.named_parameters())
    torch_tk.patch_linear(m, fuse_siblings=True)
    groups = torch_tk.patch_report(m)["fused_groups"]
    assert groups == [["q", "k", "v"]]  # o has another in_features
    assert dict(m.named_parameters()) == params  # the same Parameter objects
    assert list(m.state_dict()) == list(ref.state_dict())
    for (n, p), (_, r) in zip(m.named_parameters(), ref.named_parameters()):
        assert torch.equal(p, r), n
    for name in ("weight", "bias"):
        ts = [getattr(getattr(m, c), name) for c in "qkv"]
        assert len({t.untyped_storage().data_ptr() for t in ts}) == 1
        assert [t.storage_offset() for t in ts] == [0, ts[0].numel(), ts[0].numel() + ts[1].numel()]


def test_pack_siblings_skips_tied_weights():
    m = _Block()
    m.k = nn.Linear(48, 40, bias=False)
    m.k.weight = m.q.weight  # q and k tied: only v is left, no group
    torch_tk.patch_linear(m, fuse_siblings=True, skip_tied=False)
    assert torch_tk.patch_report(m)["fused_groups"] == []


def _compiled_matches(model, x, group_calls):
    """Compiles a patched, fused copy of ``model``, runs forward + backward and checks them against
    float64 eager; ``group_calls``: the tk.linear_group forward + backward calls expected (counted
    at run time, so also when Inductor's caches skip the pass)."""
    ref = copy.deepcopy(model).double()
    m = torch_tk.patch_linear(copy.deepcopy(model), fuse_siblings=True)
    torch._dynamo.reset()
    torch_tk.reset_group_counters()
    xr = x.detach().double().requires_grad_()
    xm = x.detach().clone().requires_grad_()
    y = torch.compile(m)(xm)
    g = torch.randn_like(y)
    y.backward(g)
    yr = ref(xr)
    yr.backward(g.double())
    assert torch_tk.group_counters() == {"adjacent": group_calls, "copied": 0}
    assert_close_rel(y, yr, 1e-5, "output")
    assert_close_rel(xm.grad, xr.grad, 1e-5, "dX")
    for (n, p), (_, r) in zip(m.named_parameters(), ref.named_parameters()):
        assert_close_rel(p.grad, r.grad, 1e-5, n)


@pytest.mark.parametrize("bias", [False, True])
def test_pass_fuses_siblings_in_compiled_training(bias):
    fusion.install()
    _compiled_matches(_Block(bias=bias), torch.randn(3, 11, 48), group_calls=2)


def test_pass_counts_what_it_fused():
    """With Inductor's caches off the pass runs on every compile: one group of the three q/k/v."""
    fusion.install()
    m = torch_tk.patch_linear(_Block(), fuse_siblings=True)
    torch._dynamo.reset()
    before = torch_tk.fusion_stats()
    with torch._inductor.config.patch(fx_graph_cache=False), torch._functorch.config.patch(enable_autograd_cache=False):
        torch.compile(m)(torch.randn(5, 48)).sum().backward()
    after = torch_tk.fusion_stats()
    assert (after["groups"] - before["groups"], after["linears"] - before["linears"]) == (1, 3)


class _Mutating(_Block):
    def forward(self, x):
        q = self.q(x)
        x.mul_(2)  # in place between two readers of x: grouping them would change k
        return self.o(q) + self.k(x).sum(-1, keepdim=True)


def test_pass_leaves_groups_with_in_place_writes_between():
    fusion.install()
    m = _Mutating()
    ref = copy.deepcopy(m).double()
    p = torch_tk.patch_linear(copy.deepcopy(m), fuse_siblings=True)
    torch._dynamo.reset()
    torch_tk.reset_group_counters()
    x = torch.randn(4, 48)
    with torch.no_grad():  # (autograd would refuse the eager in-place write on a saved input)
        y = torch.compile(p)(x.clone())
        yr = ref(x.double())
    assert torch_tk.group_counters() == {"adjacent": 0, "copied": 0}
    assert_close_rel(y, yr, 1e-5, "output")


def test_install_is_idempotent_and_chains():
    import torch._inductor.config as ic
    old = ic.pre_grad_custom_pass
    def other_pass(graph):
        pass
    try:
        fusion.uninstall()
        ic.pre_grad_custom_pass = other_pass
        fusion.install()
        fusion.install()
        assert fusion.installed() and ic.pre_grad_custom_pass.prev is other_pass
        fusion.uninstall()
        assert ic.pre_grad_custom_pass is other_pass
    finally:
        ic.pre_grad_custom_pass = old


def test_llama_train_step_with_fusion_matches_stock():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=100, max_position_embeddings=32)
    stock = transformers.LlamaForCausalLM(cfg).float().train()
    patched = torch_tk.patch_linear(copy.deepcopy(stock), fuse_siblings=True)
    assert len(torch_tk.patch_report(patched)["fused_groups"]) == 4  # q/k/v/o and gate/up per layer
    ids = torch.randint(0, 100, (2, 16))
    torch._dynamo.reset()
    torch_tk.reset_group_counters()
    losses = []
    for m in (stock, patched):
        loss = torch.compile(m)(input_ids=ids, labels=ids).loss
        loss.backward()
        losses.append(loss.item())
    # q/k/v and gate/up of two layers: 4 groups, each a forward and a backward call
    assert torch_tk.group_counters() == {"adjacent": 8, "copied": 0}
    assert abs(losses[0] - losses[1]) <= 1e-5 * abs(losses[0])
    for (n, a), (_, b) in zip(stock.named_parameters(), patched.named_parameters()):
        assert_close_rel(b.grad, a.grad, 1e-4, n)
