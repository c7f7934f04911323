// Hopper GEMM v1: TMA -> 128-B swizzled shared ring (mbarrier full/empty) -> wgmma -> registers.
// One producer warpgroup (a single lane issues TMA) and BM / 64 consumer warpgroups, each owning
// a 64 x BN strip of the BM x BN output tile; fp32 accumulate; the epilogue (epilogue.cuh) applies
// the addmm alpha/beta/C terms and stores through swizzled staging boxes and TMA (its last rounds
// deferred under the next unit's mainloop); split-K partials go out by TMA through the same staging
// (store_unit_partial_tma), fp32 outputs from registers.
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
#include "gemm_experiments.cuh"

// TK_BM64_SPLIT=1 (build define, A/B; not GPU-tested yet): the 64-row kernels compile the split-K
// decode too, so a forced TK_HOPPER_TILE with bm 64 and splits > 1 runs (e.g. 64x4096x4096 as 128
// swapped 64x64 units of half the K instead of 64 whole ones); no default plan asks for it.
#ifndef TK_BM64_SPLIT
#define TK_BM64_SPLIT 0
#endif

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// One kernel configuration. The kernel computes out = X (rows x K) . Y (K x cols); the host
// maps A.B or (swap-AB) B^T.A^T onto it (plan.h). XMn/YMn: operand stored MN-contiguous.
// CLUSTER_ = 2: two CTAs of a cluster take vertically adjacent tiles of one column and share the
// Y (B) tile: each loads half of it and multicasts it to both (half the L2->SM traffic for Y).
// STREAM_K_: the plan's last sk_tiles tiles run by k iteration (kittens/common/stream_k.h: the
// tail of the last wave, or every tile in fill mode).
// BM_ = 64: one consumer warpgroup, smaller stages, so a deeper ring (skinny plans, plan.h).
// WG_ROWS_ = 128 (with BM_ = 128): one consumer warpgroup owns the whole tile as two 64-row strips
// (8 HGMMA per k tile instead of 4 in each of two warpgroups), so one barrier/issue sequence per
// k tile serves 512 tensor cycles (GemmPlan::wg_rows; 128 x 128 tiles, one unit per CTA).
// RING_STAGING_ (A/B, TK_HOPPER_RING_STAGING=1; one unit per CTA only, launch_impl.cuh checks): the
// epilogue's staging boxes lie in the stage ring, idle once the CTA's only unit is consumed, so
// the ring gets one stage more (128 x 128: 7 instead of 6).
template <typename T, typename OutT, bool XMn, bool YMn, int BN_, int CLUSTER_ = 1, bool STREAM_K_ = false,
          int BM_ = 128, int WG_ROWS_ = 64, bool RING_STAGING_ = false>
