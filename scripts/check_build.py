"""Build facts CI asserts without a GPU: when the toolkit was present, the extension holds sm_90a
gemm kernels whose SASS has HGMMA (wgmma) instructions, skinny kernels with HMMA (mma.sync), and
whose ptxas report shows no spills and no serialized wgmma (C7510: any call in a kernel, a
printf say, makes ptxas wait for every wgmma before issuing the next, ~4x slower at 64x64), and
whose SASS reads or writes no wgmma accumulator before the wait that retires it (sass_hazards.py)
and runs no wgmma wait on a warp's own barrier test (sass_divergent_wait.py)."""
import glob
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_divergent_wait  # noqa: E402
import sass_hazards  # noqa: E402
from sass_hazards import cuobjdump  # noqa: E402


def main():
    import torch_tk

    if not torch_tk._C.has_cuda_kernels:
        print("check_build: CPU-only build (no nvcc or CPU torch); nothing to check")
        return 0
    so = glob.glob(os.path.join(os.path.dirname(torch_tk.__file__), "_C*.so"))[0]
    exe = cuobjdump()
    if exe is None:
        print("check_build: no cuobjdump available; skipping the SASS check")
    else:
        elf = subprocess.run([exe, "--list-elf", so], capture_output=True, text=True).stdout
        assert "sm_90a" in elf, f"no sm_90a cubin in {so}:\n{elf}"
        sass = subprocess.run([exe, "--dump-sass", so], capture_output=True, text=True).stdout
        n = sass.count("HGMMA")
        kernels = len(re.findall(r"Function : \S*gemm_kernel", sass))
        assert kernels >= 32 and n >= 4 * kernels, f"expected HGMMA in every gemm kernel: {kernels} kernels, {n} HGMMA"
        print(f"check_build: {kernels} sm_90a gemm kernels, {n} HGMMA instructions")
        # No accumulator read or write while its wgmma may run (ptxas 13.0 scheduled some: sass_hazards.py).
        hits = sass_hazards.scan(sass)
        assert not hits, "SASS touches wgmma accumulators before the wait:\n" + sass_hazards.report(hits)
        print("check_build: no accumulator access before a wgmma wait (sass_hazards.py)")
        # No wgmma wait behind a warp's own barrier test (warp-divergent .sync.aligned: sass_divergent_wait.py).
        split = sass_divergent_wait.scan(sass)
        assert not split, "SASS has warp-divergent wgmma waits:\n" + sass_divergent_wait.report(split)
        print("check_build: no wgmma wait behind a per-warp barrier test (sass_divergent_wait.py)")
        # The skinny (decode-shape) kernels run on mma.sync: HMMA.16816.F32 in every one.
        bodies = re.split(r"\n\s*Function : ", sass)
        skinny = [b for b in bodies if re.match(r"\S*skinny_kernel", b)]
        hmma = [b.count("HMMA.16816.F32") for b in skinny]
        assert len(skinny) >= 8 and min(hmma) >= 2, f"skinny kernels: {len(skinny)}, HMMA per kernel {hmma}"
        print(f"check_build: {len(skinny)} skinny kernels, HMMA.16816.F32 per kernel {min(hmma)}..{max(hmma)}")
    if os.path.exists("build.log"):
        log = open("build.log").read()
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        assert spills, "build.log has no ptxas report"
        assert all(s == ("0", "0") for s in spills), f"ptxas reports spills: {spills}"
        serialized = sorted(set(re.findall(r"wgmma\.mma_async instructions are serialized due to ([^']*)", log)))
        assert not serialized, f"ptxas serializes wgmma: {serialized}"
        regs = sorted(set(re.findall(r"Used (\d+) registers", log)))
        print(f"check_build: ptxas: {len(spills)} entries, no spills, registers {regs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
