// Pitch-aligning copy of a 16-bit operand whose line pitch TMA cannot describe (a pitch that is
// not a multiple of 16 B, e.g. 8191 columns): dst line l = src line l, zero-padded to ld_dst.
// Each thread writes aligned 16-B chunks (8 elements; 1, 2 or 4 per pass, launch.h
// kCopyChunksPerThread) and reads each chunk's (possibly unaligned) 16 source bytes as one or two
// aligned 16-B vectors joined by funnel shifts, so the copy runs at vector width instead of
// element width. Reads never leave the 16-B granules holding valid data.
#include <cuda_runtime.h>
#include <cstdint>
#include "launch.h"
#include "repitch_chunk.cuh"

namespace tk::hopper {
namespace {

// The copies of one call: blocks [0, split) run job 0, blocks [split, gridDim.x) job 1.
struct PadJobs {
  RepitchJob job[2];
  unsigned split;
};

// Each thread copies U chunks per pass, blockDim apart within its block's span of U * blockDim
// (consecutive threads, consecutive chunks: coalesced), all U loads issued before the stores.
template <typename Idx, int U>
__global__ void pad_lines_kernel(const PadJobs jobs) {
  const bool second = blockIdx.x >= jobs.split;
  // Field-wise selects with constant indices: indexing the parameter array by `second` put a copy
  // of it on the stack (104 B, local-memory loads in every thread).
  const RepitchJob& j0 = jobs.job[0];
  const RepitchJob& j1 = jobs.job[1];
  const RepitchJob j{second ? j1.src : j0.src,     second ? j1.ld_src : j0.ld_src, second ? j1.dst : j0.dst,
                     second ? j1.ld_dst : j0.ld_dst, second ? j1.lines : j0.lines,   second ? j1.inner : j0.inner};
  const uint16_t* __restrict__ src = static_cast<const uint16_t*>(j.src);
  uint16_t* __restrict__ dst = static_cast<uint16_t*>(j.dst);
  const int64_t ld_src = j.ld_src, ld_dst = j.ld_dst, inner = j.inner;
  const unsigned block = second ? blockIdx.x - jobs.split : blockIdx.x;
  const unsigned blocks = second ? gridDim.x - jobs.split : jobs.split;
  const Idx chunks_per_line = Idx(ld_dst / 8);
  const Idx total = Idx(j.lines) * chunks_per_line;
  const Idx span = Idx(blockDim.x) * U;
  for (Idx first = Idx(block) * span + threadIdx.x; first < total; first += Idx(blocks) * span) {
    Chunk<Idx> c[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Idx i = first + Idx(u) * blockDim.x;
      c[u].l = i / chunks_per_line;
      c[u].e0 = (i - c[u].l * chunks_per_line) * 8;
      if (i < total) chunk_load(c[u], src, ld_src, inner);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (first + Idx(u) * blockDim.x < total) chunk_store(c[u], dst, ld_dst);
  }
  // Once every block got here, the GEMM launched after this kernel (programmatic dependent
  // launch) may start its prologue on the SMs the copy frees; it waits (griddepcontrol.wait) for
  // this grid's completion before reading the copies. Not earlier: a resident GEMM CTA takes a
  // whole SM's registers, so an early trigger starved the copy (H100: 4095^3 0.26 -> 0.34 ms).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace

const char* pad_lines_launch(const RepitchJobs& jobs, void* stream, int chunks_per_thread) {
  if (jobs.n < 1 || jobs.n > 2) return "pad_lines: one or two copies per launch";
  bool wide = false;  // 64-bit chunk indices (and one chunk per thread) from 2^31 chunks per copy on
  for (int i = 0; i < jobs.n; ++i) wide = wide || jobs.job[i].lines * (jobs.job[i].ld_dst / 8) >= (int64_t(1) << 31);
  const int U = !wide && (chunks_per_thread == 2 || chunks_per_thread == 4) ? chunks_per_thread : 1;
  PadJobs p{};
  unsigned blocks[2] = {0, 0};
  for (int i = 0; i < jobs.n; ++i) {
    const RepitchJob& j = jobs.job[i];
    if (j.ld_dst % 8 != 0 || reinterpret_cast<uintptr_t>(j.dst) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(j.src) % 2 != 0 || j.inner > j.ld_dst || j.lines < 1 || j.inner < 1)
      return "pad_lines: bad arguments";
    p.job[i] = j;
    const int64_t total = j.lines * (j.ld_dst / 8);  // 16-B chunks, U per thread and pass
    const int64_t need = total / (256 * U) + 1;
    blocks[i] = unsigned(need < 65535 * 4 ? need : 65535 * 4);
  }
  p.split = blocks[0];
  const unsigned grid = blocks[0] + blocks[1];
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (wide) pad_lines_kernel<int64_t, 1><<<grid, 256, 0, s>>>(p);
  else if (U == 4) pad_lines_kernel<uint32_t, 4><<<grid, 256, 0, s>>>(p);
  else if (U == 2) pad_lines_kernel<uint32_t, 2><<<grid, 256, 0, s>>>(p);
  else pad_lines_kernel<uint32_t, 1><<<grid, 256, 0, s>>>(p);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace tk::hopper