struct gemm_layout {
  using in_t = T;
  using out_t = OutT;
  static constexpr bool kAMn = XMn, kBMn = YMn, kStreamK = STREAM_K_;
  static_assert(!STREAM_K_ || CLUSTER_ == 1, "stream-K tail only for unclustered kernels");
  static_assert(BM_ == 128 || (BM_ == 64 && !STREAM_K_), "64-row tiles: no stream-K tail");
  static_assert(WG_ROWS_ == 64 || (WG_ROWS_ == 128 && BM_ == 128 && !STREAM_K_), "two strips: 128-row tiles only");
  static_assert(!RING_STAGING_ || (WG_ROWS_ == 128 && CLUSTER_ == 1), "ring staging: one-warpgroup tiles only");
  static constexpr bool kRingStaging = RING_STAGING_;
  // STRIPS: 64-row accumulator strips per consumer warpgroup; the epilogue runs once per strip.
  static constexpr int BM = BM_, BN = BN_, CONSUMERS = BM_ / WG_ROWS_, STRIPS = WG_ROWS_ / 64, CLUSTER = CLUSTER_;
  using a_tile = st_operand<BM, XMn>;
  using b_tile = st_operand<BN, YMn, CLUSTER>;
  static constexpr int BK = a_tile::kK;
  // k tiles (BK wide) per pipeline stage, each tile's A then B box (SUB_BYTES) one after the other.
  // 2 for 64 x 64 tiles: one full/empty round trip per two k tiles, whose barrier costs a 64 x 64
  // k tile (128 tensor cycles) cannot hide (benchmarks/micro/mainloop_rate.cu, H100: 337 -> 200
  // cycles per k tile in a 2-CTA cluster; H200 128x4096x4096 22.7 -> 19.2 us, benchmarks/NOTES.md;
  // 64 x 128 tiles measured even or slower, so 1 there). A unit's k range must then be whole stages
  // or end at K (the tile past K arrives zero-filled): 64-row plans never split K (launch_impl.cuh
  // checks) unless built with TK_BM64_SPLIT=1 (below). TK_BM64_KT (build define, A/B): 1 or 2 for
  // every 64-row kernel.
#ifndef TK_BM64_KT
#define TK_BM64_KT 0
#endif
  // TK_BM128_KT (build define, A/B): k tiles per stage of the 128 x 128 kernels (split-K ranges
  // are then whole stages: kittens::split_k_range's align).
#ifndef TK_BM128_KT
#define TK_BM128_KT 1
#endif
  static constexpr int KT = BM_ == 64    ? (TK_BM64_KT > 0 ? TK_BM64_KT : BN_ == 64 ? 2 : 1)
                            : BN_ == 128 ? TK_BM128_KT
                                         : 1;
  static_assert(KT == 1 || !STREAM_K_, "several k tiles per stage: not in the stream-K kernels");
  static constexpr int SUB_BYTES = a_tile::kBytes + b_tile::kBytes;
  static constexpr int STAGE_BYTES = KT * SUB_BYTES;
  // TMA-store epilogue (16-bit outputs): each consumer warpgroup stages 64 rows x 64 columns
  // (one 128-B swizzled box) per round, BN / 64 rounds per unit, alternating between two
  // buffers so that filling one overlaps the TMA read of the other.
  static constexpr bool kTmaStore = sizeof(OutT) == 2;
  // A width that is not a multiple of 64 (144, 160, 224) ends in a narrower round of
  // LAST_COLS columns: transposed (swap-AB) through its own TMA box (tm_out_tail: the round's
  // columns are the box's outer dimension), untransposed copied out by rows (epilogue.cuh
  // store_round_tma). Built with a K-major Y only (TMA boxes of any multiple of 8 rows).
  static constexpr int STORE_COLS = 64, STORE_ROUNDS = (BN + STORE_COLS - 1) / STORE_COLS;
  static constexpr int LAST_COLS = BN - STORE_COLS * (STORE_ROUNDS - 1);
  static constexpr bool kPartialRound = LAST_COLS != STORE_COLS;
  static_assert(!kPartialRound || (!YMn && CLUSTER_ == 1 && !STREAM_K_ && BM_ == 128 && WG_ROWS_ == 64),
                "narrow last rounds: unclustered two-warpgroup tiles with a K-major Y only");
  static constexpr int STAGING_BUFFER_BYTES = 64 * STORE_COLS * 2;
  // Staging buffers per consumer warpgroup; a round waits for the TMA read of the store issued
  // STAGING_BUFFERS rounds before it. TK_STAGING_BUFFERS_256 (A/B build define): 4 for the
  // 128 x 256 tile (no wait within a unit, one stage fewer).
#ifndef TK_STAGING_BUFFERS_256
#define TK_STAGING_BUFFERS_256 2
#endif
  // 192-wide tiles (3 rounds): one buffer per round, so the buffer of round H (H % buffers) is the
  // same in every unit -- with 2 the next unit's round 0 would reuse the buffer of round 2, whose
  // store may still be reading it (tma_round waits for all but the newest buffers - 1 stores;
  // store_unit_tma asserts the multiple).
  static constexpr int STAGING_BUFFERS = (BM_ == 128 && BN_ == 256) ? TK_STAGING_BUFFERS_256 : STORE_ROUNDS == 3 ? 3 : 2;
  static constexpr int STRIP_STAGING_BYTES = kTmaStore ? STAGING_BUFFERS * STAGING_BUFFER_BYTES : 0;  // per 64-row strip
  static constexpr int STAGING_BYTES = RING_STAGING_ ? 0 : CONSUMERS * STRIPS * STRIP_STAGING_BYTES;  // beside the ring
  // Deferred epilogue (epilogue.cuh pack_unit): the last HELD_ROUNDS rounds of a unit wait in
  // registers (16 words per round and thread) for the next unit's mainloop. ptxas fits 2 beside
  // the 128 accumulators of a 64 x 256 strip; 3 spilled (TK_HELD_ROUNDS: A/B build define).
  // Not in the (opt-in) stream-K kernels, whose tail state leaves no registers for them.
#ifndef TK_HELD_ROUNDS
#define TK_HELD_ROUNDS 2
#endif
  // Not with two strips either (their plans run one unit per CTA: nothing to defer under).
  // Nor with a narrow last round (pack_unit / sts_held store whole 64-column rounds).
  static constexpr int HELD_ROUNDS = STREAM_K_ || STRIPS > 1 || kPartialRound ? 0
                                     : STORE_ROUNDS < TK_HELD_ROUNDS ? STORE_ROUNDS : TK_HELD_ROUNDS;
  static constexpr int FIRST_HELD_ROUND = STORE_ROUNDS - HELD_ROUNDS;
  static constexpr bool kDeferred = kTmaStore && HELD_ROUNDS > 0;
  static constexpr int HELD_WORDS = kDeferred ? HELD_ROUNDS * STORE_COLS / 4 : 1;
  // As many stages as fit beside the staging buffer in the sm_90 per-block limit (227 KB), at
  // most 16: BM 128: BN 256 -> 4 (48 KB each), BN 192 -> 4 (40 KB), BN 160 -> 4 (36 KB), BN 128 -> 6, BN 64 -> 8; BM 64:
  // BN 128 -> 8, BN 64 -> 6 (two k tiles per stage, 32 KB).
  static constexpr int kFit = (232448 - 1024 - 512 - STAGING_BYTES) / STAGE_BYTES;
  static constexpr int STAGES = kFit < 16 ? kFit : 16;
  static constexpr int THREADS = (CONSUMERS + 1) * kWarpgroupThreads;
  // Dynamic schedule: ring of unit ids the producer hands to the consumers (full/empty barriers).
  static constexpr int SCHED_SLOTS = 4;
  static constexpr int BARRIER_BYTES = 2 * STAGES * 8 + SCHED_SLOTS * (2 * 8 + 4);
  static_assert(BARRIER_BYTES <= 512, "barriers outgrow their reserve in kFit");
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGING_BYTES + BARRIER_BYTES + 1024;  // +1024: alignment
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // setmaxnreg budgets
  static_assert(kWarpgroupThreads * (PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) <= 65536, "register file");
  // Tail boxes (K-major operands; Y only when not multicast in slices): a box partly past the
  // tensor arrives far more slowly than a whole one (benchmarks/micro/tma_stream.cu, H200: a
  // 128-token tile with 64 rows past M 47 -> 65 us of operand delivery, 42 us as a 64-row box), so
  // the last tile's rows come through a map with an exact box and the slot's other rows keep stale
  // data, which only reaches outputs past M / N (never stored).
  static constexpr bool kXTail = !XMn, kYTail = !YMn && CLUSTER_ == 1;
  static_assert(STAGES >= 3, "pipeline too shallow");
  static_assert(STAGES * STAGE_BYTES >= CONSUMERS * STRIPS * STRIP_STAGING_BYTES, "staging fits in the ring");
};

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
template <class L>
__global__ void __launch_bounds__(L::THREADS, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                const __grid_constant__ CUtensorMap tm_out, const __grid_constant__ CUtensorMap tm_out_tail,
                const __grid_constant__ CUtensorMap tm_a_tail,
                const __grid_constant__ CUtensorMap tm_b_tail, Epilogue<typename L::out_t> ep, int M, int N, int K,
                int splits, int store_mode, int group_m, int* unit_counter) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#ifdef TK_EXPERIMENTS
  const int xp = ep.experiment;
