// Kernel family (__half -> __half, 128 x 128 tiles, 4 layouts); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__half, __half, 128, 128)
