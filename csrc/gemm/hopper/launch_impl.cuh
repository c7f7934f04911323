// Host launcher of one kernel family: maps A.B (or, swap-AB, B^T.A^T) onto the kernel's X.Y,
// encodes the TMA descriptors, launches the persistent GEMM and, for split-K, the reduction.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include "launch.h"
#include "gemm_kernel.cuh"
#include "splitk_reduce.cuh"
#include "../../kittens/hopper/gl.cuh"

namespace tk::hopper {

namespace detail {

// An on/off A/B knob: unset -> `fallback`, else its integer value != 0 (callers read it once).
inline bool env_flag(const char* name, bool fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoi(e) != 0;
}

template <typename T> constexpr CUtensorMapDataType tma_dtype();
template <> constexpr CUtensorMapDataType tma_dtype<__nv_bfloat16>() { return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; }
template <> constexpr CUtensorMapDataType tma_dtype<__half>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }
template <> constexpr CUtensorMapDataType tma_dtype<float>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT32; }

#ifdef TK_EXPERIMENTS
// kXpTrace: waits for the kernel and prints its trace records in the lines
// scripts/pipeline_trace.py reads ("tk-trace ROLE block B ..."); records never written stay zero.
inline void print_trace_records(const TraceRecord* dev_records, cudaStream_t stream) {
  TraceRecord r[kTraceRecords];
  if (cudaMemcpyAsync(r, dev_records, sizeof(r), cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return;
  for (int i = 0; i < kTraceRecords; ++i) {
    if (r[i].cycles == 0) continue;
    const char* role = i < 4 ? "producer" : "consumer";
    std::printf("tk-trace %s block %d sm-start-ns %llu n %d ns %llu cycles %lld\n", role, r[i].block, r[i].start_ns,
                r[i].n, r[i].ns, r[i].cycles);
    for (int k = 0; k < r[i].n; k += 8) {
      std::printf("tk-trace %s block %d k %d:", role, r[i].block, k);
      for (int j = k; j < k + 8 && j < r[i].n; ++j) std::printf(" %u", r[i].t[j]);
      std::printf("\n");
    }
  }
  // kXpSpans: one line per CTA that wrote its span (start, end relative to the earliest start).
  static CtaSpan spans[kSpanMax];
  if (cudaMemcpy(spans, reinterpret_cast<const CtaSpan*>(dev_records + kTraceRecords), sizeof(spans),
                 cudaMemcpyDeviceToHost) == cudaSuccess) {
    unsigned long long g0 = ~0ull;
    for (const CtaSpan& s : spans)
      if (s.end_ns != 0 && s.start_ns < g0) g0 = s.start_ns;
    for (const CtaSpan& s : spans)
      if (s.end_ns != 0)
        std::printf("tk-span block %d sm %d start-ns %llu end-ns %llu\n", s.block, s.smid, s.start_ns - g0, s.end_ns - g0);
  }
  std::fflush(stdout);
}
#endif

// X (rows x K) and Y (K x cols) of the kernel, in the caller's memory.
struct KernelOperands {
  const void* x;
  int64_t ldx;
  const void* y;
  int64_t ldy;
  int rows, cols;
};

// L2 promotion of an operand map: 256 B, or 128 B where the line pitch is not a multiple of 32 B
// (16-B aligned only, e.g. K = 1000: a box's 128-B rows then straddle L2 lines). H200 A/B
// (2026-11-26k, benchmarks/NOTES.md), us, 256 -> 128 B: 4096x4096x4104 NT 280 -> 237,
// 2048x2048x2040 NT 40.4 -> 35.1, 1024x1024x1000 NT 14.5 -> 13.5. TK_HOPPER_L2_PROMO=0|64|128|256
// (A/B only) sets every map's.
inline CUtensorMapL2promotion operand_promo(uint64_t pitch_bytes) {
  static const int forced = [] {
    const char* e = std::getenv("TK_HOPPER_L2_PROMO");
    return e != nullptr ? std::atoi(e) : -1;
  }();
  const int v = forced >= 0 ? forced : splits_sectors(int64_t(pitch_bytes)) ? 128 : 256;
  return v == 0 ? CU_TENSOR_MAP_L2_PROMOTION_NONE
         : v == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
         : v == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                    : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
}

template <class L>
const char* launch_layout(const GemmArgs& g, const KernelOperands& op, cudaStream_t stream) {
  using T = typename L::in_t;
  using OutT = typename L::out_t;
  const uint64_t K = uint64_t(g.K);
  // X: K-major map dims {K, rows}; MN-major dims {rows, K}. Y likewise with cols.
  // (The K-parts kernel's X map covers X's first part: its columns may be a matrix of their own.)
  // (The M-parts kernel's X map covers X's first part: its rows may be a matrix of their own.)
  const uint64_t kx = L::kKParts ? uint64_t(g.k_part_end[0]) : K;
  const uint64_t rx = L::kMParts ? uint64_t(g.m_part_end[0]) : uint64_t(op.rows);
  const gl2d gx = L::kAMn ? gl2d{op.x, rx, kx, uint64_t(op.ldx), 2} : gl2d{op.x, kx, rx, uint64_t(op.ldx), 2};
  const gl2d gy = L::kBMn ? gl2d{op.y, uint64_t(op.cols), K, uint64_t(op.ldy), 2} : gl2d{op.y, K, uint64_t(op.cols), uint64_t(op.ldy), 2};
  if (!tma_describable(gx) || !tma_describable(gy)) return "an operand cannot be described by a TMA descriptor";
  CUtensorMap tx, ty;
  const CUtensorMapL2promotion promo_x = operand_promo(uint64_t(op.ldx) * sizeof(T)),
                                promo_y = operand_promo(uint64_t(op.ldy) * sizeof(T));
  if (make_tma_desc(&tx, gx, tma_dtype<T>(), L::a_tile::kBoxInner, L::a_tile::kBoxOuter, promo_x) != CUDA_SUCCESS ||
      (!L::kSwiGLU &&
       make_tma_desc(&ty, gy, tma_dtype<T>(), L::b_tile::kBoxInner, L::b_tile::kBoxOuter, promo_y) != CUDA_SUCCESS))
    return "cuTensorMapEncodeTiled failed";
  // Tail maps (gemm_layout::kXTail / kYTail): the last row / column tile's rows inside the tensor
  // as one exact box. TK_HOPPER_TAIL_BOX=0 (A/B): full boxes, zero-filled past the tensor.
  static const bool tail_boxes = env_flag("TK_HOPPER_TAIL_BOX", true);
  CUtensorMap tx_tail = tx, ty_tail = ty, tx3 = tx;  // (tx3: the K- / M-parts kernels' X third part, else unread)
  const int x_tail_rows = tail_boxes && L::kXTail ? op.rows % L::BM : 0;
  // Sliced in a cluster (gemm_layout kYSliceTail): the rows of the slice that ends past cols, or a
  // whole slice when none does (> 0 marks tail boxes on; producer_loads.cuh unit_loads).
  const int y_tail_rows = !(tail_boxes && L::kYTail) ? 0
                          : L::kYSliceTail           ? (op.cols % L::Y_SLICE_ROWS == 0 ? L::Y_SLICE_ROWS : op.cols % L::Y_SLICE_ROWS)
                                                     : op.cols % L::BN;
  if ((x_tail_rows > 0 &&
       make_tma_desc(&tx_tail, gx, tma_dtype<T>(), L::a_tile::kBoxInner, x_tail_rows, promo_x) != CUDA_SUCCESS) ||
      (y_tail_rows > 0 &&
       make_tma_desc(&ty_tail, gy, tma_dtype<T>(), L::b_tile::kBoxInner, y_tail_rows, promo_y) != CUDA_SUCCESS))
    return "cuTensorMapEncodeTiled failed (tail box)";
  if constexpr (L::kSwiGLU) {
    // Gate (ty) and up (ty_tail) weights, K x cols / 2 each, 128-row boxes (producer_loads.cuh).
    const gl2d gg{op.y, K, uint64_t(op.cols / 2), uint64_t(op.ldy), 2}, gu{g.swiglu_up, K, uint64_t(op.cols / 2),
                                                                            uint64_t(op.ldy), 2};
    if (g.swiglu_up == nullptr || reinterpret_cast<uintptr_t>(g.swiglu_up) % 16 != 0 || !tma_describable(gg) ||
        !tma_describable(gu) ||
        make_tma_desc(&ty, gg, tma_dtype<T>(), L::b_tile::kBoxInner, L::BN / 2, promo_y) != CUDA_SUCCESS ||
        make_tma_desc(&ty_tail, gu, tma_dtype<T>(), L::b_tile::kBoxInner, L::BN / 2, promo_y) != CUDA_SUCCESS)
      return "the SwiGLU GEMM's gate / up weights cannot be described by TMA descriptors";
  }

  const GemmPlan& p = g.plan;
  const int64_t units = int64_t(ceil_div(op.rows, L::BM * L::CLUSTER)) * ceil_div(op.cols, L::BN) * p.splits;
  if (units != p.units || units > 0x7fffffff) return "work units do not match the plan (or exceed 2^31-1)";
  if (p.splits > 1 && g.workspace == nullptr) return "split-K needs a workspace";
  if (p.dynamic && g.unit_counter == nullptr) return "the dynamic schedule needs a zeroed unit counter";
  if (p.sk_tiles > 0 && (!L::kStreamK || g.workspace == nullptr || g.unit_counter == nullptr))
    return "the stream-K tail needs its kernel, a workspace and zeroed flags";
  if (p.fused_split && (p.units > p.grid || g.unit_counter == nullptr || L::CONSUMERS > 2))
    return "fused split-K needs one unit per CTA and 2 zeroed flags per unit";
  if (p.bm != L::BM) return "the plan's row tile does not match the kernel";
  if (p.wg_rows != L::BM / L::CONSUMERS) return "the plan's rows per consumer warpgroup do not match the kernel";
  if (L::kRingStaging && (int64_t(p.units) * L::CLUSTER > p.grid || p.dynamic)) return "ring staging needs one unit per CTA";
  if (p.fused_split && L::STRIPS > 1) return "fused split-K needs one strip per consumer warpgroup";
  if (L::BM == 64 && p.splits > 1 && !TK_BM64_SPLIT) return "64-row tiles run without split-K";
  const bool split_out = p.splits > 1;  // fp32 partials stored from registers
  int* const unit_counter = p.dynamic ? g.unit_counter : nullptr;
  // Kernel (row, col) -> original (m, n) = (row, col), or (col, row) with swap-AB.
  const int64_t N = g.N;
  if (g.ldo != 0 && (!L::kSwiGLUGrad || g.ldo < N || g.ldo % 8 != 0))
    return "an output pitch (ldo) is for the SwiGLU backward GEMM only, at least N and a multiple of 8";
  const int64_t ldo = g.ldo != 0 ? g.ldo : N;  // (unswapped whenever ldo is set: the SwiGLU backward)
  Epilogue<OutT> ep{static_cast<OutT*>(g.out),
                    p.swap_ab ? 1 : ldo,
                    p.swap_ab ? N : 1,
                    static_cast<const OutT*>(g.c),
                    p.swap_ab ? g.c_s1 : g.c_s0,
                    p.swap_ab ? g.c_s0 : g.c_s1,
                    g.alpha,
                    g.beta,
                    g.workspace,
                    int64_t(g.M) * N};
#ifdef TK_EXPERIMENTS
  if (const char* xp = std::getenv("TK_HOPPER_EXPERIMENT")) ep.experiment = std::atoi(xp);  // read per call
  static TraceRecord* trace_buf = nullptr;  // one device's, experiment build only
  constexpr size_t trace_bytes = sizeof(TraceRecord) * kTraceRecords + sizeof(CtaSpan) * kSpanMax;
  if ((ep.experiment & kXpTrace) && (trace_buf != nullptr || cudaMalloc(&trace_buf, trace_bytes) == cudaSuccess)) {
    cudaMemsetAsync(trace_buf, 0, trace_bytes, stream);
    ep.trace = trace_buf;
  }
#endif
  ep.x_tail_rows = x_tail_rows;
  ep.y_tail_rows = y_tail_rows;
  if constexpr (L::kStreamK) {
    ep.sk_tiles = p.sk_tiles;
    ep.sk_parts = p.sk_parts;
    ep.ready_flags = g.unit_counter + 1;
  }
  if (p.fused_split) {
    ep.fused_split = true;
    ep.ready_flags = g.unit_counter + 1;
  }

  // TMA-store epilogue: 16-bit output written in place (not transposed, no partials) with a
  // 16-B aligned row pitch; otherwise the epilogue stores from registers.
  CUtensorMap tout{};
  // TK_HOPPER_STORE=copy: A/B knob, no TMA store: the staged copy-out for such outputs (register
  // stores under swap-AB).
  const bool copy_store = g.store == StoreVariant::copy;
  ep.stmatrix = g.store == StoreVariant::stmatrix;
  ep.deferred = g.store == StoreVariant::deferred;
  // TK_HOPPER_EARLY_START=0 (A/B, read once): every kernel starts behind a __syncthreads.
  static const bool early_start = env_flag("TK_HOPPER_EARLY_START", true);
  // Pre-issue (gemm_kernel.cuh), not in a programmatic dependent (after the re-pitch copy): there
  // thread 0 would wait for the copy before the start barrier, and the consumers' cold code fetch,
  // which otherwise overlaps the copy, would follow it (H200 2026-12-02c, 129x4100x300 NT: 11.7 ->
  // 12.3 us). TK_HOPPER_PRE_ISSUE=0 (A/B, read once): none.
  static const bool pre_issue = env_flag("TK_HOPPER_PRE_ISSUE", true);
  ep.early_start = uint8_t(early_start ? (pre_issue && !g.dependent ? 2 : 1) : 0);
  // TK_HOPPER_COPY_GRANULES=0 (A/B, read once): the staged copy-out of unaligned rows element by element.
  static const bool granules = env_flag("TK_HOPPER_COPY_GRANULES", true);
  ep.granules = granules;
  // TK_HOPPER_PLAIN_BODY=0 (A/B, read once): plain GEMMs take the general body (plain_body.cuh).
  static const bool plain_body_on = env_flag("TK_HOPPER_PLAIN_BODY", true);
  ep.plain_body = plain_body_on && ep.c == nullptr && ep.alpha == 1.f && !ep.stmatrix && ep.deferred && !ep.fused_split;
  // Plain GEMMs with the staged copy-out take the staged plain body (plain_body.cuh
  // has_staged_plain_body); TK_HOPPER_PLAIN_STAGED=0 (A/B, read once): the general body.
  static const bool plain_staged_on = env_flag("TK_HOPPER_PLAIN_STAGED", true);
  ep.plain_staged = plain_staged_on && plain_body_on && ep.c == nullptr && ep.alpha == 1.f && !ep.stmatrix &&
                    !ep.fused_split && ep.granules;
  // GemmArgs::evict_first is in (A, B) terms; the kernel's X is B under swap-AB.
  const int ea = g.evict_first & 1, eb = (g.evict_first >> 1) & 1;
  ep.l2_evict_first = p.swap_ab ? (eb | (ea << 1)) : (ea | (eb << 1));
  // Swap-AB stores the transposed staging box through the same map (kStoreTmaTransposed): the
  // fragment-order register stores it replaces cost 256x14336x4096 ~20 us of ~85 (H100, no-store
  // experiment and pipeline_trace.py).
  bool tma_store = !copy_store && L::kTmaStore && !split_out && (N * int64_t(sizeof(OutT))) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(g.out) % 16 == 0;
  CUtensorMap tout_tail{};  // a narrow last round's transposed box (gemm_layout::kPartialRound, swap-AB)
  if (tma_store) {
    const gl2d go{g.out, uint64_t(N), uint64_t(g.M), uint64_t(ldo), uint32_t(sizeof(OutT))};
    tma_store = tma_describable(go) && make_tma_desc(&tout, go, tma_dtype<OutT>(), 64, 64) == CUDA_SUCCESS &&
                (!L::kPartialRound || make_tma_desc(&tout_tail, go, tma_dtype<OutT>(), 64, L::LAST_COLS) == CUDA_SUCCESS);
  }
  if constexpr (L::kSwiGLU) {
    // h's map in tout_tail's place (gemm_kernel.cuh); every unit stores through both maps, and the
    // epilogue has no other variant (no deferred rounds, no plain body, no C).
    const gl2d gh{g.swiglu_h, uint64_t(N / 2), uint64_t(g.M), uint64_t(N / 2), uint32_t(sizeof(OutT))};
    if (!tma_store || p.swap_ab || N % 256 != 0 || ep.c != nullptr || ep.alpha != 1.f ||
        reinterpret_cast<uintptr_t>(g.swiglu_h) % 16 != 0 || !tma_describable(gh) ||
        make_tma_desc(&tout_tail, gh, tma_dtype<OutT>(), 64, 64) != CUDA_SUCCESS)
      return "the SwiGLU epilogue needs TMA-storable gu and h (16-B aligned rows, N % 256 == 0), no C, alpha 1";
    ep.deferred = ep.plain_body = ep.plain_staged = ep.stmatrix = false;
  }
  if constexpr (L::kRope) {
    // cos' map in ty_tail's place, sin's in tout_tail's (64 x 64 boxes, read by the producer after
    // each unit's k tiles; gemm_kernel.cuh); the product takes the ordinary epilogue after its rotation.
    const gl2d gc{g.rope_cos, 64, uint64_t(g.M), uint64_t(g.rope_ld), uint32_t(sizeof(T))},
        gs{g.rope_sin, 64, uint64_t(g.M), uint64_t(g.rope_ld), uint32_t(sizeof(T))};
    if (!tma_store || p.swap_ab || N % 128 != 0 || ep.c != nullptr || ep.alpha != 1.f || !tma_describable(gc) ||
        !tma_describable(gs) || make_tma_desc(&ty_tail, gc, tma_dtype<T>(), 64, 64) != CUDA_SUCCESS ||
        make_tma_desc(&tout_tail, gs, tma_dtype<T>(), 64, 64) != CUDA_SUCCESS)
      return "the RoPE epilogue needs a TMA-storable output (16-B aligned rows, N % 128 == 0), TMA-describable "
             "cos / sin tables, no C, alpha 1";
    // The kernel has the in-place plain body only (gemm_kernel.cuh: the general body beside it spilled).
    ep.deferred = ep.plain_body = true, ep.stmatrix = ep.plain_staged = false;
  }
  if constexpr (L::kSwiGLUGrad) {
    // d_up's map in tout_tail's place, gu's (64 x 64 boxes, read by the producer after each unit's
    // k tiles) in ty_tail's (gemm_kernel.cuh); no other epilogue variant.
    const gl2d gd{g.swiglu_du, uint64_t(N), uint64_t(g.M), uint64_t(ldo), uint32_t(sizeof(OutT))},
        ggu{g.swiglu_gu, uint64_t(2 * N), uint64_t(g.M), uint64_t(2 * N), uint32_t(sizeof(T))};
    if (!tma_store || p.swap_ab || N % 128 != 0 || ep.c != nullptr || ep.alpha != 1.f ||
        reinterpret_cast<uintptr_t>(g.swiglu_du) % 16 != 0 || reinterpret_cast<uintptr_t>(g.swiglu_gu) % 16 != 0 ||
        !tma_describable(gd) || !tma_describable(ggu) ||
        make_tma_desc(&tout_tail, gd, tma_dtype<OutT>(), 64, 64) != CUDA_SUCCESS ||
        make_tma_desc(&ty_tail, ggu, tma_dtype<T>(), 64, 64) != CUDA_SUCCESS)
      return "the SwiGLU backward epilogue needs TMA-describable d_gate, d_up and gu (16-B aligned rows, N % 128 == 0), "
             "no C, alpha 1";
    ep.deferred = ep.plain_body = ep.plain_staged = ep.stmatrix = false;
  }
  if constexpr (L::kKParts) {
    // Y's second part's map in ty_tail's place, its third's in tout_tail's; X's second part's in
    // tx_tail's (the kernel has no X tail map), its third's in tx3 (producer_loads.cuh issue_stage); the
    // boxes the operands' own. Each part's maps end at the part's k range, so that no part's boxes
    // read another part's rows / columns (zero-filled past each map instead).
    const uint64_t e0 = uint64_t(g.k_part_end[0]), e1 = uint64_t(g.k_part_end[1]);
    const bool three = g.b_parts[1] != nullptr;
    const uint64_t n = uint64_t(op.cols), ld = uint64_t(op.ldy), m = uint64_t(op.rows);
    const gl2d g0{op.y, n, e0, ld, 2}, g1{g.b_parts[0], n, e1 - e0, ld, 2}, g2{g.b_parts[1], n, K - e1, ld, 2};
    const gl2d x0{op.x, e0, m, uint64_t(op.ldx), 2}, x1{g.a_parts[0], e1 - e0, m, uint64_t(g.a_parts_ld[0]), 2},
        x2{g.a_parts[1], K - e1, m, uint64_t(g.a_parts_ld[1]), 2};
    auto part_map = [&](CUtensorMap* map, const gl2d& gp, bool is_x) {
      return reinterpret_cast<uintptr_t>(gp.ptr) % 16 == 0 && tma_describable(gp) &&
             (is_x ? make_tma_desc(map, gp, tma_dtype<T>(), L::a_tile::kBoxInner, L::a_tile::kBoxOuter,
                                   operand_promo(gp.ld * sizeof(T)))
                   : make_tma_desc(map, gp, tma_dtype<T>(), L::b_tile::kBoxInner, L::b_tile::kBoxOuter, promo_y)) ==
                 CUDA_SUCCESS;
    };
    if (p.swap_ab || e0 == 0 || e0 % L::BK != 0 || e1 <= e0 || e1 > K || (three ? e1 % L::BK != 0 || e1 == K : e1 != K) ||
        g.a_parts[0] == nullptr || (three && g.a_parts[1] == nullptr) || !part_map(&ty, g0, false) ||
        !part_map(&ty_tail, g1, false) || (three && !part_map(&tout_tail, g2, false)) || !part_map(&tx, x0, true) ||
        !part_map(&tx_tail, x1, true) || (three && !part_map(&tx3, x2, true)))
      return "the K-parts GEMM needs an unswapped plan and TMA-describable parts of A and B ending at multiples of 64 "
             "columns / rows";
    ep.sk_tiles = int(e0 / L::BK), ep.sk_parts = three ? int(e1 / L::BK) : 0x7fffffff;  // (epilogue.cuh says why there)
  }
  if constexpr (L::kMParts) {
    // X's parts (MN-major: {rows, K} maps, the operand's boxes): the first in tx (gx above), the second
    // in tx_tail's place (an MN-major X has no tail map), the third in tx3 (producer_loads.cuh
    // unit_loads). Each map ends at its part's rows; a unit reads one part (whole row tiles), the last
    // past M zero-filled.
    const uint64_t e0 = uint64_t(g.m_part_end[0]), e1 = uint64_t(g.m_part_end[1]), m = uint64_t(op.rows);
    const bool three = g.a_parts[1] != nullptr;
    const gl2d x1{g.a_parts[0], e1 - e0, K, uint64_t(g.a_parts_ld[0]), 2},
        x2{g.a_parts[1], m - e1, K, uint64_t(g.a_parts_ld[1]), 2};
    auto part_map = [&](CUtensorMap* map, const gl2d& gp) {
      return reinterpret_cast<uintptr_t>(gp.ptr) % 16 == 0 && tma_describable(gp) &&
             make_tma_desc(map, gp, tma_dtype<T>(), L::a_tile::kBoxInner, L::a_tile::kBoxOuter,
                           operand_promo(gp.ld * sizeof(T))) == CUDA_SUCCESS;
    };
    if (p.swap_ab || e0 == 0 || e0 % L::BM != 0 || e1 <= e0 || e1 > m || (three ? e1 % L::BM != 0 || e1 == m : e1 != m) ||
        g.a_parts[0] == nullptr || !part_map(&tx_tail, x1) || (three && !part_map(&tx3, x2)))
      return "the M-parts GEMM needs an unswapped plan and TMA-describable parts of A ending at multiples of 128 rows";
    ep.sk_tiles = int(e0 / L::BM), ep.sk_parts = three ? int(e1 / L::BM) : 0x7fffffff;  // (epilogue.cuh)
  }
  // Split-K partials through the staging buffers and a 3-D TMA map {N, M, splits} over the fp32
  // workspace (epilogue_split_k.cuh store_unit_partial_tma) where it is describable: rows of N floats a
  // multiple of 16 B, a 16-B aligned workspace, whole 32-column rounds, no fused finish (its flags
  // follow ordinary stores). TK_HOPPER_PARTIAL_TMA=0 (A/B, read once): register stores always.
  static const bool partial_tma_on = env_flag("TK_HOPPER_PARTIAL_TMA", true);
  bool partial_tma = split_out && !p.fused_split && partial_tma_on && L::kTmaStore && L::BN % 32 == 0 &&
                     N % 4 == 0 && reinterpret_cast<uintptr_t>(ep.partial) % 16 == 0;
  if (partial_tma) {
    // Box: 32 floats of the contiguous index (n) x 64 (untransposed: m rows) or 32 (swap-AB: m
    // columns, the strip stored as two boxes of 32 rows) lines.
    partial_tma = make_tma_desc_3d(&tout, ep.partial, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, uint64_t(N), uint64_t(g.M),
                                   uint64_t(p.splits), uint64_t(N) * 4, uint64_t(g.M) * uint64_t(N) * 4, 32,
                                   p.swap_ab ? 32 : 64) == CUDA_SUCCESS;
  }
  // Otherwise a 16-bit, untransposed output without partials still goes through the staging
  // buffer and is copied out by rows (coalesced); the rest stores from registers.
  const int store_mode = tma_store ? (p.swap_ab ? kStoreTmaTransposed : kStoreTma)
                         : partial_tma ? (p.swap_ab ? kStorePartialTmaT : kStorePartialTma)
                         : (L::kTmaStore && !p.swap_ab && !split_out) ? kStoreStaged
                                                                      : kStoreRegisters;

  if (const char* why = only_plain_refusal<L>(ep.plain_body, store_mode)) return why;
  auto kernel = gemm_kernel<L>;
  // The shared-memory opt-in is a per-device function attribute: set once per device.
  static std::atomic<uint64_t> attr_set{0};
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  const uint64_t bit = dev < 64 ? (1ull << dev) : 0;
  if (bit == 0 || !(attr_set.load(std::memory_order_acquire) & bit)) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM_BYTES);
    if (err != cudaSuccess) return cudaGetErrorString(err);
    attr_set.fetch_or(bit, std::memory_order_acq_rel);
  }
  // GemmArgs::dependent: a programmatic dependent launch (the producer's griddepcontrol.wait
  // holds the loads until the previous grid has completed).
  cudaLaunchAttribute pdl{};
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  if (L::CLUSTER == 1 && g.dependent) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(unsigned(p.grid));
    cfg.blockDim = dim3(L::THREADS);
    cfg.dynamicSmemBytes = L::SMEM_BYTES;
    cfg.stream = stream;
    cfg.attrs = &pdl;
    cfg.numAttrs = 1;
    err = cudaLaunchKernelEx(&cfg, kernel, tx, ty, tout, tout_tail, tx_tail, ty_tail, ep, op.rows, op.cols, g.K, p.splits,
                             store_mode, p.group_m, unit_counter, tx3);
    if (err != cudaSuccess) return cudaGetErrorString(err);
  } else if constexpr (L::CLUSTER == 1) {
    kernel<<<dim3(unsigned(p.grid)), dim3(L::THREADS), L::SMEM_BYTES, stream>>>(
        tx, ty, tout, tout_tail, tx_tail, ty_tail, ep, op.rows, op.cols, g.K, p.splits, store_mode, p.group_m, unit_counter, tx3);
  } else {
    cudaLaunchConfig_t cfg{};
    cfg.blockDim = dim3(L::THREADS);
    cfg.dynamicSmemBytes = L::SMEM_BYTES;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = L::CLUSTER;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    attr[1] = pdl;
    cfg.attrs = attr;
    cfg.numAttrs = 1;  // the occupancy query below sees the cluster shape only
    // The persistent grid is capped by the clusters that can be resident at once (GPC layout).
    static std::atomic<int> resident[64];
    int clusters = dev < 64 ? resident[dev].load() : 0;
    if (clusters == 0) {
      cfg.gridDim = dim3(unsigned(p.grid));
      err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
      if (err != cudaSuccess) return cudaGetErrorString(err);
      if (clusters < 1) return "no 2-CTA cluster of this kernel fits on the GPU";
      if (dev < 64) resident[dev].store(clusters);
      if (std::getenv("TK_HOPPER_DEBUG") != nullptr)  // diagnostics for the cluster experiments
        std::fprintf(stderr, "tk: device %d: %d resident %d-CTA clusters, planned grid %d\n", dev, clusters,
                     L::CLUSTER, p.grid);
    }
    cfg.gridDim = dim3(unsigned(std::min(p.grid, clusters * L::CLUSTER)));
    cfg.numAttrs = g.dependent ? 2 : 1;
    err = cudaLaunchKernelEx(&cfg, kernel, tx, ty, tout, tout_tail, tx_tail, ty_tail, ep, op.rows, op.cols, g.K, p.splits,
                             store_mode, p.group_m, unit_counter, tx3);
    if (err != cudaSuccess) return cudaGetErrorString(err);
  }
