// Global layout of a 2-D operand and its TMA descriptor (host side).
// The driver's cuTensorMapEncodeTiled is fetched at run time through the CUDA runtime
// (cudaGetDriverEntryPointByVersion), so nothing links against libcuda.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <cstdint>

namespace kittens::hopper {

// A 2-D matrix as TMA sees it: `inner` contiguous elements per line, `outer` lines,
// `ld` elements between lines (ld >= inner, ld * elem_bytes a multiple of 16).
struct gl2d {
  const void* ptr;
  uint64_t inner;
  uint64_t outer;
  uint64_t ld;
  uint32_t elem_bytes;
};

// TMA's own rules (CUDA driver API, cuTensorMapEncodeTiled): 16-B aligned base, line stride a
// multiple of 16 B below 2^40, every dimension in [1, 2^32].
inline bool tma_describable(const gl2d& g) {
  const uint64_t stride = g.ld * g.elem_bytes;
  return (reinterpret_cast<uintptr_t>(g.ptr) % 16 == 0) && stride % 16 == 0 && stride < (1ull << 40) &&
         g.inner >= 1 && g.outer >= 1 && g.inner <= (1ull << 32) && g.outer <= (1ull << 32) && g.ld >= g.inner;
}

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// Tiled descriptor with 128-B swizzle: box = box_inner x box_outer elements, box_inner*elem = 128 B.
// Out-of-bounds boxes are zero-filled. Returns a CUresult (CUDA_SUCCESS on success).
// promotion: how much L2 fetches per miss (the driver's CUtensorMapL2promotion; 256 B by default).
inline int make_tma_desc(CUtensorMap* map, const gl2d& g, CUtensorMapDataType dtype, uint32_t box_inner,
                         uint32_t box_outer,
                         CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  auto encode = tensor_map_encoder();
  if (!encode) return CUDA_ERROR_NOT_FOUND;
  const cuuint64_t dims[2] = {g.inner, g.outer};
  const cuuint64_t strides[1] = {g.ld * g.elem_bytes};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t elem_strides[2] = {1, 1};
  return encode(map, dtype, 2, const_cast<void*>(g.ptr), dims, strides, box, elem_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promotion,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// 3-D tiled descriptor, 128-B swizzle: dims {inner, mid, outer} elements, line strides in bytes
// (multiples of 16), box {box_inner, box_mid, 1} (box_inner * elem = 128 B). Out-of-bounds parts
// of a box are not stored (clipped per dimension). Returns a CUresult.
inline int make_tma_desc_3d(CUtensorMap* map, const void* ptr, CUtensorMapDataType dtype, uint64_t inner, uint64_t mid,
                            uint64_t outer, uint64_t mid_stride_bytes, uint64_t outer_stride_bytes, uint32_t box_inner,
                            uint32_t box_mid) {
  auto encode = tensor_map_encoder();
  if (!encode) return CUDA_ERROR_NOT_FOUND;
  const cuuint64_t dims[3] = {inner, mid, outer};
  const cuuint64_t strides[2] = {mid_stride_bytes, outer_stride_bytes};
  const cuuint32_t box[3] = {box_inner, box_mid, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  return encode(map, dtype, 3, const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace kittens::hopper
