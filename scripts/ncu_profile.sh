#!/usr/bin/env bash
# Nsight Compute, our GEMM kernel next to cuBLAS's (torch.mm) on the same operands: SOL, tensor
# pipe, L2/DRAM traffic, stall reasons, clocks (ncu locks both to the same base clock).
# Usage on an H100/H200 after a build:
#   bash scripts/ncu_profile.sh ["MxNxK:LAYOUT ..."]    (default: three large-suite shapes)
# Writes $OUT/ncu.txt (or /tmp/tk_ncu/ncu.txt) and prints the key lines of each kernel.
# NCU_BRIEF=1: a few traffic metrics only (time, DRAM bytes, L2 sectors read by the SMs, L2/DRAM
# throughput, HGMMA count, SM clock), one short block per kernel; much faster than the sections.
# (sm__pipe_tensor_op_gmma_cycles_active reads "n/a" on the H200 with ncu of CUDA 13.0: not used.)
# NCU_SOURCE=1: instead, per-PC warp-stall samples of both kernels with caches flushed and kept
# (scripts/ncu_fetch_stalls.py: stall reasons, executed stretches of code, instruction-fetch stalls;
# scripts/ncu_sass_mix.py: executed instructions by class per 128x256x64 MAC block, ours next to cuBLAS).
# NCU_SUSTAINED=N: instead, the GEMM pair after N back-to-back pairs, clocks not locked (--clock-control
# none): the SM, L2 and DRAM clocks each kernel gets at the power cap, and its time there.
# NCU_EXTRA: further ncu arguments for the full-section runs (e.g. "--section MemoryWorkloadAnalysis_Tables");
# NCU_METRICS: the --metrics list of those runs (default: HGMMA count, SM clock, L2 hit rate, DRAM bytes).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_ncu}
mkdir -p "$OUT"
SHAPES=${1:-"8192x8192x8192:NT 8192x57344x8192:NN 8192x4096x4096:NT"}
: > "$OUT/ncu.txt"
for s in $SHAPES; do
  echo "######## $s" >> "$OUT/ncu.txt"
  if [ -n "${NCU_SUSTAINED:-}" ]; then
    for cc in none base; do
      echo "## clock-control $cc" >> "$OUT/ncu.txt"
      timeout 200 ncu --clock-control $cc --kernel-name regex:"gemm_kernel|nvjet|gemm|sm90" \
        --launch-skip $((2 * NCU_SUSTAINED)) --launch-count 2 \
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,lts__t_sectors_srcunit_tex_op_read.sum \
        python3 scripts/ncu_driver.py "$s" "$NCU_SUSTAINED" >> "$OUT/ncu.txt" 2>&1
      echo "== $s $cc (rc=$?)"
    done
    continue
  fi
  if [ -n "${NCU_SOURCE:-}" ]; then  # per-PC warp-stall samples, caches flushed (all) and kept (none)
    for cc in all none; do
      rep="$OUT/src_${s//[^0-9A-Za-z]/_}_$cc"
      timeout 200 ncu --profile-from-start off --cache-control $cc --warp-sampling-interval 0 \
        --section WarpStateStats --section SourceCounters --export "$rep" -f \
        python3 scripts/ncu_driver.py "$s" >> "$OUT/ncu.txt" 2>&1
      ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep.csv" 2>> "$OUT/ncu.txt"
      echo "== $s cache-control $cc"; python3 scripts/ncu_fetch_stalls.py "$rep.csv" | tee -a "$OUT/ncu.txt" | head -n 40
      python3 scripts/ncu_sass_mix.py "$rep.csv" "${s%%:*}" | tee -a "$OUT/ncu.txt"
    done
    continue
  fi
  if [ -n "${NCU_BRIEF:-}" ]; then
    timeout 200 ncu --profile-from-start off --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size \
      python3 scripts/ncu_driver.py "$s" >> "$OUT/ncu.txt" 2>&1
    echo "== $s (rc=$?)"
    continue
  fi
  timeout 200 ncu --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --metrics ${NCU_METRICS:-sm__inst_executed_pipe_tensor_op_gmma.sum,sm__cycles_elapsed.avg.per_second,lts__t_sector_hit_rate.pct,dram__bytes_read.sum} \
    ${NCU_EXTRA:-} \
    python3 scripts/ncu_driver.py "$s" >> "$OUT/ncu.txt" 2>&1
  echo "== $s (rc=$?)"
done
grep -E "^  [a-z_]|####|^## clock|gpu__time|dram__|lts__|launch__grid|Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|gmma|per_second|hit_rate|dram__bytes|Issue Slots Busy|Warp Cycles Per Issued|Registers Per|Grid Size|Block Size" \
  "$OUT/ncu.txt" | grep -v "^==PROF==" | head -n 150
