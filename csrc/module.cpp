// The Python module torch_tk._C: importing it loads this library, which runs the TORCH_LIBRARY
// registrations. It also exposes the dispatch counters, the fallback log, and the index math of
// kittens/common so that tests check it on the host.
#include <torch/extension.h>

#include "counters.h"
#include "kittens/common/fragments.h"
#include "kittens/common/raster.h"
#include "kittens/common/row_run.h"
#include "kittens/common/halfword_window.h"
#include "kittens/common/k_parts.h"
#include "kittens/common/stream_k.h"
#include "kittens/common/swizzle.h"
#include "kittens/common/swiglu.h"
#include "gemm/hopper/plan.h"
#include "gemm/hopper/skinny_plan.h"

namespace tk {
#ifdef TK_WITH_CUDA
bool hopper_available(int device);
hopper::GemmPlan hopper_dispatch_plan(int M, int N, int K, int device, bool out_fp32, bool a_mn, bool b_mn);
const char* hopper_store_variant();
#endif
#ifdef TK_WITH_HIP
bool cdna3_available(int device);
#endif
}  // namespace tk

namespace {
py::dict plan_dict(const tk::hopper::GemmPlan& p) {
  py::dict d;
  d["swap_ab"] = p.swap_ab;
  d["bm"] = p.bm;
  d["bn"] = p.bn;
  d["splits"] = p.splits;
  d["cluster"] = p.cluster;
  d["group_m"] = p.group_m;
  d["units"] = p.units;
  d["grid"] = p.grid;
  d["dynamic"] = p.dynamic;
  d["sk_tiles"] = p.sk_tiles;
  d["sk_parts"] = p.sk_parts;
  d["wg_rows"] = p.wg_rows;
  d["ring_staging"] = p.ring_staging;
  d["fused_split"] = p.fused_split;
  d["evict_first"] = p.evict_first;
  return d;
}
}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_tk compiled library: tk ops (registered on import), counters, index math";
  m.def("kernel_counters", &tk::kernel_counters, "Calls per path since load/reset: hopper, fallback, cpu.");
  m.def("reset_kernel_counters", &tk::reset_kernel_counters);
  m.def("fallback_reasons", &tk::fallback_reasons, "Distinct reasons CUDA calls fell back to the reference.");
#ifdef TK_WITH_CUDA
  m.attr("has_cuda_kernels") = true;
  m.def("hopper_available", &tk::hopper_available, py::arg("device"));
  m.def(
      "hopper_dispatch_plan",
      [](int M, int N, int K, int device, bool out_fp32, const std::string& layout) {
        // layout: A then B, "N" as stored (A M x K row-major, B K x N row-major), "T" transposed views
        // (A column-major, B an N x K K-major weight: F.linear's "NT", the default).
        if (layout.size() != 2 || (layout[0] != 'N' && layout[0] != 'T') || (layout[1] != 'N' && layout[1] != 'T'))
          throw py::value_error("hopper_dispatch_plan: layout must be one of 'NN', 'NT', 'TN', 'TT', got '" + layout + "'");
        return plan_dict(tk::hopper_dispatch_plan(M, N, K, device, out_fp32, layout[0] == 'T', layout[1] == 'N'));
      },
      py::arg("M"), py::arg("N"), py::arg("K"), py::arg("device") = 0, py::arg("out_fp32") = false,
      py::arg("layout") = "NT",
      "The plan the CUDA dispatcher uses for a wgmma-kernel call on `device`: hopper_plan with this "
      "process's TK_HOPPER_* knobs (read once) and the device's SM count, for contiguous operands in "
      "`layout` ('NT', the default: a row-major A and a column-major B, F.linear's; 'NN' torch.mm's of "
      "row-major tensors, 'TN', 'TT'; plan_rules.h split_sectors_contiguous for their pitches; the odd "
      "widths need a K-major Y, plan.h kOddWidths). Skinny-kernel calls (hopper_skinny_plan) are "
      "decided before it. Raises ValueError for another layout string.");
  m.def("hopper_store_variant", &tk::hopper_store_variant,
        "The 16-bit epilogue's store variant this process uses: 'deferred' (default), 'tma', 'copy' or 'stmatrix' "
        "(TK_HOPPER_STORE, read once).");
