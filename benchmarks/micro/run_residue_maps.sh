#!/usr/bin/env bash
# Builds and runs the odd-pitch residue-map TMA probe (residue_maps.cu) on an H100/H200:
# bash benchmarks/micro/run_residue_maps.sh  (a few seconds to build, ~20 s to run).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/residue_maps
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o "$out" residue_maps.cu
"$out"
