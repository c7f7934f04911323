// Kernel family (__half -> __half, 256 x 192 tiles, 4 layouts; experiment: gemm_layout BM_ = 256, TK_HOPPER_TILE=0:256:192:1:1).
#include "launch_impl.cuh"
TK_HOPPER_FAMILY(__half, __half, 192, 256)
