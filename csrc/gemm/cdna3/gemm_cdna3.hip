// CDNA3 (gfx942) GEMM kernel: out = alpha * A @ B + beta * C, bf16/fp16 in, fp32 accumulate.
//
// Block tile 256 x 256 x 64, 512 threads = 8 waves in a 2 x 4 grid, each wave owning a
// 128 x 64 sub-tile (8 x 4 MFMA 16x16x16 tiles, 128 fp32 accumulators per lane).
// Pipeline: one LDS stage (A 32 KiB + B 32 KiB = 64 KiB) plus a register prefetch (the buffer
// loads of tile k+1 are in flight while tile k is read and multiplied), scheduled as an 8-wave
// ping-pong: wave rows 0 and 1 run the same 10-phase sequence per k tile one barrier apart, so
// the two waves sharing a SIMD alternate memory work and MFMA (config.h, proven on the host).
// Tails: buffer descriptors clipped at the matrix end (no faults, zeros beyond); k >= K is
// zeroed explicitly in the last k tile; rows/columns >= M/N only reach masked-off outputs.
#pragma once
#include "config.h"
#include "../../kittens/cdna3/buffer.cuh"
#include "../../kittens/cdna3/lds.cuh"
#include "../../kittens/cdna3/sync.cuh"

namespace tk::cdna3 {

namespace kc = kittens::cdna3;
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));

struct GemmParams {
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  int M, N, K;
  void* out;
  const void* c;
  int64_t c_s0, c_s1;
  float alpha, beta;
};

// One MFMA on the 4-element half of two 16-B fragments.
template <bool kF16>
__device__ __forceinline__ f32x4 mfma16(kc::u32x2 a, kc::u32x2 b, f32x4 acc) {
  if constexpr (kF16) {
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  } else {
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(i16x4, a), __builtin_bit_cast(i16x4, b), acc, 0, 0, 0);
  }
}

__device__ __forceinline__ unsigned half16(kc::u32x4 v, int e) {
  return (v[e >> 1] >> (16 * (e & 1))) & 0xffffu;
}

// Global -> registers -> LDS mover of one 256 x 64 operand tile (A: rows = M, B: rows = N).
template <bool kMn>
struct Operand {
  const unsigned short* base;
  int64_t ld;
  int rows, K, tid;
  kc::u32x4 regs[kc::kKLoads];

  __device__ __forceinline__ void load(int row0, int k0) {
    const __amdgpu_buffer_rsrc_t r =
        kc::make_rsrc(base + operand_first(kMn, ld, row0, k0), operand_bytes(kMn, ld, rows, K, row0, k0));
#pragma unroll
    for (int i = 0; i < kc::kKLoads; ++i) regs[i] = kc::buffer_load_16(r, operand_voff(kMn, ld, tid, i));
  }

  // Zero k >= K (only the last k tile can hold such k).
  __device__ __forceinline__ void mask_k(int k0) {
    if (k0 + BK <= K) return;
    if constexpr (kMn) {
      const kc::MnBlock b = kc::mnmajor_block(tid);
#pragma unroll
      for (int r = 0; r < 4; ++r)
        if (k0 + 4 * b.kb + r >= K) regs[r] = kc::u32x4{0, 0, 0, 0};
    } else {
#pragma unroll
      for (int i = 0; i < kc::kKLoads; ++i) {
        const int kfirst = k0 + kc::kmajor_chunk(tid, i).k8;
#pragma unroll
        for (int d = 0; d < 4; ++d) {
          const unsigned keep = (kfirst + 2 * d < K ? 0xffffu : 0u) | (kfirst + 2 * d + 1 < K ? 0xffff0000u : 0u);
          regs[i][d] &= keep;
        }
      }
    }
  }

  __device__ __forceinline__ void store(char* tile) const {
    if constexpr (kMn) {
      const kc::MnBlock b = kc::mnmajor_block(tid);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const kc::u32x2 v{half16(regs[0], e) | (half16(regs[1], e) << 16), half16(regs[2], e) | (half16(regs[3], e) << 16)};
        kc::lds_write_8(tile, kc::lds_offset(8 * b.mb + e, 4 * b.kb), v);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kc::kKLoads; ++i) {
        const kc::KChunk c = kc::kmajor_chunk(tid, i);
        kc::lds_write_16(tile, kc::lds_offset(c.row, c.k8), regs[i]);
      }
    }
  }
};

// Fragments of one read phase (config.h schedule): chunk c, row half ih -> 4 A fragments (row
// tiles 4 ih .. 4 ih + 3) and 4 B fragments (all column tiles), one ds_read_b128 each (8 k).
// Read addresses: 4 A + 4 B per-lane bases; row tile i + 4 is +64 rows (swizzle.h: +8192 B,
// same swizzle) and chunk 1 is base ^ 64 (k + 32 flips granule bit 2); both identities are
// checked on the host.
struct Frags {
  kc::u32x4 a[TM / 2];
  kc::u32x4 b[TN];
};
__device__ __forceinline__ void read_frags(Frags& f, const char* As, const char* Bs, int c, int ih,
                                           const int (&a_base)[TM / 2], const int (&b_base)[TN]) {
#pragma unroll
  for (int i = 0; i < TM / 2; ++i) f.a[i] = kc::lds_read_16(As + ih * kc::kRow64Bytes, a_base[i] ^ (c * kc::kChunkXor));
#pragma unroll
  for (int j = 0; j < TN; ++j) f.b[j] = kc::lds_read_16(Bs, b_base[j] ^ (c * kc::kChunkXor));
}

