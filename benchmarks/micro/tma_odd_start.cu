// Does a TMA *load* accept a box whose inner start is not 16-B aligned?
// 2026-11-27c found that a TMA store faults there (UTMASTG at inner coordinate 1001 of a bf16
// super-line map: `results/h200_2026-11-27c_octet_store_probe.txt`) and inferred the same for loads
// without running one. A load that works would let odd-pitch operands (K = 999) be read without the
// re-pitch copy, through a map of 8-row super-lines: dims {8P, rows/8}, line stride 16P bytes
// (a multiple of 16 for any P), box {64, 8}; the box at inner coordinate j*P + k0 holds rows
// j, j+8, ..., j+56 of a 64-row tile, columns k0..k0+63.
// The PTX ISA (5.5.3.1, tiled mode, Bounding Box) already says no: a bounding box's address must be
// aligned to 16 bytes, for loads as for stores. This probe confirms it on the hardware (expected:
// "ok" for j = 0 and P = 1024, a fault or wrong data at odd-P starts with j > 0).
// Usage: tma_odd_start P K0 J SWIZZLE(0/1)  -- one load, one process (a fault is sticky);
// prints "ok", "MISMATCH (n wrong)" or the CUDA error. run_tma_odd_start.sh loops over cases.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "../../csrc/kittens/hopper/gl.cuh"
#include "../../csrc/kittens/hopper/mbarrier.cuh"
#include "../../csrc/kittens/hopper/tma.cuh"
#include "flush_timer.cuh"  // CK

using namespace kittens::hopper;

__global__ void load_one(const __grid_constant__ CUtensorMap map, int inner, uint16_t* out, int* status) {
  __shared__ alignas(1024) uint16_t tile[8 * 64];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    mbar_init_fence();
    mbar_arrive_expect_tx(&bar, sizeof(tile));
    tma_load_2d(tile, &map, &bar, inner, 0);
    // bounded wait: a refused box that neither faults nor completes must not hang the probe
    bool done = false;
    for (long long t0 = clock64(); !done && clock64() - t0 < 2000000000ll;) done = mbar_test(&bar, 0);
    *status = done ? 1 : 2;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 8 * 64; i += blockDim.x) out[i] = tile[i];
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::printf("usage: tma_odd_start P K0 J SWIZZLE\n");
    return 2;
  }
  const int P = std::atoi(argv[1]), k0 = std::atoi(argv[2]), j = std::atoi(argv[3]), sw = std::atoi(argv[4]);
  const int rows = 64, n = rows * P;
  std::vector<uint16_t> host(n);
  for (int i = 0; i < n; ++i) host[i] = uint16_t(i * 7 + 1);  // distinct mod 2^16 for n < 65536
  uint16_t *src, *out;
  int* status;
  CK(cudaMalloc(&src, size_t(n) * 2 + 256));
  CK(cudaMalloc(&out, 8 * 64 * 2));
  CK(cudaMalloc(&status, 4));
  CK(cudaMemcpy(src, host.data(), size_t(n) * 2, cudaMemcpyHostToDevice));
  CK(cudaMemset(out, 0xff, 8 * 64 * 2));
  CK(cudaMemset(status, 0, 4));
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(8) * P, cuuint64_t(rows / 8)};
  const cuuint64_t strides[1] = {cuuint64_t(16) * P};
  const cuuint32_t box[2] = {64, 8}, estr[2] = {1, 1};
  const int rc = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, src, dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      sw ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  const int inner = j * P + k0;
  std::printf("P=%d k0=%d j=%d swizzle=%d inner=%d (byte offset mod 16 = %d): ", P, k0, j, sw, inner, (inner * 2) % 16);
  if (rc != CUDA_SUCCESS) {
    std::printf("encode failed (%d)\n", rc);
    return 1;
  }
  load_one<<<1, 128>>>(map, inner, out, status);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  int st = 0;
  std::vector<uint16_t> got(8 * 64);
  CK(cudaMemcpy(&st, status, 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(got.data(), out, got.size() * 2, cudaMemcpyDeviceToHost));
  if (st != 1) {
    std::printf("TIMEOUT (the barrier never completed)\n");
    return 1;
  }
  int wrong = 0;
  for (int i = 0; i < 8; ++i)      // smem line i holds super-line i: tile row j + 8 i
    for (int c = 0; c < 64; ++c) {  // 16-B chunk c/8 of line i lands at chunk (c/8) ^ (i % 8) when swizzled
      const int pos = i * 64 + (sw ? (((c / 8) ^ (i % 8)) * 8 + c % 8) : c);
      const uint16_t want = uint16_t(((j + 8 * i) * P + k0 + c) * 7 + 1);
      wrong += got[pos] != want;
    }
  std::printf(wrong ? "MISMATCH (%d of 512 wrong)\n" : "ok\n", wrong);
  return wrong ? 1 : 0;
}
