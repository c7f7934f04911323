// Global-memory ready flags between CTAs of one grid (PTX ISA "Memory Consistency Model":
// release/acquire at gpu scope). The writer's CTA-mates make their stores before a barrier the
// releasing thread also passes; release is cumulative, so those stores are visible to any thread
// that acquires the flag and then passes a barrier with its own CTA-mates.
#pragma once
#include <cstdint>

namespace kittens::hopper {

__device__ __forceinline__ void flag_release(int* flag) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flag), "r"(1) : "memory");
}

// Spins until *flag != 0 (the flags are zeroed before the launch).
__device__ __forceinline__ void flag_acquire_wait(const int* flag) {
  int v = 0;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  } while (v == 0);
}

// Counters of finished work between CTAs (the same release / acquire pattern, counting): a
// writer adds 1 after its stores; a reader waits until the count reaches `need`.
__device__ __forceinline__ void counter_release_add(unsigned* counter) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory");
}
__device__ __forceinline__ void counter_acquire_wait(const unsigned* counter, unsigned need) {
  unsigned v = 0;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
  } while (v < need);
}
// Orders this thread's global accesses through the generic proxy (ld / st) with those of the
// async proxy (TMA), both ways: global data written by ordinary stores and read by TMA needs it.
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

}  // namespace kittens::hopper
