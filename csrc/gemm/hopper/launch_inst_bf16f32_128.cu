// Kernel family (__nv_bfloat16 -> float, 128 x 128 tiles, 4 layouts); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__nv_bfloat16, float, 128, 128)
