// CUDA dispatch of the tk ops: decides whether the Hopper kernel can take a call, describes the
// operands for it (csrc/gemm/operand.h: row- or column-major read natively, unaligned pitches
// re-pitched by pad_lines, anything else copied to row-major), plans the launch (plan.h) and
// launches on the current stream. Other cases fall back visibly.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "../../counters.h"
#include "../../kittens/common/base.h"
#include "../../ops.h"
#include "../backend_ops.h"
#include "../operand.h"
#include "kernel_variants.h"
#include "launch.h"
#include "ticket_counter.h"

namespace tk {
namespace {

// Compute capability of `device`, read once per device (ATen/cuda/CUDAContext.h would pull in
// cuBLAS/cuSPARSE headers that a bare toolkit may lack).
bool is_sm90(int device) {
  static int cache[64] = {0};  // 0 unknown, 1 yes, 2 no
  if (device < 0 || device >= 64) return false;
  if (cache[device] == 0) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cache[device] = (major == 9 && minor == 0) ? 1 : 2;
  }
  return cache[device] == 1;
}

// Streaming multiprocessors of `device`, read once per device (the persistent grid size).
int sm_count(int device) {
  static int cache[64] = {0};
  if (device < 0 || device >= 64) return 1;
  if (cache[device] == 0) {
    int n = 0;
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    cache[device] = n > 0 ? n : 1;
  }
  return cache[device];
}

// Integer environment variable `name` when set to a whole number in [lo, hi], else `fallback`.
int env_int(const char* name, int fallback, int lo, int hi) {
  const char* e = std::getenv(name);
  if (e == nullptr || *e == '\0') return fallback;
  char* end = nullptr;
  const long v = std::strtol(e, &end, 10);
  return (*end == '\0' && v >= lo && v <= hi) ? static_cast<int>(v) : fallback;
}

// TK_HOPPER_TILE as five colon-separated integers (swap 0|1, bm, bn, splits, cluster), or none
// (colons: scripts/ab_knob.sh splits a setting at commas).
std::optional<hopper::TileChoice> tile_knob() {
  const char* e = std::getenv("TK_HOPPER_TILE");
  int v[5];
  char tail = 0;
  if (e == nullptr || std::sscanf(e, "%d:%d:%d:%d:%d%c", &v[0], &v[1], &v[2], &v[3], &v[4], &tail) != 5 ||
      (v[0] != 0 && v[0] != 1))
    return std::nullopt;
  return hopper::TileChoice{v[0] == 1, v[1], v[2], v[3], v[4]};
}

// Environment knobs are read once; a TK_EXPERIMENTS build re-reads them per call so that one
// process can interleave settings (benchmarks/ab_env.py).
#ifdef TK_EXPERIMENTS
#define TK_KNOB const
#else
#define TK_KNOB static const
#endif

// plan_gemm (plan.h) under the environment knobs, read once (for A/B measurements; docs/knobs.md).
// a_mn / b_mn: A column-major / B row-major (MN-contiguous); the odd-width tiles need a K-major Y
// (A^T swapped, B unswapped), so each orientation only where its Y is (plan_rules.h kOddWidths).
// out_tma: the output's rows can be TMA-stored (16-B aligned pitch and address; plan_rules.h kMid64).
hopper::GemmPlan knob_plan(int M, int N, int K, int device, bool out_fp32, bool a_mn = false, bool b_mn = false,
                           bool out_tma = true, int split_sectors = 0) {
  // TK_HOPPER_CLUSTER: unset, 2-CTA multicast clusters for long-running 128 x 256 plans only
  // (plan_rules.h kLongRunWork); 1 none; 2 for every 128 x 256 plan of at least one wave.
  TK_KNOB int max_cluster = env_int("TK_HOPPER_CLUSTER", 0, 1, 2);
  // TK_HOPPER_GROUP_M: raster band height in row tiles; unset, the plan's (8, or 16 for
  // long-running plans).
  TK_KNOB int group_m = env_int("TK_HOPPER_GROUP_M", 0, 1, 64);
  // TK_HOPPER_BAND_RULE=1: multi-wave unsplit plans take the band of fewest modelled DRAM bytes
  // (plan_rules.h kBandRule, l2_band.h; ignored where TK_HOPPER_GROUP_M is set).
  TK_KNOB int band_rule = env_int("TK_HOPPER_BAND_RULE", hopper::kBandRule, 0, 1);
  TK_KNOB int split_min = env_int("TK_HOPPER_SPLIT_MIN_KTILES", 4, 1, INT_MAX);  // plan.h
  TK_KNOB int fill_narrow = env_int("TK_HOPPER_FILL_NARROW", hopper::kFillNarrowMaxKTiles, 0, 0);  // 0: off
  TK_KNOB int dynamic = env_int("TK_HOPPER_DYNAMIC", 1, 0, 0);  // 0: static unit stride (plan.h)
  // TK_HOPPER_STREAMK=0..5: the stream-K tail (plan_rules.h kStreamKTail; default 5; 0: none): 1 over all
  // CTAs wherever the last wave idles >= 1% of the run, 2 the aligned split of a part-filled last
  // wave, 3 mode 1 where the last wave idles >= 10% of the run and K is 16..65 k tiles, 4 mode 2
  // and, for a last wave more than half full, the split over W whole-tile CTAs per SM, 5 mode 2
  // and, for a last wave more than half full, its tiles dealt evenly to all CTAs (few k offsets).
  TK_KNOB int stream_k = env_int("TK_HOPPER_STREAMK", hopper::kStreamKTail, 0, 5);
  // TK_HOPPER_FUSED_SPLIT=1: split-K finished inside the GEMM kernel (plan.h); measured slower
  // than the separate PDL-launched reduction (H100: 128x4096x4096 30.9 vs 28.5 us), so opt-in.
  TK_KNOB int fused_split = env_int("TK_HOPPER_FUSED_SPLIT", 0, 0, 1);
  // TK_HOPPER_BM64=0: no 64-row tiles for skinny problems (plan.h; on by default); 2: rule 2
  // also where its 64-row tiles would split K (run unsplit; A/B only).
  TK_KNOB int bm64 = env_int("TK_HOPPER_BM64", 1, 0, 2);
  // TK_HOPPER_BM64_BN=64|128: the width of rule 1's 64-row tiles, fill test off (A/B only).
  TK_KNOB int bm64_bn = env_int("TK_HOPPER_BM64_BN", 0, 64, 128);
  // TK_HOPPER_SWAP=1: every plan swap-AB (kernel rows = N), i.e. 256 x 128 tiles of the output
  // for 128 x 256 kernel tiles; TK_HOPPER_SWAP=0: none (A/B only).
  TK_KNOB int swap = env_int("TK_HOPPER_SWAP", -1, 0, 1);
  // TK_HOPPER_SK_FILL=0|1|2: stream-K over all SMs when 128 x 256 tiles are fewer (plan.h).
  TK_KNOB int sk_fill = env_int("TK_HOPPER_SK_FILL", hopper::kStreamKFill, 0, 2);
  // TK_HOPPER_ONE_WG=0..127: the one-unit-per-CTA 128-row tiles that run on one consumer
  // warpgroup (plan_rules.h kOneWarpgroupWidths: bit 0 128-wide, bit 1 64-wide, bit 2 split-K too;
  // bit 3 split 128 x 256 plans as 128 x 128 with fewer splits; bit 4 the 72/80-wide token
  // widths shared by >= 3 token tiles, bit 5 with bit 4: at any token-tile count, bit 6 the
  // unswapped unsplit 128 x 144 plans, opt-in); 0: none.
  TK_KNOB int one_wg = env_int("TK_HOPPER_ONE_WG", hopper::kOneWarpgroupWidths, 0, 127);
  // TK_HOPPER_BN192=0..3: 128 x 192 tiles (plan_rules.h kWidth192: 1 for 129..192 kernel columns, 2 also
  // for part-filled single waves of 128 x 256 tiles, 3 also for split 128 x 256 plans).
  TK_KNOB int bn192 = env_int("TK_HOPPER_BN192", hopper::kWidth192, 0, 3);
  // TK_HOPPER_UNSWAP128=0: swapped unsplit 128 x 128 one-wave plans stay swapped; 1: those run
  // unswapped; 2: split swapped 128 x 256 plans too; 3: and split swapped 128 x 192 ones
  // (plan_rules.h kUnswapOneWave128).
  TK_KNOB int unswap128 = env_int("TK_HOPPER_UNSWAP128", hopper::kUnswapOneWave128, 0, 3);
  // TK_HOPPER_TILE=swap:bm:bn:splits:cluster (e.g. 0:128:128:2:1): every call takes that tile
  // (plan.h TileChoice; A/B only; ignored unless it parses to a valid choice).
  TK_KNOB std::optional<hopper::TileChoice> tile = tile_knob();
  // TK_HOPPER_ODD_WIDTHS=0..262143: tiles 144, 160 or 224 wide (plan_rules.h kOddWidths, a mask; bit 0 swapped
  // 160, bit 1 unswapped 144, bit 2 unswapped 224), bit 3 swapped tiles sized to the token count
  // (plan_rules.h kTokenWidths), bit 4 swapped 64 x 144 tiles for 129..144 tokens (kTokenRows64MinM),
  // bit 5 split swapped 128 x 192 plans of <= 160 tokens as 128 x 160, bit 6 bit 4 (and 7) in place of
  // split plans too, bit 7 swapped 64 x 160 tiles for 145..160 tokens, bit 8 64 x 176 for 161..176,
  // bit 9 64 x 192 for 177..192, bit 10 64 x 224 for 193..224 in place of split plans, bit 11 bits 1 and 2
  // past 512 tokens (mid-size plans of <= 2 waves), bit 12 bit 10 also in place of unsplit 128 x 128 plans,
  // bit 13 bit 2 past 512 tokens in any number of waves, bit 14 one-wave 144 plans with copied-out output
  // rows only at long K, bits 15 / 16 bits 13 / 11 swapped for a row-major A and B (224 / 144 along M),
  // bit 17 the 192 and 160 candidates past 512 tokens.
  TK_KNOB int odd_widths = env_int("TK_HOPPER_ODD_WIDTHS", hopper::kOddWidths, 0, 262143);
  // TK_HOPPER_MID64=0: unswapped 128 x 64 plans stay 128 x 64 (plan_rules.h kMid64: one-wave 64 x 128);
  // 1: 64 x 128 without the 2-CTA pairs for Y pitches that split sectors (kMid64Pairs).
  // Bit 2: also for outputs whose rows are not 16-B aligned (plan_rules.h kMid64UnalignedRows); 3: not them.
  TK_KNOB int mid64 = env_int("TK_HOPPER_MID64", hopper::kMid64, 0, 7);
  // TK_HOPPER_SECTOR_CLUSTERS=0: 128 x 256 plans do not cluster for a Y pitch that splits 32-B
  // sectors (plan_rules.h kSplitSectorClusters).
  TK_KNOB int sector_clusters = env_int("TK_HOPPER_SECTOR_CLUSTERS", hopper::kSplitSectorClusters, 0, 1);
  // TK_HOPPER_RING_STAGING=0|1: plan.h ring_staging never / at every K (A/B); unset, the rule.
  TK_KNOB int ring = env_int("TK_HOPPER_RING_STAGING", -1, 0, 1);
  hopper::GemmPlan p = hopper::plan_gemm(
      M, N, K, sm_count(device), !out_fp32, max_cluster, group_m, split_min, fill_narrow, dynamic != 0, stream_k,
      fused_split != 0, bm64 != 0, bm64_bn == 64 || bm64_bn == 128 ? bm64_bn : 0, swap, sk_fill, bm64 == 2, one_wg,
      bn192, unswap128, tile ? &*tile : nullptr, odd_widths, (a_mn ? 0 : 1) | (b_mn ? 0 : 2), mid64, out_tma,
      split_sectors, sector_clusters, band_rule);
  if (ring >= 0) p.ring_staging = !out_fp32 && hopper::ring_staging(p, K, ring);
  return p;
}

// TK_HOPPER_STORE: the 16-bit epilogue's variant (launch.h StoreVariant): unset or "deferred"
// the default (the last rounds stored under the next unit's mainloop), "tma" (every round
// stored at once), "copy" (no TMA store), "stmatrix" (staging by stmatrix; measured no faster).
hopper::StoreVariant store_knob() {
  const char* e = std::getenv("TK_HOPPER_STORE");
  const std::string v = e != nullptr ? e : "";
  return v == "copy" ? hopper::StoreVariant::copy
         : v == "stmatrix" ? hopper::StoreVariant::stmatrix
         : v == "tma" ? hopper::StoreVariant::tma
                      : hopper::StoreVariant::deferred;
}

const char* decline_reason(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (!is_sm90(a.get_device())) return "the GPU is not sm_90 (Hopper); the kernels need sm_90a";
  return operand_decline_reason(a, b);
}

bool hopper_backend(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                    double alpha, double beta) {
  if (const char* why = decline_reason(out, a, b)) {
    note_fallback(why);
    return false;
  }
  c10::cuda::CUDAGuard guard(a.device());
  // The TMA descriptors are encoded through the driver API, which needs a current context; a
  // thread whose first CUDA work is this call (autograd's backward thread) has none until a
  // runtime call makes the primary context current. CUDAGuard skips cudaSetDevice when the
  // device already matches, so do it here once per thread and device.
  thread_local int context_ready_for = -1;
  if (context_ready_for != a.get_device()) {
    C10_CUDA_CHECK(cudaSetDevice(a.get_device()));
    context_ready_for = a.get_device();
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  RepitchJobs copies;  // unaligned pitches: both operands' copies in one pad_lines launch (below)
  const Operand A = describe_operand(a, &copies);
  const Operand B = describe_operand(b, &copies);
  hopper::GemmArgs g = make_gemm_args(A, B, a, b, out, c, alpha, beta);
  // TK_HOPPER_REPITCH_PDL=0: the GEMM launched normally after the copy (A/B of the dependent launch).
  TK_KNOB int repitch_pdl = env_int("TK_HOPPER_REPITCH_PDL", 1, 0, 0);
  // TK_HOPPER_PDL=1: every GEMM and skinny launch is a programmatic dependent of the kernel before
  // it (GemmArgs::dependent), so its launch and prologue overlap that kernel's tail.
  TK_KNOB int pdl_all = env_int("TK_HOPPER_PDL", hopper::kDependentLaunch, 0, 1);
  const bool out_fp32 = g.out_dtype == hopper::DType::fp32;
  g.plan = knob_plan(g.M, g.N, g.K, a.get_device(), out_fp32, g.a_mn, g.b_mn,
                     hopper::output_tma_storable(g.N, !out_fp32, reinterpret_cast<uintptr_t>(g.out)),
                     hopper::split_sectors_mask(g.lda * 2, g.ldb * 2));
  // Decode shapes (M <= 16, 9..16 only in one shape of CTA: skinny_plan.h; F.linear's layout) go
  // to the skinny kernel; the limit is capped at 16 there, and 0 (or less) disables it.
  TK_KNOB int skinny_max_m = env_int("TK_HOPPER_SKINNY_MAX_M", hopper::kSkinnyMaxM, INT_MIN, INT_MAX);
  TK_KNOB int skinny_rows = env_int("TK_HOPPER_SKINNY_ROWS16", hopper::kSkinnyRowsTn2, 16, 33);
  // TK_HOPPER_SKINNY_LOAD=0|1: the skinny kernel's weight loads (skinny_plan.h kSkinnyLoad; A/B).
  TK_KNOB int skinny_load = env_int("TK_HOPPER_SKINNY_LOAD", hopper::kSkinnyLoad, 0, 1);
  // TK_HOPPER_SKINNY_YIELD=1: the skinny kernel yields to a full unsplit wgmma wave (skinny_plan.h
  // kSkinnyYield; A/B).
  TK_KNOB int skinny_yield = env_int("TK_HOPPER_SKINNY_YIELD", hopper::kSkinnyYield ? 1 : 0, 0, 1);
  hopper::SkinnyPlan sp = hopper::plan_skinny(g.M, g.N, g.K, !g.a_mn, !g.b_mn, sm_count(a.get_device()),
                                              skinny_max_m, skinny_rows, skinny_yield ? &g.plan : nullptr);
  sp.load = skinny_load;
  if (copies.n > 0) {
    TK_KNOB int copy_chunks = env_int("TK_HOPPER_COPY_CHUNKS", hopper::kCopyChunksPerThread, 1, 4);
    const char* err = hopper::pad_lines_launch(copies, stream, copy_chunks);
    TORCH_CHECK(err == nullptr, "tk: ", err);
  }
  g.dependent = (copies.n > 0 && repitch_pdl != 0) || pdl_all != 0;
  if (sp.use) {
    const char* err = hopper::skinny_launch(g, sp, stream);
    TORCH_CHECK(err == nullptr, "tk: Hopper skinny GEMM launch failed: ", err);
    count_call(Path::hopper);
    count_call(Path::hopper_skinny);
    return true;
  }
  // TK_HOPPER_EVICT_FIRST=0..3: operands under an L2 evict_first policy (1 A, 2 B, 3 both)
  // instead of the plan's (plan_rules.h kEvictFirstMaxM).
  TK_KNOB int evict_first = env_int("TK_HOPPER_EVICT_FIRST", -1, 0, 3);
  g.evict_first = evict_first >= 0 ? evict_first : g.plan.evict_first;
  TK_KNOB hopper::StoreVariant store = store_knob();
  g.store = store;
  at::Tensor workspace;  // split-K fp32 partials, from the caching allocator (stream-ordered)
  if (g.plan.splits > 1) {
    workspace = at::empty({g.plan.splits, g.M, g.N}, a.options().dtype(at::kFloat));
    g.workspace = workspace.data_ptr<float>();
  }
  if (g.plan.sk_tiles > 0) {  // stream-K tail partials: one 128 x bn fp32 tile per CTA
    workspace = at::empty({g.plan.grid, 128, g.plan.bn}, a.options().dtype(at::kFloat));
    g.workspace = workspace.data_ptr<float>();
  }
  // The dynamic schedule's ticket counter, then the ready flags (2 per CTA for stream-K, 2 per unit
  // for fused split-K), zeroed on the stream; a bare ticket counter is the stream's own, which
  // the kernel leaves zeroed (ticket_counter.h).
  // TK_HOPPER_TICKET_RESET=0: a fresh zeroed counter for every call (A/B).
  TK_KNOB int ticket_reset = env_int("TK_HOPPER_TICKET_RESET", 1, 0, 1);
  at::Tensor unit_counter;
  if (ticket_reset != 0 && g.plan.dynamic && g.plan.sk_tiles == 0 && !g.plan.fused_split)
    g.unit_counter = hopper::stream_ticket_counter(a.get_device(), stream);
  if (g.unit_counter == nullptr && (g.plan.dynamic || g.plan.sk_tiles > 0 || g.plan.fused_split)) {
    const int64_t flags = g.plan.sk_tiles > 0 ? 2 * g.plan.grid : g.plan.fused_split ? 2 * g.plan.units : 0;
    unit_counter = at::zeros({1 + flags}, a.options().dtype(at::kInt));
    g.unit_counter = unit_counter.data_ptr<int>();
  }
  const char* err = hopper::gemm_launch(g, stream);
  TORCH_CHECK(err == nullptr, "tk: Hopper GEMM launch failed: ", err);
  count_call(Path::hopper);
  if (g.plan.sk_tiles > 0) count_call(Path::hopper_stream_k);
  return true;
}

// The SwiGLU, RoPE and K-parts GEMMs' launch (launch.h GemmArgs::swiglu_h / swiglu_gu / rope_cos / b_parts): a fixed
// 128 x 256 plan (the epilogues' tile), unswapped, unclustered, unsplit, no stream-K, on the current
// stream of `dev`. The backends below decline (visibly) what it cannot run.
void launch_fixed_256(hopper::GemmArgs& g, int dev, const char* what) {
  c10::cuda::CUDAGuard guard(dev);
  thread_local int context_ready_for = -1;  // (hopper_backend says why)
  if (context_ready_for != dev) {
    C10_CUDA_CHECK(cudaSetDevice(dev));
    context_ready_for = dev;
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  g.alpha = 1.f, g.beta = 0.f;
  const hopper::TileChoice tile{false, 128, 256, 1, 1};
  g.plan = hopper::plan_gemm(g.M, g.N, g.K, sm_count(dev), true, 1, 0, 4, hopper::kFillNarrowMaxKTiles,
                             true, /*stream_k=*/0, false, true, 0, 0, 0, false, hopper::kOneWarpgroupWidths,
                             hopper::kWidth192, hopper::kUnswapOneWave128, &tile);
  g.plan.ring_staging = false;
  g.evict_first = g.plan.evict_first;
  if (g.plan.dynamic) g.unit_counter = hopper::stream_ticket_counter(dev, stream);
  const char* err = hopper::gemm_launch(g, stream);
  TORCH_CHECK(err == nullptr, "tk: Hopper ", what, " launch failed: ", err);
  count_call(Path::hopper);
}

bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

// The fixed-plan GEMMs' arguments (the backends below): a (M x K, row-major), b (ld = b.size(1)):
// K-major (an N x K row-major weight) or, b_mn, N-contiguous (K x N row-major); 16-bit in and out.
hopper::GemmArgs fixed_args(const at::Tensor& a, const at::Tensor& b, bool b_mn, int64_t N) {
  hopper::GemmArgs g{};
  g.a = a.data_ptr(), g.lda = a.size(1), g.a_mn = false;
  g.b = b.data_ptr(), g.ldb = b.size(1), g.b_mn = b_mn;
  g.M = int(a.size(0)), g.N = int(N), g.K = int(a.size(1));
  g.in_dtype = g.out_dtype = to_gemm_dtype(a.scalar_type());
  return g;
}

// True when `why` is null; else the decline is noted (fallback_reasons) and false.
bool accepted(const char* why) {
  if (why != nullptr) note_fallback(why);
  return why == nullptr;
}

// tk.linear_swiglu on the SwiGLU GEMM (launch.h GemmArgs::swiglu_h): x2d row-major, the gate and up
// weights (I x K, row-major: the GEMM's B column-major), gu / h contiguous.
bool hopper_swiglu_backend(at::Tensor& gu, at::Tensor& h, const at::Tensor& x, const at::Tensor& wg,
                           const at::Tensor& wu) {
  const char* why = !is_sm90(x.get_device()) ? "the GPU is not sm_90 (Hopper); the kernels need sm_90a"
                    : (x.scalar_type() != at::kBFloat16 && x.scalar_type() != at::kHalf)
                        ? "tk.linear_swiglu: dtype is not bfloat16/float16"
                    : (!x.is_contiguous() || !wg.is_contiguous() || !wu.is_contiguous() || x.size(1) % 8 != 0 ||
                       !aligned16(x) || !aligned16(wg) || !aligned16(wu))
                        ? "tk.linear_swiglu: input and weights must be contiguous and 16-B aligned with in_features % 8 == 0"
                    : (x.size(0) > INT_MAX || 2 * wg.size(0) > INT_MAX || x.size(1) > INT_MAX)
                        ? "tk.linear_swiglu: a dimension exceeds 2^31-1"
                        : nullptr;
  if (!accepted(why)) return false;
  hopper::GemmArgs g = fixed_args(x, wg, false, 2 * wg.size(0));
  g.out = gu.data_ptr(), g.swiglu_h = h.data_ptr(), g.swiglu_up = wu.data_ptr();
  launch_fixed_256(g, x.get_device(), "SwiGLU GEMM");
  return true;
}

// tk.swiglu_down_backward on the SwiGLU backward GEMM (launch.h GemmArgs::swiglu_gu): dh = dy . W_down
// (dy M x H row-major, W_down H x I row-major: B row-major), d_gate / d_up from it and gu in its
// epilogue; all contiguous.
bool hopper_swiglu_grad_backend(at::Tensor& d_gate, at::Tensor& d_up, const at::Tensor& dy, const at::Tensor& wd,
                                const at::Tensor& gu) {
  const char* why = !is_sm90(dy.get_device()) ? "the GPU is not sm_90 (Hopper); the kernels need sm_90a"
                    : (dy.scalar_type() != at::kBFloat16 && dy.scalar_type() != at::kHalf)
                        ? "tk.swiglu_down_backward: dtype is not bfloat16/float16"
                    : (!dy.is_contiguous() || !wd.is_contiguous() || !gu.is_contiguous() || dy.size(1) % 8 != 0 ||
                       !aligned16(dy) || !aligned16(wd) || !aligned16(gu))
                        ? "tk.swiglu_down_backward: grad_output, down_weight and gu must be contiguous and 16-B aligned "
                          "with hidden size % 8 == 0"
                    : (dy.size(0) > INT_MAX || gu.size(1) > INT_MAX || dy.size(1) > INT_MAX)
                        ? "tk.swiglu_down_backward: a dimension exceeds 2^31-1"
                        : nullptr;
  if (!accepted(why)) return false;
  hopper::GemmArgs g = fixed_args(dy, wd, true, wd.size(1));
  g.out = d_gate.data_ptr(), g.swiglu_gu = gu.data_ptr(), g.swiglu_du = d_up.data_ptr();
  // d_gate / d_up: contiguous, or the column halves of one M x 2I tensor (tk.swiglu_down_backward_cat).
  TORCH_CHECK(d_gate.stride(1) == 1 && d_up.stride(1) == 1 && d_gate.stride(0) == d_up.stride(0),
              "tk: the SwiGLU backward GEMM's outputs must share a row pitch with unit column stride");
  if (d_gate.stride(0) != d_gate.size(1)) g.ldo = d_gate.stride(0);
  launch_fixed_256(g, dy.get_device(), "SwiGLU backward GEMM");
  return true;
}

// tk.linear_rope on the RoPE GEMM (launch.h GemmArgs::rope_cos): x2d row-major, the weight (N x K,
// row-major: the GEMM's B column-major), heads of 128 columns, the tables' rows 16-B aligned with unit
// column stride.
bool hopper_rope_backend(at::Tensor& out, const at::Tensor& x, const at::Tensor& w, const at::Tensor& cos,
                         const at::Tensor& sin) {
  auto table_ok = [](const at::Tensor& t) {
    return t.stride(1) == 1 && t.stride(0) >= 64 && t.stride(0) % 8 == 0 && aligned16(t);
  };
  const char* why = !is_sm90(x.get_device()) ? "the GPU is not sm_90 (Hopper); the kernels need sm_90a"
                    : (x.scalar_type() != at::kBFloat16 && x.scalar_type() != at::kHalf)
                        ? "tk.linear_rope: dtype is not bfloat16/float16"
                    : cos.size(1) != 64 ? "tk.linear_rope: head_dim is not 128 (the RoPE kernel's heads are 128 wide)"
                    : (!x.is_contiguous() || !w.is_contiguous() || x.size(1) % 8 != 0 || !aligned16(x) || !aligned16(w))
                        ? "tk.linear_rope: input and weight must be contiguous and 16-B aligned with in_features % 8 == 0"
                    : (!table_ok(cos) || !table_ok(sin) || cos.stride(0) != sin.stride(0))
                        ? "tk.linear_rope: cos / sin rows must be 16-B aligned, equally far apart, with unit column stride"
                    : (x.size(0) > INT_MAX || w.size(0) > INT_MAX || x.size(1) > INT_MAX || cos.stride(0) > INT_MAX)
                        ? "tk.linear_rope: a dimension exceeds 2^31-1"
                        : nullptr;
  if (!accepted(why)) return false;
  hopper::GemmArgs g = fixed_args(x, w, false, w.size(0));
  g.out = out.data_ptr(), g.rope_cos = cos.data_ptr(), g.rope_sin = sin.data_ptr(), g.rope_ld = cos.stride(0);
  launch_fixed_256(g, x.get_device(), "RoPE GEMM");
  return true;
}

// tk.linear_backward_cat's / tk.linear_backward_parts' grad_input on the K-parts GEMM (launch.h
// GemmArgs::b_parts / a_parts): [G_0 | G_1 | G_2] (M x sum K_i, row-major: one matrix, `gs` = {G}, or
// one per part) . [W_0; W_1; W_2] read in place (each K_i x N, row-major: the GEMM's B row-major),
// every part but the last a whole number of 64-row k tiles.
bool hopper_kcat_backend(at::Tensor& out, at::TensorList gs, at::TensorList ws) {
  bool parts_ok = ws.size() >= 2 && ws.size() <= 3;
  for (size_t i = 0; parts_ok && i < ws.size(); ++i)
    parts_ok = ws[i].is_contiguous() && aligned16(ws[i]) && ws[i].size(0) > 0 &&
               (i + 1 == ws.size() || ws[i].size(0) % 64 == 0);
  bool grads_ok = gs.size() == 1 || gs.size() == ws.size();
  for (size_t i = 0; grads_ok && i < gs.size(); ++i)
    grads_ok = gs[i].is_contiguous() && aligned16(gs[i]) && gs[i].size(1) % 8 == 0;
  const at::Tensor& a = gs[0];
  int64_t K = 0;
  for (const at::Tensor& gi : gs) K += gi.size(1);
  const int64_t N = ws[0].size(1);
  const char* why = !is_sm90(a.get_device()) ? "the GPU is not sm_90 (Hopper); the kernels need sm_90a"
                    : (a.scalar_type() != at::kBFloat16 && a.scalar_type() != at::kHalf)
                        ? "tk.linear_backward_cat / _parts: dtype is not bfloat16/float16"
                    : !parts_ok ? "tk.linear_backward_cat / _parts: the K-parts GEMM takes 2 or 3 contiguous, 16-B "
                                  "aligned weights, all but the last with a multiple of 64 rows"
                    : (!grads_ok || N % 8 != 0)
                        ? "tk.linear_backward_cat / _parts: the output gradients must be contiguous and 16-B aligned, "
                          "their columns and in_features multiples of 8"
                    : (a.size(0) > INT_MAX || K > INT_MAX || N > INT_MAX)
                        ? "tk.linear_backward_cat / _parts: a dimension exceeds 2^31-1"
                        : nullptr;
  if (!accepted(why)) return false;
  hopper::GemmArgs g = fixed_args(a, ws[0], true, N);
  g.K = int(K);
  g.out = out.data_ptr();
  g.b_parts[0] = ws[1].data_ptr(), g.b_parts[1] = ws.size() == 3 ? ws[2].data_ptr() : nullptr;
  g.k_part_end[0] = ws[0].size(0), g.k_part_end[1] = ws.size() == 3 ? ws[0].size(0) + ws[1].size(0) : K;
  for (size_t i = 1; i < ws.size(); ++i) {  // A's parts: the grads' own, or column slices of the one
    const bool own = gs.size() > 1;
    g.a_parts[i - 1] = own ? gs[i].data_ptr()
                           : static_cast<const char*>(a.data_ptr()) + g.k_part_end[i - 1] * int64_t(a.element_size());
    g.a_parts_ld[i - 1] = own ? gs[i].size(1) : a.size(1);
  }
  launch_fixed_256(g, a.get_device(), "K-parts GEMM");
  return true;
}

// tk.linear_backward_parts' weight gradients on the M-parts GEMM (launch.h GemmArgs::m_part_end):
// [G_0 | G_1 | G_2]^T . X, each G_i (M x out_i, row-major: G_i^T column-major) read in place by row
// range of the product, X (M x in_features, row-major: the GEMM's B row-major); every part but the last
// a whole number of 128-row tiles. Where tk.gemm's plan for the joint product takes a stream-K tail
// (a part-filled last wave; the fixed plan has none), each weight's gradient is its own tk.gemm
// written into its row block of `out` instead (H100: 11264 x 2048 x 8192, the gate / up weights, 5.33
// waves of 128 x 256 tiles, was slower on the M-parts GEMM; benchmarks/NOTES.md 2026-12-07b / 07c).
bool hopper_mparts_backend(at::Tensor& out, at::TensorList gs, const at::Tensor& x) {
  bool parts_ok = gs.size() >= 2 && gs.size() <= 3;
  int64_t rows = 0;
  for (size_t i = 0; parts_ok && i < gs.size(); ++i) {
    parts_ok = gs[i].is_contiguous() && aligned16(gs[i]) && gs[i].size(1) > 0 && gs[i].size(1) % 8 == 0 &&
               (i + 1 == gs.size() || gs[i].size(1) % 128 == 0);
    rows += gs[i].size(1);
  }
  const char* why = !is_sm90(x.get_device()) ? "the GPU is not sm_90 (Hopper); the kernels need sm_90a"
                    : (x.scalar_type() != at::kBFloat16 && x.scalar_type() != at::kHalf)
                        ? "tk.linear_backward_parts: dtype is not bfloat16/float16"
                    : !parts_ok ? "tk.linear_backward_parts: the M-parts GEMM takes 2 or 3 contiguous, 16-B aligned "
                                  "output gradients with columns a multiple of 8, all but the last a multiple of 128"
                    : (!x.is_contiguous() || !aligned16(x) || x.size(1) % 8 != 0)
                        ? "tk.linear_backward_parts: input must be contiguous and 16-B aligned with in_features % 8 == 0"
                    : (x.size(0) > INT_MAX || rows > INT_MAX || x.size(1) > INT_MAX)
                        ? "tk.linear_backward_parts: a dimension exceeds 2^31-1"
                        : nullptr;
  if (!accepted(why)) return false;
  // TK_HOPPER_MPARTS_EACH=0: the M-parts GEMM also where the joint plan takes a stream-K tail; 2: one
  // tk.gemm per weight everywhere (A/B).
  TK_KNOB int each = env_int("TK_HOPPER_MPARTS_EACH", 1, 0, 2);
  if (each == 2 || (each == 1 && knob_plan(int(rows), int(x.size(1)), int(x.size(0)), x.get_device(), false,
                                           /*a_mn=*/true, /*b_mn=*/true).sk_tiles > 0)) {
    int64_t r0 = 0;
    for (const at::Tensor& gi : gs) {
      at::Tensor block = out.narrow(0, r0, gi.size(1));  // (contiguous: whole rows of a row-major `out`)
      if (!hopper_backend(block, gi.t(), x, std::nullopt, 1.0, 0.0)) return false;  // (noted there)
      r0 += gi.size(1);
    }
    return true;
  }
  hopper::GemmArgs g = fixed_args(x, x, true, x.size(1));  // (B = x; A set below)
  g.a = gs[0].data_ptr(), g.lda = gs[0].size(1), g.a_mn = true;
  g.M = int(rows), g.K = int(x.size(0));
  g.out = out.data_ptr();
  g.m_part_end[0] = gs[0].size(1), g.m_part_end[1] = gs.size() == 3 ? gs[0].size(1) + gs[1].size(1) : rows;
  for (size_t i = 1; i < gs.size(); ++i) g.a_parts[i - 1] = gs[i].data_ptr(), g.a_parts_ld[i - 1] = gs[i].size(1);
  launch_fixed_256(g, x.get_device(), "M-parts GEMM");
  return true;
}

}  // namespace

bool hopper_available(int device) { return is_sm90(device); }

hopper::GemmPlan hopper_dispatch_plan(int M, int N, int K, int device, bool out_fp32, bool a_mn, bool b_mn) {
  return knob_plan(M, N, K, device, out_fp32, a_mn, b_mn, hopper::output_tma_storable(N, !out_fp32),
                   hopper::split_sectors_contiguous(M, N, K, a_mn, b_mn));
}

const char* hopper_store_variant() {
  TK_KNOB hopper::StoreVariant store = store_knob();
  switch (store) {
    case hopper::StoreVariant::copy: return "copy";
    case hopper::StoreVariant::stmatrix: return "stmatrix";
    case hopper::StoreVariant::deferred: return "deferred";
    default: return "tma";
  }
}

}  // namespace tk

TORCH_LIBRARY_IMPL(tk, CUDA, m) {
  tk::BackendOps<&tk::hopper_backend, &tk::hopper_swiglu_backend, &tk::hopper_swiglu_grad_backend,
                 &tk::hopper_rope_backend, &tk::hopper_kcat_backend, &tk::hopper_mparts_backend>::register_impls(m);
}
