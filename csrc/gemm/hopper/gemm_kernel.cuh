// Hopper GEMM v1: TMA -> 128-B swizzled shared ring (mbarrier full/empty) -> wgmma -> registers.
// One producer warpgroup (one lane issues TMA), BM / 64 consumer warpgroups of a 64 x BN strip each;
// fp32 accumulate; epilogues: epilogue.cuh (alpha/beta/C, staging boxes + TMA, rounds deferred under
// the next mainloop), epilogue_split_k.cuh (partials), epilogue_swiglu(_grad).cuh (SwiGLU fwd / bwd),
// epilogue_rope.cuh (RoPE on the product before the ordinary epilogue).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "../../kittens/common/fragments.h"
#include "../../kittens/common/raster.h"
#include "../../kittens/common/stream_k.h"
#include "../../kittens/hopper/flags.cuh"
#include "../../kittens/hopper/mbarrier.cuh"
#include "../../kittens/hopper/st.cuh"
#include "../../kittens/hopper/warpgroup.cuh"
#include "../../kittens/hopper/wgmma_ops.cuh"
#include "convert.cuh"
#include "epilogue.cuh"
#include "epilogue_rope.cuh"
#include "epilogue_split_k.cuh"
#include "epilogue_swiglu.cuh"
#include "epilogue_swiglu_grad.cuh"
#include "gemm_layout.cuh"
#include "gemm_experiments.cuh"
#include "kernel_variants.h"
#include "plain_body.cuh"
#include "producer_loads.cuh"
#include "sched_ring.cuh"
#include "stage_release.cuh"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// Persistent, statically or dynamically scheduled: sched_ring.cuh says how and why.
// Named barrier of the early start (ids 1.. are the epilogue's, one per 64-row strip), and the
// early release's vote, one per consumer warpgroup (kVoteBarrier + cw).
constexpr int kStartBarrier = 8, kVoteBarrier = 9;

template <class L>
__global__ void __launch_bounds__(L::THREADS, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                const __grid_constant__ CUtensorMap tm_out, const __grid_constant__ CUtensorMap tm_out_tail,
                const __grid_constant__ CUtensorMap tm_a_tail,
                const __grid_constant__ CUtensorMap tm_b_tail, Epilogue<typename L::out_t> ep, int M, int N, int K,
                int splits, int store_mode, int group_m, int* unit_counter, const __grid_constant__ CUtensorMap tm_x3) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#ifdef TK_EXPERIMENTS
  const int xp = ep.experiment;
  void* const trace_buf = (xp & kXpTrace) ? ep.trace : nullptr;
#else
  constexpr int xp = 0;
  void* const trace_buf = nullptr;
