#!/usr/bin/env bash
# Device A/B of two builds of this tree: A as checked out, B with TK_BUILD_DEFINES=$AB_DEFINES
# (compile-time variants, e.g. TK_STAGING_BUFFERS_256=4), and a third, C, when AB_DEFINES_C is set. Builds both, checks B with a short GPU
# test selection, then times both alternately (one bench_gemm process per round and build).
# Usage: AB_DEFINES=NAME=VALUE[,...] AB_SHAPES=MxNxK,... [AB_ROUNDS=3] [AB_LAYOUTS=NT]
#        (or AB_SUITE=name, a bench_gemm suite with its own layouts, in place of AB_SHAPES)
#        [AB_TESTS="pytest -k expression"] [AB_TEST_S=150] bash scripts/ab_build.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_abb}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
build() {  # $1: defines ("" for A), $2: name; AB_REUSE=1: keep a build from an earlier call (warm machine)
  if [ -n "${AB_REUSE:-}" ] && [ -f "/tmp/tk_ab_$2.so" ]; then echo "reusing /tmp/tk_ab_$2.so"; return; fi
  rm -rf build
  if ! TK_BUILD_DEFINES="$1" MAX_JOBS=16 python3 -m pip install -v --no-build-isolation --no-deps -e . \
      > "$OUT/build_$2.log" 2>&1; then
    tail -n 30 "$OUT/build_$2.log"; echo "BUILD $2 FAILED"; exit 1
  fi
  cp torch_tk/_C*.so "/tmp/tk_ab_$2.so"
}
use() { cp "/tmp/tk_ab_$1.so" "$(ls torch_tk/_C*.so | head -n 1)"; }
build "" A
build "${AB_DEFINES:?AB_DEFINES: NAME=VALUE list for build B}" B
VARIANTS="A B"
if [ -n "${AB_DEFINES_C:-}" ]; then build "$AB_DEFINES_C" C; VARIANTS="A B C"; fi
if [ -n "${AB_TESTS:-}" ]; then
  use B  # the last build in place may be C
  # time-boxed (AB_TEST_S, default 150 s), so that a broad selection cannot eat the timing rounds
  timeout "${AB_TEST_S:-150}" python3 -m pytest -q -x test/test_gpu.py test/test_gpu_plans.py test/test_gpu_widths.py test/test_gpu_runtime.py -k "$AB_TESTS" > "$OUT/pytest_B.log" 2>&1
  echo "B tests (rc $?): $(tail -n 1 "$OUT/pytest_B.log")"
fi
if [ -n "${AB_SUITE:-}" ]; then sel=(--suite "$AB_SUITE"); else
  sel=(--shapes "${AB_SHAPES:?AB_SHAPES: comma list MxNxK (or AB_SUITE)}" --layouts "${AB_LAYOUTS:-NT}"); fi
for r in $(seq "${AB_ROUNDS:-3}"); do
  for v in $VARIANTS; do
    use $v
    timeout 150 python3 benchmarks/bench_gemm.py "${sel[@]}" --rounds 2 --rep-ms 40 > "$OUT/ab_${v}_$r.log" 2>&1
    echo "r$r $v: $(grep -E "^${AB_SUITE:-custom} " "$OUT/ab_${v}_$r.log" | awk '{printf "%s ", $8}')"
  done
done
echo "== per shape: ms of ours (median over rounds), A / B = ${AB_DEFINES} / C = ${AB_DEFINES_C:-}"
python3 - "$OUT" "${AB_SUITE:-custom}" <<'PY'
import glob, statistics, sys
rows = {}
for v in "ABC":
    for f in glob.glob(f"{sys.argv[1]}/ab_{v}_*.log"):
        for line in open(f):
            p = line.split()
            if p and p[0] == sys.argv[2]:
                rows.setdefault((p[1], p[2]), {}).setdefault(v, []).append((float(p[8]), float(p[7])))
for (shape, lay), by in rows.items():
    cells = [f"{v}: {statistics.median(t for t, _ in by[v]):.4f} ms ({statistics.median(r for _, r in by[v]):.3f}x)"
             for v in "ABC" if v in by]
    print(shape, lay, " | ".join(cells))
PY
