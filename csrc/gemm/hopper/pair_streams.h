// tk.gemm_pair's two products side by side on one GPU (ops.h PairRunner).
#pragma once
#include <functional>

namespace tk::hopper {

// Runs `first` on the current stream and `second` on a pooled side stream of `device` that first
// waits for the current stream's work so far; the current stream then waits for the side stream,
// so whatever the caller queues next is ordered after both. Why: a persistent GEMM's last wave
// leaves SMs idle (a 128 x 256 plan of 2.67 waves idles a third of them for its last unit), and
// the other product's CTAs start there as soon as the first one's CTAs exit (one CTA per SM,
// units handed out dynamically: plan.h). Returns false, running neither, unless TK_PAIR_STREAMS=1
// (docs/knobs.md; opt-in until measured), or when `device` is out of range; the caller then runs
// both in turn on the current stream.
bool run_pair_on_two_streams(int device, const std::function<void()>& first, const std::function<void()>& second);

// Whether this process runs gemm_pair's products on two streams (TK_PAIR_STREAMS=1, read once).
bool pair_streams_enabled();

}  // namespace tk::hopper