#ifdef TK_EXPERIMENTS
  if (ep.trace != nullptr) print_trace_records(static_cast<const TraceRecord*>(ep.trace), stream);
#endif
  if (split_out && !p.fused_split) {
    // The reduction works in the original (m, n) space: out and the partials are row-major, ld = N.
    Epilogue<OutT> red = ep;
    red.c_s0 = g.c_s0;
    red.c_s1 = g.c_s1;
    const int64_t total = int64_t(g.M) * N;
    // Vector path (splitk_reduce.cuh): whole groups of kReduceVec, 16-B partials, aligned output.
    // TK_HOPPER_REDUCE_VEC=0 (A/B, read once): the scalar path always.
    static const bool vec_on = env_flag("TK_HOPPER_REDUCE_VEC", true);
    const bool vec = vec_on && total % kReduceVec == 0 && reinterpret_cast<uintptr_t>(ep.partial) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(g.out) % (kReduceVec * sizeof(OutT)) == 0;
    const int64_t threads = vec ? total / kReduceVec : total;
    const unsigned blocks = unsigned(std::min<int64_t>((threads + 255) / 256, 65535));
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(256);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;  // PDL: overlap the launch
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    err = cudaLaunchKernelEx(&cfg, splitk_reduce_kernel<OutT>, red, g.M, g.N, p.splits, vec);
    if (err != cudaSuccess) return cudaGetErrorString(err);
  }
  err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}


