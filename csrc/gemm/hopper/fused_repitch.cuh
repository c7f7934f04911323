// Re-pitch copies inside the GEMM kernel, overlapped with its mainloop (TK_FUSED_REPITCH builds;
// repitch.h FusedRepitch). The producer warpgroup's warps 1..3, idle in unclustered kernels (warp 0
// walks the k loop and issues the TMA loads), copy the chunks of every job in k order -- chunk c =
// blockIdx.x + i x gridDim.x of k_tiles x (blocks[0] + blocks[1]), k tile major -- so that every
// CTA's first k tiles are copied first, by all CTAs at once. Each copier warp counts its share of a
// chunk in flags[j * k_tiles + kt] (release after a generic -> async proxy fence); the TMA producer
// waits for 3 x blocks counts of each operand's k tile (acquire, then the proxy fence) before its
// loads. Needs every CTA resident (a cooperative launch: launch_impl.cuh), and more producer
// registers than the TMA loop's 40 (gemm_layout.cuh: 128 in the one-consumer kernels of such builds).
#pragma once
#include <cstdint>
#include "../../kittens/hopper/flags.cuh"
#include "../repitch.h"
#include "repitch_chunk.cuh"

namespace tk::hopper {

constexpr int kRepitchCopierThreads = 96;  // warps 1..3 of the producer warpgroup
constexpr int kRepitchChunk = 64;          // lines and inner elements of a chunk (a k tile's width)
constexpr int kGranulesPerThread = (kRepitchChunk * 8 + kRepitchCopierThreads - 1) / kRepitchCopierThreads;  // 6

// t: 0 .. kRepitchCopierThreads - 1.
__device__ __forceinline__ void fused_repitch_copy(const FusedRepitch& r, int t) {
  const int per_kt = r.blocks[0] + r.blocks[1];
  const int total = r.k_tiles * per_kt;
  for (int c = int(blockIdx.x); c < total; c += int(gridDim.x)) {
    const int kt = c / per_kt, q = c - kt * per_kt;
    const bool second = q >= r.blocks[0];
    const int b = second ? q - r.blocks[0] : q;
    // Field-wise selects with constant indices (pad_copy.cu: indexing the parameter array by a
    // runtime index copies it to the stack).
    const RepitchJob& j0 = r.job[0];
    const RepitchJob& j1 = r.job[1];
    const uint16_t* src = static_cast<const uint16_t*>(second ? j1.src : j0.src);
    uint16_t* dst = static_cast<uint16_t*>(second ? j1.dst : j0.dst);
    const int64_t ld_src = second ? j1.ld_src : j0.ld_src, ld_dst = second ? j1.ld_dst : j0.ld_dst;
    const int64_t lines = second ? j1.lines : j0.lines, inner = second ? j1.inner : j0.inner;
    const bool k_lines = second ? r.k_lines[1] : r.k_lines[0];
    const int64_t line0 = int64_t(k_lines ? kt : b) * kRepitchChunk, e00 = int64_t(k_lines ? b : kt) * kRepitchChunk;
    // 8 granules (16 B) a line, consecutive threads on consecutive granules of a line; all of a
    // thread's loads of the chunk in flight before its stores (one memory round trip per chunk:
    // with a load-store loop each granule waited for DRAM in turn). Granules past inner are never
    // read (the tensor maps end there) and are skipped.
    Chunk<uint32_t> gr[kGranulesPerThread];
#pragma unroll
    for (int i = 0; i < kGranulesPerThread; ++i) {
      const int g = t + i * kRepitchCopierThreads;
      gr[i].l = uint32_t(line0 + g / 8), gr[i].e0 = uint32_t(e00 + (g % 8) * 8);
      if (g < kRepitchChunk * 8 && gr[i].l < lines && gr[i].e0 < inner) chunk_load(gr[i], src, ld_src, inner);
    }
#pragma unroll
    for (int i = 0; i < kGranulesPerThread; ++i) {
      const int g = t + i * kRepitchCopierThreads;
      if (g < kRepitchChunk * 8 && gr[i].l < lines && gr[i].e0 < inner) chunk_store(gr[i], dst, ld_dst);
    }
    // Every copier's stores before the count (generic -> async proxy: TMA reads them).
    kittens::hopper::fence_proxy_async_global();
    __syncwarp();
    if ((t & 31) == 0) kittens::hopper::counter_release_add(r.flags + (second ? r.k_tiles : 0) + kt);
  }
}

// The TMA producer, before loading k tiles [kt, kt + count): waits until both operands' chunks of
// those k tiles are copied (for the operands read from a copy).
__device__ __forceinline__ void fused_repitch_wait(const FusedRepitch& r, int kt, int count) {
  for (int i = kt; i < kt + count && i < r.k_tiles; ++i) {
    if (r.x_job >= 0)
      kittens::hopper::counter_acquire_wait(r.flags + r.x_job * r.k_tiles + i,
                                            3u * unsigned(r.x_job ? r.blocks[1] : r.blocks[0]));
    if (r.y_job >= 0)
      kittens::hopper::counter_acquire_wait(r.flags + r.y_job * r.k_tiles + i,
                                            3u * unsigned(r.y_job ? r.blocks[1] : r.blocks[0]));
  }
  kittens::hopper::fence_proxy_async_global();
}

// The kernel's hooks (gemm_kernel.cuh; nothing in builds without TK_FUSED_REPITCH, and only in the
// one-consumer kernels, the only ones dispatch.cpp hands copies: elsewhere the copier code at the
// TMA loop's 40-register budget spilled 772-1076 B).
template <class L, class Ep>
__device__ __forceinline__ void fused_repitch_before_loads(const Ep& ep, int kt) {
#if TK_FUSED_REPITCH
  if constexpr (L::CONSUMERS == 1)
    if (ep.repitch.n > 0) fused_repitch_wait(ep.repitch, kt, L::KT);  // this stage's copies done
#endif
}
template <class L, class Ep>
__device__ __forceinline__ void fused_repitch_copier(const Ep& ep) {  // the producer warpgroup's other threads
#if TK_FUSED_REPITCH
  if constexpr (L::CONSUMERS == 1)
    if (ep.repitch.n > 0 && threadIdx.x >= 32 && threadIdx.x < 32 + kRepitchCopierThreads)
      fused_repitch_copy(ep.repitch, int(threadIdx.x) - 32);
#endif
}

}  // namespace tk::hopper
