// Buffer-resource (V#) global loads for gfx942 (device only; clang >= 19 builtins).
// Facts (CDNA3 ISA guide, "Buffer resource descriptor"; LLVM AMDGPUUsage): a raw buffer
// (stride 0) returns 0 for any dword whose byte offset is >= num_records, so clipping
// num_records at the matrix end makes tail loads read zeros and never fault. Word 3 =
// 0x00020000 sets DATA_FORMAT = 32 bit (bits 18:15 = 4), required non-zero on gfx9.
#pragma once
#include <hip/hip_runtime.h>
#include <cstdint>

namespace kittens::cdna3 {

typedef unsigned u32x4 __attribute__((ext_vector_type(4)));
typedef unsigned u32x2 __attribute__((ext_vector_type(2)));

constexpr int kBufferWord3 = 0x00020000;
// Descriptors are clamped below this, so an access at kOobOffset is always out of range
// (stores dropped, loads read 0): the branch-free mask of the epilogue.
constexpr uint32_t kMaxRecords = 0xffffff00u;
constexpr uint32_t kOobOffset = 0xffffff00u;

// Descriptor over [base, base + bytes), bytes clamped to kMaxRecords. The caller passes
// wave-uniform values; readfirstlane tells the compiler so (else it builds the V# in VGPRs and
// wraps every load in a waterfall loop).
__device__ __forceinline__ __amdgpu_buffer_rsrc_t make_rsrc(const void* base, int64_t bytes) {
  const int64_t clip = bytes < 0 ? 0 : (bytes > (int64_t)kMaxRecords ? (int64_t)kMaxRecords : bytes);
  const uint64_t addr = reinterpret_cast<uint64_t>(base);
  const uint32_t lo = __builtin_amdgcn_readfirstlane((uint32_t)addr);
  const uint32_t hi = __builtin_amdgcn_readfirstlane((uint32_t)(addr >> 32));
  const uint32_t n = __builtin_amdgcn_readfirstlane((uint32_t)clip);
  void* p = reinterpret_cast<void*>(((uint64_t)hi << 32) | lo);
  return __builtin_amdgcn_make_buffer_rsrc(p, (short)0, (int)n, kBufferWord3);
}

// 16-B load at byte offset `voff` (buffer_load_dwordx4 ... offen); OOB dwords read 0.
__device__ __forceinline__ u32x4 buffer_load_16(__amdgpu_buffer_rsrc_t r, uint32_t voff) {
  return __builtin_amdgcn_raw_buffer_load_b128(r, voff, 0, 0);
}

}  // namespace kittens::cdna3