// The fused epilogues' and the K- / M-parts GEMMs' kernels (gemm_layout SWIGLU_ 1..5) run only on the plan
// dispatch.cpp's launch_fixed_256 makes: unswapped, unclustered, unsplit 128 x 256, no stream-K, two 64-row
// consumer warpgroups, staging outside the ring; any other plan gets `plan_error`.
template <class L>
const char* launch_fixed(const GemmArgs& g, const KernelOperands& op, cudaStream_t stream, const char* plan_error) {
  const GemmPlan& p = g.plan;
  if (p.swap_ab || p.cluster != 1 || p.splits != 1 || p.sk_tiles > 0 || p.wg_rows != 64 || p.ring_staging)
    return plan_error;
  return launch_layout<L>(g, op, stream);
}
}  // namespace detail

template <typename T, typename OutT, int BN, int BM, bool XMn, bool YMn>
const char* launch_clustered(const GemmArgs& g, const detail::KernelOperands& op, cudaStream_t s) {
  if constexpr (BM == 64 && BN > 128) {
    // 64 x 144 .. 224 token tiles (plan.h rows64_token_width): K-major Y, as the 128-row
    // odd widths; unclustered, or in pairs in a TK_BM64_ODD_CLUSTER build (kernel_variants.h).
    if constexpr (YMn) {
      return "64-row tiles wider than 128 columns need a K-major Y (A row-major under swap-AB)";
    } else {
      if (g.plan.sk_tiles > 0) return "64-row tiles run without a stream-K tail";
#if TK_BM64_ODD_CLUSTER
      if (g.plan.cluster == 2) return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 2, false, 64>>(g, op, s);
#endif
      if (g.plan.cluster != 1) return "64-row tiles wider than 128 columns: unclustered kernels only";
      if constexpr (sizeof(OutT) == 2) {  // staging in the stage ring, one stage more (plan.h ring_staging)
        if (g.plan.ring_staging)
          return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 64, 64, true>>(g, op, s);
      }
      return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 64>>(g, op, s);
    }
  } else if constexpr (BM == 64) {
    if (g.plan.sk_tiles > 0) return "64-row tiles run without a stream-K tail";
    if (g.plan.cluster == 2) return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 2, false, 64>>(g, op, s);
    if (g.plan.cluster != 1) return "no such clustered kernel";
    return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 64>>(g, op, s);
  } else if constexpr (BN % 64 != 0) {
    // 144, 160, 224 wide (plan_rules.h kOddWidths) and 72, 80 (kTokenWidths): unclustered, two
    // warpgroups, K-major Y.
    if constexpr (YMn) {
      return "tiles of a width that is not a multiple of 64 need a K-major Y (A row-major under swap-AB, else B "
             "column-major)";
    } else {
      if (g.plan.cluster != 1 || g.plan.sk_tiles > 0)
        return "tiles of a width that is not a multiple of 64: unclustered kernels only";
      if constexpr (BN < 128) {  // token widths on one consumer warpgroup (plan.h one_wg bit 4; A/B)
        if (g.plan.wg_rows == 128)
          return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 128, 128>>(g, op, s);
      }
      if constexpr (BN == 144 && sizeof(OutT) == 2) {  // one consumer warpgroup (plan.h one_wg bit 6; opt-in)
        if (g.plan.wg_rows == 128 && g.plan.ring_staging)
          return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 128, 128, true>>(g, op, s);
        if (g.plan.wg_rows == 128)
          return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 128, 128>>(g, op, s);
      }
      if (g.plan.wg_rows != 64) return "tiles of a width that is not a multiple of 64: two warpgroups above 128 columns";
      return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN>>(g, op, s);
    }
  } else {
    if constexpr (BN == 256) {
      if (g.swiglu_h != nullptr) {  // the SwiGLU epilogue (launch.h GemmArgs::swiglu_h)
        if constexpr (!XMn && !YMn && sizeof(OutT) == 2) {
          return detail::launch_fixed<gemm_layout<T, OutT, false, false, 256, 1, false, 128, 64, false, true>>(
              g, op, s, "the SwiGLU epilogue needs an unswapped, unclustered, unsplit 128 x 256 plan without stream-K");
        } else {
          return "the SwiGLU epilogue needs K-contiguous operands and a 16-bit output";
        }
      }
      if (g.rope_cos != nullptr) {  // the RoPE epilogue (launch.h GemmArgs::rope_cos)
        if constexpr (!XMn && !YMn && sizeof(OutT) == 2) {
          return detail::launch_fixed<gemm_layout<T, OutT, false, false, 256, 1, false, 128, 64, false, 3>>(
              g, op, s, "the RoPE epilogue needs an unswapped, unclustered, unsplit 128 x 256 plan without stream-K");
        } else {
          return "the RoPE epilogue needs K-contiguous operands and a 16-bit output";
        }
      }
      if (g.swiglu_gu != nullptr) {  // the SwiGLU backward epilogue (launch.h GemmArgs::swiglu_gu)
        if constexpr (!XMn && YMn && sizeof(OutT) == 2) {
          return detail::launch_fixed<gemm_layout<T, OutT, false, true, 256, 1, false, 128, 64, false, 2>>(
              g, op, s, "the SwiGLU backward epilogue needs an unswapped, unclustered, unsplit 128 x 256 plan without stream-K");
        } else {
          return "the SwiGLU backward epilogue needs row-major A and B and a 16-bit output";
        }
      }
      if (g.b_parts[0] != nullptr) {  // the K-parts mainloop (launch.h GemmArgs::b_parts)
        if constexpr (!XMn && YMn && sizeof(OutT) == 2) {
          return detail::launch_fixed<gemm_layout<T, OutT, false, true, 256, 1, false, 128, 64, false, 4>>(
              g, op, s, "the K-parts GEMM needs an unswapped, unclustered, unsplit 128 x 256 plan without stream-K");
        } else {
          return "the K-parts GEMM needs row-major A and B and a 16-bit output";
        }
      }
      if (g.m_part_end[0] > 0) {  // the M-parts mainloop (launch.h GemmArgs::m_part_end)
        if constexpr (XMn && YMn && sizeof(OutT) == 2) {
          return detail::launch_fixed<gemm_layout<T, OutT, true, true, 256, 1, false, 128, 64, false, 5>>(
              g, op, s, "the M-parts GEMM needs an unswapped, unclustered, unsplit 128 x 256 plan without stream-K");
        } else {
          return "the M-parts GEMM needs column-major A, row-major B and a 16-bit output";
        }
      }
      if (g.plan.cluster == 2) return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 2>>(g, op, s);
      if (g.plan.sk_tiles > 0) return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, true>>(g, op, s);
    }
    if (g.plan.sk_tiles > 0) return "no stream-K kernel for this tile width";
#if TK_WG128_CLUSTER
    if constexpr (BN == 128) {  // kernel_variants.h: 128 x 128 2-CTA pairs, forced tiles only
      if constexpr (sizeof(OutT) == 2) {  // staging in the stage ring, 7 stages (plan.h ring_staging)
        if (g.plan.cluster == 2 && g.plan.wg_rows == 128 && g.plan.ring_staging)
          return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 2, false, 128, 128, true>>(g, op, s);
      }
      if (g.plan.cluster == 2 && g.plan.wg_rows == 128)
        return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 2, false, 128, 128>>(g, op, s);
      if (g.plan.cluster == 2)  // two consumer warpgroups (TK_HOPPER_ONE_WG=0): cuBLAS's 128x128 2x1 form
        return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 2>>(g, op, s);
    }
#endif
    if (g.plan.cluster != 1) return "no clustered kernel for this tile width";
    if constexpr (BN <= 128) {  // one consumer warpgroup, two 64-row strips (plan_rules.h kOneWarpgroupWidths)
      if constexpr (BN == 128 && sizeof(OutT) == 2) {
        // Staging in the stage ring, 7 stages (gemm_layout), by plan.h ring_staging.
        if (g.plan.ring_staging)
          return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 128, 128, true>>(g, op, s);
      }
      if (g.plan.wg_rows == 128) return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN, 1, false, 128, 128>>(g, op, s);
    }
    return detail::launch_layout<gemm_layout<T, OutT, XMn, YMn, BN>>(g, op, s);
  }
}

