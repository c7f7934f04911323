// Split-K finished in distributed shared memory (Epilogue::dsmem_splits; index math in
// kittens/common/split_cluster.h). The splits of one tile are the CTAs of one cluster, one unit
// per CTA. After the mainloop every CTA writes the fp32 sums of the rounds it does not own into its
// idle stage ring; after a cluster barrier the owner of each (strip, round) reads the peers' sums
// (ld.shared::cluster), adds them in split order (fixed: the same bits every run) and stores the
// round through the TMA-store epilogue. This replaces the partials' round trip through global
// memory and the reduction kernel (profile at 256x4096x14336, H200: GEMM kernel 46.5 us, then
// ~4 us of reduction tail; cuBLAS's split-K reduction kernel 4.4 us).
#pragma once
#include "../../kittens/common/split_cluster.h"
#include "../../kittens/hopper/cluster.cuh"
#include "epilogue.cuh"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

constexpr int kDsmemMaxSplits = 4;  // peers' chunks in flight per thread: kDsmemBatch x (splits - 1) x 16 B
#ifndef TK_DSMEM_BATCH
#define TK_DSMEM_BATCH 1
#endif
constexpr int kDsmemBatch = TK_DSMEM_BATCH;  // chunks per batch of loads (2 spilled in the 128 x 256 kernels)
constexpr int kDsmemBarrier = 5;    // named barrier of all consumer warpgroups (1 + strip: the epilogue's)

// Cluster barrier 1 (every thread of the CTA arrives once; the producer warpgroup does too) and
// the owned rounds' sums into `accs`. The caller then arrives on barrier 2 (reads done), stores
// the owned rounds and waits on barrier 2 before the CTA exits (its ring is read by the peers).
template <class L>
__device__ __forceinline__ void dsmem_reduce(float (&accs)[L::STRIPS][L::BN / 2], uint32_t ring, int cw, int splits,
                                             int rank) {
  constexpr int R = L::STORE_ROUNDS, kStrips = L::BM / 64;
  const int t = thread_in_warpgroup();
  // Every warpgroup's wgmmas have completed (wait_group 0) before any writes into the ring.
  named_barrier(kDsmemBarrier, L::CONSUMERS * kWarpgroupThreads);
#pragma unroll
  for (int st = 0; st < L::STRIPS; ++st) {
    const int cs = cw * L::STRIPS + st;
#pragma unroll
    for (int h = 0; h < R; ++h) {
      if (split_round_owner(h, cs, R, kStrips, splits) == rank) continue;
#pragma unroll
      for (int c = 0; c < kSplitChunks; ++c) {
        const float* a = &accs[st][32 * h + 4 * c];
        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(ring + split_partial_offset(cs, h, c, t, R)),
                     "f"(a[0]), "f"(a[1]), "f"(a[2]), "f"(a[3])
                     : "memory");
      }
    }
  }
  cluster_arrive_release();
  cluster_wait_acquire();
#pragma unroll
  for (int st = 0; st < L::STRIPS; ++st) {
    const int cs = cw * L::STRIPS + st;
#pragma unroll
    for (int h = 0; h < R; ++h) {
      if (split_round_owner(h, cs, R, kStrips, splits) != rank) continue;
#pragma unroll
      for (int c = 0; c < kSplitChunks; c += kDsmemBatch) {
        float4 v[kDsmemBatch][kDsmemMaxSplits];
        // The batch's loads from every peer first (volatile: in this order), then the sums.
#pragma unroll
        for (int j = 0; j < kDsmemBatch; ++j)
#pragma unroll
          for (int p = 0; p < kDsmemMaxSplits; ++p)
            if (p < splits && p != rank) v[j][p] = ld_shared_cluster_v4(ring + split_partial_offset(cs, h, c + j, t, R), p);
#pragma unroll
        for (int j = 0; j < kDsmemBatch; ++j) {
          float* a = &accs[st][32 * h + 4 * (c + j)];
          float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
          for (int p = 0; p < kDsmemMaxSplits; ++p) {
            if (p >= splits) continue;
            const float4 x = p == rank ? make_float4(a[0], a[1], a[2], a[3]) : v[j][p];
            if (p == 0) s = x;
            else s = make_float4(s.x + x.x, s.y + x.y, s.z + x.z, s.w + x.w);
          }
          a[0] = s.x, a[1] = s.y, a[2] = s.z, a[3] = s.w;
        }
      }
    }
  }
}

// The TMA-store epilogue of the rounds of strip `cs` this CTA owns (template-unrolled: constant
// accumulator indices): alpha * sum, no C term (launch_impl.cuh takes this path only without C;
// one epilogue variant, as more made ptxas spill in the 128 x 256 kernels). Rounds are skipped,
// so each waits for every earlier store's read of the staging buffers (tma_round kWaitAll).
template <class L, bool kT, int H = 0>
__device__ __forceinline__ void dsmem_store_owned(const float (&acc)[L::BN / 2], const Epilogue<typename L::out_t>& ep,
                                                  const CUtensorMap* tm_out, uint32_t staging, int row0, int n0,
                                                  int M, int N, int cs, int splits, int rank) {
  if constexpr (H < L::STORE_ROUNDS) {
    if (split_round_owner(H, cs, L::STORE_ROUNDS, L::BM / 64, splits) == rank)
      tma_round<L, H, kT, true>(tm_out, staging, row0, n0, cs,
                                [&](uint32_t base) { stage_round_impl<L, H, kEpScale, kT, false>(acc, ep, base, row0, n0, M, N); });
    dsmem_store_owned<L, kT, H + 1>(acc, ep, tm_out, staging, row0, n0, M, N, cs, splits, rank);
  }
}

}  // namespace tk::hopper
