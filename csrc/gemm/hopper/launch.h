// Plain C++ interface of the Hopper GEMM (no torch types), so the kernel TUs stay light.
#pragma once
#include <cstdint>
#include "../repitch.h"
#include "plan.h"
#include "skinny_plan.h"

namespace tk::hopper {

enum class DType : int { bf16 = 0, fp16 = 1, fp32 = 2 };

// How the 16-bit-output epilogue fills its staging box (TK_HOPPER_STORE, read in dispatch.cpp):
// tma: shared stores, TMA box stores; copy: no TMA store (staged copy-out, or register stores
// under swap-AB); stmatrix: as tma, the box filled by stmatrix (epilogue.cuh stage_round_impl);
// deferred (the default): as tma, the last rounds stored under the next unit's mainloop
// (epilogue.cuh pack_unit).
enum class StoreVariant : int { tma = 0, copy = 1, stmatrix = 2, deferred = 3 };

// out[M,N] (row-major, ld = N) = alpha * A @ B + beta * C, with C read as c[m*c_s0 + n*c_s1].
// A is M x K: a_mn == false -> row-major (k contiguous, ld = lda), true -> column-major (m contiguous).
// B is K x N: b_mn == true -> row-major (n contiguous), false -> column-major (k contiguous).
// Every pointer and ld * 2 must be 16-byte aligned; M, N, K >= 1.
struct GemmArgs {
  const void* a;
  int64_t lda;
  bool a_mn;
  const void* b;
  int64_t ldb;
  bool b_mn;
  int M, N, K;
  DType in_dtype;   // bf16 or fp16
  DType out_dtype;  // same as in_dtype, or fp32
  void* out;
  const void* c;    // nullptr: no C term; same dtype as out
  int64_t c_s0, c_s1;
  float alpha, beta;
  GemmPlan plan;    // plan_gemm(M, N, K, SMs, out_dtype != fp32)
  float* workspace; // plan.splits * M * N floats when plan.splits > 1; with plan.sk_tiles > 0,
                    // plan.grid * 128 * plan.bn floats (the stream-K tail partials); else unused
  int* unit_counter; // zeroed ints, when plan.dynamic, plan.sk_tiles > 0 or plan.fused_split: the
                     // ticket counter, then the ready flags: 2 per CTA (stream-K) or per unit
                     // (fused split-K); the kernel leaves them changed
  StoreVariant store = StoreVariant::deferred;
  // Operands loaded under an L2 evict_first policy (streamed once: recycle their own L2 lines
  // instead of evicting other data): bit 0 A, bit 1 B (plan.evict_first or TK_HOPPER_EVICT_FIRST).
  int evict_first = 0;
  // Launch as a programmatic dependent of the kernel just before on the stream (PDL): the
  // prologue overlaps that kernel's tail; every global access waits (griddepcontrol.wait) for its
  // completion. Set after this call's re-pitch copy (pad_lines_launch), and for every call under
  // TK_HOPPER_PDL=1 (dispatch.cpp).
  bool dependent = false;
  // The SwiGLU GEMM (epilogue_swiglu.cuh): non-null, B is two matrices, the gate weight at `b` and
  // the up weight at `swiglu_up` (each K x N / 2, column-major, ld = ldb: nn.Linear weights), `out`
  // is their product packed gate | up (kittens/common/swiglu.h; N % 256 == 0) and h[M, N / 2]
  // (row-major, 16-B aligned) = silu(gate) * up is written to `swiglu_h`. Needs a 128 x 256 plan,
  // unswapped, unsplit, unclustered, no stream-K, A row-major, a 16-bit output and no C (alpha 1).
  void* swiglu_h = nullptr;
  const void* swiglu_up = nullptr;
  // The SwiGLU backward GEMM (epilogue_swiglu_grad.cuh): non-null, A.B is dL/dh (M x N, N = the
  // intermediate size, a multiple of 128) and `swiglu_gu` the forward's packed gate | up (M x 2N,
  // row-major, 16-B aligned); `out` receives dL/dgate and `swiglu_du` dL/dup (M x N row-major each).
  // Needs a 128 x 256 plan, unswapped, unsplit, unclustered, no stream-K, A and B row-major, a 16-bit
  // output of the input dtype and no C (alpha 1).
  const void* swiglu_gu = nullptr;
  void* swiglu_du = nullptr;
  // The RoPE GEMM (epilogue_rope.cuh): non-null, `out` (N a multiple of 128: heads of 128 columns)
  // receives the product rotated by rows: out[m, 128 h + d] with the tables' row m, d < 64 (rows
  // of 64 entries, 16-B aligned, `rope_ld` elements apart, in the input dtype). Needs a 128 x 256
  // plan, unswapped, unsplit, unclustered, no stream-K, K-major A and B, a 16-bit output and no C
  // (alpha 1).
  const void* rope_cos = nullptr;
  const void* rope_sin = nullptr;
  int64_t rope_ld = 0;
  // The K-parts GEMM (gemm_layout kKParts): with b_parts[0] non-null, B (K x N, row-major, ld = ldb)
  // is up to three matrices stacked along K: rows [0, k_part_end[0]) at `b`, [k_part_end[0],
  // k_part_end[1]) at b_parts[0] and [k_part_end[1], K) at b_parts[1] (null for two parts, then
  // k_part_end[1] = K), each 16-B aligned; the part ends are multiples of 64 (whole k tiles). A (M x K,
  // row-major) likewise: columns [0, k_part_end[0]) at `a` (ld = lda), the next parts at a_parts[0] /
  // a_parts[1] (row pitches a_parts_ld, elements; 16-B aligned; a column slice of one matrix or
  // matrices of their own). Needs a 128 x 256 plan, unswapped, unsplit, unclustered, no stream-K,
  // row-major A and a 16-bit output.
  const void* b_parts[2] = {nullptr, nullptr};
  const void* a_parts[2] = {nullptr, nullptr};
  int64_t a_parts_ld[2] = {0, 0};
  int64_t k_part_end[2] = {0, 0};
  // The M-parts GEMM (gemm_layout kMParts): with m_part_end[0] > 0, A (M x K, column-major) is up to
  // three matrices stacked along M: rows [0, m_part_end[0]) at `a` (ld = lda), [m_part_end[0],
  // m_part_end[1]) at a_parts[0] and [m_part_end[1], M) at a_parts[1] (null for two parts, then
  // m_part_end[1] = M), pitches a_parts_ld, each 16-B aligned; the part ends are multiples of 128
  // (whole row tiles). Needs a 128 x 256 plan, unswapped, unsplit, unclustered, no stream-K,
  // column-major A, row-major B and a 16-bit output (the weight gradient of layers sharing an input).
  int64_t m_part_end[2] = {0, 0};
  // The SwiGLU backward GEMM's output row pitch in elements (0: N), for d_gate and d_up side by side
  // in one M x 2N buffer (`swiglu_du` = `out` + N; tk.swiglu_down_backward_cat). Other GEMMs: 0.
  int64_t ldo = 0;
};

// Launches on `stream` (a cudaStream_t). Returns nullptr on success, else a static error text.
const char* gemm_launch(const GemmArgs& args, void* stream);

// One (input, output, tile width, tile height) family of kernels; defined in launch_impl.cuh,
// instantiated one family per translation unit (launch_inst_*.cu) so the builds run in parallel.
template <typename T, typename OutT, int BN, int BM>
const char* launch_family(const GemmArgs& args, void* stream);

}  // namespace tk::hopper

