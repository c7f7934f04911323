#include "pair_streams.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdlib>
#include <cstring>

namespace tk::hopper {
namespace {

constexpr int kMaxDevices = 64;

// The fork (0) and join (1) events of `device` for this host thread, created at first use and
// kept: an event may be recorded again once the waits on it are queued (cudaStreamWaitEvent
// waits for the record that precedes it), and per-thread events keep two threads' forks apart.
cudaEvent_t pair_event(int device, int which) {
  thread_local std::array<std::array<cudaEvent_t, 2>, kMaxDevices> events{};
  cudaEvent_t& e = events[device][which];
  if (e == nullptr) C10_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

// Makes `cur` wait for everything queued on `side`, also when `second` throws: the side stream
// may hold a launched kernel writing an output the caller's stream owns.
struct Join {
  cudaStream_t side, cur;
  cudaEvent_t event;
  ~Join() {
    if (cudaEventRecord(event, side) == cudaSuccess) (void)cudaStreamWaitEvent(cur, event, 0);
    (void)cudaGetLastError();
  }
};

}  // namespace

// Opt-in until measured on a GPU (docs/knobs.md): without it gemm_pair's products run in turn on
// the current stream, exactly as two tk.gemm calls.
bool pair_streams_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TK_PAIR_STREAMS");
    return e != nullptr && std::strcmp(e, "1") == 0;
  }();
  return on;
}

bool run_pair_on_two_streams(int device, const std::function<void()>& first, const std::function<void()>& second) {
  if (!pair_streams_enabled() || device < 0 || device >= kMaxDevices) return false;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t cur = c10::cuda::getCurrentCUDAStream(device).stream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device));
  const cudaEvent_t fork = pair_event(device, 0);
  C10_CUDA_CHECK(cudaEventRecord(fork, cur));
  C10_CUDA_CHECK(cudaStreamWaitEvent(side.stream(), fork, 0));
  const Join join{side.stream(), cur, pair_event(device, 1)};
  first();  // queued first: its CTAs take the SMs, the side stream's fill the ones it frees
  const c10::cuda::CUDAStreamGuard on_side(side);
  second();
  return true;
}

}  // namespace tk::hopper
