// Kernel family (__nv_bfloat16 -> __nv_bfloat16, 64 x 192 tiles, K-major Y only; plan.h kTokenRows64Width192); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__nv_bfloat16, __nv_bfloat16, 192, 64)
