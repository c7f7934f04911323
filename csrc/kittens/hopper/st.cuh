// st_operand: one stage of a GEMM operand in shared memory, MN rows x 64 k, 128-B swizzled,
// either K-major (k contiguous) or MN-major (m/n contiguous). It knows how TMA fills it and
// how wgmma reads it; the byte layout itself is kittens/common/swizzle.h.
#pragma once
#include <cuda.h>
#include "../common/swizzle.h"
#include "cluster.cuh"
#include "tma.cuh"

namespace kittens::hopper {

// Parts > 1: the tile is loaded in `Parts` slices (rows for K-major, 64-wide chunks for
// MN-major), CTA `part` of a cluster loading slice `part` and multicasting it to all of them.
template <int MN, bool MnMajor, int Parts = 1, int ElemBytes = 2>
struct st_operand {
  static constexpr int kK = kSwizzleBytes / ElemBytes;  // 64 k per stage for 16-bit types
  static constexpr int kBytes = MN * kK * ElemBytes;
  // TMA box: K-major = one {kK, MN / Parts} box; MN-major = boxes of {64 mn, kK}.
  static constexpr int kBoxInner = kSwizzleBytes / ElemBytes;
  static constexpr int kBoxOuter = MnMajor ? kK : MN / Parts;
  // MN-major tiles of fewer 64-wide chunks than parts (64 x k with Parts = 2) are loaded whole by
  // part 0 and multicast; the other parts load nothing.
  static_assert(MnMajor ? ((MN / kBoxInner) % Parts == 0 || MN / kBoxInner < Parts) : MN % (8 * Parts) == 0,
                "slices must be whole boxes");
  // K-major tiles: any multiple of 8 rows (whole 8-row swizzle atoms; a 160-row tile is one box);
  // MN-major ones are whole 64-wide chunks.
  static_assert((MnMajor ? MN % kBoxInner == 0 : MN % 8 == 0) && MN <= 256,
                "operand tile rows: a multiple of 64 (MN-major) or 8 (K-major), at most 256");

  // Issues the TMA copies of global rows [mn0, mn0+MN) x k [k0, k0+kK) into `dst` (1024-B aligned);
  // with `hint`, under the L2 cache policy `policy`.
  __device__ static void load(void* dst, const CUtensorMap* map, uint64_t* bar, int mn0, int k0, bool hint = false,
                              uint64_t policy = 0) {
    if constexpr (!MnMajor) {
      if (hint) tma_load_2d_hint(dst, map, bar, k0, mn0, policy);
      else tma_load_2d(dst, map, bar, k0, mn0);
    } else {
#pragma unroll
      for (int c = 0; c < MN / kBoxInner; ++c) {
        char* d = static_cast<char*>(dst) + c * mnmajor_chunk_bytes();
        if (hint) tma_load_2d_hint(d, map, bar, mn0 + c * kBoxInner, k0, policy);
        else tma_load_2d(d, map, bar, mn0 + c * kBoxInner, k0);
      }
    }
  }

  // MN-major slices: kSliceChunks 64-wide chunks each, from slice_first_chunk(part); tiles of fewer
  // chunks than parts (kSliceWhole) go whole through part 0, the other parts load none.
  static constexpr bool kSliceWhole = MN / kBoxInner < Parts;
  static constexpr int kSliceChunks = kSliceWhole ? MN / kBoxInner : MN / kBoxInner / Parts;
  __device__ static int slice_first_chunk(int part) { return kSliceWhole ? 0 : part * kSliceChunks; }

  // Slice `part` of the tile, multicast to the CTAs of `mask` (same smem offsets in each).
  __device__ static void load_slice(void* dst, const CUtensorMap* map, uint64_t* bar, int mn0, int k0, int part,
                                    uint16_t mask, bool hint = false, uint64_t policy = 0) {
    if constexpr (!MnMajor) {
      constexpr int rows = MN / Parts;
      char* d = static_cast<char*>(dst) + part * rows * kSwizzleBytes;
      if (hint) tma_load_2d_multicast_hint(d, map, bar, k0, mn0 + part * rows, mask, policy);
      else tma_load_2d_multicast(d, map, bar, k0, mn0 + part * rows, mask);
    } else {
      if (kSliceWhole && part != 0) return;
      const int first = slice_first_chunk(part);
#pragma unroll
      for (int c = first; c < first + kSliceChunks; ++c) {
        char* d = static_cast<char*>(dst) + c * mnmajor_chunk_bytes();
        if (hint) tma_load_2d_multicast_hint(d, map, bar, mn0 + c * kBoxInner, k0, mask, policy);
        else tma_load_2d_multicast(d, map, bar, mn0 + c * kBoxInner, k0, mask);
      }
    }
  }

  // wgmma descriptor for rows [mn0, ...) (mn0 a multiple of 64) and the kk-th 16-wide k slice.
  // The start address is the byte offset of element (mn0, 16*kk): with mn0 % 8 == 0 it is an
  // unswizzled position, and the hardware applies the swizzle to every address it derives.
  __device__ static uint64_t desc(uint32_t base, int mn0, int kk) {
    if constexpr (!MnMajor)
      return wgmma_desc(base + kmajor_offset(mn0, kk * 16, ElemBytes), 16, kSwizzleAtomBytes);
    else
      return wgmma_desc(base + mnmajor_offset(mn0, kk * 16, ElemBytes), mnmajor_chunk_bytes(), kSwizzleAtomBytes);
  }

  // At such rows the start address is linear in k: desc(base, mn0, kk) == desc(base, mn0, 0) +
  // kk * kDescKStep (the field holds address >> 4; shared addresses < 256 KB never carry out of
  // its 14 bits), so a mainloop adds constants to one descriptor instead of re-encoding it.
  static constexpr uint64_t kDescKStep = desc_k16_step(MnMajor, ElemBytes);
};

// A descriptor from its two words (mov.b64 of a register pair: no arithmetic).
__device__ __forceinline__ uint64_t pack_desc(uint32_t lo, uint32_t hi) {
  uint64_t d;
  asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(lo), "r"(hi));
  return d;
}

}  // namespace kittens::hopper
