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

namespace tk::hopper {

struct SkinnyPlan {
  bool use;
  int rows;   // weight rows (output columns N) per CTA: 16 (one m16 tile per warp)
  int tn;     // token (M) tiles of 8 per warp: 1 or 2
  int warps;  // warps per CTA, splitting K between them
  int grid;   // CTAs: ceil(N / rows)
};

constexpr int kSkinnyWarps = 8;
// Largest M the skinny kernel takes. Measured on an H100 (benchmarks/NOTES.md): ahead of the
// wgmma path up to M = 16; at M = 32 and 64 its per-CTA re-reads of the token rows from L2
// (N / 16 CTAs each read all M x K) made it 0.6-0.9x of the wgmma kernel.
constexpr int kSkinnyMaxM = 16;

// Weight rows per CTA for 9..16 tokens (TK_HOPPER_SKINNY_ROWS16 = 16 or 32; 33: 32 rows with 16
// warps; A/B).
constexpr int kSkinnyRowsTn2 = 16;

// max_m: the dispatcher's limit (TK_HOPPER_SKINNY_MAX_M; 0 disables, capped at kSkinnyMaxM).
// rows_tn2: weight rows per CTA when M > 8 (16 or 32; 32 halves the token rows' L2 re-reads).
inline SkinnyPlan plan_skinny(int M, int N, int K, bool a_k_contig, bool b_k_contig, int num_sms,
                              int max_m = kSkinnyMaxM, int rows_tn2 = kSkinnyRowsTn2) {
  SkinnyPlan p{false, 16, 1, kSkinnyWarps, 0};
  if (M < 1 || N < 1 || K < 1 || M > std::min(max_m, kSkinnyMaxM) || !a_k_contig || !b_k_contig) return p;
  p.tn = M <= 8 ? 1 : 2;
  if (p.tn == 2 && rows_tn2 >= 32) p.rows = 32;
  if (p.tn == 2 && rows_tn2 == 33) p.warps = 16;  // A/B: 32 rows, 16 warps (as many warps per row as 16 x 8)
  // 16 rows per CTA measured faster than 32 (more CTAs in flight) for M = 1..32 (NOTES.md).
  p.grid = (N + p.rows - 1) / p.rows;
  // Without a K split across CTAs, too few CTAs cannot pull the HBM bandwidth: leave those
  // (small N) to the split-K wgmma kernel.
  p.use = p.grid >= num_sms / 2;
  return p;
}

}  // namespace tk::hopper
