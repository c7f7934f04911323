export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl && export PYTHONPATH=/tmp/tk_site
t0=$(date +%s)
TK_EXPERIMENTS=1 MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s)-t0 ))s
timeout 240 python3 -m pytest test/test_gpu.py test/test_fuzz.py -x -q > $OUT/pytest.log 2>&1; echo "tests rc=$? $(tail -1 $OUT/pytest.log)  $(( $(date +%s)-t0 ))s"
grep -E "FAILED|Error" $OUT/pytest.log | head -5
python3 - > $OUT/timing.txt 2>&1 <<'PY'
import os, torch, torch_tk
for (M,N,K) in [(8192,4096,4096),(8192,57344,8192)]:
    a=torch.randn(M,K,device="cuda").bfloat16(); b=torch.randn(N,K,device="cuda").bfloat16().t()
    for dyn in ("1","0"):
        os.environ["TK_HOPPER_DYNAMIC"]=dyn
        os.environ["TK_HOPPER_EXPERIMENT"]="0"; torch_tk.gemm(a,b); torch.cuda.synchronize()
        os.environ["TK_HOPPER_EXPERIMENT"]="8"; print(f"== {M}x{N}x{K} dynamic={dyn}", flush=True); torch_tk.gemm(a,b); torch.cuda.synchronize()
PY
grep -E "==|block (0|33|66|99):" $OUT/timing.txt
for d in 1 0; do
TK_HOPPER_DYNAMIC=$d timeout 120 ncu --profile-from-start off --metrics dram__bytes_read.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct python3 scripts/ncu_driver.py 8192x57344x8192:NN > $OUT/ncu_dyn$d.txt 2>&1
echo "== ncu dynamic=$d"; grep -E "nvjet|gemm_kernel|dram__|gpu__time|hit_rate" $OUT/ncu_dyn$d.txt | cut -c1-100
done
echo "ncu done $(( $(date +%s)-t0 ))s"
timeout 200 python3 benchmarks/ab_env.py --clocks --shapes 4096x4096x4096:NT,8192x4096x4096:NT,8192x8192x8192:NT,8192x28672x4096:TN,8192x57344x8192:NN,8192x8192x28672:NT --variants "dyn=;static=TK_HOPPER_DYNAMIC=0;dyn_copy=TK_HOPPER_STORE=copy;no_store=TK_HOPPER_EXPERIMENT=1" > $OUT/ab.txt 2>&1
tail -9 $OUT/ab.txt
echo "done $(( $(date +%s)-t0 ))s"
