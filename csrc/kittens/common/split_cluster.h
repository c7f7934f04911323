// Split-K finished in distributed shared memory (host-testable; used by gemm_kernel.cuh when
// Epilogue::dsmem_splits > 0).
//
// The `splits` CTAs computing the k ranges of one output tile form one thread-block cluster
// (PTX ISA "Cluster of cooperative thread arrays"; `mapa` / `ld.shared::cluster` reach a peer
// CTA's shared memory). After its mainloop each CTA writes the fp32 sums of the epilogue rounds
// it does not own into its own (now idle) stage ring, the cluster synchronises, and the owner of
// each (strip, round) adds the peers' sums to its own in split order -- a fixed order, so the bits
// do not depend on timing -- and stores the round through the normal epilogue (alpha, beta C,
// TMA store). No fp32 partials go to global memory and no reduction kernel runs.
#pragma once
#include "base.h"

namespace kittens {

// The CTA (cluster rank = split index) that finishes round `round` (64 output columns) of 64-row
// strip `strip` of the tile: rounds dealt round-robin when every CTA gets the same number of
// rounds of every strip (each of its consumer warpgroups then has the same work), else the
// (round, strip) pairs dealt round-robin (ranks past rounds x strips own nothing).
TK_HD int split_round_owner(int round, int strip, int rounds, int strips, int splits) {
  return rounds % splits == 0 ? round % splits : (round * strips + strip) % splits;
}

// The work unit of CTA `block` of a grid of `units` CTAs in clusters of `splits`: cluster c
// computes tile c, its rank r split r (units are split-major: unit = split * tiles + tile,
// kittens::work_unit).
TK_HD int split_cluster_unit(int block, int units, int splits) {
  const int tiles = units / splits;
  return (block % splits) * tiles + block / splits;
}

// Byte offset of accumulator chunk `chunk` (4 floats: registers 32 * round + 4 * chunk ..) of
// thread `thread` (of its warpgroup) for (strip, round) in the partial area: 16-B chunks with the
// thread index fastest, so a warp's 32 chunks are 512 contiguous bytes (no bank conflicts).
// kChunks = 8 chunks (32 registers) per round of 64 columns; 128 threads per warpgroup.
constexpr int kSplitChunks = 8;
TK_HD uint32_t split_partial_offset(int strip, int round, int chunk, int thread, int rounds) {
  return ((uint32_t(strip * rounds + round) * kSplitChunks + uint32_t(chunk)) * 128u + uint32_t(thread)) * 16u;
}

}  // namespace kittens
