#!/usr/bin/env bash
# temporary device steps (not committed)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
t0=$(date +%s)
rm -rf build
if ! TK_EXPERIMENTS=1 MAX_JOBS=16 python3 -m pip install -v --no-build-isolation --no-deps -e . > $OUT/build_X.log 2>&1; then tail -30 $OUT/build_X.log; exit 1; fi
echo "build $(( $(date +%s) - t0 )) s"
S=1000x1001x999:NN,1000x1001x999:NT,1000x1000x1000:NT,1024x1024x1024:NT
timeout 60 python3 benchmarks/profile_shapes.py --flush --reps 20 $S > $OUT/prof.log 2>&1; echo "prof rc $?"; tail -40 $OUT/prof.log
for sh in 1000x1001x999:NN 1000x1000x1000:NT 1024x1024x1024:NT; do for x in 0 64 8192; do
  f=$OUT/tr_${sh//[^A-Za-z0-9]/_}_$x.log
  TK_TRACE_EXTRA=$x TK_TRACE_L2=dirty timeout 40 python3 scripts/pipeline_trace.py $sh > $f 2>&1
  echo "== $sh extra=$x"; grep -v "issue:\|full :" $f | head -14
done; done
echo "t $(( $(date +%s) - t0 )) s"
timeout 60 python3 benchmarks/bench_gemm.py --shapes 1000x1001x999,1000x1000x1000,1024x1024x1024 --layouts NN,NT --rounds 2 --rep-ms 40 > $OUT/bench.log 2>&1; grep -E "^custom" $OUT/bench.log
echo "t $(( $(date +%s) - t0 )) s"
