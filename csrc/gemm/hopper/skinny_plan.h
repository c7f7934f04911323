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
  int rows;   // weight rows (output columns N) per CTA: 16 * rm
  int tn;     // token (M) tiles of 8 per warp: 1, 2, 4 or 8
  int warps;  // warps per CTA, splitting K between them
  int grid;   // CTAs: ceil(N / rows)
};

constexpr int kSkinnyWarps = 8;
// Default largest M for the skinny kernel (benchmarks/NOTES.md has the measurement).
constexpr int kSkinnyMaxM = 64;

// max_m: the dispatcher's limit (TK_HOPPER_SKINNY_MAX_M overrides kSkinnyMaxM; 0 disables).
inline SkinnyPlan plan_skinny(int M, int N, int K, bool a_k_contig, bool b_k_contig, int num_sms,
                              int max_m = kSkinnyMaxM) {
  SkinnyPlan p{false, 32, 1, kSkinnyWarps, 0};
  if (M < 1 || N < 1 || K < 1 || M > std::min(max_m, 64) || !a_k_contig || !b_k_contig) return p;
  p.tn = M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8;
  // 32 rows per warp halve the token re-reads from L2; the (rows x 8tn) x warps fp32
  // reduction buffer stays <= 34 KB (static shared memory) with rows * tn <= 128.
  p.rows = p.tn == 8 ? 16 : 32;
  if ((N + p.rows - 1) / p.rows < num_sms) p.rows = 16;  // more CTAs to fill the SMs
  p.grid = (N + p.rows - 1) / p.rows;
  // Without a K split across CTAs, too few CTAs cannot pull the HBM bandwidth: leave those
  // (small N) to the split-K wgmma kernel.
  p.use = p.grid >= num_sms / 2;
  return p;
}

}  // namespace tk::hopper
