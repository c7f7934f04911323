// LDS accesses of one operand tile (device only), addressed by swizzle.h.
#pragma once
#include "buffer.cuh"
#include "swizzle.h"

namespace kittens::cdna3 {

// ds_write_b128 / ds_write_b64 / ds_read_b128 through typed LDS pointers, so the compiler
// tracks lgkmcnt for every read it schedules (the gate lints that each ds_read's result
// waits on lgkmcnt before its first use).
__device__ __forceinline__ void lds_write_16(char* tile, int byte_off, u32x4 v) {
  *reinterpret_cast<u32x4*>(tile + byte_off) = v;
}
__device__ __forceinline__ void lds_write_8(char* tile, int byte_off, u32x2 v) {
  *reinterpret_cast<u32x2*>(tile + byte_off) = v;
}
__device__ __forceinline__ u32x4 lds_read_16(const char* tile, int byte_off) {
  return *reinterpret_cast<const u32x4*>(tile + byte_off);
}

}  // namespace kittens::cdna3
