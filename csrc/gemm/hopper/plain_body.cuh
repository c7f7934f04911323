// Plain-GEMM bodies of the Hopper GEMM kernel (gemm_kernel.cuh `consume`): the consumers' unit loop
// and epilogue compiled once more for each TMA store mode (in place, transposed) with the epilogue's
// runtime variants fixed -- no C term, alpha 1, the deferred rounds, no stmatrix staging -- so
// the instructions a plain GEMM executes are one stretch of code without the other variants'
// blocks between them.
// Why: after an L2 flush the kernel's code comes from DRAM, and the general body's executed
// epilogue (~620 instructions) lies in ~10 stretches spread over 360 KB of a 27.8k-instruction
// kernel, each a fresh instruction-cache miss. H200 2026-11-28g, ncu warp-state sampling on
// 256x8192x8192 NT (one-warpgroup 128x128): 11.4% of our samples stalled on instruction fetch
// (no_inst) with flushed caches, 7.0% warm; cuBLAS's kernel (1256 instructions) 2.1%; the
// epilogue's stretches hold 8.5k of our 10.3k no_inst samples (benchmarks/NOTES.md).
// TK_HOPPER_PLAIN_BODY=0 (runtime, read once; launch_impl.cuh): every GEMM takes the general body.
#pragma once
#include "epilogue.cuh"

