// Kernel family (__half -> __half, 64 x 192 tiles, K-major Y only; plan.h kTokenRows64Width192); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__half, __half, 192, 64)