#elif defined(TK_WITH_HIP)
  m.attr("has_cuda_kernels") = true;  // ROCm torch: the CDNA3 kernel under the CUDA dispatch key
  m.def("hopper_available", [](int) { return false; }, py::arg("device"));
#else
  m.attr("has_cuda_kernels") = false;
  m.def("hopper_available", [](int) { return false; }, py::arg("device"));
#endif
#ifdef TK_WITH_HIP
  m.def("cdna3_available", &tk::cdna3_available, py::arg("device"));
#else
  m.def("cdna3_available", [](int) { return false; }, py::arg("device"));
#endif
  m.def("swizzle128_offset", &kittens::swizzle128_offset, py::arg("row"), py::arg("byte_in_row"));
  m.def("swiglu_packed_col", &kittens::swiglu_packed_col, py::arg("feature"), py::arg("up"));
  m.def("swiglu_up_reg", &kittens::swiglu_up_reg, py::arg("gate_reg"));
  m.def(
      "k_part",
      [](int t, int end0, int end1) {
        const kittens::KPart p = kittens::k_part(t, end0, end1);
        return std::make_pair(p.part, p.tile);
      },
      py::arg("t"), py::arg("end0"), py::arg("end1"));
  m.def("kmajor_offset", &kittens::kmajor_offset, py::arg("mn"), py::arg("k"), py::arg("elem_bytes"));
  m.def("mnmajor_offset", &kittens::mnmajor_offset, py::arg("mn"), py::arg("k"), py::arg("elem_bytes"));
  m.def("wgmma_desc", &kittens::wgmma_desc, py::arg("addr"), py::arg("lbo"), py::arg("sbo"));
  m.def("desc_k16_step", &kittens::desc_k16_step, py::arg("mn_major"), py::arg("elem_bytes"));
  m.def("partial_box_offset", &kittens::partial_box_offset, py::arg("row"), py::arg("col"), py::arg("transposed"));
  m.def(
      "row_run",
      [](int s, int ncols) {
        const auto run = kittens::row_run(s, ncols);
        return std::make_tuple(run.head, run.chunks, run.tail);
      },
      py::arg("s"), py::arg("ncols"));
  m.def(
      "row_run_loose_col", [](int s, int ncols, int e) { return kittens::row_run_loose_col(kittens::row_run(s, ncols), e); },
      py::arg("s"), py::arg("ncols"), py::arg("e"));
  m.def(
      "row_run_granule_col", [](int s, int ncols, int k) { return kittens::row_run_granule_col(kittens::row_run(s, ncols), k); },
      py::arg("s"), py::arg("ncols"), py::arg("k"));
  m.def(
      "halfword_window",
      [](std::array<uint32_t, 8> w, int h) {
        uint32_t a[8];
        for (int i = 0; i < 8; ++i) a[i] = w[i];
        const auto o = kittens::halfword_window(a, h);
        return std::make_tuple(o.w[0], o.w[1], o.w[2], o.w[3]);
      },
      py::arg("words"), py::arg("h"));
  m.def("stmatrix_x4_offset", &kittens::stmatrix_x4_offset, py::arg("warp"), py::arg("lane"), py::arg("m"),
        py::arg("transposed"));
  m.def(
      "wgmma_acc_coord",
      [](int t, int r) {
        auto rc = kittens::wgmma_acc_coord(t, r);
        return std::make_tuple(rc.row, rc.col);
      },
      py::arg("thread"), py::arg("reg"));
  m.def(
      "grouped_tile",
      [](int id, int tm, int tn, int g) {
        auto c = kittens::grouped_tile(id, tm, tn, g);
        return std::make_tuple(c.m, c.n);
      },
      py::arg("block_id"), py::arg("tiles_m"), py::arg("tiles_n"), py::arg("group_m"));
  m.def(
      "split_k_range",
      [](int s, int splits, int k_tiles, int align) {
        auto r = kittens::split_k_range(s, splits, k_tiles, align);
        return std::make_tuple(r.begin, r.end);
      },
      py::arg("split"), py::arg("splits"), py::arg("k_tiles"), py::arg("align") = 1);
  m.def(
      "work_unit",
      [](int id, int tm, int tn, int g) {
        auto w = kittens::work_unit(id, tm, tn, g);
        return std::make_tuple(w.tile.m, w.tile.n, w.split);
      },
      py::arg("unit"), py::arg("tiles_m"), py::arg("tiles_n"), py::arg("group_m"));
  m.def("sk_tiles", &kittens::sk_tiles, py::arg("tiles"), py::arg("grid"), py::arg("min_idle_pct") = 1);
  m.def(
      "sk_split_tail",
      [](int64_t tiles, int grid, int k_tiles, int max_slots, int min_iters, int min_gain_pct) {
        const auto t = kittens::sk_split_tail(tiles, grid, k_tiles, max_slots, min_iters, min_gain_pct);
        return py::make_tuple(t.tiles, t.parts);
      },
      py::arg("tiles"), py::arg("grid"), py::arg("k_tiles"), py::arg("max_slots") = tk::hopper::kSkSplitMaxSlots,
      py::arg("min_iters") = tk::hopper::kSkSplitMinIters, py::arg("min_gain_pct") = tk::hopper::kSkSplitMinGainPct,
      "(tail tiles, CTAs) of the aligned last-wave split (kittens/common/stream_k.h sk_split_tail); (0, 0): none.");
  m.def(
      "sk_split_tail_waves",
      [](int64_t tiles, int grid, int k_tiles, int max_slots, int min_iters, int min_gain_pct, int max_waves) {
        const auto t = kittens::sk_split_tail_waves(tiles, grid, k_tiles, max_slots, min_iters, min_gain_pct, max_waves);
        return py::make_tuple(t.tiles, t.parts, t.grid);
      },
      py::arg("tiles"), py::arg("grid"), py::arg("k_tiles"), py::arg("max_slots") = tk::hopper::kSkSplitMaxSlots,
      py::arg("min_iters") = tk::hopper::kSkSplitMinIters, py::arg("min_gain_pct") = tk::hopper::kSkSplitMinGainPct,
      py::arg("max_waves") = tk::hopper::kSkWavesMax,
      "(tail tiles, CTAs dealt to, CTAs launched or 0) of stream-K mode 4 (kittens/common/stream_k.h "
      "sk_split_tail_waves); (0, 0, 0): none.");
  m.def(
      "sk_tail_even",
      [](int64_t tiles, int grid, int k_tiles, int max_offsets, int min_iters, int min_gain_pct) {
        const auto t = kittens::sk_tail_even(tiles, grid, k_tiles, max_offsets, min_iters, min_gain_pct);
        return py::make_tuple(t.tiles, t.parts);
      },
      py::arg("tiles"), py::arg("grid"), py::arg("k_tiles"), py::arg("max_offsets") = tk::hopper::kSkEvenMaxOffsets,
      py::arg("min_iters") = tk::hopper::kSkSplitMinIters, py::arg("min_gain_pct") = tk::hopper::kSkTailMinGainPct,
      "(tail tiles, CTAs dealt to) of the even tail (kittens/common/stream_k.h sk_tail_even, stream-K "
      "mode 5 past a half-full last wave); (0, 0): none.");
  m.def("sk_fill_tiles", &kittens::sk_fill_tiles, py::arg("tiles"), py::arg("k_tiles"), py::arg("grid"),
        py::arg("min_iters"));
  m.def(
      "sk_partition",
      [](int64_t tiles, int k_tiles, int grid, bool fill, bool split, int mode) {
        // Per CTA, the segments it walks (kittens/common/stream_k.h), in the kernel's order (from
        // the back of its range): the tail's tiles, with fill = True every tile (fill mode), with
        // split = True the aligned last-wave split (plan.h's limits; only the CTAs it deals to),
        // with mode = 4 / 5 stream-K mode 4 / 5 (plan_rules.h stream_k_tail).
        const kittens::SkSplit t = fill ? kittens::SkSplit{kittens::sk_fill_tiles(tiles, k_tiles, grid, 1), 0}
                                        : tk::hopper::stream_k_tail(mode ? mode : split ? 2 : 1, tiles, grid, k_tiles);
        const int sk = t.tiles, parts = t.parts > 0 ? t.parts : grid;
        const int64_t iters = int64_t(sk) * k_tiles;
        py::list ctas;
        for (int c = 0; c < parts && sk > 0; ++c) {
          py::list segs;
          const int64_t begin = kittens::sk_begin(c, iters, parts);
          for (int64_t it = kittens::sk_begin(c + 1, iters, parts); it > begin;) {
            const auto s = kittens::sk_segment_back(it, begin, k_tiles, iters, parts);
            segs.append(py::make_tuple(s.tile, s.k.begin, s.k.end, s.slot, s.slots));
            it -= s.k.end - s.k.begin;
          }
          ctas.append(segs);
        }
        return ctas;
      },
      py::arg("tiles"), py::arg("k_tiles"), py::arg("grid"), py::arg("fill") = false, py::arg("split") = false,
      py::arg("mode") = 0);
  m.def(
      "hopper_plan",
      [](int M, int N, int K, int sms, bool all_widths, int max_cluster, int group_m, int min_split_k_tiles,
         int fill_narrow_max_k_tiles, bool allow_dynamic, int stream_k, bool fuse_split, bool bm64,
         int stream_k_fill, int one_wg, int bn192, int unswap128, std::optional<std::tuple<bool, int, int, int, int>> tile,
         int odd_widths, int odd_layouts, int mid64, std::optional<bool> out_tma,
         std::optional<int> split_sectors, int sector_clusters, int band_rule) {
        std::optional<tk::hopper::TileChoice> t;
        if (tile) t = tk::hopper::TileChoice{std::get<0>(*tile), std::get<1>(*tile), std::get<2>(*tile),
                                             std::get<3>(*tile), std::get<4>(*tile)};
        return plan_dict(tk::hopper::plan_gemm(M, N, K, sms, all_widths, max_cluster, group_m, min_split_k_tiles,
                                               fill_narrow_max_k_tiles, allow_dynamic, stream_k, fuse_split,
                                               bm64, 0, -1, stream_k_fill, false, one_wg, bn192, unswap128,
                                               t ? &*t : nullptr, odd_widths, odd_layouts, mid64,
                                               out_tma.value_or(tk::hopper::output_tma_storable(N, all_widths)),
                                               split_sectors.value_or(tk::hopper::split_sectors_nt(K)), sector_clusters,
                                               band_rule));
      },
      py::arg("M"), py::arg("N"), py::arg("K"), py::arg("sms"), py::arg("all_widths") = true, py::arg("max_cluster") = 0, py::arg("group_m") = 0,
      py::arg("min_split_k_tiles") = 4, py::arg("fill_narrow_max_k_tiles") = tk::hopper::kFillNarrowMaxKTiles,
      py::arg("allow_dynamic") = true, py::arg("stream_k") = tk::hopper::kStreamKTail, py::arg("fuse_split") = false,
      py::arg("bm64") = true, py::arg("stream_k_fill") = tk::hopper::kStreamKFill,
      py::arg("one_wg") = tk::hopper::kOneWarpgroupWidths, py::arg("bn192") = tk::hopper::kWidth192,
      py::arg("unswap128") = tk::hopper::kUnswapOneWave128, py::arg("tile") = py::none(),
      py::arg("odd_widths") = tk::hopper::kOddWidths, py::arg("odd_layouts") = 3,
      py::arg("mid64") = tk::hopper::kMid64, py::arg("out_tma") = py::none(), py::arg("split_sectors") = py::none(),
      py::arg("sector_clusters") = tk::hopper::kSplitSectorClusters, py::arg("band_rule") = tk::hopper::kBandRule,
      "The Hopper kernel choice for an (M, N, K) GEMM on a GPU with `sms` SMs (csrc/gemm/hopper/plan.h); `tile` = (swap_ab, bm, bn, splits, cluster) forces a tile "
      "(plan.h TileChoice, the TK_HOPPER_TILE knob); `out_tma` (default: a contiguous 16-bit output, N % 8 == 0) whether the "
      "output rows can be TMA-stored; `split_sectors` (bit 0 A, bit 1 B; default: F.linear's layout, both pitches 2K bytes "
      "when 16-B aligned) which operands' line pitches split 32-B sectors (plan_rules.h kMid64Pairs, kSplitSectorClusters).");
  m.def("raster_dram_mb",
        [](int units_m, int units_n, int k_tiles, int unit_rows, int unit_cols, int group_m, int concurrent, double cap_mb) {
          return tk::hopper::raster_dram_bytes(units_m, units_n, k_tiles, unit_rows, unit_cols, group_m, concurrent,
                                               cap_mb * (1 << 20)) / 1e6;
        },
        py::arg("units_m"), py::arg("units_n"), py::arg("k_tiles"), py::arg("unit_rows") = 128, py::arg("unit_cols") = 256,
        py::arg("group_m") = 8, py::arg("concurrent") = 132, py::arg("cap_mb") = tk::hopper::kL2ModelBytes / (1 << 20),
        "MB read from DRAM by a persistent GEMM of units_m x units_n units (unit_rows x unit_cols outputs; A / B panels "
        "of 2-byte elements over k_tiles x 64 of K) walked in raster bands of group_m unit rows, `concurrent` at a time, "
        "under the wave-level LRU model of an L2 of cap_mb MB (csrc/gemm/hopper/l2_band.h: the band rule's model).");
  m.attr("hopper_skinny_max_m") = tk::hopper::kSkinnyMaxM;  // the dispatcher's default token limit
  m.def(
      "hopper_skinny_plan",
      [](int M, int N, int K, bool a_k_contig, bool b_k_contig, int sms, int max_m, int rows_tn2, bool vs_gemm) {
        const auto g = tk::hopper::plan_gemm(M, N, K, sms);  // the default wgmma plan (no knobs)
        auto p = tk::hopper::plan_skinny(M, N, K, a_k_contig, b_k_contig, sms, max_m, rows_tn2, vs_gemm ? &g : nullptr);
        py::dict d;
        d["use"] = p.use;
        d["rows"] = p.rows;
        d["tn"] = p.tn;
        d["warps"] = p.warps;
        d["grid"] = p.grid;
        return d;
      },
      py::arg("M"), py::arg("N"), py::arg("K"), py::arg("a_k_contig") = true, py::arg("b_k_contig") = true,
      py::arg("sms") = 132, py::arg("max_m") = tk::hopper::kSkinnyMaxM,
      py::arg("rows_tn2") = tk::hopper::kSkinnyRowsTn2, py::arg("vs_gemm") = tk::hopper::kSkinnyYield,
      "Whether the Hopper dispatcher runs the skinny kernel for (M, N, K), and its tile (csrc/gemm/hopper/skinny_plan.h); "
      "vs_gemm=True (the dispatcher's under TK_HOPPER_SKINNY_YIELD=1; default kSkinnyYield) yields to a default wgmma "
      "plan of one full unsplit wave.");
  m.def(
      "mma16816_coord",
      [](const std::string& operand, int lane, int reg, int half) {
        const kittens::RowCol rc = operand == "a"   ? kittens::mma16816_a_coord(lane, reg, half)
                                   : operand == "b" ? kittens::mma16816_b_coord(lane, reg, half)
                                                    : kittens::mma16816_c_coord(lane, reg);
        return std::make_tuple(rc.row, rc.col);
      },
      py::arg("operand"), py::arg("lane"), py::arg("reg"), py::arg("half") = 0,
      "(row, col) of an mma.m16n8k16 fragment element: operand 'a' (16x16), 'b' (16x8, row = k) or 'c' (16x8).");
  m.def("skinny_chunk_k", &kittens::skinny_chunk_k, py::arg("step"), py::arg("logical_k"),
        "Physical k (0..31) of the skinny kernel's chunk for mma step `step` and logical column `logical_k`.");
}
