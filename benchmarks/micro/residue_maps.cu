// Probe: an odd-pitched K-major operand through TMA without a re-pitch copy (benchmarks/NOTES.md,
// state after 2026-12-01, item (3)). A row-major bf16 matrix (M rows x K, K contiguous) whose line
// pitch K * 2 B is not a multiple of 16 B has no tensor map (cuTensorMapEncodeTiled: strides are
// multiples of 16 B), which is why the dispatcher re-pitches such operands first. Rows 8 apart are
// 16 K bytes apart, always a multiple of 16, so eight maps can cover the matrix: map j (j = 0..7)
// holds rows j, j + 8, j + 16, ..., its base is row j's address rounded down to 16 B and the
// remainder, (K j) mod 8 elements, is added to the inner coordinate. A 64-row tile is then 8 boxes
// of 8 rows x 64 elements, box j into shared rows 8 j .. 8 j + 7: shared row 8 j + i holds tile row
// 8 i + j (the tile's rows transposed 8 x 8).
// This checks that the driver encodes such maps, that every element arrives where that layout says
// (de-swizzled on the device; zeros past K), and times operand delivery alone (no math) by 64-row
// tiles through the 8 maps against one map over the same matrix re-pitched to a 128-B multiple.
// Each timed call follows a 256 MB memset (triton do_bench's L2 flush); us = median of 25.
// Found on an H200 (2026-12-01, benchmarks/results/h200_2026-12-01_ab.txt): the driver encodes
// the maps, and map 0 (row 0's base is aligned, so no inner offset) loads without error, but every
// map whose inner start coordinate is not a multiple of 8 elements (16 B) stops the kernel with an
// illegal instruction at its first cp.async.bulk.tensor (1000 x 999: maps 1 and 2; 1000 x 1004, 4
// elements off: map 1; maps whose offset is 0 run). So a box must start on a 16-B boundary of its
// row, and this way round the re-pitch copy is closed: nothing here reaches the timing lines for an
// odd K. `residue_maps J K` loads only map J of a 1000 x K matrix (one process per try: the fault
// ends the context). The one-map path checked 1024000 of 1024000 elements at 1000 x 999.
// Build and run: bash benchmarks/micro/run_residue_maps.sh (H100/H200).
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "../../csrc/kittens/hopper/gl.cuh"
#include "../../csrc/kittens/hopper/mbarrier.cuh"
#include "../../csrc/kittens/hopper/tma.cuh"
#include "flush_timer.cuh"

using namespace kittens::hopper;

struct Maps {
  CUtensorMap m[8];
  int shift[8];  // inner-coordinate offset of each map, elements
};

