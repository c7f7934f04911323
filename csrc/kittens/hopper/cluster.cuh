// Thread-block clusters (PTX "Cluster", "mapa", "barrier.cluster", multicast TMA): the pieces a
// 2-CTA cluster needs to share one operand tile between its CTAs.
#pragma once
#include <cuda.h>
#include "util.cuh"

namespace kittens::hopper {

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_id_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_count_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}

// All threads of all CTAs of the cluster; release/acquire orders shared-memory work around it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Arrival on the mbarrier at the same shared-memory offset in CTA `rank` of the cluster, with the
// default .release.cta semantics. What it publishes is "this warp's wgmma reads of the stage are
// done" (already ordered by wgmma.wait_group), for the peer's producer to overwrite the stage by
// TMA. Spelled .release.cluster it compiled to MEMBAR.ALL.GPU before every arrive (SASS), which
// halved the mainloop rate of the 2-CTA kernels (clock64 per unit, 8192^3: 302k vs 164k cycles).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

// TMA load whose box lands at the same offset in every CTA of `cta_mask`, each CTA's mbarrier
// at `bar`'s offset receiving the complete_tx bytes.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int inner,
                                                      int outer, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(inner), "r"(outer), "h"(cta_mask)
      : "memory");
}

// tma_load_2d_multicast with an L2 cache policy (PTX .L2::cache_hint; see l2_evict_first_policy).
__device__ __forceinline__ void tma_load_2d_multicast_hint(void* dst, const CUtensorMap* map, uint64_t* bar, int inner,
                                                           int outer, uint16_t cta_mask, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5, %6;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(inner), "r"(outer), "h"(cta_mask), "l"(policy)
      : "memory");
}

// A 32-bit store into the shared memory of CTA `rank` of the cluster, at `p`'s offset.
__device__ __forceinline__ void st_shared_cluster(int* p, uint32_t rank, int v) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(p)), "r"(rank));
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(remote), "r"(v) : "memory");
}

// Remote arrival that publishes this thread's earlier cluster-scope stores (st_shared_cluster)
// to whoever acquires the barrier's phase at cluster scope (mbar_wait<true>). It costs a
// MEMBAR.ALL.GPU, so it is used once per work unit, never per stage.
__device__ __forceinline__ void mbar_arrive_cluster_release(uint64_t* bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

}  // namespace kittens::hopper
