// Shared by the microbenchmarks: each kernel writes one clock64 total per (CTA, warpgroup) into
// d_cycles[block * 2 + warpgroup]; this copies them back, frees the buffers and returns the
// median over the CTAs' first `warpgroups` warpgroups.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <vector>

inline double median_cycles(long long* d_cycles, float* d_sink, int blocks, int warpgroups) {
  std::vector<long long> c(blocks * 2);
  cudaMemcpy(c.data(), d_cycles, sizeof(long long) * blocks * 2, cudaMemcpyDeviceToHost);
  cudaFree(d_cycles);
  cudaFree(d_sink);
  std::vector<long long> v;
  for (int b = 0; b < blocks; ++b)
    for (int w = 0; w < warpgroups; ++w) v.push_back(c[b * 2 + w]);
  std::sort(v.begin(), v.end());
  return double(v[v.size() / 2]);
}
