// TMA bulk tensor copies global -> shared, completing on an mbarrier (PTX "cp.async.bulk.tensor").
#pragma once
#include <cuda.h>
#include "util.cuh"

namespace kittens::hopper {

__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// coords: {inner (contiguous) element index, outer index}; out-of-bounds elements arrive as zeros
// and still count towards the transaction bytes.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(inner), "r"(outer)
      : "memory");
}

}  // namespace kittens::hopper