// NB = 8: the residue maps (box j from maps.m[j]); NB = 1: one 64-row box from maps.m[0].
// out != nullptr: the consumers write every loaded element back, de-swizzled, at its source
// position (out has pitch ldo = k tiles x 64), for the host to compare.
template <int NB, int S>
__global__ void __launch_bounds__(160, 1)
    residue_stream(const __grid_constant__ Maps maps, int ktiles, int rows, uint16_t* out, int ldo, unsigned* sink,
                   int only = -1) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  constexpr int kStage = 64 * 128;  // 64 rows x 128 B
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + S * kStage);
  uint64_t* empty = full + S;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = int(blockIdx.x) * 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 4);
    mbar_init_fence();
  }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      for (int j = 0; j < NB; ++j) tma_prefetch_desc(&maps.m[j]);
      for (uint32_t t = 0; t < uint32_t(ktiles); ++t) {
        const uint32_t s = t % S;
        mbar_wait(&empty[s], ((t / S) & 1) ^ 1);
        mbar_arrive_expect_tx(&full[s], only >= 0 ? 1024 : kStage);  // boxes past M or K are zero-filled: full bytes
        uint8_t* dst = smem + s * kStage;
        const int k = int(t) * 64;
        if constexpr (NB == 8) {
#pragma unroll
          for (int j = 0; j < 8; ++j)
            if (only < 0 || only == j) tma_load_2d(dst + j * 1024, &maps.m[j], &full[s], maps.shift[j] + k, r0 / 8);
        } else {
          tma_load_2d(dst, &maps.m[0], &full[s], k, r0);
        }
      }
    }
  } else {
    unsigned acc = 0;
    const int c = threadIdx.x - 32;  // 0..127 consumer threads
    for (uint32_t t = 0; t < uint32_t(ktiles); ++t) {
      const uint32_t s = t % S;
      mbar_wait(&full[s], (t / S) & 1);
      const uint8_t* st = smem + s * kStage;
      acc += reinterpret_cast<const unsigned*>(st)[c];
      if (out != nullptr) {  // 64 rows x 8 chunks of 16 B: 4 chunks per thread
        for (int q = c; q < 512; q += 128) {
          const int srow = q / 8, chunk = q % 8;
          const uint4 v = *reinterpret_cast<const uint4*>(st + srow * 128 + ((chunk ^ (srow % 8)) * 16));
          const int row = NB == 8 ? r0 + 8 * (srow % 8) + srow / 8 : r0 + srow;
          if (row < rows) *reinterpret_cast<uint4*>(out + size_t(row) * ldo + t * 64 + chunk * 8) = v;
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;  // keeps the reads
  }
}

// The 8 residue maps of a row-major M x K bf16 matrix at `a` (pitch K elements). Returns the first
// failing CUresult, or 0.
static int residue_maps(Maps* maps, const uint16_t* a, int M, int K) {
  for (int j = 0; j < 8; ++j) {
    const uintptr_t row = reinterpret_cast<uintptr_t>(a) + uintptr_t(j) * K * 2, base = row & ~uintptr_t(15);
    maps->shift[j] = int((row - base) / 2);
    const gl2d g{reinterpret_cast<const void*>(base), uint64_t(maps->shift[j] + K),
                 uint64_t(M > j ? (M - j + 7) / 8 : 1), uint64_t(8) * K, 2};
    const int rc = make_tma_desc(&maps->m[j], g, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, 8);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return 0;
}

template <int NB>
static void launch(const Maps& maps, int M, int K, uint16_t* out, int ldo, int only = -1) {
  constexpr int S = 8;
  auto kern = residue_stream<NB, S>;
  const int smem = S * 64 * 128 + 2 * S * 8 + 1024;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kern<<<(M + 63) / 64, 160, smem>>>(maps, (K + 63) / 64, M, out, ldo, g_sink, only);
}

static void probe(int M, int K) {  // M >= 8 (every map holds a row)
  const int kt = (K + 63) / 64, ldo = kt * 64, ldp = (K + 63) / 64 * 64;  // ldp: the re-pitched copy's pitch
  uint16_t *a, *p, *out;
  CK(cudaMalloc(&a, size_t(M) * K * 2 + 64));
  CK(cudaMalloc(&p, size_t(M) * ldp * 2));
  CK(cudaMalloc(&out, size_t(M) * ldo * 2));
  fill_kernel<<<1024, 256>>>(a, size_t(M) * K);
  CK(cudaMemcpy2D(p, size_t(ldp) * 2, a, size_t(K) * 2, size_t(K) * 2, M, cudaMemcpyDeviceToDevice));
  Maps rm{}, pm{};
  const int rc = residue_maps(&rm, a, M, K);
  if (rc != 0) {
    std::printf("%5dx%-5d residue maps: cuTensorMapEncodeTiled refused (CUresult %d)\n", M, K, rc);
    return;
  }
  const gl2d gp{p, uint64_t(K), uint64_t(M), uint64_t(ldp), 2};
  if (make_tma_desc(&pm.m[0], gp, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, 64) != CUDA_SUCCESS) std::exit(1);
  // correctness: poison, load, compare every element (zeros past K in the last k tile)
  std::vector<uint16_t> ha(size_t(M) * K), ho(size_t(M) * ldo);
  CK(cudaMemcpy(ha.data(), a, ha.size() * 2, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (int nb : {1, 8}) {
    CK(cudaMemset(out, 0xff, size_t(M) * ldo * 2));
    if (nb == 8) launch<8>(rm, M, K, out, ldo);
    else launch<1>(pm, M, K, out, ldo);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("%5dx%-5d %s: %s\n", M, K, nb == 8 ? "8 residue maps" : "one map", cudaGetErrorString(e));
      std::exit(1);
    }
    CK(cudaMemcpy(ho.data(), out, ho.size() * 2, cudaMemcpyDeviceToHost));
    size_t b = 0;
    for (int r = 0; r < M; ++r)
      for (int k = 0; k < ldo; ++k) b += ho[size_t(r) * ldo + k] != (k < K ? ha[size_t(r) * K + k] : 0);
    std::printf("%5dx%-5d %s: %zu of %zu elements wrong\n", M, K, nb == 8 ? "8 residue maps (odd pitch)   " : "one map (re-pitched copy)   ",
                b, ho.size());
    bad += b;
  }
  const double t8 = time_us([&] { launch<8>(rm, M, K, nullptr, 0); });
  const double t1 = time_us([&] { launch<1>(pm, M, K, nullptr, 0); });
  const double mb = double(M) * K * 2 * 1e-6;
  std::printf("%5dx%-5d delivery after the flush, %d CTAs: residue maps %8.2f us (%5.0f GB/s), re-pitched one map %8.2f us "
              "(%5.0f GB/s)%s\n",
              M, K, (M + 63) / 64, t8, mb / t8 * 1e3, t1, mb / t1 * 1e3, bad ? "  MISMATCH" : "");
  CK(cudaFree(a));
  CK(cudaFree(p));
  CK(cudaFree(out));
}

int main(int argc, char** argv) {
  micro_init();
  if (argc > 2) {  // `only J K`: load only residue map J of a 1000 x K matrix (which map / coordinate the TMA refuses)
    const int j = std::atoi(argv[1]), K = std::atoi(argv[2]);
    uint16_t* a;
    CK(cudaMalloc(&a, size_t(1000) * K * 2 + 64));
    Maps rm{};
    const int rc = residue_maps(&rm, a, 1000, K);
    std::printf("only map %d, K %d: encode %d, inner offset %d elements: ", j, K, rc, rm.shift[j]);
    launch<8>(rm, 1000, K, nullptr, 0, j);
    std::printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
  }
  // the unaligned suite's odd K (benchmarks/bench_gemm.py), plus M tails of a row tile
  const int shapes[][2] = {{1000, 999}, {1001, 1001}, {4095, 4095}, {4097, 4097}, {8191, 8191}, {8192, 8191}, {37, 77}};
  for (const auto& s : shapes) probe(s[0], s[1]);
  return 0;
}