#else
  constexpr int xp = 0;
#endif
#ifdef TK_EXPERIMENTS
  void* const trace_buf = (xp & kXpTrace) ? ep.trace : nullptr;
#else
  void* const trace_buf = nullptr;
#endif
  const bool trace_cta = trace_record(trace_buf, 0) != nullptr;
  const unsigned long long trace_g0 = trace_cta ? global_ns() : 0;
  const long long trace_c0 = trace_cta ? clock64() : 0;
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
  // Stream-K: whole-tile units [0, dp_units), then this CTA's stream-K iterations [sk_lo, sk_hi)
  // (offset by dp_units), walked from the back: in stream-K mode (in_sk) a unit id is the end of
  // the iterations still to do. A schedule switches to them once its next whole-tile id is past
  // dp_units.
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
      seg = sk_segment_back(u - dp_units, sk_lo - dp_units, k_tiles, sk_iters, sk_parts);
      w = work_unit(dp_units + seg.tile, tiles_m, tiles_n, group);
      kr = seg.k;
    } else {
      // No division for the split (the unsplit plans' common case; 64-row plans never split,
      // launch_impl.cuh: compiling the split path there made ptxas spill the return address of
      // its 64-bit division helper once the deferred epilogue's registers were live; since
      // 2026-11-25f split_k_range divides in 32 bits, so the two-strip kernels keep the split path).
      if ((L::BM == 64 && !TK_BM64_SPLIT) || splits == 1) {
        w = WorkUnit{grouped_tile(u, tiles_m, tiles_n, group), 0};
        kr = KRange{0, k_tiles};
      } else {
        w = work_unit(u, tiles_m, tiles_n, group);
        kr = split_k_range(w.split, splits, k_tiles, L::KT);  // whole stages (the last ends at K)
      }
    }
  };
  int rank = 0, first_unit = blockIdx.x, unit_stride = gridDim.x;
  if constexpr (L::CLUSTER > 1) {
    rank = int(cluster_ctarank());
    first_unit = int(cluster_id_x());
    unit_stride = int(cluster_count_x());
  }

  // Let a dependent launch (the split-K reduction) get scheduled now; it waits for our completion.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) {
    for (int s = 0; s < L::STAGES; ++s) {
      mbar_init(&full[s], 1);                      // the producer's expect_tx arrival
      mbar_init(&empty[s], L::CONSUMERS * 4 * L::CLUSTER);  // one arrival per consumer warp of the cluster
    }
    for (int s = 0; s < L::SCHED_SLOTS; ++s) {
      mbar_init(&sched_full[s], 1);                   // the producer's arrival after writing the id
      // One arrival per consumer warp of the cluster after reading the id, plus the other
      // producers (only rank 0's ring is waited on: rank 0 draws the tickets).
      mbar_init(&sched_empty[s], L::CONSUMERS * 4 * L::CLUSTER + L::CLUSTER - 1);
    }
    mbar_init_fence();
    tma_prefetch_desc(&tm_a);
    tma_prefetch_desc(&tm_b);
    if (L::kXTail && ep.x_tail_rows > 0) tma_prefetch_desc(&tm_a_tail);
    if (L::kYTail && ep.y_tail_rows > 0) tma_prefetch_desc(&tm_b_tail);
  }
  if constexpr (L::CLUSTER > 1) cluster_sync();  // peers' barriers initialised before any remote use
  else __syncthreads();

  if (warpgroup_id() == 0) {
    // ---- producer ----
    setmaxnreg_dec<L::PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      // Launched as a programmatic dependent (GemmArgs::dependent: after the re-pitch copy, or
      // under TK_HOPPER_PDL=1), the operands are complete only once the previous grid is; every
      // other global access of the kernel follows this wait through the full barriers. Without
      // PDL this returns at once.
      asm volatile("griddepcontrol.wait;" ::: "memory");
      const uint64_t evict_first = l2_evict_first_policy();
      const bool hint_x = (ep.l2_evict_first & 1) != 0, hint_y = (ep.l2_evict_first & 2) != 0;
      unsigned tr[kTraceLen + 8];
      int tn = 0;
      uint32_t it = 0;  // k iterations issued by this CTA, across units
      int handed = 0;  // unit ids handed to the consumers (dynamic)
      bool in_sk = false;
      int u = first_unit;
      enter_tail(u, in_sk);
      while (in_sk ? u > sk_lo : u < units) {
        WorkUnit w;
        KRange kr;
        SkSegment seg;
        decode(u, in_sk, w, kr, seg);
        const int m0 = (w.tile.m * L::CLUSTER + rank) * L::BM, n0 = w.tile.n * L::BN;
        // X rows past M: a cluster's CTA beyond the last row tile loads none of them (its rows
        // are never stored); the last row / column tile through the tail maps (gemm_layout).
        const bool x_none = m0 >= M;
        const bool x_tail = L::kXTail && ep.x_tail_rows > 0 && m0 + L::BM > M && !x_none;
        const bool y_tail = L::kYTail && ep.y_tail_rows > 0 && n0 + L::BN > N;
        const CUtensorMap* const map_x = x_tail ? &tm_a_tail : &tm_a;
        const CUtensorMap* const map_y = y_tail ? &tm_b_tail : &tm_b;
        // Bytes of one K-major row of a k tile (128 B) times the rows loaded.
        constexpr uint32_t kXRow = L::a_tile::kBytes / L::BM, kYRow = L::b_tile::kBytes / L::BN;
        const uint32_t x_bytes = x_none ? 0u : x_tail ? uint32_t(ep.x_tail_rows) * kXRow : uint32_t(L::a_tile::kBytes);
        const uint32_t y_bytes = y_tail ? uint32_t(ep.y_tail_rows) * kYRow : uint32_t(L::b_tile::kBytes);
        const uint32_t stage_tx = uint32_t(L::KT) * (x_bytes + y_bytes);
        for (int kt = kr.begin; kt < kr.end; kt += L::KT, ++it) {
          const int s = it % L::STAGES;
          if (xp & kXpBare) continue;
          mbar_wait(&empty[s], ((it / L::STAGES) & 1) ^ 1);  // first round passes at once
          if (trace_cta && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
          if (xp & kXpNoLoad) {
            mbar_arrive(&full[s]);
            continue;
          }
          mbar_arrive_expect_tx(&full[s], stage_tx);  // boxes' bytes, zero-filled ones past K included
#pragma unroll
          for (int j = 0; j < L::KT; ++j) {  // tiles past K (KT > 1 only) arrive zero-filled
            uint8_t* sub = smem + s * L::STAGE_BYTES + j * L::SUB_BYTES;
            const int k0 = (kt + j) * L::BK;
            if (!x_none) L::a_tile::load(sub, map_x, &full[s], m0, k0, hint_x, evict_first);
            if constexpr (L::CLUSTER > 1)
              L::b_tile::load_slice(sub + L::a_tile::kBytes, &tm_b, &full[s], n0, k0, rank,
                                    uint16_t((1u << L::CLUSTER) - 1), hint_y, evict_first);
            else
              L::b_tile::load(sub + L::a_tile::kBytes, map_y, &full[s], n0, k0, hint_y, evict_first);
          }
        }
        if (L::kStreamK && in_sk) {
          u -= kr.end - kr.begin;
          continue;
        }
        if (dynamic) {
          const int slot = handed % L::SCHED_SLOTS, parity = (handed / L::SCHED_SLOTS) & 1;
          if (rank == 0) {
            // Units are numbered per cluster: the first unit_stride went out statically.
            u = unit_stride + atomicAdd(unit_counter, 1);
            mbar_wait(&sched_empty[slot], parity ^ 1);
            sched_unit[slot] = u;  // made visible by the arrive's release
#pragma unroll
            for (int peer = 1; peer < L::CLUSTER; ++peer) {
              st_shared_cluster(&sched_unit[slot], peer, u);
              mbar_arrive_cluster_release(&sched_full[slot], peer);
            }
            mbar_arrive(&sched_full[slot]);
          } else {
            mbar_wait<true>(&sched_full[slot], parity);
            u = *reinterpret_cast<volatile int*>(&sched_unit[slot]);
            mbar_arrive_cluster(&sched_empty[slot], 0);
          }
          ++handed;
        } else {
          u += unit_stride;
        }
        enter_tail(u, in_sk);
      }
      if (trace_cta) write_trace(trace_record(trace_buf, 0), tr, tn, trace_g0, trace_c0);
    }
  } else {
    // ---- consumers ----
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
    // Staged copy-out in 16-B chunks: rows 16-B aligned and no chunk straddling column N.
    const bool vec_copy = ep.o_s1 == 1 && ep.o_s0 % 8 == 0 && N % 8 == 0 &&
                          reinterpret_cast<uintptr_t>(ep.out) % 16 == 0;
    // A stage is free once every consumer warp of every CTA that received it has read it.
    auto release = [&](int stage) {
      if (!warp_leader || (xp & kXpBare)) return;
      mbar_arrive(&empty[stage]);
      if constexpr (L::CLUSTER > 1) {
#pragma unroll
        for (int peer = 1; peer < L::CLUSTER; ++peer) mbar_arrive_cluster(&empty[stage], (rank + peer) % L::CLUSTER);
      }
    };
    const bool tc_units = trace_cta && cw == 0 && thread_in_warpgroup() == 0 && (xp & kXpTraceUnits);
    const bool tc = trace_cta && cw == 0 && thread_in_warpgroup() == 0 && !(xp & kXpTraceUnits);
    unsigned tr[kTraceLen + 8];
    int tn = 0;
    const EpiMarks marks{tr, &tn, trace_c0};  // kXpTraceRound
    const EpiMarks* const round_marks = tc_units && (xp & kXpTraceRound) ? &marks : nullptr;
    int received = 0;  // unit ids taken from the sched ring (dynamic)
    // The next unit: static stride, or the id rank 0's producer handed over (every thread reads
    // it, then one arrival per warp on rank 0's ring frees the slot).
    auto next_unit = [&](int u) {
      if (!dynamic) return u + unit_stride;
      const int slot = received % L::SCHED_SLOTS, parity = (received / L::SCHED_SLOTS) & 1;
      if (L::CLUSTER > 1 && rank != 0) mbar_wait<true>(&sched_full[slot], parity);
      else mbar_wait(&sched_full[slot], parity);
      const int v = *reinterpret_cast<volatile int*>(&sched_unit[slot]);
      __syncwarp();
      if (warp_leader) {
        if (L::CLUSTER > 1 && rank != 0) mbar_arrive_cluster(&sched_empty[slot], 0);
        else mbar_arrive(&sched_empty[slot]);
      }
      ++received;
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
    // Deferred epilogue (ep.deferred, TMA-store modes): the previous unit's strip as packed
    // 16-bit pairs, its rounds [held_round, STORE_ROUNDS) not yet stored (epilogue.cuh pack_unit).
    uint32_t held[L::HELD_WORDS];
    int held_round = L::STORE_ROUNDS, held_row0 = 0, held_n0 = 0;
    // (Deferred rounds only with one strip per warpgroup: its staging is strip cw's.)
    const uint32_t held_staging_s = smem_u32(staging + cw * L::STRIP_STAGING_BYTES);
    // Stores held round h (< STORE_ROUNDS) of the previous unit.
    auto store_held = [&](int h) {
      if constexpr (L::kDeferred)
        store_held_round<L>(h, store_mode == kStoreTmaTransposed, held, &tm_out, held_staging_s, held_row0, held_n0, cw);
    };
    uint32_t partial_round = 0;  // split-K partial rounds stored so far (store_unit_partial_tma)
    int u = first_unit;
    enter_tail(u, in_sk);
    bool more = in_sk ? u > sk_lo : u < units;
    WorkUnit w_next{};
    KRange kr_next{};
    if (more) decode(u, in_sk, w_next, kr_next, seg);
    while (more) {
      // This unit; the next one is fetched and decoded under this one's last wgmma group.
      const WorkUnit w = w_next;
      const KRange kr = kr_next;
      const bool unit_in_sk = in_sk;
      const SkSegment unit_seg = seg;
      const int unit_u = u;
      if (tc_units && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
#pragma unroll
      for (int st = 0; st < L::STRIPS; ++st)
#pragma unroll
        for (int i = 0; i < L::BN / 2; ++i) accs[st][i] = 0.f;
      for (int kt = kr.begin; kt < kr.end; kt += L::KT, ++it) {
        const int s = it % L::STAGES;
        if (!(xp & kXpBare)) mbar_wait(&full[s], (it / L::STAGES) & 1);
        if (tc && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
        // Descriptors of stage s: stage 0's plus the stage offset (st_operand::kDescKStep).
        const uint32_t stage_step = uint32_t(s) * (L::STAGE_BYTES >> 4);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < L::KT; ++j)
#pragma unroll
          for (int kk = 0; kk < L::BK / 16; ++kk) {
            const uint32_t step = stage_step + uint32_t(j * (L::SUB_BYTES >> 4));
#pragma unroll
            for (int st = 0; st < L::STRIPS; ++st)
              mma::mma(accs[st], pack_desc(a_lo[st] + step + kk * uint32_t(L::a_tile::kDescKStep), a_hi),
                       pack_desc(b_lo + step + kk * uint32_t(L::b_tile::kDescKStep), b_hi), 1);
          }
        wgmma_commit();
        // A held round of the previous unit goes out while this k tile's wgmmas run.
        if (held_round < L::STORE_ROUNDS) store_held(held_round++);
        // Keep this stage's wgmmas in flight; the previous stage's are done and can be released.
        wgmma_wait<1>();
#pragma unroll
        for (int st = 0; st < L::STRIPS; ++st) fence_regs(accs[st]);
        if (kt > kr.begin) release((it - 1) % L::STAGES);
      }
      u = advance(u);  // reads unit_seg's k range (still in seg) for a stream-K tail segment
      more = in_sk ? u > sk_lo : u < units;
      if (more) decode(u, in_sk, w_next, kr_next, seg);
      if (tc_units && tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);
      wgmma_wait<0>();
#pragma unroll
      for (int st = 0; st < L::STRIPS; ++st) fence_regs(accs[st]);
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
        if constexpr (L::kTmaStore) {
          if constexpr (L::kDeferred) {
            if (ep.deferred && (store_mode == kStoreTma || store_mode == kStoreTmaTransposed)) {
              while (held_round < L::STORE_ROUNDS) store_held(held_round++);  // a unit of fewer k tiles than rounds
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
      }
    }
    if (tc || tc_units) {
      if (tn < kTraceLen) tr[tn++] = unsigned(clock64() - trace_c0);  // after the last epilogue
      write_trace(trace_record(trace_buf, 1), tr, tn, trace_g0, trace_c0);
    }
    while (held_round < L::STORE_ROUNDS) store_held(held_round++);  // the last unit's
    if constexpr (L::kTmaStore) {
      if (store_mode != kStoreRegisters && store_mode != kStoreStaged && thread_in_warpgroup() == 0)
        tma_store_wait<0>();  // global writes done before exit
    }
  }
  // No CTA may leave while a peer can still arrive on its barriers or multicast into it.
  if constexpr (L::CLUSTER > 1) cluster_sync();
#endif
}

}  // namespace tk::hopper
