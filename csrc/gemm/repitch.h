// A re-pitch copy of one 16-bit operand (dst line l = src line l, zero-padded to ld_dst), as
// the dispatcher (operand.h) records it and a backend's copy kernel runs it. Plain C++: shared
// by the torch-side dispatch and the kernel translation units.
#pragma once
#include <cstdint>

namespace tk {

struct RepitchJob {
  const void* src;  // lines x inner 16-bit elements, line pitch ld_src, any 2-B aligned address
  int64_t ld_src;
  void* dst;        // lines x ld_dst, 16-B aligned, ld_dst % 8 == 0
  int64_t ld_dst, lines, inner;
};

// The copies one GEMM call needs (at most one per operand), launched together.
struct RepitchJobs {
  RepitchJob job[2];
  int n = 0;
};

}  // namespace tk
