# 2026-12-07k: the device call prepared for the next session (this session's budget went on refused starts and four calls;
# 235 s were left, too few to start a machine). Copy the block to .device/k5.sh (ignored) and run it: bash .device/k5.sh;
# carry .devso/d72.so.gz .devso/d72.source .devso/d72.torch .devso/d72p.so.gz .devso/d72p.source .devso/d72p.torch .whl
# .device/k5.sh (8 paths; ~34 MB). d72 = main's csrc at 07k, d72p = the same with TK_BUILD_DEFINES=TK_ONLY_PLAIN_TMA=1.
# profile_shapes.py --prime-fresh is new in 07k.
#!/usr/bin/env bash
# 2026-12-07k: is the mid-M clean-L2 gap (ours 18.2 us vs torch.mm 16.5 at 128x4096x4096, H100 07k) the
# cold kernel code? (1) kernel times after the flush + a cuBLAS GEMM, without and with a prime of the same
# kernel on fresh operands (profile_shapes.py --prime-k 64 --prime-fresh; tile forced to the call's plan);
# (2) d72 (main's csrc) against d72p (TK_ONLY_PLAIN_TMA=1: the plain TMA bodies alone, 12.6k -> 2.6k SASS
# instructions in the 64x64 kernel) on plain TMA-stored shapes, clean and dirty L2 ("failed" = a launch
# d72p refuses: split or staged plans). Carry .devso/d72.* .devso/d72p.* .whl .device/k5.sh; ~5 min warm.
set -u
source scripts/device_session.sh /tmp/wk5 k5 d72
for item in 128x4096x4096:NT 64x4096x4096:NT 1000x1001x999:NN; do
  s=${item%%:*}; l=${item##*:}; IFS=x read M N K <<< "$s"
  tile=$(python3 -c "import torch,torch_tk;p=torch_tk._C.hopper_dispatch_plan($M,$N,$K,0,False,'$l');print(f\"{int(p['swap_ab'])}:{p['bm']}:{p['bn']}:{p['splits']}:{p['cluster']}\")")
  for l2 in clean dirty; do for pk in 0 64; do
    a=(--l2 $l2 --between --between-parts gemm); [ $pk -gt 0 ] && a+=(--prime-k 64 --prime-fresh)
    echo "== $item tile $tile L2 $l2 prime $pk"
    TK_HOPPER_TILE=$tile timeout 60 python3 benchmarks/profile_shapes.py "${a[@]}" --reps 30 $item > $W/p_${s}_${l2}_$pk.txt 2>&1
    grep -E "us of kernels|^ +[0-9.]+ us" $W/p_${s}_${l2}_$pk.txt | cut -c1-120
  done; done; pack
done
echo "probe: $(( $(date +%s) - t0 )) s"
S=128x4096x4096,64x4096x4096,256x4096x4096,128x8192x8192,256x8192x8192,128x14336x4096,1024x1024x1024,8192x2048x2048,4096x4096x4096
for l2 in clean dirty; do
  echo "== d72 / d72p, L2 $l2"
  OUT=$W/abd_$l2 TK_BENCH_L2=$l2 AB_SHAPES=$S AB_VARIANTS="d72:- d72p:-" AB_ROUNDS=2 bash scripts/ab_devso.sh 2>&1 | tail -12
  pack
done
bash scripts/use_device_so.sh d72 > /dev/null  # leave the default library installed
echo "total: $(( $(date +%s) - t0 )) s"; pack
