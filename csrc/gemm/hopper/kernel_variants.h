// Compile-time A/B variants of the Hopper GEMM kernel (gemm_kernel.cuh), set through
// TK_BUILD_DEFINES (setup.py) and compared by scripts/ab_build.sh; the defaults are the measured
// choices (benchmarks/NOTES.md step table).
#pragma once

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
// (benchmarks/NOTES.md). Since 2026-12-05h the warpgroup decides by a vote (bar.red.or over its 128
// threads): before, each warp's own mbarrier.test_wait decided, so warps of one warpgroup could run
// different wgmma.wait_group instructions -- undefined behaviour for a .sync.aligned instruction,
// which compute-sanitizer synccheck reported and aborted (H100, 1100x4001x256 NN on swapped 128x160
// tiles). With it off, ptxas spilled 36 B in the one-warpgroup 128 x 128 kernels.
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

// TK_WG128_CLUSTER=1 (build define, A/B): 128 x 128 kernels in 2-CTA clusters too (the Y tile
// multicast to both rows of the pair), taken only by a forced TK_HOPPER_TILE=0:128:128:1:2
// (plan.h): one consumer warpgroup, or two with TK_HOPPER_ONE_WG=0 (cuBLAS's form). Why: cuBLAS's kernel for 256x8192x8192 NT, where ours is at
// 0.96, is nvjet 128x128 in 2x1 clusters (ncu, 2026-11-28g); ours is the same tile unclustered.
// H200 2026-11-28h (benchmarks/NOTES.md): correct on a forced-tile check, but they spill 40 B and
// 256x8192x8192 took 54.7 -> 55.2 us with the L2 dirty, 52.1 -> 51.1 clean: not adopted. With
// 248 consumer registers (gemm_layout TK_WG128_CLUSTER_REGS) they spill nothing, and are slower
// still: H200 2026-12-01d, 3 / 2 rounds, us, dirty / clean L2, unclustered -> pairs: 256x8192x8192
// 55.8 -> 57.6 / 52.2 -> 54.1, 160x8192x8192 52.5 -> 54.1 / 51.1 -> 52.9, 256x8192x4096 31.3 ->
// 32.5 / 30.1 -> 31.0. Two consumer warpgroups in pairs (0 spills) are slower again: 256x8192x8192
// 54.8 (default) -> 64.6 us dirty, 52.4 -> 62.4 clean; two warpgroups unclustered 60.9 dirty.
#ifndef TK_WG128_CLUSTER
#define TK_WG128_CLUSTER 0
#endif

// TK_BM64_ODD_CLUSTER=1 (build define, A/B): the swapped 64-row token-tile kernels (64 x 144 .. 224,
// plan.h rows64_token_width) also in 2-CTA clusters: two weight tiles share the token
// tile, each CTA loading half of it (a slice) and multicasting it to both, the slice that ends past
// the tokens through an exact tail box (gemm_layout kYTail). Why: unclustered, every CTA re-reads
// the whole token tile from L2 (at 168x8192x14336 on 64 x 176: 176 of its 240 operand rows per k
// tile), and cuBLAS runs 1.1x faster there; taken only by a forced TK_HOPPER_TILE=1:64:W:1:2.
// H200 2026-12-03 (benchmarks/NOTES.md): 6-11% slower than unclustered on 7 of 7 shapes.
#ifndef TK_BM64_ODD_CLUSTER
#define TK_BM64_ODD_CLUSTER 0
#endif

// TK_WG_RELEASE=1 (build define, A/B; 2026-12-04c, not measured yet): a consumed stage is released by
// one arrival per consumer warpgroup and destination CTA (lane 0 of warp d signals CTA rank + d)
// instead of one per consumer warp and destination, so the empty barrier counts CONSUMERS x CLUSTER
// arrivals. Why: the 2-CTA pairs' per-stage remote arrivals were 4 per warpgroup (2026-12-04b /
// 12-04c: pairs 4-6% behind the unclustered tile, ~58 cycles per k tile even with the loads removed,
// 2026-12-02); CUTLASS's PipelineTmaAsync signals once per warpgroup and destination. Safe because a
// wgmma group is one warpgroup-wide operation: once any warp's wgmma.wait_group has retired it,
// its shared-memory operand reads are complete for all four warps (consumers read stages only
// through wgmma descriptors).
#ifndef TK_WG_RELEASE
#define TK_WG_RELEASE 0
#endif

namespace tk::hopper {
// Whether the producer of a kernel with CLUSTER CTAs per cluster runs warp-wide (above).
constexpr bool warp_producer(int cluster) {
  return TK_UNIFORM_PRODUCER == 1 || (TK_UNIFORM_PRODUCER == 2 && cluster == 1);
}
}  // namespace tk::hopper

// Drain first (TK_WAIT_FIRST=2, default: in the kernels without early k tiles; =1 in every kernel;
// =0 in none, the form before 2026-12-02b, for an A/B): after a unit's last k tile the consumers
// wait for all their wgmma groups (wgmma.wait_group 0) before they fetch and decode the next unit,
// not after. Why: with the decode between the loop and the wait, ptxas 13.0 scheduled accumulator
// reads and scratch writes (F2FP packs, the decode's integer temporaries in accumulator registers)
// above the WARPGROUP.DEPBAR of the wait -- 44 of the 152 sm_90a kernels (the 64-row 64/128/144
// families, the two-warpgroup 72/80/128-wide ones) -- and in the staged plain body (plain_body.cuh)
// the result was wrong: 1000x1001x999 NN, ~25k of 1M elements per call, some calls ending in
// "illegal instruction" (H200 2026-12-02b; correct under compute-sanitizer, whose slower issue
// let the wgmmas finish first). scripts/sass_hazards.py checks every kernel's SASS for it. The
// kernels with early k tiles (128 x 192 / 224 / 256: gemm_layout EARLY_KTILES) had no such access
// and keep the decode under the last wgmma group: everywhere (=1) against nowhere (=0), H200
// 2026-12-02b, 3 rounds, time geomean 1.003 over 15 cases, 8192x5632x2048 NT 0.2754 / 0.2647 ms,
// 8192x4096x4096 NT 0.3821 / 0.3754 (128 x 256 plans), 64x4096x4096 0.0169 / 0.0172.
#ifndef TK_WAIT_FIRST
#define TK_WAIT_FIRST 2
#endif
