// Warpgroup-wide wgmma ordering and register reallocation (PTX "wgmma", "setmaxnreg").
#pragma once
#include "util.cuh"

namespace kittens::hopper {

// Orders prior register/shared accesses before the next wgmma of this warpgroup.
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
// Waits until at most N committed wgmma groups are still pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}

// Accumulator registers must not be reordered across wgmma issue/wait by the compiler.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Ends the live range of accumulator values a scale-d 0 wgmma will overwrite: its asm operands
// are read-write ("+f"), so the compiler would otherwise keep the old values in registers until
// it issues (no instruction is emitted).
template <int R>
__device__ __forceinline__ void forget_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "=f"(d[i]));
}

template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
#endif
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
#endif
}

// Named barrier among `threads` threads (a multiple of 32); id 0 is __syncthreads.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Arrival at named barrier `id` without waiting (its other threads wait with named_barrier);
// the arriving threads' earlier memory accesses are performed for them (PTX barrier.arrive).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Whether `pred` holds for any of the `threads` threads meeting at named barrier `id` (PTX
// bar.red.or.pred): every thread gets the same answer, so a branch on it is uniform across them --
// what a branch around a .sync.aligned instruction such as wgmma.wait_group needs (PTX ISA: all
// threads of the warpgroup execute the same one, or the behaviour is undefined).
__device__ __forceinline__ bool named_barrier_any(int id, int threads, bool pred) {
  uint32_t any;
  asm volatile(
      "{\n.reg .pred p, q;\n"
      "setp.ne.u32 p, %1, 0;\n"
      "bar.red.or.pred q, %2, %3, p;\n"
      "selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(any)
      : "r"(uint32_t(pred)), "r"(id), "r"(threads)
      : "memory");
  return any != 0;
}

}  // namespace kittens::hopper
