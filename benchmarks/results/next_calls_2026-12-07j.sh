# 2026-12-07j: the device call prepared for the next session (this session's budget went on 07j's five calls).
# Copy the block to .device/j6.sh (ignored) and run it: CAP=300 bash .device/j6.sh; carry .devso/d71.so.gz
# .devso/d71.source .devso/d71.torch .whl .device/j6.sh. profile_shapes.py's --l2 clean is new in 07j (Python
# only: d71 still matches main's csrc).
#!/usr/bin/env bash
# 2026-12-07j: the skinny suite's clean-L2 loss at M = 16-256 (H100 07j: 0.991, worst 0.879 at
# 128x4096x4096; dirty 1.108). Kernel times after the memset alone and after memset + read
# (profile_shapes.py --l2), then an A/B of forced tiles on 128x4096x4096 and 64x4096x4096 NT in both L2 states
# (why: at M <= 128 our plans run 64-128 CTAs of 1 MB of L2 reads each; cuBLAS's multicast halves a CTA's share)
# (scripts/ab_knob.sh, one bench_gemm process per setting and round); on an H200 first the sdpa probe.
set -u
source scripts/device_session.sh /tmp/wj6 j6 d71
if grep -q H200 $W/gpu.txt; then
  timeout 150 python3 benchmarks/neighbour_probe.py --probes sdpa,sdpa_bwd > $W/probe.txt 2>&1; tail -8 $W/probe.txt; pack
fi
S=128x4096x4096:NT,64x4096x4096:NT,64x4096x14336:NT,128x14336x4096:NT
for l2 in clean dirty; do
  timeout 90 python3 benchmarks/profile_shapes.py --flush --l2 $l2 $S > $W/prof_$l2.txt 2>&1
  echo "== $l2"; grep -E "^[0-9]|us of kernels|^ +[0-9.]+ us" $W/prof_$l2.txt | cut -c1-150
done; echo "profiles: $(( $(date +%s) - t0 )) s"; pack
SET="- TK_HOPPER_TILE=0:64:64:1:2 TK_HOPPER_TILE=0:128:64:1:1 TK_HOPPER_TILE=1:64:64:1:1 TK_HOPPER_TILE=0:64:64:2:1 TK_HOPPER_TILE=1:64:64:2:1"
for l2 in clean dirty; do
  [ $(( $(date +%s) - t0 )) -gt ${CAP:-300} ] && break
  echo "== A/B, L2 $l2"
  OUT=$W/ab_$l2 TK_BENCH_L2=$l2 AB_SHAPES=128x4096x4096,64x4096x4096 AB_SETTINGS="$SET" AB_ROUNDS=$([ $l2 = clean ] && echo 2 || echo 1) \
    bash scripts/ab_knob.sh 2>&1 | tail -9
  pack
done
echo "total: $(( $(date +%s) - t0 )) s"; pack