// The 32 MFMAs of one read (half h = k 4h .. 4h + 3 of each 16-B fragment) into the
// accumulators of row half ih, at raised wave priority (the SIMD's other wave does memory work).
template <bool kF16>
__device__ __forceinline__ void mma_frags(f32x4 (&acc)[TM][TN], const Frags& f, int ih) {
  kc::set_prio(1);
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < TM / 2; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const kc::u32x2 a{f.a[i][2 * h], f.a[i][2 * h + 1]}, b{f.b[j][2 * h], f.b[j][2 * h + 1]};
        f32x4& d = acc[ih * TM / 2 + i][j];
        d = mfma16<kF16>(a, b, d);
      }
  kc::set_prio(0);
}

// End of a ping-pong phase: this wave's LDS accesses are complete (lgkmcnt(0)), then s_barrier;
// sched_fence keeps the compiler from moving work between phases.
__device__ __forceinline__ void phase_end() {
  kc::sched_fence();
  kc::lds_barrier();
  kc::sched_fence();
}

template <bool kF16>
__device__ __forceinline__ float in_to_f32(unsigned short v) {
  if constexpr (kF16) return (float)__builtin_bit_cast(_Float16, v);
  else return __builtin_bit_cast(float, (unsigned)v << 16);
}
template <bool kF16>
__device__ __forceinline__ unsigned short f32_to_in(float f) {
  if constexpr (kF16) {
    return __builtin_bit_cast(unsigned short, (_Float16)f);
  } else {
    const unsigned u = __builtin_bit_cast(unsigned, f);
    const unsigned rne = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;       // RNE
    const unsigned qnan = (u >> 16) | 0x40u;                            // quiet NaN
    return (unsigned short)((u & 0x7fffffffu) > 0x7f800000u ? qnan : rne);  // select, no branch
  }
}

// Epilogue: out = alpha * acc + beta * C, one 16-row tile (16 values per lane) at a time.
// - Per row tile a wave-uniform buffer descriptor starts at the tile's first element and ends at
//   the matrix end; masked elements (row >= M or col >= N) use offset kc::kOobOffset (a select,
//   not a branch), which the buffer unit drops on store and reads as 0 on load (launcher: valid
//   offsets < 2^31). Offsets are a per-lane base + per-(r, j) step (config.h epi_*).
// - Register pressure (the kernel sits at 128 VGPR + 128 AGPR): each accumulator tile is read as
//   a whole vector through an empty asm with an "a" (AGPR) operand. That keeps the loop-exit
//   value a vector in the AGPRs (InstCombine would otherwise scalarise the exit PHI into 128
//   float PHIs of VGPR class, all live at the loop exit: the former 32 B spill) and moves the
//   values to VGPRs only where this tile needs them.
// - C is handled by a wave-uniform branch per row tile around its 16 loads, so the values that
//   cross blocks are this tile's 16 floats, never the accumulators.
template <bool kF16, bool kOutF32>
__device__ __forceinline__ void epilogue(const GemmParams& p, f32x4 (&acc)[TM][TN], int w, int lane, int m0, int n0) {
  using OutT = typename std::conditional<kOutF32, float, unsigned short>::type;
  constexpr int kOutBytes = sizeof(OutT);
  const int wrow = epi_wave_row(w), wcol = epi_wave_col(w);
  const int lrow = epi_lane_row(lane), lcol = epi_lane_col(lane);
  const int cols_left = p.N - (n0 + wcol);  // columns of this wave's 64 that exist: col < cols_left
  const uint32_t o_lane = epi_out_lane_off(lane, p.N);
  const uint32_t c_lane = epi_c_lane_off(lane, p.c_s0, p.c_s1);
  const bool has_c = p.c != nullptr;
  const int64_t c_end = (int64_t)(p.M - 1) * p.c_s0 + (int64_t)(p.N - 1) * p.c_s1 + 1;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row0 = m0 + wrow + 16 * i;  // wave-uniform
    const int rows_left = p.M - row0;
    float v[TN][4];
    bool ok[TN][4];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      f32x4 a = acc[i][j];
      asm volatile("" : "+a"(a));
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        v[j][r] = p.alpha * a[r];
        ok[j][r] = lrow + r < rows_left && lcol + 16 * j < cols_left;
      }
    }
    if (has_c) {  // wave-uniform
      const int64_t c_first = (int64_t)row0 * p.c_s0 + (int64_t)(n0 + wcol) * p.c_s1;
      const __amdgpu_buffer_rsrc_t rc =
          kc::make_rsrc(static_cast<const char*>(p.c) + c_first * kOutBytes, (c_end - c_first) * kOutBytes);
#pragma unroll
      for (int j = 0; j < TN; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const uint32_t craw = (c_lane + epi_c_step(r, j, p.c_s0, p.c_s1)) * kOutBytes;  // computed unconditionally:
          const uint32_t coff = ok[j][r] ? craw : kc::kOobOffset;                             // a select, not a branch
          if constexpr (kOutF32) v[j][r] += p.beta * __builtin_bit_cast(float, __builtin_amdgcn_raw_buffer_load_b32(rc, coff, 0, 0));
          else v[j][r] += p.beta * in_to_f32<kF16>(__builtin_amdgcn_raw_buffer_load_b16(rc, coff, 0, 0));
        }
    }
    const int64_t o_first = (int64_t)row0 * p.N + (n0 + wcol);
    const __amdgpu_buffer_rsrc_t ro =
        kc::make_rsrc(static_cast<char*>(p.out) + o_first * kOutBytes, ((int64_t)p.M * p.N - o_first) * kOutBytes);
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const uint32_t oraw = (o_lane + epi_out_step(r, j, p.N)) * kOutBytes;
        const uint32_t off = ok[j][r] ? oraw : kc::kOobOffset;
        if constexpr (kOutF32) __builtin_amdgcn_raw_buffer_store_b32(__builtin_bit_cast(unsigned, v[j][r]), ro, off, 0, 0);
        else __builtin_amdgcn_raw_buffer_store_b16(f32_to_in<kF16>(v[j][r]), ro, off, 0, 0);
      }
  }
}

