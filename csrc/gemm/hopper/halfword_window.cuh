// The 16 bytes that start at 16-bit element h (0..7) of a 32-byte window held as 8 words (w[0]
// the lowest): how two aligned 16-B vectors are joined into one at a 2-B offset, by the re-pitch
// copy (pad_copy.cu) and the staged copy-out of rows that are not 16-B aligned (epilogue.cuh).
// Word j is w[h / 2 + j], or for odd h the funnel shift of it and the next word by 16 bits
// (element 2k is the low half of w[k]). A switch on h / 2 keeps every register index constant:
// indexing w at run time would put it in local memory.
#pragma once
#include <cstdint>

namespace tk::hopper {

template <int WS>
__device__ __forceinline__ uint4 halfword_window_at(const uint32_t (&w)[8], bool half) {
  uint32_t o[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) o[j] = half ? __funnelshift_r(w[WS + j], w[WS + j + 1], 16) : w[WS + j];
  return make_uint4(o[0], o[1], o[2], o[3]);
}

__device__ __forceinline__ uint4 halfword_window(const uint32_t (&w)[8], int h) {
  const bool half = (h & 1) != 0;
  switch (h >> 1) {
    case 0: return halfword_window_at<0>(w, half);
    case 1: return halfword_window_at<1>(w, half);
    case 2: return halfword_window_at<2>(w, half);
    default: return halfword_window_at<3>(w, half);
  }
}

}  // namespace tk::hopper
