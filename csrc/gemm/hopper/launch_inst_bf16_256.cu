// Kernel family (__nv_bfloat16 -> __nv_bfloat16, 128 x 256 tiles, 4 layouts); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__nv_bfloat16, __nv_bfloat16, 256, 128)
