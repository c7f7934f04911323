// Shared by the TMA delivery microbenchmarks (tma_stream.cu, residue_maps.cu): an error check, a
// nonzero fill, and a timer that runs each call after a 256 MB memset, as triton's do_bench
// flushes L2 (leaving it full of dirty lines); median of `reps` cudaEvent intervals, in us.
// TK_MICRO_L2=clean: the memset is followed by a 256 MB read (as benchmarks/l2_state.py's clean
// state), so the call starts with an L2 of clean lines: no write-back of the flush's dirt.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

inline uint8_t* g_flush = nullptr;
inline constexpr size_t kFlushBytes = 256ull << 20;
inline unsigned* g_sink = nullptr;  // 4096 words that kernels write only to keep their reads

inline void micro_init() {
  CK(cudaMalloc(&g_flush, kFlushBytes));
  CK(cudaMalloc(&g_sink, 4096 * sizeof(unsigned)));
}

// Finite bf16 values, never zero (as tma_stream.cu had them).
__global__ void fill_kernel(uint16_t* w, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u;
    h ^= h >> 15;
    w[i] = uint16_t(0x3c00 | (h & 0x3ff));  // the exponent bits alone make it nonzero
  }
}

// Every thread reads 16-B vectors, grid-stride: tma_stream.cu's plain-load reference, and the clean
// flush's read of the flush buffer (its lines replace the memset's dirty ones).
__global__ void ldg_kernel(const uint4* w, size_t n16, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(w + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

inline bool l2_clean() {
  const char* e = std::getenv("TK_MICRO_L2");
  return e != nullptr && std::string(e) == "clean";
}

template <class F>
double time_us(F&& launch, int reps = 25) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> v;
  const bool clean = l2_clean();
  for (int r = 0; r < reps + 3; ++r) {
    CK(cudaMemsetAsync(g_flush, 0, kFlushBytes));
    if (clean) ldg_kernel<<<132 * 8, 512>>>(reinterpret_cast<const uint4*>(g_flush), kFlushBytes / 16, g_sink);
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 3) v.push_back(ms * 1000.f);
  }
  CK(cudaGetLastError());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
