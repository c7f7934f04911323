// The dynamic schedule's hand-off ring (gemm_kernel.cuh): the producer draws the next unit id and
// passes it to the consumers through SLOTS shared slots (full / empty mbarriers per slot).
// Persistent: CTA b takes work unit b first (kittens::work_unit), then either b + gridDim.x, ...
// (static) or, with a `unit_counter` (dynamic), the next unit not yet taken by any CTA: ticket
// gridDim.x + atomicAdd(unit_counter, 1), drawn by the producer once it has issued the loads of
// its current unit and handed to the consumers through the sched ring. In a 2-CTA cluster (units
// counted per cluster) rank 0's producer draws the ticket and writes it into both CTAs' rings.
// Dynamic order keeps the CTAs that share an operand panel (neighbouring units) in step however
// the SMs' speeds drift, so the panel is read from DRAM once (ncu, 8192x57344x8192: static 19 GB
// of DRAM reads against cuBLAS's 8.5 GB). The stage ring and its parities run on across units, so
// the producer fills the next unit's stages while the consumers are still in the previous unit's
// epilogue.
#pragma once
#include "../../kittens/hopper/cluster.cuh"
#include "../../kittens/hopper/mbarrier.cuh"
#include "kernel_variants.h"

namespace tk::hopper {
using namespace kittens::hopper;

// Producer side, for its `handed`-th hand-off: the unit id it takes next. Rank 0 of a cluster
// draws a ticket (lead lane only; broadcast to the warp by a warp_producer) and writes the
// id into every CTA's slot; the other ranks read it from their own slot and free rank 0's.
template <int CLUSTER, int SLOTS>
__device__ __forceinline__ int producer_draw_unit(int handed, int rank, bool lead, int* unit_counter, int units,
                                                  int unit_stride, uint64_t* sched_empty, uint64_t* sched_full,
                                                  int* sched_unit) {
  const int slot = handed % SLOTS, parity = (handed / SLOTS) & 1;
  int u;
  if (rank == 0) {
    // Units are numbered per cluster: the first unit_stride went out statically. Every
    // cluster draws until its id is past the last unit, so tickets 0 .. units - 1 are
    // drawn once each and the last one drawn leaves the counter zeroed for the stream's
    // next call (ticket_counter.h; with a stream-K tail the draws stop short of it).
    int ticket = 0;
    if (lead) {
      ticket = atomicAdd(unit_counter, 1);
      if (ticket == units - 1) atomicExch(unit_counter, 0);
    }
    if constexpr (warp_producer(CLUSTER)) ticket = __shfl_sync(0xffffffffu, ticket, 0);
    u = unit_stride + ticket;
    mbar_wait(&sched_empty[slot], parity ^ 1);
    if (lead) {
      sched_unit[slot] = u;  // made visible by the arrive's release
#pragma unroll
      for (int peer = 1; peer < CLUSTER; ++peer) {
        st_shared_cluster(&sched_unit[slot], peer, u);
        mbar_arrive_cluster_release(&sched_full[slot], peer);
      }
      mbar_arrive(&sched_full[slot]);
    }
  } else {
    mbar_wait<true>(&sched_full[slot], parity);
    u = 0;
    if (lead) u = *reinterpret_cast<volatile int*>(&sched_unit[slot]);  // read by the thread that frees it
    if constexpr (warp_producer(CLUSTER)) u = __shfl_sync(0xffffffffu, u, 0);  // lead is lane 0
    if (lead) mbar_arrive_cluster(&sched_empty[slot], 0);
  }
  return u;
}

// Consumer side, for its `received`-th unit id: the warp's leader (lane 0) reads the id and
// broadcasts it, then its arrival on rank 0's ring frees the slot. Only the thread whose arrival
// frees the slot reads it: when every lane read it before a __syncwarp and the leader's arrival,
// compute-sanitizer racecheck reported the other lanes' reads against the producer's next write
// of the slot as WAR hazards (1000x1001x999 fp32 out, H100 2026-12-06c), an ordering the PTX
// memory model gives (bar.warp.sync, then the arrive's release) but the tool does not track.
template <int CLUSTER, int SLOTS>
__device__ __forceinline__ int consumer_take_unit(int received, int rank, bool warp_leader, uint64_t* sched_full,
                                                  uint64_t* sched_empty, int* sched_unit) {
  const int slot = received % SLOTS, parity = (received / SLOTS) & 1;
  if (CLUSTER > 1 && rank != 0) mbar_wait<true>(&sched_full[slot], parity);
  else mbar_wait(&sched_full[slot], parity);
  int v = 0;
  if (warp_leader) v = *reinterpret_cast<volatile int*>(&sched_unit[slot]);
  v = __shfl_sync(0xffffffffu, v, 0);  // warp_leader is lane 0
  if (warp_leader) {
    if (CLUSTER > 1 && rank != 0) mbar_arrive_cluster(&sched_empty[slot], 0);
    else mbar_arrive(&sched_empty[slot]);
  }
  return v;
}

// A warp's word of shared memory (every lane writes the same value, so each lane reads its own
// write back): consumer state that waits out the mainloop there instead of in a register. With
// kOn false, store does nothing and load returns its argument (the value stays in a register).
// The store sits between two __syncwarp()s: lanes of one warp are not ordered without them (the
// CUDA memory model; racecheck reported the slot's load / store pairs as hazards, H100 2026-12-05h).
template <bool kOn>
struct WarpSlot {
  uint32_t addr;  // shared-space address
  __device__ __forceinline__ void store(int v) const {
    if constexpr (kOn) {
      __syncwarp();  // every lane's earlier load of the slot before the new value
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
      __syncwarp();  // every lane's store before a later load
    }
  }
  __device__ __forceinline__ int load(int v) const {
    if constexpr (kOn) asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
  }
};

}  // namespace tk::hopper
