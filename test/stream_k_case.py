"""GPU check of the stream-K kernels, run by test_stream_k_gpu.py in a child process (the
dispatcher reads its knobs once per process): `tail` (argument; TK_HOPPER_STREAMK=1, the last
wave's tiles by k iteration), `split` (TK_HOPPER_STREAMK=2: the last wave's tiles each in 2-4
aligned k ranges on their own CTAs), `fill` (TK_HOPPER_SK_FILL=2: fewer 128x256 tiles than SMs,
every tile by k iteration over all SMs, up to several CTAs per tile), `waves` (TK_HOPPER_STREAMK=4:
a last wave more than half full split the same way over W whole-tile CTAs per SM) or `even`
(TK_HOPPER_STREAMK=5: such a last wave's tiles dealt evenly to all CTAs of the persistent grid).

For each shape x layout x dtype: the plan must put tiles in the tail, the output is poisoned
(NaN-filled allocator blocks) before each of two calls, both calls must give the same bits, the
stream-K counter must move, and addmm (alpha, beta, bias) must match a float64 reference.
Exit status 0 when every case passes; the failures are printed otherwise.
"""
import sys

import torch

import torch_tk
from conftest import make_matrix, rel_err

TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}
# Several waves with a part-idle last one (tiles on 132 SMs: 153, 165, 512 -> tails of 153, 165,
# 248), K tails, and K of 2 k tiles (one-k-tile segments).
SHAPES = [(2049, 2055, 1000), (4097, 1100, 520), (4096, 4096, 512), (2049, 2055, 72)]
# Fill mode (132 SMs): 112 swapped tiles, 54-55 k tiles per CTA (2-3 CTAs per tile); 32 tiles x
# 224 k tiles (4-6 CTAs per tile); unswapped 64 tiles with an N and a K tail; 15 tiles of 256 k
# tiles (8-9 CTAs per tile, 29 k tiles each).
FILL_SHAPES = [(256, 14336, 4096), (256, 4096, 14336), (1024, 2000, 3000), (300, 1100, 16384)]
# Aligned last-wave split (132 SMs): 165 tiles (33 in the tail x 2 slots, an N and a K tail),
# 153 tiles (21 x 4 slots, a K tail), 133 tiles (one tile in 4 slots).
SPLIT_SHAPES = [(4097, 1100, 2100), (2049, 2055, 4100), (2432, 1792, 4096)]
# Mode 4's generations (132 SMs): 352 tiles = 2 waves + 88 (264 CTAs, 3 ranges per tail tile; an N
# and a K tail), 480 tiles = 3 waves + 84 (396 CTAs, 4 ranges; an M and a K tail).
WAVES_SHAPES = [(2800, 4000, 3100), (3800, 4096, 4100)]
# Mode 5's even tail (132 SMs, K >= 64 k tiles): 352 tiles = 2 waves + 88 (k offsets 0, 1/3, 2/3 of
# 65 k tiles; an M, an N and a K tail), 231 tiles = 1 wave + 99 (offsets in quarters; M, N, K tails).
EVEN_SHAPES = [(2800, 4000, 4100), (2650, 2800, 4100)]
LAYOUTS = [("n", "n"), ("n", "t"), ("t", "n"), ("t", "t")]


def poison(nbytes):
    junk = [torch.full((nbytes,), 255, dtype=torch.uint8, device="cuda") for _ in range(3)]
    torch.cuda.synchronize()
    del junk


def main(mode):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    failures, cases = [], 0
    shapes = {"tail": SHAPES, "split": SPLIT_SHAPES, "fill": FILL_SHAPES, "waves": WAVES_SHAPES, "even": EVEN_SHAPES}
    for M, N, K in shapes[mode]:
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0)
        if (plan["sk_tiles"] == 0 or (mode == "waves" and plan["grid"] <= sms)
                or (mode == "even" and (plan["sk_parts"] != plan["grid"] or 2 * plan["sk_tiles"] <= plan["grid"]))):
            failures.append(f"{M}x{N}x{K}: no stream-K {mode} planned on {sms} SMs: {plan}")
            continue
        for dtype in (torch.bfloat16, torch.float16):
            for lay in LAYOUTS:
                a = make_matrix(M, K, dtype, lay[0], device="cuda")
                b = make_matrix(K, N, dtype, lay[1], device="cuda")
                bias = torch.randn(N, device="cuda").to(dtype)
                outs = []
                c0 = torch_tk.kernel_counters()["hopper_stream_k"]
                for _ in range(2):
                    poison(M * N * 2)
                    outs.append(torch_tk.addmm(bias, a, b, beta=0.5, alpha=2.0))
                    torch.cuda.synchronize()
                moved = torch_tk.kernel_counters()["hopper_stream_k"] - c0
                what = f"{M}x{N}x{K} {''.join(lay).upper()} {dtype}"
                if moved != 2:
                    failures.append(f"{what}: stream-K counter moved by {moved}")
                if not torch.equal(outs[0].view(torch.uint8), outs[1].view(torch.uint8)):
                    failures.append(f"{what}: two calls gave different bits")
                ref = 2.0 * (a.double() @ b.double()) + 0.5 * bias.double()
                err = rel_err(outs[0], ref)
                if not err < TOL[dtype]:
                    failures.append(f"{what}: relative error {err:.3e}")
                cases += 1
    print(f"stream-K {mode}: {cases} cases, {len(failures)} failures")
    for f in failures:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "tail"))
