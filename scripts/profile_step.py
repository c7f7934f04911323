"""Prints the CUDA kernels of one training step of a patched bf16 nn.Linear (forward + backward),
and the tk ops in the compiled forward/backward graphs of a patched MLP: the evidence that all
three GEMMs of a linear (forward NT, dX NN, dW TN) and the fused bias run on the tk kernels."""
import collections
import sys

import torch
from torch import nn

import torch_tk


def main():
    if not torch_tk.hopper_available():
        print("profile_step: needs an sm_90 GPU with the Hopper kernels")
        return 2
    torch.manual_seed(0)
    lin = torch_tk.patch_linear(nn.Linear(1024, 768).to("cuda", torch.bfloat16))
    x = torch.randn(4, 100, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    lin(x).float().square().mean().backward()  # warm-up
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        lin(x).float().square().mean().backward()
        torch.cuda.synchronize()
    names = collections.Counter(e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    print("CUDA kernels of one training step of a patched nn.Linear(1024, 768), x (4, 100, 1024) bf16:")
    for n, c in names.items():
        print(f"  {c} x {n[:150]}")
    mlp = torch_tk.patch_linear(nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256)).to("cuda", torch.bfloat16))
    graphs = []

    def rec(gm, _):
        graphs.append(collections.Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function"))
        return gm.forward

    from torch._dynamo.backends.common import aot_autograd
    f = torch.compile(mlp, backend=aot_autograd(fw_compiler=rec, bw_compiler=rec), fullgraph=True)
    f(torch.randn(8, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)).sum().backward()
    for title, g in zip(("forward", "backward"), graphs):
        print(f"compiled {title} graph, ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(g.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
