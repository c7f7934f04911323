"""tk.linear_backward_cat, tk.linear_backward_parts and tk.swiglu_down_backward_cat on the CPU reference: values against float64
(fresh random data), the weight gradient's row blocks, errors naming the argument (eager and fake),
double backward (gradcheck), torch.compile, and swiglu_mlp's backward through them."""
import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_tk
from conftest import rel_err


def _parts_case(m, rows, k, dtype):
    gs = [torch.randn(m, r, dtype=dtype) for r in rows]
    ws = [(torch.randn(r, k) * k ** -0.5).to(dtype) for r in rows]
    return gs, ws, torch.randn(m, k, dtype=dtype)


def _case(m, rows, k, dtype):
    gs, ws, x = _parts_case(m, rows, k, dtype)
    return torch.cat(gs, 1), ws, x


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("m,rows,k", [(37, [64, 64], 72), (5, [128, 192, 100], 33), (1, [8], 16), (100, [3, 5, 7, 9], 24)])
def test_values_against_float64(dtype, m, rows, k):
    g, ws, x = _case(m, rows, k, dtype)
    gi, gw = torch_tk.linear_backward_cat(g, ws, x)
    assert gi.shape == (m, k) and gw.shape == (sum(rows), k) and gi.dtype == gw.dtype == dtype
    assert gi.is_contiguous() and gw.is_contiguous()
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2}[dtype]
    assert rel_err(gi, g.double() @ torch.cat(ws).double()) < tol
    start = 0
    for w in ws:  # each layer's weight gradient is its block of rows
        r = w.shape[0]
        assert rel_err(gw[start:start + r], g[:, start:start + r].double().t() @ x.double()) < tol
        start += r


def test_same_bits_as_separate_linear_backwards():
    g, ws, x = _case(64, [64, 128], 40, torch.float32)
    gi, gw = torch_tk.linear_backward_cat(g, ws, x)
    gi0, gw0 = torch_tk.linear_backward(g[:, :64].contiguous(), ws[0], x)
    gi1, gw1 = torch_tk.linear_backward(g[:, 64:].contiguous(), ws[1], x)
    assert rel_err(gi, gi0.double() + gi1.double()) < 1e-6
    assert torch.equal(gw[:64], gw0) and torch.equal(gw[64:], gw1)


@pytest.mark.parametrize("make,exc,word", [
    (lambda: (torch.randn(4, 8), [], torch.randn(4, 3)), ValueError, "at least one"),
    (lambda: (torch.randn(4, 8), [torch.randn(8, 3)], torch.randn(4, 3, 1)), ValueError, "`input`"),
    (lambda: (torch.randn(4, 8, 1), [torch.randn(8, 3)], torch.randn(4, 3)), ValueError, "`grad_output`"),
    (lambda: (torch.randn(4, 8), [torch.randn(4, 3), torch.randn(4)], torch.randn(4, 3)), ValueError, "weights[1]"),
    (lambda: (torch.randn(4, 8), [torch.randn(4, 3), torch.randn(4, 2)], torch.randn(4, 3)), ValueError, "weights[1]"),
    (lambda: (torch.randn(4, 9), [torch.randn(4, 3), torch.randn(4, 3)], torch.randn(4, 3)), ValueError, "together"),
    (lambda: (torch.randn(5, 8), [torch.randn(4, 3), torch.randn(4, 3)], torch.randn(4, 3)), ValueError, "rows but `input`"),
    (lambda: (torch.randn(4, 8), [torch.randn(4, 3), torch.randn(4, 3).double()], torch.randn(4, 3)), TypeError, "weights[1]"),
    (lambda: (torch.randn(4, 8).half(), [torch.randn(8, 3)], torch.randn(4, 3)), TypeError, "`grad_output`"),
    (lambda: (torch.randn(4, 8, dtype=torch.complex64), [torch.randn(8, 3)], torch.randn(4, 3, dtype=torch.complex64)),
     TypeError, "`input`"),
])
def test_errors_name_the_argument(make, exc, word):
    with pytest.raises(exc, match=word.replace("[", r"\[").replace("]", r"\]")):
        torch_tk.linear_backward_cat(*make())
    with FakeTensorMode() as mode:  # the fake says the same
        args = make()
        fake = (mode.from_tensor(args[0]), [mode.from_tensor(w) for w in args[1]], mode.from_tensor(args[2]))
        with pytest.raises(exc, match=word.replace("[", r"\[").replace("]", r"\]")):
            torch.ops.tk.linear_backward_cat(*fake)


