// Kernel family (__nv_bfloat16 -> __nv_bfloat16, 128 x 192 tiles, 4 layouts; plan.h bn192); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__nv_bfloat16, __nv_bfloat16, 192, 128)
