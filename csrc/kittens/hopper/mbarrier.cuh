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

// TK_MBAR_SUSPEND_NS (build define, A/B; default 0 = no hint): a suspendTimeHint in ns for every
// try_wait (PTX ISA, mbarrier.try_wait: the thread may sleep until the phase completes or the hint
// expires; ptxas then emits NANOSLEEP.SYNCS between tries). Time-neutral on lone GEMMs (H200
// 2026-11-28) and not separable from the spread in bench_model's power-capped step (H100 2026-12-07d,
// 1000000: fewer issued instructions did not show as clock); kept for such A/Bs.
#ifndef TK_MBAR_SUSPEND_NS
#define TK_MBAR_SUSPEND_NS 0
#endif
#define TK_MBAR_STR2(x) #x
#define TK_MBAR_STR(x) TK_MBAR_STR2(x)
#if TK_MBAR_SUSPEND_NS > 0
#define TK_MBAR_HINT ", " TK_MBAR_STR(TK_MBAR_SUSPEND_NS)
#else
#define TK_MBAR_HINT ""
#endif

// Blocks until the phase with the given parity has completed. A fresh barrier is in phase 0,
// so waiting on parity 1 returns at once ("the previous phase is complete").
// kCluster: acquire at cluster scope (sees a peer CTA's stores released by its remote arrive);
// otherwise the default .acquire.cta.
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  uint32_t done = 0;
  do {
    if constexpr (kCluster)
      asm volatile(
          "{\n.reg .pred p;\n"
          "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2" TK_MBAR_HINT ";\n"
          "selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(addr), "r"(parity)
          : "memory");
    else
      asm volatile(
          "{\n.reg .pred p;\n"
          "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2" TK_MBAR_HINT ";\n"
          "selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(addr), "r"(parity)
          : "memory");
  } while (!done);
}

// Whether the phase with the given parity has completed, without blocking (test_wait: no
// suspension window, unlike try_wait).
__device__ __forceinline__ bool mbar_test(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

}  // namespace kittens::hopper
