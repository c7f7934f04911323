#include "ticket_counter.h"

#include <map>
#include <mutex>
#include <utility>

namespace tk::hopper {
namespace {
// Counters come from one allocation per device, made at the device's first dynamically scheduled
// call: a cudaMalloc per new stream could land inside another thread's graph capture, which it
// would invalidate. Streams past the slab's slots get no counter (the caller zeroes one per call).
constexpr int kSlots = 1024;
}  // namespace

int* stream_ticket_counter(int device, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    return nullptr;
  }
  static std::mutex mu;
  static std::map<int, std::pair<int*, int>> slabs;            // device -> (slab, slots handed out)
  static std::map<std::pair<int, cudaStream_t>, int*> counters;  // process lifetime, never freed
  std::lock_guard<std::mutex> lock(mu);
  const auto found = counters.find({device, stream});
  if (found != counters.end()) return found->second;
  auto& slab = slabs[device];
  if (slab.first == nullptr) {
    void* p = nullptr;
    if (cudaMalloc(&p, kSlots * sizeof(int)) != cudaSuccess) {
      (void)cudaGetLastError();
      slab.second = kSlots;  // no slab on this device: every call zeroes its own counter
      return nullptr;
    }
    slab.first = static_cast<int*>(p);
  }
  if (slab.second >= kSlots) return nullptr;
  int* const c = slab.first + slab.second;
  // Zeroed on the stream itself: ordered before the first kernel that uses it, whatever the
  // stream's flags (a non-blocking stream does not wait for the legacy default stream).
  if (cudaMemsetAsync(c, 0, sizeof(int), stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  ++slab.second;
  counters[{device, stream}] = c;
  return c;
}

}  // namespace tk::hopper
