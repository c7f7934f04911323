# Device A/B batch: the committed tree against the working tree, normal builds, one process per
# build and round, alternating, on one machine. Before the device call, here:
#   rm -rf abtree && mkdir abtree && git archive HEAD | tar -x -C abtree   (untracked; delete after)
# then on the device: [AB_ROUNDS=3] [AB_SHAPES=...] [AB_LAYOUTS=NT] [AB_ENV="VAR=x ..."]
#   [AB_SKIP_TESTS=1] [AB_CLOCKS=MxNxK:LAY,...] bash scripts/ab_session.sh
# Knob variants of one build need no abtree: run benchmarks/bench_gemm.py under each setting.
[ -d abtree ] || { echo "abtree/ missing (see the header)"; exit 1; }
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl && export PYTHONPATH=/tmp/tk_site
t0=$(date +%s)
(cd abtree && MAX_JOBS=16 python3 setup.py build_ext --inplace > $OUT/build_base.log 2>&1) || { tail -20 $OUT/build_base.log; exit 1; }
MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo builds $(( $(date +%s)-t0 ))s
[ -n "$AB_SKIP_TESTS" ] || { timeout 150 python3 -m pytest test/test_gpu.py test/test_gpu_plans.py test/test_gpu_widths.py test/test_gpu_runtime.py -x -q > $OUT/pytest.log 2>&1; echo "tests rc=$? $(tail -1 $OUT/pytest.log)"; }
S=${AB_SHAPES:-4096x4096x4096,8192x4096x4096,8192x8192x8192,8192x28672x4096,8192x57344x8192,8192x8192x28672}
for r in $(seq ${AB_ROUNDS:-2}); do for v in base new; do
  P=/tmp/tk_site; [ $v = base ] && P=abtree:/tmp/tk_site
  env $AB_ENV PYTHONPATH=$P timeout 100 python3 benchmarks/bench_gemm.py --shapes $S --layouts ${AB_LAYOUTS:-NT} --rounds 2 --rep-ms 40 > $OUT/ab_${v}_$r.log 2>&1
  echo "== $v round $r $(( $(date +%s)-t0 ))s: $(grep -E '^custom' $OUT/ab_${v}_$r.log | awk '{print $8}' | tr '\n' ' ') | $(grep geomean $OUT/ab_${v}_$r.log)"
done; done
[ -z "$AB_CLOCKS" ] || for v in base new; do
  P=/tmp/tk_site; [ $v = base ] && P=abtree:/tmp/tk_site
  PYTHONPATH=$P timeout 120 python3 benchmarks/ab_env.py --clocks --shapes $AB_CLOCKS --variants "ours=" > $OUT/clocks_$v.log 2>&1
  echo "== clocks $v: $(grep -E '^[0-9]+x' $OUT/clocks_$v.log)"
done
