// Wave-level ordering helpers for gfx942 (device only).
// s_waitcnt simm16 on gfx9: vmcnt = bits 3:0 | 15:14, expcnt = bits 6:4, lgkmcnt = bits 11:8
// (CDNA3 ISA guide, SOPP S_WAITCNT).
#pragma once
#include <hip/hip_runtime.h>

namespace kittens::cdna3 {

constexpr unsigned waitcnt_imm(unsigned vm, unsigned exp, unsigned lgkm) {
  return (vm & 0xf) | ((vm >> 4) << 14) | ((exp & 7) << 4) | ((lgkm & 0xf) << 8);
}

// The empty asm with a memory clobber keeps the compiler from moving LDS/global accesses
// across the wait / barrier (the builtins alone are not compiler memory fences).
__device__ __forceinline__ void compiler_fence() { asm volatile("" ::: "memory"); }

__device__ __forceinline__ void wait_lgkm0() {
  compiler_fence();
  __builtin_amdgcn_s_waitcnt(waitcnt_imm(63, 7, 0));
  compiler_fence();
}
__device__ __forceinline__ void wait_vm0() {
  compiler_fence();
  __builtin_amdgcn_s_waitcnt(waitcnt_imm(0, 7, 15));
  compiler_fence();
}

// Publishes this wave's LDS writes to the workgroup: lgkmcnt(0) then s_barrier. Global loads
// in flight (vmcnt) stay in flight, which is what the register prefetch relies on.
__device__ __forceinline__ void lds_barrier() {
  wait_lgkm0();
  __builtin_amdgcn_s_barrier();
  compiler_fence();
}

__device__ __forceinline__ void set_prio(int p) {
  if (p) __builtin_amdgcn_s_setprio(1);
  else __builtin_amdgcn_s_setprio(0);
}
__device__ __forceinline__ void sched_fence() { __builtin_amdgcn_sched_barrier(0); }

}  // namespace kittens::cdna3
