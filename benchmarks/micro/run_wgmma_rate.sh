#!/usr/bin/env bash
# Builds and runs the wgmma issue-rate and mainloop microbenchmarks (benchmarks/micro/*.cu) on an
# H100/H200: bash benchmarks/micro/run_wgmma_rate.sh  (about 30 s to build, 1 s to run).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/wgmma_rate
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -o "$out" wgmma_rate.cu 2> "$out.ptxas.txt"
grep -c "spill" "$out.ptxas.txt" > /dev/null && grep -E "[1-9][0-9]* bytes spill" "$out.ptxas.txt" || true
"$out"
# The GEMM mainloop without loads, one piece at a time (mainloop_rate.cu).
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o "$out.mainloop" mainloop_rate.cu
"$out.mainloop"
