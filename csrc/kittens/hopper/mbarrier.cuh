// mbarrier helpers (PTX ISA "mbarrier"): phase-parity waits, arrivals, transaction counts.
#pragma once
#include "util.cuh"

namespace kittens::hopper {

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}

// Makes barrier initialisation visible to the async proxy (TMA) and the other threads.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// One arrival that also announces `bytes` of TMA transactions for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Blocks until the phase with the given parity has completed. A fresh barrier is in phase 0,
// so waiting on parity 1 returns at once ("the previous phase is complete").
// kCluster: acquire at cluster scope (sees a peer CTA's stores released by its remote arrive);
// otherwise the default .acquire.cta.
// TK_MBAR_SUSPEND_NS > 0 (build define, experiment): try_wait's suspendTimeHint, the longest a
// waiting thread may stay suspended before try_wait returns false (PTX ISA, mbarrier.try_wait);
// the thread resumes when the phase completes either way. 0: the system-dependent default limit.
#ifndef TK_MBAR_SUSPEND_NS
#define TK_MBAR_SUSPEND_NS 0
#endif
#define TK_MBAR_TRY_WAIT(SEM)                                                                       \
  asm volatile("{\n.reg .pred p;\n"                                                               \
               "mbarrier.try_wait.parity" SEM ".shared::cta.b64 p, [%1], %2" TK_MBAR_HINT ";\n"    \
               "selp.u32 %0, 1, 0, p;\n}\n"                                                      \
               : "=r"(done)                                                                     \
               : "r"(addr), "r"(parity) TK_MBAR_HINT_OPERAND                                   \
               : "memory")
#if TK_MBAR_SUSPEND_NS > 0
#define TK_MBAR_HINT ", %3"
#define TK_MBAR_HINT_OPERAND , "n"(TK_MBAR_SUSPEND_NS)
#else
#define TK_MBAR_HINT ""
#define TK_MBAR_HINT_OPERAND
#endif
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  uint32_t done = 0;
  do {
    if constexpr (kCluster)
      TK_MBAR_TRY_WAIT(".acquire.cluster");
    else
      TK_MBAR_TRY_WAIT("");
  } while (!done);
}
#undef TK_MBAR_TRY_WAIT
#undef TK_MBAR_HINT
#undef TK_MBAR_HINT_OPERAND

}  // namespace kittens::hopper
