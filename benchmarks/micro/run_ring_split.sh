#!/usr/bin/env bash
# Builds and runs the coupled / split operand-ring microbenchmark (ring_split.cu) on an H100/H200:
# bash benchmarks/micro/run_ring_split.sh  (about 30 s to build, 20 s to run).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/ring_split
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o "$out" ring_split.cu
"$out"