def test_fake_shapes():
    with FakeTensorMode():
        gi, gw = torch.ops.tk.linear_backward_cat(torch.empty(10, 12), [torch.empty(4, 6), torch.empty(8, 6)],
                                                  torch.empty(10, 6))
    assert gi.shape == (10, 6) and gw.shape == (12, 6)


def test_double_backward_gradcheck():
    g, ws, x = _case(6, [3, 5], 4, torch.float64)
    args = [g.requires_grad_(), *[w.requires_grad_() for w in ws], x.requires_grad_()]

    def fn(g, w0, w1, x):
        return torch_tk.linear_backward_cat(g, [w0, w1], x)

    assert torch.autograd.gradcheck(fn, args)


def test_compiled_matches_eager():
    g, ws, x = _case(33, [64, 32, 16], 24, torch.float32)
    fn = torch.compile(lambda g, w0, w1, w2, x: torch_tk.linear_backward_cat(g, [w0, w1, w2], x), fullgraph=True)
    for got, ref in zip(fn(g, *ws, x), torch_tk.linear_backward_cat(g, ws, x)):
        assert torch.equal(got, ref)


def _pack(g, u):
    lead, i = g.shape[:-1], g.shape[-1]
    return torch.stack((g.reshape(*lead, i // 128, 128), u.reshape(*lead, i // 128, 128)), dim=-2).reshape(*lead, 2 * i)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_swiglu_down_backward_cat_is_the_two_side_by_side(dtype):
    dy, wd = torch.randn(3, 7, 40, dtype=dtype), torch.randn(40, 256, dtype=dtype)
    gu = _pack(torch.randn(3, 7, 256, dtype=dtype) * 3, torch.randn(3, 7, 256, dtype=dtype))
    both = torch_tk.swiglu_down_backward_cat(dy, wd, gu)
    d_g, d_u = torch_tk.swiglu_down_backward(dy, wd, gu)
    assert both.shape == (3, 7, 512) and both.is_contiguous()
    assert torch.equal(both[..., :256], d_g) and torch.equal(both[..., 256:], d_u)
    with FakeTensorMode() as mode:
        f = torch.ops.tk.swiglu_down_backward_cat(*(mode.from_tensor(t) for t in (dy, wd, gu)))
    assert f.shape == both.shape
    with pytest.raises(ValueError, match="tk.swiglu_down_backward_cat: the intermediate size"):
        torch_tk.swiglu_down_backward_cat(torch.randn(4, 8), torch.randn(8, 100), torch.randn(4, 200))


def test_swiglu_mlp_backward_takes_the_cat_ops():
    """The whole MLP's training backward: [d_gate | d_up] then linear_backward_cat (gradients against float64)."""
    x = torch.randn(2, 9, 48, dtype=torch.float64, requires_grad=True)
    wg, wu = (torch.randn(256, 48, dtype=torch.float64) * 0.2).requires_grad_(), (torch.randn(256, 48, dtype=torch.float64) * 0.2).requires_grad_()
    wd = (torch.randn(48, 256, dtype=torch.float64) * 0.1).requires_grad_()
    r = torch.randn(2, 9, 48, dtype=torch.float64)
    (torch_tk.swiglu_mlp(x, wg, wu, wd) * r).sum().backward()
    x64, wg64, wu64, wd64 = (t.detach().clone().requires_grad_() for t in (x, wg, wu, wd))
    ((torch.nn.functional.silu(x64 @ wg64.t()) * (x64 @ wu64.t())) @ wd64.t() * r).sum().backward()
    for got, ref in ((x.grad, x64.grad), (wg.grad, wg64.grad), (wu.grad, wu64.grad), (wd.grad, wd64.grad)):
        assert rel_err(got, ref) < 1e-12
    gm = torch.fx.experimental.proxy_tensor.make_fx(
        lambda x, wg, wu, wd, r: torch.autograd.grad((torch_tk.swiglu_mlp(x, wg, wu, wd) * r).sum(), (x, wg, wu, wd)))(
        x, wg, wu, wd, r)
    names = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert "tk.swiglu_down_backward_cat.default" in names and "tk.linear_backward_cat.default" in names
    assert "tk.gemm_pair.default" not in names


@pytest.mark.parametrize("form", ["parts", "cat", "separate"])
def test_fused_attention_backward_takes_the_joint_ops(form, monkeypatch):
    """patch_linear(fuse_rope=True): q / k / v as tk.linear_qkv_rope, whose backward is one
    tk.linear_backward_parts per layer (rope.QKV_PARTS = False: a cat and tk.linear_backward_cat);
    attention.QKV_CAT_BACKWARD = False (the A/B) gives the three linear backwards. Gradients against
    the stock model either way."""
    import copy
    from test_rope_cpu import _tiny_llama
    from torch_tk import attention, rope
    joint = form != "separate"
    monkeypatch.setattr(attention, "QKV_CAT_BACKWARD", joint)
    monkeypatch.setattr(rope, "QKV_PARTS", form == "parts")
    stock = _tiny_llama()
    fused = torch_tk.patch_linear(copy.deepcopy(stock), fuse_rope=True)
    ids = torch.randint(0, 128, (2, 160))  # above attention.SMALL_TOKENS
    stock(input_ids=ids, labels=ids).loss.backward()
    with torch.profiler.profile() as prof:
        fused(input_ids=ids, labels=ids).loss.backward()
    names = [e.name for e in prof.events()]
    # (a Python custom op's profiler name varies between torch versions: count the C++ ops)
    assert names.count("tk::linear_backward_cat") == (2 if form == "cat" else 0)  # (swiglu_mlp is not fused here)
    assert names.count("tk::linear_backward_parts") == (2 if form == "parts" else 0)
    # o / gate / up / down projections' (4 a layer), and without the joint op q / k / v's (3 more)
    assert names.count("tk::linear_backward") == (8 if joint else 14)
    for (n, p), q in zip(stock.named_parameters(), fused.parameters()):
        assert rel_err(q.grad, p.grad) < 1e-4, n


def test_qkv_op_refuses_table_gradients():
    """tk.linear_qkv_rope (as tk.linear_rope): no gradient for cos / sin -- a clear NotImplementedError, by design."""
    x, wq, wk, wv = torch.randn(5, 16), torch.randn(128, 16), torch.randn(128, 16), torch.randn(32, 16)
    cos, sin = torch.randn(5, 64, requires_grad=True), torch.randn(5, 64)
    with pytest.raises(NotImplementedError, match="tk.linear_qkv_rope: gradients with respect to `cos` / `sin`"):
        torch.ops.tk.linear_qkv_rope(x, wq, wk, wv, cos, sin)
    q, k, v = torch.ops.tk.linear_qkv_rope(x, wq, wk, wv, cos.detach(), sin)  # the same values as the three ops
    assert torch.equal(q, torch_tk.linear_rope(x, wq, cos.detach(), sin)) and torch.equal(v, x @ wv.t())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("m,rows,k", [(37, [64, 64], 72), (5, [128, 192, 100], 33), (1, [8], 16), (100, [3, 5, 7, 9], 24)])
def test_parts_values_against_float64(dtype, m, rows, k):
    gs, ws, x = _parts_case(m, rows, k, dtype)
    gi, gws = torch_tk.linear_backward_parts(gs, ws, x)
    assert gi.shape == (m, k) and gi.dtype == dtype and gi.is_contiguous() and len(gws) == len(ws)
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 1e-2}[dtype]
    assert rel_err(gi, sum(g.double() @ w.double() for g, w in zip(gs, ws))) < tol
    for g, w, gw in zip(gs, ws, gws):
        assert gw.shape == w.shape and gw.dtype == dtype and gw.is_contiguous()
        assert rel_err(gw, g.double().t() @ x.double()) < tol
    _, gw_all = torch.ops.tk.linear_backward_parts(gs, ws, x)  # the op itself: one tensor, the blocks in order
    assert torch.equal(gw_all, torch.cat(gws))
    gi_cat, _ = torch_tk.linear_backward_cat(torch.cat(gs, 1), ws, x)  # the one-tensor op: the same product
    assert torch.equal(gi, gi_cat)


@pytest.mark.parametrize("make,exc,word", [
    (lambda: ([], [], torch.randn(4, 3)), ValueError, "at least one"),
    (lambda: ([torch.randn(4, 8)], [torch.randn(8, 3), torch.randn(4, 3)], torch.randn(4, 3)), ValueError,
     "one tensor per weight"),
    (lambda: ([torch.randn(4, 8)], [torch.randn(8, 3)], torch.randn(4, 3, 1)), ValueError, "`input`"),
    (lambda: ([torch.randn(4, 8, 1)], [torch.randn(8, 3)], torch.randn(4, 3)), ValueError, "grad_outputs[0]"),
    (lambda: ([torch.randn(4, 8), torch.randn(4, 5)], [torch.randn(8, 3), torch.randn(4, 3)], torch.randn(4, 3)),
     ValueError, "grad_outputs[1]"),
    (lambda: ([torch.randn(4, 8), torch.randn(5, 4)], [torch.randn(8, 3), torch.randn(4, 3)], torch.randn(4, 3)),
     ValueError, "rows but `input`"),
    (lambda: ([torch.randn(4, 8), torch.randn(4, 4).double()], [torch.randn(8, 3), torch.randn(4, 3)],
              torch.randn(4, 3)), TypeError, "grad_outputs[1]"),
    (lambda: ([torch.randn(4, 8)], [torch.randn(8, 2)], torch.randn(4, 3)), ValueError, "weights[0]"),
])
def test_parts_errors_name_the_argument(make, exc, word):
    pat = word.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(exc, match=pat):
        torch_tk.linear_backward_parts(*make())
    with FakeTensorMode() as mode:  # the fake says the same
        gs, ws, x = make()
        fake = ([mode.from_tensor(g) for g in gs], [mode.from_tensor(w) for w in ws], mode.from_tensor(x))
        with pytest.raises(exc, match=pat):
            torch.ops.tk.linear_backward_parts(*fake)


@pytest.mark.parametrize("call,word", [
    (lambda: torch_tk.linear_backward_cat(torch.randn(4, 8), torch.randn(8, 3), torch.randn(4, 3)),
     "tk.linear_backward_cat: `weights` must be a list or tuple of tensors, got Tensor (one tensor: wrap"),
    (lambda: torch_tk.linear_backward_cat(torch.randn(4, 8), [torch.randn(8, 3), "w"], torch.randn(4, 3)),
     "`weights` must be a list or tuple of tensors, got list"),
    (lambda: torch_tk.linear_backward_parts(torch.randn(4, 8), [torch.randn(8, 3)], torch.randn(4, 3)),
     "tk.linear_backward_parts: `grad_outputs` must be a list or tuple of tensors, got Tensor"),
    (lambda: torch_tk.linear_backward_parts([torch.randn(4, 8)], torch.randn(8, 3), torch.randn(4, 3)),
     "tk.linear_backward_parts: `weights` must be a list or tuple of tensors, got Tensor"),
])
def test_lists_of_tensors_required(call, word):
    # (a Tensor passed as the list would be taken row by row: weights[0] would be a 1-D row)
    with pytest.raises(TypeError, match=re.escape(word)):
        call()
    assert [w.shape for w in torch_tk.linear_backward_parts((torch.randn(4, 8),), (torch.randn(8, 3),),
                                                            torch.randn(4, 3))[1]] == [(8, 3)]  # tuples do


def test_parts_fake_shapes_and_double_backward():
    with FakeTensorMode():  # the op returns the weights' gradients as one tensor (their row blocks)
        gi, gw = torch.ops.tk.linear_backward_parts([torch.empty(10, 4), torch.empty(10, 8)],
                                                    [torch.empty(4, 6), torch.empty(8, 6)], torch.empty(10, 6))
    assert gi.shape == (10, 6) and gw.shape == (12, 6)
    gs, ws, x = _parts_case(6, [3, 5], 4, torch.float64)
    args = [*[g.requires_grad_() for g in gs], *[w.requires_grad_() for w in ws], x.requires_grad_()]

    def fn(g0, g1, w0, w1, x):
        gi, (gw0, gw1) = torch_tk.linear_backward_parts([g0, g1], [w0, w1], x)
        return gi, gw0, gw1

    assert torch.autograd.gradcheck(fn, args)


def test_parts_compiled_matches_eager():
    gs, ws, x = _parts_case(33, [64, 32, 16], 24, torch.float32)
    fn = torch.compile(lambda g0, g1, g2, w0, w1, w2, x: torch_tk.linear_backward_parts([g0, g1, g2], [w0, w1, w2], x),
                       fullgraph=True)
    gi, gws = fn(*gs, *ws, x)
    ref_gi, ref_gws = torch_tk.linear_backward_parts(gs, ws, x)
    assert torch.equal(gi, ref_gi) and all(torch.equal(a, b) for a, b in zip(gws, ref_gws))


@pytest.mark.parametrize("op", ["cat", "parts"])
def test_opcheck(op):
    """Schema, fake and autograd registration as torch.library.opcheck checks them."""
    gs, ws, x = _parts_case(9, [64, 32], 16, torch.float64)
    ws = [w.requires_grad_() for w in ws]
    if op == "cat":
        torch.library.opcheck(torch.ops.tk.linear_backward_cat.default, (torch.cat(gs, 1).requires_grad_(), ws, x))
    else:
        torch.library.opcheck(torch.ops.tk.linear_backward_parts.default, ([g.requires_grad_() for g in gs], ws, x))


@pytest.mark.parametrize("end0,end1,total", [(1, 2, 3), (4, 9, 12), (32, 64, 96), (4, 2 ** 31 - 1, 9), (1, 2 ** 31 - 1, 2)])
def test_k_part_tiles_every_part_once(end0, end1, total):
    """kittens::k_part (the K-parts mainloop's k index, exported by torch_tk._C): k tiles 0 .. T - 1 go to
    part 0's tiles 0 .. end0 - 1, then part 1's 0 .. end1 - end0 - 1, then part 2's, in order (end1
    past the tile count: two parts)."""
    from torch_tk import _C
    expect = [(0, t) for t in range(end0)] + [(1, t) for t in range(min(end1, total) - end0)]
    expect += [(2, t) for t in range(total - min(end1, total))]
    assert [tuple(_C.k_part(t, end0, end1)) for t in range(total)] == expect


@pytest.mark.parametrize("rows", [[128, 128], [256, 128, 104], [2048, 512, 512], [128, 384, 8]])
def test_m_part_row_tiles_stay_in_one_part(rows):
    """The M-parts GEMM (producer_loads.cuh unit_loads) reads row tile t of the joint weight gradient
    through part k_part(t, e0, e1).part's map at row 128 * k_part(...).tile, with e0 / e1 the parts'
    ends in 128-row tiles (as launch_impl.cuh sets them): every row of every part is read by exactly
    one tile at its own place, and no tile reads rows of two parts."""
    from torch_tk import _C
    bm, total = 128, sum(rows)
    e0 = rows[0] // bm
    e1 = (rows[0] + rows[1]) // bm if len(rows) == 3 else 2 ** 31 - 1
    starts = [0, rows[0], rows[0] + (rows[1] if len(rows) == 3 else 0)]
    seen = []
    for t in range((total + bm - 1) // bm):
        part, tile = _C.k_part(t, e0, e1)
        assert starts[part] + tile * bm == t * bm  # the tile's rows at their joint place
        seen += [(part, tile * bm + r) for r in range(bm) if tile * bm + r < rows[part]]
    assert seen == [(p, r) for p in range(len(rows)) for r in range(rows[p])]
