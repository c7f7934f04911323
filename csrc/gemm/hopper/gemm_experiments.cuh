// Stage-removal and trace experiments of the Hopper GEMM kernel (gemm_kernel.cuh; set by
// TK_HOPPER_EXPERIMENT in a TK_EXPERIMENTS build, benchmarks/ab_env.py, scripts/pipeline_trace.py).
#pragma once
#include <cstdint>
#include "../../kittens/hopper/tma.cuh"

namespace tk::hopper {

// Stage-removal experiments (benchmarks/ab_env.py; built only with TK_EXPERIMENTS=1, where
// TK_HOPPER_EXPERIMENT sets them, and the results are then WRONG): drop the epilogue stores or
// the TMA loads (stages arrive holding stale data), to time what the rest costs. (Skipping the
// wgmma conditionally made ptxas insert warpgroup.arrive around it, slowing every variant.)
constexpr int kXpNoStore = 1, kXpNoLoad = 2;
// kXpBare (with kXpNoLoad): no full/empty barrier traffic at all, the consumers issue their
// wgmmas back to back over the ring: the mainloop's wgmma rate inside this kernel, to hold
// against benchmarks/micro/mainloop_rate.cu (one unit per CTA only: the ring is not re-synced).
constexpr int kXpBare = 32;
// kXpTrace: in CTAs 0, 1 and the last two, the producer and consumer 0 record the SM clock when
// each of the first unit's k tiles is issued (empty slot won) and arrives (full wait passed),
// into ep.trace (TraceRecord[8], printed by the host: launch_impl.cuh). No printf here: any
// call in the kernel makes ptxas serialize every wgmma of it (C7510, "wgmma pipeline crossing
// function boundary"), which is how an earlier printf-based trace measured a serialized
// mainloop (64x64 tile: ~520 cycles per k tile instead of ~130).
constexpr int kXpTrace = 16, kTraceLen = 136, kTraceRecords = 8;
// kXpTraceUnits (with kXpTrace): consumer 0 records, per unit, its start, the point where its k
// tiles are issued and the next unit is decoded, and its last wgmma's completion.
constexpr int kXpTraceUnits = 64;
// kXpTraceEpi (with kXpTraceUnits): two more records per unit in the deferred epilogue, after its
// immediate rounds are issued and after the held rounds are packed (5 records per unit).
constexpr int kXpTraceEpi = 128;
// Stage removal inside a TMA-store epilogue round (epilogue.cuh tma_round): skip the wait for
// the buffer's earlier store, the staging writes, the async-proxy fence, the store itself.
constexpr int kXpEpiNoWait = 256, kXpEpiNoFill = 512, kXpEpiNoFence = 1024, kXpEpiNoIssue = 2048;
// kXpTraceRound (with kXpTraceUnits | kXpTraceEpi): consumer 0 also records 6 points inside each
// immediate round of the deferred epilogue (EpiMarks): after the buffer wait, the first barrier,
// the staging writes, the fence, the second barrier and the store's issue. Each record costs
// ~200 cycles itself (a clock read, a local-memory store): they locate costs, they do not price them.
constexpr int kXpTraceRound = 4096;
// kXpSpans (with kXpTrace): every CTA also records its SM, its start and the end of consumer
// 0's last epilogue (globaltimer ns) into CtaSpan[kSpanMax] after the TraceRecords: the spread of
// CTA run times, i.e. whether a kernel's time is set by a few slow CTAs or by all of them.
constexpr int kXpSpans = 8192, kSpanMax = 1024;
// kXpPrefetchOut: the producer prefetches each unit's TMA-stored output boxes into L2 after
// issuing the k tile (xp >> 16) & 255 k tiles before the unit's end (0: its first), so that the
// epilogue's stores find their lines in L2. Tried 2026-11-28f on single-unit CTAs whose epilogues
// take 10-13k cycles after an L2 flush (3k warm): no change; the cause was the kernel's
// instruction fetches (plain_body.cuh).
constexpr int kXpPrefetchOut = 16384;
// kXpGradNoMath: the SwiGLU backward epilogue (epilogue_swiglu_grad.cuh) stores dh u and dh g in
// place of its gradients (no exp / reciprocal): what its math costs. With kXpEpiNo* its stores go.
constexpr int kXpGradNoMath = 1 << 24;
struct CtaSpan {
  unsigned long long start_ns, end_ns;
  int block, smid;
};
struct EpiMarks {
  unsigned* tr;
  int* tn;
  long long c0;
};
__device__ __forceinline__ void epi_mark(const EpiMarks* m) {
  if (m != nullptr && *m->tn < kTraceLen) m->tr[(*m->tn)++] = unsigned(clock64() - m->c0);
}
// The experiment bits an epilogue sees: none outside a TK_EXPERIMENTS build (folded away).
#ifdef TK_EXPERIMENTS
__host__ __device__ __forceinline__ int epi_xp(int experiment) { return experiment; }
#else
__host__ __device__ __forceinline__ constexpr int epi_xp(int) { return 0; }
#endif
struct TraceRecord {
  unsigned long long start_ns, ns;  // globaltimer at the CTA's start; ns and cycles until the end
  long long cycles;
  int block, n;
  unsigned t[kTraceLen];  // clock64 - start, per k tile
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
// Record of role 0 (producer) / 1 (consumer) of this CTA, or nullptr if it is not traced.
__device__ __forceinline__ TraceRecord* trace_record(void* trace, int role) {
  const int b = int(blockIdx.x), g = int(gridDim.x);
  const int slot = b < 2 ? b : b + 2 >= g ? 2 + (b - (g - 2)) : -1;
  return trace != nullptr && slot >= 0 ? static_cast<TraceRecord*>(trace) + role * 4 + slot : nullptr;
}
__device__ __forceinline__ void write_trace(TraceRecord* r, const unsigned* tr, int n, unsigned long long g0,
                                            long long c0) {
  r->cycles = clock64() - c0;
  r->ns = global_ns() - g0;  // with the cycles: the SM clock rate
  r->start_ns = g0;
  r->block = int(blockIdx.x);
  r->n = n;
  for (int i = 0; i < n; ++i) r->t[i] = tr[i];
}

// kXpPrefetchOut: at the k tile kt == max(kr.begin, kr.end - (xp >> 16) % 256) of a unit whose
// output is TMA-stored (store_mode kPlain: coordinates (n, m); kTransposed: (m, n), epilogue.cuh
// tma_round), its L::BM x L::BN output tile at (m0, n0) as 64 x 64 boxes.
template <class L, int kPlain, int kTransposed, class KRange>
__device__ __forceinline__ void xp_prefetch_out(int xp, int store_mode, int kt, const KRange& kr,
                                                const CUtensorMap* tm_out, int m0, int n0) {
  const int at = kr.end - ((xp >> 16) & 255);
  const bool transposed = store_mode == kTransposed;
  if ((store_mode != kPlain && !transposed) || kt != (at > kr.begin ? at : kr.begin)) return;
#pragma unroll
  for (int r = 0; r < L::BM / 64; ++r)
#pragma unroll
    for (int h = 0; h < (L::BN + 63) / 64; ++h) {
      if (transposed) kittens::hopper::tma_prefetch_l2_2d(tm_out, m0 + 64 * r, n0 + 64 * h);
      else kittens::hopper::tma_prefetch_l2_2d(tm_out, n0 + 64 * h, m0 + 64 * r);
    }
}
__device__ __forceinline__ void write_span(void* trace, unsigned long long g0) {
  if (trace == nullptr || blockIdx.x >= unsigned(kSpanMax)) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %smid;" : "=r"(smid));
  CtaSpan* s = reinterpret_cast<CtaSpan*>(static_cast<TraceRecord*>(trace) + kTraceRecords) + blockIdx.x;
  *s = CtaSpan{g0, global_ns(), int(blockIdx.x), int(smid)};
}

}  // namespace tk::hopper
