"""A small workload for compute-sanitizer (memcheck / racecheck / synccheck): every kernel the
dispatcher can pick on tail shapes, each result checked, so the tool sees real launches.

Kernels: (bf16 | fp16) x (same | fp32 output) x 4 layouts x tile width. The --small shapes pick,
through csrc/gemm/hopper/plan.h: 300x257x100 -> 128x256 tiles; 20x200x1000 -> swap-AB, 128x64
tiles, split-K 4 (+ the reduction kernel); 300x100x64 -> 128x128 tiles; 1100x4000x520 -> 128x256,
144 units on <= 132 CTAs: the dynamic schedule (with TK_HOPPER_CLUSTER=2: 2-CTA multicast
clusters, the last one with a CTA past the end; with TK_HOPPER_STREAMK=1: all 144 tiles in the
stream-K tail, cross-CTA partials and flags); 1100x4200x1000 -> 153 128x256 tiles of 16 k tiles
(with TK_HOPPER_STREAMK=1 or 3, plan_rules.h kStreamKTail: all of them dealt by k iteration);
5x1100x1001 (and, full set, 3x1057x64) with a row-major A and a transposed B -> the skinny
mma.sync kernel (tn = 1, partial K chunk, partial last CTA);
330x4000x136 -> 96 128x128 tiles run by one consumer warpgroup each (two 64-row strips; fp32
output: 300x257x100, 60x1032x100, 14x8200x130; TK_HOPPER_ONE_WG=0, the second run, turns them
back into two-warpgroup tiles); 190x20000x520 -> swapped 128x192 tiles, 157 units, 3 epilogue
rounds per unit (TK_HOPPER_BN192=0, the second run: 128x256 tiles); 300x4000x136 -> swapped
128x80 tiles sized to the tokens (plan_rules.h kTokenWidths), a 16-column last epilogue round; 136x8200x136 -> swapped
64x144 tiles (one token tile, plan.h kTokenRows64Width); 150x8200x136 -> swapped 64x160 tiles (a 32-column
last round); 170x8200x136 -> swapped 64x176 tiles (48 columns); 185x8200x136 -> swapped 64x192 tiles; 136x6150x136 -> swapped 128x72 tiles on two warpgroups (two token tiles); 300x8200x520 -> swapped 128x160
tiles for a row-major A (a 32-column last epilogue round through its own TMA box; a token tail);
360x6150x520 -> unswapped 128x192 tiles with an odd output pitch (every round copied out by rows;
128x144 until plan_rules.h kOddWidths144Unaligned, which keeps one-wave 144-wide plans with such rows
for K >= 8192: under TK_HOPPER_TILE=0:128:144:1:1, gpu_check.sh, every shape with a 16-bit output
takes them where it can, the last round a 16-column one: several units per CTA); 1100x4001x256 ->
234 unswapped 128x160 tiles (kOddWidthsMid192160) on 132 CTAs with an odd output pitch, a 1-column
last tile (for a row-major A and B: 224 swapped 128x160 tiles, a 140-row last column tile; TN: 189
128x192 tiles); 2500x2601x136 -> 240 unswapped 128x224 tiles (kOddWidthsMidM224), a 137-column last
tile (for a row-major A and B: 252 swapped 128x224 tiles, kOddWidthsSwappedMid224, a 36-row last
column tile); 1500x1536x136 -> for a row-major A and B, 132 swapped 128x144 tiles
(kOddWidthsSwappedMid144, a 60-row last column tile), one-warpgroup unswapped 128x144 for the others; 120x1000x9000 -> 128x128 tiles split 16 ways (partials through TMA); 300x1600x8300 -> swapped
128x160 tiles split 5 ways for a row-major A, 128x192 x 5 for a column-major one (plan.h bn192 = 3:
a split 128x256 plan re-planned); 150x2100x1000 -> 64x64 tiles in
2-CTA clusters multicasting the B tile (3 row tiles: the last pair's second CTA is past M); full
set, 40x8200x520 -> swapped 64x64 tiles; 60x1032x100 -> swapped 128x64 tiles, unsplit: the
transposed TMA-store epilogue (16-bit output); 2049x4104x64 -> 289 units of one k tile each on
<= 132 CTAs: the deferred epilogue stores a unit's held rounds before packing the next; 11x4100x999
-> the skinny kernel's 32-row CTAs of 16 warps (9..16 tokens, tn = 2, partial CTA, odd K re-pitched)
and 14x8200x130 -> swapped 128x64 tiles (under TK_HOPPER_SKINNY_ROWS16=32, gpu_check.sh's second
memcheck run: both in 32-row CTAs of 8 warps); full set, 512x1001x1000 -> 64 64x128 tiles with
an output whose rows are not 16-B aligned (row-pass copy-out, plan_rules.h kMid64UnalignedRows: from 16 k tiles);
full set, 2048x5632x4096 -> 352 128x256 tiles of 64 k tiles on 132 CTAs: stream-K mode 5 (plan_rules.h
kStreamKTail), the last wave's 88 tiles dealt evenly to all CTAs, cross-CTA partials and flags. fp32 output always uses 128-wide tiles (swap-AB/split-K included via the same shapes).
`--shapes=MxNxK,...` runs only those shapes (all dtypes, layouts and output dtypes): a targeted run."""
import sys

