#!/usr/bin/env bash
# Builds the extension on this (GPU-less) machine for the device machine's Python and torch, so that a
# device call can skip its own build (~220 s of a 30-min device budget per call).
# Usage: [TK_BUILD_DEFINES=NAME=VALUE,...] [TK_EXPERIMENTS=1] bash scripts/build_device_so.sh NAME
#   -> .devso/NAME.so.gz (ignored; pass ".devso" in the device tool's carry, then on the device:
#      bash scripts/use_device_so.sh NAME   -- checks torch, installs the library in torch_tk/).
# The device image's torch is PyPI's 2.11.0+cu130 wheel for CPython 3.12 (checked by use_device_so.sh
# against TORCH_GIT below); the wheel is downloaded once into a venv under ~/.cache/tk_devso.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?NAME: the name of the library under .devso/}
TORCH_VERSION=2.11.0
PYVER=3.12
VENV=${TK_DEVSO_VENV:-$HOME/.cache/tk_devso/venv}
if [ ! -x "$VENV/bin/python" ]; then
  PY=""  # the first python$PYVER that runs (a pyenv shim may exist without that version selected)
  for c in $(command -v "python$PYVER") "$HOME"/.pyenv/versions/$PYVER*/bin/python$PYVER; do
    if [ -x "$c" ] && "$c" -c "import sys" 2>/dev/null; then PY=$c; break; fi
  done
  [ -n "$PY" ] || { echo "no python$PYVER here"; exit 1; }
  "$PY" -m venv "$VENV"
  # torch with its dependencies: `import torch` (setup.py) loads the CUDA runtime libraries (~3 GB)
  "$VENV/bin/pip" install -q "torch==$TORCH_VERSION" "setuptools<82" ninja numpy
fi
tmp=$(mktemp -d /tmp/tk_devso.XXXXXX)
# Built from a snapshot of the sources, so that editing the tree during the (~14-min) build is safe.
mkdir -p "$tmp/src" && cp -r csrc tools torch_tk setup.py pyproject.toml README.md scripts "$tmp/src/"
hash=$(cd "$tmp/src" && bash scripts/use_device_so.sh --source-hash)
(cd "$tmp/src" && MAX_JOBS=${MAX_JOBS:-$(nproc)} "$VENV/bin/python" setup.py -q build_ext --build-lib "$tmp/lib" \
  --build-temp "$tmp/tmp") > "$tmp/build.log" 2>&1 || { tail -n 40 "$tmp/build.log"; echo "BUILD FAILED ($tmp/build.log)"; exit 1; }
mkdir -p .devso
so=$(ls "$tmp"/lib/torch_tk/_C*.so)
# Debug sections stripped and gzipped: ~15 MB instead of ~73 (the device tool carries 64 MiB in all).
strip --strip-debug "$so"
gzip -1 -c "$so" > ".devso/$NAME.so.gz"
grep -E "Compiling entry|registers|spill" "$tmp/build.log" > ".devso/$NAME.build.log" || true  # ptxas facts (gpu_check.sh)
"$VENV/bin/python" -c 'import torch; print(torch.version.git_version)' > ".devso/$NAME.torch"
echo "$hash" > ".devso/$NAME.source"  # what it was built from (use_device_so.sh checks it)
grep -E "spill" "$tmp/build.log" | sort | uniq -c | sed 's/^/  ptxas: /'
echo ".devso/$NAME.so.gz ($(du -h ".devso/$NAME.so.gz" | cut -f1)) built with TK_BUILD_DEFINES='${TK_BUILD_DEFINES:-}' TK_EXPERIMENTS='${TK_EXPERIMENTS:-}'"
# Smoke test: torch_tk with this library imports into the same torch (op registration) and runs.
mkdir -p "$tmp/pkg" && cp -r torch_tk "$tmp/pkg/" && rm -f "$tmp"/pkg/torch_tk/_C*.so
cp "$so" "$tmp/pkg/torch_tk/_C$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
(cd "$tmp/pkg" && "$VENV/bin/python" -c "
import torch, torch_tk
a, b = torch.randn(33, 65, dtype=torch.float64), torch.randn(65, 17, dtype=torch.float64)
err = (torch_tk.gemm(a, b) - a @ b).abs().max().item()
assert err < 1e-9, err
print('  smoke: torch', torch.__version__, 'imports torch_tk; CPU gemm max error', err)")
rm -rf "$tmp"
