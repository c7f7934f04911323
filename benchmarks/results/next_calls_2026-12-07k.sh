# 2026-12-07k: the device call prepared for the next session (this session's budget went on refused starts and four calls;
# 415 s were left, too few to start a machine). Copy the block to .device/k4.sh (ignored) and run it: bash .device/k4.sh;
# carry .devso/d71.so.gz .devso/d71.source .devso/d71.torch .whl .device/k4.sh (~80 s on a warm machine).
# profile_shapes.py --prime-fresh is new in 07k (Python only: d71 still matches main's csrc).
#!/usr/bin/env bash
# 2026-12-07k: is the mid-M clean-L2 gap (ours 18.2 us vs torch.mm 16.5 at 128x4096x4096, H100) a cold
# code fetch? Kernel times after the flush + a cuBLAS GEMM, without and with a prime of the same kernel
# on fresh operands (profile_shapes.py --prime-k 64 --prime-fresh; the tile forced to the call's plan).
set -u
source scripts/device_session.sh /tmp/wk4 k4 d71
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
echo "total: $(( $(date +%s) - t0 )) s"; pack
