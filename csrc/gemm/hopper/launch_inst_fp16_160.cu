// Kernel family (__half -> __half, 128 x 160 tiles, K-major Y only; plan_rules.h kOddWidths); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__half, __half, 160, 128)
