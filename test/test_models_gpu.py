"""End-to-end model tests on a Hopper GPU (bf16): whole HF models, stock vs patched.

Every test is marked ``gpu`` and skipped unless CUDA is available and
``torch_tk.hopper_available()`` (an sm_90 GPU), so the patched layers run the Hopper kernel:
each test checks ``kernel_counters()["hopper"]`` moved and ``["fallback"]`` did not.

* Tiny random Llama / GPT-2 (the configs of test_models_cpu.py) in bf16 on CUDA: logits, loss
  and every parameter gradient of a patched deep copy match the stock model within bf16
  tolerances (both are bf16 GEMMs with fp32 accumulation, rounded in different places).
* 20 AdamW steps, pure bf16 and fp32 master weights + autocast(bf16): loss curves agree.
* all-MiniLM-L6-v2 with real weights from the fp16 folder written by scripts/prepare_minilm.py
  (``$TK_MINILM_DIR``, else ``<repo>/.minilm``; skipped if absent): loaded, cast to bf16, stock vs
  patched + torch.compile sentence embeddings agree (cosine >= 0.999 per sentence).

Tolerances: a CPU emulation that perturbs every GEMM's fp32 result by 4e-3 relative (a
pessimistic stand-in for a different accumulation order) before the bf16 rounding gave at most
7e-3 (logits) and 1.4e-2 (any parameter gradient) on these models.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import torch

import torch_tk
from conftest import assert_close_rel, counter_delta, counters

transformers = pytest.importorskip("transformers")

from test_models_cpu import MODELS, SENTENCES, VOCAB, expected_patched, mean_pool_embed  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
HOPPER = HAS_CUDA and torch_tk.hopper_available()
_WHY = "needs a CUDA device" if not HAS_CUDA else "needs the Hopper kernel (sm_90 GPU: torch_tk.hopper_available())"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HOPPER, reason=_WHY)]

DEV = "cuda"
KERNEL = "hopper"  # the kernel_counters() key that must move
LOGITS_TOL = 3e-2
LOSS_TOL = 3e-2
GRAD_TOL = 5e-2
TRAIN_STEPS = 20
CURVE_TOL = 5e-2  # relative, per step
REPO = Path(__file__).resolve().parent.parent


# ============================================================================ helpers


def make_pair(name, device, dtype):
    """(stock, patched) on ``device``: one random fp32 init, cast, then a deep copy patched."""
    stock = MODELS[name]().to(device=device, dtype=dtype)
    patched = copy.deepcopy(stock)
    torch_tk.patch_linear(patched, strict=True)
    want = expected_patched(stock)
    rep = torch_tk.patch_report(patched)
    assert sorted(rep["patched"]) == want, rep
    assert "output" in rep["skipped"].get("lm_head", "").lower(), rep["skipped"]
    return stock, patched, want


def check_counts(delta, kernel, at_least, exact=None):
    assert delta[kernel] >= at_least, f"expected >= {at_least} {kernel} calls, counters moved by {delta}"
    if exact is not None:
        assert delta[kernel] == exact, f"expected {exact} {kernel} calls, counters moved by {delta}"
    assert delta["fallback"] == 0, f"fallback calls: {delta}; reasons: {torch_tk.fallback_reasons()}"
    others = {k: v for k, v in delta.items() if k not in (kernel, "fallback")}
    assert not any(others.values()), f"calls on another path: {delta}"


def run_fwd_bwd(name, device=DEV, kernel=KERNEL, dtype=torch.bfloat16):
    stock, patched, want = make_pair(name, device, dtype)
    stock.eval()
    patched.eval()
    ids = torch.randint(0, VOCAB, (2, 24)).to(device)

    out_s = stock(input_ids=ids, labels=ids)
    out_s.loss.backward()

    before = counters()
    out_p = patched(input_ids=ids, labels=ids)
    fwd = counter_delta(before, counters())
    out_p.loss.backward()
    if device != "cpu":
        torch.cuda.synchronize()
    total = counter_delta(before, counters())
    check_counts(fwd, kernel, len(want), exact=len(want))
    check_counts(total, kernel, 3 * len(want))  # + dgrad and wgrad per layer

    assert out_p.logits.dtype == out_s.logits.dtype == dtype
    assert torch.isfinite(out_p.logits).all()
    assert_close_rel(out_p.logits, out_s.logits, LOGITS_TOL, f"{name} logits")
    assert_close_rel(out_p.loss, out_s.loss, LOSS_TOL, f"{name} loss")
    sp = dict(stock.named_parameters())
    worst = (0.0, "")
    for n, p in patched.named_parameters():
        assert sp[n].grad is not None and p.grad is not None, n
        assert p.grad.dtype == dtype, n
        err = assert_close_rel(p.grad, sp[n].grad, GRAD_TOL, f"{name} grad {n}")
        worst = max(worst, (err, n))
    print(f"\n{name} {device} {dtype}: worst parameter-grad rel-norm {worst[0]:.2e} ({worst[1]})")


def run_training(name, mode, device=DEV, kernel=KERNEL):
    """``mode``: "bf16" (parameters, activations and AdamW state in bf16) or "autocast" (fp32
    parameters and AdamW, forward under torch.autocast(bf16))."""
    dtype = torch.bfloat16 if mode == "bf16" else torch.float32
    stock, patched, want = make_pair(name, device, dtype)
    g = torch.Generator().manual_seed(2024 + len(name) + len(mode))
    batches = [torch.randint(0, VOCAB, (4, 16), generator=g).to(device) for _ in range(TRAIN_STEPS)]

    def train(model):
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses = []
        for ids in batches:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16,
                                enabled=mode == "autocast"):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ls = train(stock)
    before = counters()
    lp = train(patched)
    check_counts(counter_delta(before, counters()), kernel, TRAIN_STEPS * 3 * len(want))
    assert all(p.dtype == dtype for p in patched.parameters())
    assert all(map(lambda x: x == x and abs(x) < 1e4, lp)), lp
    rel = [abs(a - b) / abs(b) for a, b in zip(lp, ls)]
    print(f"\n{name} {mode}: max per-step relative loss difference {max(rel):.2e}")
    assert max(rel) < CURVE_TOL, f"{name} {mode} loss curves differ by {max(rel):.3e} rel: stock {ls} patched {lp}"


def minilm_dir():
    env = os.environ.get("TK_MINILM_DIR")
    path = Path(env) if env else REPO / ".minilm"
    if not ((path / "config.json").is_file() and (path / "model.safetensors").is_file()):
        pytest.skip(f"no all-MiniLM-L6-v2 folder at {path} (set TK_MINILM_DIR, or write <repo>/.minilm with "
                    "python3 scripts/prepare_minilm.py and carry it to this machine)")
    return path


def run_minilm(path, device=DEV, kernel=KERNEL, backend=None, dtype=torch.bfloat16, cos_min=0.999):
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    base = AutoModel.from_pretrained(str(path)).eval()  # fp16 weights in the folder
    assert type(base).__name__ == "BertModel"
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=128, return_tensors="pt").to(device)

    with torch.no_grad():
        ref32 = mean_pool_embed(base.to(device=device, dtype=torch.float32), batch)
        stock = base.to(dtype=dtype)  # the setting: fp16 checkpoint, run in bf16
        ref = mean_pool_embed(stock, batch)

    patched = copy.deepcopy(stock)
    torch_tk.patch_linear(patched, strict=True)
    rep = torch_tk.patch_report(patched)
    linears = sorted(n for n, m in stock.named_modules() if type(m) is torch.nn.Linear)
    assert len(linears) == 6 * 6 + 1 and sorted(rep["patched"]) == linears, rep
    print(f"\nMiniLM ({path}): {len(rep['patched'])} Linear layers patched")

    torch._dynamo.reset()
    compiled = torch.compile(patched, backend=backend or os.environ.get("TK_TEST_COMPILE_BACKEND", "inductor"))
    try:
        before = counters()
        with torch.no_grad():
            out = mean_pool_embed(compiled, batch)
            out2 = mean_pool_embed(compiled, batch)
        if device != "cpu":
            torch.cuda.synchronize()
        check_counts(counter_delta(before, counters()), kernel, 2 * len(linears))
    finally:
        torch._dynamo.reset()

    cos = torch.nn.functional.cosine_similarity(out.double(), ref.double(), dim=-1)
    cos32 = torch.nn.functional.cosine_similarity(out.double(), ref32.double(), dim=-1)
    print("MiniLM cosine patched+compiled vs stock:", " ".join(f"{c:.6f}" for c in cos.tolist()))
    print("MiniLM cosine patched+compiled vs fp32:", " ".join(f"{c:.6f}" for c in cos32.tolist()))
    assert bool((cos >= cos_min).all()), f"cosine vs stock per sentence {cos.tolist()}"
    assert bool((cos32 >= 0.99).all()), f"cosine vs the fp32 model per sentence {cos32.tolist()}"
    cos2 = torch.nn.functional.cosine_similarity(out2.double(), out.double(), dim=-1)
    assert bool((cos2 >= 0.99999).all()), f"second compiled call differs: {cos2.tolist()}"
    sim = ref32 @ ref32.t()  # real weights: the paraphrase pair is far closer than unrelated sentences
    assert sim[0, 1] > 0.5 and sim[0, 1] > sim[0, 3] + 0.3, sim


# ============================================================================ tests


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_bf16_logits_loss_grads_match_stock_gpu(name):
    run_fwd_bwd(name)


@pytest.mark.parametrize("mode", ["bf16", "autocast"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_adamw_training_matches_stock_gpu(name, mode):
    run_training(name, mode)


def test_minilm_pretrained_bf16_patched_compiled_gpu(monkeypatch):
    path = minilm_dir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    run_minilm(path)
