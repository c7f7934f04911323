// When the Hopper dispatcher uses the skinny (decode-shape) kernel instead of the wgmma GEMM,
// and with which warp tile (host only; exported as torch_tk._C.hopper_skinny_plan and tested).
//
// The skinny kernel (skinny_kernel.cuh) streams the weight rows once with 16-B loads and
// multiplies them on mma.sync tensor cores: for few tokens the product is bound by HBM
// bandwidth, and the wgmma kernel's 128-row tiles either leave SMs idle or need split-K
// partials (extra fp32 traffic plus a reduction pass). It needs A row-major (K contiguous) and
// B column-major (K contiguous: an nn.Linear weight), i.e. F.linear's layout.
#pragma once
#include <algorithm>
#include <cstdint>
#include "plan.h"

namespace tk::hopper {

// Weight load flavour (skinny_kernel.cuh kLoad*): 1, the L2 256-B prefetch (H200, 2 rounds, us,
// plain / prefetch, dirty L2 then clean: 8x14336x4096 38.3 / 36.7, 35.3 / 33.5; 1x4096x4096
// 16.3 / 15.5, 13.4 / 13.2).
constexpr int kSkinnyLoad = 1;

struct SkinnyPlan {
  bool use;
  int rows;   // weight rows (output columns N) per CTA: 16 or 32 (one or two m16 tiles per warp)
  int tn;     // token (M) tiles of 8 per warp: 1 or 2
  int warps;  // warps per CTA, splitting K between them
  int grid;   // CTAs: ceil(N / rows)
  int load = kSkinnyLoad;  // weight load flavour, skinny_kernel.cuh kLoad* (A/B knob TK_HOPPER_SKINNY_LOAD)
};

constexpr int kSkinnyWarps = 8;
// Largest M the skinny kernel is built for (two 8-token mma tiles per warp); at M = 32 and 64 its
// per-CTA re-reads of the token rows from L2 (N / 16 CTAs each read all M x K) made it 0.6-0.9x
// of the wgmma kernel (H100, benchmarks/NOTES.md).
constexpr int kSkinnyKernelMaxM = 16;
// Largest M the dispatcher gives it by default: 16, but 9..16 tokens only in the one shape that
// measured faster than the wgmma plan (below). History: 16 until 2026-11-25, then 8 (the wgmma
// token tile's exact tail box); 16 again since 2026-11-26e with the L2 prefetch on weight loads
// (kSkinnyLoad) and timings in both L2 states (H200, 2 rounds, us, wgmma / skinny, dirty then
// clean L2: 16x4096x4096 17.5 / 16.9, 17.7 / 14.7; 12x4096x4096 17.3 / 17.1, 17.6 / 14.4;
// 16x4096x14336 41.2 / 40.8, 36.6 / 36.6; but 16x14336x4096, 16 rows per CTA, 38.7 / 39.4,
// 34.7 / 36.4).
constexpr int kSkinnyMaxM = 16;
// Whether the skinny kernel yields to a wgmma plan that streams the weights in one full wave
// without K splits (grid >= 7/8 of the SMs, splits == 1). It did until 2026-11-26e (H200, us,
// skinny / wgmma, dirty L2: 1x8192x8192 43.3 / 42.0, 8x8192x8192 44.2 / 41.7); with the L2
// prefetch (kSkinnyLoad) it no longer pays (2 rounds, us, yield / not, dirty then clean L2:
// 8x8192x8192 41.9 / 41.1, 38.3 / 35.9; 8x28672x4096 70.9 / 66.6, 64.8 / 60.9; 1x32000x4096
// 76.1 / 71.8, 70.2 / 66.3; 4x8192x28672 125.3 / 126.2, 118.3 / 113.6). A/B knob
// TK_HOPPER_SKINNY_YIELD=1.
constexpr bool kSkinnyYield = false;
inline bool gemm_plan_streams_one_wave(const GemmPlan& g, int num_sms) {
  return g.splits == 1 && g.sk_tiles == 0 && 8 * int64_t(g.grid) >= 7 * int64_t(num_sms);
}

// CTA shape for 9..16 tokens: 0 chooses (below); 16, 32 (8 warps) or 33 (32 rows, 16 warps)
// force one (TK_HOPPER_SKINNY_ROWS16, A/B).
constexpr int kSkinnyRowsTn2 = 0;

// max_m: the dispatcher's limit (TK_HOPPER_SKINNY_MAX_M; 0 disables, capped at kSkinnyKernelMaxM).
// gemm: the wgmma plan the dispatcher would run instead (nullptr: no comparison).
// rows_tn2: the CTA shape for M > 8 (kSkinnyRowsTn2).
// For 9..16 tokens the token rows (M x K) are read from L2 once per CTA, as many bytes as the
// weights at 16 rows per CTA; 32 rows per CTA halve that but halve the CTAs. Chosen (rows_tn2 0):
// 32 rows of 16 warps when those CTAs fill one wave and at least half the SMs (one per SM), else
// the wgmma plan (H200, 2026-11-25, dirty L2, ratio to torch.mm for 16 / 32x8 / 32x16 rows x warps:
// 16x4096x4096 1.003 / 0.931 / 1.075, 16x4096x14336 0.893 / 0.752 / 0.992, 16x8192x8192 0.862 /
// 0.956 / 0.906, 12x8192x8192 0.880 / 0.974 / 0.929, 16x14336x4096 0.939 / 0.867 / 0.890).
inline SkinnyPlan plan_skinny(int M, int N, int K, bool a_k_contig, bool b_k_contig, int num_sms,
                              int max_m = kSkinnyMaxM, int rows_tn2 = kSkinnyRowsTn2,
                              const GemmPlan* gemm = nullptr) {
  SkinnyPlan p{false, 16, 1, kSkinnyWarps, 0};
  if (M < 1 || N < 1 || K < 1 || M > std::min(max_m, kSkinnyKernelMaxM) || !a_k_contig || !b_k_contig) return p;
  if (gemm != nullptr && gemm_plan_streams_one_wave(*gemm, num_sms)) return p;
  p.tn = M <= 8 ? 1 : 2;
  // Without a K split across CTAs, too few CTAs cannot pull the HBM bandwidth: leave those
  // (small N, fewer than half the SMs in 16-row CTAs) to the split-K wgmma kernel.
  p.use = (N + 15) / 16 >= num_sms / 2;
  if (p.tn == 2) {
    const int ctas32 = (N + 31) / 32;
    if (rows_tn2 == 0) {
      if (ctas32 < num_sms / 2 || ctas32 > num_sms) {  // the wgmma plan (see above)
        p.use = false;
        return p;
      }
      rows_tn2 = 33;
    }
    if (rows_tn2 >= 32) p.rows = 32;
    if (rows_tn2 == 33) p.warps = 16;
  }
  // Up to 8 tokens: 16 rows per CTA measured faster than 32 (more CTAs in flight; NOTES.md).
  p.grid = (N + p.rows - 1) / p.rows;
  return p;
}

}  // namespace tk::hopper
