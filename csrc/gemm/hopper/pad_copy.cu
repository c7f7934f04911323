// Pitch-aligning copy of a 16-bit operand whose line pitch TMA cannot describe (a pitch that is
// not a multiple of 16 B, e.g. 8191 columns): dst line l = src line l, zero-padded to ld_dst.
// Each thread writes one aligned 16-B chunk (8 elements) and reads the (possibly unaligned) 16
// source bytes as one or two aligned 16-B vectors joined by funnel shifts, so the copy runs at
// vector width instead of element width. Reads never leave the 16-B granules holding valid data.
#include <cuda_runtime.h>
#include <cstdint>
#include "../../kittens/common/halfword_window.h"
#include "launch.h"

namespace tk::hopper {
namespace {

// The copies of one call: blocks [0, split) run job 0, blocks [split, gridDim.x) job 1.
struct PadJobs {
  RepitchJob job[2];
  unsigned split;
};

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
  const int64_t chunks_per_line = ld_dst / 8;
  const int64_t total = j.lines * chunks_per_line;
  for (int64_t i = block * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(blocks) * blockDim.x) {
    const int64_t l = i / chunks_per_line, q = i - l * chunks_per_line;
    const int64_t e0 = q * 8;
    uint4 out = make_uint4(0, 0, 0, 0);
    if (e0 < inner) {
      const int64_t n = inner - e0 < 8 ? inner - e0 : 8;  // valid elements in this chunk
      const uintptr_t a = reinterpret_cast<uintptr_t>(src + l * ld_src + e0);
      const uintptr_t base = a & ~uintptr_t(15);
      const int shift = int(a - base);  // even
      uint32_t w[8];
      const uint4 v0 = *reinterpret_cast<const uint4*>(base);
      w[0] = v0.x, w[1] = v0.y, w[2] = v0.z, w[3] = v0.w;
      w[4] = w[5] = w[6] = w[7] = 0;
      if (a + 2 * n > base + 16) {  // the chunk's last valid byte lies in the next granule
        const uint4 v1 = *reinterpret_cast<const uint4*>(base + 16);
        w[4] = v1.x, w[5] = v1.y, w[6] = v1.z, w[7] = v1.w;
      }
      const kittens::Words4 o = kittens::halfword_window(w, shift / 2);
      out = make_uint4(o.w[0], o.w[1], o.w[2], o.w[3]);
      if (n < 8) {  // zero the pad elements (they are never read through the descriptor)
        uint32_t* o = reinterpret_cast<uint32_t*>(&out);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (2 * j >= n) o[j] = 0;
          else if (2 * j + 1 >= n) o[j] &= 0xffffu;
        }
      }
    }
    *reinterpret_cast<uint4*>(dst + l * ld_dst + e0) = out;
  }
  // Once every block got here, the GEMM launched after this kernel (programmatic dependent
  // launch) may start its prologue on the SMs the copy frees; it waits (griddepcontrol.wait) for
  // this grid's completion before reading the copies. Not earlier: a resident GEMM CTA takes a
  // whole SM's registers, so an early trigger starved the copy (H100: 4095^3 0.26 -> 0.34 ms).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace

const char* pad_lines_launch(const RepitchJobs& jobs, void* stream) {
  if (jobs.n < 1 || jobs.n > 2) return "pad_lines: one or two copies per launch";
  PadJobs p{};
  unsigned blocks[2] = {0, 0};
  for (int i = 0; i < jobs.n; ++i) {
    const RepitchJob& j = jobs.job[i];
    if (j.ld_dst % 8 != 0 || reinterpret_cast<uintptr_t>(j.dst) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(j.src) % 2 != 0 || j.inner > j.ld_dst || j.lines < 1 || j.inner < 1)
      return "pad_lines: bad arguments";
    p.job[i] = j;
    const int64_t total = j.lines * (j.ld_dst / 8);  // 16-B chunks, one per thread and pass
    blocks[i] = unsigned(total / 256 + 1 < 65535 * 4 ? total / 256 + 1 : 65535 * 4);
  }
  p.split = blocks[0];
  pad_lines_kernel<<<blocks[0] + blocks[1], 256, 0, static_cast<cudaStream_t>(stream)>>>(p);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace tk::hopper
