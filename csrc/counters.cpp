#include "counters.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <mutex>
#include <set>

namespace tk {
namespace {
std::atomic<int64_t> g_counts[6];
std::mutex g_mu;
std::set<std::string>& reasons() {
  static std::set<std::string> r;
  return r;
}
}  // namespace

void count_call(Path p) { g_counts[static_cast<int>(p)].fetch_add(1, std::memory_order_relaxed); }

std::map<std::string, int64_t> kernel_counters() {
  std::map<std::string, int64_t> m{{"hopper", g_counts[0].load()}, {"fallback", g_counts[1].load()},
                                   {"cpu", g_counts[2].load()}, {"hopper_skinny", g_counts[4].load()},
                                   {"hopper_stream_k", g_counts[5].load()}};
#ifdef TK_WITH_HIP
  m["cdna3"] = g_counts[3].load();  // ROCm builds only: calls that ran the CDNA3 kernel
#endif
  return m;
}

void reset_kernel_counters() {
  for (auto& c : g_counts) c.store(0);
}

void note_fallback(const std::string& reason) {
  count_call(Path::fallback);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    first = reasons().insert(reason).second;
  }
  if (first) TORCH_WARN("torch_tk: falling back to the reference matmul (slower): ", reason);
}

std::vector<std::string> fallback_reasons() {
  std::lock_guard<std::mutex> lock(g_mu);
  return {reasons().begin(), reasons().end()};
}

}  // namespace tk
