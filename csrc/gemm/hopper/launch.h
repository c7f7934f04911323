// Plain C++ interface of the Hopper GEMM (no torch types), so the kernel TU stays light.
#pragma once
#include <cstdint>

namespace tk::hopper {

enum class DType : int { bf16 = 0, fp16 = 1, fp32 = 2 };

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
};

// Launches on `stream` (a cudaStream_t). Returns nullptr on success, else a static error text.
const char* gemm_launch(const GemmArgs& args, void* stream);

}  // namespace tk::hopper
