"""tk.linear_rope on the CPU reference: values and gradients against float64 (transformers' form),
the half-table convention against transformers' own apply_rotary_pos_emb, the register facts the
Hopper epilogue relies on, errors naming the argument, empty cases, torch.compile."""
import pytest
import torch

import torch_tk
from torch_tk import _C
from conftest import rel_err
from rope_helpers import ref64, tables


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("lead,k,n,half", [((37,), 72, 256, 64), ((2, 5), 33, 128, 64), ((3,), 8, 48, 4),
                                           ((4, 3), 40, 96, 16)])
def test_values_against_float64(dtype, lead, k, n, half):
    x = torch.randn(*lead, k, dtype=dtype)
    w = torch.randn(n, k, dtype=dtype)
    cos, sin = tables(lead, half, dtype)
    y = torch_tk.linear_rope(x, w, cos, sin)
    assert y.shape == (*lead, n) and y.dtype == dtype and y.is_contiguous()
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2}[dtype]
    assert rel_err(y, ref64(x, w, cos, sin)) < tol


def test_strided_tables():
    """A slice of full-width tables (row stride 2 x half), as the patched attention passes them."""
    x, w = torch.randn(2, 9, 40), torch.randn(256, 40)
    full_c, full_s = (torch.cat((t, t), -1) for t in tables((2, 9), 64, torch.float32))
    y = torch_tk.linear_rope(x, w, full_c[..., :64], full_s[..., :64])
    assert rel_err(y, ref64(x, w, full_c[..., :64], full_s[..., :64])) < 1e-5


def test_matches_transformers_apply_rotary_pos_emb():
    """The op with the first half of transformers' tables equals the stock projection + rotation."""
    tr = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    cfg = tr.LlamaConfig(hidden_size=256, num_attention_heads=2, max_position_embeddings=64)
    rot = LlamaRotaryEmbedding(cfg)
    b, s, heads, d = 2, 16, 2, 128
    x = torch.randn(b, s, 256, dtype=torch.float64)
    w = torch.randn(heads * d, 256, dtype=torch.float64)
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    cos, sin = rot(x, pos)
    q = (x @ w.t()).view(b, s, heads, d).transpose(1, 2)
    stock, _ = apply_rotary_pos_emb(q, q, cos, sin)
    ours = torch_tk.linear_rope(x, w, cos[..., :64].contiguous(), sin[..., :64].contiguous())
    assert rel_err(ours.view(b, s, heads, d).transpose(1, 2), stock) < 1e-12


