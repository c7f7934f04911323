// Shared-memory addressing and warpgroup identity on Hopper.
#pragma once
#include <cstdint>

namespace kittens::hopper {

constexpr int kWarpgroupThreads = 128;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ int warpgroup_id() { return threadIdx.x / kWarpgroupThreads; }
__device__ __forceinline__ int thread_in_warpgroup() { return threadIdx.x % kWarpgroupThreads; }

}  // namespace kittens::hopper