namespace tk::hopper {
// Whether the kernel has plain bodies: not without a TMA store. The 128 x 256 kernels have the
// in-place one only (both bodies: ptxas spilled 328 B), with the current unit's tile decoded again
// after the mainloop (gemm_kernel.cuh) instead of held in registers through it and the ticket count
// in a shared slot (sched_ring.cuh WarpSlot): 0 spills. H200 2026-11-28h, same tree built both ways
// (benchmarks/NOTES.md): bench_model 0.979 / 0.976 -> 0.991 / 0.982, model suite geomean
// 1.004 -> 1.010 (L2 dirty), 0.982 -> 0.989 (clean). TK_PLAIN_BODY_256=0 (build define, for an
// A/B): the 128 x 256 kernels with the general body only.
#ifndef TK_PLAIN_BODY_256
#define TK_PLAIN_BODY_256 1
#endif
template <class L>
constexpr bool has_plain_body() {
  return L::kTmaStore && !L::kSwiGLU && !L::kSwiGLUGrad && (L::BN != 256 || TK_PLAIN_BODY_256);
}
// TK_ONLY_PLAIN_TMA=1 (build define, an A/B library only, never a default): every kernel with a
// plain body compiles its TMA-store plain bodies and nothing else (no general or staged body), and
// the launcher refuses any other launch of those kernels with an error naming the define
// (launch_impl.cuh only_plain_refusal). Why: with the caches flushed, ncu samples the 64x64 kernel of
// 128x4096x4096 (12.6k SASS instructions, 1200 executed) waiting on instruction fetch 16% of the
// time against 6% for cuBLAS's 920-instruction kernel (H100 2026-12-07k, benchmarks/NOTES.md); a
// kernel holding only the executed path tells whether its size and layout cost the short calls.
#ifndef TK_ONLY_PLAIN_TMA
#define TK_ONLY_PLAIN_TMA 0
#endif
// The host's side of TK_ONLY_PLAIN_TMA: nullptr when the launch may run, else why not.
template <class L>
inline const char* only_plain_refusal(bool ep_plain_body, int store_mode) {
  if (!TK_ONLY_PLAIN_TMA || L::kRope || !has_plain_body<L>()) return nullptr;
  const bool ok = ep_plain_body && (store_mode == kStoreTma || (L::BN != 256 && store_mode == kStoreTmaTransposed));
  return ok ? nullptr : "this library was built with TK_ONLY_PLAIN_TMA=1 (an A/B build): plain TMA-stored GEMMs only";
}
// Whether this launch takes a plain body: the host's verdict on the epilogue (Epilogue::plain_body)
// and a TMA store mode (gemm_kernel.cuh: in the 128 x 256 kernels only the in-place one).
template <class L, typename OutT>
__device__ __forceinline__ bool plain_body(const Epilogue<OutT>& ep, int store_mode) {
  return has_plain_body<L>() && ep.plain_body && (store_mode == kStoreTma || store_mode == kStoreTmaTransposed);
}

// The staged plain body (Epilogue::plain_staged; default, TK_HOPPER_PLAIN_STAGED=0 for the general
// body): the same for the staged
// copy-out (kStoreStaged: 16-bit rows a TMA store cannot write, e.g. N = 1001), in the kernels of one
// 64-row strip per warpgroup up to 128 wide (the granule copy-out's kernels; wider ones have many
// units per CTA, whose later epilogues find the code fetched).
// Why: H200 2026-12-02 pipeline_trace.py, L2 dirty: 1000x1001x999 NN (64x128 tiles, one unit per
// CTA) spent ~12.0k cycles from its last wgmma to its end, 1000x1000x1000 NT (TMA store, plain
// body) 1.1k -- the general body's staged epilogue, the cold-code signature of 2026-11-28f.
// Measured 2026-12-02b (H200, dirty L2, 3 rounds, us, general / staged): 1000x1001x999 NN 16.2 /
// 15.6, NT 15.7 / 15.2; 1003x1001x1032 NN 15.8 / 15.1; 129x4100x300 NT 12.5 / 11.8 -- 3-6%, not the
// ~11k cycles: most of that tail is not code fetch. (Its first build was wrong until
// kernel_variants.h TK_WAIT_FIRST: ptxas had put accumulator reads above the wgmma wait.)
// TK_STAGED_PLAIN_BODY=0 (build define): not compiled.
#ifndef TK_STAGED_PLAIN_BODY
#define TK_STAGED_PLAIN_BODY 1
#endif
template <class L>
constexpr bool has_staged_plain_body() {
  return L::kTmaStore && L::STRIPS == 1 && L::BN <= 128 && TK_STAGED_PLAIN_BODY;
}

// The plain body's epilogue: the launch's, with the fields the host checked (launch_impl.cuh) as
// constants, so that inlining folds their branches away.
template <typename OutT>
__device__ __forceinline__ Epilogue<OutT> plain_epilogue(const Epilogue<OutT>& ep) {
  Epilogue<OutT> p = ep;
  p.c = nullptr;
  p.alpha = 1.f, p.beta = 0.f;
  p.stmatrix = false, p.deferred = true, p.fused_split = false;
  return p;
}
// The staged plain body's: also the granule copy-out (the host checked Epilogue::granules).
template <typename OutT>
__device__ __forceinline__ Epilogue<OutT> plain_staged_epilogue(const Epilogue<OutT>& ep) {
  Epilogue<OutT> p = plain_epilogue(ep);
  p.granules = true;
  return p;
}

// The consumers' body a launch runs: `consume` (gemm_kernel.cuh, the unit loop and epilogue) inlined
// once per call below, each with its epilogue fields and store mode as constants.
template <class L, class Consume, typename OutT>
__device__ __forceinline__ void run_body(Consume& consume, const Epilogue<OutT>& ep, int store_mode) {
  if constexpr (L::kRope) consume(plain_epilogue(ep), kStoreTma);  // its one body (launch_impl.cuh checks)
  else if constexpr (TK_ONLY_PLAIN_TMA && has_plain_body<L>()) {  // A/B build: the host refused the rest
    if (store_mode == kStoreTma || L::BN == 256) consume(plain_epilogue(ep), kStoreTma);
    else consume(plain_epilogue(ep), kStoreTmaTransposed);
  } else if (plain_body<L>(ep, store_mode) && store_mode == kStoreTma) consume(plain_epilogue(ep), kStoreTma);
  else if (L::BN != 256 && plain_body<L>(ep, store_mode)) consume(plain_epilogue(ep), kStoreTmaTransposed);
  else if (has_staged_plain_body<L>() && ep.plain_staged && store_mode == kStoreStaged)
    consume(plain_staged_epilogue(ep), kStoreStaged);
  else consume(ep, store_mode);
}
}  // namespace tk::hopper
