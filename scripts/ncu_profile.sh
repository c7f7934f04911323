#!/usr/bin/env bash
# Nsight Compute on one tk GEMM launch, for the open performance questions (benchmarks/NOTES.md):
# stall reasons, tensor-pipe utilisation, L2/DRAM traffic of the persistent kernel, with and
# without the 2-CTA multicast clusters. Usage on an H100/H200 after a build:
#   bash scripts/ncu_profile.sh [MxNxK:LAYOUT]        (default 8192x8192x8192:NT)
# Writes $OUT/ncu_cluster{1,2}.txt (or /tmp/tk_ncu) and prints the key lines of each.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_ncu}
mkdir -p "$OUT"
SHAPE=${1:-8192x8192x8192:NT}
for c in 1 2; do
  TK_HOPPER_CLUSTER=$c timeout 280 ncu --kernel-name regex:gemm_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section LaunchStats python3 benchmarks/profile_shapes.py "$SHAPE" > "$OUT/ncu_cluster$c.txt" 2>&1
  echo "== TK_HOPPER_CLUSTER=$c (rc=$?)"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Stall|Warp Cycles Per Issued|Cluster Size|Grid Size" \
    "$OUT/ncu_cluster$c.txt" | head -n 30
done