namespace tk::hopper {
// Runs a call's re-pitch copies (repitch.h: one or two) as one kernel on `stream`, which lets
// the next kernel launch early (programmatic dependent launch: the GEMM with
// GemmArgs::dependent). chunks_per_thread: 16-B chunks per thread and pass, 1, 2 or 4 (all of
// a thread's loads in flight before its stores; fewer blocks). nullptr on success.
const char* pad_lines_launch(const RepitchJobs& jobs, void* stream, int chunks_per_thread);
// Chunks per thread by default (TK_HOPPER_COPY_CHUNKS=1|2|4 for A/B). One chunk per thread ran
// 48-register threads, 5 blocks of 256 per SM: 1000x1001x999's 1000 blocks took 1.5 waves. Two
// run 500 blocks of 40-register threads, one wave. H100 (2026-11-27f, 3 rounds, ms, 1 / 2 / 4):
// 1000x1001x999 NN 0.0178 / 0.0172 / 0.0169, NT 0.0171 / 0.0165 / 0.0164, 4097^3 NN 0.311 /
// 0.305 / 0.302, 4095^3 NN 0.263 / 0.254 / 0.256, 8192x8192x8191 NN 1.591 / 1.543 / 1.656
// (benchmarks/NOTES.md).
constexpr int kCopyChunksPerThread = 2;
}  // namespace tk::hopper

namespace tk::hopper {
// The skinny (M <= 16, K-contiguous A and B) kernel for a plan_skinny(...) with use == true;
// same argument contract as gemm_launch (plan and workspace unused). nullptr on success.
const char* skinny_launch(const GemmArgs& args, const SkinnyPlan& plan, void* stream);
}  // namespace tk::hopper
