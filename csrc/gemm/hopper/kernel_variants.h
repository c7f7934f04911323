// Compile-time A/B variants of the Hopper GEMM kernel (gemm_kernel.cuh), set through
// TK_BUILD_DEFINES (setup.py) and compared by scripts/ab_build.sh; the defaults are the measured
// choices (benchmarks/NOTES.md step table).
#pragma once
#ifdef __CUDACC__
#include "../../kittens/hopper/cluster.cuh"  // warmup_single_unit
#endif

// TK_BM64_SPLIT=1 (build define, A/B; not GPU-tested yet): the 64-row kernels compile the split-K
// decode too, so a forced TK_HOPPER_TILE with bm 64 and splits > 1 runs (e.g. 64x4096x4096 as 128
// swapped 64x64 units of half the K instead of 64 whole ones); no default plan asks for it.
#ifndef TK_BM64_SPLIT
#define TK_BM64_SPLIT 0
#endif

// Early release (gemm_kernel.cuh, the consumer k loop): a stage whose successor has not landed is drained
// and released before the wait. Build define for A/B (TK_BUILD_DEFINES=TK_EARLY_RELEASE=0: the
// release only after the next stage is issued). H200, 2026-11-28c, clean L2, TF/s off / on:
// 64x4096x4096 119 / 124, 128x4096x4096 222 / 230, 256x4096x14336 544 / 550; dirty L2 even
// (benchmarks/NOTES.md).
#ifndef TK_EARLY_RELEASE
#define TK_EARLY_RELEASE 1
#endif
// Warp-wide producer in unclustered kernels (default, TK_UNIFORM_PRODUCER=2; =1 in every kernel,
// =0 nowhere: the one-thread loop): the producer warp's 32 lanes all walk the units and k tiles
// (identical values, warp-uniform control flow, so ptxas keeps coordinates and addresses in
// uniform registers) and lane 0 alone arrives and issues the TMA copies. Why: a one-thread loop
// wraps every UTMALDG in an ELECT / R2UR waterfall, and the producer's k loop is on the
// one-warpgroup kernels' critical path. H200, 2026-11-28d, TF/s one thread / warp: clean L2
// 64x4096x4096 124 / 135, dirty 119 / 121.5; the rest even. Clustered kernels keep the one-thread
// loop: H200 2026-11-28e (=1 -> =2, 3 dirty / 3 clean rounds, median us) 2-CTA 64-row pairs
// 256x4096x4096 24.0 / 23.3 -> 23.1 / 22.2, 128x4096x4096 19.9 / 20.0 -> 19.5 / 19.6,
// 128x8192x8192 44.2 -> 43.9; clustered 128x256 even (8192x28672x4096 2.747 -> 2.774 ms dirty,
// within the rounds' spread) (benchmarks/NOTES.md).
#ifndef TK_UNIFORM_PRODUCER
#define TK_UNIFORM_PRODUCER 2
#endif

// Code warm-up (TK_CODE_WARMUP=1|2, build define for A/B; default 0): the consumers first run an
// empty unit whose TMA-stored boxes lie past the output's last row (so nothing is written), taking
// the epilogue path their first real unit will take. Why: after an L2 flush the kernel's code is
// in DRAM, and a single-unit CTA's epilogue then waits on instruction fetches: H200 2026-11-28f
// (pipeline_trace.py, 256x8192x8192 NT, clean L2) epilogue 10-13k cycles, 2.7-3.6k with the same
// kernel run once just before on other data (TK_TRACE_PRIME; a prime of another kernel: no
// change), CTA run time 56.4 -> 50.1 us. The warm-up moves those fetches under the first stages'
// load latency.
// Not in the 128 x 256 kernels (=2: there too, for an A/B): there it spilled 8-16 B (the first
// form, a flag carried through the unit loop, 16-24 B), and their long mainloops evict the code
// again anyway (2048x2048x8192 TN: a same-kernel prime left the epilogue at 11-14k cycles).
#ifndef TK_CODE_WARMUP
#define TK_CODE_WARMUP 0
#endif

namespace tk::hopper {
// Whether the producer of a kernel with CLUSTER CTAs per cluster runs warp-wide (above).
constexpr bool warp_producer(int cluster) {
  return TK_UNIFORM_PRODUCER == 1 || (TK_UNIFORM_PRODUCER == 2 && cluster == 1);
}
// Whether a kernel BN columns wide runs the code warm-up (above).
constexpr bool code_warmup(int bn) { return TK_CODE_WARMUP == 2 || (TK_CODE_WARMUP == 1 && bn != 256); }
#ifdef __CUDACC__
// Whether the CTA's (cluster's) first real unit is also its last under a static schedule of
// `units`: the warm-up then takes the final epilogue path, not the early k tiles'. Read from
// special registers where it is needed (no register kept across the unit loop).
template <int CLUSTER>
__device__ __forceinline__ bool warmup_single_unit(bool dynamic, int units) {
  if (dynamic) return false;
  if constexpr (CLUSTER > 1) return int(kittens::hopper::cluster_id_x() + kittens::hopper::cluster_count_x()) >= units;
  return int(blockIdx.x + gridDim.x) >= units;
}
#endif
}  // namespace tk::hopper
