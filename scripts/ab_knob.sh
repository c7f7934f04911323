#!/usr/bin/env bash
# Device A/B of environment-knob settings on one build: one bench_gemm process per (round,
# setting), settings alternating, NT by default. Prints one line per run: the ratios
# ours/torch.mm per shape, then the per-shape median ms of ours for each setting.
# Usage (after a build in the same device call):
#   AB_SHAPES=MxNxK,... AB_SETTINGS="TK_X=0 TK_X=1" [AB_ROUNDS=3] [AB_LAYOUTS=NT] bash scripts/ab_knob.sh
# or AB_SUITE=model (a bench_gemm suite, its own layouts) in place of AB_SHAPES; TK_BENCH_L2=clean|warm
# picks the L2 state before each call (bench_gemm --l2).
# A setting is one space-free word VAR=value[,VAR=value...] (use "-" for no variable).
set -uo pipefail
OUT=${OUT:-/tmp/tk_ab}
mkdir -p "$OUT"
if [ -n "${AB_SUITE:-}" ]; then sel=(--suite "$AB_SUITE"); else
  sel=(--shapes "${AB_SHAPES:?AB_SHAPES: comma list MxNxK (or AB_SUITE)}" --layouts "${AB_LAYOUTS:-NT}"); fi
for r in $(seq "${AB_ROUNDS:-3}"); do
  for v in ${AB_SETTINGS:?AB_SETTINGS: space list of VAR=value}; do
    e=(); [ "$v" != - ] && e=(${v//,/ })
    log="$OUT/ab_${v//[^A-Za-z0-9_]/_}_$r.log"
    env "${e[@]}" timeout 120 python3 benchmarks/bench_gemm.py "${sel[@]}" \
      --rounds 2 --rep-ms 40 > "$log" 2>&1
    echo "r$r $v: $(grep -E "^${AB_SUITE:-custom} " "$log" | awk '{printf "%s ", $8}')"
  done
done
echo "== per shape: ms of ours (median over rounds) per setting"
python3 scripts/ab_summary.py "$OUT" "${AB_SUITE:-custom}" ${AB_SETTINGS}
