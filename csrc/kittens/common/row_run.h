// A row's run of columns cut at the output's own 16-B granules (host-testable; the one place this
// index math lives). Used by the staged copy-out of rows that are not 16-B aligned
// (csrc/gemm/hopper/copy_out_rows.cuh copy_out_granules), e.g. the rows of an N = 1001 output.
#pragma once
#include "base.h"

namespace kittens {

// The run of `ncols` 16-bit elements starting `s` elements (0..7) past a 16-B boundary: `head`
// elements up to the next boundary, `chunks` whole 16-B granules, then `tail` elements
// (head + 8 chunks + tail = ncols; head, tail < 8).
struct RowRun {
  int head, chunks, tail;
};
TK_HD RowRun row_run(int s, int ncols) {
  if (ncols <= 0) return RowRun{0, 0, 0};
  const int to_boundary = (8 - s) & 7;
  const int head = to_boundary < ncols ? to_boundary : ncols;
  const int chunks = (ncols - head) / 8;
  return RowRun{head, chunks, ncols - head - 8 * chunks};
}

// Column (from the run's start) of whole granule k's first element (k < chunks): the granule is
// the halfword window at element (col % 8) of the run's 8-column chunks col / 8 and col / 8 + 1.
TK_HD int row_run_granule_col(const RowRun& run, int k) { return run.head + 8 * k; }

// Column (from the run's start) of the e-th element outside the whole granules (e < head + tail).
TK_HD int row_run_loose_col(const RowRun& run, int e) { return e < run.head ? e : run.head + 8 * run.chunks + (e - run.head); }

}  // namespace kittens
