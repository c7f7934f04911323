// The dynamic schedule's ticket counter, kept per (device, stream) across calls.
//
// gemm_kernel.cuh's last ticket draw of a call (the units-th: every cluster draws until it gets
// an id past the last unit) stores 0 back, so a counter handed out here is zero whenever a
// kernel on its stream starts, and the call needs no fill kernel in front of it (at::zeros: one
// more launch, ~2 us on the stream, before every dynamically scheduled GEMM).
#pragma once
#include <cuda_runtime_api.h>

namespace tk::hopper {

// A zeroed int on `device` reserved to `stream`: from a per-device slab of 1024 allocated at the
// first call, zeroed on the stream at its first use, never freed. nullptr past 1024 streams, while
// `stream` is being captured into a CUDA graph (a replay may run on another stream beside eager
// calls on this one, so the caller zeroes a fresh counter inside the graph instead) or when the
// allocation fails. Keyed by the stream's handle: a stream destroyed with work still queued and a
// new one created at the same handle would share the counter unordered (PyTorch's pooled streams
// are never destroyed). Only for plans whose counter has no flags after it (not stream-K, not fused
// split-K): the kernel resets the ticket, not the flags.
int* stream_ticket_counter(int device, cudaStream_t stream);

}  // namespace tk::hopper
