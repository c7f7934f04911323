# This session's device A/B batch (experiment build: knobs re-read per call).
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl && export PYTHONPATH=/tmp/tk_site
t0=$(date +%s)
TK_EXPERIMENTS=1 MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s)-t0 ))s
timeout 240 python3 -m pytest test/test_gpu.py test/test_fuzz.py -x -q > $OUT/pytest.log 2>&1; echo "tests rc=$? $(tail -1 $OUT/pytest.log)  $(( $(date +%s)-t0 ))s"
grep -E "FAILED|Error" $OUT/pytest.log | head -5
python3 - > $OUT/timing.txt 2>&1 <<'PY'
import os, torch, torch_tk
for (M,N,K) in [(8192,4096,4096),(8192,8192,8192)]:
    a=torch.randn(M,K,device="cuda").bfloat16(); b=torch.randn(N,K,device="cuda").bfloat16().t()
    for env in ({"TK_HOPPER_DYNAMIC":"1"},{"TK_HOPPER_DYNAMIC":"0"},{"TK_HOPPER_CLUSTER":"2"}):
        for k in ("TK_HOPPER_DYNAMIC","TK_HOPPER_CLUSTER"): os.environ.pop(k, None)
        os.environ.update(env)
        os.environ["TK_HOPPER_EXPERIMENT"]="0"; torch_tk.gemm(a,b); torch.cuda.synchronize()
        os.environ["TK_HOPPER_EXPERIMENT"]="8"; print(f"== {M}x{N}x{K} {env}", flush=True); torch_tk.gemm(a,b); torch.cuda.synchronize()
PY
grep -E "==|block (0|66):" $OUT/timing.txt
timeout 200 python3 benchmarks/ab_env.py --clocks --shapes 4096x4096x4096:NT,8192x4096x4096:NT,8192x8192x8192:NT,8192x28672x4096:TN,8192x57344x8192:NN,8192x8192x28672:NT --variants "dyn=;static=TK_HOPPER_DYNAMIC=0;cluster2=TK_HOPPER_CLUSTER=2;no_store=TK_HOPPER_EXPERIMENT=1" > $OUT/ab.txt 2>&1
tail -9 $OUT/ab.txt
echo "ab done $(( $(date +%s)-t0 ))s"
for c in 1 2; do
TK_HOPPER_CLUSTER=$c timeout 150 ncu --profile-from-start off --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct python3 scripts/ncu_driver.py 8192x8192x8192:NT > $OUT/ncu_c$c.txt 2>&1
echo "== ncu cluster=$c"; grep -E "gemm_kernel|Duration|SM Frequency|L2 Cache Throughput|DRAM Throughput|dram__|hit_rate|Compute \(SM\)|Stall|Warp Cycles Per Issued" $OUT/ncu_c$c.txt | tail -n +1 | cut -c1-110 | awk 'f||/gemm_kernel/{f=1; print}'
done
echo "done $(( $(date +%s)-t0 ))s"
