// One 16-B destination chunk of a re-pitch copy (repitch.h): the source's (possibly unaligned)
// 16 bytes read as one or two aligned 16-B vectors and joined by funnel shifts. Used by the
// copy kernel (pad_copy.cu).
#pragma once
#include <cstdint>
#include "../../kittens/common/halfword_window.h"

namespace tk::hopper {

// One 16-B destination chunk: its line l and first element e0; the source's 16-B granules read up front
// (v[0], v[1]) so that a thread's chunks all have their loads in flight before the first store.
template <typename Idx>
struct Chunk {
  Idx l, e0;  // uint32_t below 2^31 chunks per copy (fewer registers), else int64_t
  int n;      // valid source elements (<= 0: the chunk is all padding)
  int shift;  // bytes from the granule's start to the chunk's first source element
  uint4 v[2];
};

template <typename Idx>
__device__ __forceinline__ void chunk_load(Chunk<Idx>& c, const uint16_t* __restrict__ src, int64_t ld_src, int64_t inner) {
  c.v[0] = c.v[1] = make_uint4(0, 0, 0, 0);
  c.n = inner - int64_t(c.e0) < 8 ? int(inner - int64_t(c.e0)) : 8;
  c.shift = 0;
  if (c.n <= 0) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(src + int64_t(c.l) * ld_src + c.e0);
  const uintptr_t base = a & ~uintptr_t(15);
  c.shift = int(a - base);  // even
  c.v[0] = *reinterpret_cast<const uint4*>(base);
  if (a + 2 * c.n > base + 16) c.v[1] = *reinterpret_cast<const uint4*>(base + 16);  // the last valid byte lies in the next granule
}

template <typename Idx>
__device__ __forceinline__ void chunk_store(const Chunk<Idx>& c, uint16_t* __restrict__ dst, int64_t ld_dst) {
  uint4 out = make_uint4(0, 0, 0, 0);
  if (c.n > 0) {
    const uint32_t w[8] = {c.v[0].x, c.v[0].y, c.v[0].z, c.v[0].w, c.v[1].x, c.v[1].y, c.v[1].z, c.v[1].w};
    const kittens::Words4 o = kittens::halfword_window(w, c.shift / 2);
    out = make_uint4(o.w[0], o.w[1], o.w[2], o.w[3]);
    if (c.n < 8) {  // zero the pad elements (they are never read through the descriptor)
      uint32_t* ow = reinterpret_cast<uint32_t*>(&out);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (2 * j >= c.n) ow[j] = 0;
        else if (2 * j + 1 >= c.n) ow[j] &= 0xffffu;
      }
    }
  }
  *reinterpret_cast<uint4*>(dst + int64_t(c.l) * ld_dst + c.e0) = out;
}

// Copies destination chunk (line l, elements e0 .. e0 + 7) of a job, loads then store.
__device__ __forceinline__ void copy_chunk(const uint16_t* __restrict__ src, int64_t ld_src, uint16_t* __restrict__ dst,
                                           int64_t ld_dst, int64_t inner, int64_t l, int64_t e0) {
  Chunk<int64_t> c;
  c.l = l, c.e0 = e0;
  chunk_load(c, src, ld_src, inner);
  chunk_store(c, dst, ld_dst);
}

}  // namespace tk::hopper