def test_epilogue_register_facts():
    """What epilogue_rope.cuh relies on (kittens::wgmma_acc_coord of a 64 x 256 strip): registers r
    and r + 32 of a thread are columns c and c + 64 of one row (d and d + 64 of a 128-wide head) for
    r % 64 < 32, and every 64-column round holds the same round-local columns in the same registers,
    so one table round (head dimension = round-local column) serves all four."""
    for t in range(128):
        for r in range(128):
            row, col = _C.wgmma_acc_coord(t, r)
            assert (r // 32) == col // 64  # round r // 32 is columns 64 (r // 32) ..
            assert _C.wgmma_acc_coord(t, r % 32) == (row, col % 64)
            if r % 64 < 32:
                assert _C.wgmma_acc_coord(t, r + 32) == (row, col + 64) and col % 128 < 64


def test_gradients_gradcheck():
    x = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(16, 6, dtype=torch.float64, requires_grad=True)
    cos, sin = tables((2, 3), 4, torch.float64)
    assert torch.autograd.gradcheck(lambda a, b: torch_tk.linear_rope(a, b, cos, sin), (x, w))


def test_gradients_against_float64():
    x = torch.randn(5, 7, 24, requires_grad=True)
    w = torch.randn(256, 24, requires_grad=True)
    cos, sin = tables((5, 7), 64, torch.float32)
    r = torch.randn(5, 7, 256, dtype=torch.float64)
    (torch_tk.linear_rope(x, w, cos, sin).double() * r).sum().backward()
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    y = x64 @ w64.t()  # transformers' form with full-width tables, differentiated in float64
    c = torch.cat((cos, cos), -1).double().unsqueeze(-2)
    s = torch.cat((sin, sin), -1).double().unsqueeze(-2)
    y3 = y.reshape(5, 7, 2, 128)
    rot = torch.cat((-y3[..., 64:], y3[..., :64]), -1)
    ((y3 * c + rot * s).reshape(5, 7, 256) * r).sum().backward()
    assert rel_err(x.grad, x64.grad) < 1e-5 and rel_err(w.grad, w64.grad) < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("inverse", [False, True])
def test_rotate_flip_equals_rotate(dtype, inverse):
    """The backward's two forms of the rotation (rope.BACKWARD_ROTATION) give the same values: the same
    products and sums per element (no rounding-order change), so bitwise equal on the CPU."""
    from torch_tk import rope
    y = torch.randn(3, 5, 384, dtype=dtype)  # 3 heads of 128
    cos, sin = tables((3, 5), 64, dtype)
    a, b = rope.rotate(y, cos, sin, inverse=inverse), rope.rotate_flip(y, cos, sin, inverse=inverse)
    assert a.dtype == b.dtype == dtype and torch.equal(a, b)
    assert not torch.equal(a, y)  # the rotation is not the identity on these tables


@pytest.mark.parametrize("form", ["cat", "flip"])
def test_gradients_in_both_backward_forms(form, monkeypatch):
    from torch_tk import rope
    monkeypatch.setattr(rope, "BACKWARD_ROTATION", form)
    x = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(16, 6, dtype=torch.float64, requires_grad=True)
    cos, sin = tables((2, 3), 4, torch.float64)
    assert torch.autograd.gradcheck(lambda a, b: torch_tk.linear_rope(a, b, cos, sin), (x, w))
    wk, wv = (torch.randn(16, 6, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(lambda a, b, c, d: rope.linear_qkv_rope(a, b, c, d, cos, sin), (x, w, wk, wv))


def test_table_gradients_refused():
    cos, sin = tables((3,), 4, torch.float32)
    cos.requires_grad_()
    with pytest.raises(NotImplementedError, match="cos"):
        torch_tk.linear_rope(torch.randn(3, 8), torch.randn(8, 8), cos, sin)


def test_empty_and_zero_k():
    cos, sin = tables((0,), 64, torch.float32)
    assert torch_tk.linear_rope(torch.randn(0, 8), torch.randn(128, 8), cos, sin).shape == (0, 128)
    cos, sin = tables((3,), 64, torch.float32)
    assert bool((torch_tk.linear_rope(torch.randn(3, 0), torch.randn(128, 0), cos, sin) == 0).all())


def _args(**kw):
    cos, sin = tables((4,), 4, torch.float32)
    a = dict(input=torch.randn(4, 8), weight=torch.randn(16, 8), cos=cos, sin=sin)
    a.update(kw)
    return a


@pytest.mark.parametrize("kw,exc,word", [
    (dict(weight=torch.randn(12, 8)), ValueError, "head_dim"),
    (dict(weight=torch.randn(16, 9)), ValueError, "weight"),
    (dict(cos=torch.randn(5, 4)), ValueError, "cos"),
    (dict(sin=torch.randn(4, 2)), ValueError, "sin"),
    (dict(sin=torch.randn(4, 4, dtype=torch.float64)), TypeError, "sin"),
    (dict(weight=torch.randn(16, 8).half()), TypeError, "weight"),
    (dict(input=torch.randint(0, 3, (4, 8))), TypeError, "input"),
])
@pytest.mark.parametrize("fake", [False, True], ids=["eager", "fake"])
def test_errors_name_the_argument(kw, exc, word, fake):
    a = _args(**kw)
    if fake:
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as mode:
            a = {k: mode.from_tensor(v) for k, v in a.items()}
            with pytest.raises(exc, match=word):
                torch.ops.tk.linear_rope(a["input"], a["weight"], a["cos"], a["sin"])
    else:
        with pytest.raises(exc, match=word):
            torch_tk.linear_rope(**a)


@pytest.mark.parametrize("kw,exc,word", [
    (dict(q_weight=torch.randn(12, 8)), ValueError, "q_weight"),
    (dict(k_weight=torch.randn(16, 9)), ValueError, "k_weight"),
    (dict(v_weight=torch.randn(16, 9)), ValueError, "v_weight"),
    (dict(v_weight=torch.randn(16, 8).half()), TypeError, "v_weight"),
    (dict(v_weight=torch.randn(16)), ValueError, "v_weight"),
    (dict(cos=torch.randn(5, 4)), ValueError, "cos"),
])
@pytest.mark.parametrize("fake", [False, True], ids=["eager", "fake"])
def test_qkv_errors_name_the_argument(kw, exc, word, fake):
    from torch_tk import rope
    a = _args()
    a = dict(input=a["input"], q_weight=a["weight"], k_weight=torch.randn(16, 8), v_weight=torch.randn(16, 8),
             cos=a["cos"], sin=a["sin"])
    a.update(kw)
    if fake:
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as mode:
            a = {k: mode.from_tensor(v) for k, v in a.items()}
            with pytest.raises(exc, match=f"tk.linear_qkv_rope: .*{word}"):
                rope.linear_qkv_rope(**a)
    else:
        with pytest.raises(exc, match=f"tk.linear_qkv_rope: .*{word}"):
            rope.linear_qkv_rope(**a)


def test_compile_fullgraph_matches_eager():
    x, w = torch.randn(3, 5, 16, requires_grad=True), torch.randn(32, 16, requires_grad=True)
    cos, sin = tables((3, 5), 8, torch.float32)
    f = torch.compile(lambda a, b: torch_tk.linear_rope(a, b, cos, sin).square().sum(), fullgraph=True)
    f(x, w).backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    torch_tk.linear_rope(x, w, cos, sin).square().sum().backward()
    assert rel_err(gx, x.grad) < 1e-5 and rel_err(gw, w.grad) < 1e-5


def _tiny_llama(layers=2):
    tr = pytest.importorskip("transformers")
    cfg = tr.LlamaConfig(hidden_size=256, intermediate_size=512, num_attention_heads=2, num_key_value_heads=2,
                         num_hidden_layers=layers, vocab_size=128, max_position_embeddings=256)
    torch.manual_seed(0)
    return tr.LlamaForCausalLM(cfg).train()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_patch_linear_fuse_rope_trains_like_stock(compiled):
    import copy
    stock = _tiny_llama()
    fused = torch_tk.patch_linear(copy.deepcopy(stock), fuse_rope=True)
    rep = torch_tk.patch_report(fused)
    assert rep["fused_rope"] == ["model.layers.0.self_attn", "model.layers.1.self_attn"]
    assert type(fused.model.layers[0].self_attn).__name__ == "TKLlamaAttentionRope"
    ids = torch.randint(0, 128, (2, 160))  # 320 tokens: above attention.SMALL_TOKENS
    losses, grads = [], []
    for m in (stock, torch.compile(fused) if compiled else fused):
        with torch.profiler.profile() as prof:
            out = m(input_ids=ids, labels=ids)
            out.loss.backward()
        calls = sum(e.name == "tk::linear_rope" for e in prof.events())
        # q and k of both layers (through the cache path: the model makes a cache in train mode too);
        # compiling also traces the op (fake tensors), so more events there
        assert (calls == 0) if m is stock else (calls == 4 if not compiled else calls >= 4), calls
        losses.append(out.loss.detach())
        src = stock if m is stock else fused
        grads.append({n: p.grad for n, p in src.named_parameters()})
    assert rel_err(losses[1], losses[0]) < 1e-5
    for n, g in grads[0].items():
        assert rel_err(grads[1][n], g) < 1e-4, n
    torch_tk.unpatch_linear(fused)
    assert type(fused.model.layers[0].self_attn).__name__ == "LlamaAttention"


def test_fuse_rope_skips_with_reasons():
    import copy
    m = torch_tk.patch_linear(copy.deepcopy(_tiny_llama(1)), fuse_rope=True, exclude=["re:.*k_proj"])
    rep = torch_tk.patch_report(m)
    assert rep["fused_rope"] == [] and "k_proj" in rep["skipped"]["model.layers.0.self_attn"]


def test_small_calls_take_the_stock_forward():
    """At most SMALL_TOKENS tokens (decode steps): the stock forward (its projections' skinny kernels)."""
    import copy
    from torch_tk import attention
    stock = _tiny_llama(1)
    fused = torch_tk.patch_linear(copy.deepcopy(stock), fuse_rope=True)
    ids = torch.randint(0, 128, (1, attention.SMALL_TOKENS))
    with torch.profiler.profile() as prof:
        y = fused(input_ids=ids).logits
    assert not any(e.name == "tk::linear_rope" for e in prof.events())
    assert rel_err(y, stock(input_ids=ids).logits) < 1e-5


def test_autocast_casts_to_the_autocast_dtype():
    x, w = torch.randn(6, 16), torch.randn(32, 16)
    cos, sin = tables((6,), 8, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch_tk.linear_rope(x, w, cos, sin)
    assert y.dtype == torch.bfloat16
    assert rel_err(y, ref64(x.bfloat16(), w.bfloat16(), cos.bfloat16(), sin.bfloat16())) < 1e-2


def test_half_tables_are_the_first_halves():
    full = torch.randn(2, 5, 128)
    c, s = torch_tk.rope.half_tables(full, 2 * full)
    assert c.is_contiguous() and torch.equal(c, full[..., :64]) and torch.equal(s, 2 * full[..., :64])


def test_qkv_autocast_casts_mixed_dtypes():
    from torch_tk import rope
    x, cos, sin = torch.randn(6, 16).bfloat16(), *tables((6,), 8, torch.float32)
    ws = [torch.randn(32, 16) for _ in range(3)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        q, k, v = rope.linear_qkv_rope(x, *ws, cos, sin)
    assert q.dtype == k.dtype == v.dtype == torch.bfloat16
    assert rel_err(q, ref64(x, ws[0].bfloat16(), cos.bfloat16(), sin.bfloat16())) < 1e-2
    assert rel_err(v, x.double() @ ws[2].bfloat16().double().t()) < 1e-2


@pytest.mark.parametrize("shapes, exc, word", [
    (((2, 5, 8), (2, 5, 6)), ValueError, "one shape"),
    (((2, 5, 7), (2, 5, 7)), ValueError, "even, positive head_dim"),
    (((2, 5, 0), (2, 5, 0)), ValueError, "even, positive head_dim"),
])
def test_half_tables_refuses_mismatched_or_odd_tables(shapes, exc, word):
    with pytest.raises(exc, match=word):
        torch_tk.rope.half_tables(torch.randn(*shapes[0]), torch.randn(*shapes[1]))
    with pytest.raises(TypeError, match="dtype and device"):
        torch_tk.rope.half_tables(torch.randn(2, 8), torch.randn(2, 8).double())
