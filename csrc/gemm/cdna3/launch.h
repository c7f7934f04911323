// Plain C++ interface of the CDNA3 (gfx942) GEMM: the Hopper GemmArgs, a HIP stream.
#pragma once
#include "../hopper/launch.h"

namespace tk::cdna3 {

using GemmArgs = tk::hopper::GemmArgs;
using DType = tk::hopper::DType;

// `stream` is a hipStream_t. Returns nullptr on success, else a static error text.
const char* gemm_launch(const GemmArgs& args, void* stream);

// True when HIP device `device` is a gfx942 (the kernel's only target), read once per device.
bool device_supported(int device);

}  // namespace tk::cdna3
