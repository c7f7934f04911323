// Skinny (decode-shape) GEMM: out[M, N] = alpha * X[M, K] . W[N, K]^T + beta * C for M <= 16,
// X and W both K-contiguous (F.linear's layout). Bound by streaming W from HBM, so each weight
// byte is loaded once, 16 B per lane, straight into mma.sync fragments (no shared-memory
// staging); the few token rows are re-read from L2.
//
// CTA: ROWS = 16*RM weight rows x all M tokens (8*TN columns). Its WARPS warps share the rows and
// split K: warp w takes the 32-wide K chunks w, w + WARPS, ... (together the warps read each row
// as consecutive 512-B runs). Per chunk a lane loads one 16-B vector per weight row and per
// token row (kittens::skinny_chunk_k gives the K order; the same order for both operands keeps
// the dot products exact) and issues 2 * RM * TN mma.m16n8k16. The warps' fp32 sums meet in
// shared memory and are added in warp order: results are bitwise deterministic.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <type_traits>
#include "../../kittens/common/fragments.h"
#include "convert.cuh"

namespace tk::hopper::skinny {

template <typename OutT>
struct Args {
  const void* x;  // M x K, k contiguous, line pitch ldx (16-B aligned base and pitch)
  int64_t ldx;
  const void* w;  // N x K, k contiguous, line pitch ldw (16-B aligned base and pitch)
  int64_t ldw;
  int M, N, K;
  OutT* out;      // M x N row-major, contiguous
  const OutT* c;  // nullptr: no C term; else read at c[m * c_s0 + n * c_s1]
  int64_t c_s0, c_s1;
  float alpha, beta;
};

// Weight loads (SkinnyPlan::load): read once, so kept out of L1 (ld.global.nc.L1::no_allocate);
// kLoadPrefetch also has L2 fetch the 256 B around each 16-B access (.L2::256B; a warp's step
// touches 64 B of each of 16 rows, the other warps the rest later: H200 +2-5%, benchmarks/NOTES.md;
// an L2 evict_first policy on top measured no faster and was dropped).
constexpr int kLoadPlain = 0, kLoadPrefetch = 1;
template <int LOAD>
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 v;
  if constexpr (LOAD == kLoadPlain)
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 load_cached(const void* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

// The 8 elements line[k .. k+7], zero beyond K (the last, partial chunk).
__device__ __forceinline__ uint4 load_tail(const void* line, int k, int K) {
  const uint16_t* e = static_cast<const uint16_t*>(line);
  if (k + 8 <= K) return load_cached(e + k);
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = k + 2 * i < K ? e[k + 2 * i] : 0u, hi = k + 2 * i + 1 < K ? e[k + 2 * i + 1] : 0u;
    w[i] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// One 32-wide K chunk: wv[i][h] = weight row 16i + 8h + g, xv[j] = token row 8j + g, each the
// lane's vector k = 8q..8q+7. Step s uses words 2s, 2s+1 (kittens::skinny_chunk_k): A registers
// {row g: word 2s, row g+8: word 2s, row g: word 2s+1, row g+8: word 2s+1}, B {2s, 2s+1}.
template <typename T, int RM, int TN>
__device__ __forceinline__ void chunk_mma(float (&acc)[RM][TN][4], const uint4 (&wv)[RM][2], const uint4 (&xv)[TN]) {
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j)
        mma16816<T>(acc[i][j], word(wv[i][0], 2 * s), word(wv[i][1], 2 * s), word(wv[i][0], 2 * s + 1),
                    word(wv[i][1], 2 * s + 1), word(xv[j], 2 * s), word(xv[j], 2 * s + 1));
}

template <typename T, typename OutT, int RM, int TN, int WARPS, int LOAD>
__global__ void __launch_bounds__(WARPS * 32) skinny_kernel(const Args<OutT> p) {
  constexpr int ROWS = 16 * RM, COLS = 8 * TN, LD = COLS + 1;  // +1: conflict-free reduction reads
  constexpr int VECS = 2 * RM + TN, U = VECS <= 6 ? 4 : 2;     // chunks in flight per lane
  __shared__ float red[WARPS][ROWS][LD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int row0 = blockIdx.x * ROWS;
  // A programmatic dependent launch (GemmArgs::dependent) waits here for the previous grid; a
  // plain launch returns at once.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // Rows past N / tokens past M read a valid row (the last) and are never stored.
  const uint16_t* wl[RM][2];
  const uint16_t* xl[TN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      wl[i][h] = static_cast<const uint16_t*>(p.w) + int64_t(min(row0 + 16 * i + 8 * h + g, p.N - 1)) * p.ldw;
#pragma unroll
  for (int j = 0; j < TN; ++j) xl[j] = static_cast<const uint16_t*>(p.x) + int64_t(min(8 * j + g, p.M - 1)) * p.ldx;

  float acc[RM][TN][4];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  const int full = p.K / 32;
  int c = warp;
  for (; c + (U - 1) * WARPS < full; c += U * WARPS) {
    uint4 wv[U][RM][2], xv[U][TN];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = (c + u * WARPS) * 32 + 8 * q;
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) wv[u][i][h] = load_stream<LOAD>(wl[i][h] + k);
#pragma unroll
      for (int j = 0; j < TN; ++j) xv[u][j] = load_cached(xl[j] + k);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) chunk_mma<T, RM, TN>(acc, wv[u], xv[u]);
  }
  for (; c < full; c += WARPS) {
    const int k = c * 32 + 8 * q;
    uint4 wv[RM][2], xv[TN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) wv[i][h] = load_stream<LOAD>(wl[i][h] + k);
#pragma unroll
    for (int j = 0; j < TN; ++j) xv[j] = load_cached(xl[j] + k);
    chunk_mma<T, RM, TN>(acc, wv, xv);
  }
  if (p.K % 32 != 0 && warp == full % WARPS) {  // the partial chunk, zero-filled past K
    const int k = full * 32 + 8 * q;
    uint4 wv[RM][2], xv[TN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) wv[i][h] = load_tail(wl[i][h], k, p.K);
#pragma unroll
    for (int j = 0; j < TN; ++j) xv[j] = load_tail(xl[j], k, p.K);
    chunk_mma<T, RM, TN>(acc, wv, xv);
  }

#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const kittens::RowCol rc = kittens::mma16816_c_coord(lane, r);
        red[warp][16 * i + rc.row][8 * j + rc.col] = acc[i][j][r];
      }
  __syncthreads();
  // Consecutive threads take consecutive n of one token: coalesced output rows.
  for (int idx = threadIdx.x; idx < ROWS * COLS; idx += WARPS * 32) {
    const int m = idx / ROWS, nl = idx % ROWS, n = row0 + nl;
    if (m >= p.M || n >= p.N) continue;
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) sum += red[w][nl][m];
    float v = p.alpha * sum;
    if (p.c != nullptr) v += p.beta * to_f32(p.c[m * p.c_s0 + n * p.c_s1]);
    p.out[int64_t(m) * p.N + n] = from_f32<OutT>(v);
  }
}

}  // namespace tk::hopper::skinny
