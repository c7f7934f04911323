// Which path each op call took (queryable from Python), and the fallback log (each reason once).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tk {

// hopper_skinny counts the hopper calls that ran the skinny (decode-shape) kernel,
// hopper_stream_k those that ran a stream-K tail (opt-in, TK_HOPPER_STREAMK=1).
enum class Path { hopper, fallback, cpu, cdna3, hopper_skinny, hopper_stream_k };

void count_call(Path p);
std::map<std::string, int64_t> kernel_counters();
void reset_kernel_counters();

// Records that a CUDA call fell back to the reference path; warns the first time per reason.
void note_fallback(const std::string& reason);
std::vector<std::string> fallback_reasons();

}  // namespace tk