import torch

import torch_tk


def main():
    small = "--small" in sys.argv  # racecheck/synccheck instrument every mbarrier spin: keep it short
    shapes = ((300, 257, 100), (20, 200, 1000), (300, 100, 64), (1100, 4000, 520), (9, 1100, 1001), (150, 2100, 1000),
              (60, 1032, 100), (2049, 4104, 64), (11, 4100, 999), (14, 8200, 130), (5, 1100, 1001), (330, 4000, 136), (300, 4000, 136),
              (136, 8200, 136), (150, 8200, 136), (170, 8200, 136), (185, 8200, 136), (136, 6150, 136),
              (190, 20000, 520), (300, 8200, 520), (360, 6150, 520), (120, 1000, 9000), (300, 1600, 8300),
              (1100, 4200, 1000), (1100, 4001, 256), (2500, 2601, 136), (1500, 1536, 136))
    if not small:
        shapes += ((1, 7, 9), (129, 127, 200), (200, 130, 64), (1, 4096, 520), (257, 1000, 300), (3, 1057, 64),
                   (40, 8200, 520), (512, 1001, 1000), (2048, 5632, 4096))
    for arg in sys.argv[1:]:  # --shapes=MxNxK,...: these shapes only (a targeted sanitizer run)
        if arg.startswith("--shapes="):
            shapes = tuple(tuple(int(v) for v in s.split("x")) for s in arg.split("=", 1)[1].split(","))
    if not torch_tk.hopper_available():
        print("sanitize_case: no Hopper kernel here; nothing to check")
        return 0
    torch.manual_seed(0)
    bad = 0
    for dtype in (torch.bfloat16, torch.float16):
        for (M, N, K) in shapes:
            for ta in (False, True):
                for tb in (False, True):
                    a = torch.randn(K, M, device="cuda", dtype=dtype).t() if ta else torch.randn(M, K, device="cuda", dtype=dtype)
                    b = torch.randn(N, K, device="cuda", dtype=dtype).t() if tb else torch.randn(K, N, device="cuda", dtype=dtype)
                    for out_dtype in (None, torch.float32):  # every kernel the dispatcher can pick
                        bias = torch.randn(N, device="cuda", dtype=out_dtype or dtype)
                        out = torch_tk.addmm(bias, a, b, beta=0.5, alpha=2.0, out_dtype=out_dtype)
                        ref = 0.5 * bias.double() + 2.0 * (a.double() @ b.double())
                        err = ((out.double() - ref).norm() / ref.norm()).item()
                        if not err < 1e-2:
                            bad += 1
                            print(f"MISMATCH {dtype}->{out_dtype} {M}x{N}x{K} ta={ta} tb={tb} rel_err={err:.3e}")
    torch.cuda.synchronize()
    print(f"sanitize_case: {bad} mismatches; counters {torch_tk.kernel_counters()}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
