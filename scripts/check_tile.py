"""Checks torch_tk.gemm against a float64 reference on a few shapes under the current TK_HOPPER_*
knobs (e.g. a forced TK_HOPPER_TILE); prints each shape's relative error and the plan it took.
Usage: TK_HOPPER_TILE=0:128:144:1:1 python3 scripts/check_tile.py 250x14330x1000 360x6150x520"""
import sys

import torch

import torch_tk

for arg in sys.argv[1:]:
    M, N, K = map(int, arg.split("x"))
    for dtype in (torch.bfloat16, torch.float16):
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        b = torch.randn(N, K, device="cuda", dtype=dtype).t()  # column-major B (nn.Linear's weight)
        out = torch_tk.gemm(a, b)
        ref = a.double() @ b.double()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        plan = torch_tk._C.hopper_dispatch_plan(M, N, K, 0, False)
        ok = err < 1e-2
        print(f"{arg} {dtype}: rel err {err:.2e} {'ok' if ok else 'FAIL'} plan {plan}")
        if not ok:
            sys.exit(1)
