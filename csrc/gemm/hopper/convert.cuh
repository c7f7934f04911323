// fp32 <-> output-dtype conversions of the Hopper epilogues (GEMM, split-K reduction, skinny).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace tk::hopper {

template <typename OutT> __device__ __forceinline__ OutT from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }

__device__ __forceinline__ uint16_t bits16(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }
__device__ __forceinline__ uint16_t bits16(__half v) { return __half_as_ushort(v); }

// Two values as one 32-bit word of 16-bit elements (v0 in the low half), one cvt.rn pack.
template <typename OutT> __device__ __forceinline__ uint32_t pack2(float v0, float v1);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float v0, float v1) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(v0, v1);
  return *reinterpret_cast<const uint32_t*>(&p);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float v0, float v1) {
  const __half2 p = __floats2half2_rn(v0, v1);
  return *reinterpret_cast<const uint32_t*>(&p);
}

// (torch builds define __CUDA_NO_HALF_CONVERSIONS__, so conversions are spelled out)
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

}  // namespace tk::hopper