template <typename T, typename OutT, int BN, int BM>
const char* launch_family(const GemmArgs& g, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if ((g.swiglu_h != nullptr || g.swiglu_gu != nullptr || g.rope_cos != nullptr || g.b_parts[0] != nullptr ||
       g.m_part_end[0] > 0) &&
      (BN != 256 || BM != 128))
    return "the SwiGLU, RoPE, K-parts and M-parts kernels run on 128 x 256 tiles only";
  // swap-AB: X = B^T (N x K; MN-major exactly when B is row-major), Y = A^T (K x M; MN-major
  // exactly when A is column-major).
  const bool swap = g.plan.swap_ab;
  const detail::KernelOperands op = swap ? detail::KernelOperands{g.b, g.ldb, g.a, g.lda, g.N, g.M}
                                         : detail::KernelOperands{g.a, g.lda, g.b, g.ldb, g.M, g.N};
  const bool x_mn = swap ? g.b_mn : g.a_mn, y_mn = swap ? g.a_mn : g.b_mn;
  if (x_mn) {
    return y_mn ? launch_clustered<T, OutT, BN, BM, true, true>(g, op, s)
                : launch_clustered<T, OutT, BN, BM, true, false>(g, op, s);
  }
  return y_mn ? launch_clustered<T, OutT, BN, BM, false, true>(g, op, s)
              : launch_clustered<T, OutT, BN, BM, false, false>(g, op, s);
}

}  // namespace tk::hopper

// Explicit instantiation of one family (used by the launch_inst_*.cu files).
#define TK_HOPPER_FAMILY(T, OutT, BN, BM) \
  template const char* tk::hopper::launch_family<T, OutT, BN, BM>(const tk::hopper::GemmArgs&, void*);
