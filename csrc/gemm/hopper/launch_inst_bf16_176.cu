// Kernel family (__nv_bfloat16 -> __nv_bfloat16, 128 x 176 tiles, K-major Y only; plan_rules.h kOddWidths bit 18); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__nv_bfloat16, __nv_bfloat16, 176, 128)
