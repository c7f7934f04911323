// Staged copy-out of a 16-bit output round to rows that are not 16-B aligned (e.g. N = 1001):
// the rows a TMA store cannot write (a box must start 16-B aligned). Used by epilogue.cuh's
// staged epilogue; index math in kittens::row_run and kittens::halfword_window.
#pragma once
#include <cstdint>
#include "../../kittens/common/halfword_window.h"
#include "../../kittens/common/row_run.h"
#include "../../kittens/common/swizzle.h"
#include "../../kittens/hopper/warpgroup.cuh"

namespace tk::hopper {
using namespace kittens;
using namespace kittens::hopper;

// Copy-out of a staged round (kCols columns from c0, line = row: mnmajor_offset) to rows that are
// not 16-B aligned, e.g. those of an N = 1001 output, by the output's own 16-B granules
// (kittens::row_run): each row's whole granules as 16-B stores of 8 elements, the halfword window
// (branch-free) of the two staging chunks they straddle, then its head and tail (< 8 elements
// each) by 2-B stores. Two schedules of the same tasks:
// - kRowPasses (epilogue.cuh kCopyRowPasses: every kernel but the clustered ones wider than 128):
//   8 lanes a row, 16 rows a pass; a pass computes its row's address and run once for lane k's
//   whole granule k and loose elements k (and k + 8). ~300 instructions a thread for a 64x64 round.
// - else a loop over whole granules (8 tasks a row), then one over loose elements, each computing
//   its row (~490 instructions): the clustered 128x256 kernels spilled 8 B with the row passes.
// H100, 2026-11-27d, against the element-by-element loop (TK_HOPPER_COPY_GRANULES=0):
// 1000x1001x999 NT 17.5 -> 16.9 us, 4097^3 NT 302.5 -> 293.9 us, 2049x4095x1000 NN 67.4 -> 63.3 us
// (benchmarks/NOTES.md). H200, 2026-11-27e, row passes also in the unclustered 128x256 kernels
// against the loops there: 2049x4095x1000 NN 62.5 -> 58.7 us, 4095^3 NN 255.0 -> 252.1 us.
template <int kCols, bool kRowPasses, typename OutT>
__device__ __forceinline__ void copy_out_granules(OutT* out, int64_t o_s0, uint32_t stage_base, int row0, int c0,
                                                  int M, int N) {
  static_assert(sizeof(OutT) == 2 && kCols <= 64 && kCols % 8 == 0, "16-bit rounds of at most 64 columns (8 granules a row)");
  const int ncols = N - c0 < kCols ? N - c0 : kCols;
  if (ncols <= 0) return;
  const int t = thread_in_warpgroup();
  auto row_at = [&](int r) { return reinterpret_cast<uint16_t*>(out) + int64_t(row0 + r) * o_s0 + c0; };
  auto run_at = [&](const uint16_t* p) { return row_run(int((reinterpret_cast<uintptr_t>(p) >> 1) & 7), ncols); };
  // Whole granule k of row r (k < run.chunks): one 16-B store at p + head + 8k (16-B aligned).
  auto granule = [&](uint16_t* p, const RowRun& run, int r, int k) {
    const int x0 = row_run_granule_col(run, k), h = x0 & 7;
    uint32_t w[8];
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "r"(stage_base + mnmajor_offset(uint32_t(x0 & ~7), uint32_t(r), 2))
                 : "memory");
    w[4] = w[5] = w[6] = w[7] = 0;
    if (h != 0)  // the granule ends in the next chunk (x0 + 7 < ncols <= kCols: it exists)
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[4]), "=r"(w[5]), "=r"(w[6]), "=r"(w[7])
                   : "r"(stage_base + mnmajor_offset(uint32_t((x0 & ~7) + 8), uint32_t(r), 2))
                   : "memory");
    const Words4 o = halfword_window(w, h);
    *reinterpret_cast<uint4*>(p + x0) = make_uint4(o.w[0], o.w[1], o.w[2], o.w[3]);
  };
  // Loose element e of row r (e < head + tail): one 2-B copy.
  auto loose = [&](uint16_t* p, const RowRun& run, int r, int e) {
    const int x = row_run_loose_col(run, e);
    uint16_t v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(stage_base + mnmajor_offset(uint32_t(x), uint32_t(r), 2)) : "memory");
    p[x] = v;
  };
  if constexpr (kRowPasses) {
    const int k = t & 7;
    const bool two_loose = ncols % 8 != 0;  // head + tail < 16, else 0 or 8
#pragma unroll 1  // unrolled, the two-strip (one-warpgroup 128x128) kernels spilled 20 B
    for (int pass = 0; pass < 4; ++pass) {
      const int r = (t >> 3) + 16 * pass;
      if (row0 + r >= M) break;  // rows grow with the pass
      uint16_t* const p = row_at(r);
      const RowRun run = run_at(p);
      if (k < run.chunks) granule(p, run, r, k);
      if (k < run.head + run.tail) loose(p, run, r, k);
      if (two_loose && k + 8 < run.head + run.tail) loose(p, run, r, k + 8);
    }
  } else {
    for (int i = t; i < 64 * 8; i += kWarpgroupThreads) {
      const int r = i / 8, k = i % 8;
      if (row0 + r >= M) break;  // rows grow with i
      uint16_t* const p = row_at(r);
      const RowRun run = run_at(p);
      if (k < run.chunks) granule(p, run, r, k);
    }
    const int lg = ncols % 8 == 0 ? 3 : 4;  // loose tasks a row: 8 or 16
#pragma unroll 1
    for (int i = t; i < (64 << lg); i += kWarpgroupThreads) {
      const int r = i >> lg, e = i & ((1 << lg) - 1);
      if (row0 + r >= M) break;
      uint16_t* const p = row_at(r);
      const RowRun run = run_at(p);
      if (e < run.head + run.tail) loose(p, run, r, e);
    }
  }
}

}  // namespace tk::hopper
