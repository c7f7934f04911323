#!/usr/bin/env bash
# Builds and runs the TMA operand-delivery microbenchmark (tma_stream.cu) on an H100/H200:
# bash benchmarks/micro/run_tma_stream.sh  (about 30 s to build, 10 s to run).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/tma_stream
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o "$out" tma_stream.cu
"$out"
