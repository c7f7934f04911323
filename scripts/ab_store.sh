export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl && export PYTHONPATH=/tmp/tk_site
t0=$(date +%s)
MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s)-t0 ))s
TK_HOPPER_STORE=copy timeout 200 python3 -m pytest test/test_gpu.py test/test_fuzz.py -x -q > $OUT/pytest_copy.log 2>&1; echo "copy tests rc=$? $(tail -1 $OUT/pytest_copy.log)  $(( $(date +%s)-t0 ))s"
S=4096x4096x4096,8192x4096x4096,8192x8192x8192,8192x28672x4096,8192x57344x8192
for r in 1 2; do for st in tma copy; do
  TK_HOPPER_STORE=$st timeout 100 python3 benchmarks/bench_gemm.py --shapes $S --layouts NT --rounds 2 --rep-ms 40 > $OUT/ab_${st}_$r.log 2>&1
  echo "== $st round $r $(( $(date +%s)-t0 ))s"; grep -E "^custom|geomean" $OUT/ab_${st}_$r.log | awk "{print \$2, \$5, \$6, \$8}"
done; done
