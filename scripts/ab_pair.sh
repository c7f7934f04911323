#!/usr/bin/env bash
# Device A/B of tk.gemm_pair on two streams (TK_PAIR_STREAMS=1) against the products in turn (the
# default), on an installed build (pip install -e ., or scripts/use_device_so.sh NAME):
#   [AB_ROUNDS=2] [AB_MODEL_ROUNDS=3] [AB_SKIP_TESTS=1] [AB_SKIP_MODEL=1] OUT=... bash scripts/ab_pair.sh
# 1. the pair's GPU tests (test_gemm_pair_gpu.py: both modes, the child process runs TK_PAIR_STREAMS=1);
# 2. benchmarks/pair_bench.py under TK_PAIR_STREAMS=1 (one process: torch.mm x2, tk.gemm x2, the
#    pair), L2 warm (back to back, as in a step) and dirty (do_bench's flush);
# 3. bench_model.py, one process per setting, alternating 0 / 1, AB_ROUNDS times (its patched /
#    stock ratio under each; the stock model never calls tk ops, so it is the control).
# Writes logs under $OUT (default /tmp/tk_ab_pair) and prints a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_ab_pair}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
summary=""
if [ -z "${AB_SKIP_TESTS:-}" ]; then
  timeout 600 python3 -m pytest -q -ra test/test_gemm_pair_gpu.py > "$OUT/pair_tests.log" 2>&1
  summary="tests rc=$?: $(tail -n 1 "$OUT/pair_tests.log")"
  echo "$summary ($(( $(date +%s) - t0 )) s)"
fi
for l2 in warm dirty; do
  TK_PAIR_STREAMS=1 timeout 300 python3 benchmarks/pair_bench.py --rounds 3 --l2 $l2 > "$OUT/pair_bench_$l2.log" 2>&1
  echo "pair_bench --l2 $l2 rc=$? ($(( $(date +%s) - t0 )) s)"
done
if [ -z "${AB_SKIP_MODEL:-}" ]; then
  for r in $(seq "${AB_ROUNDS:-2}"); do
    for p in 0 1; do
      TK_PAIR_STREAMS=$p timeout 400 python3 benchmarks/bench_model.py --rounds "${AB_MODEL_ROUNDS:-3}" \
        --out "$OUT/bench_model_p${p}_r$r.json" > "$OUT/bench_model_p${p}_r$r.log" 2>&1
      echo "bench_model TK_PAIR_STREAMS=$p round $r rc=$? ($(( $(date +%s) - t0 )) s): $(tail -n 1 "$OUT/bench_model_p${p}_r$r.log")"
    done
  done
fi
echo "================ ab_pair summary"
echo "$summary"
for l2 in warm dirty; do echo "--- pair_bench, L2 $l2"; tail -n 5 "$OUT/pair_bench_$l2.log"; done
python3 - "$OUT" <<'EOF'
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "bench_model_p*_r*.json"))):
    p = os.path.basename(f).split("_")[2]
    try:
        rows.setdefault(p, []).append(json.load(open(f))["ratio_tk_over_stock"])
    except (OSError, ValueError, KeyError) as e:
        print(f"{f}: {e}")
for p, v in sorted(rows.items()):
    print(f"bench_model {p} (TK_PAIR_STREAMS={p[1:]}): patched / stock " + " ".join(f"{x:.4f}" for x in v))
EOF
