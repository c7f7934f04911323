// Host+device qualifiers and small integer helpers shared by every backend.
#pragma once
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define TK_HD __host__ __device__ __forceinline__
#else
#define TK_HD inline
#endif

namespace kittens {

TK_HD constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
TK_HD constexpr int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

}  // namespace kittens
