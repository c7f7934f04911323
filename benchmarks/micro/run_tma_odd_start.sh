#!/usr/bin/env bash
# Builds and runs tma_odd_start.cu on an H100/H200: one process per TMA load (a fault is sticky),
# inner starts 16-B aligned (j = 0) and not (j = 1..7 with an odd pitch P = 999 / 1001).
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}/tma_odd_start
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o "$out" tma_odd_start.cu || exit 1
for sw in 0 1; do
  for P in 1024 999 1001; do
    for j in 0 1 2 7; do
      "$out" "$P" 64 "$j" "$sw"
    done
  done
done
