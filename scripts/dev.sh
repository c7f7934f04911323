#!/usr/bin/env bash
# One entry point for people and CI:
#   bash scripts/dev.sh install   install torch + test deps (pip) and build torch_tk in place
#   bash scripts/dev.sh demo      install if needed, then run the main job (python3 -m torch_tk.demo)
#   bash scripts/dev.sh test      install if needed, then run the test suite (GPU tests skip without a GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

install() {
  "$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install torch
  "$PY" -m pip install -q -r requirements-test.txt
  # The nvcc on PATH may be a wrapper outside the toolkit; setup.py finds the real CUDA_HOME.
  MAX_JOBS=${MAX_JOBS:-$(nproc)} "$PY" -m pip install -v --no-build-isolation --no-deps -e . > build.log 2>&1 || { tail -n 60 build.log; exit 1; }
  tail -n 2 build.log
}

built_and_current() {
  # The extension imports, and no source is newer than it.
  local so
  so=$(ls torch_tk/_C*.so 2>/dev/null | head -n 1) || return 1
  [ -n "$so" ] || return 1
  [ -z "$(find csrc setup.py -newer "$so" -type f | head -n 1)" ] || return 1
  "$PY" -c "import torch_tk" 2>/dev/null
}

ensure() { built_and_current || install; }

case "${1:-}" in
  install) install ;;
  demo) ensure; shift; "$PY" -m torch_tk.demo "$@" ;;
  test) ensure; shift; "$PY" -m pytest test -q -ra "$@" ;;
  *) echo "usage: bash scripts/dev.sh install|demo|test" >&2; exit 2 ;;
esac
