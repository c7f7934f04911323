// The raster band that reads the fewest DRAM bytes, by a wave-level LRU model of the L2 (host only).
//
// Why: where the power cap sets the clock (sustained training steps, benchmarks/NOTES.md 2026-12-05c)
// each DRAM byte costs energy, hence clock; the grouped raster's band height (kittens::grouped_tile)
// decides how often the A row panels and B column panels come back from DRAM.
//
// Model (the same as scripts/l2_raster_sim.py, at panel instead of box granularity): the persistent
// grid runs units in raster order in lockstep waves of `concurrent` units; every unit of a wave reads
// its A row panel (rows x K) and B column panel (cols x K); a unit's output tile enters the L2 at the
// wave's end and is never read back. A panel used again at wave w after its last use at wave v is a
// hit when the distinct panels touched in waves v .. w-1 (other than itself), their outputs and the
// panel itself fit `cap_bytes`, as in an LRU over whole panels. With lockstep waves this is the
// box-level LRU of l2_raster_sim.py within 2% on the shapes of test/test_l2_band_cpu.py, except near
// a capacity cliff (8192x5632x2048: 181 against 165 MB at band 8, 98 against 109 at 32), and
// that model fit ncu's DRAM reads at an effective 32 MB on the H200 (its docstring: 8192^3 NT band 8
// 1490 measured / 1493 modelled MB, 8192x2048x5632 213.5 / 213).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <vector>
#include "../../kittens/common/raster.h"

namespace tk::hopper {

// Bytes read from DRAM for `units_m` x `units_n` units (unit = unit_rows x unit_cols outputs, A and
// B panels of 2-byte elements over k_tiles x 64 columns of K) in bands of `group_m` unit rows.
inline double raster_dram_bytes(int units_m, int units_n, int k_tiles, int unit_rows, int unit_cols, int group_m,
                                int concurrent, double cap_bytes) {
  const double a_panel = double(unit_rows) * 64 * 2 * k_tiles, b_panel = double(unit_cols) * 64 * 2 * k_tiles;
  const double out_unit = double(unit_rows) * unit_cols * 2;
  const int64_t units = int64_t(units_m) * units_n;
  const int waves = int((units + concurrent - 1) / concurrent);
  // Panel p: A row p (p < units_m) or B column p - units_m. last[p]: wave of its last use, -1 none.
  std::vector<int> last(size_t(units_m) + units_n, -1), stamp(size_t(units_m) + units_n, -1);
  std::vector<double> live(size_t(waves) + 1, 0.0), outs(size_t(waves) + 1, 0.0), since(size_t(waves) + 1, 0.0);
  std::vector<int> touched;
  double miss = 0;
  for (int w = 0; w < waves; ++w) {
    touched.clear();
    const int64_t u0 = int64_t(w) * concurrent, u1 = std::min<int64_t>(units, u0 + concurrent);
    for (int64_t u = u0; u < u1; ++u) {
      const kittens::TileCoord t = kittens::grouped_tile(int(u), units_m, units_n, group_m);
      for (const int p : {t.m, units_m + t.n})
        if (stamp[p] != w) stamp[p] = w, touched.push_back(p);
    }
    // since[v]: bytes of distinct panels last used in waves v .. w-1, plus those waves' outputs.
    since[w] = 0;
    for (int v = w - 1; v >= 0; --v) since[v] = since[v + 1] + live[v] + outs[v];
    for (const int p : touched) {  // hits judged on the state before this wave (snapshot)
      const double size = p < units_m ? a_panel : b_panel;
      const int v = last[p];
      if (v < 0 || since[v] > cap_bytes) miss += size;  // since[v] counts the panel itself once
    }
    for (const int p : touched) {
      const double size = p < units_m ? a_panel : b_panel;
      if (last[p] >= 0) live[last[p]] -= size;
      live[w] += size;
      last[p] = w;
    }
    outs[w] = double(u1 - u0) * out_unit;
  }
  return miss;
}

// Band heights the rule tries (unit rows per band; those above units_m are skipped).
constexpr std::array<int, 8> kBandCandidates{1, 2, 4, 8, 12, 16, 24, 32};

// The band of kBandCandidates with the fewest modelled bytes, if it reads at least `min_gain` (a
// fraction) fewer than `default_band`; else default_band. Cached per shape, the last 256 shapes (the
// model costs O(waves^2 + units) per band: ~5-120 us, so a call with a shape still cached pays only
// the lookup).
inline int l2_band(int units_m, int units_n, int k_tiles, int unit_rows, int unit_cols, int concurrent,
                   int default_band, double cap_bytes, double min_gain) {
  struct Key {
    int v[8];
    bool operator==(const Key& o) const { return std::equal(v, v + 8, o.v); }
  };
  const Key key{{units_m, units_n, k_tiles, unit_rows, unit_cols, concurrent, default_band, int(cap_bytes / 4096)}};
  static std::mutex mu;
  static std::vector<std::pair<Key, int>> cache;  // a ring of the last 256 shapes
  static size_t next = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : cache)
      if (e.first == key) return e.second;
  }
  const double base = raster_dram_bytes(units_m, units_n, k_tiles, unit_rows, unit_cols, default_band, concurrent, cap_bytes);
  int best = default_band;
  double best_bytes = base;
  for (const int g : kBandCandidates) {
    if (g > units_m || g == default_band) continue;
    const double b = raster_dram_bytes(units_m, units_n, k_tiles, unit_rows, unit_cols, g, concurrent, cap_bytes);
    if (b < best_bytes) best = g, best_bytes = b;
  }
  const int band = best_bytes <= (1.0 - min_gain) * base ? best : default_band;
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() < 256) cache.emplace_back(key, band);
  else cache[next++ % 256] = {key, band};
  return band;
}

}  // namespace tk::hopper