template <bool kF16, bool kOutF32, bool kAMn, bool kBMn>
__global__ __attribute__((amdgpu_flat_work_group_size(THREADS, THREADS), amdgpu_waves_per_eu(2)))
void gemm_cdna3_kernel(GemmParams p) {
  __shared__ __attribute__((aligned(16))) char smem[LDS_BYTES];
  char* As = smem;
  char* Bs = smem + LDS_TILE_BYTES;
  const int tid = threadIdx.x, w = tid / 64, lane = tid % 64;
  const int tiles_m = kittens::ceil_div(p.M, BM), tiles_n = kittens::ceil_div(p.N, BN);
  const kittens::TileCoord t = kc::block_tile(blockIdx.x, tiles_m, tiles_n, GROUP_M);
  const int m0 = t.m * BM, n0 = t.n * BN;

  Operand<kAMn> A{static_cast<const unsigned short*>(p.a), p.lda, p.M, p.K, tid, {}};
  Operand<kBMn> B{static_cast<const unsigned short*>(p.b), p.ldb, p.N, p.K, tid, {}};
  f32x4 acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = f32x4{0.f, 0.f, 0.f, 0.f};

  int a_base[TM / 2], b_base[TN];  // chunk-0 LDS read offsets (see read_frags)
#pragma unroll
  for (int i = 0; i < TM / 2; ++i) a_base[i] = kc::lds_offset(a_frag_row(w, i, lane), kc::frag_read_k(lane, 0));
#pragma unroll
  for (int j = 0; j < TN; ++j) b_base[j] = kc::lds_offset(b_frag_col(w, j, lane), kc::frag_read_k(lane, 0));

  // 8-wave ping-pong (config.h: phase_kind / phase_slot, proven on the host): group 1 runs one
  // barrier slot behind group 0, so on every SIMD one wave does memory work while the other
  // runs MFMA. Every wave executes the same number of barriers.
  const int ktiles = kittens::ceil_div(p.K, BK);
  A.load(m0, 0);
  B.load(n0, 0);
  if (ping_pong_group(w) == 1) kc::lds_barrier();  // stagger: group 1 one slot behind
#pragma clang loop unroll(disable)
  for (int kt = 0; kt < ktiles; ++kt) {
    const int k0 = kt * BK;
    // phase 0 (W): tile kt -> LDS (both groups finished reading tile kt - 1: the schedule's
    // hazard proof), then the global loads of tile kt + 1 go in flight into the registers.
    A.mask_k(k0);
    B.mask_k(k0);
    A.store(As);                     // the compiler waits vmcnt for the prefetched registers
    B.store(Bs);
    if (kt + 1 < ktiles) {
      A.load(m0, k0 + BK);
      B.load(n0, k0 + BK);
    }
    phase_end();
    // phase 1: no work (separates group 1's write of tile kt from group 0's first read of it).
    phase_end();
    // phases 2..9: read (chunk c, row half ih), then its 32 MFMAs.
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      Frags f;
      read_frags(f, As, Bs, r / 2, r % 2, a_base, b_base);
      phase_end();
      mma_frags<kF16>(acc, f, r % 2);
      phase_end();
    }
  }
  if (ping_pong_group(w) == 0) kc::lds_barrier();  // balance the stagger

  // The epilogue's per-lane offsets are derived from an opaque copy of the thread id, so the
  // compiler cannot compute them before the loop and keep them live across it (that spilled
  // 16 B in the mixed-layout kernels: ISA gate).
  int tid_e = tid;
  asm volatile("" : "+v"(tid_e));
  epilogue<kF16, kOutF32>(p, acc, tid_e / 64, tid_e % 64, m0, n0);
}

}  // namespace tk::cdna3
