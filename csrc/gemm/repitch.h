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

// Re-pitch copies made inside the GEMM kernel, overlapped with its mainloop (a TK_FUSED_REPITCH
// build, TK_HOPPER_FUSED_REPITCH=1; hopper/gemm_kernel.cuh): the chunks (64 lines x 64 inner
// elements) of every job are copied in k order by the CTAs' idle producer warps, and each
// finished chunk is counted in flags[j * k_tiles + kt], which the loads of k tile kt wait for.
struct FusedRepitch {
  RepitchJob job[2];
  int n = 0;                   // jobs; 0: nothing fused
  bool k_lines[2] = {false, false};  // job j's lines run along k (an MN-major operand), else its inner elements do
  int blocks[2] = {0, 0};      // chunks of job j per k tile: 64-wide blocks of its other dimension
  int x_job = -1, y_job = -1;  // the job the kernel's X / Y operand is read from (-1: read in place)
  unsigned* flags = nullptr;   // [n][k_tiles] finished-chunk counts (3 per chunk: one per copier warp), zero at launch
  int k_tiles = 0;
};

}  // namespace tk
