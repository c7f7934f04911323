// Kernel family (__half -> __half, 128 x 160 tiles, swap-AB with a K-major Y only; plan.h bn160); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__half, __half, 160, 128)
