#!/usr/bin/env python3
"""Per-kernel GPU times of torch_tk.gemm (and torch.mm) on a few shapes, from torch.profiler:
where the time of a call goes (re-pitch copies, GEMM, split-K reduction).

    python benchmarks/profile_shapes.py [MxNxK[:LAYOUT],...]
"""
import collections
import sys

import torch

import torch_tk

DEFAULT = "1000x1001x999:NN,4097x4097x4097:NN,128x4096x4096:NT,8192x8192x8192:NT"


def main(argv):
    spec = argv[1] if len(argv) > 1 else DEFAULT
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for item in spec.split(","):
        shape, _, lay = item.partition(":")
        lay = lay or "NN"
        M, N, K = (int(x) for x in shape.split("x"))
        a = torch.randn(M, K, device="cuda").bfloat16() if lay[0] == "N" else torch.randn(K, M, device="cuda").bfloat16().t()
        b = torch.randn(K, N, device="cuda").bfloat16() if lay[1] == "N" else torch.randn(N, K, device="cuda").bfloat16().t()
        for name, fn in (("tk", lambda: torch_tk.gemm(a, b)), ("torch", lambda: torch.mm(a, b))):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            reps = 10
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(reps):
                    fn()
                torch.cuda.synchronize()
            tot = collections.defaultdict(float)
            cnt = collections.Counter()
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    key = e.name.split("(")[0][:90]
                    tot[key] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
                    cnt[key] += 1
            total = sum(tot.values()) / reps
            print(f"{M}x{N}x{K} {lay} {name}: {total:.1f} us of kernels per call; plan "
                  f"{torch_tk._C.hopper_plan(M, N, K, sms) if name == 'tk' else ''}")
            for k, v in sorted(tot.items(), key=lambda kv: -kv[1]):
                print(f"    {v / reps:9.1f} us  {cnt[k] // reps} x {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
