# This session's device A/B batch: start-of-session tree (abtree/, untracked) vs HEAD, normal builds.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl && export PYTHONPATH=/tmp/tk_site
t0=$(date +%s)
python3 -m pip uninstall -y -q torch_tk >/dev/null 2>&1
(cd abtree && MAX_JOBS=16 python3 setup.py build_ext --inplace > $OUT/build_base.log 2>&1) || { tail -20 $OUT/build_base.log; exit 1; }
echo base build $(( $(date +%s)-t0 ))s
MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo head build $(( $(date +%s)-t0 ))s
PYTHONPATH=abtree:/tmp/tk_site python3 -c "import torch_tk; print('base from', torch_tk.__file__)"
python3 -c "import torch_tk; print('head from', torch_tk.__file__)"
TK_HOPPER_CLUSTER=2 timeout 120 python3 -m pytest test/test_gpu.py -x -q > $OUT/pytest_c2.log 2>&1; echo "cluster2 tests rc=$? $(tail -1 $OUT/pytest_c2.log)"
M="--metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum"
for s in 8192x8192x8192:NT 8192x4096x4096:NT; do
  for v in base dyn static cluster2; do
    case $v in base) P=abtree:/tmp/tk_site; E="";; dyn) P=/tmp/tk_site; E="";; static) P=/tmp/tk_site; E="TK_HOPPER_DYNAMIC=0";; cluster2) P=/tmp/tk_site; E="TK_HOPPER_CLUSTER=2";; esac
    env $E PYTHONPATH=$P timeout 100 ncu --profile-from-start off $M python3 scripts/ncu_driver.py $s > $OUT/ncu_tmp.txt 2>&1
    echo "$s $v: $(grep -A4 'gemm_kernel' $OUT/ncu_tmp.txt | grep -E 'gpu__time|dram__|lts__t_bytes|per_second' | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')"
    [ $v = base ] && echo "$s torch: $(grep -A4 'nvjet' $OUT/ncu_tmp.txt | grep -E 'gpu__time|dram__|lts__t_bytes|per_second' | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')"
  done
done
echo "ncu done $(( $(date +%s)-t0 ))s"
S=4096x4096x4096,8192x4096x4096,8192x8192x8192,8192x28672x4096,8192x57344x8192,8192x8192x28672
for r in 1 2; do for v in base dyn cluster2; do
  case $v in base) P=abtree:/tmp/tk_site; E="";; dyn) P=/tmp/tk_site; E="";; cluster2) P=/tmp/tk_site; E="TK_HOPPER_CLUSTER=2";; esac
  env $E PYTHONPATH=$P timeout 100 python3 benchmarks/bench_gemm.py --shapes $S --layouts NT --rounds 2 --rep-ms 40 > $OUT/ab_${v}_$r.log 2>&1
  echo "== $v round $r $(( $(date +%s)-t0 ))s: $(grep -E '^custom' $OUT/ab_${v}_$r.log | awk '{print $8}' | tr '\n' ' ') | $(grep geomean $OUT/ab_${v}_$r.log)"
done; done
