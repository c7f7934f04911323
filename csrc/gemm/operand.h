// How a 2-D operand is handed to the GEMM kernels (both backends): row- or column-major with a
// 16-B aligned base and line pitch is read in place; a row-/column-major operand whose pitch or
// address is not aligned is re-pitched in the same major order (by the backend's `repitch` copy
// kernel, or by torch when there is none); any other strides are copied to row-major by torch.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

#include "../kittens/common/base.h"
#include "repitch.h"

namespace tk {

constexpr int64_t kOperandAlign = 16;  // bytes: TMA (Hopper) and 16-B buffer loads (CDNA3)
// Pitch of the copies made here: whole 128-B lines, so every 128-B row of a TMA box is one L2
// line (a 16-B-only aligned pitch such as 4104 elements made 4097^3 ~35% slower per tile).
constexpr int64_t kCopyPitchAlign = 128;

struct Operand {
  at::Tensor keep;  // owns the memory read (the input itself, or an aligned copy)
  int64_t ld;       // elements between lines
  bool row_major;
};

inline bool operand_aligned(const at::Tensor& x, int64_t ld) {
  return (ld * x.element_size()) % kOperandAlign == 0 && reinterpret_cast<uintptr_t>(x.data_ptr()) % kOperandAlign == 0;
}

// Row-major: lines are rows; column-major: lines are columns. A size-1 dimension's stride is
// meaningless, so any aligned ld is used for it (the kernels never read past the single line).
// `jobs` (nullptr: torch copies): a 16-bit operand that needs a re-pitch gets its aligned buffer
// here and its copy recorded in *jobs, for the backend to launch (all of a call's in one kernel)
// before the GEMM.
inline Operand describe_operand(const at::Tensor& x, RepitchJobs* jobs) {
  const int64_t R = x.size(0), C = x.size(1), s0 = x.stride(0), s1 = x.stride(1);
  const bool rm = (C == 1 || s1 == 1) && (R == 1 || s0 >= C);
  const int64_t rm_ld = R == 1 ? kittens::round_up(C, 8) : s0;
  if (rm && operand_aligned(x, rm_ld)) return {x, rm_ld, true};
  const bool cm = (R == 1 || s0 == 1) && (C == 1 || s1 >= R);
  const int64_t cm_ld = C == 1 ? kittens::round_up(R, 8) : s1;
  if (cm && operand_aligned(x, cm_ld)) return {x, cm_ld, false};
  const int64_t per_line = kCopyPitchAlign / x.element_size();
  if ((rm || cm) && jobs != nullptr && jobs->n < 2 && x.element_size() == 2) {
    const int64_t lines = rm ? R : C, inner = rm ? C : R, src_ld = rm ? (R == 1 ? C : s0) : (C == 1 ? R : s1);
    const int64_t ld = kittens::round_up(inner, per_line);
    at::Tensor buf = at::empty({lines, ld}, x.options());
    jobs->job[jobs->n++] = RepitchJob{x.data_ptr(), src_ld, buf.data_ptr(), ld, lines, inner};
    return {buf, ld, rm};
  }
  const int64_t ld = kittens::round_up(C, per_line);  // strides the kernels cannot take: copy
  at::Tensor buf = at::empty({R, ld}, x.options());
  buf.narrow(1, 0, C).copy_(x);
  return {buf, ld, true};
}

}  // namespace tk