#endif
  const bool trace_cta = trace_record(trace_buf, 0) != nullptr;
  const unsigned long long trace_g0 = trace_cta ? global_ns() : 0;
  const long long trace_c0 = trace_cta ? clock64() : 0;
  const unsigned long long span_g0 = trace_buf != nullptr && (xp & kXpSpans) ? global_ns() : 0;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* const after_ring = smem + L::STAGES * L::STAGE_BYTES;
  // Ring staging: the epilogue runs after the CTA's only unit, its stages all consumed and its
  // wgmmas complete (wait_group 0), so nothing reads or writes the ring any more.
  uint8_t* staging = L::kRingStaging ? smem : after_ring;
  uint64_t* full = reinterpret_cast<uint64_t*>(after_ring + L::STAGING_BYTES);
  uint64_t* empty = full + L::STAGES;
  uint64_t* sched_full = empty + L::STAGES;
  uint64_t* sched_empty = sched_full + L::SCHED_SLOTS;
  int* sched_unit = reinterpret_cast<int*>(sched_empty + L::SCHED_SLOTS);
  const bool dynamic = unit_counter != nullptr;
  // With clusters a unit is a column of CLUSTER vertically adjacent tiles; CTA `rank` of the
  // cluster takes row tile CLUSTER * unit_row + rank (past the last row tile it still loads and
  // multicasts its Y slice; its own rows are zero-filled and its stores masked/clipped).
  const int tiles_m = ceil_div(M, L::BM * L::CLUSTER), tiles_n = ceil_div(N, L::BN);
  const int units = tiles_m * tiles_n * splits;
  const int k_tiles = ceil_div(K, L::BK);
  const int group = group_m / L::CLUSTER > 0 ? group_m / L::CLUSTER : 1;  // raster band, in units
  // The unit grid {tiles_m, tiles_n, units, k_tiles}, read from shared memory where a unit is
  // decoded: in registers across the unit loop they left the early k tiles' packed words, and the
  // one-warpgroup kernels' plain bodies (plain_body.cuh), too few (ptxas spilled them, 20-54 B).
  int* const grid_consts = sched_unit + L::SCHED_SLOTS;
  auto grid_const = [&](int i) {
    int v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(smem_u32(grid_consts + i)));
    return v;
  };
  // Stream-K: whole-tile units [0, dp_units), then this CTA's stream-K iterations [sk_lo, sk_hi) (offset by
  // dp_units), walked from the back: in stream-K mode (in_sk) a unit id is the end of the iterations
  // still to do. A schedule switches to them once its next whole-tile id is past dp_units.
  const int dp_units = units - (L::kStreamK ? ep.sk_tiles : 0);
  const int64_t sk_iters = int64_t(L::kStreamK ? ep.sk_tiles : 0) * k_tiles;
  const int sk_parts = ep.sk_parts > 0 ? ep.sk_parts : int(gridDim.x);  // CTAs past it: no tail work
  const int sk_lo = dp_units + int(sk_begin(blockIdx.x, sk_iters, sk_parts));
  const int sk_hi = dp_units + int(sk_begin(blockIdx.x + 1, sk_iters, sk_parts));
  // Producer and consumers walk the same units: the switch to the tail, and what a unit is.
  auto enter_tail = [&](int& u, bool& in_sk) {
    if constexpr (L::kStreamK) {
      if (!in_sk && u >= dp_units) in_sk = true, u = sk_hi;
    }
  };
  auto decode = [&](int u, bool in_sk, WorkUnit& w, KRange& kr, SkSegment& seg) {
    if (L::kStreamK && in_sk) {
      seg = sk_segment_back(u - dp_units, sk_lo - dp_units, grid_const(3), sk_iters, sk_parts);
      w = work_unit(dp_units + seg.tile, grid_const(0), grid_const(1), group);
      kr = seg.k;
    } else {
      // No division for the split (the unsplit plans' common case; 64-row plans never split: the
      // split path there once spilled a 64-bit division helper's return address; since 2026-11-25f
      // split_k_range divides in 32 bits, so the two-strip kernels keep the split path).
      if ((L::BM == 64 && !TK_BM64_SPLIT) || splits == 1) {
        w = WorkUnit{grouped_tile(u, grid_const(0), grid_const(1), group), 0};
        kr = KRange{0, grid_const(3)};
      } else {
        w = work_unit(u, grid_const(0), grid_const(1), group);
        kr = split_k_range(w.split, splits, grid_const(3), L::KT);  // whole stages (the last ends at K)
      }
    }
  };
  int rank = 0, first_unit = blockIdx.x, unit_stride = gridDim.x;
  if constexpr (L::CLUSTER > 1)
    rank = int(cluster_ctarank()), first_unit = int(cluster_id_x()), unit_stride = int(cluster_count_x());

  // Let a dependent launch (the split-K reduction) get scheduled now; it waits for our completion.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  // Barrier init and descriptor prefetch (thread 0).
  auto init_barriers = [&]() {
    for (int s = 0; s < L::STAGES; ++s) {
      mbar_init(&full[s], 1);                      // the producer's expect_tx arrival
      mbar_init(&empty[s], kEmptyArrivals<L>);        // the consumers' releases (stage_release.cuh)
    }
    for (int s = 0; s < L::SCHED_SLOTS; ++s) {
      mbar_init(&sched_full[s], 1);                   // the producer's arrival after writing the id
      // One arrival per consumer warp of the cluster after reading the id, plus the other
      // producers (only rank 0's ring is waited on: rank 0 draws the tickets).
      mbar_init(&sched_empty[s], L::CONSUMERS * 4 * L::CLUSTER + L::CLUSTER - 1);
    }
    mbar_init_fence();
    grid_consts[0] = tiles_m, grid_consts[1] = tiles_n, grid_consts[2] = units, grid_consts[3] = k_tiles;
    tma_prefetch_desc(&tm_a);
    tma_prefetch_desc(&tm_b);
    if (L::kXTail && ep.x_tail_rows > 0) tma_prefetch_desc(&tm_a_tail);
    if ((L::kYTail && ep.y_tail_rows > 0) || L::kKParts) tma_prefetch_desc(&tm_b_tail);
    if (L::kKParts || L::kMParts) tma_prefetch_desc(&tm_a_tail), tma_prefetch_desc(&tm_x3);
  };
  // Early start (unclustered kernels; ep.early_start, TK_HOPPER_EARLY_START): the producer thread issues
  // its first loads right after initialising the barriers; the producer warpgroup only arrives at the start
  // barrier (bar.arrive releases the init to the consumers' bar.sync): the loads overlap the start-up.
  static_assert(1 + L::CONSUMERS * L::STRIPS <= kStartBarrier, "the start barrier's id is an epilogue strip's");
  static_assert(kVoteBarrier + L::CONSUMERS <= 16, "named barrier ids run to 15");
  const bool early_start = L::CLUSTER == 1 && ep.early_start != 0;
  if (!early_start) {
    if (threadIdx.x == 0) init_barriers();
    if constexpr (L::CLUSTER > 1) cluster_sync();  // peers' barriers initialised before any remote use
    else __syncthreads();
  }
  const bool hint_x = (ep.l2_evict_first & 1) != 0, hint_y = (ep.l2_evict_first & 2) != 0;
  unsigned tr[kTraceLen + 8];  // the producer's trace (thread 0)
  int tn = 0;
  // Pre-issue (ep.early_start 2): thread 0 issues the first unit's first stages ahead of the role branch
  // (ptxas puts the producer ~0.5 MB past the entry: a cold fetch after an L2 flush). H200 2026-12-02c, dirty
  // L2, us, with / without: 1000^3 NT 12.2 / 12.5, 64x4096x4096 17.1 / 17.4, 256x8192x8192 54.8 / 55.1.
  const bool pre_issue = early_start && ep.early_start == 2 && !(xp & (kXpBare | kXpNoLoad | kXpPrefetchOut));
  int pre = 0;  // stages issued here (thread 0)
  if (pre_issue && threadIdx.x == 0) {
    init_barriers();
    asm volatile("griddepcontrol.wait;" ::: "memory");  // (see the producer's)
    int u = first_unit;
    bool in_sk = false;
    enter_tail(u, in_sk);
    if (!in_sk && u < units) {
      WorkUnit w;
      KRange kr;
      SkSegment seg;
      decode(u, in_sk, w, kr, seg);
      const UnitLoads ld = unit_loads<L>(w, rank, M, N, ep, &tm_a, &tm_b, &tm_a_tail, &tm_b_tail, &tm_out_tail, &tm_x3);
      const uint64_t evict_first = l2_evict_first_policy();
      for (int kt = kr.begin; kt < kr.end && pre < L::STAGES; kt += L::KT, ++pre) {
        if (trace_cta && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
        issue_stage<L>(smem, full, pre, kt, ld, &tm_b, rank, hint_x, hint_y, evict_first);
      }
    }
  }
  if (warpgroup_id() == 0) {
    // ---- producer ----
    setmaxnreg_dec<L::PRODUCER_REGS>();
    if (early_start) {
      if (threadIdx.x == 0 && !pre_issue) init_barriers();  // (else done above)
      __syncwarp();
      named_barrier_arrive(kStartBarrier, L::THREADS);
    }
    if (threadIdx.x < (warp_producer(L::CLUSTER) ? 32u : 1u)) {
      // (warp_producer: the whole warp; `lead` does the arrivals, copies and atomics.)
      const bool lead = threadIdx.x == 0;
      // Launched as a programmatic dependent (GemmArgs::dependent: after the re-pitch copy, or under
      // TK_HOPPER_PDL=1), the operands are complete only once the previous grid is; every other global
      // access follows this wait through the full barriers. Without PDL this returns at once.
      asm volatile("griddepcontrol.wait;" ::: "memory");
      const uint64_t evict_first = l2_evict_first_policy();
      // The first unit's stages issued ahead of the role branch (the lanes of a warp_producer step too).
      int skip = warp_producer(L::CLUSTER) ? __shfl_sync(0xffffffffu, pre, 0) : pre;
      uint32_t it = uint32_t(skip);  // k iterations issued by this CTA, across units
      int handed = 0;  // unit ids handed to the consumers (dynamic)
      bool in_sk = false;
      int u = first_unit;
      enter_tail(u, in_sk);
      while (in_sk ? u > sk_lo : u < units) {
        WorkUnit w;
        KRange kr;
        SkSegment seg;
        decode(u, in_sk, w, kr, seg);
        const UnitLoads ld = unit_loads<L>(w, rank, M, N, ep, &tm_a, &tm_b, &tm_a_tail, &tm_b_tail, &tm_out_tail, &tm_x3);
        for (int kt = kr.begin + skip * L::KT; kt < kr.end; kt += L::KT, ++it) {
          const int s = it % L::STAGES;
          if (xp & kXpBare) continue;
          mbar_wait(&empty[s], ((it / L::STAGES) & 1) ^ 1);  // first round passes at once
          if (trace_cta && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
          if (xp & kXpNoLoad) {
            if (lead) mbar_arrive(&full[s]);
            continue;
          }
          if (!lead) continue;
          issue_stage<L>(smem, full, s, kt, ld, &tm_b, rank, hint_x, hint_y, evict_first);
          if (xp & kXpPrefetchOut) xp_prefetch_out<L, kStoreTma, kStoreTmaTransposed>(xp, store_mode, kt, kr, &tm_out, ld.m0, ld.n0);
        }
        skip = 0;
        if (L::kStreamK && in_sk) {
          u -= kr.end - kr.begin;
          continue;
        }
        if (dynamic) {
          u = producer_draw_unit<L::CLUSTER, L::SCHED_SLOTS>(handed, rank, lead, unit_counter, units, unit_stride,
                                                           sched_empty, sched_full, sched_unit);
          ++handed;
        } else {
          u += unit_stride;
        }
        if constexpr (L::kSwiGLUGrad) issue_grad_stages<L>(smem, full, empty, it, ld.m0, ld.n0, &tm_b_tail, lead, evict_first);
        if constexpr (L::kRope) issue_rope_stage<L>(smem, full, empty, it, ld.m0, &tm_b_tail, &tm_out_tail, lead);
        enter_tail(u, in_sk);
      }
      if (trace_cta && lead) write_trace(trace_record(trace_buf, 0), tr, tn, trace_g0, trace_c0);
    }
  } else {
    // ---- consumers ----
    if (early_start) named_barrier(kStartBarrier, L::THREADS);  // the barriers are initialised
    setmaxnreg_inc<L::CONSUMER_REGS>();
    const int cw = warpgroup_id() - 1;
    const bool warp_leader = (threadIdx.x % 32) == 0;
    constexpr bool kBf16 = std::is_same_v<typename L::in_t, __nv_bfloat16>;
    using mma = wgmma_op<L::BN, kBf16, L::kAMn ? 1 : 0, L::kBMn ? 1 : 0>;
    float accs[L::STRIPS][L::BN / 2];  // one 64 x BN strip per 64 rows this warpgroup owns
    uint32_t it = 0;  // k iterations consumed, across units (unsigned: cheap % and /)
    // Stage 0's wgmma descriptors; the mainloop adds constant offsets (no carry: asserted).
    static_assert(L::SMEM_BYTES < (1 << 18), "shared addresses must fit the 14-bit descriptor field (>> 4)");
    const uint32_t ring = smem_u32(smem);
    // Only the low word (start address) moves: 32-bit adds, the high word stays constant.
    // The high word (strides, swizzle) does not depend on the start row.
    uint32_t a_lo[L::STRIPS];
#pragma unroll
    for (int st = 0; st < L::STRIPS; ++st) a_lo[st] = uint32_t(L::a_tile::desc(ring, (cw * L::STRIPS + st) * 64, 0));
    const uint32_t a_hi = uint32_t(L::a_tile::desc(ring, cw * L::STRIPS * 64, 0) >> 32);
    const uint64_t desc_b0 = L::b_tile::desc(ring + L::a_tile::kBytes, 0, 0);
    const uint32_t b_lo = uint32_t(desc_b0), b_hi = uint32_t(desc_b0 >> 32);
    auto release = [&](int stage) {
      if (!(xp & kXpBare)) release_stage<L>(empty, stage, rank);
    };
    const bool tc_units = trace_cta && cw == 0 && thread_in_warpgroup() == 0 && (xp & kXpTraceUnits);
    const bool tc = trace_cta && cw == 0 && thread_in_warpgroup() == 0 && !(xp & kXpTraceUnits);
    unsigned tr[kTraceLen + 8];
    int tn = 0;
    const EpiMarks marks{tr, &tn, trace_c0};  // kXpTraceRound
    const EpiMarks* const round_marks = tc_units && (xp & kXpTraceRound) ? &marks : nullptr;
    // Unit ids taken from the sched ring (dynamic) and the current unit's id: with early k tiles both
    // wait out the mainloop in shared slots of this warp (sched_ring.cuh WarpSlot). In registers they left
    // the 64 packed words and the in-flight accumulators too few: ptxas spilled them (20 B and 8 B).
    const uint32_t warp_slots = smem_u32(grid_consts + 4 + (threadIdx.x / 32 - 4));
    const WarpSlot<(L::EARLY_KTILES > 0)> unit_slot{warp_slots}, received_slot{warp_slots + L::CONSUMERS * 16};
    int received = 0;
    received_slot.store(0);
    // The next unit: static stride, or the id rank 0's producer handed over.
    auto next_unit = [&](int u) {
      if (!dynamic) return u + unit_stride;
      received = received_slot.load(received);
      const int v = consumer_take_unit<L::CLUSTER, L::SCHED_SLOTS>(received++, rank, warp_leader, sched_full,
                                                                   sched_empty, sched_unit);
      received_slot.store(received);
      return v;
    };
    // Stream-K: the same walk as the producer's (in_sk); `seg` of the current stream-K segment.
    bool in_sk = false;
    SkSegment seg{};
    auto advance = [&](int u) {
      if (L::kStreamK && in_sk) return u - (seg.k.end - seg.k.begin);
      u = next_unit(u);
      enter_tail(u, in_sk);
      return u;
    };
    // Deferred epilogue (ep.deferred, TMA-store modes; SwiGLU kernels: epilogue_swiglu.cuh): the previous
    // unit's strip as packed 16-bit pairs, its rounds [held_round, EPI_ROUNDS) not yet stored.
    uint32_t held[L::HELD_WORDS];
    int held_round = L::EPI_ROUNDS, held_row0 = 0, held_n0 = 0;
    // (Deferred rounds only with one strip per warpgroup: its staging is strip cw's.)
    const uint32_t held_staging_s = smem_u32(staging + cw * L::STRIP_STAGING_BYTES);
    // One stage's wgmmas as one commit group (its full barrier passed; the fence follows the
    // wait's spin loop: a fence before it made ptxas serialize). Descriptors of stage s: stage
    // 0's plus the stage offset (st_operand::kDescKStep). `first`: a unit's first k tile, whose
    // first wgmma overwrites the accumulators (scale-d 0) -- the early k tiles' (a constant false
    // in the mainloop, which zeroes them instead).
    auto issue_stage = [&](uint32_t s, bool first) {
      const uint32_t stage_step = s * (L::STAGE_BYTES >> 4);
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < L::KT; ++j)
#pragma unroll
        for (int kk = 0; kk < L::BK / 16; ++kk) {
          const uint32_t step = stage_step + uint32_t(j * (L::SUB_BYTES >> 4));
#pragma unroll
          for (int st = 0; st < L::STRIPS; ++st)
            mma::mma(accs[st], pack_desc(a_lo[st] + step + kk * uint32_t(L::a_tile::kDescKStep), a_hi),
                     pack_desc(b_lo + step + kk * uint32_t(L::b_tile::kDescKStep), b_hi), !first || j > 0 || kk > 0);
        }
      wgmma_commit();
    };
    // The next unit's first EARLY_KTILES k tiles (stages it, it + 1, ...) on the accumulators,
    // whose values are packed already (forget_regs: no longer live), one commit group per k tile.
    auto early_ktiles = [&]() {
      if constexpr (L::EARLY_KTILES > 0) {
#pragma unroll
        for (int st = 0; st < L::STRIPS; ++st) forget_regs(accs[st]);
#pragma unroll
        for (int j = 0; j < L::EARLY_KTILES; ++j) {
          const uint32_t s = (it + j) % L::STAGES;
          if (!(xp & kXpBare)) mbar_wait(&full[s], ((it + j) / L::STAGES) & 1);
          issue_stage(s, j == 0);
        }
      }
    };
    auto drain = [&]() {  // every wgmma group of this warpgroup done, its accumulators readable
      wgmma_wait<0>();
#pragma unroll
      for (int st = 0; st < L::STRIPS; ++st) fence_regs(accs[st]);
    };
    uint32_t partial_round = 0;  // split-K partial rounds stored so far (store_unit_partial_tma)
    // Early k tiles (gemm_layout::EARLY_KTILES): the next unit's first k tiles, issued by the
    // previous unit's epilogue (its accumulators then hold them: no zeroing, the loop starts later).
    int primed = 0;
    if constexpr (L::EARLY_KTILES > 0) {  // (else zeroed at each unit's start)
#pragma unroll
      for (int st = 0; st < L::STRIPS; ++st)
#pragma unroll
        for (int i = 0; i < L::BN / 2; ++i) accs[st][i] = 0.f;
    }
    // The unit loop and epilogue, inlined once per body (plain_body.cuh; `ep`, `store_mode`: the body's).
    auto consume = [&](const Epilogue<typename L::out_t>& ep, const int store_mode) __attribute__((always_inline)) {
      auto store_held = [&](int h) {  // stores held round h (< EPI_ROUNDS) of the previous unit
        if constexpr (L::kDeferred)
          store_held_round<L>(h, store_mode == kStoreTmaTransposed, held, &tm_out, held_staging_s, held_row0, held_n0, cw);
        if constexpr (L::SWIGLU_HELD > 0)
          store_swiglu_held<L>(h, held, &tm_out, &tm_out_tail, held_staging_s, held_row0, held_n0, cw);
        store_swiglu_grad_held<L>(h, held, &tm_out, &tm_out_tail, held_staging_s, held_row0, held_n0, cw);
      };
      int u = first_unit;
      enter_tail(u, in_sk);
      bool more = in_sk ? u > sk_lo : u < grid_const(2);
      WorkUnit w_next{};
      KRange kr_next{};
      if (more) decode(u, in_sk, w_next, kr_next, seg);
      unit_slot.store(u);
      while (more) {
        // This unit; the next one is fetched and decoded under this one's last wgmma group.
        WorkUnit w = w_next;
        const KRange kr = kr_next;
        const bool unit_in_sk = in_sk;
        const SkSegment unit_seg = seg;
        if (tc_units && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
        if constexpr (L::EARLY_KTILES == 0) {
#pragma unroll
          for (int st = 0; st < L::STRIPS; ++st)
#pragma unroll
            for (int i = 0; i < L::BN / 2; ++i) accs[st][i] = 0.f;
        }
        // (Early k tiles: zeroed by the previous epilogue -- here spilled 334 B -- or holding them.)
        for (int kt = kr.begin + primed; kt < kr.end; kt += L::KT, ++it) {
          const int s = it % L::STAGES;
#if TK_EARLY_RELEASE
          // Early release: when this stage's operands have not landed yet, the previous stage's
          // wgmmas are drained and its slot released before the wait, so the producer refills it now
          // rather than after this stage arrives and is issued (a latency-bound ring holds one stage
          // fewer hostage). Releases stay in order. Each warp tests the barrier; the warpgroup drains
          // when any of its warps found it not full (a vote: wait_group runs in all four warps or none).
          bool owed = kt > kr.begin;
          if (!(xp & kXpBare) &&
              named_barrier_any(kVoteBarrier + cw, kWarpgroupThreads, !mbar_test(&full[s], (it / L::STAGES) & 1))) {
            if (owed) {
              wgmma_wait<0>();
#pragma unroll
              for (int st = 0; st < L::STRIPS; ++st) fence_regs(accs[st]);
              release((it - 1) % L::STAGES);
              owed = false;
            }
            mbar_wait(&full[s], (it / L::STAGES) & 1);
          }
#else
          if (!(xp & kXpBare)) mbar_wait(&full[s], (it / L::STAGES) & 1);
#endif
          if (tc && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
          issue_stage(s, false);
          // A held round of the previous unit goes out while this k tile's wgmmas run.
          if (held_round < L::EPI_ROUNDS) store_held(held_round++);
          // Keep this stage's wgmmas in flight; the previous stage's are done and can be released.
          wgmma_wait<1>();
#pragma unroll
          for (int st = 0; st < L::STRIPS; ++st) fence_regs(accs[st]);
#if TK_EARLY_RELEASE
          if (owed) release((it - 1) % L::STAGES);
#else
          if (kt > kr.begin) release((it - 1) % L::STAGES);
#endif
        }
        primed = 0;
        if constexpr (L::WAIT_FIRST) drain();  // (kernel_variants.h TK_WAIT_FIRST: not after the decode)
        u = unit_slot.load(u);
        const int unit_u = u;
        if constexpr (TK_PLAIN_BODY_256 && L::EARLY_KTILES > 0 && !L::kStreamK) {  // w decoded again (plain_body.cuh)
          KRange r; SkSegment g; decode(unit_u, false, w, r, g);
        }
        u = advance(u);  // reads unit_seg's k range (still in seg) for a stream-K tail segment
        more = in_sk ? u > sk_lo : u < grid_const(2);
        if (more) decode(u, in_sk, w_next, kr_next, seg);
        unit_slot.store(u);
        if (tc_units && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
        if constexpr (!L::WAIT_FIRST) drain();
        if (tc_units && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
        if (kr.end > kr.begin) release((it - 1) % L::STAGES);  // an empty split range used no stage
        // One epilogue per 64-row strip (cs: its index in the tile; staging buffers and named
        // barrier 1 + cs are the strip's). `continue` ends a strip's epilogue.
#pragma unroll
        for (int st = 0; st < L::STRIPS; ++st) {
          const int cs = cw * L::STRIPS + st;
          const int row0 = (w.tile.m * L::CLUSTER + rank) * L::BM + cs * 64, n0 = w.tile.n * L::BN;
          float(&acc)[L::BN / 2] = accs[st];
          uint8_t* const my_staging = staging + cs * L::STRIP_STAGING_BYTES;
          uint32_t my_staging_s = smem_u32(my_staging);
          // Opaque per unit: with two strips ptxas otherwise computes both strips' staging
          // addresses before the unit loop and keeps them live across the mainloop (216 B spilled).
          if constexpr (L::STRIPS > 1) asm volatile("" : "+r"(my_staging_s));
          if constexpr (L::kRope) rope_rotate<L>(acc, smem, full, empty, it, cs, rank);  // cos / sin: tm_b_tail, tm_out_tail
          if constexpr (L::EARLY_KTILES > 0) {
            if (ep.deferred && (store_mode == kStoreTma || store_mode == kStoreTmaTransposed) && more && !in_sk &&
                kr_next.end - kr_next.begin >= L::EARLY_KTILES) {
              while (held_round < L::EPI_ROUNDS) store_held(held_round++);  // a unit of fewer k tiles than rounds
              // Every round packed (the held ones and the immediate ones), the next unit's first
              // k tiles issued on the freed accumulators, then the immediate rounds stored.
              pack_unit<L>(acc, held, ep, row0, n0, M, N);
              uint32_t now[L::IMMEDIATE_WORDS];
              pack_pairs<L, 0>(acc, now, ep, row0, n0, M, N);
              early_ktiles();
              if (store_mode == kStoreTma)
                store_packed_rounds<L, false, L::FIRST_HELD_ROUND>(now, ep, &tm_out, my_staging_s, row0, n0, cs, round_marks);
              else
                store_packed_rounds<L, true, L::FIRST_HELD_ROUND>(now, ep, &tm_out, my_staging_s, row0, n0, cs, round_marks);
              // Drained before the next unit's loop: with these wgmmas still in flight there, ptxas
              // serialized every wgmma of the kernel (C7518). The loop releases the last stage.
              wgmma_wait<0>();
              fence_regs(acc);
#pragma unroll
              for (int j = 0; j + 1 < L::EARLY_KTILES; ++j) release((it + j) % L::STAGES);
              it += L::EARLY_KTILES, primed = L::EARLY_KTILES;
              held_round = L::FIRST_HELD_ROUND, held_row0 = row0, held_n0 = n0;
              continue;
            }
          }
          if constexpr (L::kSwiGLUGrad) {  // tm_out: d_gate, tm_out_tail: d_up; gu's tiles in the ring
            while (held_round < L::EPI_ROUNDS) store_held(held_round++);  // (GRAD_HELD > 0 only)
            store_swiglu_grad_rounds<L>(acc, held, smem, full, empty, it, &tm_out, &tm_out_tail, my_staging_s, row0, n0,
                                        cs, rank, xp);
            held_round = L::GRAD_FIRST_HELD, held_row0 = row0, held_n0 = n0;
            continue;
          }
          // `continue` in this block ends the strip's epilogue; the accumulators are zeroed after it.
          do {
          if ((xp & kXpNoStore) && acc[0] != -1.25e30f) continue;  // the compare keeps acc live
          if constexpr (L::kStreamK) {
            if (unit_in_sk && unit_seg.slots > 1) {
              // A tile shared by CTAs blockIdx.x - slot .. (stream_k.h): all but its last slot store
              // their partial sums (one per CTA) and release a flag; the last adds them in slot
              // order (fixed: the same bits every run), then stores the tile.
              const int t = thread_in_warpgroup();
              auto partial = [&](int cta) {
                return ep.partial + (int64_t(cta) * L::CONSUMERS + cs) * (L::BN / 2) * kWarpgroupThreads + t;
              };
              if (unit_seg.slot < unit_seg.slots - 1) {
                float* ws = partial(blockIdx.x);
#pragma unroll
                for (int i = 0; i < L::BN / 2; ++i) __stcg(ws + i * kWarpgroupThreads, acc[i]);
                named_barrier(1 + cs, kWarpgroupThreads);
                if (t == 0) flag_release(ep.ready_flags + blockIdx.x * L::CONSUMERS + cs);
                continue;
              }
              for (int j = unit_seg.slot; j >= 1; --j) {
                const int cta = int(blockIdx.x) - j;
                if (t == 0) flag_acquire_wait(ep.ready_flags + cta * L::CONSUMERS + cs);
                named_barrier(1 + cs, kWarpgroupThreads);
                const float* ws = partial(cta);
#pragma unroll
                for (int i = 0; i < L::BN / 2; ++i) acc[i] += __ldcg(ws + i * kWarpgroupThreads);
              }
            }
          }
          if constexpr (L::kSwiGLU) {  // tm_out_tail: h's map (launch_impl.cuh)
            while (held_round < L::EPI_ROUNDS) store_held(held_round++);  // a unit of fewer k tiles than rounds
            store_unit_swiglu<L>(acc, ep, &tm_out, &tm_out_tail, my_staging_s, row0, n0, M, N, cs);
            pack_swiglu_held<L>(acc, held);  // (none when SWIGLU_HELD is 0: FIRST_HELD is EPI_ROUNDS)
            held_round = L::SWIGLU_FIRST_HELD, held_row0 = row0, held_n0 = n0;
            continue;
          }
          if constexpr (L::kTmaStore) {
            if constexpr (L::kDeferred) {
              if (ep.deferred && (store_mode == kStoreTma || store_mode == kStoreTmaTransposed)) {
                while (held_round < L::EPI_ROUNDS) store_held(held_round++);  // a unit of fewer k tiles than rounds
                if (store_mode == kStoreTma)
                  store_rounds_packed<L, false, L::FIRST_HELD_ROUND>(acc, ep, &tm_out, &tm_out_tail, my_staging_s, row0,
                                                                     n0, M, N, cs, round_marks);
                else
                  store_rounds_packed<L, true, L::FIRST_HELD_ROUND>(acc, ep, &tm_out, &tm_out_tail, my_staging_s, row0,
                                                                    n0, M, N, cs, round_marks);
                if (tc_units && (xp & kXpTraceEpi) && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
                pack_unit<L>(acc, held, ep, row0, n0, M, N);
                if (tc_units && (xp & kXpTraceEpi) && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
                held_round = L::FIRST_HELD_ROUND, held_row0 = row0, held_n0 = n0;
                continue;
              }
            }
            if (store_mode == kStoreTma) {
              store_unit_tma<L, false>(acc, ep, &tm_out, &tm_out_tail, my_staging_s, row0, n0, M, N, cs);
              continue;
            }
            if (store_mode == kStoreStaged) {
              // Copy-out in 16-B chunks: rows 16-B aligned and no chunk straddling column N
              // (decided here, not once per kernel: a flag live across the unit loop was spilled).
              const bool vec_copy = ep.o_s1 == 1 && ep.o_s0 % 8 == 0 && N % 8 == 0 &&
                                    reinterpret_cast<uintptr_t>(ep.out) % 16 == 0;
              store_unit_staged<L>(acc, ep, my_staging, row0, n0, M, N, cs, vec_copy);
              continue;
            }
            if (store_mode == kStoreTmaTransposed) {
              store_unit_tma<L, true>(acc, ep, &tm_out, &tm_out_tail, my_staging_s, row0, n0, M, N, cs);
              continue;
            }
          }
          if constexpr (L::kTmaStore && L::BN % 32 == 0) {
            if (store_mode == kStorePartialTma || store_mode == kStorePartialTmaT) {
              if (store_mode == kStorePartialTmaT)
                store_unit_partial_tma<L, true>(acc, &tm_out, my_staging_s, row0, n0, w.split, cs, partial_round);
              else
                store_unit_partial_tma<L, false>(acc, &tm_out, my_staging_s, row0, n0, w.split, cs, partial_round);
              continue;
            }
          }
          store_unit<L>(acc, ep, row0, n0, M, N, w.split, splits > 1);
          if (splits > 1 && ep.fused_split) {
            const int tiles = units / splits;  // units are split-major (kittens::work_unit)
            split_reduce_slice<L>(ep, unit_u % tiles, tiles, w.split, splits, row0, n0, M, N, cs);
          }
          } while (false);
          if constexpr (L::EARLY_KTILES > 0) {
#pragma unroll
            for (int i = 0; i < L::BN / 2; ++i) acc[i] = 0.f;  // the next unit's (an empty split range stores zeros)
          }
        }
        // Early k tiles: the next unit decoded again (same id, same result) so that its tile
        // coordinates need no register through the epilogue (the clustered kernel spilled one).
        if constexpr (L::EARLY_KTILES > 0) {
          if (more) decode(unit_slot.load(u), in_sk, w_next, kr_next, seg);
        }
      }
      if (tc || tc_units) {
        if (tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);  // after the last epilogue
        write_trace(trace_record(trace_buf, 1), tr, tn, trace_g0, trace_c0);
      }
      if (span_g0 != 0 && cw == 0 && thread_in_warpgroup() == 0) write_span(trace_buf, span_g0);
      while (held_round < L::EPI_ROUNDS) store_held(held_round++);  // the last unit's
      if constexpr (L::kTmaStore) {
        if (store_mode != kStoreRegisters && store_mode != kStoreStaged && thread_in_warpgroup() == 0)
          tma_store_wait<0>();  // global writes done before exit
      }
    };
    run_body<L>(consume, ep, store_mode);  // the plain bodies or the general one (plain_body.cuh)
  }
  // No CTA may leave while a peer can still arrive on its barriers or multicast into it.
  if constexpr (L::CLUSTER > 1) cluster_sync();
#endif
}

}  // namespace tk::hopper
