// Kernel family (__half -> __half, 128 x 176 tiles, K-major Y only; plan_rules.h kOddWidths bit 18); one family per file for parallel builds.
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__half, __half, 176, 128)
