// The consumers' side of the stage ring's empty barriers (gemm_kernel.cuh): how many arrivals free
// a stage and which consumer threads signal which CTA of the cluster. A stage is free once every
// consumer of every CTA that received it (its own, and the peers its Y slice was multicast to) has
// read it.
#pragma once
#include <cstdint>
#include "../../kittens/hopper/cluster.cuh"
#include "../../kittens/hopper/mbarrier.cuh"
#include "kernel_variants.h"

namespace tk::hopper {
using namespace kittens::hopper;

// Arrivals that complete a stage's empty barrier: one per consumer warp of the cluster, or with
// TK_WG_RELEASE (kernel_variants.h) one per consumer warpgroup of the cluster.
template <class L>
constexpr uint32_t kEmptyArrivals = uint32_t(L::CONSUMERS * (TK_WG_RELEASE ? 1 : 4) * L::CLUSTER);

// Called by every consumer thread once its wgmmas reading `stage` have retired. Per warp: lane 0
// arrives on its own CTA's barrier and each peer's. TK_WG_RELEASE: lane 0 of warp d of the
// warpgroup signals CTA rank + d only.
template <class L>
__device__ __forceinline__ void release_stage(uint64_t* empty, int stage, int rank) {
  if (threadIdx.x % 32 != 0) return;
  if constexpr (TK_WG_RELEASE) {
    static_assert(L::CLUSTER <= 4, "one signalling warp per destination CTA");
    const int d = thread_in_warpgroup() / 32;
    if (d == 0) mbar_arrive(&empty[stage]);
    else if (d < L::CLUSTER) mbar_arrive_cluster(&empty[stage], (rank + d) % L::CLUSTER);
  } else {
    mbar_arrive(&empty[stage]);
#pragma unroll
    for (int peer = 1; peer < L::CLUSTER; ++peer) mbar_arrive_cluster(&empty[stage], (rank + peer) % L::CLUSTER);
  }
}
}  // namespace tk::hopper
